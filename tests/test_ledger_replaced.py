"""A ledger replaced while a run is in progress (a `git checkout`, a sync client, a restore
renames another file over it, or moves it away) gets nothing from that run: the runner appends
only to the file it folded, or stops with one line (SPEC §5: appended lines continue the file
they were decided from).

The first action of the routine does the replacing itself, for real (`mv`), from a delegated
command; the second action must then never be delegated.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from specdojo_routine.core.errors import ReplacedLedgerError
from specdojo_routine.core.routine_events import RoutineRegistered
from specdojo_routine.store.ledger import journal
from tests.conftest import Project

T0 = "2026-05-01T10:00:30Z"
T1 = "2026-05-01T11:00:30Z"
T2 = "2026-05-01T12:00:30Z"


def _swapping_cli(project: Project, command: str) -> dict[str, str]:
    """A SpecDojo CLI stand-in: logs its arguments; with ``swap`` it runs ``command`` first."""
    script = project.root / "swapping-cli"
    script.write_text('#!/bin/sh\nprintf \'%s\\n\' "$*" >> "$FAKE_SPECDOJO_LOG"\n'
                      f'case "$*" in *swap*) {command} ;; esac\nexit 0\n')
    script.chmod(0o755)
    return project.env(SPECDOJO_CLI=str(script))


def _routine(project: Project) -> None:
    project.routine("rtn-two", """\
        interval: 1h
        action:
          - {kind: specdojo, args: [swap]}
          - {kind: specdojo, args: [second]}
        """)


def _types(ledger: Path) -> list[str]:
    return [orjson.loads(line)["type"] for line in ledger.read_bytes().splitlines()]


def test_a_ledger_renamed_over_mid_attempt_gets_nothing_and_the_run_stops(
    project: Project,
) -> None:
    """A copy of the ledger from before this run is renamed over it by the first action: no
    line reaches the new file, the second action is not delegated, stderr is one `error:`
    line naming the ledger, exit 1; `list` and the next `run` work on the new file."""
    _routine(project)
    copy = project.root / "ledger-before.jsonl"
    assert 0 == project.cli("run", "--due", "--now", T0).returncode
    env = _swapping_cli(project, f'mv "{copy}" "{project.ledger}"')
    shutil.copyfile(project.ledger, copy)
    before = copy.read_bytes()
    done = project.cli("run", "--due", "--now", T1, env=env)
    assert 1 == done.returncode
    assert 1 == len(done.stderr.splitlines()), done.stderr
    assert done.stderr.startswith(f"error: {project.ledger}: the ledger was replaced")
    assert before == project.ledger.read_bytes()  # not a byte appended to the new file
    assert ["swap", "second", "swap"] == [c.split()[0] for c in project.calls()]
    listed = project.cli("list", "--now", T1, env=env)
    assert 0 == listed.returncode, listed.stderr
    again = project.cli("run", "--due", "--now", T2, env=env)
    assert 0 == again.returncode, again.stderr
    assert _types(project.ledger)[-1] == "attempt_ended"
    assert 0 == project.cli("fold", "--check", env=env).returncode


def test_a_ledger_moved_away_mid_attempt_is_not_created_again(project: Project) -> None:
    """The first action moves the ledger away: the runner stops with one line and creates no
    new ledger at its path; the moved file keeps the open attempt for an operator."""
    _routine(project)
    moved = project.root / "ledger-moved.jsonl"
    assert 0 == project.cli("run", "--due", "--now", T0).returncode
    env = _swapping_cli(project, f'mv "{project.ledger}" "{moved}"')
    done = project.cli("run", "--due", "--now", T1, env=env)
    assert 1 == done.returncode
    assert 1 == len(done.stderr.splitlines()), done.stderr
    assert done.stderr.startswith(f"error: {project.ledger}: the ledger was moved away")
    assert not project.ledger.exists()
    assert ["action_started", "attempt_started"] == sorted(_types(moved)[-2:])


def test_a_handle_appends_only_to_the_file_it_was_made_for(tmp_path: Path) -> None:
    """Ledger is pinned to the file at its path when made (or by the append creating it): a
    file renamed over it gets nothing, and a moved-away one is not created again."""
    path = tmp_path / "routine-runs.jsonl"
    event = RoutineRegistered(routine_id="rtn-a", digest="0" * 64, path="routines/rtn-a.yaml")
    log = journal.Ledger(path)
    assert [1, 2] == [log.append(event), log.append(event)]
    other = tmp_path / "other.jsonl"
    shutil.copyfile(path, other)
    other.replace(path)
    with pytest.raises(ReplacedLedgerError) as renamed_over:
        log.append(event)
    assert not renamed_over.value.gone
    assert 2 == len(path.read_bytes().splitlines())
    path.rename(other)
    with pytest.raises(ReplacedLedgerError) as moved_away:
        log.append(event)
    assert moved_away.value.gone
    assert not path.exists()
    assert 3 == journal.Ledger(other).append(event)  # a new handle takes the file now there
