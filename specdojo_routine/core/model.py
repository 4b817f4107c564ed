"""Definition model of routines: frozen values built from validated ``rtn-*.yaml`` (pure),
and the results every action and attempt has. Job Definitions are :mod:`.jobmodel`'s.

Objects here are only ever built by :mod:`specdojo_routine.store.definitions` after validation,
so their invariants hold; they carry the source ``path`` (relative to the project root, POSIX form)
for messages.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Literal

import attrs


class MissedRun(enum.Enum):
    SKIP = "skip"
    LATEST = "latest"
    ALL = "all"


class OnInterrupted(enum.Enum):
    REVIEW = "review"
    RESUME = "resume"


class OnFailure(enum.Enum):
    """``policy.on_failure`` (SPEC §9.1): hold later occurrences after a failure, or not."""

    CONTINUE = "continue"
    HOLD = "hold"


class Result(enum.Enum):
    """The outcome of an action or an attempt (seed 000)."""

    SUCCESS = "success"
    FAILURE = "failure"
    SKIPPED = "skipped"
    PARTIAL = "partial"  # a merged partial Job Run (seed 002 §4, SPEC §11.3)


def aggregate(results: tuple[Result, ...] | list[Result]) -> Result:
    """failure if any failed, else skipped if any skipped, else partial if any partial, else
    success (seed 000 §1.2; partial: seed 002 §4, SPEC §11.3)."""
    if Result.FAILURE in results:
        return Result.FAILURE
    if Result.SKIPPED in results:
        return Result.SKIPPED
    if Result.PARTIAL in results:
        return Result.PARTIAL
    return Result.SUCCESS


@attrs.frozen(kw_only=True)
class Duration:
    """A span as written (``90s``, ``2m``, ``6h``) and its length in seconds."""

    text: str
    seconds: int


@attrs.frozen(kw_only=True)
class Notify:
    """``policy.notify`` / the config's ``routine.notify`` (SPEC §13): a shell command run
    after each recorded event whose kind is in ``on``."""

    on: tuple[str, ...]
    command: str


NOTIFY_EVENTS = ("failure", "missed", "held", "interrupted", "recovered")


@attrs.frozen(kw_only=True)
class Retry:
    """``policy.retry`` (SPEC §13): ``attempts`` counts the first; the n-th retry waits
    ``min(delay x backoff^(n-1), max_delay)`` from the end of the attempt it retries."""

    attempts: int
    delay: Duration = Duration(text="30s", seconds=30)
    backoff: float = 2.0
    max_delay: Duration = Duration(text="1h", seconds=3600)


@attrs.frozen(kw_only=True)
class Policy:
    missed_run: MissedRun = MissedRun.LATEST
    overlap: str = "skip"
    on_interrupted: OnInterrupted = OnInterrupted.REVIEW
    on_failure: OnFailure = OnFailure.CONTINUE
    starting_deadline: Duration | None = None  # SPEC §9.2; None = no deadline
    timeout: Duration | None = None  # SPEC §13: bounds a whole attempt; None = no bound
    notify: Notify | None = None  # SPEC §13: None = the project's routine.notify, if any
    retry: Retry | None = None  # SPEC §13: None = a failure waits for the next occurrence


@attrs.frozen(kw_only=True)
class CronTrigger:
    cron: str
    timezone: str


@attrs.frozen(kw_only=True)
class Interval:
    text: str  # as written, e.g. "6h"
    seconds: int


# --- routine actions -------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class JobAction:
    job: str
    inputs: Mapping[str, str] = attrs.field(factory=dict)
    commit: bool = False  # legacy: review before merge in a worktree (SPEC §11.3)
    kind: Literal["job"] = "job"
    timeout: Duration | None = None  # the action's own bound (SPEC §13)


@attrs.frozen(kw_only=True)
class SpecdojoAction:
    args: tuple[str, ...]
    kind: Literal["specdojo"] = "specdojo"
    timeout: Duration | None = None  # the action's own bound (SPEC §13)


@attrs.frozen(kw_only=True)
class RegisterAction:
    types: tuple[str, ...] = ()
    priorities: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    limit: int | None = None
    kind: Literal["register"] = "register"
    timeout: Duration | None = None  # the action's own bound (SPEC §13)


@attrs.frozen(kw_only=True)
class ExecAutoAction:
    """``exec-auto`` and ``exec-cycle`` share their options."""

    kind: Literal["exec-auto", "exec-cycle"]
    strategy: str | None = None
    parallel: int | None = None
    loop: bool = False
    max_rounds: int | None = None
    timeout: Duration | None = None  # the action's own bound (SPEC §13)


@attrs.frozen(kw_only=True)
class ExecResumeAction:
    parallel: int | None = None
    kind: Literal["exec-resume"] = "exec-resume"
    timeout: Duration | None = None  # the action's own bound (SPEC §13)


Action = JobAction | SpecdojoAction | RegisterAction | ExecAutoAction | ExecResumeAction

ACTION_KINDS = ("job", "specdojo", "register", "exec-auto", "exec-resume", "exec-cycle")
REGISTER_TYPES = ("todo", "question", "risk", "issue", "change-request", "decision", "note")
REGISTER_PRIORITIES = ("high", "medium", "low")
REGISTER_STATUSES = (
    "open", "in-progress", "waiting", "review", "decided", "done", "deferred", "rejected",
)
EXEC_STRATEGIES = ("critical-first", "fifo")


@attrs.frozen(kw_only=True)
class Routine:
    id: str
    path: str
    digest: str  # sha256 of the canonical definition
    name: str | None = None
    description: str | None = None
    enabled: bool = True
    trigger: CronTrigger | None = None
    interval: Interval | None = None
    policy: Policy = Policy()
    actions: tuple[Action, ...]
    is_list: bool = False  # the action was written as a list

    @property
    def timezone(self) -> str | None:
        return self.trigger.timezone if self.trigger else None

    @property
    def schedule_text(self) -> str:
        if self.trigger is not None:
            return f"cron {self.trigger.cron} ({self.trigger.timezone})"
        assert self.interval is not None
        return f"every {self.interval.text}"
