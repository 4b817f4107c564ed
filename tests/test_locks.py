"""Routine lock (SPEC §6.2) and exec lock (SPEC §7.7): real files, real flock, real processes."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from specdojo_routine.core import errors, timefmt
from specdojo_routine.store.locks import execlock
from specdojo_routine.store.locks import routine as locks
from specdojo_routine.store.locks.routine import LockInfo
from tests.conftest import Project

HELPER = Path(__file__).with_name("lockhelper.py")
HOST = socket.gethostname()
AT = "2026-08-07T08:02:00Z"
AT_DT = datetime(2026, 8, 7, 8, 2, tzinfo=UTC)


def fixed_clock(value: datetime = AT_DT) -> Callable[[], datetime]:
    return lambda: value


def spawn(*args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HELPER), *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()


def finish(proc: subprocess.Popen[str]) -> int:
    if proc.stdin is not None and not proc.stdin.closed:
        proc.stdin.close()
    rc = proc.wait(timeout=20)
    if proc.stdout is not None:
        proc.stdout.close()
    return rc


@contextlib.contextmanager
def holder(*args: object) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A helper process that has printed its first line (it then holds until stdin closes)."""
    proc = spawn(*args)
    try:
        yield proc, first_line(proc)
    finally:
        finish(proc)


def run_helper(*args: object) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, str(HELPER), *map(str, args)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.returncode, done.stdout.strip()


def busy_text(path: Path, pid: object, host: str, since: str) -> str:
    return (
        f"Another routine run is in progress (lock: {path}, holder pid {pid} on {host} "
        f"since {since}): wait for it to end and run the command again; `status` says what "
        "it runs, and `stop ID` ends a routine's running attempt"
    )


def set_mtime(path: Path, when: float) -> None:
    os.utime(path, (when, when))


# --------------------------------------------------------------------------- routine lock


def test_holder_file_records_pid_host_and_time(tmp_path: Path) -> None:
    """After locking, the holder writes {pid, host, acquired_at, start} into the lock file
    (start: its process start time, so a reused pid is not mistaken for it)."""
    with locks.routine_lock(tmp_path, clock=fixed_clock()):
        content = json.loads((tmp_path / "routine-run.flock").read_text())
    start = locks.process_start(os.getpid())
    assert {"pid": os.getpid(), "host": HOST, "acquired_at": AT, "start": start} == content


def test_routine_lock_yields_info_about_this_process(tmp_path: Path) -> None:
    """The yielded LockInfo names this process, which holder_is_self recognises."""
    with locks.routine_lock(tmp_path, clock=fixed_clock()) as info:
        pass
    expected = LockInfo(held=True, pid=os.getpid(), host=HOST, acquired_at=AT, suspicious=False)
    assert (expected, True) == (info, locks.holder_is_self(info))


def test_routine_lock_creates_locks_dir(tmp_path: Path) -> None:
    """The locks directory is created when missing."""
    locks_dir = tmp_path / "R" / ".locks"
    with locks.routine_lock(locks_dir):
        pass
    assert ["routine-run.flock"] == os.listdir(locks_dir)


def test_unusable_locks_dir_is_a_routine_error(tmp_path: Path) -> None:
    """A locks directory that cannot be created is a one-line RoutineError, not a traceback."""
    (tmp_path / "file").write_text("")
    locks_dir = tmp_path / "file" / ".locks"
    with pytest.raises(errors.RoutineError) as caught, locks.routine_lock(locks_dir):
        pass
    assert str(caught.value).startswith(f"cannot use the lock {locks_dir / 'routine-run.flock'}: ")


def test_second_process_is_refused_with_exact_message(tmp_path: Path) -> None:
    """Another process gets LockBusy (exit 75) naming this holder's pid, host and time."""
    with locks.routine_lock(tmp_path, clock=fixed_clock()):
        result = run_helper("routine-try", tmp_path)
    expected = busy_text(tmp_path / "routine-run.flock", os.getpid(), HOST, AT)
    assert (75, expected) == result


def test_busy_message_names_holder_in_other_process(tmp_path: Path) -> None:
    """A holder in another process is named in this process's LockBusy."""
    with holder("routine-hold", tmp_path, AT) as (proc, line):
        assert "held" == line
        with pytest.raises(errors.LockBusy) as caught, locks.routine_lock(tmp_path):
            pass
    assert busy_text(tmp_path / "routine-run.flock", proc.pid, HOST, AT) == str(caught.value)


def test_busy_fields_unknown_when_holder_file_unreadable(tmp_path: Path) -> None:
    """Fields the holder file does not provide read "unknown"."""
    with holder("routine-hold", tmp_path, AT) as (_proc, _line):
        (tmp_path / "routine-run.flock").write_text("{torn")
        with pytest.raises(errors.LockBusy) as caught, locks.routine_lock(tmp_path):
            pass
    expected = busy_text(tmp_path / "routine-run.flock", "unknown", "unknown", "unknown")
    assert expected == str(caught.value)


def test_lock_is_released_on_exit(tmp_path: Path) -> None:
    """Leaving the block releases the lock for the next process."""
    with locks.routine_lock(tmp_path):
        pass
    assert (0, "acquired") == run_helper("routine-try", tmp_path)


def test_lock_is_released_when_the_body_raises(tmp_path: Path) -> None:
    """An exception in the block still releases the lock."""
    with pytest.raises(RuntimeError), locks.routine_lock(tmp_path):
        raise RuntimeError("boom")
    with locks.routine_lock(tmp_path) as info:
        assert info.held


def test_lock_file_is_kept_after_release(tmp_path: Path) -> None:
    """The lock file is never deleted; it keeps the last holder's record."""
    with locks.routine_lock(tmp_path, clock=fixed_clock()):
        pass
    assert AT == json.loads((tmp_path / "routine-run.flock").read_text())["acquired_at"]


def test_sigkilled_holder_releases_the_lock_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A holder killed with SIGKILL never blocks the next run: its lock is taken at the first
    try, without waiting out the busy grace (the wait's retries are counted, not timed: the
    first lock of a process also imports portalocker, 0.1-0.7 s on a loaded machine)."""
    proc = spawn("routine-hold", tmp_path, AT)
    assert "held" == first_line(proc)
    retries: list[float] = []
    with monkeypatch.context() as patch:  # while it lives, it holds the lock
        patch.setattr(locks.time, "sleep", retries.append)
        with pytest.raises(errors.LockBusy), locks.routine_lock(tmp_path):
            pass
    assert retries
    retries.clear()
    proc.send_signal(signal.SIGKILL)
    assert -signal.SIGKILL == finish(proc)
    with monkeypatch.context() as patch:
        patch.setattr(locks.time, "sleep", retries.append)
        with locks.routine_lock(tmp_path) as info:
            assert info.pid == os.getpid()
    assert [] == retries


def test_young_upstream_lock_dir_is_busy(tmp_path: Path) -> None:
    """The upstream routine-run.lock directory younger than 1 hour makes the lock busy."""
    upstream = tmp_path / "routine-run.lock"
    upstream.mkdir()
    set_mtime(upstream, (AT_DT - timedelta(minutes=59)).timestamp())
    with pytest.raises(errors.LockBusy) as caught, locks.routine_lock(
        tmp_path, clock=fixed_clock()
    ):
        pass
    expected = busy_text(upstream, "unknown", "unknown", "2026-08-07T07:03:00Z")
    assert expected == str(caught.value)


def test_old_upstream_lock_dir_is_taken_over_and_announced(tmp_path: Path) -> None:
    """An upstream lock directory older than 1 hour is stale: not a holder; like the upstream
    CLI we take it over, so while we hold the lock the directory is ours (SPEC §6.2)."""
    upstream = tmp_path / "routine-run.lock"
    upstream.mkdir()
    set_mtime(upstream, (AT_DT - timedelta(minutes=61)).timestamp())
    with locks.routine_lock(tmp_path, clock=fixed_clock()) as info:
        assert info.held
        owner = json.loads((upstream / "owner.json").read_bytes())
        assert ("specdojo_routine", os.getpid()) == (owner["tool"], owner["pid"])
    assert not upstream.exists()


def test_refusal_for_upstream_dir_releases_the_flock(tmp_path: Path) -> None:
    """Refusing because of the upstream directory does not keep the flock."""
    upstream = tmp_path / "routine-run.lock"
    upstream.mkdir()
    with pytest.raises(errors.LockBusy), locks.routine_lock(tmp_path):
        pass
    upstream.rmdir()
    assert (0, "acquired") == run_helper("routine-try", tmp_path)


# --------------------------------------------------------------------------- status


def test_status_reports_holder_in_other_process(tmp_path: Path) -> None:
    """While another process holds the lock, status shows its pid, host and time."""
    with holder("routine-hold", tmp_path, AT) as (proc, _line):
        info = locks.routine_lock_status(tmp_path, now=AT_DT + timedelta(minutes=59))
    expected = LockInfo(held=True, pid=proc.pid, host=HOST, acquired_at=AT, suspicious=False)
    assert (expected, False) == (info, locks.holder_is_self(info))


def test_status_flags_holder_older_than_an_hour(tmp_path: Path) -> None:
    """A holder that acquired over 1 hour before `now` is suspicious."""
    with holder("routine-hold", tmp_path, AT) as (_proc, _line):
        info = locks.routine_lock_status(tmp_path, now=AT_DT + timedelta(minutes=61))
    assert (True, True) == (info.held, info.suspicious)


def test_status_is_free_after_release(tmp_path: Path) -> None:
    """A released lock (the file keeps the old record) is reported free."""
    with locks.routine_lock(tmp_path):
        pass
    free = LockInfo(held=False, pid=None, host=None, acquired_at=None, suspicious=False)
    assert free == locks.routine_lock_status(tmp_path, now=AT_DT)


def test_status_of_a_dead_holder_is_free(tmp_path: Path) -> None:
    """The record of a SIGKILLed holder does not make the lock look held."""
    proc = spawn("routine-hold", tmp_path, AT)
    assert "held" == first_line(proc)
    proc.kill()
    finish(proc)
    assert not locks.routine_lock_status(tmp_path, now=AT_DT).held


def test_status_sees_own_hold_as_self(tmp_path: Path) -> None:
    """Inside routine_lock, status reports the lock held by this process."""
    with locks.routine_lock(tmp_path):
        info = locks.routine_lock_status(tmp_path, now=datetime.now(UTC))
    assert (True, True) == (info.held, locks.holder_is_self(info))


def test_holder_is_self_needs_pid_and_host(tmp_path: Path) -> None:
    """holder_is_self is false for another pid or another host."""
    other_pid = LockInfo(held=True, pid=os.getpid() + 1, host=HOST, acquired_at=AT,
                         suspicious=False)
    other_host = LockInfo(held=True, pid=os.getpid(), host=HOST + ".elsewhere", acquired_at=AT,
                          suspicious=False)
    assert (False, False) == (locks.holder_is_self(other_pid), locks.holder_is_self(other_host))


def test_status_reports_young_upstream_dir_as_held(tmp_path: Path) -> None:
    """A young upstream lock directory is shown as held, since its mtime."""
    upstream = tmp_path / "routine-run.lock"
    upstream.mkdir()
    set_mtime(upstream, AT_DT.timestamp())
    info = locks.routine_lock_status(tmp_path, now=AT_DT + timedelta(minutes=5))
    assert LockInfo(held=True, pid=None, host=None, acquired_at=AT, suspicious=False) == info


def test_status_ignores_old_upstream_dir(tmp_path: Path) -> None:
    """An upstream lock directory older than 1 hour is not a holder."""
    upstream = tmp_path / "routine-run.lock"
    upstream.mkdir()
    set_mtime(upstream, AT_DT.timestamp())
    assert not locks.routine_lock_status(tmp_path, now=AT_DT + timedelta(minutes=61)).held


def test_status_never_creates_files(tmp_path: Path) -> None:
    """Status on a missing or empty locks directory writes nothing."""
    missing = tmp_path / "missing" / ".locks"
    empty = tmp_path / "empty"
    empty.mkdir()
    locks.routine_lock_status(missing, now=AT_DT)
    locks.routine_lock_status(empty, now=AT_DT)
    assert (False, []) == (missing.parent.exists(), os.listdir(empty))


def test_status_without_proc_locks_probes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without /proc/locks the shared probe still tells held from free."""
    monkeypatch.setattr(locks, "_PROC_LOCKS", tmp_path / "no-proc-locks")
    locks_dir = tmp_path / "locks"
    with holder("routine-hold", locks_dir, AT) as (_proc, _line):
        held = locks.routine_lock_status(locks_dir, now=AT_DT).held
    assert (True, False) == (held, locks.routine_lock_status(locks_dir, now=AT_DT).held)


def test_proc_locks_line_matches_device_and_inode() -> None:
    """A granted lock on the same device and inode counts as held; a waiter line does not."""
    dev = os.makedev(0xFE, 0)
    granted = "1: FLOCK  ADVISORY  WRITE 5693 fe:00:5308499 0 EOF\n"
    waiter = "1: -> FLOCK  ADVISORY  WRITE 5694 fe:00:5308499 0 EOF\n"
    results = [
        locks.held_in_proc_locks(granted, dev=dev, ino=5308499, pid_hint=None),
        locks.held_in_proc_locks(waiter, dev=dev, ino=5308499, pid_hint=None),
        locks.held_in_proc_locks(granted, dev=dev, ino=5308498, pid_hint=None),
    ]
    assert [True, False, False] == results


def test_proc_locks_line_on_other_device_needs_holder_pid() -> None:
    """On overlayfs the devices differ: the inode plus the recorded holder pid decide."""
    dev = os.makedev(0, 0x2A)
    table = "7: FLOCK  ADVISORY  WRITE 5693 fe:00:5308499 0 EOF\n"
    results = [
        locks.held_in_proc_locks(table, dev=dev, ino=5308499, pid_hint=5693),
        locks.held_in_proc_locks(table, dev=dev, ino=5308499, pid_hint=5000),
    ]
    assert [True, False] == results


@pytest.mark.parametrize("mode", ["proc-locks", "probe"])
def test_status_probes_never_make_an_acquirer_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """A tight loop of status checks never makes a concurrent acquirer fail."""
    if mode == "probe":
        monkeypatch.setattr(locks, "_PROC_LOCKS", tmp_path / "no-proc-locks")
    locks_dir = tmp_path / "locks"
    proc = spawn("routine-cycle", locks_dir, 300)
    seen: set[bool] = set()
    while proc.poll() is None:
        seen.add(locks.routine_lock_status(locks_dir, now=datetime.now(UTC)).held)
    assert ("0", {True, False}) == (first_line(proc), seen)
    finish(proc)


# --------------------------------------------------------------------------- exec lock

TOKEN_RE = re.compile(r"^\d+-[0-9a-f]{16}$")
STAMP_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def owner_of(lock_dir: Path) -> dict[str, object]:
    data = json.loads((lock_dir / "owner.json").read_text())
    assert isinstance(data, dict)
    return data


def make_lock(locks_dir: Path, *, pid: int, host: str | None = HOST, token: str = "1-ab",
              acquired_at: str = AT) -> Path:
    """A lock directory as another process (or upstream, with host=None) would leave it."""
    lock_dir = locks_dir / "exec-run.lock"
    lock_dir.mkdir(parents=True)
    owner: dict[str, object] = {"actor": "other", "pid": pid, "token": token,
                                "acquired_at_utc": acquired_at}
    if host is not None:
        owner["host"] = host
    (lock_dir / "owner.json").write_text(json.dumps(owner, indent=2) + "\n")
    return lock_dir


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_exec_lock_is_a_directory_with_owner(tmp_path: Path) -> None:
    """Acquiring makes exec-run.lock/ with owner.json {actor, pid, token, acquired_at_utc, host}."""
    with execlock.exec_lock(tmp_path, actor="routine", env={}) as handle:
        owner = owner_of(tmp_path / "exec-run.lock")
    shape = (
        list(owner),
        owner["actor"],
        owner["pid"],
        owner["host"],
        owner["token"] == handle.token,
        bool(TOKEN_RE.match(handle.token)),
        bool(STAMP_RE.match(str(owner["acquired_at_utc"]))),
        handle.path,
        handle.inherited,
    )
    expected = (
        ["actor", "pid", "token", "acquired_at_utc", "host", "start"],
        "routine",
        os.getpid(),
        HOST,
        True,
        True,
        True,
        tmp_path / "exec-run.lock",
        False,
    )
    assert expected == shape


def test_unusable_exec_locks_dir_is_a_routine_error(tmp_path: Path) -> None:
    """An exec locks directory that cannot be created is a one-line RoutineError."""
    (tmp_path / "file").write_text("")
    locks_dir = tmp_path / "file" / ".locks"
    with pytest.raises(errors.RoutineError) as caught, execlock.exec_lock(
        locks_dir, actor="x", env={}
    ):
        pass
    assert str(caught.value).startswith(f"cannot use the lock {locks_dir / 'exec-run.lock'}: ")


def test_exec_lock_is_removed_on_exit(tmp_path: Path) -> None:
    """Leaving the block removes the lock directory (and nothing is left beside it)."""
    with execlock.exec_lock(tmp_path, actor="routine", env={}):
        pass
    assert ["exec-run.takeover.flock"] == os.listdir(tmp_path)


def test_exec_lock_is_busy_while_another_process_holds_it(tmp_path: Path) -> None:
    """A live holder in another process makes exec_lock raise ExecLockBusy (exit 75)."""
    with holder("exec-hold", tmp_path) as (proc, _token):
        since = owner_of(tmp_path / "exec-run.lock")["acquired_at_utc"]
        with pytest.raises(execlock.ExecLockBusy) as caught, execlock.exec_lock(
            tmp_path, actor="routine", env={}
        ):
            pass
    expected = (
        f"Exec run is busy for this project (lock: {tmp_path / 'exec-run.lock'}, "
        f"holder lockhelper pid {proc.pid} on {HOST} since {since})"
    )
    assert (expected, 75) == (str(caught.value), caught.value.exit_code)


def test_busy_exec_lock_is_left_untouched(tmp_path: Path) -> None:
    """A refused acquirer leaves the holder's lock and owner as they were."""
    lock_dir = make_lock(tmp_path, pid=os.getpid())
    before = (lock_dir / "owner.json").read_bytes()
    with pytest.raises(execlock.ExecLockBusy), execlock.exec_lock(tmp_path, actor="x", env={}):
        pass
    assert before == (lock_dir / "owner.json").read_bytes()


def test_exec_lock_without_owner_metadata_is_busy_while_fresh(tmp_path: Path) -> None:
    """A fresh directory without owner.json (mkdir just happened) is busy."""
    (tmp_path / "exec-run.lock").mkdir()
    with pytest.raises(execlock.ExecLockBusy) as caught, execlock.exec_lock(
        tmp_path, actor="x", env={}
    ):
        pass
    assert str(caught.value).endswith("holder unknown (owner metadata unavailable))")


def test_stale_mtime_lock_is_taken_over(tmp_path: Path) -> None:
    """A lock of another host whose mtime is older than stale_s is taken over (its pid
    cannot be checked: the timeout is all there is); a live owner on this host never is."""
    lock_dir = make_lock(tmp_path, pid=os.getpid(), host="elsewhere.example")
    set_mtime(lock_dir, time.time() - 31)
    with execlock.exec_lock(tmp_path, actor="routine", env={}) as handle:
        token = owner_of(lock_dir)["token"]
    assert handle.token == token


def test_dead_pid_on_this_host_is_taken_over_at_once(tmp_path: Path) -> None:
    """A SIGKILLed holder's fresh lock is taken over without waiting for staleness."""
    proc = spawn("exec-hold", tmp_path)
    old_token = first_line(proc)
    proc.kill()
    finish(proc)
    with execlock.exec_lock(tmp_path, actor="routine", env={}) as handle:
        pass
    assert (True, False) == (bool(TOKEN_RE.match(old_token)), handle.token == old_token)


def test_killed_holder_not_yet_reaped_counts_as_dead(tmp_path: Path) -> None:
    """A zombie holder (killed, its parent has not waited yet) is dead: taken over at once."""
    proc = spawn("exec-hold", tmp_path)
    first_line(proc)
    proc.kill()
    deadline = time.monotonic() + 5
    while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        with execlock.exec_lock(tmp_path, actor="routine", env={}) as handle:
            assert not handle.inherited
    finally:
        finish(proc)


def test_dead_pid_of_upstream_owner_without_host_is_taken_over(tmp_path: Path) -> None:
    """An upstream owner.json has no host: it means this host, so a dead pid is stale."""
    make_lock(tmp_path, pid=dead_pid(), host=None)
    with execlock.exec_lock(tmp_path, actor="routine", env={}) as handle:
        assert handle.token == owner_of(handle.path)["token"]


def test_dead_pid_on_other_host_stays_busy_until_stale(tmp_path: Path) -> None:
    """A pid on another host cannot be checked: only the mtime makes that lock stale."""
    make_lock(tmp_path, pid=dead_pid(), host="elsewhere.example")
    with pytest.raises(execlock.ExecLockBusy), execlock.exec_lock(tmp_path, actor="x", env={}):
        pass


def test_heartbeat_advances_mtime(tmp_path: Path) -> None:
    """While held, the heartbeat keeps touching the lock directory's mtime."""
    with execlock.exec_lock(tmp_path, actor="routine", env={}, heartbeat_s=0.02) as handle:
        set_mtime(handle.path, time.time() - 20)
        deadline = time.monotonic() + 5
        while time.time() - handle.path.stat().st_mtime > 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        age = time.time() - handle.path.stat().st_mtime
    assert age < 5


def test_heartbeat_stops_on_exit(tmp_path: Path) -> None:
    """No heartbeat thread is left running after the block."""
    with execlock.exec_lock(tmp_path, actor="routine", env={}, heartbeat_s=0.02):
        running = [t.name for t in threading.enumerate() if t.name == execlock.HEARTBEAT_THREAD]
    after = [t.name for t in threading.enumerate() if t.name == execlock.HEARTBEAT_THREAD]
    assert ([execlock.HEARTBEAT_THREAD], []) == (running, after)


def test_heartbeat_stops_touching_a_lock_that_is_no_longer_ours(tmp_path: Path) -> None:
    """Once owner.json carries another token, the heartbeat leaves the directory alone."""
    with execlock.exec_lock(tmp_path, actor="routine", env={}, heartbeat_s=0.02) as handle:
        owner = owner_of(handle.path)
        owner["token"] = "999-other"
        (handle.path / "owner.json").write_text(json.dumps(owner))
        time.sleep(0.1)
        set_mtime(handle.path, time.time() - 20)
        time.sleep(0.1)
        age = time.time() - handle.path.stat().st_mtime
    assert age > 19


def test_inherited_token_shares_the_lock(tmp_path: Path) -> None:
    """A nested call with the owner's token shares the lock and does not release it."""
    with holder("exec-hold", tmp_path) as (_proc, token):
        env = {execlock.EXEC_LOCK_TOKEN_ENV: token}
        with execlock.exec_lock(tmp_path, actor="nested", env=env) as handle:
            pass
        after = owner_of(tmp_path / "exec-run.lock")["token"]
    assert (token, True, token) == (handle.token, handle.inherited, after)


def test_foreign_inherited_token_is_busy(tmp_path: Path) -> None:
    """A token that is not the owner's does not share the lock."""
    with holder("exec-hold", tmp_path) as (_proc, _token):
        env = {execlock.EXEC_LOCK_TOKEN_ENV: "1-0000000000000000"}
        with pytest.raises(execlock.ExecLockBusy), execlock.exec_lock(tmp_path, actor="x", env=env):
            pass


def test_release_removes_only_our_own_lock(tmp_path: Path) -> None:
    """If the lock was taken over meanwhile, leaving the block keeps the new owner's lock."""
    with execlock.exec_lock(tmp_path, actor="routine", env={}) as handle:
        owner = owner_of(handle.path)
        owner["token"] = "999-new-owner"
        (handle.path / "owner.json").write_text(json.dumps(owner))
    assert "999-new-owner" == owner_of(handle.path)["token"]


@pytest.mark.parametrize("staleness", ["mtime", "dead-pid"])
def test_racing_takeovers_of_one_stale_lock_have_one_winner(tmp_path: Path, staleness: str) -> None:
    """Several processes taking over the same stale lock at once: exactly one wins."""
    outcomes = []
    for round_no in range(3):
        locks_dir = tmp_path / f"round-{round_no}"
        if staleness == "mtime":
            set_mtime(make_lock(locks_dir, pid=os.getpid(), host="elsewhere.example"),
                      time.time() - 60)
        else:
            make_lock(locks_dir, pid=dead_pid())
        go = tmp_path / f"go-{round_no}"
        racers = [spawn("exec-race", locks_dir, go) for _ in range(3)]
        assert ["ready"] * 3 == [first_line(p) for p in racers]
        go.touch()
        outcomes.append(sorted(first_line(p) for p in racers))
        for p in racers:
            finish(p)
    assert [["busy", "busy", "won"]] * 3 == outcomes


def test_exec_lock_times_are_utc_seconds(tmp_path: Path) -> None:
    """acquired_at_utc is the upstream format, UTC without fractions, close to now."""
    before = datetime.now(UTC).replace(microsecond=0)
    with execlock.exec_lock(tmp_path, actor="routine", env={}) as handle:
        stamp = timefmt.parse_instant(str(owner_of(handle.path)["acquired_at_utc"]))
    assert before <= stamp <= datetime.now(UTC)


def test_slow_takeover_cannot_rob_a_concurrent_takeover(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A take-over that judged the lock stale re-checks under the mutex: no double winner."""
    lock_dir = make_lock(tmp_path, pid=os.getpid(), host="elsewhere.example")
    set_mtime(lock_dir, time.time() - 60)
    go = tmp_path / "go"
    racer = spawn("exec-race", tmp_path, go)
    assert "ready" == first_line(racer)
    judge = execlock._exec_lock_stale

    def slow_judge(path: Path, stale_s: float) -> bool:
        verdict = judge(path, stale_s)
        go.touch()  # the racer attempts while this process sits between verdict and rename
        time.sleep(0.5)
        return verdict

    monkeypatch.setattr(execlock, "_exec_lock_stale", slow_judge)
    with execlock.exec_lock(tmp_path, actor="slow", env={}) as handle:
        racer_result = first_line(racer)
        token = owner_of(lock_dir)["token"]
    finish(racer)
    assert ("busy", handle.token) == (racer_result, token)


@pytest.mark.parametrize("proc_locks", [True, False])
def test_status_soon_is_the_status_and_starts_no_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, proc_locks: bool
) -> None:
    """``status_soon`` (what `list` and the dry run use) gives what ``routine_lock_status``
    gives, held and free, with /proc/locks or the probe, in this thread (SPEC §12: no thread
    started for speed), importing nothing."""
    if not proc_locks:
        monkeypatch.setattr(locks, "_PROC_LOCKS", tmp_path / "no-proc-locks")
    locks_dir = tmp_path / "locks"
    seen = []
    with holder("routine-hold", locks_dir, AT) as (_proc, _line):
        before, threads = set(sys.modules), threading.active_count()
        soon = locks.status_soon(locks_dir, now=AT_DT)
        assert threads == threading.active_count()
        imported_meanwhile = set(sys.modules) - before
        seen.append((soon(), locks.routine_lock_status(locks_dir, now=AT_DT)))
    seen.append((locks.status_soon(locks_dir, now=AT_DT)(),
                 locks.routine_lock_status(locks_dir, now=AT_DT)))
    assert [(True, True), (False, False)] == [(a.held, b.held) for a, b in seen]
    assert [a == b for a, b in seen] == [True, True]
    assert set() == imported_meanwhile


def test_status_soon_is_the_state_when_it_was_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``status_soon`` answers is the lock as it was when asked (right after the caller
    read its view), not when the answer is taken: here the probe of a system without
    /proc/locks, whose holder lets go in between."""
    monkeypatch.setattr(locks, "_PROC_LOCKS", tmp_path / "no-proc-locks")
    locks_dir = tmp_path / "locks"
    with holder("routine-hold", locks_dir, AT) as (proc, _line):
        soon = locks.status_soon(locks_dir, now=AT_DT)
    assert proc.poll() is not None  # the holder is gone, and the lock with it
    assert (True, proc.pid, False) == (
        soon().held, soon().pid, locks.routine_lock_status(locks_dir, now=AT_DT).held)


@pytest.mark.parametrize(("command", "expected"), [
    ("list", ["view", "lock", "definitions"]), ("dry run", ["definitions", "view", "lock"])])
def test_list_and_dry_run_read_the_lock_right_after_the_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, expected: list[str]
) -> None:
    """The lock status is asked for right after the view is read (an attempt the view shows
    open while the lock is free is interrupted, so the lock must not be older than the view).
    `list` then loads the definitions, so the kernel's wait on /proc/locks overlaps them; the
    dry run loads them first, as a run does, so it refuses an unknown routine as a run
    does."""

    from specdojo_routine.app import handlers, listing
    from specdojo_routine.store.config import resolve_project
    from specdojo_routine.store.definitions import load as definitions
    from specdojo_routine.store.ledger import adopt
    from tests.conftest import REPO, copy_source

    root = tmp_path / "demo"
    copy_source(REPO / "fixtures" / "demo", root)
    order: list[str] = []

    def noting(name: str, real: Callable[..., object]) -> Callable[..., object]:
        def call(*args: object, **kwargs: object) -> object:
            order.append(name)
            return real(*args, **kwargs)
        return call

    if command == "list":  # the view (which a project never run has without a fold)
        monkeypatch.setattr(listing, "routine_states",
                            noting("view", listing.routine_states))
    else:
        monkeypatch.setattr(adopt, "plan_routine_imports",
                            noting("view", adopt.plan_routine_imports))
    monkeypatch.setattr(locks, "status_soon", noting("lock", locks.status_soon))
    monkeypatch.setattr(definitions, "load_definitions",
                        noting("definitions", definitions.load_definitions))
    paths = resolve_project(root)
    if command == "list":
        listing.list_routines(paths, now=AT_DT)
    else:
        handlers.run(paths, dry_run=True, now=AT_DT, env={})
    assert expected == order


@pytest.mark.parametrize(("where", "age_s", "taken_over"), [
    ("another host", 31, True), ("another host", 20, False),
    ("this host", 31, False), ("this host", 3600, False)])
def test_only_a_holder_whose_liveness_cannot_be_checked_ages_out(
    tmp_path: Path, where: str, age_s: int, taken_over: bool
) -> None:
    """A real live process holds the exec lock and its heartbeat is old (mtime set back with
    os.utime): on another host the 30 s rule is all there is, so it is taken over after 30 s;
    on this host it is alive (it started before the lock was acquired, so it may hold it),
    and a live holder is never robbed, whatever the heartbeat's age (SPEC §7.7)."""
    live = subprocess.Popen(["sleep", "60"])
    acquired = (datetime.now(UTC) + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        lock_dir = make_lock(tmp_path, pid=live.pid, acquired_at=acquired,
                             host="elsewhere.example" if where == "another host" else HOST)
        set_mtime(lock_dir, time.time() - age_s)
        try:
            with execlock.exec_lock(tmp_path, actor="routine", env={}) as handle:
                pass
            outcome = handle.token != "1-ab"
        except execlock.ExecLockBusy:
            outcome = False
            assert "1-ab" == owner_of(lock_dir)["token"]  # left as it was
    finally:
        live.kill()
        live.wait()
    assert taken_over == outcome


# --------------------------------------------------------------------------- symbolic links


PRECIOUS = b"somebody's data\n"


@pytest.mark.parametrize("target_exists", [True, False])
def test_a_symbolic_link_as_the_lock_file_is_refused(tmp_path: Path, target_exists: bool) -> None:
    """`routine-run.flock` is a symbolic link: the lock is refused in one line saying what to
    do, and the file it points to is neither truncated, written nor created."""
    target = tmp_path / "elsewhere" / "precious.txt"
    target.parent.mkdir()
    if target_exists:
        target.write_bytes(PRECIOUS)
    locks_dir = tmp_path / "locks"
    locks_dir.mkdir()
    (locks_dir / "routine-run.flock").symlink_to(target)
    with pytest.raises(errors.RoutineError) as caught, locks.routine_lock(locks_dir):
        pass
    assert str(caught.value) == (
        f"cannot use the lock {locks_dir / 'routine-run.flock'}: it is a symbolic link, and a "
        "lock file is never written through one (remove the link and run the command again)")
    assert (PRECIOUS if target_exists else None) == (
        target.read_bytes() if target.exists() else None)
    assert not (locks_dir / "routine-run.lock").exists()


def test_run_refuses_a_symbolic_link_as_the_lock_file(project: Project) -> None:
    """The same through the CLI: `run` exits 1 with one `error:` line, runs and records
    nothing, and the linked file keeps its content."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    target = project.root / "precious.txt"
    target.write_bytes(PRECIOUS)
    locks_dir = project.root / "routines" / ".locks"
    locks_dir.mkdir()
    (locks_dir / "routine-run.flock").symlink_to(target)
    done = project.cli("run", "--due")
    [line] = done.stderr.splitlines()
    assert (1, PRECIOUS, [], []) == (done.returncode, target.read_bytes(), project.calls(),
                                     project.events()), done.stderr
    assert line.startswith("error: cannot use the lock ") and "symbolic link" in line


def _planting(monkeypatch: pytest.MonkeyPatch, dir_name: str, link_name: str,
              target: Path) -> None:
    """Right after ``mkdir`` of ``dir_name``, plant ``link_name`` inside it, pointing at
    ``target`` (what a hostile or confused process could do in that moment)."""
    real_mkdir = os.mkdir

    def mkdir(path: object, *args: object, **kwargs: object) -> None:
        real_mkdir(path, *args, **kwargs)  # type: ignore[arg-type]
        if Path(str(path)).name == dir_name:
            (Path(str(path)) / link_name).symlink_to(target)

    monkeypatch.setattr(os, "mkdir", mkdir)


def test_the_announced_owner_is_never_written_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link named owner.json appears in the directory we just made: our owner.json
    replaces the link (a new file renamed into place) and the linked file is untouched."""
    target = tmp_path / "precious.txt"
    target.write_bytes(PRECIOUS)
    locks_dir = tmp_path / "locks"
    _planting(monkeypatch, "routine-run.lock", "owner.json", target)
    with locks.routine_lock(locks_dir, clock=fixed_clock()):
        owner = locks_dir / "routine-run.lock" / "owner.json"
        shape = (owner.is_symlink(), json.loads(owner.read_bytes())["pid"])
    assert ((False, os.getpid()), PRECIOUS) == (shape, target.read_bytes())


def test_the_exec_owner_is_never_written_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link where the exec lock writes its owner record first: refused (one line), the
    linked file untouched, no lock left behind."""
    target = tmp_path / "precious.txt"
    target.write_bytes(PRECIOUS)
    monkeypatch.setattr(execlock.secrets, "token_hex", lambda n: "0" * (2 * n))
    _planting(monkeypatch, "exec-run.lock", f".owner.json.{os.getpid()}-{'0' * 16}.tmp", target)
    with pytest.raises(errors.RoutineError) as caught, execlock.exec_lock(
            tmp_path / "exec", actor="x", env={}):
        pass
    lock_dir = tmp_path / "exec" / "exec-run.lock"
    assert str(caught.value).startswith(f"cannot use the lock {lock_dir}: ")
    assert (PRECIOUS, False) == (target.read_bytes(), lock_dir.exists())


def test_a_symbolic_link_as_the_exec_takeover_file_is_refused(tmp_path: Path) -> None:
    """`exec-run.takeover.flock` is a link (to a file that does not exist): the exec lock is
    refused before it is taken, and nothing is created where the link points."""
    target = tmp_path / "created-through-the-link"
    locks_dir = tmp_path / "exec"
    locks_dir.mkdir()
    (locks_dir / "exec-run.takeover.flock").symlink_to(target)
    with pytest.raises(errors.RoutineError) as caught, execlock.exec_lock(
            locks_dir, actor="x", env={}):
        pass
    assert "symbolic link" in str(caught.value)
    assert (False, False) == (target.exists(), (locks_dir / "exec-run.lock").exists())


def test_the_exec_lock_beats_every_5_s_and_goes_stale_after_30_s() -> None:
    """SPEC §7.7: the mtime heartbeat of the exec lock every 5 s, stale after 30 s - the
    figures upstream takes a silent lock over by, so a live holder of ours always beats first.
    Every other test runs faster heartbeats: this holds the defaults the commands use."""
    import inspect

    defaults = {name: p.default for name, p in inspect.signature(execlock.exec_lock).parameters
                .items() if name in ("heartbeat_s", "stale_s")}
    assert {"heartbeat_s": 5.0, "stale_s": 30.0} == defaults
