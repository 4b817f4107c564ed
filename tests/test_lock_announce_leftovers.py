"""SPEC §6.2 / §7.7: what a crash of ours leaves in the upstream ``routine-run.lock/`` never
blocks the next run, even when its pid has been given to another process since (a reused pid
is another process: the start time recorded beside it tells them apart) - while a live holder
is never robbed. Real processes throughout: the runner, the process holding a recycled pid."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from conftest import Project

from specdojo_routine.store.locks import routine as locks

_TOOL = "specdojo_routine"

# Writes the owner.json a crashed run of ours would have left, naming this very process, then
# becomes the runner with exec: the runner has exactly the pid the dead owner recorded (as in a
# container where the runner always gets the same small pid).
_SAME_PID = """
import json, os, socket, sys
from specdojo_routine.store.locks import routine as locks
lock, start = sys.argv[1], sys.argv[2]
owner = {"tool": "specdojo_routine", "pid": os.getpid(), "host": socket.gethostname(),
         "acquired_at": "2026-12-06T00:00:00Z"}
if start != "none":
    owner["start"] = locks.process_start(os.getpid()) + (0 if start == "own" else 1)
with open(os.path.join(lock, "owner.json"), "w") as f:
    json.dump(owner, f)
os.execv(sys.executable, [sys.executable, "-m", "specdojo_routine", *sys.argv[3:]])
"""


def _lock_dir(project: Project) -> Path:
    return project.root / "routines" / ".locks" / "routine-run.lock"


def _one(project: Project) -> None:
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")


def _run(project: Project) -> subprocess.CompletedProcess[str]:
    return project.cli("run", "--due", process=True)


def _held(project: Project) -> bool:
    held = orjson.loads(project.cli("list", "--json", process=True).stdout)["lock"]["held"]
    assert isinstance(held, bool)
    return held


@pytest.fixture
def live() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated live process: the one a recycled pid now belongs to."""
    proc = subprocess.Popen(["sleep", "300"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _owner(pid: int, **more: object) -> bytes:
    return orjson.dumps({"tool": _TOOL, "pid": pid, "host": socket.gethostname(),
                         "acquired_at": "2026-12-06T00:00:00Z", **more})


# --------------------------------------------------------------------------- owner.json


@pytest.mark.parametrize("start", ["none", "own", "other"])
def test_a_leftover_naming_the_runners_own_pid_is_removed(project: Project, start: str) -> None:
    """The crashed run's pid is now the next runner's own (an older version's owner.json with
    no start, one whose start is the runner's, one whose start is another's): the runner is
    not a live other holder, so it removes the leftover and runs (it exited 75 naming itself
    as the holder)."""
    _one(project)
    _lock_dir(project).mkdir(parents=True)
    done = subprocess.run(
        [sys.executable, "-c", _SAME_PID, str(_lock_dir(project)), start, "run", "--due",
         "--root", str(project.root)],
        cwd=project.root, env=project.env(), capture_output=True, text=True, timeout=60)
    assert (0, 1, False) == (done.returncode, len(project.calls()),
                             _lock_dir(project).exists()), done.stderr


def test_a_leftover_whose_pid_another_process_reused_is_removed(
    project: Project, live: subprocess.Popen[bytes]
) -> None:
    """Our tool, this host, and a pid that is now an unrelated live process, which started
    after the recorded start: the recorded owner is dead. list does not call the lock held,
    and the next run removes the leftover and runs; the process with the pid is left alone."""
    _one(project)
    start = locks.process_start(live.pid)
    assert start is not None
    _lock_dir(project).mkdir(parents=True)
    (_lock_dir(project) / "owner.json").write_bytes(_owner(live.pid, start=start - 1))
    assert not _held(project)
    done = _run(project)
    assert (0, 1, False, None) == (done.returncode, len(project.calls()),
                                   _lock_dir(project).exists(), live.poll()), done.stderr


def test_a_live_owner_with_its_start_is_never_robbed(
    project: Project, live: subprocess.Popen[bytes]
) -> None:
    """Our tool, this host, a live pid that started when recorded: a live holder, busy (75),
    nothing run, the directory untouched; list calls it held."""
    _one(project)
    owner = _owner(live.pid, start=locks.process_start(live.pid))
    _lock_dir(project).mkdir(parents=True)
    (_lock_dir(project) / "owner.json").write_bytes(owner)
    assert _held(project)
    done = _run(project)
    assert (75, [], owner) == (done.returncode, project.calls(),
                               (_lock_dir(project) / "owner.json").read_bytes()), done.stderr
    assert f"holder pid {live.pid} on {socket.gethostname()} since" in done.stderr


def test_our_owner_json_records_the_start_of_the_run(project: Project) -> None:
    """What a run writes names its process's start time, so that the next run can tell the
    run from a process that got its pid later."""
    project.routine("rtn-slow", "interval: 1h\naction: {kind: specdojo, args: [sleep-3]}\n")
    proc = project.popen("run", "--due")
    owner_file = _lock_dir(project) / "owner.json"
    try:
        while not owner_file.exists():
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        owner = orjson.loads(owner_file.read_bytes())
        assert (proc.pid, locks.process_start(proc.pid)) == (owner["pid"], owner["start"])
    finally:
        out, err = proc.communicate(timeout=60)
    assert 0 == proc.returncode, out + err


# --------------------------------------------------------------------------- owner.json unfinished


def _unfinished(project: Project, pid: int, content: bytes) -> None:
    """What a run of ours killed between its mkdir and the rename of owner.json leaves: the
    directory holding only the temporary named with its pid."""
    _lock_dir(project).mkdir(parents=True)
    (_lock_dir(project) / f".owner.json.{pid}.tmp").write_bytes(content)


def test_a_directory_our_run_left_unfinished_with_a_dead_pid_is_removed(
    project: Project,
) -> None:
    """Only ``.owner.json.<pid>.tmp`` (empty: killed before it wrote), its pid dead: list does
    not call the lock held and the next run removes the directory and runs (it was busy for an
    hour)."""
    _one(project)
    _unfinished(project, _dead_pid(), b"")
    assert not _held(project)
    done = _run(project)
    assert (0, 1, False) == (done.returncode, len(project.calls()),
                             _lock_dir(project).exists()), done.stderr


@pytest.mark.parametrize("content", ["empty", "record"])
def test_a_directory_our_run_left_unfinished_is_ours_under_our_flock(
    project: Project, live: subprocess.Popen[bytes], content: str
) -> None:
    """The temporary's pid is a live process now (an unrelated one; its record written in full
    even names that process's start): the run holding the flock removes it all the same, as
    the run that made it would hold the flock. Without the flock (list) a live pid counts."""
    _one(project)
    record = _owner(live.pid, start=locks.process_start(live.pid))
    _unfinished(project, live.pid, b"" if content == "empty" else record)
    assert _held(project)
    done = _run(project)
    assert (0, 1, False, None) == (done.returncode, len(project.calls()),
                                   _lock_dir(project).exists(), live.poll()), done.stderr


@pytest.mark.parametrize("names", [(".owner.json.{pid}.tmp", "notes.txt"),
                                   (".owner.json.0{pid}.tmp",), ("owner.json.{pid}.tmp",)])
def test_a_directory_holding_more_or_other_than_our_temporary_is_busy(
    project: Project, names: tuple[str, ...]
) -> None:
    """A temporary of ours beside anything else, or alone a name ours would never have (its
    pid a dead one): not proved ours, so a young directory is busy (75) and left as it is."""
    _one(project)
    lock = _lock_dir(project)
    lock.mkdir(parents=True)
    pid = _dead_pid()
    for name in names:
        (lock / name.format(pid=pid)).write_bytes(b"")
    before = sorted(os.listdir(lock))
    done = _run(project)
    assert (75, [], before) == (done.returncode, project.calls(), sorted(os.listdir(lock)))
