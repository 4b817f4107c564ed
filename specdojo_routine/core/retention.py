"""Retention (SPEC §15): which ended Job Runs and routine attempts give up their files (pure).

A ledger is never rewritten; what grows without bound are the files around it: evidence, plan
and result documents, kept review worktrees. :func:`prunable` decides which of them go, by one
rule for both kinds of owner (a Job Run, grouped by its Job; a routine attempt, grouped by its
routine):

- the owner ended before the window (``ended_at`` earlier than ``now - keep_days``);
- it is not among the newest ``keep_runs`` of its group (newest by when it began);
- it is not live: an open, interrupted or waiting run, an open attempt (``ended_at`` None);
- it is not ``protected`` (the run a checkpoint names).

The caller reads the owners (:func:`run_owner`, :func:`attempt_owner` build them from what the
ledgers and evidence say) and removes the files; nothing here touches a file or the clock.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from specdojo_routine.core.event_checks import PRUNABLE_STATES
from specdojo_routine.core.timefmt import try_parse_instant

DEFAULT_KEEP_DAYS = 90
DEFAULT_KEEP_RUNS = 50
_EARLIEST = datetime.min.replace(tzinfo=UTC)
_ATTEMPT_STAMP = re.compile(r"att-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z-.*")


@attrs.frozen(kw_only=True)
class Retention:
    """How much to keep: ``keep_days`` of ended owners, at least the newest ``keep_runs`` of
    each group; ``auto``: ``run --due`` prunes as it goes (the project config's
    ``retention``)."""

    keep_days: int = DEFAULT_KEEP_DAYS
    keep_runs: int = DEFAULT_KEEP_RUNS
    auto: bool = False


@attrs.frozen(kw_only=True)
class Owner:
    """Something whose files retention may remove: ``key`` (a run id, an attempt id) in
    ``group`` (its Job, its routine). ``began_at`` ranks the newest; ``ended_at`` is None while
    it is live (open, interrupted, waiting), which keeps it whatever its age."""

    key: str
    group: str
    began_at: datetime | None
    ended_at: datetime | None


def prunable(
    owners: Iterable[Owner], *, keep_days: int, keep_runs: int, now: datetime,
    protected: Collection[str] = (),
) -> list[str]:
    """The keys whose files go, sorted (see the module docstring for the rule)."""
    since = cutoff(now, keep_days)
    groups: dict[str, list[Owner]] = {}
    for owner in owners:
        groups.setdefault(owner.group, []).append(owner)
    chosen: list[str] = []
    for members in groups.values():
        members.sort(key=_recency, reverse=True)
        for owner in members[keep_runs:]:
            if owner.ended_at is not None and owner.ended_at < since \
                    and owner.key not in protected:
                chosen.append(owner.key)
    return sorted(chosen)


def cutoff(now: datetime, keep_days: int) -> datetime:
    """The start of the window: ``now - keep_days``, or the earliest instant when the window
    reaches back before the year 1 (a window that large keeps everything that ended)."""
    try:
        return now - timedelta(days=keep_days)
    except OverflowError:
        return _EARLIEST


def _recency(owner: Owner) -> tuple[datetime, str]:
    return owner.began_at or owner.ended_at or _EARLIEST, owner.key


def run_owner(doc: Mapping[str, Any]) -> Owner:
    """A Job Run view as an owner: ended when its state is final (succeeded, partial, failed,
    noop) and its last attempt closed, at that attempt's ``completed_at`` (else the run's
    ``updated_at``); it began at ``created_at``."""
    attempts = doc.get("attempts")
    last = attempts[-1] if isinstance(attempts, list) and attempts else {}
    ended = None
    if doc.get("state") in PRUNABLE_STATES and isinstance(last, dict) \
            and last.get("status") != "running":
        ended = try_parse_instant(last.get("completed_at")) or try_parse_instant(
            doc.get("updated_at"))
    return Owner(key=str(doc.get("run_id")), group=str(doc.get("job_id")),
                 began_at=try_parse_instant(doc.get("created_at")), ended_at=ended)


def attempt_owner(
    attempt_id: str, routine_id: str, *, started_at: str | None, completed_at: str | None,
    open_attempts: Collection[str],
) -> Owner:
    """A routine attempt as an owner; an attempt still open (or interrupted) is live."""
    ended = None if attempt_id in open_attempts else try_parse_instant(completed_at)
    return Owner(key=attempt_id, group=routine_id, began_at=try_parse_instant(started_at),
                 ended_at=ended)


def attempt_began(attempt_id: str) -> str | None:
    """When a routine attempt began, from its id (``att-<UTC yyyymmddThhmmssZ>-<hex>``)."""
    found = _ATTEMPT_STAMP.fullmatch(attempt_id)
    if found is None:
        return None
    y, mo, d, h, mi, s = found.groups()
    return f"{y}-{mo}-{d}T{h}:{mi}:{s}Z"


def check_retention(keep_days: Any, keep_runs: Any, auto: Any) -> list[str]:
    """What is wrong with a ``retention`` block's values (empty: nothing)."""
    problems = []
    for name, value in (("keep_days", keep_days), ("keep_runs", keep_runs)):
        if type(value) is not int or value < 0:
            problems.append(f"retention.{name} must be an integer >= 0 (got {value!r})")
    if type(auto) is not bool:
        problems.append(f"retention.auto must be true or false (got {auto!r})")
    return problems
