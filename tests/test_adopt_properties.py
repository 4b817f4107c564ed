"""Property tests of the import verdicts (SPEC §10 rules 1, 3, 4) on the project the upstream
CLI really ran, adopted once: a generated change to one upstream file - a routine entry, the
checkpoint or a Job Run record edited, extended, truncated, reordered or torn - is imported
(verbatim in the ledger), a conflict (the file kept byte for byte, nothing appended), moved
aside (torn: kept as ``.unreadable-*``) or identical (its facts are the fold's) - never judged
stale and written over - and a second import appends nothing."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from specdojo_routine.app import adoption
from specdojo_routine.core import adopt as rules
from specdojo_routine.store.config import resolve_project
from tests.conftest import extract_archive
from tests.test_adopt_upstream import ARCHIVE, RUNS, E, R

STATE = R / "generated/routine-state.json"
JOB_STATE = E / "jobs/generated/job-state.json"
ROUTINES = ["rtn-nightly-translate", "rtn-register-sweep", "rtn-weekly-report"]
RESULTS = ["success", "failure", "skipped"]
STATES = ["succeeded", "failed", "partial", "noop", "running"]


@pytest.fixture(scope="module")
def adopted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The upstream project after one `import` (its files are ours from then on)."""
    base = tmp_path_factory.mktemp("adopted")
    extract_archive(ARCHIVE, base)
    root = base / "upstream-project"
    shutil.rmtree(root / ".git")
    assert 0 == adoption.import_project(resolve_project(root, env={})).exit_code
    yield root


def _dump(doc: Any) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def _ledgers(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.jsonl"))}


def _new_lines(before: dict[str, bytes], after: dict[str, bytes]) -> list[dict[str, Any]]:
    found = []
    for name, data in after.items():
        old = before.get(name, b"")
        assert data.startswith(old), f"{name} was rewritten, not appended to"
        found += [orjson.loads(x) for x in data[len(old):].splitlines()]
    return found


_instants = st.datetimes(min_value=datetime(2026, 11, 1), max_value=datetime(2026, 12, 31)).map(
    lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))


@st.composite
def _routine_change(draw: st.DrawFn, doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    rid = draw(st.sampled_from(ROUTINES))
    entry = dict(doc["routines"][rid])
    how = draw(st.sampled_from(["result", "last_run", "newer", "no-result", "reorder"]))
    if how == "result":
        entry["last_result"] = draw(st.sampled_from(RESULTS))
    elif how == "last_run":
        entry["last_run"] = draw(_instants)
    elif how == "newer":
        entry["last_run"] = "2026-12-01T08:00:00Z"
        if "last_scheduled_for" in entry:
            entry["last_scheduled_for"] = "2026-12-01T08:00:00.000Z"
    elif how == "no-result":
        del entry["last_result"]
    else:
        entry = dict(reversed(list(entry.items())))
    return rid, entry


@st.composite
def _checkpoint_change(draw: st.DrawFn, doc: dict[str, Any]) -> dict[str, Any] | None:
    entry = dict(doc["jobs"]["job-translate-docs"])
    how = draw(st.sampled_from(["revision", "updated_at", "run", "drop", "reorder"]))
    if how == "revision":
        entry["checkpoint"] = {"revision": draw(st.text("0123456789abcdef", min_size=40,
                                                        max_size=40))}
    elif how == "updated_at":
        entry["updated_at"] = draw(_instants)[:-1] + ".000Z"
    elif how == "run":
        entry["last_run_id"] = draw(st.sampled_from(RUNS))
    elif how == "drop":
        return None
    else:
        entry = dict(reversed(list(entry.items())))
    return entry


@st.composite
def _run_change(draw: st.DrawFn, record: dict[str, Any]) -> dict[str, Any]:
    doc = orjson.loads(orjson.dumps(record))
    attempts = doc["attempts"]
    how = draw(st.sampled_from(["state", "status", "extend", "truncate", "reorder", "keys"]))
    if how == "state":
        doc["state"] = draw(st.sampled_from(STATES))
    elif how == "status":
        i = draw(st.integers(0, len(attempts) - 1))
        attempts[i]["status"] = draw(st.sampled_from(STATES))
    elif how == "extend":
        attempts.append({"attempt": len(attempts) + 1, "started_at": "2026-12-02T00:00:00.000Z",
                         "status": draw(st.sampled_from(["succeeded", "failed"])),
                         "completed_at": "2026-12-02T00:00:01.000Z"})
        doc["updated_at"] = "2026-12-02T00:00:01.000Z"
    elif how == "truncate":
        assume(len(attempts) > 1)
        attempts.pop()
    elif how == "reorder":
        assume(len(attempts) > 1)
        attempts.reverse()
    else:
        doc = dict(reversed(list(doc.items())))
    return doc


@settings(max_examples=40, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_changed_upstream_file_is_imported_conflicting_or_identical(
    adopted: Path, data: st.DataObject,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "p"
        shutil.copytree(adopted, root)
        target, kind = data.draw(st.sampled_from([
            (STATE, "routine"), (JOB_STATE, "checkpoint"),
            *[(E / f"jobs/runs/{r}.json", "run") for r in RUNS]]))
        path = root / target
        original = path.read_bytes()
        doc = orjson.loads(original)
        changed: Any
        if data.draw(st.integers(0, 9)) == 0:  # torn: a crash mid-write
            cut = data.draw(st.integers(1, len(original) - 2))
            path.write_bytes(original[:cut])
            kind = "torn"
        elif kind == "routine":
            rid, changed = data.draw(_routine_change(doc))
            doc["routines"][rid] = changed
            path.write_bytes(_dump(doc))
        elif kind == "checkpoint":
            changed = data.draw(_checkpoint_change(doc))
            if changed is None:
                del doc["jobs"]["job-translate-docs"]
            else:
                doc["jobs"]["job-translate-docs"] = changed
            path.write_bytes(_dump(doc))
        else:
            changed = data.draw(_run_change(doc))
            path.write_bytes(_dump(changed))
        mutated = path.read_bytes()
        assume(mutated != original)
        paths = resolve_project(root, env={})
        before = _ledgers(root)
        first = adoption.import_project(paths)
        after = _ledgers(root)
        added = _new_lines(before, after)
        if first.conflicts:
            assert (mutated, []) == (path.read_bytes(), added)  # kept, nothing appended
        elif kind == "torn":
            [aside] = path.parent.glob(f"{path.name}.unreadable-*")
            assert (mutated, []) == (aside.read_bytes(), added)
        elif added:  # imported: the changed thing is in the ledger verbatim
            if kind == "routine":
                assert [("routine_state_imported", changed)] == [
                    (e["type"], e["record"]) for e in added]
            elif kind == "checkpoint":
                assert [("checkpoint_imported", changed["checkpoint"], changed["updated_at"])] \
                    == [(e["type"], e["checkpoint"], e["updated_at"]) for e in added]
            else:
                assert [("run_imported", changed)] == [(e["type"], e["record"]) for e in added]
        else:  # identical: nothing in it that the fold does not hold
            theirs = orjson.loads(mutated)
            if kind == "routine":
                assert rules.routine_facts(changed) == rules.routine_facts(
                    orjson.loads(original)["routines"][rid])
            elif kind == "checkpoint":
                assert changed is None or all(
                    changed[k] == orjson.loads(original)["jobs"]["job-translate-docs"][k]
                    for k in rules.CHECKPOINT_KEYS)
            else:
                assert theirs == orjson.loads(original)
        second = adoption.import_project(paths)
        assert after == _ledgers(root)  # importing twice appends nothing
        assert (0, 0, 0) == (second.routine_states, second.job_runs, second.checkpoints)
        assert first.conflicts == second.conflicts


@settings(max_examples=300, deadline=None)
@given(record=st.dictionaries(st.sampled_from((*rules.ROUTINE_FACTS, "status", "attempt_id")),
                              st.one_of(st.none(), st.sampled_from(RESULTS), _instants),
                              max_size=6),
       ours=st.fixed_dictionaries({"last_run": _instants, "last_result": st.sampled_from(RESULTS),
                                   "status": st.sampled_from(RESULTS)}),
       earlier=st.lists(st.fixed_dictionaries({"last_run": _instants,
                                               "last_result": st.sampled_from(RESULTS)}),
                        max_size=3))
def test_a_routine_entry_is_stale_only_when_our_fold_gave_it(
    record: dict[str, Any], ours: dict[str, Any], earlier: list[dict[str, Any]],
) -> None:
    """Pure: the verdict is same when the facts are the fold's, stale only when the entry is
    one the fold gave before, else import or conflict - never stale by a guess."""
    verdict = rules.routine_entry_verdict(record, ours, earlier)
    if verdict == "same":
        assert rules.routine_facts(record) == rules.routine_facts(ours)
    elif verdict == "stale":
        assert any(rules.published_entry(record, e) for e in earlier)
    else:
        assert verdict in ("import", "conflict")
        assert not any(rules.published_entry(record, e) for e in earlier)
