"""`stop ID` (SPEC §13): SIGTERM to the verified runner of a routine's open attempt, which
records it as stopped (§6.5); a dead runner is refused and nothing is recorded.

A real `run --id` whose action sleeps with a child and a grandchild, a real signal, real
process groups.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import orjson

from specdojo_routine.app import controls
from tests.conftest import Project, group_members
from tests.test_stop import _cli_running, _group_gone, _pgid, _routine_lock_free


def test_stop_signals_the_runner_which_records_the_stop_and_leaves_no_process(
    project: Project,
) -> None:
    """stop exits 0 once the attempt is recorded ended: failure, reason stopped by SIGTERM
    with who asked and why; the runner exits 143, the action's group is gone, the lock free."""
    project.routine("rtn-long", "interval: 1h\naction: {kind: specdojo, args: [sleepy]}\n")
    env = _cli_running(project, "sh -c 'sleep 60 & sleep 60'")
    runner = project.popen("run", "--id", "rtn-long", env=env)
    pgid = _pgid(project)
    stopped = project.cli("stop", "rtn-long", "--note", "runaway export", "--by", "dave",
                          env=env)
    assert 0 == stopped.returncode, stopped.stderr
    attempt = next(e for e in project.events() if e["type"] == "attempt_started")["attempt_id"]
    assert f"rtn-long: attempt {attempt} stopped and recorded\n" == stopped.stdout
    assert 143 == runner.wait(timeout=30)
    ended = project.events()[-1]
    assert ("attempt_ended", "failure", "stopped by SIGTERM (stop by dave: runaway export)") == (
        ended["type"], ended["result"], ended["reason"])
    assert _group_gone(pgid), group_members(pgid)
    assert _routine_lock_free(project)
    assert not list((project.root / "routines" / ".locks").glob("stop-*"))


def test_stop_json_names_the_attempt_it_stopped(project: Project) -> None:
    """stop --json: one document naming the routine and the stopped attempt (exit 0 after the
    stop is recorded); a refusal stays one error line on stderr, exit 1."""
    project.routine("rtn-long", "interval: 1h\naction: {kind: specdojo, args: [sleepy]}\n")
    env = _cli_running(project, "sh -c 'sleep 60 & sleep 60'")
    runner = project.popen("run", "--id", "rtn-long", env=env)
    _pgid(project)
    stopped = project.cli("stop", "rtn-long", "--json", env=env)
    attempt = next(e for e in project.events() if e["type"] == "attempt_started")["attempt_id"]
    assert (0, {"routine_id": "rtn-long", "attempt_id": attempt, "stopped": True}) == (
        stopped.returncode, orjson.loads(stopped.stdout)), stopped.stderr
    assert 143 == runner.wait(timeout=30)
    again = project.cli("stop", "rtn-long", "--json", env=env)
    assert (1, "", 1) == (again.returncode, again.stdout, len(again.stderr.splitlines()))


def test_stop_refuses_a_dead_runner_and_records_nothing(project: Project) -> None:
    """An open attempt whose runner died (SIGKILL): stop sends nothing, records nothing and
    says to use resolve (exit 1)."""
    project.routine("rtn-long", "interval: 1h\naction: {kind: specdojo, args: [sleepy]}\n")
    env = _cli_running(project, "sh -c 'sleep 60 & sleep 60'")
    runner = project.popen("run", "--id", "rtn-long", env=env)
    pgid = _pgid(project)
    runner.send_signal(signal.SIGKILL)
    runner.wait(timeout=30)
    os.killpg(pgid, signal.SIGKILL)
    before = project.ledger.read_bytes()
    refused = project.cli("stop", "rtn-long", env=env)
    assert 1 == refused.returncode and "" == refused.stdout
    assert 1 == len(refused.stderr.splitlines()), refused.stderr
    assert "is dead" in refused.stderr and "resolve rtn-long" in refused.stderr
    assert before == project.ledger.read_bytes()


def test_stop_of_a_dead_runner_names_the_action_group_that_still_runs(project: Project) -> None:
    """The runner died but its action's process group lives on: `stop` says so and how to end
    it, instead of sending the operator to `resolve`, which refuses while the group runs."""
    project.routine("rtn-long", "interval: 1h\naction: {kind: specdojo, args: [sleepy]}\n")
    env = _cli_running(project, "sh -c 'sleep 60 & sleep 60'")
    runner = project.popen("run", "--id", "rtn-long", env=env)
    pgid = _pgid(project)
    runner.send_signal(signal.SIGKILL)
    runner.wait(timeout=30)
    try:
        before = project.ledger.read_bytes()
        refused = project.cli("stop", "rtn-long", env=env)
        resolve = project.cli("resolve", "rtn-long", "--result", "failure", "--note", "x",
                              env=env)
    finally:
        os.killpg(pgid, signal.SIGKILL)
    assert (1, "", 1) == (refused.returncode, refused.stdout, len(refused.stderr.splitlines()))
    assert f"process group {pgid} still runs" in refused.stderr, refused.stderr
    assert f"kill -TERM -- -{pgid}" in refused.stderr and "resolve rtn-long" in refused.stderr
    assert 75 == resolve.returncode and before == project.ledger.read_bytes()


def test_stop_never_signals_a_pid_that_is_not_the_runner(project: Project) -> None:
    """The open attempt names a live process that is not the runner (a reused pid: its start
    time differs): nothing is sent, it keeps running, nothing is recorded."""
    project.routine("rtn-x", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    assert 0 == project.cli("run", "--id", "rtn-x").returncode
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        events = project.events()
        started = next(e for e in events if e["type"] == "attempt_started")
        import hashlib
        prev = hashlib.sha256(project.ledger.read_bytes().splitlines()[-1]).hexdigest()
        owner = {**started["owner"], "pid": bystander.pid}  # the runner's start time, kept
        line = {**started, "seq": events[-1]["seq"] + 1, "attempt_id": "att-open",
                "transition": "T-06", "owner": owner, "prev": prev}
        with project.ledger.open("ab") as fh:
            fh.write(orjson.dumps(line) + b"\n")
        refused = project.cli("stop", "rtn-x")
        assert 1 == refused.returncode, refused.stderr
        assert bystander.poll() is None, "the bystander was not signalled"
    finally:
        bystander.kill()
        bystander.wait()


def test_stop_waits_thirty_seconds() -> None:
    """The SPEC-visible wait for the runner's record."""
    assert 30.0 == controls.STOP_WAIT_S


def test_a_second_stop_waits_for_the_first_and_keeps_its_note(project: Project) -> None:
    """A second `stop` while the first is ending the attempt neither signals again (which
    would cut the action's 10 s grace short) nor replaces who asked and why: it waits for
    the end and exits 0; the attempt is recorded with the first stop's name and note."""
    import time

    project.routine("rtn-long", "interval: 1h\naction: {kind: specdojo, args: [sleepy]}\n")
    env = _cli_running(project, "trap '' TERM\nsh -c 'sleep 60 & sleep 60'")
    runner = project.popen("run", "--id", "rtn-long", env=env)
    pgid = _pgid(project)
    t0 = time.monotonic()
    first = project.popen("stop", "rtn-long", "--note", "first", "--by", "ann", env=env)
    request = project.root / "routines" / ".locks"
    deadline = time.monotonic() + 30
    while not list(request.glob("stop-*.json")) and time.monotonic() < deadline:
        time.sleep(0.02)
    second = project.cli("stop", "rtn-long", "--note", "second", "--by", "bob", env=env,
                         timeout=60)
    assert 0 == second.returncode, second.stderr
    assert 0 == first.wait(timeout=60), first.stderr.read() if first.stderr else ""
    assert 143 == runner.wait(timeout=30)
    assert time.monotonic() - t0 >= 9.5  # the grace was not cut short
    ended = project.events()[-1]
    assert ("attempt_ended", "stopped by SIGTERM (stop by ann: first)") == (
        ended["type"], ended["reason"])
    assert _group_gone(pgid), group_members(pgid)
    assert not list(request.glob("stop-*"))


def test_the_stopped_runners_error_line_shows_the_note_escaped(project: Project) -> None:
    """The runner's last line quotes who stopped it and why: one line, the note's control
    characters escaped (an escape sequence in a note never reaches the terminal)."""
    project.routine("rtn-long", "interval: 1h\naction: {kind: specdojo, args: [sleepy]}\n")
    env = _cli_running(project, "sh -c 'sleep 60 & sleep 60'")
    runner = project.popen("run", "--id", "rtn-long", env=env)
    _pgid(project)
    note = "maint \x1b]0;T\x07\nsecond line"
    assert 0 == project.cli("stop", "rtn-long", "--note", note, env=env).returncode
    _, err = runner.communicate(timeout=30)
    [line] = [x for x in err.splitlines() if x.startswith("error:")]
    assert "\x1b" not in err and "maint \\x1b]0;T\\x07\\nsecond line" in line, err
