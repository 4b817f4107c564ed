"""The routine view's snapshot on a file system that keeps whole seconds (ext4 with 128-byte
inodes, as ext3 and FAT do): an edit of the ledger in the same second as the last append,
keeping its length, leaves the ledger's stamp as it was, so a snapshot written in that second
proves nothing and the chain is verified again (store/ledger/proven.py, 2).

A real file system in a loop-mounted image file; skipped where it cannot be made or mounted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clirun import run_cli
from tests.viewhelper import T1, T2, env_for, fresh_fold, ledger, snapshot, spied, views_of


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own: what this one wrote is no proof for another."""
    return run_cli([*args, "--root", str(root)], cwd=root, env=env_for(root), process=True)


@pytest.fixture
def coarse(tmp_path: Path) -> Iterator[Path]:
    """A mounted ext4 whose inodes keep their times in whole seconds."""
    image, mount = tmp_path / "coarse.img", tmp_path / "coarse"
    mount.mkdir()
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("mkfs.ext4 is not installed")
    with image.open("wb") as out:
        out.truncate(32 * 1024 * 1024)
    made = subprocess.run(["mkfs.ext4", "-q", "-F", "-I", "128", str(image)],
                          capture_output=True, text=True, check=False)
    done = subprocess.run(["mount", "-o", "loop", str(image), str(mount)],
                          capture_output=True, text=True, check=False)
    if made.returncode != 0 or done.returncode != 0:
        pytest.skip(f"cannot make or mount an ext4 image here: {made.stderr}{done.stderr}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def demo(root: Path) -> Path:
    from tests.conftest import copy_source

    copy_source(Path(__file__).resolve().parent.parent / "fixtures" / "demo", root)
    return root


def stamp(path: Path) -> tuple[int, int, int]:
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_ctime_ns


def test_a_same_second_edit_of_the_ledger_is_found_not_trusted(coarse: Path) -> None:
    """A run, then an edit of its ledger's first lines within the same second that keeps the
    length (its stamp unchanged): the next command verifies the chain and refuses, naming
    the line, instead of continuing from the view and appending to the edited ledger."""
    for attempt in range(5):
        root = demo(coarse / f"demo{attempt}")
        assert 0 == cli(root, "run", "--due", "--now", T1).returncode
        path = ledger(root)
        before, data = stamp(path), path.read_bytes()
        at = data.index(b'"success"')
        with path.open("r+b") as out:
            out.write(data[:at] + b'"failure"' + data[at + 9:])
        if stamp(path) == before:
            break
    else:
        pytest.skip("the edit never fell in the second of the run")
    done = cli(root, "run", "--due", "--now", T2)
    assert 1 == done.returncode
    assert "does not hash to the prev that line" in done.stderr
    assert str(path) in done.stderr


def test_a_snapshot_of_the_same_second_is_proven_again_once(coarse: Path) -> None:
    """The next process verifies the chain from line 1 once and writes the snapshot anew
    (the same bytes, a later second); the one after that continues from the view again,
    and the views stay what a fold from scratch gives."""
    root = demo(coarse / "demo")
    assert 0 == cli(root, "run", "--due", "--now", T1).returncode
    time.sleep(1.1)  # the snapshot was written in the second of the last append
    written = snapshot(root).stat().st_ctime_ns
    assert (0, [0]) == spied(root, "run", "--due", "--now", T1)
    assert snapshot(root).stat().st_ctime_ns > written
    code, offsets = spied(root, "list")
    assert (0, []) == (code, offsets)
    assert fresh_fold(root) == views_of(root)


def test_a_run_view_rewritten_in_the_second_of_the_check_is_read_again(coarse: Path) -> None:
    """The import check's stamps (store/ledger/runcheck.py) on the same file system: a run
    whose view another tool rewrites, keeping its length, in the second the check wrote its
    snapshot is not taken as settled by the next check but read again (and the snapshot
    written anew, so a later check settles it)."""
    from specdojo_routine.store.config import resolve_project
    from specdojo_routine.store.ledger import runcheck
    from tests.conftest import Project, period_job

    for attempt in range(5):
        project = Project(coarse / f"proj{attempt}")
        project.job("job-a", period_job("job-a", 'echo "{{inputs.period}}"'))
        done = project.cli("job", "run", "--job", "job-a", "--input", "period=W1",
                           env=project.env(), process=True)
        assert 0 == done.returncode, done.stderr
        done = project.cli("job", "run", "--job", "job-a", "--input", "period=W2",
                           env=project.env(), process=True)  # settles W1's run
        view = next(p for p in (project.root / "execution/jobs/runs").glob("*.json")
                    if b"W1" in p.read_bytes())
        before, data = stamp(view), view.read_bytes()
        view.write_bytes(data.replace(b'"status": "succeeded"', b'"status":    "failed"'))
        if stamp(view) == before:
            break
    else:
        pytest.skip("the rewrite never fell in the second of the check")
    found = runcheck.plan(resolve_project(project.root), "job-a")
    assert view.stem not in found.settled
    assert view.stem in found.folds
