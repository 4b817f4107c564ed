"""SPEC §6.5 "Stopped, not crashed": SIGINT or SIGTERM to a runner (`run`, `release`, `job run`)
is an operator's stop. The running action's process group gets SIGTERM, up to 10 s, then
SIGKILL; `action_ended` and `attempt_ended` are recorded (failure, `stopped by SIG…`; a Job Run
attempt `failed` with the same reason); every lock is released; the exit is 130 / 143. Only a
runner that dies without recording (SIGKILL) leaves an interrupted attempt
(tests/test_run_resilience.py).

Real runners in subprocesses, real signals, real process groups (a grandchild included).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.store.locks.execlock import EXEC_LOCK_NAME
from tests.conftest import Project, group_members, wait_for

T0 = "2026-05-01T10:00:30Z"
T1 = "2026-05-01T12:00:30Z"
CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}





def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return not group_members(pgid)


def _cli_running(project: Project, body: str) -> dict[str, str]:
    """A SpecDojo CLI stand-in that records its process group (it leads it) and runs ``body``
    (while a marker file is absent: afterwards it exits 0 at once)."""
    script = project.root / "sleepy-cli"
    script.write_text("#!/bin/sh\n"
                      f'if [ -e "{project.root}/done" ]; then exit 0; fi\n'
                      f'echo $$ > "{project.root}/pgid"\n{body}\n')
    script.chmod(0o755)
    return project.env(SPECDOJO_CLI=str(script))


def _pgid(project: Project) -> int:
    marker = project.root / "pgid"
    wait_for(lambda: marker.exists() and marker.read_text().strip())
    pgid = int(marker.read_text())
    wait_for(lambda: len(group_members(pgid)) >= 3)  # the script, sh, and the sleeps it started
    return pgid


def _routine_lock_free(project: Project) -> bool:
    locks = project.root / "routines" / ".locks"
    with open(locks / "routine-run.flock", "rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
    return not (locks / "routine-run.lock").exists()  # the announcement went with it


def _exec_lock_free(project: Project) -> bool:
    return not (project.root / "execution" / "exec" / ".locks" / EXEC_LOCK_NAME).exists()


def _stop(proc: Any, signum: int) -> tuple[int, str, float]:
    t0 = time.monotonic()
    proc.send_signal(signum)
    code = proc.wait(timeout=60)
    return code, proc.stderr.read(), time.monotonic() - t0


@pytest.mark.parametrize(("signum", "script"), [
    (signal.SIGTERM, False), (signal.SIGTERM, True), (signal.SIGINT, False),
], ids=["SIGTERM python -m", "SIGTERM specdojo-routine", "SIGINT python -m"])
def test_a_stopped_run_records_the_stop_kills_the_group_and_frees_the_locks(
    project: Project, signum: signal.Signals, script: bool,
) -> None:
    """`run --due` stopped while its action (with a grandchild) sleeps: exit 130 / 143, the
    group is gone, action_ended and attempt_ended say `stopped by SIG…`, the second action
    never starts, both locks are free and the next run is not refused as interrupted."""
    project.routine("rtn-stop", """\
        interval: 1h
        action:
          - {kind: specdojo, args: [sleepy]}
          - {kind: specdojo, args: [after]}
        """)
    env = _cli_running(project, "sh -c 'sleep 60 & sleep 60'")
    proc = project.popen("run", "--due", "--now", T0, env=env, script=script)
    pgid = _pgid(project)
    code, stderr, _ = _stop(proc, signum)
    reason = f"stopped by {signum.name}"
    assert CODES[signum] == code, stderr
    assert 1 == len(stderr.splitlines()) and stderr.startswith(f"error: {reason}"), stderr
    assert _group_gone(pgid), group_members(pgid)
    events = project.events()
    assert (f"error: {reason}: the command that was running was ended; attempt "
            f'{events[-1]["attempt_id"]} of rtn-stop was recorded as failed (reason "{reason}")'
            ) in stderr
    assert ["attempt_started", "action_started", "action_ended", "attempt_ended"] == [
        e["type"] for e in events[-4:]]
    action, attempt = events[-2], events[-1]
    assert ("failure", reason, 1) == (action["result"], action["reason"], action["index"])
    assert ("failure", reason, "T-04") == (attempt["result"], attempt["reason"],
                                           attempt["transition"])
    assert [{"index": 1, "kind": "specdojo", "result": "failure"}] == attempt["action_results"]
    assert "failure" == project.state()["routines"]["rtn-stop"]["status"]  # published
    assert _routine_lock_free(project) and _exec_lock_free(project)
    (project.root / "done").touch()
    again = project.cli("run", "--due", "--now", T1, env=env)
    assert 0 == again.returncode, again.stderr
    assert "interrupted" not in again.stderr
    assert ("attempt_ended", "success") == (project.events()[-1]["type"],
                                            project.events()[-1]["result"])


def test_a_command_that_ignores_sigterm_is_killed_after_the_grace(project: Project) -> None:
    """The action's group ignores SIGTERM: it gets SIGKILL after the 10 s grace; the stop is
    recorded all the same (exit 143)."""
    project.routine("rtn-stubborn", "interval: 1h\naction: {kind: specdojo, args: [sleepy]}\n")
    env = _cli_running(project, "trap '' TERM\nsh -c 'sleep 60 & sleep 60'")
    proc = project.popen("run", "--due", "--now", T0, env=env)
    pgid = _pgid(project)
    code, stderr, took = _stop(proc, signal.SIGTERM)
    assert 143 == code, stderr
    assert 9.5 <= took < 30, took
    assert _group_gone(pgid), group_members(pgid)
    assert ("attempt_ended", "stopped by SIGTERM") == (project.events()[-1]["type"],
                                                      project.events()[-1]["reason"])
    assert _routine_lock_free(project)


def _run_ledger(project: Project) -> list[dict[str, Any]]:
    [ledger] = (project.root / "execution" / "jobs" / "runs").glob("*.jsonl")
    return [orjson.loads(line) for line in ledger.read_bytes().splitlines()]


def _sleepy_job(project: Project) -> None:
    """job-sleepy: records its group and sleeps (with a grandchild) until ``done`` exists."""
    command = (f"if [ -e {project.root}/done ]; then exit 0; fi; "
               f"echo $$ > {project.root}/pgid; sh -c 'sleep 60 & sleep 60'")
    project.job("job-sleepy", f"""\
        name: Sleepy
        task:
          mode: command
          command: {orjson.dumps(command).decode()}
        run:
          idempotency_key: "{{{{job_id}}}}"
        """)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_job_run_stopped_records_a_failed_attempt_and_retries_next_time(
    project: Project, signum: signal.Signals,
) -> None:
    """`job run` stopped by SIGTERM (SIGINT): the Job Run attempt is `failed`, reason `stopped
    by SIGTERM` (`SIGINT`); exit 143 (130); the exec lock is free; the next `job run` is
    attempt 2, not refused as interrupted."""
    _sleepy_job(project)
    proc = project.popen("job", "run", "--job", "job-sleepy", "--scheduled-at", T0)
    pgid = _pgid(project)
    code, stderr, _ = _stop(proc, signum)
    assert CODES[signum] == code, stderr
    assert _group_gone(pgid), group_members(pgid)
    ended = _run_ledger(project)[-1]
    assert ("attempt_ended", 1, "failed", f"stopped by {signum.name}") == (
        ended["type"], ended["attempt"], ended["status"], ended["reason"])
    assert f'attempt 1 of {ended["run_id"]} was recorded as failed (reason "stopped by ' in (
        stderr), stderr  # the last line says what the stop met
    assert _exec_lock_free(project)
    (project.root / "done").touch()
    again = project.cli("job", "run", "--job", "job-sleepy", "--scheduled-at", T0)
    assert 0 == again.returncode, again.stderr
    assert (2, "succeeded") == (_run_ledger(project)[-1]["attempt"],
                                _run_ledger(project)[-1]["status"])


def test_a_routine_job_action_stopped_by_sigint_closes_both_attempts(project: Project) -> None:
    """SIGINT while a routine's job action runs: the Job Run attempt is `failed` and the
    routine attempt a failure, both `stopped by SIGINT`; exit 130; both locks are free."""
    _sleepy_job(project)
    project.routine("rtn-job", "interval: 1h\naction: {kind: job, job: job-sleepy}\n")
    proc = project.popen("run", "--due", "--now", T0)
    pgid = _pgid(project)
    code, stderr, _ = _stop(proc, signal.SIGINT)
    assert 130 == code, stderr
    assert _group_gone(pgid), group_members(pgid)
    run_end = _run_ledger(project)[-1]
    assert ("failed", "stopped by SIGINT") == (run_end["status"], run_end["reason"])
    action, attempt = project.events()[-2:]
    assert ("action_ended", "failure", "stopped by SIGINT") == (
        action["type"], action["result"], action["reason"])
    assert ("attempt_ended", "failure", "stopped by SIGINT") == (
        attempt["type"], attempt["result"], attempt["reason"])
    assert _routine_lock_free(project) and _exec_lock_free(project)


def test_release_stopped_by_sigterm_records_its_attempt_as_stopped(project: Project) -> None:
    """`release --run latest` is a runner too: stopped mid-action it records the released
    attempt's end (`stopped by SIGTERM`), frees the lock and exits 143."""
    project.routine("rtn-held", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        policy: {on_failure: hold}
        action: {kind: specdojo, args: [work]}
        """)
    project.exit_codes({"work": 1})
    assert 1 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    project.exit_codes({})
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T11:00:10Z").returncode
    env = _cli_running(project, "sh -c 'sleep 60 & sleep 60'")
    proc = project.popen("release", "rtn-held", "--run", "latest", "--now",
                         "2026-05-01T11:30:00Z", env=env)
    pgid = _pgid(project)
    code, stderr, _ = _stop(proc, signal.SIGTERM)
    assert 143 == code, stderr
    assert _group_gone(pgid), group_members(pgid)
    started = [e for e in project.events() if e["type"] == "attempt_started"][-1]
    ended = project.events()[-1]
    assert ("release", "attempt_ended", started["attempt_id"], "stopped by SIGTERM") == (
        started["trigger"], ended["type"], ended["attempt_id"], ended["reason"])
    assert _routine_lock_free(project)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live (non-zombie) process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


def test_sighup_is_a_stop_recorded_like_sigterm(project: Project) -> None:
    """SIGHUP (the terminal of a `run` went away) is a stop too: the group is ended, the
    attempt is recorded `stopped by SIGHUP`, the locks are free, exit 129 - not a runner dead
    without recording, whose action's children would live on."""
    project.routine("rtn-hup", "interval: 1h\naction: {kind: specdojo, args: [sleepy]}\n")
    env = _cli_running(project, "sh -c 'sleep 60 & sleep 60'")
    proc = project.popen("run", "--due", "--now", T0, env=env)
    pgid = _pgid(project)
    code, stderr, _ = _stop(proc, signal.SIGHUP)
    assert 129 == code, stderr
    wait_for(lambda: _group_gone(pgid), timeout=10)
    ended = project.events()[-1]
    assert ("attempt_ended", "failure", "stopped by SIGHUP") == (
        ended["type"], ended["result"], ended["reason"])
    assert _routine_lock_free(project)


def test_an_ignored_sighup_stays_ignored(project: Project) -> None:
    """A runner started with SIGHUP ignored (`nohup`) is not stopped by a hangup."""
    project.routine("rtn-nohup", "interval: 1h\naction: {kind: specdojo, args: [sleepy]}\n")
    env = _cli_running(project, "sh -c 'sleep 60 & sleep 60'")
    import subprocess
    import sys
    proc = subprocess.Popen(
        [sys.executable, "-m", "specdojo_routine", "run", "--due", "--now", T0, "--root",
         str(project.root)], cwd=project.root, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    pgid = _pgid(project)
    proc.send_signal(signal.SIGHUP)
    time.sleep(1.0)
    assert proc.poll() is None
    code, stderr, _ = _stop(proc, signal.SIGTERM)
    assert 143 == code, stderr
    assert _group_gone(pgid), group_members(pgid)


def test_a_stop_ends_a_child_that_left_the_group_with_setsid(project: Project) -> None:
    """The action started a child in a session of its own (`setsid`): the stop ends it too,
    not only the action's process group."""
    project.routine("rtn-setsid", "interval: 1h\naction: {kind: specdojo, args: [sleepy]}\n")
    marker = project.root / "detached"
    env = _cli_running(project, f"setsid sh -c 'echo $$ > {marker}; exec sleep 60' &\n"
                                "sh -c 'sleep 60 & sleep 60'")
    proc = project.popen("run", "--due", "--now", T0, env=env)
    pgid = _pgid(project)
    wait_for(lambda: marker.exists() and marker.read_text().strip())
    detached = int(marker.read_text())
    try:
        code, stderr, _ = _stop(proc, signal.SIGTERM)
        assert 143 == code, stderr
        wait_for(lambda: not _alive(detached), timeout=5)
        assert _group_gone(pgid), group_members(pgid)
    finally:
        with contextlib.suppress(OSError):
            os.kill(detached, signal.SIGKILL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP],
                         ids=["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_stop_after_the_attempt_ended_says_it_keeps_its_result(
    project: Project, signum: signal.Signals,
) -> None:
    """A stop that arrives after `attempt_ended` was appended (here: while the `recovered`
    hook that follows it sleeps) records nothing more for the attempt, and the runner's line
    says so - the attempt had already ended (success) and keeps that result - instead of
    claiming that what was running was recorded as failed; the hook is ended (its
    `notification_sent` recorded), exit 128 + the signal, the lock is free."""
    hook = orjson.dumps(f'[ "$SPECDOJO_NOTIFY_EVENT" = recovered ] || exit 0; '
                        f'echo $$ > "{project.root}/hook.pgid"; sleep 60').decode()
    project.routine("rtn-late", f"""\
        interval: 1h
        policy: {{notify: {{on: [failure, recovered], command: {hook}}}}}
        action: {{kind: specdojo, args: [work]}}
        """)
    project.exit_codes({"work": 1})
    assert 1 == project.cli("run", "--due", "--now", T0).returncode
    project.exit_codes({})
    proc = project.popen("run", "--due", "--now", T1)
    marker = project.root / "hook.pgid"
    wait_for(lambda: marker.exists() and marker.read_text().strip())
    pgid = int(marker.read_text())
    wait_for(lambda: len(group_members(pgid)) >= 2)  # the hook's shell and its sleep
    code, stderr, _ = _stop(proc, signum)
    ended = [e for e in project.events() if e["type"] == "attempt_ended"][-1]
    assert (128 + signum, 1) == (code, len(stderr.splitlines())), stderr
    assert stderr.startswith(f"error: stopped by {signum.name}: attempt {ended['attempt_id']} "
                             "of rtn-late had already ended (success) and keeps that result; "
                             "the command that was running was ended;"), stderr
    assert "recorded as failed" not in stderr, stderr
    assert ("success", None) == (ended["result"], ended.get("reason"))
    assert ["attempt_ended", "notification_sent"] == [e["type"] for e in project.events()[-2:]]
    assert "success" == project.state()["routines"]["rtn-late"]["status"]  # published
    assert _group_gone(pgid), group_members(pgid)
    assert _routine_lock_free(project)


def test_what_an_earlier_command_met_is_not_told_for_the_next_one() -> None:
    """A program that runs commands in one process gets, for a stop, the line of what this
    command's stop met only: installing the stop handling forgets what earlier commands told."""
    from specdojo_routine.execute import stop

    stop.tell("attempt", "attempt att-old of rtn-old had already ended (success)")
    stop.install()
    try:
        line = str(stop.Stopped(signal.SIGTERM))
    finally:
        stop.uninstall()
    assert "att-old" not in line
    assert "no command was running, and nothing was recorded as failed" in line


def test_a_stop_that_lands_before_the_command_parses_is_one_line_not_a_traceback(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """SIGTERM delivered while ``main`` reads which values of the environment are secrets
    (the first thing it does): exit 143 and one ``error:`` line, no traceback."""
    import importlib

    from specdojo_routine.execute import stop

    cli_main = importlib.import_module("specdojo_routine.cli.main")  # the module, not main()

    def stopped(*_args: object) -> list[str]:
        raise stop.Stopped(signal.SIGTERM)

    monkeypatch.setattr(cli_main, "secret_values", stopped)
    assert 143 == cli_main.main(["list"])
    err = capsys.readouterr().err
    assert (1, True) == (len(err.splitlines()), err.startswith("error: ")), err


def test_a_stop_that_lands_while_an_error_is_reported_ends_with_its_code(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """SIGTERM while ``main`` writes the error a command ended with (a busy lock's exit 75,
    here): exit 143 and the stop's line after the error, not a traceback and exit 1."""
    import importlib

    from specdojo_routine.core.errors import LockBusy
    from specdojo_routine.execute import stop

    cli_main = importlib.import_module("specdojo_routine.cli.main")  # the module, not main()

    def busy(*_args: object) -> int:
        raise LockBusy("routine lock held by pid 1")

    calls: list[str] = []

    def stopped_while_shown(text: str) -> str:  # the signal lands as the error line is made
        calls.append(text)
        if len(calls) == 1:
            raise stop.Stopped(signal.SIGTERM)
        return text

    monkeypatch.setattr(cli_main, "_dispatch", lambda _args: busy)
    monkeypatch.setattr(cli_main, "shown", stopped_while_shown)
    monkeypatch.setattr(cli_main.parser, "parse", lambda *_args: object())
    assert 143 == cli_main.main(["list"])
    assert "routine lock held by pid 1" == calls[0]
    assert "error: stopped by SIGTERM" in capsys.readouterr().err


_LOST_STOP = """
import os, signal, sys, weakref
import specdojo_routine.__main__ as entry
from specdojo_routine.execute import stop
stop.install()
signal.pthread_sigmask(signal.SIG_UNBLOCK, entry._STOPS)
class Thing: pass
def finalizer(_ref):  # the signal lands while Python runs a weakref callback
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(1000): pass
thing = Thing(); ref = weakref.ref(thing, finalizer)
del thing
print("requested", stop.requested(), flush=True)
sys.exit(entry._with_the_stop(0))
"""


def test_a_stop_that_lands_in_a_finalizer_is_not_lost() -> None:
    """A stop that lands where Python cannot raise it (a ``__del__``, a weakref callback, the
    import machinery's module-lock callback) was printed as `Exception ignored` and lost: the
    command went on and exited 0, and a second SIGTERM did nothing either. It stays requested
    now, the process exits 143 with the stop's line, and a second signal raises again."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _LOST_STOP], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (143, "requested 15\n") == (done.returncode, done.stdout), done.stderr
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: stopped by SIGTERM"), done.stderr
    again = subprocess.run([sys.executable, "-c", _LOST_STOP.replace(
        "sys.exit(entry._with_the_stop(0))",
        "try:\n    os.kill(os.getpid(), signal.SIGTERM)\n    for _ in range(100000): pass\n"
        "except stop.Stopped:\n    print('raised', flush=True)\n")],
        capture_output=True, text=True, timeout=60, check=False)
    assert "raised\n" in again.stdout, again.stdout + again.stderr


_LATE_STOP = """
import gc, os, signal
import specdojo_routine.__main__ as entry
entry.run_command = lambda: 3  # a command that is over, with its own exit code
freeze = gc.freeze
def late_stop():  # the signal lands once the command is over, on the way out
    os.kill(os.getpid(), signal.SIGTERM)
    freeze()
gc.freeze = late_stop
entry.main()
"""


def test_a_stop_after_the_command_is_over_does_not_cut_the_exit() -> None:
    """Once the command is over, the stop signals are blocked until the process exits: a
    SIGTERM then leaves the command's exit code and output whole, instead of killing the
    process by the signal in the middle of its exit (the handlers were already Python's)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _LATE_STOP], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (3, "") == (done.returncode, done.stderr)
