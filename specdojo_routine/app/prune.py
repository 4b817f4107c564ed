"""``prune``: retention with a record (SPEC §15).

The ledgers are never rewritten; what ``prune`` removes are the files around ended Job Runs
(evidence, plan and result documents, kept review worktrees) and the action evidence of ended
routine attempts, by the rule of :mod:`specdojo_routine.core.retention`. For each owner it
takes away:

1. the record first: ``evidence_pruned`` {``run_id``, ``paths``, ``bytes``} appended (and
   fsync'd) to the run's ledger, or {``routine_id``, ``attempt_id``, …} to the routine ledger;
2. then the run's view is published again (it still names what existed, and says it was
   pruned), so no reader finds files half removed that the view does not say are going;
3. then the files.

A crash between the two leaves the files and a record saying they were to go: the next prune
finishes the removal and records nothing new (a run's fold knows the recorded paths; the
routine ledger, read forward by :mod:`.prune_ledger`, holds an attempt's record). An
attempt's evidence is only ever pruned for an attempt that ledger records, started and ended.
Each owner's steps are one: a stop waits for them, and a file that fails keeps that owner for
now (reported, exit 1) while the others go on.

``prune`` holds the routine lock and the exec lock, as every recording command that touches
both ledgers does, and imports another tool's files first (SPEC §10). ``run --due`` prunes as
it goes under ``retention.auto`` (:func:`prune_during_run`), within a time budget: it stops at
the deadline and the rest is pruned next time. That includes a ``git worktree remove`` still
running then: it is stopped, and the worktree it was removing (recorded already) is finished
by the next prune. ``prune`` itself, which an operator runs and waits for, gives each git call
a bound of its own (a big worktree may take a while; a hung git must not hold the locks).
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import attrs
import orjson

from specdojo_routine.app import prune_facts
from specdojo_routine.app.prune_facts import Facts
from specdojo_routine.core import fold_table, jobfold, retention
from specdojo_routine.core.errors import LedgerError
from specdojo_routine.core.job_events import EvidencePruned
from specdojo_routine.core.retention import Retention
from specdojo_routine.core.routine_events import RoutineEvidencePruned
from specdojo_routine.core.timefmt import format_s, to_utc, try_parse_instant
from specdojo_routine.execute import prunefiles, stop
from specdojo_routine.store import fsfacts
from specdojo_routine.store.config import ProjectPaths, read_regular
from specdojo_routine.store.ledger import adopt, views
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.locks import execlock
from specdojo_routine.store.locks import routine as locks

ACTOR = "specdojo_routine prune"
AUTO_BUDGET_S = 1.0  # run --due with retention.auto: at most this long a call
Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


@attrs.frozen(kw_only=True)
class Removal:
    """What went (or, in a dry run, would go) for one owner."""

    kind: Literal["run", "attempt"]
    owner: str  # run id or attempt id
    group: str  # Job id or routine id
    paths: tuple[str, ...]  # root-relative
    bytes: int
    finishing: bool  # the record was appended by an earlier prune that did not finish

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self) | {"paths": list(self.paths)}


@attrs.define(kw_only=True)
class PruneReport:
    dry_run: bool
    keep_days: int
    keep_runs: int
    now: datetime
    removed: list[Removal] = attrs.field(factory=list)
    skipped: list[str] = attrs.field(factory=list)  # kept for now, and why
    failed: list[str] = attrs.field(factory=list)  # kept for now: a file failed (what to do)
    complete: bool = True  # False: the deadline came first; the rest goes next time

    @property
    def bytes(self) -> int:
        return sum(r.bytes for r in self.removed)

    def summary(self) -> str:
        runs = sum(r.kind == "run" for r in self.removed)
        attempts = len(self.removed) - runs
        verb = "would prune" if self.dry_run else "pruned"
        text = (f"{verb} {runs} Job Run(s) and {attempts} routine attempt(s), "
                f"{_size(self.bytes)} (kept: ended within {self.keep_days} day(s), "
                f"or among the newest {self.keep_runs} of each Job and routine)")
        return text + ("" if self.complete else "; stopped at the time limit, the rest next time")

    def to_json(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "keep_days": self.keep_days,
                "keep_runs": self.keep_runs, "now": format_s(self.now),
                "removed": [r.to_json() for r in self.removed], "bytes": self.bytes,
                "skipped": self.skipped, "failed": self.failed, "complete": self.complete}


def _size(count: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


@attrs.frozen(kw_only=True, repr=False)
class _Ctx:
    paths: ProjectPaths
    policy: Retention
    now: datetime
    clock: Clock
    env: Mapping[str, str]
    late: Callable[[], bool]
    report: PruneReport
    budgeted: bool = False  # run --due's time budget: trust recent cached facts
    deadline: float | None = None  # run --due's, on time.monotonic(): git waited for no longer


def prune(
    paths: ProjectPaths, *, keep_days: int | None = None, keep_runs: int | None = None,
    dry_run: bool = False, now: datetime | None = None, clock: Clock | None = None,
    env: Mapping[str, str] | None = None,
) -> PruneReport:
    """``prune [--keep-days D] [--keep-runs N] [--dry-run]``; the config's ``retention``
    gives what is not given. A dry run takes no lock and writes nothing."""
    wall = clock or _utc_now
    base = paths.retention
    policy = Retention(keep_days=base.keep_days if keep_days is None else keep_days,
                       keep_runs=base.keep_runs if keep_runs is None else keep_runs)
    the_now = to_utc(now) if now is not None else to_utc(wall())
    ctx = _Ctx(paths=paths, policy=policy, now=the_now, clock=wall,
               env=dict(os.environ if env is None else env), late=lambda: False,
               report=PruneReport(dry_run=dry_run, keep_days=policy.keep_days,
                                  keep_runs=policy.keep_runs, now=the_now))
    if dry_run:
        _prune(ctx, _Open.of(views.load_routine_view(paths)), exec_held=True)
        return ctx.report
    with locks.routine_lock(paths.routine_locks_dir, clock=wall, project=paths.project_id,
                            env=ctx.env):
        plan = adopt.import_routine_state(paths, wall)  # import first, under the lock (SPEC §10)
        opened = _Open.of(views.refresh_routine_view(paths, plan.proof))
        with _exec_lock(paths, ctx.env, required=True) as held:
            _prune(ctx, opened, exec_held=held)
    return ctx.report


def prune_during_run(
    paths: ProjectPaths, view: views.RoutineView, *, now: datetime, clock: Clock,
    env: Mapping[str, str], budget_s: float = AUTO_BUDGET_S,
) -> PruneReport:
    """``run --due`` under ``retention.auto``: the caller holds the routine lock; the exec lock
    is taken if free (else only routine evidence is pruned this time); at most ``budget_s``."""
    deadline = time.monotonic() + budget_s
    policy = paths.retention
    ctx = _Ctx(paths=paths, policy=policy, now=to_utc(now), clock=clock, env=env,
               late=lambda: time.monotonic() >= deadline, budgeted=True, deadline=deadline,
               report=PruneReport(dry_run=False, keep_days=policy.keep_days,
                                  keep_runs=policy.keep_runs, now=to_utc(now)))
    with _exec_lock(paths, env, required=False) as held:
        _prune(ctx, _Open.of(view), exec_held=held)
    return ctx.report


@contextlib.contextmanager
def _exec_lock(paths: ProjectPaths, env: Mapping[str, str], *, required: bool) -> Iterator[bool]:
    """The exec lock when there are Job Runs (busy: :class:`ExecLockBusy`, exit 75, unless
    not ``required``: then False and Job Runs are left for next time)."""
    if not paths.runs_dir.is_dir():
        yield True
        return
    try:
        lock = execlock.exec_lock(paths.exec_locks_dir, actor=ACTOR, env=env)
        lock.__enter__()
    except execlock.ExecLockBusy:
        if required:
            raise
        yield False
        return
    with contextlib.ExitStack() as stack:
        stack.push(lock)
        yield True


@attrs.frozen(kw_only=True, repr=False)
class _Open:
    """The routine attempts open now (running, or interrupted and waiting for ``resolve``)
    and the Job Runs their actions started: the review of an interrupted attempt reads them,
    so none of their files is pruned, whatever the runs' own state."""

    attempts: frozenset[str]
    runs: frozenset[str]
    routines: frozenset[str]  # those whose fold takes an evidence_pruned in their state now

    @classmethod
    def of(cls, view: views.RoutineView) -> _Open:
        found = [opened for e in view.routines.values()
                 if (opened := e.get("open_attempt")) is not None]
        return cls(attempts=frozenset(str(opened["attempt_id"]) for opened in found),
                   runs=frozenset(str(action["job_run_id"]) for opened in found
                                  for action in opened.get("actions") or ()
                                  if action.get("job_run_id")),
                   routines=frozenset(routine_id for routine_id, e in view.routines.items()
                                      if e.get("status") in _PRUNED_IN))


#: The routine states the fold takes an ``evidence_pruned`` in (not ``never``: no attempt yet)
_PRUNED_IN = frozenset(t.source for t in fold_table.TRANSITIONS if t.event == "evidence_pruned")


def _prune(ctx: _Ctx, opened: _Open, *, exec_held: bool) -> None:
    paths, report = ctx.paths, ctx.report
    if not paths.execution_dir.is_dir():
        return
    recent = retention.cutoff(ctx.now, ctx.policy.keep_days) if ctx.budgeted else None
    facts = prune_facts.gather(paths, late=ctx.late, write=not report.dry_run,
                               recent_after=recent)
    report.failed.extend(f"{owner}: {why}" for owner, why in sorted(facts.failed.items()))
    if not facts.complete:
        report.complete = False
        return
    if exec_held:
        _prune_runs(ctx, facts, opened.runs)
    else:
        report.skipped.append("Job Runs: the exec lock is held by another process")
    _prune_attempts(ctx, facts, opened)


def _whole(ctx: _Ctx, owner: str, step: Callable[[], object]) -> None:
    """One owner's record, view and removal as one step: a stop (SIGINT, SIGTERM) waits for
    its end, so no record is left without its view nor a temporary file behind. A file that
    cannot be read, written or removed (or a ledger that refuses) keeps this owner for now,
    said in the report with what to do, and the other owners go on: the record already
    appended lets the next prune finish it."""
    removed = len(ctx.report.removed)
    try:
        with stop.deferred():
            step()
    except (OSError, LedgerError) as exc:
        del ctx.report.removed[removed:]  # not pruned after all
        why = fsfacts.describe(exc) if isinstance(exc, OSError) else str(exc)
        ctx.report.failed.append(f"{owner}: {why}; its files are kept for now, the next "
                                 "prune tries again")


# --- Job Runs ------------------------------------------------------------------------------


def _protected(paths: ProjectPaths, facts: Facts) -> set[str]:
    """The runs a checkpoint names: ``job-state.json``'s, and per Job the run with the latest
    checkpoint among those that still have files."""
    protected: set[str] = set()
    doc = _json(paths.job_state)
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    for entry in (jobs or {}).values() if isinstance(jobs, dict) else ():
        if isinstance(entry, dict) and isinstance(entry.get("last_run_id"), str):
            protected.add(entry["last_run_id"])
    best: dict[str, tuple[datetime, str]] = {}
    for run_id, run in facts.runs.items():
        for job, updated in run.checkpoints:
            key = (try_parse_instant(updated) or datetime.min.replace(tzinfo=UTC), run_id)
            best[job] = max(best.get(job, key), key)
    return protected | {run_id for _, run_id in best.values()}


def _json(path: Path) -> Any:
    """The JSON document in the regular file ``path``, else None (a FIFO is not opened: it
    would wait for a writer for ever)."""
    try:
        return orjson.loads(read_regular(path))
    except (OSError, orjson.JSONDecodeError):  # NotRegularFile is an OSError
        return None


def _prune_runs(ctx: _Ctx, facts: Facts, started_by_open: frozenset[str]) -> None:
    policy = ctx.policy
    chosen = set(retention.prunable(
        [f.owner for f in facts.runs.values()], keep_days=policy.keep_days,
        keep_runs=policy.keep_runs, now=ctx.now,
        protected=_protected(ctx.paths, facts) | started_by_open))
    unfinished = {r for r, f in facts.runs.items() if f.pending}
    for run_id in sorted(chosen | unfinished):
        if ctx.late():
            ctx.report.complete = False
            return
        _whole(ctx, run_id, functools.partial(_prune_run, ctx, run_id,
                                              eligible=run_id in chosen))


def _prune_run(ctx: _Ctx, run_id: str, *, eligible: bool) -> None:
    """Record, remove, republish one run (or finish a removal recorded earlier)."""
    paths, report = ctx.paths, ctx.report
    plan = adopt.plan_run(paths, run_id)
    if run_id in plan.conflicts:
        report.skipped.append(f"{run_id}: {plan.conflicts[run_id]}")
        return
    if (plan.events or plan.unreadable) and not report.dry_run:
        # another tool's record is imported first, an unreadable view moved aside (SPEC §10
        # rule 8): the view is published again below, and must not replace it unseen
        adopt.apply_job_imports(paths, plan, ctx.clock)
        plan = adopt.plan_run(paths, run_id)
    fold, doc = plan.folds[run_id], plan.document(run_id)
    if doc is None:
        return
    pending = list(fold.prune_pending)
    files = _run_files(ctx, run_id, doc, pending, eligible=eligible)
    if not files:
        return
    fresh = [f for f in files if paths.rel(f) not in pending]
    size = prunefiles.size(files)
    if fresh and not report.dry_run:
        ledger.Ledger(paths.run_ledger(run_id), clock=ctx.clock).append(EvidencePruned(
            run_id=run_id, paths=[paths.rel(f) for f in fresh], bytes=prunefiles.size(fresh)))
    report.removed.append(Removal(kind="run", owner=run_id, group=doc["job_id"],
                                  paths=tuple(paths.rel(f) for f in files), bytes=size,
                                  finishing=not fresh))
    if report.dry_run:
        return
    # the view says what goes before anything goes: a reader of the file never finds a
    # folder half removed by a crash that its run's view does not list as pruned
    again = jobfold.run_document(views.fold_run(paths, run_id))
    if again is not None:
        views.publish(paths.run_view(run_id), views.render(again))
    for left in prunefiles.remove(paths, files, ctx.env, deadline=ctx.deadline):
        report.complete = False  # recorded: the next prune finishes what git had not
        report.skipped.append(f"{run_id}: {paths.rel(left)}: git had not removed the worktree "
                              "by the time limit, the rest next time")


def _run_files(
    ctx: _Ctx, run_id: str, doc: Mapping[str, Any], pending: list[str], *, eligible: bool,
) -> list[Path]:
    """The run's files to remove: all that exist once retention chose it and it ended before
    the cutoff, else those a removal recorded earlier still names (``pending``)."""
    ended = retention.run_owner(doc).ended_at  # as it is now, with another tool's record
    if eligible and ended is not None \
            and ended < retention.cutoff(ctx.now, ctx.policy.keep_days):
        return prunefiles.run_files(ctx.paths, run_id, ctx.env)
    return prunefiles.recorded_run_files(ctx.paths, run_id, pending)


# --- routine attempts ----------------------------------------------------------------------


def _prune_attempts(ctx: _Ctx, facts: Facts, opened: _Open) -> None:
    """Each attempt retention chose, or whose removal was begun or recorded, is pruned or
    finished; the routine view then covers what was appended, even when a step failed."""
    policy = ctx.policy
    owners = {a: prune_facts.attempt_owner(a, f, opened.attempts)
              for a, f in facts.attempts.items()}
    chosen = set(retention.prunable(owners.values(), keep_days=policy.keep_days,
                                    keep_runs=policy.keep_runs, now=ctx.now))
    begun = {a for a, f in facts.attempts.items()
             if f.routine_id is not None and (f.marked or f.pruned)}
    _say_unknown(ctx, facts, opened.attempts)
    appending = False
    try:
        for attempt_id in sorted(chosen | begun):
            if ctx.late():
                ctx.report.complete = False
                break
            of = facts.attempts[attempt_id]
            appending |= not of.pruned
            _whole(ctx, attempt_id, functools.partial(
                _prune_attempt, ctx, attempt_id, of, eligible=attempt_id in chosen,
                foldable=opened.routines))
    finally:
        if appending and not ctx.report.dry_run:
            views.refresh_routine_view(ctx.paths)  # the view covers the lines just appended


def _say_unknown(ctx: _Ctx, facts: Facts, open_attempts: frozenset[str]) -> None:
    """Report the evidence the routine ledger does not account for: kept, and why."""
    for attempt_id, of in sorted(facts.attempts.items()):
        if attempt_id in open_attempts:
            continue
        if of.routine_id is None:
            ctx.report.skipped.append(
                f"{attempt_id}: the routine ledger has no attempt_started for this attempt, "
                "so nothing says whose evidence it is or that it ended (if it should know "
                f"it, delete {ctx.paths.rel(prune_facts.cache_path(ctx.paths))} to have "
                "prune read the whole routine ledger again)")
        elif of.completed_at is None:
            ctx.report.skipped.append(f"{attempt_id}: the routine ledger records no end of "
                                      "this attempt (resolve it first)")


def _prune_attempt(
    ctx: _Ctx, attempt_id: str, facts: prune_facts.AttemptFacts, *, eligible: bool,
    foldable: frozenset[str],
) -> None:
    """Record, remove one attempt's evidence (or finish a removal recorded earlier: the
    routine ledger holds its ``evidence_pruned``). A record the routine fold would refuse
    (its routine unknown to the view, or never run) is not appended: the evidence stays."""
    paths, report, routine_id = ctx.paths, ctx.report, facts.routine_id or ""
    files = prunefiles.attempt_files(paths, attempt_id)
    recorded = facts.pruned
    if not files or not (recorded or eligible):
        if files and not report.dry_run:
            prunefiles.unmark_removal(paths, attempt_id)  # begun, never recorded: kept now
        return
    if not recorded and routine_id not in foldable:
        report.skipped.append(f"{attempt_id}: routine {routine_id!r} is not in the routine "
                              "view in a state that can record pruned evidence")
        return
    size = prunefiles.size(files)
    report.removed.append(Removal(kind="attempt", owner=attempt_id, group=routine_id,
                                  paths=tuple(paths.rel(f) for f in files), bytes=size,
                                  finishing=recorded))
    if report.dry_run:
        return
    if not recorded:
        tail = ledger.tail(paths.routine_ledger)
        prunefiles.mark_removal(paths, attempt_id, tail.end, tail.seq)
        ledger.Ledger(paths.routine_ledger, clock=ctx.clock).append(RoutineEvidencePruned(
            routine_id=routine_id, attempt_id=attempt_id,
            paths=[paths.rel(f) for f in files], bytes=size))
    prunefiles.remove(paths, files, ctx.env)
