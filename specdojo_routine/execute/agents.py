"""The CLI's own :class:`AgentExecutor` (SPEC §11.1, §11.4): agents from the roster.

One *stage* launches one member: its command (the roster's ``command``, or the provider's
``command_template`` expanded) runs as ``/bin/sh -c`` in the run's working tree, in its own
process group, with its stdin text (the plan) on stdin and the environment of SPEC §7.3 plus
``SPECDOJO_AGENT_ROLE``, ``SPECDOJO_PLAN_PATH`` and ``SPECDOJO_RESULT_PATH``. Its process group
is recorded with the attempt as soon as it runs, as a command's is (each stage replaces the
record: the one running is the one that counts), so that an agent that outlives a killed
runner keeps ``job resolve`` and a retry waiting. Its output is echoed live (redacted) and kept
as ``attempt-<n>/agent-<role>.stdout.log`` / ``.stderr.log`` (redacted, then bounded to
64 KiB).

A *pipeline* is an executor stage and, when a reporter is named, a reporter stage that reads
the plan plus the executor's output. :class:`RosterExecutor` runs the pipeline of an
``edit``/``review`` Job: it writes the plan and the result skeleton first, then lets the result
document decide the outcome (markers left, ``outcome: noop``).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import attrs

from specdojo_routine.core import agent_rules, agentdocs
from specdojo_routine.core.agent_rules import AgentConfigError, Member
from specdojo_routine.core.errors import exited_with
from specdojo_routine.core.redact import bound, redact, secret_values
from specdojo_routine.core.redact_stream import LineRedactor
from specdojo_routine.core.timefmt import format_ms
from specdojo_routine.execute import evidence, jobfiles, runner, termination
from specdojo_routine.execute.agent import AgentRequest, AgentResult
from specdojo_routine.store.config import ProjectPaths, read_regular
from specdojo_routine.store.definitions.agentconfig import AgentConfig
from specdojo_routine.store.ledger import views

TEMPLATES_DIR = Path("docs") / "ja" / "specdojo" / "templates"
_STDIN_SHELL = 'exec /bin/sh -c "$1" sh <"$2"'  # the inner shell reads the plan as stdin


@attrs.frozen(kw_only=True, repr=False)
class Stage:
    """One launched agent, its output redacted and bounded."""

    role: str
    nickname: str
    exit_code: int | None
    stdout: str
    stderr: str
    error: str | None = None
    rate_limit: str | None = None

    def failure(self) -> tuple[str, bool] | None:
        """(reason, skipped) when this stage ends the attempt as failed, else None."""
        if self.rate_limit is not None:
            return f"rate limited ({self.rate_limit})", True
        if self.exit_code is None:
            return f"agent {self.nickname}: {self.error or 'did not run'}", False
        if self.exit_code != 0:
            return f"agent {self.nickname} {exited_with(self.exit_code)}", False
        return None


@attrs.frozen(kw_only=True, repr=False)
class Launch:
    """Where and how a stage runs."""

    paths: ProjectPaths
    config: AgentConfig
    run_id: str
    attempt: int
    cwd: Path
    env: Mapping[str, str]
    plan_path: Path
    result_path: Path
    deadline: float | None = None  # time.monotonic() bound of the whole attempt
    echo: TextIO | None = None
    kill_grace_s: float = termination.KILL_GRACE_S  # SIGTERM -> SIGKILL at the deadline

    def remaining(self) -> float | None:
        return None if self.deadline is None else max(0.1, self.deadline - time.monotonic())


def member_of(config: AgentConfig, nickname: str) -> Member:
    member = config.roster.get(nickname)
    if member is None:
        raise AgentConfigError(f'"{nickname}" is not a member of {config.roster.path}; register '
                               "the nickname there before use")
    return member


def launch(how: Launch, member: Member, role: str, stdin_text: str) -> Stage:
    """Run ``member`` as ``role`` with ``stdin_text`` on stdin; keep its evidence."""
    command = agent_rules.launch_command(how.config.defaults, member)
    env = {**how.env, "SPECDOJO_AGENT_ROLE": role,
           "SPECDOJO_PLAN_PATH": str(how.plan_path.resolve()),
           "SPECDOJO_RESULT_PATH": str(how.result_path.resolve())}
    secrets = secret_values(env)
    if how.echo is not None:
        with contextlib.suppress(OSError, ValueError):
            how.echo.write(LineRedactor(secrets).line(
                f"agent {member.nickname} ({role}): {command}\n"))
            how.echo.flush()
    fd, stdin_path = _stdin_file(how, role)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(stdin_text)
        outcome = runner.run_argv(
            ["/bin/sh", "-c", _STDIN_SHELL, "sh", command, stdin_path], cwd=how.cwd, env=env,
            timeout_s=how.remaining(), echo=how.echo, kill_grace_s=how.kill_grace_s,
            on_start=lambda pgid: jobfiles.record_group(how.paths, how.run_id, how.attempt,
                                                        pgid))
    finally:
        with contextlib.suppress(OSError):
            os.unlink(stdin_path)
    detection = how.config.defaults.detection_for(member.provider)
    signal = None if outcome.timed_out else agent_rules.rate_limit_signal(
        detection, outcome.exit_code, outcome.stdout, outcome.stderr)
    stdout, stderr = _keep(how, role, outcome.stdout, outcome.stderr, secrets)
    return Stage(role=role, nickname=member.nickname, exit_code=outcome.exit_code,
                 stdout=stdout, stderr=stderr,
                 error=None if outcome.error is None else redact(outcome.error, secrets),
                 rate_limit=signal)


def _stdin_file(how: Launch, role: str) -> tuple[int, str]:
    """A private file for the stage's stdin text, in the attempt's evidence folder: removed
    when the stage ends, and a runner killed before that leaves it where retention prunes it,
    not in the system's temporary folder. That folder only when the evidence folder is refused
    (a link where this tool makes folders)."""
    try:
        folder = evidence.made_dir(how.paths.evidence_dir, evidence.attempt_dir(
            how.paths.evidence_dir, how.run_id, how.attempt))
    except OSError:
        folder = None
    return tempfile.mkstemp(prefix=f".agent-{role}.stdin.", suffix=".md", dir=folder)


def _keep(how: Launch, role: str, stdout: str, stderr: str, secrets: list[str]) -> tuple[str, str]:
    target = evidence.made_dir(how.paths.evidence_dir, evidence.attempt_dir(
        how.paths.evidence_dir, how.run_id, how.attempt))
    kept = []
    for name, text in (("stdout", stdout), ("stderr", stderr)):
        bounded, _ = bound(redact(text, secrets), evidence.LOG_LIMIT_BYTES)
        views.publish(target / f"agent-{role}.{name}.log", bounded.encode("utf-8"))
        kept.append(bounded)
    return kept[0], kept[1]


def fenced(text: str, info: str = "") -> str:
    longest = max((len(run) for run in _backtick_runs(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip(chr(10))}\n{fence}"


def _backtick_runs(text: str) -> list[str]:
    runs, current = [], ""
    for char in text:
        if char == "`":
            current += char
        elif current:
            runs.append(current)
            current = ""
    return [*runs, current] if current else runs


def reporter_input(plan_text: str, stage: Stage) -> str:
    """The reporter's stdin: the plan, then the executor's output (redacted, bounded, fenced)."""
    return (f"{plan_text.rstrip()}\n\n## Executor output ({stage.nickname})\n\n"
            f"### stdout\n\n{fenced(stage.stdout, 'text')}\n\n"
            f"### stderr\n\n{fenced(stage.stderr, 'text')}\n")


@attrs.frozen(kw_only=True, repr=False)
class Failure:
    reason: str
    skipped: bool = False


def pipeline(
    how: Launch, executor: Member, reporter: Member | None, plan_text: str,
    roles: tuple[str, str] = ("executor", "reporter"),
) -> Failure | None:
    """Executor, then (if any) reporter; the first stage that fails ends it."""
    first = launch(how, executor, roles[0], plan_text)
    failed = first.failure()
    if failed is not None:
        return Failure(reason=failed[0], skipped=failed[1])
    if reporter is None:
        return None
    second = launch(how, reporter, roles[1], reporter_input(plan_text, first))
    failed = second.failure()
    return None if failed is None else Failure(reason=failed[0], skipped=failed[1])


# --- documents ---------------------------------------------------------------------------------


def template(paths: ProjectPaths, name: str, builtin: str) -> str:
    """The project's own template ``name`` when it has one, else the built-in."""
    path = paths.root / TEMPLATES_DIR / name
    try:
        return read_regular(path).decode("utf-8")  # a FIFO there is no template, not a wait
    except (OSError, UnicodeDecodeError):
        return builtin


def frontmatter(fields: Mapping[str, str]) -> str:
    lines = [f"  {key}: {value}" for key, value in fields.items()]
    return "\n".join(["---", "specdojo:", *lines, "---"])


@attrs.frozen(kw_only=True, repr=False)
class DocValues:
    """What the templates say about a run."""

    project_id: str
    run_id: str
    job_id: str
    name: str
    mode: str
    scheduled_at: str
    description: str
    inputs: Mapping[str, object]
    targets: list[str]
    paths: list[str]
    result_ref: str
    commit: str = ""

    def values(self, project: ProjectPaths, front: str) -> dict[str, str]:
        conventions = template(project, "xep-common-conventions-template.md",
                               agentdocs.CONVENTIONS).rstrip("\n")
        return {"_FRONTMATTER_": front, "_JOB_ID_": self.job_id, "_JOB_NAME_": self.name,
                "_RUN_ID_": self.run_id, "_SCHEDULED_AT_": self.scheduled_at,
                "_JOB_DESCRIPTION_": self.description,
                "_JOB_INPUTS_": json.dumps(self.inputs, indent=2, ensure_ascii=False),
                "_JOB_TARGETS_": agentdocs.bullet_list(self.targets),
                "_JOB_PATHS_": agentdocs.bullet_list(self.paths),
                "_RESULT_REF_": self.result_ref, "_COMMON_CONVENTIONS_": conventions,
                "_REVIEW_COMMIT_": self.commit}

    def base_fields(self, kind: str, prefix: str) -> dict[str, str]:
        return {"id": f"{self.project_id}:{prefix}-{self.run_id.lower()}", "type": kind,
                "task_id": self.run_id, "name": json.dumps(self.name, ensure_ascii=False),
                "mode": self.mode, "project_id": self.project_id, "origin": "job",
                "job_id": self.job_id, "run_id": self.run_id}


def write_documents(
    project: ProjectPaths, doc: DocValues, plan_path: Path, result_path: Path, *,
    review: bool, agent: str,
) -> str:
    """Write the plan and the result skeleton; return the plan text (the agent's stdin)."""
    plan_name, result_name = (("xrp-template.md", "xrr-template.md") if review
                              else ("xep-job-template.md", "xer-template.md"))
    plan_builtin, result_builtin = (
        (agentdocs.REVIEW_PLAN_TEMPLATE, agentdocs.REVIEW_RESULT_TEMPLATE) if review
        else (agentdocs.PLAN_TEMPLATE, agentdocs.RESULT_TEMPLATE))
    plan_kind, result_kind = ("review-plan", "review-result") if review else \
        ("exec-plan", "exec-result")
    plan_fields = {**doc.base_fields(plan_kind, "xrp" if review else "xep"),
                   "status": "ready", "result_ref": _exec_ref(project, result_path)}
    if doc.commit:
        plan_fields["commit"] = doc.commit
    result_fields = {**doc.base_fields(result_kind, "xrr" if review else "xer"),
                     "status": "pending", "plan_ref": _exec_ref(project, plan_path),
                     "started_at": f'"{format_ms(datetime.now(UTC))}"', "agent": agent}
    plan_text = agentdocs.fill(template(project, plan_name, plan_builtin),
                               doc.values(project, frontmatter(plan_fields)))
    result_text = agentdocs.fill(template(project, result_name, result_builtin),
                                 doc.values(project, frontmatter(result_fields)))
    views.publish(plan_path, plan_text.encode("utf-8"))
    views.publish(result_path, result_text.encode("utf-8"))
    return plan_text


def _exec_ref(project: ProjectPaths, path: Path) -> str:
    """Relative to the execution directory, as upstream's ``plan_ref`` / ``result_ref``."""
    try:
        return path.relative_to(project.execution_dir).as_posix()
    except ValueError:
        return project.rel(path)


def read_result(path: Path) -> str:
    """The result file an agent wrote ("" when there is none): only a regular file is read - the
    agent is another program, and a FIFO it left there would block the run for ever."""
    try:
        return read_regular(path).decode("utf-8", errors="replace")
    except OSError:
        return ""


def stamp_result(
    path: Path, run_status: str, reason: str | None, secrets: Sequence[str] = ()
) -> bool:
    """The runner, not the agent, sets the result's ``status`` (SPEC §11.1): ``complete``
    for a succeeded or noop run, else ``blocked`` with the reason. Whatever secret the agent
    wrote into the document is redacted. False when there is no document to stamp (the
    agent removed or emptied it): the caller then writes its own."""
    text = redact(read_result(path), secrets)
    if not text.strip():
        return False
    complete = run_status in ("succeeded", "noop")
    stamped = agentdocs.set_status(text, "complete" if complete else "blocked",
                                   None if complete else reason or run_status,
                                   completed_at=format_ms(datetime.now(UTC)))
    views.publish(path, stamped.encode("utf-8"))
    return True


# --- the executor of edit/review Jobs -----------------------------------------------------------


@attrs.frozen(kw_only=True, repr=False)
class RosterExecutor:
    """:class:`AgentExecutor` launching the project's own agents (SPEC §11.1)."""

    config: AgentConfig
    reporter_override: str | None = None  # job run --reporter-by
    executor_override: str | None = None  # job run --executor-by
    #: job run --by: one agent replaces the nomination, as a single-agent run (seed 002)
    single_override: str | None = None

    def __call__(self, request: AgentRequest) -> AgentResult:
        task = request.task
        if (refused := self.config.refusal()) is not None:
            return AgentResult(status="failed", reason=refused)
        try:
            executor, reporter = self.members(request.mode, task)
        except AgentConfigError as exc:
            return AgentResult(status="failed", reason=str(exc))
        if executor is None:
            return AgentResult(status="failed",
                               reason=f"no agent executor configured for mode {request.mode}")
        cwd = request.cwd or request.paths.root
        how = Launch(paths=request.paths, config=self.config, run_id=request.run_id,
                     attempt=request.attempt, cwd=cwd, env=request.env,
                     plan_path=request.plan_path, result_path=request.result_path,
                     deadline=None if request.timeout_s is None
                     else time.monotonic() + request.timeout_s, echo=request.echo,
                     kill_grace_s=request.kill_grace_s)
        doc = self.doc(request, cwd)
        plan_text = write_documents(request.paths, doc, request.plan_path, request.result_path,
                                    review=False, agent=executor.nickname)
        try:
            failed = pipeline(how, executor, reporter, plan_text)
        except AgentConfigError as exc:
            return AgentResult(status="failed", reason=str(exc), result_written=True)
        if failed is not None:
            return AgentResult(status="failed", reason=failed.reason, skipped=failed.skipped,
                               result_written=True)
        status, reason = agentdocs.agent_outcome(read_result(request.result_path))
        return AgentResult(status="failed" if status == "failed" else
                           "noop" if status == "noop" else "succeeded",
                           reason=reason, result_written=True)

    def members(self, mode: str, task: Mapping[str, object]) -> tuple[Member | None, Member | None]:
        agent = task.get("agent")
        named = agent if isinstance(agent, dict) else {}
        executor_name, reporter_name = named.get("executor"), named.get("reporter")
        if self.single_override is not None:  # ahead of the Job's own nomination (seed 002)
            return member_of(self.config, self.single_override), None
        executor_name = self.executor_override or executor_name
        executor = (member_of(self.config, executor_name) if isinstance(executor_name, str)
                    else agent_rules.executor_for_mode(self.config.roster, mode))
        reporter_name = self.reporter_override or reporter_name
        reporter = member_of(self.config, reporter_name) if isinstance(reporter_name, str) \
            else None
        return executor, reporter

    @staticmethod
    def doc(request: AgentRequest, cwd: Path) -> DocValues:
        task = request.task
        paths = request.paths
        in_place = cwd.resolve() == paths.root.resolve()
        result_ref = paths.rel(request.result_path) if in_place \
            else str(request.result_path.resolve())
        return DocValues(
            project_id=paths.project_id, run_id=request.run_id, job_id=request.job_id,
            name=request.name or request.job_id, mode=request.mode,
            scheduled_at=request.scheduled_at, description=str(task.get("description", "")),
            inputs=dict(request.inputs), targets=[str(t) for t in task.get("targets") or []],
            paths=[str(p) for p in task.get("paths") or []], result_ref=result_ref)
