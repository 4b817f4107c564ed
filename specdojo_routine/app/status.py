"""``status``: is everything healthy, and what is going on with one routine (SPEC §14).

Without ids, every routine on one line, worst first, with the health rule of ``list``
(:mod:`..core.health`). With ids, one block per routine: its schedule in words and in its zone,
its policy, its state, the next occurrences, the last attempts (read from the end of the
ledger) and, for a failure, the stderr tail and the evidence path. Writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import attrs

from specdojo_routine.app import listing, logs, recent
from specdojo_routine.app.listing import Listing, RoutineRow, StateProblem
from specdojo_routine.core import health
from specdojo_routine.core.attempts import ActionRecord, Attempt
from specdojo_routine.core.errors import EXIT_FAILURE, EXIT_OK, RoutineError
from specdojo_routine.core.model import Routine
from specdojo_routine.core.preview import Upcoming, routine_upcoming
from specdojo_routine.execute import evidence
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions

NEXT_COUNT = 3
ATTEMPT_COUNT = 5


@attrs.frozen(kw_only=True, repr=False)
class Detail:
    """One routine's block."""

    row: RoutineRow
    routine: Routine
    upcoming: list[Upcoming]
    attempts: list[Attempt]  # oldest first
    failed_action: ActionRecord | None  # of the last attempt, when it did not succeed
    stderr_tail: list[str]
    owner: dict[str, Any] | None  # who runs the open attempt
    #: when ``prune`` removed the failed action's evidence (SPEC §15), else None
    evidence_pruned: str | None = None


@attrs.frozen(kw_only=True, repr=False)
class Status:
    listing: Listing
    details: list[Detail]

    @property
    def rows(self) -> list[RoutineRow]:
        """Every routine, the unhealthy ones first, each group worst state first (then by
        id): a paused routine whose last attempt failed is among the unhealthy."""
        return sorted(self.listing.rows,
                      key=lambda r: (not r.problems, health.rank(r.state), r.id))

    @property
    def unhealthy(self) -> list[RoutineRow]:
        """The unhealthy routines among those shown: every routine, or the ones asked for."""
        if not self.details:
            return self.listing.unhealthy
        return [d.row for d in self.details if d.row.problems]

    @property
    def state_problems(self) -> list[StateProblem]:
        """What is wrong with the routine state of the routines shown, or of the project (a
        conflict refuses every run)."""
        return self.listing.state_problems_of({d.row.id for d in self.details})

    @property
    def exit_code(self) -> int:
        """The health rule of ``list`` (:attr:`Listing.exit_code`) applied to the routines
        shown: 1 when one is unhealthy or its state has a problem (or, in the overview, a
        definition is invalid)."""
        if not self.details:
            return self.listing.exit_code
        return EXIT_FAILURE if self.unhealthy or self.state_problems else EXIT_OK


def status(
    paths: ProjectPaths, routine_ids: Sequence[str] = (), *, now: datetime | None = None,
    clock: Callable[[], datetime] | None = None,
) -> Status:
    """The overview, and a block for each of ``routine_ids`` (an unknown id: exit 2)."""
    for rid in routine_ids:
        recent.check_routine_id(paths, rid, see="status")
    shown = listing.list_routines(paths, now=now, clock=clock)
    if not routine_ids:
        return Status(listing=shown, details=[])
    defs = definitions.load_definitions(paths)
    rows = {row.id: row for row in shown.rows}
    details = []
    for rid in routine_ids:
        routine = defs.routine(rid)
        if routine is None or rid not in rows:
            raise RoutineError(f"routine {rid} is invalid or no longer defined; run `validate`"
                               f" (its history: `history {rid} --attempts`)")
        details.append(_detail(paths, routine, rows[rid], shown.now))
    return Status(listing=shown, details=details)


def _detail(paths: ProjectPaths, routine: Routine, row: listing.RoutineRow,
            now: datetime) -> Detail:
    from specdojo_routine.store.ledger import adopt

    entry = adopt.plan_routine_imports(paths).view.get(routine.id)
    upcoming = (routine_upcoming(routine, dict(entry), now=now, count=NEXT_COUNT)
                if routine.enabled else [])
    attempts = recent.recent_attempts(paths, routine.id, limit=ATTEMPT_COUNT)
    last = attempts[-1] if attempts else None
    failed = last.failed_action() if last is not None and last.result != "success" else None
    tail = evidence.stderr_tail(paths.root, failed.evidence_ref, paths.evidence_dir) \
        if failed else []
    pruned = logs.pruned_at(paths, failed.evidence_ref, routine_id=routine.id,
                            attempt_id=last.attempt_id if last else None,
                            job_run_id=failed.job_run_id) \
        if failed is not None and failed.evidence_ref and not tail else None
    opened = entry.get("open_attempt")
    return Detail(row=row, routine=routine, upcoming=upcoming, attempts=attempts,
                  failed_action=failed, stderr_tail=tail,
                  owner=dict(opened["owner"]) if opened else None, evidence_pruned=pruned)
