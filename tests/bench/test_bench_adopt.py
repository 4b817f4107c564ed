"""Benchmark of the import check every command makes first (SPEC §10), against the plain
incremental view load measured in the same run.

Run: ``python -m pytest tests/bench/test_bench_adopt.py -o addopts= -s -q``

On the 1,000,000-event ledger of ``test_bench_ledger``:

1. our own view (its bytes hash to what we published): the import check costs at most 2x the
   incremental load it replaces in read-only commands, plus 5 ms;
2. a foreign view (rewritten by another tool in our shape): at most 2.5x a plain full fold
   (``views.replay``) - the fold that proves the ledger, and a second one that pictures the
   entries the view changed after each of their lines, since an entry that is a picture our
   ledger gave earlier is stale, not a fact to import (SPEC §10 rule 3).
"""

from __future__ import annotations

import orjson
from test_bench_ledger import EVENTS, interleaved, project  # noqa: F401  (the fixture)

from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.ledger import adopt, views


def test_bench_import_check_on_our_own_view(project: ProjectPaths) -> None:  # noqa: F811
    """A proven view is not refolded: the check stays close to the incremental load."""
    views.refresh_routine_view(project)
    baseline, ours = interleaved(lambda: views.load_routine_view(project),
                                 lambda: adopt.plan_routine_imports(project), 20)
    print(f"\nimport check on our view ({EVENTS:,} events): {ours * 1e3:.2f} ms; incremental "
          f"load {baseline * 1e3:.2f} ms; ratio {ours / baseline:.2f}x")
    assert ours <= 2 * baseline + 0.005


def test_bench_import_check_on_a_foreign_view(project: ProjectPaths) -> None:  # noqa: F811
    """A view another tool rewrote costs two full folds at most: one to prove the ledger, one
    to picture the entries it changed."""
    views.refresh_routine_view(project)
    doc = orjson.loads(project.routine_state.read_bytes())
    first = next(iter(doc["routines"]))
    doc["routines"][first]["last_run"] = "2030-01-01T00:00:00Z"
    project.routine_state.write_bytes(views.render(doc))
    baseline, ours = interleaved(lambda: views.replay(project.routine_ledger),
                                 lambda: adopt.plan_routine_imports(project), 3)
    plan = adopt.plan_routine_imports(project)
    print(f"\nimport check on a foreign view ({EVENTS:,} events): {ours:.2f} s; full fold "
          f"{baseline:.2f} s; ratio {ours / baseline:.2f}x")
    assert [first] == [e.routine_id for e in plan.events]
    assert ours <= 2.5 * baseline
