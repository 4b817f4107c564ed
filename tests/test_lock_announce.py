"""SPEC §6.2 / §10 rule 5: while our run holds the routine flock it also holds the upstream
CLI's ``routine-run.lock/`` directory, so the upstream CLI sees it busy; a directory our own
crash left behind is recognised and removed by our next run, a stale one is renamed aside, one
upstream makes while we claim is never touched, the held one is kept fresh, and a run that
cannot announce itself runs nothing and leaves nothing."""

from __future__ import annotations

import errno
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from conftest import Project, tmpfs_at

from specdojo_routine.core import errors
from specdojo_routine.store.locks import announce
from specdojo_routine.store.locks import routine as locks


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
    assert ({"tool", "pid", "host", "acquired_at", "start"}, "specdojo_routine", proc.pid,
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
    """SIGKILL mid-run (its action running) leaves our directory (our tool, this host, a dead
    pid, flock free): list does not call it held, and the next run removes it and runs (once
    the killed run's action has ended and its attempt is resolved)."""
    _slow(project)
    proc = project.popen("run", "--due")
    _wait_for(project.log, proc)  # the action runs: the attempt is recorded, the dir announced
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert _lock_dir(project).is_dir()
    listing = orjson.loads(project.cli("list", "--json").stdout)
    assert not listing["lock"]["held"]
    deadline = time.monotonic() + 30  # resolve waits for the orphaned action (sleep-3) to end
    while project.cli("resolve", "rtn-slow", "--result", "failure",
                      "--note", "killed in a test").returncode != 0:
        assert time.monotonic() < deadline, "the killed run's attempt could not be resolved"
        time.sleep(0.5)
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


def test_a_directory_of_ours_on_this_host_whose_pid_lives_is_busy(project: Project) -> None:
    """Our tool and this host, but its pid is a live process (not the flock's holder): not
    proved left by a crash, so busy (75), nothing recorded, the directory untouched."""
    _slow(project)
    live = subprocess.Popen(["sleep", "60"])
    try:
        _lock_dir(project).mkdir(parents=True)
        owner = orjson.dumps({"tool": "specdojo_routine", "pid": live.pid,
                              "host": socket.gethostname(), "acquired_at": "2026-08-07T08:02:00Z"})
        (_lock_dir(project) / "owner.json").write_bytes(owner)
        proc = project.cli("run", "--due")
        assert 75 == proc.returncode, proc.stderr
        assert f"holder pid {live.pid} on {socket.gethostname()} since" in proc.stderr
        assert ([], owner) == (project.events(), (_lock_dir(project) / "owner.json").read_bytes())
    finally:
        live.kill()
        live.wait()


# --------------------------------------------------------------------------- take-over, claim


def _stale(lock: Path, owner: dict[str, object], *extra: str) -> None:
    """An upstream lock directory two hours old, with its owner.json and ``extra`` files."""
    lock.mkdir(parents=True)
    (lock / "owner.json").write_bytes(orjson.dumps(owner))
    for name in extra:
        (lock / name).write_text("kept\n")
    old = time.time() - 7200
    os.utime(lock, (old, old))


def test_a_stale_directory_is_renamed_aside_whatever_it_holds(project: Project) -> None:
    """An upstream directory older than an hour holding a file besides owner.json: the run
    renames it aside (routine-run.lock.stale-<UTC stamp>, kept with all it held), makes its
    own and is announced before it delegates; afterwards only the aside is left."""
    _slow(project)
    lock = _lock_dir(project)
    _stale(lock, {"pid": 4242, "acquired_at_utc": "2026-01-01T00:00:00Z"}, "notes.txt")
    proc = project.popen("run", "--due")
    _wait_for(project.log, proc)  # the action has been delegated
    owner = orjson.loads((lock / "owner.json").read_bytes())
    asides = sorted(p.name for p in lock.parent.glob("routine-run.lock.stale-*"))
    out, err = proc.communicate(timeout=60)
    assert ("specdojo_routine", proc.pid) == (owner.get("tool"), owner.get("pid"))
    assert 1 == len(asides) and re.fullmatch(r"routine-run\.lock\.stale-\d{8}T\d{6}Z", asides[0])
    assert ["notes.txt", "owner.json"] == sorted(os.listdir(lock.parent / asides[0]))
    assert (0, False) == (proc.returncode, lock.exists()), out + err


def test_a_stale_directory_holding_only_an_owner_is_removed(project: Project) -> None:
    """What a crashed upstream run leaves (owner.json only, over an hour old) is taken over
    and gone: no aside is kept for it."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    lock = _lock_dir(project)
    _stale(lock, {"pid": 4242, "acquired_at_utc": "2026-01-01T00:00:00Z"})
    done = project.cli("run", "--due")
    assert (0, []) == (done.returncode, sorted(p.name for p in lock.parent.glob(
        "routine-run.lock*"))), done.stderr


_UPSTREAM = """
import json, os, shutil, sys
d = sys.argv[1]
if sys.argv[2] == "take-over":  # what upstream does to a stale lock: remove it, mkdir anew
    shutil.rmtree(d)
os.mkdir(d)
with open(os.path.join(d, "owner.json"), "w") as f:
    json.dump({"pid": os.getpid(), "acquired_at_utc": "2026-08-07T08:02:00Z"}, f)
print(os.stat(d).st_ino, flush=True)
sys.stdin.read()
"""


def _upstream(lock: Path, how: str) -> tuple[subprocess.Popen[str], int]:
    """A real upstream-like process that takes ``lock`` (``how``: make, or take-over of a
    stale one) and holds it until its stdin closes; returns it and the directory's inode."""
    proc = subprocess.Popen([sys.executable, "-c", _UPSTREAM, str(lock), how],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def _just_before(monkeypatch: pytest.MonkeyPatch, name: str, call: str,
                 act: Callable[[], None]) -> list[bool]:
    """Run ``act`` once, right before this process's first ``os.<call>`` of a path named
    ``name`` - the moment between our look at the directory and our move."""
    real = getattr(os, call)
    fired: list[bool] = []

    def wrapper(path: object, *args: object, **kwargs: object) -> object:
        if not fired and Path(str(path)).name == name:
            fired.append(True)
            act()
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, call, wrapper)
    return fired


def test_a_directory_upstream_makes_at_the_moment_of_our_claim_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream (a real second process) makes its lock directory - owner.json without `tool`
    - just before our mkdir: we are busy (LockBusy naming it) and its directory and owner are
    left exactly as it made them."""
    locks_dir = tmp_path / "locks"
    locks_dir.mkdir()
    lock = locks_dir / "routine-run.lock"
    made: list[tuple[subprocess.Popen[str], int]] = []
    fired = _just_before(monkeypatch, "routine-run.lock", "mkdir",
                         lambda: made.append(_upstream(lock, "make")))
    try:
        with pytest.raises(errors.LockBusy) as caught, locks.routine_lock(locks_dir):
            pass
        [(proc, inode)] = made
        owner = orjson.loads((lock / "owner.json").read_bytes())
        assert ([True], inode, {"pid": proc.pid, "acquired_at_utc": "2026-08-07T08:02:00Z"}) \
            == (fired, os.stat(lock).st_ino, owner)
        assert f"lock: {lock}, holder pid {proc.pid} on unknown since " in str(caught.value)
    finally:
        for proc, _ in made:
            proc.communicate()


def test_a_stale_directory_upstream_takes_over_meanwhile_is_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream takes the stale directory over (removes it, makes its own) between our look
    and our rename: what we moved is not what we judged stale, so it is put back and we are
    busy - upstream's fresh lock stands, and nothing is left aside."""
    locks_dir = tmp_path / "locks"
    lock = locks_dir / "routine-run.lock"
    _stale(lock, {"pid": 4242}, "notes.txt")
    made: list[tuple[subprocess.Popen[str], int]] = []
    _just_before(monkeypatch, "routine-run.lock", "rename",
                 lambda: made.append(_upstream(lock, "take-over")))
    try:
        with pytest.raises(errors.LockBusy), locks.routine_lock(locks_dir):
            pass
        [(proc, inode)] = made
        assert (inode, proc.pid) == (os.stat(lock).st_ino,
                                     orjson.loads((lock / "owner.json").read_bytes())["pid"])
        assert [] == sorted(p.name for p in locks_dir.glob("routine-run.lock.*"))
    finally:
        for proc, _ in made:
            proc.communicate()


# --------------------------------------------------------------------------- kept fresh


def test_the_announced_directory_is_kept_fresh_during_a_long_action(project: Project) -> None:
    """Its mtime set two hours back while a slow action runs, the directory is fresh again
    within a refresh: upstream (stale after an hour) keeps seeing it busy. The refresh
    interval is shortened for the test by a wrapper that sets ``announce.REFRESH_S`` before
    the CLI starts (the product's own interval is within SPEC's 60 s)."""
    project.routine("rtn-slow", "interval: 1h\naction: {kind: specdojo, args: [sleep-5]}\n")
    wrapper = ("import sys; from specdojo_routine.store.locks import announce; "
               "announce.REFRESH_S = 0.2; sys.argv[0] = 'specdojo-routine'; "
               "from specdojo_routine.__main__ import main; main()")
    proc = subprocess.Popen(
        [sys.executable, "-c", wrapper, "run", "--due", "--root", str(project.root)],
        cwd=project.root, env=project.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    _wait_for(project.log, proc)
    lock = _lock_dir(project)
    back = time.time() - 7200
    os.utime(lock, (back, back))
    deadline = time.monotonic() + 3
    while time.time() - lock.stat().st_mtime > 60 and time.monotonic() < deadline:
        time.sleep(0.05)
    age = time.time() - lock.stat().st_mtime
    busy = announce.holder(lock.parent, now=datetime.now(UTC), host="upstream.example",
                           alive=lambda pid, start, acquired_at: True)
    running = proc.poll() is None
    out, err = proc.communicate(timeout=60)
    assert (True, True, proc.pid) == (age < 60, running, busy and busy.pid), (age, out, err)
    assert 0 == proc.returncode, err
    assert announce.REFRESH_S <= 30  # at least every 60 s, even when a beat comes late


# --------------------------------------------------------------------------- a full disk


@pytest.fixture
def locks_tmpfs(project: Project, request: pytest.FixtureRequest) -> Iterator[Path]:
    """``R/.locks`` on a real small tmpfs (options: the test's parameter)."""
    target = project.root / "routines" / ".locks"
    target.mkdir(parents=True)
    with tmpfs_at(target, request.param):
        yield target


def _exhaust(where: Path, what: str) -> list[Path]:
    """Use up the file system's inodes (all but one: mkdir takes the last) or its space."""
    fillers: list[Path] = []
    try:
        if what == "inodes":
            while True:
                path = where / f"filler-{len(fillers)}"
                path.touch(exist_ok=False)
                fillers.append(path)
        path = where / "filler"
        fillers.append(path)
        with path.open("wb") as fh:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
    except OSError as exc:
        assert errno.ENOSPC == exc.errno, exc
    if what == "inodes":
        fillers.pop().unlink()
    return fillers


@pytest.mark.parametrize(("locks_tmpfs", "what"), [
    ("size=1m,nr_inodes=32", "inodes"), ("size=64k,nr_inodes=1000", "space")],
    indirect=["locks_tmpfs"])
def test_a_run_that_cannot_announce_itself_runs_nothing_and_leaves_nothing(
    project: Project, locks_tmpfs: Path, what: str
) -> None:
    """Out of inodes (mkdir takes the last, owner.json cannot be created) or of space
    (owner.json cannot be written): one `error:` line naming the lock directory once (not
    again as its owner file's temp name), with the advice that fits (inodes: `df -i`), exit
    1, nothing run or recorded, and the half-made directory is removed - so once there is
    room again, the next run runs at once (nothing left looks busy, and the flock was
    released)."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    (locks_tmpfs / "routine-run.flock").write_bytes(b"{}\n")
    fillers = _exhaust(locks_tmpfs, what)
    done = project.cli("run", "--due")
    lines = done.stderr.splitlines()
    left = sorted(p.name for p in locks_tmpfs.iterdir() if not p.name.startswith("filler"))
    assert (1, 1, [], [], ["routine-run.flock"]) == (
        done.returncode, len(lines), project.calls(), project.events(), left), done.stderr
    assert lines[0].startswith(
        f"error: cannot announce this command to the SpecDojo CLI: {_lock_dir(project)}: ")
    assert "No space left on device" in lines[0] and lines[0].endswith("; nothing was changed")
    assert 1 == lines[0].count(str(_lock_dir(project))), lines[0]
    assert ("df -i" in lines[0]) == (what == "inodes"), lines[0]
    for path in fillers:
        path.unlink()
    again = project.cli("run", "--due")
    assert (0, 1) == (again.returncode, len(project.calls())), again.stderr


@pytest.mark.parametrize("locks_tmpfs", ["size=1m,nr_inodes=32"], indirect=True)
@pytest.mark.parametrize("command", [("pause", "rtn-a"), ("fold",)])
def test_a_command_that_is_not_a_run_is_not_told_nothing_was_run(
    project: Project, locks_tmpfs: Path, command: tuple[str, ...],
) -> None:
    """`pause` and `fold` announce themselves too, but run nothing: the line says this
    command could not be announced and that nothing was changed."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    (locks_tmpfs / "routine-run.flock").write_bytes(b"{}\n")
    _exhaust(locks_tmpfs, "inodes")
    done = project.cli(*command)
    [line] = done.stderr.splitlines()
    assert 1 == done.returncode
    assert line.startswith("error: cannot announce this command to the SpecDojo CLI: "), line
    assert line.endswith("; nothing was changed") and "nothing was run" not in line
    assert [] == project.events()


def test_a_release_killed_midway_leaves_the_name_free_not_an_empty_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Releasing frees the name in one step (a rename), so a runner killed at any point of
    it leaves no empty `routine-run.lock/` that every tool reads as busy for an hour; what the
    killed release left under another name is swept by the next claim."""
    now = datetime(2026, 8, 7, 8, tzinfo=UTC)
    claim = {"pid": os.getpid(), "host": socket.gethostname(), "acquired_at": "x",
             "start": None, "now": now, "alive": lambda *_: True}
    path = announce.claim(tmp_path, **claim)  # type: ignore[arg-type]
    removed: list[str] = []

    def killed(target: object, **_: object) -> None:
        if Path(str(target)).exists():  # the removal after the rename: the runner dies here
            removed.append(str(target))
            raise SystemExit("killed")

    monkeypatch.setattr(announce.shutil, "rmtree", killed)
    with pytest.raises(SystemExit):
        announce.release(path, pid=os.getpid())
    monkeypatch.undo()
    assert [str(tmp_path / f"routine-run.lock.released-{os.getpid()}")] == removed
    assert not path.exists()
    assert announce.holder(tmp_path, now=now, host=socket.gethostname(),
                           alive=lambda *_: True) is None
    again = announce.claim(tmp_path, **claim)  # type: ignore[arg-type]
    assert ["routine-run.lock"] == sorted(os.listdir(tmp_path))
    announce.release(again, pid=os.getpid())
    assert [] == os.listdir(tmp_path)


def test_a_release_leaves_a_directory_that_is_no_longer_ours(tmp_path: Path) -> None:
    """A directory whose owner.json names another holder (upstream took it over) is left as
    it is, under its name."""
    path = tmp_path / "routine-run.lock"
    path.mkdir()
    (path / "owner.json").write_text('{"pid": 1, "host": "elsewhere"}')
    announce.release(path, pid=os.getpid())
    assert ["owner.json"] == os.listdir(path)


@pytest.mark.parametrize("upstream_made_one", [False, True])
def test_a_directory_found_not_ours_after_the_rename_is_put_back_only_where_nothing_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, upstream_made_one: bool,
) -> None:
    """What the release renamed turned out not to be ours (replaced between our look and the
    rename): it goes back under its name, unless upstream has made a new directory there
    meanwhile, which a rename back would replace."""
    now = datetime(2026, 8, 7, 8, tzinfo=UTC)
    path = announce.claim(tmp_path, pid=os.getpid(), host=socket.gethostname(),
                          acquired_at="x", start=None, now=now, alive=lambda *_: True)
    owner = announce._owner

    def theirs_once_moved(where: Path, name: str = announce.OWNER_NAME) -> dict[str, object]:
        if where == path:
            return owner(where, name)
        if upstream_made_one:
            path.mkdir()  # upstream's mkdir, its owner file not written yet
        return {"tool": "specdojo-cli", "pid": 1}

    monkeypatch.setattr(announce, "_owner", theirs_once_moved)
    announce.release(path, pid=os.getpid())
    monkeypatch.undo()
    aside = tmp_path / f"routine-run.lock.released-{os.getpid()}"
    if upstream_made_one:
        assert ([], True) == (os.listdir(path), aside.is_dir())
    else:
        assert (["owner.json"], False) == (os.listdir(path), aside.exists())
