"""Every file the product reads is evidence, never a fact: a directory, a symbolic link (a
loop, a dangling one), an unreadable file or a private cache that is garbage where a command
expects one of its files is reported in one line naming the path (or, for a view or a cache,
set aside and rebuilt), never a traceback, a wait or a write outside the project.

The CLI runs in subprocesses with a timeout, on a copy of the demo project after a real run.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from specdojo_routine.store.config import NotRegularFile, read_regular
from tests.conftest import tmpfs_at
from tests.viewhelper import (
    T2,
    cli,
    cp_a,
    demo_after_run,
    env_for,
    fresh_fold,
    ledger,
    routine_state,
    snapshot,
    views_of,
)

TIMEOUT_S = 60
STATE = "routines/generated/routine-state.json"


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo project after one real run (never changed by a test: tests copy it)."""
    return demo_after_run(tmp_path_factory.mktemp("hostile") / "demo")


@pytest.fixture
def demo(ran: Path, tmp_path: Path) -> Path:
    return cp_a(ran, tmp_path / "demo")


def _one_error(stderr: str) -> str:
    """The one ``error:`` line of ``stderr`` (and no traceback)."""
    assert "Traceback" not in stderr, stderr
    [line] = stderr.splitlines()
    assert line.startswith("error: "), stderr
    return line


def _aside(path: Path) -> Path:
    [moved] = path.parent.glob(f"{path.name}.unreadable-*")
    return moved


# --- read_regular ------------------------------------------------------------------------------


def test_read_regular_refuses_a_directory_as_not_a_regular_file(tmp_path: Path) -> None:
    """A directory is refused like a FIFO (NotRegularFile naming the path), not with an
    IsADirectoryError that names a file descriptor instead of the path."""
    with pytest.raises(NotRegularFile) as caught:
        read_regular(tmp_path)
    assert ("a directory", tmp_path) == (caught.value.kind, caught.value.path)
    with pytest.raises(NotRegularFile):
        read_regular(tmp_path, follow=False)


def test_read_regular_refuses_a_symbolic_link_loop(tmp_path: Path) -> None:
    """A link that points at itself is no file: NotRegularFile, not ELOOP."""
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop.name)
    with pytest.raises(NotRegularFile) as caught:
        read_regular(loop)
    assert "a symbolic link loop" == caught.value.kind


# --- views: a directory or a link loop holds no facts (SPEC §10 rule 8) -----------------------


@pytest.mark.parametrize("kind", ["directory", "loop"])
def test_a_directory_or_link_loop_as_the_routine_state_is_moved_aside(
    demo: Path, kind: str
) -> None:
    """`list` and `fold --check` answer from the ledger; `run` moves the thing aside (kept,
    not deleted), warns once naming both paths and publishes the fold."""
    view = routine_state(demo)
    view.unlink()
    if kind == "directory":
        view.mkdir()
        (view / "kept").write_text("kept")
    else:
        view.symlink_to(view.name)
    listed = cli(demo, "list", "--json", timeout=TIMEOUT_S)
    assert (0, "") == (listed.returncode, listed.stderr), listed.stderr
    check = cli(demo, "fold", "--check", timeout=TIMEOUT_S)
    assert (1, f"drift: {STATE} differs from the fold of its ledger\n") == (
        check.returncode, check.stderr)
    done = cli(demo, "run", "--due", "--now", T2, timeout=TIMEOUT_S)
    assert 0 == done.returncode, done.stderr
    moved = _aside(view)
    assert [f"warning: {STATE} holds no facts (not a regular file); moved it aside to "
            f"{STATE}.{moved.name.split('.', 2)[2]} and rebuilt it from "
            "routines/generated/routine-runs.jsonl"] == done.stderr.splitlines()
    if kind == "directory":
        assert "kept" == (moved / "kept").read_text()
    assert stat.S_ISREG(view.lstat().st_mode)
    assert fresh_fold(demo) == views_of(demo)


# --- lock files --------------------------------------------------------------------------------


def test_a_directory_as_the_routine_flock_file_is_a_holder_that_cannot_be_read(
    demo: Path,
) -> None:
    """`list` shows the routines (the lock file is only asked who holds it); `run` refuses it
    in one line naming the path and records nothing."""
    flock = demo / "routines" / ".locks" / "routine-run.flock"
    flock.unlink()
    flock.mkdir()
    listed = cli(demo, "list", "--json", timeout=TIMEOUT_S)
    assert (0, "") == (listed.returncode, listed.stderr), listed.stderr
    before = ledger(demo).read_bytes()
    ran = cli(demo, "run", "--due", "--now", T2, timeout=TIMEOUT_S)
    assert 1 == ran.returncode
    assert f"{flock}: Is a directory" in _one_error(ran.stderr)
    assert before == ledger(demo).read_bytes()


# --- ledgers: a dangling link is missing history, not an empty ledger ---------------------------


def test_a_dangling_link_as_the_routine_ledger_is_refused_not_started_afresh(
    demo: Path, tmp_path: Path
) -> None:
    """The ledger is a link to a file that is not there (a disk not mounted, a restore half
    done): every command that reads it - the answers too, never "no attempt yet" - refuses in
    one line naming the path, nothing runs again and no ledger is created through the link,
    outside the project."""
    target = tmp_path / "elsewhere" / "routine-runs.jsonl"
    target.parent.mkdir()
    ledger(demo).unlink()
    ledger(demo).symlink_to(target)
    routine_state(demo).unlink()  # without a view, the answers read the ledger itself
    answers = (["status"], ["history"], ["history", "--attempts"], ["logs", "rtn-heartbeat"],
               ["history", "rtn-heartbeat"])
    for args in (["list"], ["run", "--due", "--now", T2], ["fold"], ["import"], *answers):
        done = cli(demo, *args, timeout=TIMEOUT_S)
        assert 1 == done.returncode, (args, done.stdout, done.stderr)
        assert f"{ledger(demo)}: a symbolic link to {target}, which does not exist" in \
            _one_error(done.stderr)
    assert not os.path.lexists(target)
    assert [] == list(target.parent.iterdir())


def test_a_dangling_link_as_a_run_ledger_creates_nothing_outside(
    demo: Path, tmp_path: Path
) -> None:
    """A Job Run's ledger as a link to nothing: `job list` refuses naming it, and a `job run`
    writes nothing through the link."""
    [run_ledger] = sorted((demo / "execution" / "jobs" / "runs").glob("JBR-heartbeat-*.jsonl"))
    target = tmp_path / "elsewhere" / run_ledger.name
    target.parent.mkdir()
    run_ledger.unlink()
    run_ledger.symlink_to(target)
    listed = cli(demo, "job", "list", timeout=TIMEOUT_S)
    assert 1 == listed.returncode
    assert f"{run_ledger}: a symbolic link to {target}, which does not exist" in \
        _one_error(listed.stderr)
    cli(demo, "job", "run", "--job", "job-heartbeat", timeout=TIMEOUT_S)
    cli(demo, "run", "--due", "--now", T2, timeout=TIMEOUT_S)
    assert [] == list(target.parent.iterdir())


# --- private caches: garbage is ignored and rebuilt, never trusted, never an error ------------


def _unreadable_to(argv_prefix: list[str]) -> list[str]:
    """How to run a command for which a file of mode 000 is unreadable: as is for a user
    other than root; as root, without the two capabilities that let root read any file
    (``setpriv``), else the test is skipped."""
    if os.geteuid() != 0:
        return argv_prefix
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root reads a file of mode 000, and setpriv (to drop that) is missing")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", *argv_prefix]


@pytest.mark.parametrize("kind", ["directory", "unreadable"])
def test_a_routine_snapshot_that_cannot_be_read_is_only_a_missing_shortcut(
    demo: Path, kind: str
) -> None:
    """R/.cache/routine-state.snapshot.json as a directory, or a file this user may not
    read: `run` and `fold` verify the ledger from scratch and succeed, and the views are
    the fold (the snapshot only spares work). An unreadable file is replaced by a new
    snapshot; a directory, which this tool did not make, is left alone."""
    cache = snapshot(demo)
    if kind == "directory":
        cache.unlink()
        cache.mkdir()
        (cache / "kept").write_text("kept")
    else:
        cache.chmod(0)
    argv = _unreadable_to([sys.executable, "-m", "specdojo_routine"])
    for args in (["run", "--due", "--now", T2], ["fold"], ["list"]):
        done = subprocess.run([*argv, *args, "--root", str(demo)], cwd=demo,
                              env=env_for(demo), capture_output=True, text=True,
                              timeout=TIMEOUT_S, check=False)
        assert (0, "") == (done.returncode, done.stderr), (args, done.stderr)
    assert fresh_fold(demo) == views_of(demo)
    if kind == "directory":  # not ours to remove: left as it is, and never read
        assert ["kept"] == [p.name for p in cache.iterdir()]
    else:  # a file of ours: rebuilt in its place
        assert (0o644, b"{") == (stat.S_IMODE(cache.lstat().st_mode), cache.read_bytes()[:1])


# --- fold --repair: the fragment's name taken by something else --------------------------------


def _tear(demo: Path) -> Path:
    """Tear the routine ledger's last line; returns the name its fragment is moved to."""
    seq = len(ledger(demo).read_bytes().splitlines()) + 1
    with ledger(demo).open("ab") as out:
        out.write(b'{"version":1,"se')
    return ledger(demo).with_name(f"{ledger(demo).name}.torn-{seq}")


@pytest.mark.parametrize("kind", ["fifo", "directory", "link"])
def test_repair_never_waits_on_reads_through_or_fails_on_a_taken_fragment_name(
    demo: Path, tmp_path: Path, kind: str
) -> None:
    """`<ledger>.torn-<seq>` already names a FIFO, a directory or a link to a file outside
    the project that holds the same bytes: `fold --repair` does not wait on the FIFO, does
    not take the outside file for the saved fragment, leaves all three as they were and
    saves the fragment under the next free name."""
    taken = _tear(demo)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b'{"version":1,"se')
    if kind == "fifo":
        os.mkfifo(taken)
    elif kind == "directory":
        taken.mkdir()
    else:
        taken.symlink_to(outside)
    done = cli(demo, "fold", "--repair", timeout=TIMEOUT_S)
    assert (0, "") == (done.returncode, done.stderr), done.stderr
    saved = taken.with_name(f"{taken.name}.2")
    assert f"repaired: moved a torn last line aside to routines/generated/{saved.name}" in \
        done.stdout
    assert b'{"version":1,"se' == saved.read_bytes()
    assert {"fifo": stat.S_ISFIFO, "directory": stat.S_ISDIR, "link": stat.S_ISLNK}[kind](
        taken.lstat().st_mode)
    assert b'{"version":1,"se' == outside.read_bytes()
    assert 0 == cli(demo, "fold", "--check", timeout=TIMEOUT_S).returncode


def test_repair_never_writes_its_temporary_fragment_through_a_link(
    demo: Path, tmp_path: Path
) -> None:
    """The temporary file the fragment is written to first is created afresh: a link left
    at its name (it is named after the process id) is replaced, and the file it points to
    outside the project is not truncated."""
    from specdojo_routine.store.ledger import journal

    taken = _tear(demo)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"not yours")
    tmp = ledger(demo).with_name(f".{ledger(demo).name}.{taken.name.rsplit('.', 1)[1]}."
                                 f"{os.getpid()}.tmp")
    tmp.symlink_to(victim)
    assert taken == journal.repair(ledger(demo))
    assert (b"not yours", False) == (victim.read_bytes(), os.path.lexists(tmp))
    assert b'{"version":1,"se' == taken.read_bytes()


def test_a_stop_request_is_never_written_through_a_link_or_into_a_fifo(tmp_path: Path) -> None:
    """`stop` leaves its note through a temporary file named after its process id: a link
    left at that name is replaced (the file it names is not written) and a FIFO there is not
    waited on; the request reads back, and a link at the request's own name is not read."""
    from specdojo_routine.store.locks import stoprequest

    locks = tmp_path / "locks"
    locks.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"not yours")
    tmp = locks / f"stop-att-1.tmp-{os.getpid()}"
    tmp.symlink_to(victim)
    stoprequest.leave(locks, "att-1", by="me", note="why")
    assert (b"not yours", False) == (victim.read_bytes(), os.path.lexists(tmp))
    assert {"by": "me", "note": "why"} == stoprequest.take(locks, "att-1")
    done = subprocess.run(  # a FIFO at the temporary name of the process that leaves it
        [sys.executable, "-c", "import os, sys; from pathlib import Path; "
         "from specdojo_routine.store.locks import stoprequest; "
         "os.mkfifo(Path(sys.argv[1]) / f'stop-att-2.tmp-{os.getpid()}'); "
         "stoprequest.leave(Path(sys.argv[1]), 'att-2', by='me', note=None)", str(locks)],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert 0 == done.returncode, done.stderr
    (locks / "stop-att-3.json").symlink_to(victim)
    assert stoprequest.take(locks, "att-3") is None
    assert b"not yours" == victim.read_bytes()


def test_a_fifo_as_the_exec_lock_take_over_mutex_never_hangs(demo: Path) -> None:
    """E/exec/.locks/exec-run.takeover.flock (a brief flock around taking the exec lock) as a
    FIFO: `job run` refuses in one line naming it, instead of waiting for a writer for ever;
    `run --due` records its job actions as failed with that reason and ends."""
    mutex = demo / "execution" / "exec" / ".locks" / "exec-run.takeover.flock"
    mutex.unlink()
    os.mkfifo(mutex)
    done = cli(demo, "job", "run", "--job", "job-heartbeat", timeout=TIMEOUT_S)
    assert 1 == done.returncode
    assert (f"cannot use the lock {mutex}: it is not a regular file (remove it and run the "
            "command again)") in _one_error(done.stderr)
    ran = cli(demo, "run", "--due", "--now", T2, timeout=TIMEOUT_S)
    assert 1 == ran.returncode, ran.stderr
    assert stat.S_ISFIFO(mutex.lstat().st_mode)


# --- a full disk while a ledger line is written -------------------------------------------------


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 256 KiB tmpfs (skipped where mounting is refused)."""
    target = tmp_path / "mnt"
    target.mkdir()
    with tmpfs_at(target, "size=256k"):
        yield target


def test_a_full_disk_mid_line_leaves_the_ledger_as_it_was_and_names_it(
    tiny_tmpfs: Path,
) -> None:
    """The disk fills while an append writes its line (part of it fits in the file's last
    block): the part written is taken back, so the ledger holds its complete lines only (no
    torn tail for the next command to repair), and the error names the ledger."""
    from specdojo_routine.core import routine_events as rev
    from specdojo_routine.store.ledger import journal

    path = tiny_tmpfs / "routine-runs.jsonl"
    log = journal.Ledger(path)
    log.append(rev.RoutineRegistered(routine_id="rtn-a", digest="d0", path="routines/a.yaml"))
    before = path.read_bytes()
    subprocess.run(f"cat /dev/zero > {tiny_tmpfs / 'fill'}", shell=True, check=False,
                   capture_output=True)
    big = rev.RoutineRegistered(routine_id="rtn-a", digest="d1", path="r/" + "a" * 20_000)
    with pytest.raises(OSError) as caught:
        log.append(big)
    assert (28, str(path)) == (caught.value.errno, caught.value.filename)
    assert before == path.read_bytes()


def test_a_definition_cache_that_cannot_be_written_is_only_a_missing_shortcut(
    demo: Path,
) -> None:
    """R/.cache/definitions.json as a directory (which cannot be replaced): `run` reads the
    definitions without the cache and goes on, and leaves the directory (not ours) alone."""
    cache = demo / "routines" / ".cache" / "definitions.json"
    cache.unlink()
    cache.mkdir()
    (cache / "kept").write_text("kept")
    before = ledger(demo).stat().st_size
    done = cli(demo, "run", "--due", "--now", T2, timeout=TIMEOUT_S)
    assert (0, "") == (done.returncode, done.stderr), done.stderr
    assert ledger(demo).stat().st_size > before
    assert ["kept"] == [p.name for p in cache.iterdir()]
    assert [] == list(cache.parent.glob(".definitions-*"))


def test_a_view_that_cannot_be_written_on_a_full_disk_names_the_view(tiny_tmpfs: Path) -> None:
    """Replacing a view (routine-state.json) on a full disk: the old file stays whole, no
    temporary file is left, and the error names the view (a write names no file)."""
    from specdojo_routine.store.ledger import stamps

    view = tiny_tmpfs / "routine-state.json"
    view.write_bytes(b"{}\n")
    subprocess.run(f"cat /dev/zero > {tiny_tmpfs / 'fill'}", shell=True, check=False,
                   capture_output=True)
    with pytest.raises(OSError) as caught:
        stamps.replace(view, b"x" * 100_000)
    assert (28, str(view)) == (caught.value.errno, caught.value.filename)
    assert ([b"{}\n"], ["fill", "routine-state.json"]) == (
        [view.read_bytes()], sorted(p.name for p in tiny_tmpfs.iterdir()))
