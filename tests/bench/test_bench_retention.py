"""Living for years (SPEC §15): what a command costs on a long history, and what retention saves.

Run: ``python -m pytest tests/bench/test_bench_retention.py -o addopts= -o faulthandler_timeout=0
-s -q`` (it runs for minutes: see docs/performance.md on the stack dump it turns off)

The long history is made by the product's own run handler (:mod:`tests.bench.yearhistory`:
one routine a minute, four events an attempt). A year (525,600 minutes, about 2.1 million
events) takes tens of minutes to make on a loaded 2-core machine, so the default is 30 days;
``RETENTION_BENCH_MINUTES=525600`` asks for the year, and ``RETENTION_BENCH_DIR`` names a
directory where it is made once and reused (``python tests/bench/yearhistory.py DIR
MINUTES`` makes it ahead). The benchmark works on a copy of it on disk, which is also the
copied project whose views must be re-proven once.

1. ``run --due`` with nothing due, ``list``, ``status`` (the overview, and ``status rtn-tick``,
   whose last attempts are read from the end of the ledger) and ``next`` on the long history vs
   on one day of it, once the views are proven: each within 2x (asserted), in-process (best of
   several, interleaved) and as whole CLI processes.
2. The one-time cost after a copy (new inodes: the routine view is proven from scratch once).
3. A Job action with 300 Job Runs of its Job: files opened and time, with the stamp snapshot
   and without it (deleted before each action: the full check every action used to make).
4. What ``retention.auto`` adds to a ``run --due`` when nothing has aged out (300+ runs);
   and on the long history with routine evidence kept, what reading the routine ledger
   forward costs: once (within the 1 s budget a call, over several calls), then per call.
5. Disk use per year per routine frequency, with and without retention, from 50 real Job Runs
   (``run_job``, a one-line command) and the routine ledger's bytes per attempt; and the time
   ``prune`` takes per run.
"""

from __future__ import annotations

import builtins
import io
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from specdojo_routine.app import handlers, jobs, listing, preview, prune, prune_facts, status
from specdojo_routine.core import jobplan
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.ledger import runcheck, views
from tests import jobhelper
from tests.bench import yearhistory
from tests.conftest import Project, period_job

DAY = 1440
LONG = int(os.environ.get("RETENTION_BENCH_MINUTES", str(30 * DAY)))
ROUNDS = 7


def best_of(fn: Callable[[], object], rounds: int = ROUNDS) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def interleaved(a: Callable[[], object], b: Callable[[], object],
                rounds: int = ROUNDS) -> tuple[float, float]:
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(best_of(a, 1))
        tb.append(best_of(b, 1))
    return min(ta), min(tb)


def _copy(source: Path, dest: Path) -> ProjectPaths:
    shutil.copytree(source, dest)
    return jobhelper.paths_of(dest)


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One day and the long history, each copied onto the test's disk."""
    made = Path(os.environ["RETENTION_BENCH_DIR"]) if "RETENTION_BENCH_DIR" in os.environ \
        else tmp_path_factory.mktemp("long-made") / "p"
    started = time.perf_counter()
    yearhistory.make_history(made, LONG)
    built = time.perf_counter() - started
    day_made = tmp_path_factory.mktemp("day-made") / "p"
    yearhistory.make_history(day_made, DAY)
    work = tmp_path_factory.mktemp("work")
    long_paths, day_paths = _copy(made, work / "long"), _copy(day_made, work / "day")
    events = sum(1 for _ in long_paths.routine_ledger.open("rb"))
    print(f"\nlong history: {LONG:,} minutes ({LONG / DAY:.0f} days), {events:,} events, "
          f"{long_paths.routine_ledger.stat().st_size / 1e6:.0f} MB routine ledger "
          f"(made or reused in {built:.0f} s)")
    return {"long": long_paths, "day": day_paths, "minutes": {"long": LONG, "day": DAY}}


def _quiet_now(minutes: int) -> datetime:
    """30 s into the minute of the last attempt: nothing is due."""
    return yearhistory.last_minute(minutes) + timedelta(seconds=30)


def _commands(paths: ProjectPaths, minutes: int) -> dict[str, Callable[[], object]]:
    now = _quiet_now(minutes)

    def run_due() -> None:
        report = handlers.run(paths, now=now, clock=lambda: now, env={},
                              job_runner=yearhistory.answered_job)
        assert (report.results, report.errors) == ([], [])

    return {
        "run --due (nothing due)": run_due,
        "list": lambda: listing.list_routines(paths, now=now, clock=lambda: now),
        "status": lambda: status.status(paths, now=now, clock=lambda: now),
        "status rtn-tick": lambda: status.status(paths, ["rtn-tick"], now=now,
                                                 clock=lambda: now),
        "next rtn-tick": lambda: preview.preview_routine(paths, "rtn-tick", now=now),
    }


def test_bench_commands_on_a_long_history(histories: dict[str, Any]) -> None:
    """After the one-time re-proof of a copy, each command on the long history is within 2x
    of the same command on one day of history."""
    long_p, day_p = histories["long"], histories["day"]
    first = {}
    for name, paths in (("long", long_p), ("day", day_p)):
        run_due = _commands(paths, histories["minutes"][name])["run --due (nothing due)"]
        first[name] = best_of(run_due, 1)  # the copy's views are proven from scratch here
    print(f"\none-time cost after a copy (first run --due re-proves the view): long "
          f"{first['long']:.2f} s, one day {first['day'] * 1000:.0f} ms")
    long_cmds = _commands(long_p, histories["minutes"]["long"])
    day_cmds = _commands(day_p, histories["minutes"]["day"])
    ratios = {}
    print("in-process, best of 7 interleaved:")
    for name in long_cmds:
        t_long, t_day = interleaved(long_cmds[name], day_cmds[name])
        ratios[name] = t_long / t_day
        print(f"  {name:<26} long {t_long * 1000:7.1f} ms   one day {t_day * 1000:7.1f} ms   "
              f"ratio {ratios[name]:.2f}x")
    assert all(r <= 2.0 for r in ratios.values()), ratios


def _cli(paths: ProjectPaths, minutes: int) -> dict[str, list[str]]:
    now = _quiet_now(minutes).isoformat()
    base = [sys.executable, "-m", "specdojo_routine"]
    root = ["--root", str(paths.root)]
    return {"run --due (nothing due)": [*base, "run", "--due", "--now", now, *root],
            "list": [*base, "list", "--now", now, *root],
            "status": [*base, "status", "--now", now, *root],
            "status rtn-tick": [*base, "status", "rtn-tick", "--now", now, *root],
            "next rtn-tick": [*base, "next", "rtn-tick", "--now", now, *root]}


def test_bench_cli_on_a_long_history(histories: dict[str, Any]) -> None:
    """The same commands as whole processes (what cron pays), long history vs one day."""
    long_p, day_p = histories["long"], histories["day"]
    for paths, name in ((long_p, "long"), (day_p, "day")):
        _commands(paths, histories["minutes"][name])["run --due (nothing due)"]()
    long_cli = _cli(long_p, histories["minutes"]["long"])
    day_cli = _cli(day_p, histories["minutes"]["day"])
    env = dict(os.environ, SPECDOJO_CLI="true")
    ratios = {}
    print("\nCLI processes, best of 5 interleaved:")
    for name in long_cli:
        def call(argv: list[str]) -> Callable[[], object]:
            return lambda: subprocess.run(argv, env=env, capture_output=True, check=False)

        t_long, t_day = interleaved(call(long_cli[name]), call(day_cli[name]), 5)
        ratios[name] = t_long / t_day
        print(f"  {name:<26} long {t_long * 1000:7.0f} ms   one day {t_day * 1000:7.0f} ms   "
              f"ratio {ratios[name]:.2f}x")
    assert all(r <= 2.0 for r in ratios.values()), ratios


# --- a Job action among many runs --------------------------------------------------------------

RUNS = 300


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("many") / "p"
    Project(root).job("job-n", period_job("n", "'true'"))
    for n in range(RUNS):
        jobhelper.run(root, "job-n", {"period": f"p{n:03d}"})
    return root


@pytest.fixture
def opened() -> Iterator[list[str]]:
    names: list[str] = []
    saved = builtins.open, io.open, os.open

    def spy(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(file: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(file, str | os.PathLike) and "/jobs/runs/" in os.fspath(file):
                names.append(os.fspath(file))
            return real(file, *args, **kwargs)
        return call

    builtins.open, io.open, os.open = spy(saved[0]), spy(saved[1]), spy(saved[2])
    try:
        yield names
    finally:
        builtins.open, io.open, os.open = saved


def test_bench_a_job_action_with_300_runs(many_runs: Path, opened: list[str]) -> None:
    """Files under jobs/runs/ opened by one Job action, and its time, with the snapshot of
    stamps and without it (deleted first: every run read, as before)."""
    paths = jobhelper.paths_of(many_runs)
    defs = definitions.load_jobs(paths)
    counter = [RUNS]

    def action(drop: bool) -> Callable[[], object]:
        def go() -> None:
            if drop:
                runcheck.snapshot_path(paths, "job-n").unlink(missing_ok=True)
            counter[0] += 1
            jobs.run_job(paths, defs, "job-n", {"period": f"p{counter[0]:03d}"},
                         scheduled_at=jobhelper.SCHEDULED, env=jobhelper.clean_env())
        return go

    action(False)()  # proves every run once and writes the snapshot
    counts, runs = {}, {}
    for drop in (False, True):
        opened.clear()
        action(drop)()
        reads = [n for n in opened if not Path(n).name.startswith(".")]  # not temp files
        counts[drop], runs[drop] = len(reads), len({Path(n).name.split(".")[0] for n in reads})
    with_snapshot, without = interleaved(action(False), action(True), 5)
    print(f"\none Job action among {RUNS}+ runs of its Job: opens under jobs/runs/ "
          f"{counts[False]} ({runs[False]} runs) with the snapshot, {counts[True]} "
          f"({runs[True]} runs) without; time {with_snapshot * 1000:.0f} ms vs "
          f"{without * 1000:.0f} ms")
    assert runs[False] == 2 and runs[True] > RUNS


# --- disk per year -----------------------------------------------------------------------------

SAMPLE = 50
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _usage(files: list[Path]) -> tuple[int, int, int]:
    """(files, bytes, bytes allocated on disk) of every regular file at or under ``files``."""
    count = size = blocks = 0
    for top in files:
        for path in [top] if top.is_file() else [p for p in top.rglob("*") if p.is_file()]:
            st = path.stat()
            count, size, blocks = count + 1, size + st.st_size, blocks + st.st_blocks * 512
    return count, size, blocks


def test_bench_disk_per_year_and_prune_time(tmp_path: Path, histories: dict[str, Any]) -> None:
    """Bytes a routine's Job Runs leave per year at several frequencies, with and without
    retention (defaults: 90 days, 50 runs), from SAMPLE real runs; and prune's time per run."""
    root = tmp_path / "p"
    Project(root).job("job-n", period_job("n", "'echo tick'"))
    paths = jobhelper.paths_of(root)
    defs = definitions.load_jobs(paths)
    for n in range(SAMPLE):
        at = T0 + timedelta(minutes=n)
        jobs.run_job(paths, defs, "job-n", {"period": f"p{n}"}, scheduled_at=at,
                     env=jobhelper.clean_env(), clock=lambda at=at: at)
    ids = [jobplan.run_id_for("job-n", f"job-n:p{n}") for n in range(SAMPLE)]
    stay = _usage([p for r in ids for p in (paths.run_ledger(r), paths.run_view(r))])
    from specdojo_routine.execute import prunefiles

    goes = _usage([p for r in ids for p in prunefiles.run_files(paths, r, {})])
    long_p = histories["long"]
    per_attempt = long_p.routine_ledger.stat().st_size / histories["minutes"]["long"]
    print(f"\nper Job Run: {stay[0] / SAMPLE:.0f} files / {stay[1] / SAMPLE:.0f} B that stay "
          f"(ledger, view), {goes[0] / SAMPLE:.0f} files / {goes[1] / SAMPLE:.0f} B "
          f"({goes[2] / SAMPLE:.0f} B on disk) that prune removes; routine ledger "
          f"{per_attempt:.0f} B per attempt")
    print(f"{'every':<8}{'runs/year':>10}{'files, no retention':>22}{'disk, no retention':>20}"
          f"{'files, retention':>18}{'disk, retention':>17}")
    for label, minutes in (("1 min", 1), ("5 min", 5), ("1 hour", 60), ("1 day", 1440)):
        runs = 525_600 // minutes
        kept = min(runs, max(50, 90 * 1440 // minutes))
        disk_stay = runs * (stay[2] / SAMPLE + per_attempt)
        disk_all = disk_stay + runs * goes[2] / SAMPLE
        disk_kept = disk_stay + kept * goes[2] / SAMPLE
        files_all = runs * (stay[0] + goes[0]) / SAMPLE
        files_kept = runs * stay[0] / SAMPLE + kept * goes[0] / SAMPLE
        print(f"{label:<8}{runs:>10,}{files_all:>22,.0f}{disk_all / 1e9:>18.2f} GB"
              f"{files_kept:>18,.0f}{disk_kept / 1e9:>15.2f} GB")
    started = time.perf_counter()
    report = prune.prune(paths, keep_days=0, keep_runs=0, now=T0 + timedelta(days=1), env={})
    took = time.perf_counter() - started
    assert SAMPLE == len(report.removed)
    print(f"prune of {len(report.removed)} runs: {took:.2f} s "
          f"({took / len(report.removed) * 1000:.1f} ms a run; a year of 5-minute runs, "
          f"the first time: about {took / len(report.removed) * 105_120 / 60:.0f} min)")


def test_bench_auto_prune_with_nothing_to_prune(many_runs: Path) -> None:
    """What ``retention.auto`` adds to a ``run --due`` when nothing has aged out, with 300+ Job
    Runs that still have files: the first call reads every run, later ones only stat them (the
    facts are cached by their files' stamps)."""
    paths = jobhelper.paths_of(many_runs)
    view = views.load_routine_view(paths)
    now = datetime.now(UTC)

    def auto() -> None:
        report = prune.prune_during_run(paths, view, now=now, clock=lambda: now, env={})
        assert (report.complete, report.removed) == (True, [])

    prune_facts.cache_path(paths).unlink(missing_ok=True)
    first = best_of(auto, 1)
    again = best_of(auto)
    runs = len(list(paths.runs_dir.glob("*.jsonl")))
    gather = best_of(lambda: prune_facts.gather(paths, late=lambda: False, write=True,
                                                recent_after=now - timedelta(90)))
    print(f"\nretention.auto with nothing to prune, {runs} runs with files: first call "
          f"{first * 1000:.0f} ms (reads every run), then {again * 1000:.1f} ms (cached; the "
          f"facts alone {gather / runs * 1e6:.1f} us a run kept, the rest is the exec lock)")


def test_bench_auto_prune_reads_the_routine_ledger_forward(histories: dict[str, Any],
                                                           tmp_path: Path) -> None:
    """Routine evidence kept for the newest attempts of the long history: an attempt's facts
    come from the routine ledger, read once (each ``run --due`` call within its budget, on
    from where the last stopped), then only what was appended since: nothing, when nothing
    was. A copy of the project goes on from the copied position."""
    paths = _copy(histories["long"].root, tmp_path / "p")
    ids = _newest_attempts(paths, 300)
    for attempt_id in ids:
        folder = paths.evidence_dir / "routines" / attempt_id / "action-1"
        folder.mkdir(parents=True)
        (folder / "command.stdout.log").write_text("out\n")
    view = views.load_routine_view(paths)
    now = _quiet_now(histories["minutes"]["long"])

    def auto() -> prune.PruneReport:
        return prune.prune_during_run(paths, view, now=now, clock=lambda: now, env={})

    prune_facts.cache_path(paths).unlink(missing_ok=True)
    started, calls = time.perf_counter(), 1
    while not auto().complete:
        calls += 1
    first = time.perf_counter() - started
    again = best_of(auto)
    mb = paths.routine_ledger.stat().st_size / 1e6
    print(f"\nretention.auto, {len(ids)} attempts with evidence, {mb:.0f} MB routine ledger: "
          f"read once in {first:.2f} s over {calls} call(s) of at most "
          f"{prune.AUTO_BUDGET_S:.0f} s; then {again * 1000:.1f} ms a call")
    assert again < prune.AUTO_BUDGET_S / 10


def _newest_attempts(paths: ProjectPaths, count: int) -> list[str]:
    """The ids of the newest ``count`` attempts, from the end of the routine ledger."""
    from specdojo_routine.store.ledger import backwards

    found: list[str] = []
    for _text, event in backwards.read_backwards(paths.routine_ledger):
        if event.get("type") == "attempt_started":
            found.append(str(event["attempt_id"]))
            if len(found) == count:
                break
    return found
