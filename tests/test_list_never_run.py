"""`list` of a project with neither a routine ledger nor a routine view (app/listing.py): every
routine is `never`, known without folding (nor loading the fold); as soon as either file
exists - ours, or a view another tool wrote - the view is folded and imported as always."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from tests.test_lazy_imports import loaded_by

from specdojo_routine.app import listing
from specdojo_routine.store.config import ProjectPaths, resolve_project
from specdojo_routine.store.ledger import adopt
from tests.conftest import REPO, copy_source

DEMO = REPO / "fixtures" / "demo"
NOW = datetime(2026, 8, 7, 8, 2, tzinfo=UTC)
FOLD = ("specdojo_routine.store.ledger.adopt", "specdojo_routine.store.ledger.proven",
        "specdojo_routine.core.fold", "specdojo_routine.store.ledger.journal")


@pytest.fixture
def demo(tmp_path: Path) -> ProjectPaths:
    copy_source(DEMO, tmp_path / "demo")
    return resolve_project(tmp_path / "demo")


def _through_the_fold(paths: ProjectPaths, monkeypatch: pytest.MonkeyPatch) -> listing.Listing:
    """The listing with the view always folded and imported (no shortcut)."""
    with monkeypatch.context() as m:
        m.setattr(listing, "_routine_states",
                  lambda p: adopt.plan_routine_imports(p).view.routines)
        return listing.list_routines(paths, now=NOW, clock=lambda: NOW)


def test_a_project_never_run_lists_as_the_fold_does(
    demo: ProjectPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = listing.list_routines(demo, now=NOW, clock=lambda: NOW)
    assert (False, False) == (demo.routine_ledger.exists(), demo.routine_state.exists())
    assert _through_the_fold(demo, monkeypatch) == shown
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


def test_a_ledger_without_its_view_is_folded(
    demo: ProjectPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _ = loaded_by("run", "--due", "--root", str(demo.root), env={
        "SPECDOJO_CLI": str(demo.root / "bin" / "fake-specdojo")})
    assert 0 == code
    demo.routine_state.unlink()
    shown = listing.list_routines(demo, now=NOW, clock=lambda: NOW)
    assert "never" not in {row.status for row in shown.rows if row.enabled}
    assert _through_the_fold(demo, monkeypatch) == shown


def test_list_of_a_project_never_run_loads_no_fold(demo: ProjectPaths) -> None:
    """~16 modules (the fold, the chain, the ledger, adoption) and their attrs classes: ~8 ms
    of a fresh project's `list` (issue 16)."""
    assert (0, []) == loaded_by("list", "--root", str(demo.root), names=FOLD)
