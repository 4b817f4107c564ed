"""SPEC §6.2 / §10 rule 5: while our run holds the routine flock it also holds the upstream
CLI's ``routine-run.lock/`` directory, so the upstream CLI sees it busy; a directory our own
crash left behind is recognised and removed by our next run."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import orjson
from conftest import Project


def _lock_dir(project: Project) -> Path:
    return project.root / "routines" / ".locks" / "routine-run.lock"


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _slow(project: Project) -> None:
    project.routine("rtn-slow", "interval: 1h\naction: {kind: specdojo, args: [sleep-3]}\n")


def test_our_held_lock_is_the_upstream_directory_during_a_run(project: Project) -> None:
    """During a real run (slow fake CLI) the upstream directory exists with our owner.json,
    an upstream-style mkdir fails with EEXIST, and the directory is gone afterwards."""
    _slow(project)
    proc = project.popen("run", "--due")
    owner_file = _lock_dir(project) / "owner.json"
    _wait_for(owner_file, proc)
    owner = orjson.loads(owner_file.read_bytes())
    assert ({"tool", "pid", "host", "acquired_at"}, "specdojo_routine", proc.pid,
            socket.gethostname()) == (set(owner), owner["tool"], owner["pid"], owner["host"])
    try:
        os.mkdir(_lock_dir(project))  # what the upstream CLI does to take its lock
        raise AssertionError("upstream could take the lock while we run")
    except FileExistsError:
        pass
    out, err = proc.communicate(timeout=60)
    assert 0 == proc.returncode, out + err
    assert not _lock_dir(project).exists()


def test_a_directory_left_by_our_crash_is_removed_by_the_next_run(project: Project) -> None:
    """SIGKILL mid-run leaves our directory (our tool, this host, a dead pid, flock free):
    list does not call it held, and the next run removes it and runs."""
    _slow(project)
    proc = project.popen("run", "--due")
    _wait_for(_lock_dir(project) / "owner.json", proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert _lock_dir(project).is_dir()
    listing = orjson.loads(project.cli("list", "--json").stdout)
    assert not listing["lock"]["held"]
    project.cli("resolve", "rtn-slow", "--result", "failure", "--note", "killed in a test")
    again = project.cli("run", "--id", "rtn-slow")
    assert 0 == again.returncode, again.stderr
    assert not _lock_dir(project).exists()


def test_a_young_directory_of_another_tool_is_busy(project: Project) -> None:
    """An upstream directory (no owner.json, a minute old) makes run exit 75, record nothing,
    and leaves the directory alone."""
    _slow(project)
    _lock_dir(project).mkdir(parents=True)
    proc = project.cli("run", "--due")
    assert (75, True) == (proc.returncode, _lock_dir(project).is_dir()), proc.stderr
    assert [] == project.events()


def test_a_live_run_of_ours_on_another_host_is_busy(project: Project) -> None:
    """A young directory whose owner.json names our tool on another host is not ours to
    remove: busy, with that holder in the message."""
    _slow(project)
    _lock_dir(project).mkdir(parents=True)
    (_lock_dir(project) / "owner.json").write_bytes(orjson.dumps(
        {"tool": "specdojo_routine", "pid": 1, "host": "elsewhere", "acquired_at": "x"}))
    proc = project.cli("run", "--due")
    assert 75 == proc.returncode, proc.stderr
    assert "holder pid 1 on elsewhere since" in proc.stderr
