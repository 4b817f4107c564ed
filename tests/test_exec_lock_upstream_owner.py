"""An upstream exec lock owner records no start time (SPEC §7.7): its holder is judged by the
evidence this host can check. A live pid whose process started by the lock's
`acquired_at_utc` may be the holder and is never robbed; a process that started later has a
reused pid and is not the holder, so the 30 s heartbeat decides, as upstream's own CLI does.
Real processes, forged `owner.json` files, the real CLI in a child process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from specdojo_routine.store.locks import announce, execlock, liveness
from tests.conftest import Project

TIMEOUT_S = 60


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A live process of this host, started now."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


def _stamp(seconds_from_now: float) -> str:
    then = datetime.now(UTC) + timedelta(seconds=seconds_from_now)
    return then.strftime("%Y-%m-%dT%H:%M:%SZ")


def _upstream_lock(project: Project, pid: int, acquired_at: str | None, age_s: float) -> Path:
    """An upstream owner.json (no host, no start) whose heartbeat is ``age_s`` old."""
    lock = project.root / "execution" / "exec" / ".locks" / execlock.EXEC_LOCK_NAME
    lock.mkdir(parents=True)
    owner: dict[str, object] = {"actor": "exec-run", "pid": pid, "token": f"{pid}-deadbeef"}
    if acquired_at is not None:
        owner["acquired_at_utc"] = acquired_at
    (lock / "owner.json").write_bytes(orjson.dumps(owner))
    then = time.time() - age_s
    os.utime(lock, (then, then))
    return lock


def _job_run(project: Project) -> dict[str, object]:
    project.job("job-mark", """\
        name: Mark
        task: {mode: command, command: "echo ran >> marks"}
        run: {idempotency_key: "{{job_id}}:{{scheduled_at}}"}
        """)
    done = project.cli("job", "run", "--job", "job-mark", "--json", timeout=TIMEOUT_S)
    assert 0 == done.returncode, done.stdout + done.stderr
    out: dict[str, object] = orjson.loads(done.stdout)
    return out


def test_a_pid_reused_after_the_lock_was_taken_does_not_hold_it(
        project: Project, sleeper: subprocess.Popen[bytes]) -> None:
    """The owner's pid is a live process that started two hours after the lock was acquired,
    the heartbeat is two hours old: the lock is taken over and the Job runs (it was skipped
    as busy for ever)."""
    _upstream_lock(project, sleeper.pid, _stamp(-7200), age_s=7200)
    out = _job_run(project)
    assert ("succeeded", False) == (out["state"], out["skipped"]), out
    assert "ran\n" == (project.root / "marks").read_text()


def test_a_pid_reused_with_a_fresh_heartbeat_is_busy_until_the_heartbeat_is_stale(
        project: Project, sleeper: subprocess.Popen[bytes]) -> None:
    """Not the holder, but its heartbeat is fresh: the 30 s rule says busy."""
    _upstream_lock(project, sleeper.pid, _stamp(-7200), age_s=0)
    out = _job_run(project)
    assert (True, False) == (out["skipped"], (project.root / "marks").exists()), out


def test_a_holder_that_started_before_the_lock_is_never_robbed(
        project: Project, sleeper: subprocess.Popen[bytes]) -> None:
    """The owner's process started before the lock was acquired (it may be the holder, paused):
    busy whatever the heartbeat's age, and the lock is left as it is."""
    time.sleep(1.1)  # the boot time is whole seconds: acquired clearly after the start
    lock = _upstream_lock(project, sleeper.pid, _stamp(3), age_s=7200)
    owner = (lock / "owner.json").read_bytes()
    out = _job_run(project)
    assert (True, False) == (out["skipped"], (project.root / "marks").exists()), out
    assert owner == (lock / "owner.json").read_bytes()


def test_a_live_pid_without_a_readable_acquisition_time_is_left_to_the_heartbeat(
        project: Project, sleeper: subprocess.Popen[bytes]) -> None:
    """No acquired_at_utc: nothing shows the process is the holder, so a heartbeat two hours
    old is stale."""
    _upstream_lock(project, sleeper.pid, None, age_s=7200)
    out = _job_run(project)
    assert ("succeeded", False) == (out["state"], out["skipped"]), out


def test_holder_alive_judges_a_holder_without_a_start_time(
        sleeper: subprocess.Popen[bytes]) -> None:
    """True for a process started by the acquisition, None for one started after it or with
    no readable acquisition, False for a dead pid; a recorded start time still decides."""
    pid = sleeper.pid
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert (True, None, None, None, False) == (
        liveness.holder_alive(pid, None, None, _stamp(5)),
        liveness.holder_alive(pid, None, None, _stamp(-3600)),
        liveness.holder_alive(pid, None, None, "not a time"),
        liveness.holder_alive(pid, "another-host.example", None, _stamp(5)),
        liveness.holder_alive(dead.pid, None, None, _stamp(5)))
    start = liveness.process_start(pid)
    assert (True, False) == (liveness.holder_alive(pid, None, start, _stamp(-3600)),
                             liveness.holder_alive(pid, None, (start or 0) + 1, _stamp(5)))


def test_the_routine_lock_directory_judges_an_owner_without_start_by_the_same_rule(
        tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    """An owner.json of ours without start (an older version) in the routine lock directory:
    a live pid is busy within the hour whether it started before the acquisition (it may be
    the holder) or after (nothing proves it is not, the hour decides); a dead pid is ours,
    left by a crash."""
    lock = tmp_path / announce.DIR_NAME
    lock.mkdir()
    host = liveness.this_host()

    def holder(pid: int, acquired_at: str) -> announce.DirHolder | None:
        record = {"tool": announce.TOOL, "pid": pid, "host": host, "acquired_at": acquired_at}
        (lock / "owner.json").write_bytes(orjson.dumps(record))
        return announce.holder(tmp_path, now=datetime.now(UTC), host=host,
                               alive=liveness.live_here)

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert (sleeper.pid, sleeper.pid, None) == (
        getattr(holder(sleeper.pid, _stamp(5)), "pid", None),
        getattr(holder(sleeper.pid, _stamp(-3000)), "pid", None),
        holder(dead.pid, _stamp(5)))
