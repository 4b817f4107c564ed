"""A view is evidence, not truth (SPEC §5 tamper evidence): the hash chain, views that record
what they cover, and refusal before anything is delegated or appended - end to end."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.core import events as ev
from specdojo_routine.core.errors import CorruptLedgerError
from specdojo_routine.store import chain, ledger, proven, views
from specdojo_routine.store.config import resolve_project
from tests.conftest import Project

NOW = "2026-05-01T10:00:30Z"
LATER = "2026-05-01T11:00:30Z"


def _wait_for(predicate: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def _interrupted(project: Project) -> None:
    """rtn-crash's runner is SIGKILLed while its action (a 30 s sleep) runs."""
    project.routine("rtn-crash", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        action: {kind: specdojo, args: [sleep-30]}
        """)
    proc = project.popen("run", "--due", "--now", NOW)
    _wait_for(lambda: len(project.calls()) == 1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    subprocess.run(["pkill", "-f", "sleep 30"], check=False)


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def test_every_appended_line_carries_the_hash_of_the_line_before(project: Project) -> None:
    """prev of line 1 is sha256(""), of line n the sha256 of line n-1's bytes."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    assert 0 == project.cli("run", "--due", "--now", NOW).returncode
    lines = _lines(project.ledger)
    expected = [hashlib.sha256(b"").hexdigest(),
                *(hashlib.sha256(line).hexdigest() for line in lines[:-1])]
    assert expected == [orjson.loads(line)["prev"] for line in lines]
    assert 0 == project.cli("fold", "--check").returncode


def test_a_hand_edited_view_is_not_believed(project: Project) -> None:
    """An interrupted routine set to success in routine-state.json by hand is still
    interrupted: run --due refolds, delivers nothing, appends nothing; fold stays clean."""
    _interrupted(project)
    state = orjson.loads(project.state_path.read_bytes())
    entry = state["routines"]["rtn-crash"]
    entry.update(status="success", last_result="success", open_attempt=None)
    project.state_path.write_bytes(orjson.dumps(state, option=orjson.OPT_INDENT_2) + b"\n")
    before, calls = project.ledger.read_bytes(), len(project.calls())
    again = project.cli("run", "--due", "--now", LATER)
    assert 1 == again.returncode, again.stdout + again.stderr
    assert "rtn-crash: interrupted" in again.stderr
    assert (before, calls) == (project.ledger.read_bytes(), len(project.calls()))
    assert "running" == project.state()["routines"]["rtn-crash"]["status"]
    assert 0 == project.cli("fold", "--check").returncode


def test_bytes_changed_mid_ledger_are_refused_before_anything_runs(project: Project) -> None:
    """Two bytes changed in the middle of the ledger (same length, still valid JSON): run
    --due refuses naming file and line, delivers nothing and appends nothing."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    assert 0 == project.cli("run", "--due", "--now", NOW).returncode
    lines = _lines(project.ledger)
    assert b'"kind":"specdojo"' in lines[2]  # action_started of rtn-a
    lines[2] = lines[2].replace(b'"index":1', b'"index":7')
    project.ledger.write_bytes(b"\n".join(lines) + b"\n")
    before, calls = project.ledger.read_bytes(), len(project.calls())
    again = project.cli("run", "--due", "--now", "2026-05-01T12:00:30Z")
    assert 1 == again.returncode
    assert f"{project.ledger}:3: line 3 does not hash to the prev that line 4" in again.stderr
    assert "restore the ledger from a backup" in again.stderr
    assert (before, calls) == (project.ledger.read_bytes(), len(project.calls()))
    check = project.cli("fold", "--check")
    assert 1 == check.returncode and ":3: line 3 does not hash" in check.stderr


def test_a_ledger_from_before_the_chain_still_reads_and_the_chain_starts_after_it(
    project: Project,
) -> None:
    """Lines without prev (older versions, upstream) stay valid; the next append chains on."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    assert 0 == project.cli("run", "--due", "--now", NOW).returncode
    old = [orjson.loads(line) for line in _lines(project.ledger)]
    for raw in old:
        del raw["prev"]
    project.ledger.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in old))
    project.state_path.unlink()
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T12:00:30Z").returncode
    lines = _lines(project.ledger)
    first_new = orjson.loads(lines[len(old)])
    assert hashlib.sha256(lines[len(old) - 1]).hexdigest() == first_new["prev"]
    assert 0 == project.cli("fold", "--check").returncode


# --- the protocol, in process --------------------------------------------------------------------


@pytest.fixture
def paths(project: Project) -> Any:
    return resolve_project(project.root)


def _registered(n: int) -> ev.RoutineRegistered:
    return ev.RoutineRegistered(routine_id="rtn-a", digest=f"{n}" * 64, path="routines/a.yaml")


def test_own_appends_continue_incrementally_and_anything_else_refolds(paths: Any) -> None:
    """After this process's own append the fold continues from the view; after a change by
    anyone else (here: a same-length edit of the last covered line) it starts from scratch."""
    log = ledger.Ledger(paths.routine_ledger)
    log.append_many([_registered(n) for n in range(3)])
    views.refresh_routine_view(paths)
    log.append(_registered(3))
    assert 3 == proven.prove(paths.routine_ledger, paths.routine_state).resumed_at
    views.refresh_routine_view(paths)
    data = paths.routine_ledger.read_bytes()
    paths.routine_ledger.write_bytes(data[:-3] + (b"4" if data[-3:-2] != b"4" else b"5") + data[-2:])
    assert 0 == proven.prove(paths.routine_ledger, paths.routine_state).resumed_at


def test_an_edited_view_is_refolded_even_in_canonical_form(paths: Any) -> None:
    """A view whose body no longer matches its digest is not continued from."""
    ledger.Ledger(paths.routine_ledger).append_many([_registered(n) for n in range(2)])
    views.refresh_routine_view(paths)
    assert 2 == proven.prove(paths.routine_ledger, paths.routine_state).resumed_at
    doc = orjson.loads(paths.routine_state.read_bytes())
    doc["routines"]["rtn-a"]["digest"] = "9" * 64
    paths.routine_state.write_bytes(views.render(doc))
    assert 0 == proven.prove(paths.routine_ledger, paths.routine_state).resumed_at
    assert "1" * 64 == views.refresh_routine_view(paths).get("rtn-a")["digest"]


def test_another_file_under_the_same_name_is_refolded(paths: Any) -> None:
    """A ledger replaced by another file (another inode) is folded from scratch."""
    ledger.Ledger(paths.routine_ledger).append_many([_registered(n) for n in range(2)])
    views.refresh_routine_view(paths)
    copy = paths.routine_ledger.with_name("copy.jsonl")
    copy.write_bytes(paths.routine_ledger.read_bytes())
    os.replace(copy, paths.routine_ledger)
    assert 0 == proven.prove(paths.routine_ledger, paths.routine_state).resumed_at


def test_a_broken_chain_is_found_wherever_it_is(tmp_path: Path) -> None:
    """A full fold names the first line whose hash is not its successor's prev."""
    path = tmp_path / "routine-runs.jsonl"
    ledger.Ledger(path).append_many([_registered(n) for n in range(6)])
    lines = _lines(path)
    lines[3] = lines[3].replace(b'"digest":"3', b'"digest":"8')
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(CorruptLedgerError) as info:
        proven.from_scratch(path)
    assert 4 == info.value.line
    with pytest.raises(CorruptLedgerError):
        list(ledger.read(path))


def test_chunked_chain_check_agrees_across_chunk_boundaries(tmp_path: Path,
                                                            monkeypatch: Any) -> None:
    """With tiny read chunks, lines cut by chunk boundaries are still checked and folded."""
    monkeypatch.setattr(chain, "_READ_CHUNK", 7)
    path = tmp_path / "routine-runs.jsonl"
    ledger.Ledger(path).append_many([_registered(n) for n in range(5)])
    assert 5 == proven.from_scratch(path).state.seq
    lines = _lines(path)
    lines[1] = lines[1].replace(b'"digest":"1', b'"digest":"7')
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(CorruptLedgerError) as info:
        proven.from_scratch(path)
    assert 2 == info.value.line
