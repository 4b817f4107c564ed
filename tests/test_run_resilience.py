"""Concurrent starts, SIGKILL mid-run, interrupted attempts and `resolve` (SPEC §6.2, §6.5)."""

from __future__ import annotations

import collections
import os
import signal
import time

import orjson
import pytest

from tests.conftest import Project, argv_of, children, descendants, wait_for


def test_four_concurrent_runs_attempt_each_occurrence_once(project: Project) -> None:
    """4 `run --due` at once: each due occurrence is attempted exactly once; the others exit
    75 having written nothing, or find nothing due."""
    for n in range(3):
        project.routine(f"rtn-c{n}", "interval: 1h\naction: {kind: specdojo, args: [sleep-0.3]}\n")
    project.routine("rtn-cron", """\
        trigger: {cron: "*/5 * * * *", timezone: Europe/Berlin}
        policy: {missed_run: all}
        action: {kind: exec-resume}
        """)
    procs = [project.popen("run", "--due", "--now", "2026-03-29T01:07:00Z") for _ in range(4)]
    outs = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    codes = sorted(code for code, _, _ in outs)
    assert all(code in (0, 75) for code in codes), outs
    assert 0 in codes
    for code, out, err in outs:
        if code == 75:
            assert "Another routine run is in progress" in err
        elif "no due routines" not in out:
            assert "Ran 4 attempt(s)" in out
    started = collections.Counter(
        e["routine_id"] for e in project.events() if e["type"] == "attempt_started")
    assert {"rtn-c0": 1, "rtn-c1": 1, "rtn-c2": 1, "rtn-cron": 1} == dict(started)
    assert [n + 1 for n in range(len(project.events()))] == [e["seq"] for e in project.events()]


def _killed_mid_action(project: Project, policy: str = "") -> None:
    """rtn-crash's runner is SIGKILLed while its second action (a 30 s sleep) runs."""
    project.routine("rtn-crash", f"""\
        trigger: {{cron: "0 * * * *", timezone: UTC}}
        {policy}
        action:
          - {{kind: specdojo, args: [first]}}
          - {{kind: specdojo, args: [sleep-30]}}
        """)
    proc = project.popen("run", "--due", "--now", "2026-05-01T10:00:30Z")
    wait_for(lambda: len(project.calls()) == 2)
    sleepers = children(proc.pid)  # the delegated call, in its own process group
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    for child in sleepers:  # this test's sleeper only, not every `sleep 30` on the machine
        os.killpg(child, signal.SIGKILL)


def test_a_run_killed_mid_action_leaves_an_interrupted_routine(project: Project) -> None:
    """After SIGKILL mid-action the next run reports the routine interrupted and skips it."""
    _killed_mid_action(project)
    calls_before = len(project.calls())
    again = project.cli("run", "--due", "--now", "2026-05-01T11:00:30Z")
    assert 1 == again.returncode
    assert "rtn-crash: interrupted" in again.stderr
    explicit = project.cli("run", "--id", "rtn-crash", "--now", "2026-05-01T11:00:30Z")
    assert (1, "not run: rtn-crash has an interrupted attempt; check it, then `resolve "
               "rtn-crash --result success|failure|skipped --note TEXT`\n") == (
        explicit.returncode, explicit.stdout)  # not "no due routines": it was asked for
    assert again.stdout == explicit.stdout
    assert calls_before == len(project.calls())
    assert 1 == sum(e["type"] == "attempt_started" for e in project.events())
    listed = project.cli("list", "--json", "--now", "2026-05-01T11:00:30Z")
    row = orjson.loads(listed.stdout)["routines"][0]
    assert (True, "running", False) == (row["interrupted"], row["status"], row["due"])
    status = project.cli("status", "--now", "2026-05-01T11:00:30Z")
    # SPEC §14: an interrupted routine is unhealthy: list and status exit 1 and say why
    assert (1, 1, True) == (listed.returncode, status.returncode, "interrupted" in status.stdout)
    assert 0 == project.cli("fold", "--check").returncode


def test_resolve_closes_the_attempt_and_the_next_opportunity_runs(project: Project) -> None:
    """`resolve` records the operator's outcome; the routine then runs at its next slot."""
    _killed_mid_action(project)
    done = project.cli("resolve", "rtn-crash", "--result", "failure", "--note", "checked logs",
                       "--by", "alice")
    assert 0 == done.returncode, done.stderr
    resolved = project.events()[-1]
    assert ("attempt_resolved", "T-04", "failure", "alice", "checked logs") == (
        resolved["type"], resolved["transition"], resolved["result"], resolved["resolved_by"],
        resolved["note"])
    state = project.state()["routines"]["rtn-crash"]
    assert ("failure", "failure") == (state["status"], state["last_result"])
    path = project.root / "routines" / "rtn-crash.yaml"
    path.write_text(path.read_text().replace("sleep-30", "second"))
    same_slot = project.cli("run", "--due", "--now", "2026-05-01T10:59:00Z")
    assert "no due routines\n" == same_slot.stdout
    next_slot = project.cli("run", "--due", "--now", "2026-05-01T11:00:30Z", "--json")
    started = [e for e in project.events() if e["type"] == "attempt_started"]
    assert 2 == len(started)
    assert ("T-07", "2026-05-01T11:00:00.000Z") == (started[-1]["transition"],
                                                     started[-1]["scheduled_for"])
    assert 0 == next_slot.returncode, next_slot.stderr
    assert 0 == project.cli("fold", "--check").returncode


def test_resolve_without_open_attempt_is_refused(project: Project) -> None:
    """`resolve` on a routine with no open attempt exits 1 and writes nothing."""
    project.routine("rtn-fine", "interval: 1h\naction: {kind: exec-resume}\n")
    assert 0 == project.cli("run", "--due").returncode
    before = project.ledger.read_bytes()
    proc = project.cli("resolve", "rtn-fine", "--result", "success", "--note", "x")
    assert 1 == proc.returncode
    assert "no open attempt" in proc.stderr
    assert before == project.ledger.read_bytes()


def test_on_interrupted_resume_closes_and_runs_the_next_occurrence(project: Project) -> None:
    """policy.on_interrupted: resume closes the dead attempt (T-04, interrupted) and runs on."""
    _killed_mid_action(project, policy="policy: {on_interrupted: resume}")
    (project.root / "routines" / "rtn-crash.yaml").write_text(
        (project.root / "routines" / "rtn-crash.yaml").read_text().replace("sleep-30", "second"))
    again = project.cli("run", "--due", "--now", "2026-05-01T11:00:30Z")
    assert 0 == again.returncode, again.stderr
    assert "rtn-crash: closed its interrupted attempt as failure" in again.stderr
    ended = [e for e in project.events() if e["type"] == "attempt_ended"]
    assert ("T-04", "failure", "interrupted") == (
        ended[0]["transition"], ended[0]["result"], ended[0]["reason"])
    assert ("T-07", "success") == (
        [e for e in project.events() if e["type"] == "attempt_started"][-1]["transition"],
        ended[-1]["result"])


@pytest.mark.parametrize("script", [False, True], ids=["python -m", "specdojo-routine"])
def test_sigterm_stops_the_running_command_and_records_the_stop(
    project: Project, script: bool,
) -> None:
    """SIGTERM (a scheduler timeout) is an operator's stop, not a crash (SPEC §6.5): exit 143,
    the delegated command's group is ended, the attempt is recorded as a failure `stopped by
    SIGTERM`, and the next run is not refused as interrupted. Under `python -m` and under the
    installed script alike (tests/test_stop.py has the rest)."""
    project.routine("rtn-term", """\
        interval: 1h
        action: {kind: specdojo, args: [sleep-41]}
        """)
    proc = project.popen("run", "--due", "--now", "2026-05-01T10:00:30Z", script=script)
    wait_for(lambda: ["sleep", "41"] in map(argv_of, descendants(proc.pid)))
    started = descendants(proc.pid)  # this test's command and its sleep, not another worker's
    proc.send_signal(signal.SIGTERM)
    assert 143 == proc.wait(timeout=30)
    assert "error: stopped by SIGTERM" in proc.stderr.read()  # type: ignore[union-attr]
    time.sleep(0.2)
    assert [] == [argv for argv in map(argv_of, started) if argv == ["sleep", "41"]]
    assert ("attempt_ended", "stopped by SIGTERM") == (project.events()[-1]["type"],
                                                      project.events()[-1]["reason"])
    again = project.cli("run", "--due", "--now", "2026-05-01T12:00:00Z",
                        env=project.env(SPECDOJO_CLI="true"))  # runs again, without the sleep
    assert 0 == again.returncode, again.stderr
    assert "interrupted" not in again.stderr
