"""Time at the edges: every year 1-9999 formats and parses as 4-digit ISO, or is refused with
one line."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from specdojo_routine.core.timefmt import format_ms, format_s, parse_instant
from tests.conftest import Project


@pytest.mark.parametrize("year", [1, 9, 99, 999, 1000, 2026, 9999])
def test_every_year_formats_as_four_digits_and_parses_back(year: int) -> None:
    """format_ms/format_s pad the year; parse_instant reads it back."""
    when = datetime(year, 6, 1, 12, 30, 5, 123000, tzinfo=UTC)
    assert f"{year:04d}-06-01T12:30:05.123Z" == format_ms(when)
    assert f"{year:04d}-06-01T12:30:05Z" == format_s(when)
    assert when == parse_instant(format_ms(when))


def test_an_instant_before_year_1_in_utc_is_a_value_error() -> None:
    """0001-01-01T00:00:00+01:00 is out of range: ValueError (a usage error in the CLI)."""
    with pytest.raises(ValueError, match="out of range"):
        parse_instant("0001-01-01T00:00:00+01:00")


def test_a_run_in_the_year_999_records_and_folds(project: Project) -> None:
    """`run --due --now 0999-06-01T00:00:00Z` (an internal error before) records 4-digit
    stamps; the ledger folds clean."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    done = project.cli("run", "--due", "--now", "0999-06-01T00:00:00Z")
    assert 0 == done.returncode, done.stderr
    started = [e for e in project.events() if e["type"] == "attempt_started"]
    assert ["0999-06-01T00:00:00.000Z"] == [e["scheduled_for"] for e in started]
    listing = project.cli("list", "--json", "--now", "0999-06-01T00:30:00Z")
    assert "internal error" not in listing.stderr
    assert "0999-06-01T00:00:00Z" == orjson.loads(listing.stdout)["routines"][0]["last_run"]
    assert 0 == project.cli("fold", "--check").returncode
    bad = project.cli("list", "--now", "0001-01-01T00:00:00+01:00")
    assert 2 == bad.returncode and 1 == len(bad.stderr.splitlines())


@pytest.mark.parametrize(("command", "recorded"), [
    ('echo "password=hunter22"; done', 'echo "password=[REDACTED]"; done'),
    ("curl -d 'token=abc123xyz' x", "curl -d 'token=[REDACTED]' x"),
    ('env auth="s e c r e t" next', 'env auth="[REDACTED]" next'),
    ('export API_KEY=abc"def" && go', "export API_KEY=[REDACTED] && go"),
])
def test_redacted_commands_keep_their_shell_quoting(command: str, recorded: str) -> None:
    """A secret inside a quoted word is redacted without eating the closing quote."""
    import shlex

    from specdojo_routine.core.redact import redact

    assert recorded == redact(command)
    shlex.split(redact(command))  # still valid shell quoting


def test_after_the_clock_went_back_list_shows_the_occurrence_that_will_run(
    project: Project,
) -> None:
    """A cron routine last scheduled at 12:00; the clock now says 10:30: the next occurrence
    is 13:00 (10:00-12:00 were consumed and will not run again), and run --due agrees."""
    project.routine("rtn-c", 'trigger: {cron: "0 * * * *", timezone: UTC}\n'
                             "action: {kind: specdojo, args: [one]}\n")
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T12:00:30Z").returncode
    listing = orjson.loads(project.cli("list", "--json", "--now", "2026-05-01T10:30:00Z").stdout)
    assert "2026-05-01T13:00:00.000Z" == listing["routines"][0]["next_occurrence"]
    assert "no due routines" in project.cli("run", "--due", "--now", "2026-05-01T11:00:30Z").stdout
