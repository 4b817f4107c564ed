"""`list` of a project with neither a routine ledger nor a routine view (app/listing.py): every
routine is `never`; as soon as either file exists - ours, or a view another tool wrote - the view
is folded and imported."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from specdojo_routine.app import listing
from specdojo_routine.store.config import ProjectPaths, resolve_project
from tests.conftest import REPO, copy_source

DEMO = REPO / "fixtures" / "demo"
NOW = datetime(2026, 8, 7, 8, 2, tzinfo=UTC)


@pytest.fixture
def demo(tmp_path: Path) -> ProjectPaths:
    copy_source(DEMO, tmp_path / "demo")
    return resolve_project(tmp_path / "demo")


def test_a_project_never_run_lists_every_routine_as_never(demo: ProjectPaths) -> None:
    """Listing writes nothing: neither a ledger nor a view appears."""
    shown = listing.list_routines(demo, now=NOW, clock=lambda: NOW)
    assert (False, False) == (demo.routine_ledger.exists(), demo.routine_state.exists())
    assert {"never"} == {row.status for row in shown.rows}


def test_a_view_another_tool_wrote_without_a_ledger_is_read(demo: ProjectPaths) -> None:
    """The upstream CLI wrote routine-state.json and there is no ledger of ours yet."""
    demo.routine_state.parent.mkdir(parents=True, exist_ok=True)
    demo.routine_state.write_bytes(orjson.dumps({"version": 1, "routines": {"rtn-heartbeat": {
        "status": "success", "last_run": "2026-08-07T07:58:00Z", "last_result": "success"}}}))
    rows = {row.id: row for row in listing.list_routines(demo, now=NOW, clock=lambda: NOW).rows}
    assert ("success", "2026-08-07T07:58:00Z") == (rows["rtn-heartbeat"].status,
                                                    rows["rtn-heartbeat"].last_run)
    assert not demo.routine_ledger.exists()  # imported in memory only


def test_a_ledger_that_cannot_be_looked_at_is_not_taken_for_a_project_never_run(
    demo: ProjectPaths, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only "no such file" means never run: a routine directory the command may not search
    (EACCES; the tests run as root, so the refusal is simulated) goes to the ledger's reader,
    which says what is wrong, instead of listing every routine as never run."""
    real_lstat = os.lstat

    def refused(path: object, *args: object, **kwargs: object) -> os.stat_result:
        if Path(str(path)) == demo.routine_ledger:
            raise PermissionError(13, "Permission denied", str(path))
        return real_lstat(path, *args, **kwargs)  # type: ignore[arg-type]

    asked: list[ProjectPaths] = []
    from specdojo_routine.store.ledger import adopt

    plan = adopt.plan_routine_imports

    def spy(paths: ProjectPaths) -> adopt.RoutineImports:
        asked.append(paths)
        return plan(paths)

    monkeypatch.setattr(adopt, "plan_routine_imports", spy)
    listing.list_routines(demo, now=NOW, clock=lambda: NOW)
    assert [] == asked  # absent: nothing to read
    monkeypatch.setattr(os, "lstat", refused)
    listing.list_routines(demo, now=NOW, clock=lambda: NOW)
    assert [demo] == asked
