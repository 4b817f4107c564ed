"""SPEC §10 rule 6 and the rulings it relies on: what the upstream CLI reads stays readable —
routine-state.json shows our run as running before we delegate, a busy exec lock leaves no
file behind, an explicit run of a cron routine moves its cursor with the span on record."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import Project, period_job

HELPER = Path(__file__).with_name("jobhelper.py")


def test_routine_state_shows_running_before_delegation(project: Project) -> None:
    """While the delegated call runs, routine-state.json already has the new last_run and
    status running (upstream writes last_run before it executes; seed 000 T-02)."""
    project.routine("rtn-slow", "interval: 1h\naction: {kind: specdojo, args: [sleep-2]}\n")
    proc = project.popen("run", "--due", "--now", "2026-12-01T07:00:00Z")
    deadline = time.monotonic() + 30
    while not project.calls():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    entry = project.state()["routines"]["rtn-slow"]
    assert ("running", "2026-12-01T07:00:00Z") == (entry["status"], entry["last_run"])
    assert 0 == proc.wait(timeout=60)
    assert "success" == project.state()["routines"]["rtn-slow"]["status"]


def test_a_busy_exec_lock_leaves_no_file_behind(project: Project) -> None:
    """Another live holder of the exec lock: the job run is skipped and nothing at all is
    written — no run ledger, no view, no take-over mutex file (SPEC §7.7)."""
    project.job("job-report", period_job("Report", "exit 0"))
    locks_dir = project.root / "execution" / "exec" / ".locks"
    holder = subprocess.Popen([sys.executable, str(HELPER), "hold-exec", str(locks_dir)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(HELPER.parent.parent)})
    try:
        assert holder.stdout is not None and holder.stdout.readline()
        before = project.files()
        proc = project.cli("job", "run", "--job", "job-report", "--input", "period=W1")
        assert 0 == proc.returncode, proc.stderr
        assert "busy" in proc.stdout + proc.stderr
        assert before == project.files()
    finally:
        holder.communicate("", timeout=30)


def test_run_id_on_a_cron_routine_moves_last_scheduled_for(project: Project) -> None:
    """run --id records last_scheduled_for = now for a cron routine and names the earliest
    occurrence it passes over; the next due run starts after it."""
    project.routine("rtn-hourly", 'trigger: {cron: "0 * * * *", timezone: UTC}\n'
                                  "action: {kind: specdojo, args: [index]}\n")
    assert 0 == project.cli("run", "--due", "--now", "2026-12-01T05:00:10Z").returncode
    assert 0 == project.cli("run", "--id", "rtn-hourly", "--now",
                            "2026-12-01T08:20:00Z").returncode
    started = [e for e in project.events() if e["type"] == "attempt_started"][-1]
    assert ("id", "2026-12-01T06:00:00.000Z") == (started["trigger"],
                                                   started["passed_over_since"])
    entry = project.state()["routines"]["rtn-hourly"]
    assert "2026-12-01T08:20:00.000Z" == entry["last_scheduled_for"]
    proc = project.cli("run", "--due", "--now", "2026-12-01T08:40:00Z")
    assert "no due routines\n" == proc.stdout, proc.stderr

