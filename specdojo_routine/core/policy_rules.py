"""The rules of a routine's ``policy:`` block (SPEC §9, §13), on the machinery of
:mod:`.validation`: missed runs, overlap, interruption and failure handling, the starting
deadline, the timeout, retries and notification hooks.

Apart from the rest of a routine file's rules (:mod:`.routine_rules`) because the config's
``routine.notify`` is checked by the same rule as ``policy.notify``, and a duration is worded
alike wherever it appears (an action's ``timeout`` too).
"""

from __future__ import annotations

from specdojo_routine.core import model
from specdojo_routine.core.cron_syntax import parse_duration
from specdojo_routine.core.shellquote import shell_problem
from specdojo_routine.core.validation import (
    Node,
    Report,
    choice,
    got,
    mapping,
    required,
    text,
    unknown_keys,
)


def policy_block(r: Report, node: Node | None) -> model.Policy | None:
    """A routine's ``policy`` (the defaults when absent), or None after reporting its problems."""
    if node is None:
        return model.Policy()
    if not mapping(r, node, _POLICY_SHAPE):
        return None
    unknown_keys(r, node, POLICY_KEYS, "policy")
    missed = choice(r, node.get("missed_run"), tuple(_MISSED_RUN))
    overlap = choice(r, node.get("overlap"), ("skip",))
    resume = choice(r, node.get("on_interrupted"), tuple(_ON_INTERRUPTED))
    return model.Policy(
        missed_run=_MISSED_RUN[missed or "latest"],
        overlap=overlap or "skip",
        on_interrupted=_ON_INTERRUPTED[resume or "review"],
        on_failure=_on_failure(r, node.get("on_failure")),
        starting_deadline=_deadline(r, node.get("starting_deadline")),
        timeout=timeout(r, node.get("timeout")),
        notify=notify_block(r, node.get("notify")),
        retry=_retry(r, node.get("retry")),
    )


POLICY_KEYS = ("missed_run", "overlap", "on_interrupted", "on_failure", "starting_deadline",
               "timeout", "notify", "retry")
_POLICY_SHAPE = " (" + ", ".join(POLICY_KEYS) + ")"
# value -> member, in declaration order (the allowed values of the messages)
_MISSED_RUN = {m.value: m for m in model.MissedRun}
_ON_INTERRUPTED = {m.value: m for m in model.OnInterrupted}
_ON_FAILURE = {m.value: m for m in model.OnFailure}


def _on_failure(r: Report, node: Node | None) -> model.OnFailure:
    """``policy.on_failure`` (SPEC §9.1), worded like upstream's enum messages."""
    if node is None:
        return model.OnFailure.CONTINUE
    member = _ON_FAILURE.get(node.value) if isinstance(node.value, str) else None
    if member is None:
        r.error(node.where(), f"policy.on_failure must be continue or hold (got {got(node.value)})")
        return model.OnFailure.CONTINUE
    return member


def _deadline(r: Report, node: Node | None) -> model.Duration | None:
    """``policy.starting_deadline`` (SPEC §9.2): interval syntax plus ``s``."""
    if node is None:
        return None
    seconds = parse_duration(node.value)
    if seconds is None:
        r.error(node.where(),
                f"policy.starting_deadline must be <n>s|m|h|d|w (got {got(node.value)})")
        return None
    return model.Duration(text=str(node.value).strip(), seconds=seconds)


def timeout(r: Report, node: Node | None) -> model.Duration | None:
    """``policy.timeout`` or an action's ``timeout`` (SPEC §13): interval syntax plus ``s``."""
    if node is None:
        return None
    seconds = parse_duration(node.value)
    if seconds is None:
        r.error(node.where(), f"{node.label} must be <n>s|m|h|d|w, e.g. 90s or 6h "
                f"(got {got(node.value)})")
        return None
    return model.Duration(text=str(node.value).strip(), seconds=seconds)


RETRY_KEYS = ("attempts", "delay", "backoff", "max_delay")


def _retry(r: Report, node: Node | None) -> model.Retry | None:
    """``policy.retry`` (SPEC §13): ``attempts`` 2-10 (required), ``delay`` and ``max_delay``
    durations, ``backoff`` 1-10."""
    if node is None or not mapping(r, node, " with attempts (and delay, backoff, max_delay)"):
        return None
    unknown_keys(r, node, RETRY_KEYS, node.label)
    base = model.Retry(attempts=2)
    attempts_node = required(r, node, "attempts")
    attempts = None
    if attempts_node is not None:
        value = attempts_node.value
        if isinstance(value, int) and not isinstance(value, bool) and 2 <= value <= 10:
            attempts = int(value)
        else:
            r.error(attempts_node.where(), f"{attempts_node.label} must be an integer from 2 to "
                    f"10, counting the first attempt (got {got(value)})")
    backoff_node = node.get("backoff")
    backoff = base.backoff
    if backoff_node is not None:
        value = backoff_node.value
        if isinstance(value, int | float) and not isinstance(value, bool) and 1 <= value <= 10:
            backoff = float(value)
        else:
            r.error(backoff_node.where(), f"{backoff_node.label} must be a number from 1 to 10 "
                    f"(got {got(value)})")
    delay, max_delay = timeout(r, node.get("delay")), timeout(r, node.get("max_delay"))
    if attempts is None or r.failed:
        return None
    return model.Retry(attempts=attempts, delay=delay or base.delay, backoff=backoff,
                       max_delay=max_delay or base.max_delay)


NOTIFY_KEYS = ("on", "command")


def notify_block(r: Report, node: Node | None) -> model.Notify | None:
    """``policy.notify`` or the config's ``routine.notify`` (SPEC §13): ``on`` (a non-empty
    list of event kinds) and ``command`` (a shell command), both required."""
    if node is None or not mapping(r, node, " with on and command"):
        return None
    unknown_keys(r, node, NOTIFY_KEYS, node.label)
    on_node, command_node = required(r, node, "on"), required(r, node, "command")
    command = text(r, command_node, nonempty=True)
    kinds = _notify_events(r, on_node) if on_node is not None else None
    if command is None or kinds is None:
        return None
    assert command_node is not None  # text() gave a command
    _check_notify_command(r, command_node, command)
    return model.Notify(on=kinds, command=command)


def _check_notify_command(r: Report, node: Node, command: str) -> None:
    """What ``/bin/sh -c`` cannot run, said at validate instead of by every notification: a
    NUL (no process receives one) is an error; a quote or substitution left open a warning,
    the hook's failure being only a warning at run time too (SPEC §13)."""
    problem = shell_problem(command)
    if problem is not None and "\0" in command:
        r.error(node.pos, f"{node.label}: {problem}")
    elif problem is not None:
        r.warn(node.pos, f"{node.label}: {problem}: /bin/sh will refuse it and every "
               "notification would fail")


def _notify_events(r: Report, node: Node) -> tuple[str, ...] | None:
    allowed = ", ".join(model.NOTIFY_EVENTS)
    if not isinstance(node.value, list) or not node.value:
        r.error(node.where(), f"{node.label} must be a non-empty list of: {allowed} "
                f"(got {got(node.value)})")
        return None
    kinds: list[str] = []
    for item in node.elements():
        if isinstance(item.value, str) and item.value in model.NOTIFY_EVENTS:
            kinds.append(item.value)
        else:
            r.error(item.pos, f"{node.label} contains unknown event {got(item.value)}. "
                    f"Allowed: {allowed}")
    return tuple(dict.fromkeys(kinds)) if len(kinds) == len(node.value) else None
