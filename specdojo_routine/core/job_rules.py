"""The rules of Job Definition files (SPEC §7.1), on the machinery of :mod:`.validation`.

Checks report and carry on, so every problem of a file is found. What the templates may name
is checked by :mod:`.job_template_rules`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from specdojo_routine.core import jobmodel
from specdojo_routine.core.cron_syntax import parse_interval
from specdojo_routine.core.inputs import (
    INPUT_FIELDS,
    NO_FIELDS,
    blank_key_parts,
    build_input_spec,
    secret_name,
)
from specdojo_routine.core.job_template_rules import check_job_templates
from specdojo_routine.core.templates import (
    TemplateError,
)
from specdojo_routine.core.validation import (
    JOB_ID,
    Node,
    Report,
    check_id,
    choice,
    got,
    is_int,
    mapping,
    plain,
    required,
    text,
    text_list,
    unknown_keys,
)

# --- Job Definitions ---------------------------------------------------------------------------

SNAKE = re.compile(r"[a-z][a-z0-9_]*")
NICKNAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
_TIMEOUT_SECONDS = re.compile(r"([1-9][0-9]{0,9})s")
JOB_KEYS = ("id", "name", "description", "inputs", "task", "run", "checkpoint")
# upstream accepts owner/targets/paths in every mode; only edit/review carry them
_COMMON_TASK_KEYS = ("mode", "owner", "targets", "paths", "timeout", "review")
_COMMAND_ONLY = ("command", "precondition", "partial_exit_code", "noop_exit_code", "analysis")
_AGENT_ONLY = ("description", "agent", "capabilities", "proficiency")
_NOT_IN_COMMAND_MODE = {
    "agent": "task.agent is not allowed in command mode; use task.analysis.agent",
    "description": "task.description is not allowed in command mode; use "
    "task.analysis.description",
    **{k: "task.capabilities and task.proficiency are not allowed in command mode "
          f"(got task.{k})" for k in ("capabilities", "proficiency")},
}


def _only_in_command_mode(mode: str) -> dict[str, str]:
    """Upstream's one sentence for the command-mode keys (ours too), naming the one found."""
    return {k: "task.command, task.precondition, and task.analysis are only allowed in "
            f"command mode (got task.{k} in {mode} mode)" for k in _COMMAND_ONLY}


PROFICIENCIES = ("low", "normal", "high", "expert")
BUSY_EXIT_CODE = 75  # a command exiting 75 means "project busy" (SPEC §7.3)
_ADVANCE = ("succeeded", "noop")


def build_job(r: Report, root: Node, *, file_id: str) -> jobmodel.JobDefinition | None:
    """The Job Definition in ``root`` (a loaded ``job-*.yaml``), or None after reporting."""
    unknown_keys(r, root, JOB_KEYS, "job")
    job_id = check_id(r, root, file_id, JOB_ID, "job-<slug>")
    name = text(r, required(r, root, "name"), nonempty=True)
    description = text(r, root.get("description"))
    specs = _input_specs(r, root.get("inputs"))
    task = _task(r, root.get("task"))
    key = _idempotency_key(r, root.get("run"))
    on_interrupted = _on_interrupted(r, root.get("run"))
    checkpoint = _checkpoint(r, root.get("checkpoint"))
    check_job_templates(r, root, specs)
    if key is not None:
        _check_blank_key(r, root, key, specs)
    if r.failed or job_id is None or name is None or task is None or key is None:
        return None
    return jobmodel.JobDefinition(
        id=job_id, path=r.path, name=name, description=description, inputs=specs,
        task=task, idempotency_key=key, checkpoint=checkpoint, on_interrupted=on_interrupted,
    )


def _input_specs(r: Report, node: Node | None) -> tuple[jobmodel.InputSpec, ...]:
    if node is None or not mapping(r, node, " of input names"):
        return ()
    specs = []
    for name, child in node.entries():
        if not isinstance(name, str) or not SNAKE.fullmatch(name):
            r.error(child.key_pos, f"{child.label} must use lowercase snake_case")
        elif mapping(r, child, " (type, required, default, ...)"):
            unknown_keys(r, child, INPUT_FIELDS, "input")
            if (named := secret_name(name)) is not None:
                r.error(child.key_pos, named)
            spec, complaints = build_input_spec(name, plain(child.value))
            for field, message in complaints:
                located = child.get(field)
                r.error(located.where() if located is not None else child.key_pos, message)
            if spec is not None:
                specs.append(spec)
    return tuple(specs)


def _task(r: Report, node: Node | None) -> jobmodel.Task | None:
    if node is None:
        r.error((1, 1), "task is required and must be a mapping")
        return None
    if not mapping(r, node, " with mode"):
        return None
    mode_node = node.get("mode")
    mode = mode_node.value if mode_node is not None else None
    if mode == "command":
        return _command_task(r, node)
    if mode in ("edit", "review"):
        return _agent_task(r, node, "edit" if mode == "edit" else "review")
    shown = got(mode) if mode_node is not None else "nothing"
    where = mode_node.where() if mode_node is not None else node.key_pos
    r.error(where, f"task.mode must be edit, review, or command (got {shown})")
    return None


def _task_common(
    r: Report, node: Node, allowed: Sequence[str], misplaced: Mapping[str, str]
) -> str | None:
    """Keys valid in this mode, and the fields every mode takes; returns the owner."""
    for key, child in node.entries():
        if key in misplaced:
            r.error(child.key_pos, misplaced[str(key)])
    unknown_keys(r, node, [*allowed, *misplaced], "task")
    for key in ("targets", "paths"):
        text_list(r, node.get(key))
    return text(r, node.get("owner"), nonempty=True)


def _command_task(r: Report, node: Node) -> jobmodel.CommandTask | None:
    _task_common(r, node, (*_COMMON_TASK_KEYS, *_COMMAND_ONLY), _NOT_IN_COMMAND_MODE)
    command_node = required(r, node, "command", "task.command is required for command mode")
    command = text(r, command_node, nonempty=True)
    partial = _exit_codes(r, node.get("partial_exit_code"))
    noop_node = node.get("noop_exit_code")
    noop = _exit_code(r, noop_node)
    if noop_node is not None and noop is not None and noop in partial:
        r.error(noop_node.pos, f"task.noop_exit_code {noop} is also in task.partial_exit_code")
    timeout, seconds = _timeout(r, node.get("timeout"))
    precondition = _precondition(r, node.get("precondition"))
    analysis = _analysis(r, node.get("analysis"))
    review = _review(r, node.get("review"))
    if command is None:
        return None
    return jobmodel.CommandTask(
        command=command, precondition=precondition, partial_exit_codes=partial,
        noop_exit_code=noop, timeout=timeout, timeout_seconds=seconds, analysis=analysis,
        review=review,
    )


def _review(r: Report, node: Node | None) -> jobmodel.ReviewSpec | None:
    """``task.review``: any mapping (``{}`` included), optional ``agent {executor, reporter}``."""
    if node is None:
        return None
    if node.value is None:
        return jobmodel.ReviewSpec()
    if not mapping(r, node, " (optionally with agent: {executor, reporter})"):
        return None
    unknown_keys(r, node, ("agent",), "task.review")
    agent = node.get("agent")
    executor = reporter = None
    if agent is not None and mapping(r, agent, " with executor and/or reporter"):
        unknown_keys(r, agent, ("executor", "reporter"), "task.review.agent")
        executor = _nickname(r, agent.get("executor"))
        reporter = _nickname(r, agent.get("reporter"))
    return jobmodel.ReviewSpec(executor=executor, reporter=reporter)


def _exit_code(r: Report, node: Node | None) -> int | None:
    if node is None:
        return None
    value = node.value
    if not is_int(value) or not 1 <= value <= 255 or value == BUSY_EXIT_CODE:
        r.error(node.where(), f"{node.label} must be an exit code from 1 to 255 other than "
                f"{BUSY_EXIT_CODE} (which means project busy; got {got(value)})")
        return None
    return int(value)


def _exit_codes(r: Report, node: Node | None) -> tuple[int, ...]:
    if node is None:
        return ()
    if not isinstance(node.value, list) or not node.value:
        r.error(node.where(), f"{node.label} must be a non-empty list of exit codes "
                f"(got {got(node.value)})")
        return ()
    codes = [_exit_code(r, item) for item in node.elements()]
    return tuple(code for code in codes if code is not None)


def _timeout(r: Report, node: Node | None) -> tuple[str | None, int | None]:
    if node is None:
        return None, None
    value = node.value
    seconds = None
    if isinstance(value, str):
        match = _TIMEOUT_SECONDS.fullmatch(value.strip())
        seconds = int(match.group(1)) if match else parse_interval(value)
    if seconds is None:
        r.error(node.where(), "task.timeout must be <positive integer><unit> with unit "
                f"s|m|h|d|w, e.g. 90s or 10m (got {got(value)})")
        return None, None
    return str(value), seconds


def _precondition(r: Report, node: Node | None) -> jobmodel.Precondition | None:
    if node is None or not mapping(r, node, " with command and skip_when"):
        return None
    unknown_keys(r, node, ("command", "skip_when"), "task.precondition")
    command = text(r, required(r, node, "command"), nonempty=True)
    skip_node = node.get("skip_when")
    skip: Any = skip_node.value if skip_node is not None else None
    if skip != "empty-output" and not (is_int(skip) and 0 <= skip <= 255):
        where = skip_node.where() if skip_node is not None else node.key_pos
        r.error(where, "task.precondition.skip_when must be empty-output or an exit code "
                f"from 0 to 255 (got {got(skip) if skip_node is not None else 'nothing'})")
        return None
    if command is None:
        return None
    return jobmodel.Precondition(command=command,
                                 skip_when="empty-output" if skip is None else skip)


def _analysis(r: Report, node: Node | None) -> jobmodel.Analysis | None:
    if node is None or not mapping(r, node, " with agent and description"):
        return None
    unknown_keys(r, node, ("agent", "description"), "task.analysis")
    agent = _nickname(r, required(r, node, "agent"))
    description = text(r, required(r, node, "description"), nonempty=True)
    if not agent or not description:
        return None
    return jobmodel.Analysis(agent=agent, description=description)


def _nickname(r: Report, node: Node | None) -> str | None:
    if node is None:
        return None
    if not isinstance(node.value, str) or not NICKNAME.fullmatch(node.value):
        r.error(node.where(), f"{node.label} must be an agent nickname from pm-members.yaml "
                f"(got {got(node.value)})")
        return None
    return str(node.value)


def _agent_task(
    r: Report, node: Node, mode: Literal["edit", "review"]
) -> jobmodel.AgentTask | None:
    owner = _task_common(r, node, (*_COMMON_TASK_KEYS, *_AGENT_ONLY),
                         _only_in_command_mode(mode))
    description = text(r, required(r, node, "description"), nonempty=True)
    targets, paths = node.get("targets"), node.get("paths")
    if targets is None and paths is None:
        r.error(node.key_pos, "task.targets or task.paths must be a non-empty string list")
    executor = reporter = None
    agent = node.get("agent")
    if agent is not None and mapping(r, agent, " with executor and optional reporter"):
        unknown_keys(r, agent, ("executor", "reporter"), "task.agent")
        executor = _nickname(r, required(r, agent, "executor"))
        reporter = _nickname(r, agent.get("reporter"))
    capabilities = text_list(r, node.get("capabilities"))
    proficiency = choice(r, node.get("proficiency"), PROFICIENCIES, "|".join(PROFICIENCIES))
    timeout, seconds = _timeout(r, node.get("timeout"))
    review = _review(r, node.get("review"))
    if description is None:
        return None
    return jobmodel.AgentTask(
        mode=mode, description=description, targets=_strings(targets), paths=_strings(paths),
        executor=executor, reporter=reporter, capabilities=capabilities or (),
        proficiency=proficiency, owner=owner, timeout=timeout, timeout_seconds=seconds,
        review=review,
    )


def _strings(node: Node | None) -> tuple[str, ...]:
    if node is None or not isinstance(node.value, list):
        return ()
    return tuple(str(v) for v in node.value)


def _on_interrupted(r: Report, node: Node | None) -> Literal["review", "retry"]:
    """``run.on_interrupted`` (SPEC §7.3): review (default) or retry."""
    value = node.get("on_interrupted") if node is not None and isinstance(node.value, dict) \
        else None
    if value is None:
        return "review"
    if value.value == "retry":
        return "retry"
    if value.value != "review":
        r.error(value.where(),
                f"run.on_interrupted must be review or retry (got {got(value.value)})")
    return "review"


def _idempotency_key(r: Report, node: Node | None) -> str | None:
    if node is None:
        r.error((1, 1), "run.idempotency_key is required")
        return None
    if not mapping(r, node, " with idempotency_key"):
        return None
    unknown_keys(r, node, ("idempotency_key", "on_interrupted"), "run")
    return text(r, required(r, node, "idempotency_key"), nonempty=True)


def _check_blank_key(
    r: Report, root: Node, key: str, specs: Sequence[jobmodel.InputSpec]
) -> None:
    """A key that renders empty fails its run (SPEC §7.3 step 1): an error when it does so for
    the run without inputs (only the required ones given), a warning when some values do."""
    run = root.get("run")
    node = run.get("idempotency_key") if run is not None else None
    try:
        parts = blank_key_parts(key, specs)
    except TemplateError:
        return  # reported where the template is checked
    if node is None:
        return
    if _said(parts):
        bare = not any(s.required and s.default is None and s.resolve is None for s in specs)
        r.error(node.pos, f"{node.label} renders empty when the Job runs "
                f"{'without inputs' if bare else 'with only its required inputs'}: "
                f"{_listed(parts)}; every such run fails: give those inputs non-empty "
                "defaults (or make them required), or add a part that is never empty, such as "
                "{{job_id}}")
        return
    parts = blank_key_parts(key, specs, any_value=True)
    if _said(parts):
        r.warn(node.pos, f"{node.label} may render empty: {_listed(parts)}; a run whose key is "
               "empty fails: add a part that is never empty, such as {{job_id}}")


def _said(parts: Sequence[tuple[str, str]]) -> bool:
    """Whether the key's check has more to say than the placeholders' (an input's field is
    reported where it is written, :func:`_field`)."""
    return any(why != NO_FIELDS for _, why in parts)


def _listed(parts: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{name} ({why})" for name, why in parts)


def _checkpoint(r: Report, node: Node | None) -> jobmodel.CheckpointSpec | None:
    if node is None or not mapping(r, node, " with values"):
        return None
    unknown_keys(r, node, ("values", "advance_on"), "checkpoint")
    values_node = required(r, node, "values", "checkpoint.values must be a mapping")
    values: dict[str, str] = {}
    if values_node is not None and mapping(r, values_node, " of snake_case keys to templates"):
        for key, child in values_node.entries():
            rule = f"{child.label} must be a string with a lowercase snake_case key"
            if not isinstance(key, str) or not SNAKE.fullmatch(key):
                r.error(child.key_pos, f"{rule} (got key {got(key)})")
            elif not isinstance(child.value, str):
                r.error(child.where(), f"{rule} (got {got(child.value)})")
            else:
                values[key] = child.value
    advance = frozenset(_ADVANCE)
    advance_node = node.get("advance_on")
    if advance_node is not None:
        listed = advance_node.value
        if isinstance(listed, list) and listed and all(v in _ADVANCE for v in listed):
            advance = frozenset(str(v) for v in listed)
        else:
            r.error(advance_node.where(), "checkpoint.advance_on must contain succeeded and/or "
                    f"noop (got {got(listed)})")
    return jobmodel.CheckpointSpec(values=values, advance_on=advance)
