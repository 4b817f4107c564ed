"""`run --due --dry-run` over 10,000 routines: the selection handler, end to end but for YAML.

Run: ``python -m pytest tests/bench/test_bench_selection.py -o addopts= -s -q``

Measures, in one run, ``run_select.plan_selection`` (fold state lookup, due engine, action
planning with rendered inputs and delegated argv) over 10,000 routines against a baseline loop
that only reads each routine's state and parses its timestamps. Target: under 1 s. Also reports
the cost per file of loading definitions from YAML (ruamel), which dominates a real dry run.
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from specdojo_routine.app import run_report, run_select
from specdojo_routine.core import model, timefmt
from specdojo_routine.core.fold import RoutineView
from specdojo_routine.store import config
from specdojo_routine.store.definitions import load as definitions

TZS = ("UTC", "Asia/Tokyo", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe")
CRONS = ("0 17 * * 5", "*/15 * * * *", "30 2 * * *", "0 9 * * 1-5", "0 0 1 * *")
NOW = datetime(2026, 8, 7, 8, 2, tzinfo=UTC)


def _routine(n: int, rng: random.Random) -> model.Routine:
    actions: tuple[model.Action, ...]
    if n % 3 == 0:
        actions = (model.JobAction(job="job-weekly-report",
                                   inputs={"period": "{{scheduled_at | iso_week}}"}),)
    else:
        actions = (model.ExecAutoAction(kind="exec-cycle", strategy="fifo", parallel=2),
                   model.RegisterAction(types=("todo",), limit=3))
    common = {"id": f"rtn-r{n}", "path": f"routines/rtn-r{n}.yaml", "digest": "0" * 64,
              "actions": actions, "is_list": len(actions) > 1}
    if n % 2:
        return model.Routine(interval=model.Interval(text="6h", seconds=6 * 3600), **common)
    policy = model.Policy(missed_run=rng.choice(list(model.MissedRun)))
    trigger = model.CronTrigger(cron=rng.choice(CRONS), timezone=rng.choice(TZS))
    return model.Routine(trigger=trigger, policy=policy, **common)


def _state(rng: random.Random) -> dict[str, object]:
    last = NOW - timedelta(minutes=rng.randint(1, 60))  # runs from cron every few minutes
    return {"status": "success", "last_run": timefmt.format_s(last),
            "last_scheduled_for": timefmt.format_ms(last.replace(second=0)),
            "last_result": "success"}


def test_bench_ten_thousand_routine_dry_run_selection(tmp_path: Path) -> None:
    """10,000 routines are selected and planned in under 1 s."""
    rng = random.Random(7)
    routines = [_routine(n, rng) for n in range(10_000)]
    states = {r.id: _state(rng) for r in routines}
    view = RoutineView(document={"version": 1, "ledger": {"seq": 0, "offset": 0},
                                 "routines": states})  # type: ignore[typeddict-item]
    paths = config.ProjectPaths(root=tmp_path, project_id="demo", routines_dir=tmp_path,
                                jobs_dir=tmp_path, execution_dir=tmp_path)

    t0 = time.perf_counter()
    for r in routines:
        state = view.routines.get(r.id) or {}
        timefmt.try_parse_instant(state.get("last_run"))
        timefmt.try_parse_instant(state.get("last_scheduled_for"))
    baseline = time.perf_counter() - t0

    report = run_report.RunReport(dry_run=True, prefix=["specdojo"])
    t0 = time.perf_counter()
    run_select.plan_selection(report, routines, view, NOW, None, paths, interrupted=False)
    elapsed = time.perf_counter() - t0
    print(f"\nselection of 10,000 routines: {elapsed * 1000:.0f} ms "
          f"({len(report.selected)} occurrences, {len(report.errors)} errors); "
          f"baseline {baseline * 1000:.1f} ms; ratio {elapsed / baseline:.1f}x")
    assert len(report.selected) > 1000
    assert elapsed < 1.0


def test_bench_definition_loading_cost(tmp_path: Path) -> None:
    """Reports the per-file cost of loading routine definitions (the rest of a dry run)."""
    root = tmp_path / "p"
    (root / ".specdojo").mkdir(parents=True)
    (root / ".specdojo" / "specdojo.config.json").write_text(
        '{"version":1,"projects":{"demo":{"routines_path":"r","jobs_path":"j",'
        '"execution_path":"e"}}}')
    (root / "r").mkdir()
    (root / "j").mkdir()
    count = 1000
    for n in range(count):
        (root / "r" / f"rtn-r{n}.yaml").write_text(
            f"id: rtn-r{n}\ntrigger: {{cron: \"0 17 * * 5\", timezone: Asia/Tokyo}}\n"
            "action: {kind: exec-cycle, strategy: fifo}\n")
    paths = config.resolve_project(root)
    t0 = time.perf_counter()
    defs = definitions.load_definitions(paths)
    elapsed = time.perf_counter() - t0
    assert count == len(defs.routines)
    print(f"\nloading {count} routine files: {elapsed * 1000:.0f} ms "
          f"({elapsed / count * 1e6:.0f} us per file)")
