"""Job Run decisions (pure; SPEC §7.3, seed 002): inputs, identity, existing runs, statuses.

Everything here is a function of the Job Definition, the values given and what the ledgers
say; the handler (:mod:`jobs`) does the I/O around it. Git is reached through the
:class:`GitResolver` the caller injects, so input resolution is testable without a repository.
What the run runs - the task and checkpoint values rendered from the Job's templates - is
:mod:`.jobtask`'s.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

import attrs

from specdojo_routine.core import inputs as input_rules
from specdojo_routine.core.errors import JobError, UsageError, exited_with
from specdojo_routine.core.jobmodel import (
    InputSpec,
    InputValue,
    JobDefinition,
)
from specdojo_routine.core.jobtask import redacted, render
from specdojo_routine.core.model import Result
from specdojo_routine.core.redact import redact
from specdojo_routine.core.review_rules import integrated
from specdojo_routine.core.review_rules import routine_result as review_result
from specdojo_routine.core.templates import (
    TemplateError,
    find_placeholders,
    template_text,
)

COMPLETE_STATES = frozenset({"succeeded", "noop"})
BUSY_EXIT_CODE = 75
RunStatus = Literal["succeeded", "partial", "failed", "noop"]
Trigger = Literal["manual", "routine", "ci"]


class InputError(UsageError):
    """An input given to a Job is unknown, missing, duplicated or invalid (exit 2)."""


class GitResolver(Protocol):
    """The two git questions input resolution asks (``resolve: git_head``, ``git_revision``)."""

    def head(self) -> str:
        """The full sha of ``HEAD``; raises :class:`JobError` when there is none."""
        ...

    def commit(self, revision: str) -> str:
        """The full commit sha ``revision`` names; raises :class:`JobError` when none."""
        ...


# --- inputs ------------------------------------------------------------------------------------


def _spec(job: JobDefinition, name: str) -> InputSpec:
    spec = job.input_spec(name)
    if spec is None:
        declared = ", ".join(s.name for s in job.inputs) or "none"
        raise InputError(f"unknown input for {job.id}: {name} (declared: {declared})")
    return spec


def split_cli_inputs(pairs: Sequence[str]) -> dict[str, str]:
    """``--input k=v`` pairs (split at the first ``=``) -> their texts; a pair without ``=``
    or a key given twice is an :class:`InputError`."""
    texts: dict[str, str] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(f"invalid --input {pair!r}: use key=value")
        if key in texts:
            raise InputError(f"duplicate --input {key}: give each input once")
        texts[key] = text
    return texts


def parse_cli_inputs(job: JobDefinition, pairs: Sequence[str]) -> dict[str, InputValue]:
    """``--input k=v`` (split at the first ``=``) -> typed values; duplicates are errors."""
    return parse_text_inputs(job, split_cli_inputs(pairs))


def parse_text_inputs(job: JobDefinition, texts: Mapping[str, str]) -> dict[str, InputValue]:
    """Text values (command line, rendered routine inputs) -> values of the declared types."""
    values: dict[str, InputValue] = {}
    for key, text in texts.items():
        try:
            values[key] = input_rules.parse_cli_value(_spec(job, key), text)
        except ValueError as exc:
            raise InputError(f"{job.id}: {exc}") from None
    return values


def lookup(data: Mapping[str, Any] | None, dotted: str) -> Any:
    """``data`` at a dotted path, or ``None`` when any segment is missing."""
    current: Any = data
    for part in dotted.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def _coerce(job: JobDefinition, spec: InputSpec, value: object, source: str) -> InputValue:
    try:
        return input_rules.coerce_value(spec, value)
    except ValueError as exc:
        raise InputError(f"{job.id}: {exc} (from {source})") from None


def _pick(
    job: JobDefinition, spec: InputSpec, explicit: Mapping[str, InputValue],
    checkpoint: Mapping[str, Any] | None, git: GitResolver,
) -> InputValue | None:
    """The first source that has a value: explicit, checkpoint, git HEAD, default."""
    if spec.name in explicit:
        return _coerce(job, spec, explicit[spec.name], "--input")
    if spec.from_checkpoint is not None:
        found = lookup(checkpoint, spec.from_checkpoint)
        if found is not None:
            return _coerce(job, spec, found, f"checkpoint {spec.from_checkpoint}")
    if spec.resolve == "git_head":
        return _coerce(job, spec, git.head(), "git HEAD")
    if spec.default is not None:
        return _coerce(job, spec, spec.default, "default")
    return None


def resolve_inputs(
    job: JobDefinition, explicit: Mapping[str, InputValue],
    checkpoint: Mapping[str, Any] | None, git: GitResolver,
) -> dict[str, Any]:
    """The run's inputs (JSON values, declaration order): explicit -> from_checkpoint ->
    git_head -> default -> required error; ``git_revision`` values become full commit shas."""
    for name in explicit:
        _spec(job, name)
    values: dict[str, Any] = {}
    for spec in job.inputs:
        value = _pick(job, spec, explicit, checkpoint, git)
        if value is None:
            if spec.required:
                raise InputError(f"missing required input for {job.id}: {spec.name} "
                                 f"(pass --input {spec.name}=...)")
            continue
        if spec.git_revision:
            if not isinstance(value, str):
                raise InputError(f"{job.id}: input {spec.name} with git_revision must be a string")
            value = git.commit(value)
        values[spec.name] = list(value) if isinstance(value, tuple) else value
    return values


def refuse_secret_inputs(
    job: JobDefinition, values: Mapping[str, Any], secrets: Sequence[str]
) -> None:
    """Inputs are recorded verbatim (a retry reuses them): one that holds a secret is refused,
    as a usage error (exit 2: nothing ran)."""
    for name, value in values.items():
        if redacted(value, secrets) != value:
            raise InputError(f"input {name} of {job.id} looks like a secret; secrets must reach "
                             "commands through the environment, never through inputs")


def refuse_secrets_in_place(
    job: JobDefinition, values: Mapping[str, Any], secrets: Sequence[str],
    rendered: Callable[[Mapping[str, Any]], Sequence[str]],
) -> None:
    """An input the redactor hides where it is rendered (``Bearer {{inputs.tok}}``,
    ``password={{inputs.tok}}``) is a secret there, though it does not look like one alone;
    refused like those, before anything is recorded (the ledger, views and plan keep inputs
    and key verbatim). ``rendered(values)`` is every text a run renders; it is compared with
    the input left empty, so text the template itself redacts does not count against it."""
    texts = rendered(values)
    for name, value in values.items():
        shown = template_text(value)
        if shown and _hidden(shown, texts, secrets) > _hidden(
                shown, rendered({**values, name: ""}), secrets):
            raise InputError(f"input {name} of {job.id} would be redacted where it is used, so "
                             "it holds a secret; secrets must reach commands through the "
                             "environment, never through inputs")


def _hidden(text: str, rendered: Sequence[str], secrets: Sequence[str]) -> int:
    """How many occurrences of ``text`` redaction removes from ``rendered``."""
    return sum(t.count(text) - redact(t, secrets).count(text) for t in rendered)


# --- identity ----------------------------------------------------------------------------------


def render_key(job: JobDefinition, context: Mapping[str, str]) -> str:
    """``run.idempotency_key`` rendered (``job_run_id`` is not available there)."""
    key = render(job, "run.idempotency_key", job.idempotency_key, context, shell=False)
    if not key.strip():
        raise JobError(f"the idempotency key of {job.id} renders empty; check run.idempotency_key")
    return key


def key_reads_checkpoint(job: JobDefinition) -> bool:
    """Whether the run id can depend on the checkpoint: an input taken ``from_checkpoint``,
    or a ``{{checkpoint.…}}`` placeholder in ``run.idempotency_key``. When neither, the run
    id is known without reading the checkpoint (which costs a look at every run of the Job)."""
    if any(spec.from_checkpoint is not None for spec in job.inputs):
        return True
    try:
        return any(p.root == "checkpoint" for p in find_placeholders(job.idempotency_key))
    except TemplateError:
        return True


def run_id_for(job_id: str, key: str) -> str:
    """``JBR-<slug>-<first 12 hex of sha256(key)>``."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
    return f"JBR-{job_id.removeprefix('job-')}-{digest}"


# --- existing runs -----------------------------------------------------------------------------


@attrs.frozen(kw_only=True, repr=False)
class RunIdentity:
    """Who a Job Run is, as its record, plan, result and review documents name it. ``task`` is
    the task as recorded (secrets redacted), not necessarily the one that runs."""

    run_id: str
    job_id: str
    name: str
    project_id: str
    trigger: str
    scheduled_at: str
    inputs: Mapping[str, Any]
    task: Mapping[str, Any]

    @property
    def plan_ref(self) -> str:
        """The plan document, relative to the execution directory (upstream's ``plan_ref``)."""
        return f"exec/plans/{self.run_id}-plan.md"

    @property
    def result_ref(self) -> str:
        """The result document, relative to the execution directory."""
        return f"exec/results/{self.run_id}-result.md"


@attrs.frozen(kw_only=True, repr=False)
class Existing:
    """What to do given the run's folded view (``None``: no ledger yet)."""

    action: Literal["new", "duplicate", "retry"]
    attempt: int  # the attempt to start (new/retry), or the last one (duplicate)
    open_attempt: int | None = None  # an attempt started and never ended


def existing_run(
    view: Mapping[str, Any] | None, *, run_id: str, job_id: str, key: str
) -> Existing:
    """New run, duplicate complete (E-08) or a new attempt of a failed/partial/running run."""
    if view is None:
        return Existing(action="new", attempt=1)
    if view.get("idempotency_key") != key or view.get("job_id") != job_id:
        raise JobError(f"Job Run identity collision: {run_id}")
    attempts = list(view.get("attempts") or [])
    last = max((int(a.get("attempt", 0)) for a in attempts), default=0)
    if view.get("state") in COMPLETE_STATES:
        return Existing(action="duplicate", attempt=last)
    open_ = [int(a["attempt"]) for a in attempts if a.get("status") == "running"]
    return Existing(action="retry", attempt=last + 1, open_attempt=max(open_, default=None))


def missing_checkpoint(view: Mapping[str, Any], job: JobDefinition) -> bool:
    """A complete run whose checkpoint was never recorded (a crash between the two appends):
    its state is in ``advance_on``, it has no ``checkpoint_after`` and its work is integrated
    (:func:`~specdojo_routine.core.review_rules.integrated` of the review the view records).
    A noop run that kept its commit unmerged withheld its checkpoint on purpose; recording it
    now would move the checkpoint past work the integration branch does not have."""
    spec = job.checkpoint
    return (spec is not None and view.get("state") in spec.advance_on
            and view.get("checkpoint_after") is None and integrated(view.get("review")))


# --- statuses ----------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Verdict:
    """The outcome of one attempt."""

    status: RunStatus
    reason: str | None = None
    busy: bool = False  # exit 75: the project was busy; the routine action is skipped


def precondition_skips(
    precondition: Mapping[str, Any], *, exit_code: int | None, stdout: str, error: str | None
) -> tuple[bool, str | None]:
    """(skip?, failure reason): ``empty-output`` with blank stdout or exit == ``skip_when``
    skips; another non-zero exit (or no exit at all) fails without creating the run."""
    skip_when = precondition.get("skip_when", "empty-output")
    if exit_code is None:
        return False, f"precondition did not run: {error or 'unknown error'}"
    if isinstance(skip_when, int) and exit_code == skip_when:
        return True, None
    if exit_code != 0:
        return False, f"precondition failed with exit code {exit_code}"
    if skip_when == "empty-output" and not stdout.strip():
        return True, None
    return False, None


def command_verdict(
    task: Mapping[str, Any], *, exit_code: int | None, error: str | None
) -> Verdict:
    """Exit code -> status, from the FROZEN task: 0 succeeded; ``partial_exit_code`` partial;
    ``noop_exit_code`` noop; 75 failed (busy); other failed; no exit (timeout) failed."""
    if exit_code is None:
        return Verdict(status="failed", reason=error or "command did not run")
    if exit_code == 0:
        return Verdict(status="succeeded")
    if exit_code in (task.get("partial_exit_code") or ()):
        return Verdict(status="partial", reason=f"command exited with code {exit_code} (partial)")
    if exit_code == task.get("noop_exit_code"):
        return Verdict(status="noop", reason=f"command exited with code {exit_code} (noop)")
    if exit_code == BUSY_EXIT_CODE:
        return Verdict(status="failed", reason="busy", busy=True)
    return Verdict(status="failed", reason=f"command {exited_with(exit_code)}")


def no_agent_reason(mode: str) -> str:
    return f"no agent executor configured for mode {mode}"


# --- outcomes ----------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class JobRunOutcome:
    """What ``run_job`` did; ``to_json`` is the ``job run --json`` document (SPEC §8)."""

    job_id: str
    run_id: str | None  # None when nothing was created (precondition skip, busy before create)
    state: str | None  # the run's state afterwards
    attempt: int | None
    duplicate_complete: bool = False
    skipped: bool = False
    reason: str | None = None
    evidence_ref: str | None = None
    exit_code: int | None = None  # the command's exit code
    trigger: Trigger = "manual"
    review: Mapping[str, Any] | None = None  # review_ended's payload (SPEC §11.3)
    #: files around the recorded outcome that could not be written (a full or read-only
    #: disk): the ledger holds the outcome, and the next command publishes the views again
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        doc = {"run_id": self.run_id, "job_id": self.job_id, "state": self.state,
               "attempt": self.attempt, "duplicate_complete": self.duplicate_complete,
               "skipped": self.skipped, "reason": self.reason,
               "evidence_ref": self.evidence_ref}
        return (doc | ({"review": dict(self.review)} if self.review is not None else {})
                | ({"warnings": list(self.warnings)} if self.warnings else {}))


def routine_result(outcome: JobRunOutcome) -> tuple[Result, str | None]:
    """Routine action result: succeeded/noop/duplicate success; skipped skipped; failed
    failure; partial failure with reason ``partial``."""
    if outcome.skipped:
        return Result.SKIPPED, outcome.reason
    reviewed = review_result(outcome.state, outcome.review)
    if reviewed is not None:  # merged partial -> partial; waiting -> failure (SPEC §11.3)
        return reviewed, outcome.reason if reviewed is Result.FAILURE else None
    if outcome.duplicate_complete or outcome.state in COMPLETE_STATES:
        return Result.SUCCESS, None
    if outcome.state == "partial":
        return Result.FAILURE, "partial"
    return Result.FAILURE, outcome.reason or f"job run {outcome.state or 'failed'}"


def exit_code_for(outcome: JobRunOutcome) -> int:
    """``job run`` exit code (SPEC §8): 0 ok and non-routine skips, 1 failed/partial, 75 a
    skip under ``--trigger routine``."""
    if outcome.skipped:
        return BUSY_EXIT_CODE if outcome.trigger == "routine" else 0
    if outcome.duplicate_complete or outcome.state in COMPLETE_STATES:
        return 0
    return 1

