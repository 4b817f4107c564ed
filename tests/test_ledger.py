"""The ledger file (SPEC §5, §6.2): locked fsync'd appends, reading, torn tails, damage."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.core import routine_events as rev
from specdojo_routine.core.errors import CorruptLedgerError, TornLedgerError
from specdojo_routine.store.ledger import journal as ledger

T0 = datetime(2026, 8, 7, 8, 0, tzinfo=UTC)


def registered(n: int = 0) -> rev.RoutineRegistered:
    return rev.RoutineRegistered(routine_id="rtn-a", digest=f"d{n}", path="routines/rtn-a.yaml")


class Ticks:
    """A wall clock that advances one second per call."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "routines" / "generated" / "routine-runs.jsonl"


def lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def spy_on(monkeypatch: pytest.MonkeyPatch, name: str) -> list[tuple[Any, ...]]:
    """Record the arguments of every call of ``os.<name>`` (which still happens)."""
    calls: list[tuple[Any, ...]] = []
    real = getattr(os, name)

    def recording(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(os, name, recording)
    return calls


def filled(path: Path, n: int) -> ledger.Ledger:
    log = ledger.Ledger(path, clock=Ticks())
    log.append_many([registered(i) for i in range(n)])
    return log


# --- appending -------------------------------------------------------------------------------


def test_first_append_creates_parents_and_has_seq_1(path: Path) -> None:
    """The first append creates the directories and is seq 1."""
    assert 1 == ledger.Ledger(path).append(registered())
    assert [1] == [raw["seq"] for raw in lines(path)]


def test_seq_is_contiguous_across_handles(path: Path) -> None:
    """Two handles on one file continue each other's seq."""
    a, b = ledger.Ledger(path), ledger.Ledger(path)
    assert [1, 2, 3, 4] == [a.append(registered()), b.append(registered()),
                            a.append(registered()), b.append(registered())]
    assert [1, 2, 3, 4] == [raw["seq"] for raw in lines(path)]


def test_at_comes_from_the_injected_clock(path: Path) -> None:
    """`at` is the injected wall clock, in UTC with milliseconds."""
    ledger.Ledger(path, clock=lambda: T0 + timedelta(milliseconds=7)).append(registered())
    assert "2026-08-07T08:00:00.007Z" == lines(path)[0]["at"]


def test_append_many_returns_the_seqs_in_order(path: Path) -> None:
    """A batch gets consecutive seqs after what is there."""
    log = filled(path, 2)
    assert [3, 4, 5] == log.append_many([registered(3), registered(4), registered(5)])
    assert ["d0", "d1", "d3", "d4", "d5"] == [raw["digest"] for raw in lines(path)]


def test_append_many_fsyncs_once(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch is one lock and one fsync of the ledger."""
    log = filled(path, 1)
    calls = spy_on(monkeypatch, "fsync")
    log.append_many([registered(i) for i in range(10)])
    assert 1 == len(calls)


def test_each_append_is_fsynced(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A single append reaches the disk before it returns."""
    log = filled(path, 1)
    calls = spy_on(monkeypatch, "fsync")
    log.append(registered())
    log.append(registered())
    assert 2 == len(calls)


def test_empty_batch_writes_nothing(path: Path) -> None:
    """append_many([]) does not even create the file."""
    assert [] == ledger.Ledger(path).append_many([])
    assert not path.exists()


def test_last_seq_is_read_from_the_end(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An append reads only the tail of a large ledger, not the whole file."""
    log = filled(path, 3000)
    reads = spy_on(monkeypatch, "pread")
    assert 3001 == log.append(registered())
    assert sum(size for _fd, size, _offset in reads) < path.stat().st_size // 20


def test_tail_handles_lines_longer_than_a_read_chunk(path: Path) -> None:
    """A last line longer than the backwards-read chunk still gives its seq."""
    log = filled(path, 2)
    log.append(rev.RoutineRegistered(routine_id="rtn-a", digest="x" * 200_000, path="p"))
    assert 4 == log.append(registered())


# --- reading ---------------------------------------------------------------------------------


def test_read_yields_line_numbers_offsets_and_text(path: Path) -> None:
    """Each line comes with its number, byte span and exact stored text."""
    filled(path, 3)
    data = path.read_bytes()
    got = list(ledger.read(path))
    assert [1, 2, 3] == [g.line for g in got]
    assert [data[g.offset:g.end] for g in got] == [g.text + b"\n" for g in got]
    assert len(data) == got[-1].end and 0 == got[0].offset


def test_read_from_an_offset(path: Path) -> None:
    """Reading can start at a line's offset, numbering from that line."""
    filled(path, 4)
    third = list(ledger.read(path))[2]
    assert [3, 4] == [g.line for g in ledger.read(path, third.offset, 3)]


def test_missing_ledger_has_no_lines(tmp_path: Path) -> None:
    """A ledger that does not exist yet is empty, not an error."""
    assert [] == list(ledger.read(tmp_path / "nope.jsonl"))
    assert ledger.Tail(size=0, end=0, seq=0, torn=False) == ledger.tail(tmp_path / "nope.jsonl")


def test_read_lines_gives_stored_bytes_and_upgraded_events(path: Path) -> None:
    """history's reader: the line as stored, and the event at the current version."""
    path.parent.mkdir(parents=True)
    v0 = b'{"seq":1,"type":"routine_registered","at":"2026-08-07T08:00:00.000Z",' \
         b'"routine_id":"rtn-a","digest":"d","path":"p"}'
    path.write_bytes(v0 + b"\n")
    [(stored, event)] = list(ledger.read_lines(path))
    assert (v0, 1) == (stored, event["version"])


# --- torn tails ------------------------------------------------------------------------------

FRAGMENT = b'{"version":1,"seq":4,"type":"routine_reg'


@pytest.mark.parametrize("fragment", [FRAGMENT, FRAGMENT + b"\n", b"\x00\x00\x00\x00"],
                         ids=["no-newline", "invalid-json-line", "zero-fill"])
def test_torn_tail_is_reported_distinctly(path: Path, fragment: bytes) -> None:
    """A torn last line raises TornLedgerError naming its line, after the complete lines."""
    filled(path, 3)
    with path.open("ab") as f:
        f.write(fragment)
    seen: list[int] = []
    with pytest.raises(TornLedgerError, match=r"routine-runs\.jsonl:4: last line is torn"):
        seen.extend(line.line for line in ledger.read(path))
    assert [1, 2, 3] == seen
    assert [1, 2, 3] == [line.line for line in ledger.read(path, torn="stop")]


def test_a_complete_last_line_without_newline_is_torn(path: Path) -> None:
    """Valid JSON without its newline was never acknowledged: it is a torn tail too."""
    filled(path, 2)
    with path.open("ab") as f:
        f.write(orjson.dumps({"version": 1, "seq": 3}))
    assert ledger.tail(path).torn


def test_repair_moves_the_fragment_aside_and_truncates(path: Path) -> None:
    """repair: the fragment goes to <ledger>.torn-<seq>, the ledger ends at its last line."""
    filled(path, 3)
    whole = path.read_bytes()
    with path.open("ab") as f:
        f.write(FRAGMENT)
    moved = ledger.repair(path)
    assert path.with_name("routine-runs.jsonl.torn-4") == moved
    assert (whole, FRAGMENT) == (path.read_bytes(), moved.read_bytes())


def test_repair_of_a_clean_ledger_does_nothing(path: Path) -> None:
    """No torn tail, no file, no change."""
    filled(path, 2)
    before = path.read_bytes()
    assert ledger.repair(path) is None
    assert before == path.read_bytes()
    assert ["routine-runs.jsonl"] == sorted(p.name for p in path.parent.iterdir())


def test_repair_never_overwrites_an_earlier_fragment(path: Path) -> None:
    """A second tear at the same seq is kept next to the first one."""
    filled(path, 3)
    for fragment in (b"first", b"second"):
        with path.open("ab") as f:
            f.write(fragment)
        ledger.repair(path)
    found = {p.name: p.read_bytes() for p in path.parent.glob("*.torn-*")}
    assert {"routine-runs.jsonl.torn-4": b"first",
            "routine-runs.jsonl.torn-4.2": b"second"} == found


def test_append_repairs_a_torn_tail_first(path: Path) -> None:
    """The next locked append moves the fragment aside and takes the torn line's seq."""
    log = filled(path, 3)
    with path.open("ab") as f:
        f.write(FRAGMENT)
    assert 4 == log.append(registered(9))
    assert [1, 2, 3, 4] == [raw["seq"] for raw in lines(path)]
    assert FRAGMENT == path.with_name("routine-runs.jsonl.torn-4").read_bytes()


def test_a_ledger_that_is_only_a_fragment_is_repaired_to_empty(path: Path) -> None:
    """A crash during the very first append leaves an empty ledger after repair."""
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"version":1,"se')
    assert 1 == ledger.Ledger(path).append(registered())
    assert b'{"version":1,"se' == path.with_name("routine-runs.jsonl.torn-1").read_bytes()


# --- damage before the last line ---------------------------------------------------------------


def damage(path: Path, line: int, text: bytes) -> None:
    data = path.read_bytes().splitlines(keepends=True)
    data[line - 1] = text
    path.write_bytes(b"".join(data))


@pytest.mark.parametrize(("text", "reason"), [
    (b'{"version":1,"seq":2,"ty\n', "invalid JSON"),
    (b"[1, 2]\n", "line is not a JSON object"),
    (b'{"version":1,"seq":7,"type":"routine_registered"}\n', "seq 7 where 2 was expected"),
    (b"\n", "invalid JSON"),
], ids=["cut-json", "not-an-object", "wrong-seq", "blank"])
def test_damage_in_the_middle_names_file_and_line(path: Path, text: bytes, reason: str) -> None:
    """A bad line before the last one is a CorruptLedgerError with file, line and reason."""
    filled(path, 4)
    damage(path, 2, text)
    with pytest.raises(CorruptLedgerError, match=rf"routine-runs\.jsonl:2: {reason}"):
        list(ledger.read(path))


def test_damage_before_a_torn_tail_is_never_repaired(path: Path) -> None:
    """If the line before a fragment is bad too, append refuses and changes nothing."""
    log = filled(path, 3)
    damage(path, 3, b'{"broken\n')
    with path.open("ab") as f:
        f.write(FRAGMENT)
    before = path.read_bytes()
    with pytest.raises(CorruptLedgerError, match=r"routine-runs\.jsonl:3: line is not valid JSON"):
        log.append(registered())
    assert before == path.read_bytes()
    assert [] == list(path.parent.glob("*.torn-*"))


def test_a_last_line_without_seq_is_damage_not_a_tear(path: Path) -> None:
    """A complete, parsable last line that is no event is corrupt, not moved aside."""
    log = filled(path, 2)
    with path.open("ab") as f:
        f.write(b'{"hello":"world"}\n')
    with pytest.raises(CorruptLedgerError, match=r":3: line has no integer seq"):
        log.append(registered())


def test_line_ending_at(path: Path) -> None:
    """The line that ends exactly at an offset (for the incremental fold's prefix check)."""
    filled(path, 3)
    second = list(ledger.read(path))[1]
    assert second.text == ledger.line_ending_at(path, second.end)
    assert ledger.line_ending_at(path, second.end - 1) is None
    assert ledger.line_ending_at(path, path.stat().st_size + 5) is None
