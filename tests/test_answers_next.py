"""`next` without an id: the agenda of every enabled routine, soonest first, in UTC, local time
and relative (SPEC §14) - on a week of real history."""

from __future__ import annotations

from tests.weekhistory import AFTER, Week


def test_the_agenda_lists_every_routines_next_occurrence_soonest_first(week: Week) -> None:
    """One row per enabled routine: relative, UTC, local (for a routine with a zone)."""
    done = week.cli("next", "--now", AFTER)
    assert (0, [
        "IN      UTC               LOCAL                  ROUTINE",
        "in 11h  2026-08-10 12:00  -                      rtn-sync",
        "in 23h  2026-08-11 00:00  -                      rtn-cleanup",
        "in 23h  2026-08-11 00:00  2026-08-11 02:00 CEST  rtn-nightly-export",
        "in 4d   2026-08-14 08:00  2026-08-14 17:00 JST   rtn-weekly-report",
    ]) == (done.returncode, done.stdout.splitlines())


def test_the_agenda_takes_n_per_routine_and_json(week: Week) -> None:
    """`-n 2 --json`: two occurrences of each routine, merged soonest first, one pretty
    document with the routine, zone, local and UTC times (`retry` and `supersedes` null:
    none of these routines waits for a retry)."""
    done = week.cli("next", "-n", "2", "--json", "--now", AFTER)
    doc = week.json("next", "-n", "2", "--json", "--now", AFTER)
    utc = [o["utc"] for o in doc["occurrences"]]
    assert (True, 8, sorted(utc), ["routine_id", "timezone", "local", "utc", "note",
                                   "latest_start", "standing", "retry", "supersedes"]) == (
        done.stdout.startswith('{\n  "now": "2026-08-10T00:30:00Z"'), len(utc), utc,
        list(doc["occurrences"][0]))
    assert {"rtn-weekly-report": "2026-08-14T17:00:00+09:00"} == {
        o["routine_id"]: o["local"] for o in doc["occurrences"]
        if o["routine_id"] == "rtn-weekly-report" and o["utc"].startswith("2026-08-14")}


def test_a_disabled_routine_is_not_on_the_agenda(week_copy: Week) -> None:
    """Only enabled routines have a next occurrence."""
    path = week_copy.root / "routines" / "rtn-sync.yaml"
    path.write_text(path.read_text() + "enabled: false\n")
    ids = [o["routine_id"] for o in week_copy.json("next", "--json", "--now", AFTER)[
        "occurrences"]]
    assert ["rtn-cleanup", "rtn-nightly-export", "rtn-weekly-report"] == ids


def test_the_agenda_marks_a_paused_routine(week_copy: Week) -> None:
    """A paused routine stays on the agenda (its occurrences are recorded), with a note that
    they will be recorded as paused, not run, and `standing` in the JSON, as `next ID` and
    `status` say: the agenda answered "what runs next" with occurrences that would not run."""
    assert 0 == week_copy.cli("pause", "rtn-sync", "--now", AFTER).returncode
    lines = week_copy.cli("next", "--now", AFTER).stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.endswith("rtn-sync"))
    assert "  note: paused: recorded as paused, not run, until `resume rtn-sync`" == lines[at + 1]
    doc = week_copy.json("next", "--json", "--now", AFTER)
    assert {"rtn-sync": "paused", "rtn-cleanup": None} == {
        o["routine_id"]: o["standing"] for o in doc["occurrences"]
        if o["routine_id"] in ("rtn-sync", "rtn-cleanup")}


def test_local_times_carry_milliseconds_like_their_utc_twin() -> None:
    """An interval routine's next time keeps the milliseconds of its last run: `local` shows
    them as `utc` does (``.829``), not as Python's six-digit microseconds (``.829000``)."""
    from datetime import UTC, datetime

    from specdojo_routine.core import preview

    at = datetime(2026, 12, 6, 17, 17, 26, 829000, tzinfo=UTC)
    shown = preview.at_instant(at, "Asia/Tokyo")
    whole = preview.at_instant(at.replace(microsecond=0), "Europe/Berlin")
    assert ("2026-12-07T02:17:26.829+09:00", "2026-12-06T17:17:26.829Z") == (
        shown.local, shown.utc)
    assert "2026-12-06T18:17:26+01:00" == whole.local
