"""The chain helper (store/chainhelper.py): a second process hashes a long ledger's lines while
this one folds them. Its hashes are evidence, never the verdict: whatever it sends, the fold
ends as it would have without it, and a chain that is broken is reported the same way."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.core import events as ev
from specdojo_routine.core.errors import CorruptLedgerError
from specdojo_routine.store import chain, chainhelper, ledger, proven
from tests.conftest import children

LINES = 3000
CHANGED = 1500  # the line an edit changes (well past the first chunk)


@pytest.fixture()
def big(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A chained ledger of LINES events read in ~150 chunks; the helper starts for any range
    and every chunk waits for its hashes, so that who hashed what does not depend on timing."""
    path = tmp_path / "routine-runs.jsonl"
    ledger.Ledger(path).append_many(
        ev.RoutineRegistered(routine_id=f"rtn-{n % 20:02d}", digest=f"{n:064d}",
                             path=f"routines/rtn-{n % 20:02d}.yaml") for n in range(LINES))
    monkeypatch.setattr(chain, "_READ_CHUNK", 4096)
    monkeypatch.setattr(chainhelper, "MIN_BYTES", 0)
    monkeypatch.setattr(chainhelper, "WAIT_FOR_HELPER", True)
    return path


def _alone(path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The fold without a helper: the reference."""
    with monkeypatch.context() as m:
        m.setattr(chainhelper, "MIN_BYTES", 1 << 62)
        return proven.from_scratch(path).document()


def _hashed_here(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the lines this process hashes itself."""
    counted = [0]
    inline = chainhelper.inline

    def counting(texts: list[bytes]) -> bytes:
        counted[0] += len(texts)
        return inline(texts)

    monkeypatch.setattr(chainhelper, "inline", counting)
    return counted


def _edit(path: Path, line: int) -> None:
    """Change one digit of line ``line`` in place (same length)."""
    lines = path.read_bytes().split(b"\n")
    lines[line - 1] = lines[line - 1].replace(b'"digest":"0', b'"digest":"9', 1)
    path.write_bytes(b"\n".join(lines))


def _helpers_running() -> list[int]:
    """This process's chain helpers still running (those of other test workers are theirs)."""
    found = []
    for pid in children(os.getpid()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"# specdojo_routine chain helper" in cmdline:
            found.append(pid)
    return found


def test_the_helper_hashes_the_lines_and_the_fold_is_the_same(
    big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _alone(big, monkeypatch)
    hashed_here = _hashed_here(monkeypatch)
    assert expected == proven.from_scratch(big).document()
    assert 0 == hashed_here[0]  # every chunk took the helper's hashes
    assert [] == _helpers_running()


def test_a_changed_line_is_reported_as_without_the_helper(
    big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _edit(big, CHANGED)
    with pytest.raises(CorruptLedgerError) as alone:
        _alone(big, monkeypatch)
    with pytest.raises(CorruptLedgerError) as helped:
        proven.from_scratch(big)
    assert CHANGED == helped.value.line
    assert str(alone.value) == str(helped.value)
    assert [] == _helpers_running()


@pytest.mark.parametrize("script", [
    chainhelper._SCRIPT.replace("sha(line).digest()", "bytes(32)"),  # wrong hashes
    chainhelper._SCRIPT.replace("sha(line).digest()", "sha(line + b'x').digest()"),
    "import os\nos._exit(3)\n",  # dies at once
    chainhelper._SCRIPT.replace("        out.write(", "        out.write(b'z' * 7 or "),  # short
])
def test_a_faulty_helper_changes_nothing(
    big: Path, monkeypatch: pytest.MonkeyPatch, script: str
) -> None:
    """Wrong, missing or short hashes: the good ledger folds as without it, the edited one is
    refused at the same line."""
    expected = _alone(big, monkeypatch)
    monkeypatch.setattr(chainhelper, "_SCRIPT", script)
    assert expected == proven.from_scratch(big).document()
    _edit(big, CHANGED)
    with pytest.raises(CorruptLedgerError) as info:
        proven.from_scratch(big)
    assert CHANGED == info.value.line


def test_an_edit_while_the_helper_reads_is_still_found(
    big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper hashes the file, then the file is edited (before this process reads the
    edited line), then the helper sends the hashes of the bytes before the edit: they match
    the chain, but the file changed during the fold, so the range is checked again here."""
    lines = big.read_bytes().split(b"\n")
    digit = lines[CHANGED - 1].index(b'"digest":"0') + len(b'"digest":"')
    at = sum(len(x) + 1 for x in lines[:CHANGED - 1]) + digit
    race = (
        "# specdojo_routine chain helper\n"
        "import hashlib, sys, time\n"
        "path, pos, end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
        "data = open(path, 'rb').read()[pos:end].split(b'\\n')[:-1]\n"
        "digests = b''.join(hashlib.sha256(line).digest() for line in data)\n"
        "time.sleep(0.05)\n"
        f"with open(path, 'r+b') as f:\n    f.seek({at})\n"
        "    f.write(b'9')\n"
        "sys.stdout.buffer.write(digests)\n"
    )
    monkeypatch.setattr(chainhelper, "_SCRIPT", race)
    with pytest.raises(CorruptLedgerError) as info:
        proven.from_scratch(big)
    assert CHANGED == info.value.line
    assert [] == _helpers_running()


def test_a_short_range_starts_no_helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "routine-runs.jsonl"
    ledger.Ledger(path).append_many(
        ev.RoutineRegistered(routine_id="rtn-a", digest=f"{n:064d}", path="routines/a.yaml")
        for n in range(10))
    started: list[object] = []
    monkeypatch.setattr(chainhelper, "_spawn", lambda *a: started.append(a))
    assert 10 == proven.from_scratch(path).state.seq
    assert [] == started


def test_prevs_that_only_add_up_to_the_chain_are_refused(tmp_path: Path) -> None:
    """Line 2's prev is line 1's hash less its last character, line 3's prev starts with that
    character: end to end the prevs spell the chain, one by one they do not (the fast check
    compares them one by one, not concatenated)."""
    path = tmp_path / "routine-runs.jsonl"
    ledger.Ledger(path).append_many(
        ev.RoutineRegistered(routine_id="rtn-a", digest=f"{n:064d}", path="routines/a.yaml")
        for n in range(4))
    raws = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    lines: list[bytes] = []
    for n, raw in enumerate(raws):
        if n == 1:
            raw["prev"] = chain.line_hash(lines[0])[:-1]
        elif n == 2:
            raw["prev"] = chain.line_hash(lines[0])[-1] + chain.line_hash(lines[1])
        elif n == 3:
            raw["prev"] = chain.line_hash(lines[2])
        lines.append(orjson.dumps(raw))
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(CorruptLedgerError) as info:
        proven.from_scratch(path)
    assert 1 == info.value.line
