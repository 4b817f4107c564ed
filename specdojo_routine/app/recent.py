"""What happened lately, read from the end of the routine ledger (SPEC §14, §15): the last
events or attempts, filtered, and whether a routine id names anything at all.

The cost is bounded by what is asked for: ``--limit N`` stops after N matches, and the event
view stops at the first event recorded before ``--since``. Writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs
import orjson

from specdojo_routine.core import errors, routine_events
from specdojo_routine.core.attempts import Attempt, Gatherer, matches
from specdojo_routine.core.errors import UsageError
from specdojo_routine.core.suggest import unknown
from specdojo_routine.core.timefmt import try_parse_instant
from specdojo_routine.store.config import ProjectPaths, read_regular
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.ledger.backwards import read_backwards
from specdojo_routine.store.ledger.journal import read_lines

Line = tuple[bytes, dict[str, Any]]


def check_routine_id(paths: ProjectPaths, routine_id: str, *, see: str = "list") -> None:
    """Refuse (exit 2, with "did you mean") an id that no definition and no ledger entry
    names. The ids the ledger mentions are read from the published view; only when there is
    none is the ledger itself searched."""
    known = set(known_routine_ids(paths))
    if routine_id in known:
        return
    view = _view_ids(paths)
    if view is None:  # a missing ledger has no lines; a link to nothing is refused
        if any(e.get("routine_id") == routine_id for _, e in read_backwards(
                paths.routine_ledger)):
            return
    elif view is not None:
        if routine_id in view:
            return
        known |= view
    raise UsageError(unknown("routine", routine_id, known, see))


def known_routine_ids(paths: ProjectPaths) -> list[str]:
    """The ids of every routine file, valid or not (an invalid one is still a routine)."""
    defs = definitions.load_definitions(paths)
    ids = [r.id for r in defs.routines]
    ids += [p.path.rsplit("/", 1)[-1].split(".")[0] for p in defs.errors
            if p.path.rsplit("/", 1)[-1].startswith("rtn-")]
    return ids


def _view_ids(paths: ProjectPaths) -> set[str] | None:
    """The routine ids of the published view, or None when there is no readable view. Only a
    regular file is read: a FIFO in its place would block the command forever (the ledger
    is searched instead)."""
    try:
        document = orjson.loads(read_regular(paths.routine_state))
    except (OSError, orjson.JSONDecodeError):
        return None
    routines = document.get("routines") if isinstance(document, dict) else None
    return set(routines) if isinstance(routines, dict) else None


def _checked_lines(paths: ProjectPaths, *, forward: bool = False) -> Iterator[Line]:
    """The routine ledger newest first (``forward``: oldest first); an unknown event type is
    damage (SPEC §5)."""
    lines = (read_lines if forward else read_backwards)(paths.routine_ledger)
    for raw, event in lines:
        if (kind := event.get("type")) not in routine_events.ROUTINE_EVENT_TYPES:
            raise errors.CorruptLedgerError(str(paths.routine_ledger), int(event.get("seq", 0)),
                                            f"unknown routine event type {kind!r}")
        yield raw, event


def every_event(paths: ProjectPaths, routine_id: str | None = None, *,
                until: datetime | None = None, result: str | None = None) -> Iterator[Line]:
    """The matching events of the whole ledger, oldest first, handed out as they are read
    forward: ``history`` without ``--limit`` or ``--since`` asks for all of them, and holding
    them before printing took memory in proportion to the project's age."""
    for raw, event in _checked_lines(paths, forward=True):
        if _event_matches(event, routine_id, try_parse_instant(event.get("at")), until, result):
            yield raw, event


def recent_events(
    paths: ProjectPaths, routine_id: str | None = None, *, limit: int | None = None,
    since: datetime | None = None, until: datetime | None = None, result: str | None = None,
) -> list[Line]:
    """The matching events, oldest first: (the line as stored, the upgraded event). Time
    filters look at when an event was recorded (``at``); ``result`` at its ``result``."""
    found: list[Line] = []
    for raw, event in _checked_lines(paths):
        at = try_parse_instant(event.get("at"))
        if since is not None and at is not None and at < since:
            break  # the ledger is in the order it was recorded
        if _event_matches(event, routine_id, at, until, result):
            found.append((raw, event))
            if limit is not None and len(found) >= limit:
                break
    found.reverse()
    return found


def events_since(paths: ProjectPaths, since: datetime) -> Iterator[dict[str, Any]]:
    """The events recorded from ``since`` on, newest first, handed out one at a time: a
    caller that folds them keeps what it builds, never the window's lines themselves."""
    for _raw, event in _checked_lines(paths):
        at = try_parse_instant(event.get("at"))
        if at is not None and at < since:
            return  # the ledger is in the order it was recorded
        yield event


def _event_matches(event: dict[str, Any], routine_id: str | None, at: datetime | None,
                   until: datetime | None, result: str | None) -> bool:
    if routine_id is not None and event.get("routine_id") != routine_id:
        return False
    if until is not None and (at is None or at > until):
        return False
    return result is None or event.get("result") == result


def recent_attempts(
    paths: ProjectPaths, routine_id: str | None = None, *, limit: int | None = None,
    since: datetime | None = None, until: datetime | None = None, result: str | None = None,
) -> list[Attempt]:
    """The matching attempts, oldest first (see :func:`specdojo_routine.core.attempts.matches`);
    an open one whose runner is gone is marked interrupted before it is matched."""
    found: list[Attempt] = []
    gone = RunnerCheck(paths)
    for attempt in _attempts(_checked_lines(paths), routine_id):
        attempt = gone.mark(attempt)
        if matches(attempt, since=since, until=until, result=result):
            found.append(attempt)
            if limit is not None and len(found) >= limit:
                break
    found.reverse()
    return found


def _attempts(lines: Iterable[Line], routine_id: str | None) -> Iterator[Attempt]:
    gather = Gatherer()
    for _raw, event in lines:
        if routine_id is not None and event.get("routine_id") != routine_id:
            continue
        attempt = gather.feed(event)
        if attempt is not None:
            yield attempt


class RunnerCheck:
    """Whether an open attempt's runner is gone, by the rule ``list`` applies to a routine
    (:func:`specdojo_routine.app.listing.runner_gone`, SPEC §6.5), so every answer calls the
    same attempt the same thing. The routine view and the lock are read once, and only when an
    open attempt is asked about: a history of ended attempts costs nothing more; an attempt
    whose runner is gone is read again, as ``list`` does, in case it ended meanwhile."""

    def __init__(self, paths: ProjectPaths) -> None:
        self._paths = paths
        self._states: Mapping[str, Any] | None = None
        self._lock_held = False

    def gone(self, routine_id: str, attempt_id: str | None) -> bool:
        """Whether ``attempt_id`` is ``routine_id``'s open attempt and its runner is gone.
        An open attempt that is not the routine's open one is not known to be either."""
        from specdojo_routine.app import listing

        if self._states is None:
            from specdojo_routine.store.ledger import adopt
            from specdojo_routine.store.locks import routine as locks

            self._states = adopt.plan_routine_imports(self._paths).view.routines
            self._lock_held = locks.status_soon(
                self._paths.routine_locks_dir, now=datetime.now(UTC),
                project=self._paths.project_id)().held
        state = self._states.get(routine_id) or {}
        if attempt_id is None or (state.get("open_attempt") or {}).get(
                "attempt_id") != attempt_id:
            return False
        return listing.runner_gone(state, self._lock_held) \
            and listing.still_open(self._paths, {routine_id: attempt_id})

    def mark(self, attempt: Attempt) -> Attempt:
        """``attempt``, marked interrupted when it is open and its runner is gone."""
        if attempt.result is not None or not self.gone(attempt.routine_id, attempt.attempt_id):
            return attempt
        return attrs.evolve(attempt, interrupted=True)
