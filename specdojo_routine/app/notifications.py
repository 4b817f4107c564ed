"""Notification hooks wired to the routine ledger (SPEC §13).

After :mod:`.handlers` records an event an operator may want to hear about - an attempt that
ended ``failure``, the first ``success`` after a failure (``recovered``), an occurrence
``held`` or ``missed``, an attempt found ``interrupted`` - :func:`notify` runs the routine's
``policy.notify`` command (else the project's ``routine.notify``) when its ``on`` lists that
kind, and appends ``notification_sent``. The hook's outcome never changes a result: a hook that
fails, cannot start or is killed at its timeout is a ``warning:`` line of the run. An attempt
found interrupted is notified once (the ledger already saying so is enough). While a stop is
being recorded nothing is notified: the operator is stopping the runner; a stop that arrives
while a hook runs ends the hook, and its outcome is still recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from specdojo_routine.core import errors, routine_events
from specdojo_routine.core.model import Notify, Routine
from specdojo_routine.core.redact import redact
from specdojo_routine.execute import notify as hooks
from specdojo_routine.execute import runner, stop
from specdojo_routine.store.config import CONFIG_RELPATH, ProjectPaths
from specdojo_routine.store.definitions.notifyconfig import load_default_notify
from specdojo_routine.store.ledger.backwards import attempt_events, read_backwards


def hook_for(paths: ProjectPaths, routine: Routine) -> Notify | None:
    """The routine's own ``policy.notify``, else the project's default (a default with
    problems is not used: ``validate`` names them, :func:`notify` warns)."""
    return _hook_and_error(paths, routine)[0]


def _hook_and_error(paths: ProjectPaths, routine: Routine) -> tuple[Notify | None, str | None]:
    """:func:`hook_for`, and the first error of a project default it could not use."""
    if routine.policy.notify is not None:
        return routine.policy.notify, None
    default, problems = load_default_notify(paths)
    error = next((str(p) for p in problems if not p.warning), None)
    return (None, error) if error is not None else (default, None)


def notify(
    *, paths: ProjectPaths, routine: Routine, kind: str, env: Mapping[str, str],
    secrets: tuple[str, ...], record: Callable[[routine_events.NotificationSent], object],
    warnings: list[str], attempt_id: str | None = None, scheduled_for: str | None = None,
    result: str | None = None, reason: str | None = None, cause: str = "",
) -> None:
    """Run the hook for ``kind`` if the routine's notify block asks for it (see the module
    docstring); ``cause`` is the ledger type of the event being notified."""
    hook, error = _hook_and_error(paths, routine)
    if error is not None and stop.requested() is None:
        _warn_unusable_default(routine, kind, error, secrets, warnings)
    if hook is None or kind not in hook.on or stop.requested() is not None:
        return
    if kind == "interrupted" and attempt_id is not None and _already_told(
            paths, routine.id, attempt_id):
        return
    payload: dict[str, Any] = {
        "event": kind, "type": cause, "routine_id": routine.id, "attempt_id": attempt_id,
        "scheduled_for": scheduled_for, "result": result, "reason": reason,
    }
    with stop.deferred():  # a stop ends the hook; its outcome is recorded before unwinding
        outcome = hooks.run_hook(hook.command, root=paths.root, env=env, payload=payload,
                                 secrets=list(secrets))
        record(routine_events.NotificationSent(
            routine_id=routine.id, event=kind, exit_code=outcome.exit_code,
            duration_s=float(outcome.duration_s), attempt_id=attempt_id,
            scheduled_for=scheduled_for, reason=outcome.error))
    if outcome.exit_code != 0:
        why = outcome.error or errors.exited_with(outcome.exit_code or 0, stderr_kept=False)
        where = (f"policy.notify.command in {routine.path}" if routine.policy.notify is not None
                 else f"routine.notify in {CONFIG_RELPATH.as_posix()}")
        fix = "" if runner.environment_limit(outcome.error) else f" (fix {where})"
        warnings.append(redact(f"warning: {routine.id}: the {kind} notification hook {why}; "
                               f"the routine's result stands{fix}", list(secrets)))


def _warn_unusable_default(routine: Routine, kind: str, error: str,
                           secrets: tuple[str, ...], warnings: list[str]) -> None:
    """Say that an event went unnotified because the project's default hook is invalid: a
    cron job runs ``run``, not ``validate``, so the run is where the operator can hear of it
    (once per routine and kind in a run)."""
    rel = CONFIG_RELPATH.as_posix()
    line = redact(f"warning: {routine.id}: the {kind} notification was not sent: {error} "
                  f"(fix routine.notify in {rel}; `validate` lists every problem)", list(secrets))
    if line not in warnings:
        warnings.append(line)


def recovers(paths: ProjectPaths, routine: Routine, attempt_id: str, status: Any) -> bool:
    """Whether the success of ``attempt_id`` is a recovery (SPEC §13: ``recovered`` fires on
    the first success after a failure): the routine's status before it (``status``) was
    ``failure``, or it was ``skipped`` and the most recent outcome before the skips was
    ``failure``. Whether that failure was notified does not matter. Only a hook that lists
    ``recovered`` has the ledger read back past the skipped attempts, or a project default
    too invalid to tell (a recovery it may have announced is warned of, :func:`notify`)."""
    if status == "failure":
        return True
    hook, error = _hook_and_error(paths, routine) if status == "skipped" else (None, None)
    if error is None and (hook is None or "recovered" not in hook.on):
        return False
    from specdojo_routine.core.attempts import last_outcome

    events = (event for _, event in read_backwards(paths.routine_ledger))
    return last_outcome(events, routine.id, before=attempt_id) == "failure"


def _already_told(paths: ProjectPaths, routine_id: str, attempt_id: str) -> bool:
    """Whether the ledger records an ``interrupted`` notification for this attempt (read from
    the end back to the attempt's start, so the cost is what happened since)."""
    return any(e.get("type") == "notification_sent" and e.get("event") == "interrupted"
               for e in attempt_events(paths.routine_ledger, routine_id, attempt_id))
