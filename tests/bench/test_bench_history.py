"""Benchmark of ``history --limit 1`` on a 1,000,000-event routine ledger (SPEC §14, §15).

Run: ``python -m pytest tests/bench/test_bench_history.py -o addopts= -s -q``

1. the handler in this process: under 0.2 s (absolute, the issue's figure; it reads the last
   line, not the million before it);
2. the CLI in a subprocess: at most 1.5x the same command on a one-event ledger, measured
   interleaved in the same run (what remains is the interpreter's start-up, not the ledger).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from specdojo_routine.app import recent
from specdojo_routine.store.config import resolve_project
from tests.ledgergen import write_ledger
from tests.weekhistory import write_project

EVENTS = 1_000_000


def _best(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    week = write_project(tmp_path_factory.mktemp("big") / "proj")
    started = time.perf_counter()
    write_ledger(week.ledger, EVENTS, [f"rtn-bench-{i:03d}" for i in range(50)])
    print(f"\nwrote {EVENTS:,} events ({week.ledger.stat().st_size / 1e6:.0f} MB) in "
          f"{time.perf_counter() - started:.1f} s")
    return week.root


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    week = write_project(tmp_path_factory.mktemp("small") / "proj")
    write_ledger(week.ledger, 1, ["rtn-bench-000"])
    return week.root


def test_bench_history_limit_1_in_process(big: Path) -> None:
    """The handler answers from the end: well under 0.2 s on a million events."""
    paths = resolve_project(big)
    took = _best(lambda: recent.recent_events(paths, limit=1), 5)
    print(f"\nhistory --limit 1 (handler) on {EVENTS:,} events: {took * 1000:.1f} ms")
    assert took < 0.2


def test_bench_history_limit_1_cli(big: Path, small: Path) -> None:
    """The CLI on a million events costs at most 1.5x the CLI on one event."""

    def cli(root: Path) -> Callable[[], object]:
        argv = [sys.executable, "-m", "specdojo_routine", "history", "--limit", "1", "--root",
                str(root)]
        return lambda: subprocess.run(argv, check=True, capture_output=True)

    big_times, small_times = [], []
    for _ in range(5):
        big_times.append(_best(cli(big), 1))
        small_times.append(_best(cli(small), 1))
    ratio = min(big_times) / min(small_times)
    print(f"\nhistory --limit 1 (CLI): {min(big_times) * 1000:.0f} ms on {EVENTS:,} events, "
          f"{min(small_times) * 1000:.0f} ms on one: {ratio:.2f}x")
    assert min(big_times) < 0.2 or ratio <= 1.5
