"""Built routines as plain JSON data and back, for the definition cache (:mod:`.defcache`).

:func:`encode` writes every field of a :class:`~specdojo_routine.core.model.Routine` whose
actions depend on nothing outside its file (every kind but ``job``, whose checks read the Job
Definitions); :class:`Decoder` reads such data back, checking every field's type and value as it
goes, and gives ``None`` - "not usable, build it again" - for anything that is not exactly what
:func:`encode` writes. ``Decoder().decode(encode(r)) == r`` (tests/test_definition_cache.py).
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson

from specdojo_routine.core import model

_MISSED = {m.value: m for m in model.MissedRun}
_INTERRUPTED = {m.value: m for m in model.OnInterrupted}
_FAILURE = {m.value: m for m in model.OnFailure}


class _Bad(Exception):
    """The data is not what :func:`encode` writes."""


def cacheable(routine: model.Routine) -> bool:
    """Whether the routine's meaning depends on its file alone (no ``job`` action)."""
    return not any(isinstance(action, model.JobAction) for action in routine.actions)


def encode(routine: model.Routine) -> list[Any]:
    """Plain JSON data of a routine for which :func:`cacheable` holds: a list of its fields,
    the policy and the actions each as one JSON text (routines share them: read once)."""
    policy = routine.policy
    deadline = policy.starting_deadline
    trigger, interval = routine.trigger, routine.interval
    return [
        routine.id, routine.path, routine.digest, routine.name, routine.description,
        routine.enabled, routine.is_list,
        None if trigger is None else [trigger.cron, trigger.timezone],
        None if interval is None else [interval.text, interval.seconds],
        orjson.dumps([policy.missed_run.value, policy.overlap, policy.on_interrupted.value,
                      policy.on_failure.value, _encode_duration(deadline),
                      _encode_duration(policy.timeout),
                      None if policy.notify is None else [list(policy.notify.on),
                                                          policy.notify.command],
                      _encode_retry(policy.retry)]).decode(),
        orjson.dumps([[*_encode_action(action), _encode_duration(action.timeout)]
                      for action in routine.actions]).decode(),
    ]


def _encode_duration(value: model.Duration | None) -> list[Any] | None:
    return None if value is None else [value.text, value.seconds]


def _encode_retry(retry: model.Retry | None) -> list[Any] | None:
    if retry is None:
        return None
    return [retry.attempts, _encode_duration(retry.delay), retry.backoff,
            _encode_duration(retry.max_delay)]


def _retry(value: object) -> model.Retry | None:
    if value is None:
        return None
    attempts, delay, backoff, max_delay = _list(value)
    if type(backoff) is not float:
        raise _Bad
    return model.Retry(attempts=_int(attempts), delay=_duration(delay) or _no(),
                       backoff=backoff, max_delay=_duration(max_delay) or _no())


def _no() -> model.Duration:
    raise _Bad


def _duration(value: object) -> model.Duration | None:
    if value is None:
        return None
    pair = _pair(value)
    return model.Duration(text=_text(pair[0]), seconds=_int(pair[1]))


def _notify(value: object) -> model.Notify | None:
    if value is None:
        return None
    on, command = _pair(value)
    kinds = _texts(on)
    if not kinds or any(kind not in model.NOTIFY_EVENTS for kind in kinds):
        raise _Bad
    return model.Notify(on=kinds, command=_text(command))


def _encode_action(action: model.Action) -> list[Any]:
    if isinstance(action, model.SpecdojoAction):
        return ["specdojo", list(action.args)]
    if isinstance(action, model.RegisterAction):
        return ["register", list(action.types), list(action.priorities), list(action.statuses),
                action.limit]
    if isinstance(action, model.ExecAutoAction):
        return [action.kind, action.strategy, action.parallel, action.loop, action.max_rounds]
    if isinstance(action, model.ExecResumeAction):
        return ["exec-resume", action.parallel]
    raise ValueError(f"not cacheable: {action!r}")


class Decoder:
    """Reads what :func:`encode` wrote; remembers the policies and action lists it read."""

    def __init__(self) -> None:
        self._policies: dict[str, model.Policy] = {}
        self._actions: dict[str, tuple[model.Action, ...]] = {}

    def decode(self, doc: object) -> model.Routine | None:
        """The routine :func:`encode` wrote as ``doc``, or None when ``doc`` is anything
        else."""
        try:
            return self._decode(doc)
        except (_Bad, KeyError, IndexError, TypeError, ValueError):
            return None

    def _decode(self, doc: object) -> model.Routine:
        if type(doc) is not list or len(doc) != 11:
            raise _Bad
        rid, path, digest, name, description, enabled, is_list, trigger, interval, policy, \
            actions = doc
        if type(rid) is not str or type(path) is not str or type(digest) is not str:
            raise _Bad
        return model.Routine(
            id=rid, path=path, digest=digest, name=_maybe(_text, name),
            description=_maybe(_text, description), enabled=_flag(enabled),
            trigger=None if trigger is None else model.CronTrigger(
                cron=_text(_pair(trigger)[0]), timezone=_text(trigger[1])),
            interval=None if interval is None else model.Interval(
                text=_text(_pair(interval)[0]), seconds=_int(interval[1])),
            policy=self._policy(_text(policy)), actions=self._action_list(_text(actions)),
            is_list=_flag(is_list),
        )

    def _policy(self, text: str) -> model.Policy:
        found = self._policies.get(text)
        if found is None:
            found = self._policies[text] = _policy(orjson.loads(text))
        return found

    def _action_list(self, text: str) -> tuple[model.Action, ...]:
        found = self._actions.get(text)
        if found is None:
            found = self._actions[text] = tuple(_timed_action(a)
                                                for a in _list(orjson.loads(text)))
        return found


def _policy(doc: object) -> model.Policy:
    items = _list(doc)
    if len(items) != 8:
        raise _Bad
    missed, overlap, interrupted, failure, deadline, timeout, notify, retry = items
    return model.Policy(
        missed_run=_MISSED[_text(missed)], overlap=_text(overlap),
        on_interrupted=_INTERRUPTED[_text(interrupted)], on_failure=_FAILURE[_text(failure)],
        starting_deadline=_duration(deadline), timeout=_duration(timeout),
        notify=_notify(notify), retry=_retry(retry),
    )


def _timed_action(doc: object) -> model.Action:
    """An action and, as its last item, its own ``timeout`` (SPEC §13)."""
    items = _list(doc)
    if len(items) < 2:
        raise _Bad
    action = _action(items[:-1])
    timeout = _duration(items[-1])
    return action if timeout is None else attrs.evolve(action, timeout=timeout)


def _action(doc: object) -> model.Action:
    items = _list(doc)
    kind, rest = _text(items[0]), items[1:]
    if kind == "specdojo" and len(rest) == 1:
        return model.SpecdojoAction(args=_texts(rest[0]))
    if kind == "register" and len(rest) == 4:
        return model.RegisterAction(types=_texts(rest[0]), priorities=_texts(rest[1]),
                                    statuses=_texts(rest[2]), limit=_maybe(_int, rest[3]))
    if kind in ("exec-auto", "exec-cycle") and len(rest) == 4:
        return model.ExecAutoAction(
            kind="exec-cycle" if kind == "exec-cycle" else "exec-auto",
            strategy=_maybe(_text, rest[0]), parallel=_maybe(_int, rest[1]),
            loop=_flag(rest[2]), max_rounds=_maybe(_int, rest[3]))
    if kind == "exec-resume" and len(rest) == 1:
        return model.ExecResumeAction(parallel=_maybe(_int, rest[0]))
    raise _Bad


def _text(value: object) -> str:
    if type(value) is not str:
        raise _Bad
    return value


def _int(value: object) -> int:
    if type(value) is not int:
        raise _Bad
    return value


def _flag(value: object) -> bool:
    if type(value) is not bool:
        raise _Bad
    return value


def _list(value: object) -> list[Any]:
    if type(value) is not list:
        raise _Bad
    return value


def _pair(value: object) -> list[Any]:
    items = _list(value)
    if len(items) != 2:
        raise _Bad
    return items


def _texts(value: object) -> tuple[str, ...]:
    return tuple(_text(item) for item in _list(value))


def _maybe(read: Any, value: object) -> Any:
    return None if value is None else read(value)
