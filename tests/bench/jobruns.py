"""A project whose routine's Job action ran once every five minutes, for real.

Used by ``test_bench_job_runs.py``; run as a script it grows one project and prints what
one routine attempt with a Job action costs as the Job's runs accumulate, profiling the
attempts at chosen counts (``python tests/bench/jobruns.py DIR RUNS [PROFILE_AT ...]``).

Every call is :func:`specdojo_routine.api.run_due` with ``now`` five minutes after the
previous one, so each records one routine attempt and one new Job Run (``/bin/sh -c true``),
with its ledger, view, plan, result and evidence, exactly as ``run --due`` does.
"""

from __future__ import annotations

import cProfile
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from specdojo_routine import api
from specdojo_routine.store.config import ProjectPaths
from tests.bench import yearhistory

START = datetime(2026, 1, 1, tzinfo=UTC)
ROUTINE = ('id: rtn-tick\ntrigger: {cron: "*/5 * * * *", timezone: UTC}\n'
           "action: {kind: job, job: job-tick}\n")


def make_project(root: Path) -> ProjectPaths:
    """The skeleton of :mod:`.yearhistory` with a five-minute routine."""
    paths = yearhistory.write_project(root)
    (root / "routines" / "rtn-tick.yaml").write_text(ROUTINE)
    return paths


def attempt(paths: ProjectPaths, n: int) -> float:
    """Run the ``n``-th occurrence (0-based) and return its wall time in seconds."""
    now = START + timedelta(minutes=5 * n, seconds=5)
    started = time.perf_counter()
    report = api.run_due(paths, now=now, env={"PATH": "/usr/bin:/bin"})
    took = time.perf_counter() - started
    assert not report.errors and len(report.results) == 1, (report.errors, report.results)
    return took


def runs_of(paths: ProjectPaths) -> int:
    return sum(1 for _ in paths.runs_dir.glob("*.jsonl")) if paths.runs_dir.exists() else 0


def grow(paths: ProjectPaths, runs: int, *, fast: bool = True) -> None:
    """Add attempts until the Job has ``runs`` runs (``fast``: without fsync, which changes
    no byte written)."""
    done = runs_of(paths)
    if fast:
        with yearhistory.no_fsync():
            for n in range(done, runs):
                attempt(paths, n)
    else:
        for n in range(done, runs):
            attempt(paths, n)


if __name__ == "__main__":
    root, target = Path(sys.argv[1]), int(sys.argv[2])
    marks = sorted(int(a) for a in sys.argv[3:])
    paths = make_project(root) if not (root / "routines").exists() else \
        yearhistory.resolve_project(root, env={})
    for mark in [*marks, target]:
        grow(paths, mark)
        n = runs_of(paths)
        if mark in marks:
            times = [attempt(paths, n + k) for k in range(3)]
            prof = cProfile.Profile()
            prof.enable()
            attempt(paths, n + 3)
            prof.disable()
            prof.dump_stats(str(root.parent / f"prof-{mark}.out"))
            print(f"{mark} runs: best of 3 {min(times) * 1000:.0f} ms", flush=True)
