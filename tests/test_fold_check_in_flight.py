"""`fold --check` takes no lock (SPEC §5): a run appends a line and publishes the view a moment
later, so a check that reads between the two must not call that view drift, while a view a
killed writer left behind its ledger is still named. Found with `fold --check` in a loop beside
`run`."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdojo_routine.app import adoption
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.testing import hold_routine_lock
from tests.conftest import demo_that_ran


@pytest.fixture
def in_flight(tmp_path: Path) -> tuple[ProjectPaths, bytes]:
    """A demo project that ran rtn-heartbeat, its last line taken off and the views folded
    without it (from no view), then the line appended again: the state between a run's
    append and its publish. Also the line."""
    paths = demo_that_ran(tmp_path, "rtn-heartbeat")
    lines = paths.routine_ledger.read_bytes().splitlines(keepends=True)
    paths.routine_ledger.write_bytes(b"".join(lines[:-1]))
    paths.routine_state.unlink()  # else the fold would import it as another tool's write
    adoption.fold(paths)
    with paths.routine_ledger.open("ab") as f:
        f.write(lines[-1])
    return paths, lines[-1]


def test_a_view_published_a_moment_after_the_append_is_no_drift(
        in_flight: tuple[ProjectPaths, bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    """A run holds its lock and publishes during the check's first pause."""
    paths, _line = in_flight
    monkeypatch.setattr(adoption, "_writing", lambda paths: True)
    monkeypatch.setattr(adoption, "_pause", lambda seconds: adoption.fold(paths))
    assert [] == adoption.fold(paths, check=True).drifted


def test_a_view_left_behind_by_a_killed_writer_is_drift(
        in_flight: tuple[ProjectPaths, bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    """Nobody publishes: the view stays behind its ledger in every look, and is named; with
    no lock held (no run is writing) it is looked at once more and named without waiting,
    while the routine lock is held only after the pauses."""
    paths, _line = in_flight
    pauses: list[float] = []
    monkeypatch.setattr(adoption, "_pause", pauses.append)
    assert ["routines/generated/routine-state.json"] == adoption.fold(paths, check=True).drifted
    assert [] == pauses
    with hold_routine_lock(paths):  # a run holds its lock: the check waits for its publish
        assert ["routines/generated/routine-state.json"] == adoption.fold(
            paths, check=True).drifted
    assert list(adoption.RECHECK_PAUSES) == pauses
