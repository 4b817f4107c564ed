"""`history`: attempts, not events, filters, reading from the end, and unknown ids (SPEC §14)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import orjson
import pytest

from specdojo_routine.cli.main import main
from specdojo_routine.core.errors import CorruptLedgerError
from specdojo_routine.store.ledger import backwards
from specdojo_routine.store.ledger import journal as ledger
from tests.ledgergen import write_ledger
from tests.weekhistory import Week, write_project


def test_reading_backwards_gives_every_line_newest_first(week: Week) -> None:
    """The backward reader hands out exactly the stored lines, upgraded, in reverse order."""
    forward = list(ledger.read_lines(week.ledger))
    assert forward[::-1] == list(backwards.read_backwards(week.ledger))


def test_reading_backwards_checks_the_chain_it_crosses(tmp_path: Path) -> None:
    """A line changed after it was written is damage once the reader reaches it."""
    path = tmp_path / "routine-runs.jsonl"
    write_ledger(path, 200, ["rtn-a"])
    lines = path.read_bytes().splitlines(keepends=True)
    lines[100] = lines[100].replace(b'"at":"2026', b'"at":"2027')
    path.write_bytes(b"".join(lines))
    newest = backwards.read_backwards(path)
    assert 3 == len([next(newest) for _ in range(3)])  # the end is intact
    with pytest.raises(CorruptLedgerError, match=r":101: line 101 does not hash"):
        list(newest)


def _spy_on_parses(monkeypatch: pytest.MonkeyPatch) -> tuple[list[bytes], io.StringIO]:
    """(every line the backward reader parses from now on, what the command prints)."""
    parsed: list[bytes] = []

    def spy(text: bytes) -> object:
        parsed.append(text)
        return orjson.loads(text)

    monkeypatch.setattr(backwards, "_parse", spy)
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    return parsed, out


def test_history_limit_reads_from_the_end(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`history --limit 1` on a 20,000-event ledger parses one line, whatever its length."""
    week = write_project(tmp_path / "proj")
    write_ledger(week.ledger, 20_000, ["rtn-sync", "rtn-cleanup"])
    parsed, out = _spy_on_parses(monkeypatch)
    code = main(["history", "--limit", "1", "--json", "--root", str(week.root)])
    assert (0, 1, out.getvalue().encode()) == (code, len(parsed), parsed[0] + b"\n")
    parsed.clear()
    code = main(["history", "rtn-sync", "--attempts", "--limit", "2", "--root",
                     str(week.root)])
    assert (0, True) == (code, len(parsed) <= 16)  # two attempts: at most four of both


def test_history_since_stops_at_the_first_older_event(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`history --since T` (events) reads from the end and stops at the first event recorded
    before T (SPEC §15): on a 20,000-event ledger, three newer events cost four parses."""
    from datetime import UTC, datetime

    from specdojo_routine.core import routine_events

    week = write_project(tmp_path / "proj")
    write_ledger(week.ledger, 20_000, ["rtn-sync", "rtn-cleanup"])
    before = week.ledger.read_bytes().count(b"\n")
    log = ledger.Ledger(week.ledger, clock=lambda: datetime(2026, 9, 1, tzinfo=UTC))
    for n in range(3):
        log.append(routine_events.RoutineRegistered(routine_id="rtn-sync", digest=f"{n}" * 64,
                                            path="routines/rtn-sync.yaml"))
    parsed, out = _spy_on_parses(monkeypatch)
    code = main(["history", "--since", "2026-08-30T00:00:00Z", "--json", "--root",
                 str(week.root)])
    shown = [orjson.loads(line) for line in out.getvalue().splitlines()]
    assert (0, [before + 1, before + 2, before + 3], 4) == (
        code, [e["seq"] for e in shown], len(parsed))


def test_history_attempts_is_one_line_per_attempt(week: Week) -> None:
    """`--attempts`: scheduled, started, ended, duration, result, trigger, reason."""
    done = week.cli("history", "rtn-nightly-export", "--attempts")
    lines = done.stdout.splitlines()
    assert (0, ["SCHEDULED", "(UTC)", "STARTED", "ENDED", "TOOK", "RESULT", "TRIGGER",
                "REASON"], 9) == (done.returncode, lines[0].split(), len(lines))
    # how long it took is real time: 0s, or more on a loaded machine
    assert re.fullmatch(r"2026-08-03 00:00  00:00    00:00  \d+s +failure  due      action 1 "
                        r"\(job\): command exited with code 3", lines[1]), lines[1]


def test_history_filters_by_time_and_result(week: Week) -> None:
    """`--since/--until` select attempts by their scheduled time; `--result` by result; with
    `--json`, one attempt per line."""
    done = week.cli("history", "--attempts", "--json", "--since", "2026-08-07T00:00:00Z",
                    "--until", "2026-08-08T00:00:00Z", "--result", "failure")
    found = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert [("rtn-cleanup", "2026-08-07T00:00:00.000Z"),
            ("rtn-nightly-export", "2026-08-07T00:00:00.000Z"),
            ("rtn-cleanup", "2026-08-08T00:00:00.000Z"),
            ("rtn-nightly-export", "2026-08-08T00:00:00.000Z")] == [
        (a["routine_id"], a["scheduled_for"]) for a in found]


def test_history_event_filters(week: Week) -> None:
    """Events: `--result` looks at an event's result; `--since` after every event is empty;
    `--limit` keeps the newest."""
    failed = week.cli("history", "rtn-cleanup", "--result", "failure", "--json")
    types = {orjson.loads(line)["type"] for line in failed.stdout.splitlines()}
    later = week.cli("history", "--since", "2999-01-01T00:00:00Z")
    last = week.cli("history", "--limit", "2", "--json").stdout.splitlines()
    assert ({"action_ended", "attempt_ended"}, "no events\n") == (types, later.stdout)
    assert [len(week.events()) - 1, len(week.events())] == [orjson.loads(x)["seq"]
                                                            for x in last]


def test_history_since_later_than_until_is_a_usage_error(week: Week) -> None:
    """`--since` after `--until` selects nothing whatever the ledger holds: exit 2 with one
    line saying so, where it printed "no events" as if the ledger had none in that span."""
    for attempts in ([], ["--attempts"]):
        done = week.cli("history", *attempts, "--since", "2026-08-08T00:00:00Z",
                        "--until", "2026-08-07T00:00:00Z")
        assert (2, "", 1) == (done.returncode, done.stdout, len(done.stderr.splitlines()))
        assert "--since 2026-08-08T00:00:00Z is later than --until 2026-08-07T00:00:00Z" \
            in done.stderr and "swap" in done.stderr


def test_history_of_an_unknown_routine_says_did_you_mean(week: Week) -> None:
    """`history rtn-typo` is an error (exit 2), not "no events"."""
    done = week.cli("history", "rtn-nigthly-export")
    assert (2, 'error: unknown routine "rtn-nigthly-export"; did you mean rtn-nightly-export? '
            "(see `list`)\n") == (done.returncode, done.stderr)


def test_every_command_taking_a_routine_id_refuses_a_typo(week_copy: Week) -> None:
    """run --id, resolve, release, next, status, logs, history, pause, resume, stop: exit 2
    with did you mean (SPEC §14: every command that takes one)."""
    typo = "rtn-cleanpu"
    for args in (["run", "--id", typo], ["resolve", typo, "--result", "failure", "--note", "x"],
                 ["release", typo], ["next", typo], ["status", typo], ["logs", typo],
                 ["history", typo], ["pause", typo], ["resume", typo], ["stop", typo]):
        done = week_copy.cli(*args)
        assert (2, True) == (done.returncode, "did you mean rtn-cleanup?" in done.stderr), args


class _Sink(io.TextIOBase):
    """A stdout that counts lines and keeps none of them."""

    lines = 0

    def write(self, text: str) -> int:
        self.lines += text.count("\n")
        return len(text)


@pytest.mark.parametrize("as_json", [[], ["--json"]])
def test_history_of_the_whole_ledger_is_written_as_it_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_json: list[str]) -> None:
    """`history` without --limit or --since prints every event, holding one at a time: on a
    10,000-event ledger its peak memory stays far below the ledger's size (holding every line
    and event took about 2.5 KB an event, 2.5 GB for a million)."""
    import tracemalloc

    week = write_project(tmp_path / "proj")
    write_ledger(week.ledger, 10_000, ["rtn-sync", "rtn-cleanup"])
    events = week.ledger.read_bytes().count(b"\n")
    sink = _Sink()
    monkeypatch.setattr("sys.stdout", sink)
    tracemalloc.start()
    try:
        code = main(["history", *as_json, "--root", str(week.root)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (0, events + (0 if as_json else 1)) == (code, sink.lines)
    assert peak < week.ledger.stat().st_size // 2
