"""Views are a function of the ledgers' bytes alone (SPEC §5): a copied project checks clean
and folds to the same bytes; what spares re-verifying the chain is a machine-local snapshot in
``R/.cache/`` that is safe to lose, never trusted for another file, never read through a
symlink or from a FIFO.

Every test starts from the demo project after a real ``run`` (the fake SpecDojo CLI), copied
with ``cp -a``; the CLI runs in subprocesses, and :func:`viewhelper.spied` shows where a fresh
process started reading the routine ledger (0: the whole chain verified).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.store import codeprint
from tests.viewhelper import (
    T1,
    T2,
    T3,
    cli,
    cp_a,
    demo_after_run,
    fresh_fold,
    ledger,
    routine_state,
    snapshot,
    spied,
    view_files,
    views_of,
)

MACHINE_KEYS = {"dev", "ino", "inode", "ctime", "ctime_ns", "mtime", "mtime_ns", "file", "size"}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo project after one real run (never changed by a test: tests copy it)."""
    return demo_after_run(tmp_path_factory.mktemp("portable") / "demo")


@pytest.fixture
def copy(ran: Path, tmp_path: Path) -> Path:
    """A ``cp -a`` copy of the run project (another inode for every file)."""
    return cp_a(ran, tmp_path / "copy")


@pytest.fixture
def proven_copy(copy: Path) -> Iterator[Path]:
    """The copy after one recording command of its own: its snapshot names its own ledger."""
    done = cli(copy, "run", "--due", "--now", T2)
    assert 0 == done.returncode, done.stderr
    yield copy


def _walk(value: Any) -> Iterator[tuple[str | None, Any]]:
    """Every (key, value) pair in a JSON document, nested ones included."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key, item
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield None, item
            yield from _walk(item)


# --- the public views ----------------------------------------------------------------------------


def test_a_copy_checks_clean_and_rebuilds_its_views_byte_for_byte(ran: Path,
                                                                  copy: Path) -> None:
    """After `cp -a`, `fold --check` in the copy exits 0; with every view deleted, `fold`
    writes views identical, byte for byte, to the original's."""
    assert os.stat(ledger(ran)).st_ino != os.stat(ledger(copy)).st_ino
    check = cli(copy, "fold", "--check")
    assert (0, "views match the ledgers\n") == (check.returncode, check.stdout), check.stderr
    original = views_of(ran)
    assert 4 == len(original)  # routine-state, two run views, job-state
    for path in view_files(copy):
        path.unlink()
    assert 0 == cli(copy, "fold").returncode
    assert original == views_of(copy)


def test_no_view_holds_a_device_inode_or_change_time(ran: Path) -> None:
    """routine-state.json's ledger member is exactly seq, offset and the chain head; no view
    holds a file's identity, size or times, as a key or as a number."""
    doc = orjson.loads(routine_state(ran).read_bytes())
    lines = ledger(ran).read_bytes().splitlines()
    assert {"seq": len(lines), "offset": ledger(ran).stat().st_size,
            "head": hashlib.sha256(lines[-1]).hexdigest()} == doc["ledger"]
    assert ["seq", "offset", "head"] == list(doc["ledger"])
    machine = set()
    for path in [ledger(ran), *ran.glob("execution/jobs/runs/*"), *view_files(ran)]:
        st = path.stat()
        machine |= {st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns}
    for path in view_files(ran):
        pairs = list(_walk(orjson.loads(path.read_bytes())))
        assert not {key for key, _ in pairs} & MACHINE_KEYS, path
        assert not {v for _, v in pairs if type(v) is int} & machine, path


# --- the snapshot --------------------------------------------------------------------------------


def test_the_snapshot_is_private_to_this_machine_and_git_ignored(ran: Path,
                                                                 tmp_path: Path) -> None:
    """R/.cache/routine-state.snapshot.json names the code that proved the view (its
    fingerprint), the ledger file (device, inode, size, ctime), the position proven and the
    sha256 of the view bytes published; the demo's .gitignore keeps it (and all of R/.cache)
    out of git."""
    doc = orjson.loads(snapshot(ran).read_bytes())
    st = ledger(ran).stat()
    view = orjson.loads(routine_state(ran).read_bytes())
    assert {"version": 2, "code": codeprint.fingerprint(),
            "ledger_file": {"dev": st.st_dev, "ino": st.st_ino, "size": st.st_size,
                            "ctime_ns": st.st_ctime_ns},
            **view["ledger"],
            "view_sha256": hashlib.sha256(routine_state(ran).read_bytes()).hexdigest()} == doc
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = cp_a(ran, tmp_path / "repo")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    private = ["routines/.cache/routine-state.snapshot.json",
               "execution/.cache/job-state.snapshot.json"]  # job-state.json's proof likewise
    assert all((repo / p).is_file() for p in private)
    assert [0, 0] == [subprocess.run(["git", "check-ignore", "-q", p], cwd=repo,
                                     check=False).returncode for p in private]


def test_a_copy_verifies_its_chain_once_then_continues_from_its_own_snapshot(
    ran: Path, copy: Path
) -> None:
    """The copied snapshot names the original's ledger file, so the copy's first commands
    verify the chain from line 1 (a read-only one writes nothing, the snapshot included);
    the first recording command writes a snapshot naming the copy's own ledger, and the next
    command reads no line of the ledger again."""
    copied = snapshot(copy).read_bytes()
    assert (0, [0]) == spied(copy, "list")
    assert copied == snapshot(copy).read_bytes()
    code, offsets = spied(copy, "run", "--due", "--now", T1)  # nothing due: a refresh only
    assert (0, [0]) == (code, offsets)
    assert os.stat(ledger(copy)).st_ino == \
        orjson.loads(snapshot(copy).read_bytes())["ledger_file"]["ino"] != \
        os.stat(ledger(ran)).st_ino
    assert (0, []) == spied(copy, "list")


def test_the_next_command_continues_where_the_last_one_stopped(proven_copy: Path) -> None:
    """In the normal case a new process trusts the snapshot: `list` reads no line, a `run`
    that appends reads only the lines after what the view covers, never from line 1."""
    assert (0, []) == spied(proven_copy, "list")
    offset = orjson.loads(routine_state(proven_copy).read_bytes())["ledger"]["offset"]
    code, offsets = spied(proven_copy, "run", "--due", "--now", T3)
    assert 0 == code
    assert offsets and 0 not in offsets and offsets[0] == offset
    assert fresh_fold(proven_copy) == views_of(proven_copy)


def test_a_deleted_snapshot_costs_one_full_fold_and_is_written_again(proven_copy: Path) -> None:
    """Without the snapshot the next recording command verifies the chain once, publishes
    the same view bytes and writes a snapshot equal to the one deleted."""
    before, view = snapshot(proven_copy).read_bytes(), routine_state(proven_copy).read_bytes()
    snapshot(proven_copy).unlink()
    code, offsets = spied(proven_copy, "run", "--due", "--now", T2)
    assert (0, [0], view) == (code, offsets, routine_state(proven_copy).read_bytes())
    assert before == snapshot(proven_copy).read_bytes()
    assert (0, []) == spied(proven_copy, "list")


def test_a_hand_edited_view_with_the_right_head_is_refolded(proven_copy: Path) -> None:
    """A view edited by hand keeps its seq, offset and head but not its bytes: it is not
    continued from. `list` shows the fold, `fold --check` reports the drift, and the next
    recording command folds from line 1 and replaces the edit."""
    path = routine_state(proven_copy)
    right = path.read_bytes()
    edited = right.replace(b'"status": "skipped"', b'"status": "success"', 1)
    assert edited != right
    path.write_bytes(edited)
    code, offsets = spied(proven_copy, "list", "--json")
    assert offsets == [0]
    check = cli(proven_copy, "fold", "--check")
    assert (1, "drift: routines/generated/routine-state.json differs from the fold of its "
            "ledger\n") == (check.returncode, check.stderr)
    code, offsets = spied(proven_copy, "run", "--due", "--now", T2)
    assert (0, [0], right) == (code, offsets, path.read_bytes())


def test_a_view_of_the_previous_version_is_refolded_and_republished(proven_copy: Path) -> None:
    """A view written before this ruling (its ledger member also held `file` and `digest`)
    is readable but not proven: the next recording command folds from line 1 and publishes
    the view in its new form."""
    path = routine_state(proven_copy)
    right = path.read_bytes()
    doc = orjson.loads(right)
    st = ledger(proven_copy).stat()
    doc["ledger"] |= {"file": {"dev": st.st_dev, "ino": st.st_ino, "size": st.st_size,
                               "ctime_ns": st.st_ctime_ns}, "digest": "0" * 64}
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    code, offsets = spied(proven_copy, "run", "--due", "--now", T2)
    assert (0, [0], right) == (code, offsets, path.read_bytes())
    assert 0 == cli(proven_copy, "fold", "--check").returncode


def test_a_snapshot_for_another_view_is_not_trusted(proven_copy: Path) -> None:
    """A snapshot that matches the ledger file but not the view's bytes, or whose head does
    not match the ledger line it names (forged, both the view and the snapshot in step), is
    no proof: the chain is verified from line 1."""
    snap = orjson.loads(snapshot(proven_copy).read_bytes())
    snapshot(proven_copy).write_bytes(orjson.dumps({**snap, "view_sha256": "0" * 64}))
    assert (0, [0]) == spied(proven_copy, "list")
    view = orjson.loads(routine_state(proven_copy).read_bytes())
    view["ledger"]["head"] = "f" * 64
    forged = orjson.dumps(view, option=orjson.OPT_INDENT_2) + b"\n"
    routine_state(proven_copy).write_bytes(forged)
    snapshot(proven_copy).write_bytes(orjson.dumps(
        {**snap, "head": "f" * 64, "view_sha256": hashlib.sha256(forged).hexdigest()}) + b"\n")
    assert (0, [0]) == spied(proven_copy, "list")


def _forge(root: Path, code: str) -> tuple[bytes, bytes]:
    """Edit the view (one status) and put the snapshot in step with it (its ``view_sha256``),
    with ``code`` as the fingerprint of the code that proved it: a view another fold
    published, and its proof. Returns the right bytes and the edited ones."""
    path = routine_state(root)
    right = path.read_bytes()
    edited = right.replace(b'"status": "skipped"', b'"status": "success"', 1)
    assert edited != right
    path.write_bytes(edited)
    snap = orjson.loads(snapshot(root).read_bytes())
    snapshot(root).write_bytes(orjson.dumps(
        {**snap, "code": code, "view_sha256": hashlib.sha256(edited).hexdigest()}) + b"\n")
    return right, edited


def test_a_snapshot_written_by_other_code_is_not_trusted(proven_copy: Path) -> None:
    """The snapshot records the fingerprint of the code that proved the view: after an
    upgrade (another fingerprint, everything else in step) the view the old code published
    is not carried on - `list` verifies the chain from line 1, the next recording command
    folds from scratch, replaces the view and writes a snapshot of this code, which the
    command after it trusts. The same forgery with this code's fingerprint is trusted: the
    fingerprint alone made the difference."""
    right, _ = _forge(proven_copy, "0" * 64)
    assert (0, [0]) == spied(proven_copy, "list")
    code, offsets = spied(proven_copy, "run", "--due", "--now", T2)
    assert (0, [0], right) == (code, offsets, routine_state(proven_copy).read_bytes())
    assert codeprint.fingerprint() == orjson.loads(snapshot(proven_copy).read_bytes())["code"]
    assert (0, []) == spied(proven_copy, "list")
    _, edited = _forge(proven_copy, codeprint.fingerprint())
    code, offsets = spied(proven_copy, "run", "--due", "--now", T2)
    assert (0, [], edited) == (code, offsets, routine_state(proven_copy).read_bytes())


def test_a_snapshot_is_never_read_through_a_symlink_or_from_a_fifo(proven_copy: Path,
                                                                    tmp_path: Path) -> None:
    """A symlink in the snapshot's place (even to a valid snapshot) is not followed, a FIFO
    is not waited on: both cost a full fold; a recording command replaces either with a
    regular file and leaves the symlink's target alone."""
    path = snapshot(proven_copy)
    target = tmp_path / "elsewhere.json"
    target.write_bytes(path.read_bytes())
    before = target.stat().st_mtime_ns
    path.unlink()
    path.symlink_to(target)
    assert (0, [0]) == spied(proven_copy, "list")
    assert 0 == cli(proven_copy, "run", "--due", "--now", T2).returncode
    assert (True, before) == (stat.S_ISREG(path.lstat().st_mode), target.stat().st_mtime_ns)
    path.unlink()
    os.mkfifo(path)
    assert (0, [0]) == spied(proven_copy, "list", timeout=60)
    assert 0 == cli(proven_copy, "run", "--due", "--now", T2, timeout=60).returncode
    assert stat.S_ISREG(path.lstat().st_mode)
    assert (0, []) == spied(proven_copy, "list")
