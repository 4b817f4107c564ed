"""An agent stage that outlives its runner (SPEC §6.5, §7.3, §11.1): every stage of an
edit/review attempt records its process group with the attempt, as a command does, so that
after a SIGKILL of `job run` the run is not taken for interrupted while the agent still works:
`job resolve` waits (exit 75, naming the group, nothing recorded) and `job run` is a busy skip,
until the group has ended. The agent went on while `job resolve` was accepted and a new `job
run` worked beside it.

Real runner, real SIGKILL, the fake agent CLI with a child that keeps its group alive.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from specdojo_routine.execute import runner
from tests.agenthelper import AgentProject, terminated_once_its_child_runs
from tests.conftest import wait_for


@pytest.fixture
def ap(tmp_path: Path) -> AgentProject:
    return AgentProject(tmp_path / "proj")


def _ledger(ap: AgentProject) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(
        (ap.root / "execution" / "jobs" / "runs").glob("*.jsonl")))


@pytest.mark.parametrize("slow", ["editor:executor", "reporter:reporter"],
                         ids=["executor stage", "reporter stage"])
def test_a_killed_runners_agent_keeps_the_run_busy_until_it_ends(
    ap: AgentProject, slow: str,
) -> None:
    """SIGKILL of `job run` while the executor (or, after a quick executor, the reporter)
    works: the group recorded is the running stage's; `job resolve` exits 75 naming it and
    records nothing, a new `job run` is a busy skip; once the group is gone, resolve works."""
    ap.edit_job("job-e", agent="{executor: editor, reporter: reporter}")
    ap.behave({slow: {"sleep": 60, "child": True}})
    proc = ap.popen("job", "run", "--job", "job-e", "--input", "period=w1")
    child_file = Path(f"{ap.control}.child.pid")
    try:
        wait_for(lambda: child_file.exists() and child_file.read_text().strip())
    finally:  # the runner dies here, whatever the wait found
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    pgid = os.getpgid(int(child_file.read_text()))
    try:
        records = list((ap.root / "execution" / "exec" / "evidence").glob(
            "*/attempt-1/process.json"))
        assert 1 == len(records), "the agent stage's process group was not recorded"
        assert pgid == json.loads(records[0].read_bytes())["pgid"]  # the running stage's
        run_id = records[0].parent.parent.name
        assert runner.group_alive(pgid)
        before = _ledger(ap)
        refused = ap.cli("job", "resolve", run_id, "--status", "failed", "--note", "checked")
        assert 75 == refused.returncode, refused.stdout + refused.stderr
        assert f"process group {pgid}" in refused.stderr, refused.stderr
        again = ap.cli("job", "run", "--job", "job-e", "--input", "period=w1")
        assert 0 == again.returncode, again.stdout + again.stderr
        assert f"process group {pgid} outlived its runner" in again.stdout + again.stderr
        assert before == _ledger(ap)
        assert 1 == sum(1 for x in ap.launches() if f"{x['nickname']}:{x['role']}" == slow)
    finally:
        os.killpg(pgid, signal.SIGKILL)
    wait_for(lambda: not runner.group_alive(pgid))
    done = ap.cli("job", "resolve", run_id, "--status", "failed", "--note", "checked")
    assert 0 == done.returncode, done.stderr
    assert "failed" == ap.view(run_id)["state"]


def test_a_stop_during_the_executor_stage_is_recorded_as_the_stop(ap: AgentProject) -> None:
    """SPEC §6.5: SIGTERM while the agent works ends it and the attempt `failed` with the
    stop's own reason, `stopped by SIGTERM` (exit 143), and the runner's last line says the
    attempt was recorded as failed. The reason was `agent editor: stopped by SIGTERM`, which
    the stop's line took for an attempt that had ended by itself and kept its result."""
    ap.edit_job("job-e", agent="{executor: editor}")
    ap.behave({"editor:executor": {"sleep": 60, "child": True}})
    proc = ap.popen("job", "run", "--job", "job-e", "--input", "period=w1")
    code, stderr, _ = terminated_once_its_child_runs(ap, proc)
    assert 143 == code, stderr
    [ledger] = (ap.root / "execution" / "jobs" / "runs").glob("*.jsonl")
    ended = [json.loads(x) for x in ledger.read_bytes().splitlines()][-1]
    assert ("attempt_ended", "failed", "stopped by SIGTERM") == (
        ended["type"], ended["status"], ended["reason"])
    assert f'attempt 1 of {ledger.stem} was recorded as failed (reason "stopped by SIGTERM")' \
        in stderr, stderr
