"""What may sit at the exec lock's name, `E/exec/.locks/exec-run.lock` (SPEC §7.7): a holder of
the protocol makes a directory with `mkdir`; anything else there (a FIFO, a dangling or live
symbolic link, a regular file) is nobody's lock, and only its age can decide. Older than the
30 s stale threshold it is taken over - set aside and deleted without being opened or followed;
younger it is busy, as a fresh directory without an owner is. A FIFO there hung `job run`
inside the blocking take-over flock (every other runner queued behind it); a dangling link kept
the project busy for ever, silently (`skipped`, exit 0, on every run).

Real files, FIFOs and links, the real CLI in a child process with a timeout.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import orjson

from specdojo_routine.store.locks import execlock
from tests.conftest import Project

TIMEOUT_S = 60


def _lock(project: Project) -> Path:
    locks = project.root / "execution" / "exec" / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    return locks / execlock.EXEC_LOCK_NAME


def _age(path: Path, seconds: float) -> None:
    """Set the entry's own times (a link's, not its target's) ``seconds`` into the past."""
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)


def _job(project: Project) -> None:
    project.job("job-mark", """\
        name: Mark
        task: {mode: command, command: "echo ran >> marks"}
        run: {idempotency_key: "{{job_id}}:{{scheduled_at}}"}
        """)


def _job_run(project: Project) -> dict[str, object]:
    done = project.cli("job", "run", "--job", "job-mark", "--json", timeout=TIMEOUT_S)
    assert 0 == done.returncode, done.stdout + done.stderr
    out: dict[str, object] = orjson.loads(done.stdout)
    return out


def _nothing_left(lock: Path) -> None:
    """The lock is free after the run, and nothing set aside is left beside it."""
    assert not os.path.lexists(lock)
    assert [execlock.EXEC_TAKEOVER_NAME] == sorted(os.listdir(lock.parent))


def test_a_stale_fifo_at_the_lock_is_taken_over_never_opened(project: Project) -> None:
    """A FIFO two hours old: `job run` runs the Job (it waited for ever, exit 124 under
    `timeout`), and the FIFO is gone."""
    _job(project)
    lock = _lock(project)
    os.mkfifo(lock)
    _age(lock, 7200)
    out = _job_run(project)
    assert ("succeeded", False) == (out["state"], out["skipped"]), out
    assert "ran\n" == (project.root / "marks").read_text()
    _nothing_left(lock)


def test_a_stale_dangling_link_at_the_lock_is_taken_over(project: Project) -> None:
    """A dangling link three hours old made every `job run` a busy skip ("holder unknown",
    exit 0) for ever. Now the Job runs, the link is gone and nothing is made at its target."""
    _job(project)
    lock = _lock(project)
    target = project.root.parent / "nowhere"
    lock.symlink_to(target)
    _age(lock, 3 * 3600)
    out = _job_run(project)
    assert ("succeeded", False) == (out["state"], out["skipped"]), out
    assert not os.path.lexists(target)
    _nothing_left(lock)


def test_a_stale_link_to_a_directory_is_removed_its_target_never_touched(
    project: Project,
) -> None:
    """A link to a real directory (holding an owner file of this very process, alive): the
    link is nobody's lock and is taken over by its age; the directory it names and what it
    holds stay as they were."""
    _job(project)
    lock = _lock(project)
    elsewhere = project.root.parent / "elsewhere"
    elsewhere.mkdir()
    owner = orjson.dumps({"actor": "x", "pid": os.getpid(), "token": "1-ab",
                          "acquired_at_utc": "2026-01-01T00:00:00Z"})
    (elsewhere / "owner.json").write_bytes(owner)
    lock.symlink_to(elsewhere, target_is_directory=True)
    _age(lock, 120)
    out = _job_run(project)
    assert ("succeeded", False) == (out["state"], out["skipped"]), out
    assert owner == (elsewhere / "owner.json").read_bytes()
    _nothing_left(lock)


def test_a_stale_regular_file_at_the_lock_is_taken_over(project: Project) -> None:
    _job(project)
    lock = _lock(project)
    lock.write_text("not a lock\n")
    _age(lock, 120)
    assert "succeeded" == _job_run(project)["state"]
    _nothing_left(lock)


def test_a_fresh_link_is_busy_until_it_is_stale(project: Project) -> None:
    """Younger than the stale threshold, a link is busy like a fresh directory without an
    owner (it might be a moment old); nothing is written, the link is left as it is."""
    _job(project)
    lock = _lock(project)
    lock.symlink_to(project.root.parent / "nowhere")
    out = _job_run(project)
    assert (True, None) == (out["skipped"], out["attempt"]), out
    assert "holder unknown" in str(out["reason"])
    assert not (project.root / "marks").exists()
    assert os.path.islink(lock)
    _age(lock, 31)
    assert "succeeded" == _job_run(project)["state"]
    _nothing_left(lock)


def test_a_stale_directory_without_an_owner_is_taken_over(project: Project) -> None:
    """A directory whose owner cannot be read (a holder that died between mkdir and writing
    it): liveness cannot be checked, the 30 s rule decides."""
    _job(project)
    lock = _lock(project)
    lock.mkdir()
    os.mkfifo(lock / "owner.json")  # not even readable: a FIFO is no owner
    _age(lock, 31)
    assert "succeeded" == _job_run(project)["state"]
    _nothing_left(lock)


_SWAP = """\
import errno, os, sys
from pathlib import Path
from specdojo_routine.core.errors import RoutineError
from specdojo_routine.store.locks import execlock

locks = Path(sys.argv[1])
lock = locks / execlock.EXEC_LOCK_NAME

def swapped(src, dst):  # the owner file cannot be placed, and a FIFO took the lock's name
    os.rename(lock, locks / "moved")
    os.mkfifo(lock)
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

execlock.os.replace = swapped
try:
    with execlock.exec_lock(locks, actor="t", env={}):
        pass
except RoutineError as exc:
    print(exc)
"""


def test_a_failed_create_never_opens_what_took_the_locks_name(tmp_path: Path) -> None:
    """`_try_create` removes the directory it could not finish; if something else sits at the
    name by then (here a FIFO), it is unlinked, never opened."""
    done = subprocess.run([sys.executable, "-c", _SWAP, str(tmp_path)], capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert 0 == done.returncode, done.stderr
    assert "No space left on device" in done.stdout
    assert not os.path.lexists(tmp_path / execlock.EXEC_LOCK_NAME)
    assert stat.S_ISDIR((tmp_path / "moved").lstat().st_mode)
