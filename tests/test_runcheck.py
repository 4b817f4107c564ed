"""The foreign-file check of a Job's runs reads only the runs whose files changed (SPEC §10
rule 3, §15), with a private snapshot of stamps that is safe to lose."""

from __future__ import annotations

import builtins
import io
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.core import jobplan
from specdojo_routine.store import codeprint
from specdojo_routine.store.ledger import adopt, runcheck
from tests import jobhelper
from tests.conftest import Project, period_job

RUNS = 60  # enough that "every run" and "two runs" differ by far; more only costs time
JOB = period_job("n", "'true'", "checkpoint:\n  values: {last: '{{inputs.period}}'}\n")


def run_id(period: str) -> str:
    return jobplan.run_id_for("job-n", f"job-n:{period}")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with RUNS Job Runs of one Job, each made by run_job."""
    root = tmp_path_factory.mktemp("runcheck") / "p"
    Project(root).job("job-n", JOB)
    for n in range(RUNS):
        assert "succeeded" == jobhelper.run(root, "job-n", {"period": f"p{n:03d}"}).state
    return root


@pytest.fixture
def root(made: Path, tmp_path: Path) -> Path:
    """A copy of the project (every file has a new inode: the snapshot no longer matches)."""
    copy = tmp_path / "p"
    shutil.copytree(made, copy)
    return copy


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The file names under any ``jobs/runs`` directory this process opens (temp files a
    publication writes aside)."""
    names: list[str] = []

    def spy(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(file: Any, *args: Any, **kwargs: Any) -> Any:
            path = Path(os.fsdecode(file)) if isinstance(file, str | bytes | os.PathLike) \
                else None
            if path is not None and path.parent.name == "runs" \
                    and path.parent.parent.name == "jobs" and not path.name.startswith("."):
                names.append(path.name)
            return real(file, *args, **kwargs)

        return call

    for owner, name in ((builtins, "open"), (io, "open"), (os, "open")):
        monkeypatch.setattr(owner, name, spy(getattr(owner, name)))
    yield names


def runs_read(names: list[str]) -> set[str]:
    return {n.rsplit(".", 1)[0] for n in names}


def test_a_job_action_reads_only_the_runs_whose_files_changed(
    root: Path, opened: list[str],
) -> None:
    """Once the copy is checked in full (new inodes: nothing is settled), the next Job action
    opens the files of two runs only: the one the previous action wrote, and its own."""
    jobhelper.run(root, "job-n", {"period": "p300"})
    first = runs_read(opened)
    opened.clear()
    jobhelper.run(root, "job-n", {"period": "p301"})
    assert (RUNS + 1, {run_id("p300"), run_id("p301")}) == (len(first), runs_read(opened))


def test_the_checkpoint_is_the_full_checks(root: Path) -> None:
    """The checkpoint read through the snapshot is the one every run's fold gives."""
    jobhelper.run(root, "job-n", {"period": "p400"})
    paths = jobhelper.paths_of(root)
    expected = adopt.checkpoint(paths, "job-n")
    assert ({"last": "p400"}, expected) == (runcheck.checkpoint(paths, "job-n"), expected)


def damage_checkpoints(snapshot: Path) -> None:
    """Keep the snapshot's stamps, and make every run's checkpoints something else than
    checkpoints (still JSON)."""
    doc = orjson.loads(snapshot.read_bytes())
    doc["runs"] = {run: [entry[0], {"job-n": 5}] for run, entry in doc["runs"].items()}
    snapshot.write_bytes(orjson.dumps(doc))


def test_a_lost_or_damaged_snapshot_costs_one_full_check(root: Path, opened: list[str]) -> None:
    """Without its snapshot (deleted, or not one of ours: not JSON, or runs whose stamps
    match but whose checkpoints are damaged) a Job action reads every run once and writes a
    new snapshot; nothing else changes."""
    jobhelper.run(root, "job-n", {"period": "p300"})
    paths = jobhelper.paths_of(root)
    snapshot = runcheck.snapshot_path(paths, "job-n")
    runs = RUNS + 1
    for damage in (snapshot.unlink, lambda: snapshot.write_bytes(b"{not json"),
                   lambda: damage_checkpoints(snapshot)):
        damage()
        opened.clear()
        jobhelper.run(root, "job-n", {"period": f"p{runs:03d}"})
        runs += 1
        assert runs == len(runs_read(opened))
        assert 1 == orjson.loads(snapshot.read_bytes())["version"]


def test_a_snapshot_written_by_other_code_costs_one_full_check(
    root: Path, opened: list[str],
) -> None:
    """The snapshot records the fingerprint of the code that found the runs ours: one with
    another fingerprint (an upgrade), every stamp still matching, is no snapshot - a Job
    action reads every run once and writes one with this code's fingerprint, which the next
    action trusts."""
    jobhelper.run(root, "job-n", {"period": "p300"})
    snapshot = runcheck.snapshot_path(jobhelper.paths_of(root), "job-n")
    doc = orjson.loads(snapshot.read_bytes())
    snapshot.write_bytes(orjson.dumps({**doc, "code": "0" * 64}))
    opened.clear()
    jobhelper.run(root, "job-n", {"period": "p301"})
    assert RUNS + 2 == len(runs_read(opened))
    assert codeprint.fingerprint() == orjson.loads(snapshot.read_bytes())["code"]
    opened.clear()
    jobhelper.run(root, "job-n", {"period": "p302"})
    assert {run_id("p301"), run_id("p302")} == runs_read(opened)


def test_another_tools_change_to_a_settled_run_is_imported(root: Path) -> None:
    """A view the upstream CLI extended (one more attempt) changes its stamps: the next Job
    action reads that run again and imports the record before anything replaces it."""
    jobhelper.run(root, "job-n", {"period": "p300"})
    paths = jobhelper.paths_of(root)
    target = run_id("p007")
    view = paths.run_view(target)
    record = orjson.loads(view.read_bytes())
    record["attempts"].append({"attempt": 2, "started_at": "2030-01-01T00:00:00.000Z",
                               "completed_at": "2030-01-01T00:00:01.000Z",
                               "status": "succeeded"})
    record["updated_at"] = "2030-01-01T00:00:01.000Z"
    view.write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2) + b"\n")
    jobhelper.run(root, "job-n", {"period": "p301"})
    types = [e["type"] for e in jobhelper.ledger_events(paths, target)]
    assert "run_imported" == types[-1]


def test_read_only_commands_write_no_snapshot(root: Path) -> None:
    """Preparing a run (what --dry-run does) uses the snapshot but never writes one."""
    paths = jobhelper.paths_of(root)
    runcheck.snapshot_path(paths, "job-n").unlink()
    defs = jobhelper.definitions.load_jobs(paths)
    from specdojo_routine.app import jobs

    jobs.prepare(paths, defs, "job-n", {"period": "p900"},
                 scheduled_at=jobhelper.SCHEDULED, trigger="manual", env={})
    assert not runcheck.snapshot_path(paths, "job-n").exists()


def test_a_run_another_tool_added_beside_settled_runs_is_imported(root: Path) -> None:
    """A ``runs/<id>.json`` another tool added (no ledger beside it) among runs the snapshot
    has settled is a run the snapshot does not know: the next Job action imports it and
    starts from the checkpoint it advanced."""
    jobhelper.run(root, "job-n", {"period": "p300"})  # the copy checked, the snapshot written
    paths = jobhelper.paths_of(root)
    record = orjson.loads(paths.run_view(run_id("p007")).read_bytes())
    added = run_id("upstream")
    record.update(run_id=added, idempotency_key="job-n:upstream", inputs={"period": "upstream"},
                  updated_at="2030-01-01T00:00:01.000Z",
                  checkpoint_after={"last": "upstream"})
    record["attempts"][0].update(started_at="2030-01-01T00:00:00.000Z",
                                 completed_at="2030-01-01T00:00:01.000Z")
    paths.run_view(added).write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2) + b"\n")
    outcome = jobhelper.run(root, "job-n", {"period": "p301"})
    assert ["run_imported"] == [e["type"] for e in jobhelper.ledger_events(paths, added)]
    view = orjson.loads(paths.run_view(outcome.run_id or "").read_bytes())
    assert {"last": "upstream"} == view["checkpoint_before"]


def test_the_run_id_of_a_routine_action_reads_the_checkpoint_only_when_the_key_needs_it(
    root: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``action_started`` names the run before it runs: when neither the key nor an input
    comes from the checkpoint, that id is derived without looking at the Job's runs, and it
    is the id the run gets; an input ``from_checkpoint`` makes it follow the checkpoint."""
    from specdojo_routine.app import jobs
    from specdojo_routine.execute import jobfiles

    paths = jobhelper.paths_of(root)
    reads: list[str] = []
    real = jobfiles.read_checkpoint
    monkeypatch.setattr(jobfiles, "read_checkpoint",
                        lambda p, job_id: reads.append(job_id) or real(p, job_id))
    (root / "jobs" / "job-c.yaml").write_text(
        "id: job-c\n" + period_job("c", "'true'").replace(
            "period: {type: string, required: true}",
            "period: {type: string, from_checkpoint: last, default: none}")
        + "checkpoint:\n  values: {last: 'after-{{inputs.period}}'}\n")

    def named(job_id: str) -> str | None:
        defs = jobhelper.definitions.load_jobs(paths)
        return jobs.routine_run_id(paths, defs, job_id=job_id, inputs={"period": "p900"}
                                   if job_id == "job-n" else {}, scheduled_at=jobhelper.SCHEDULED,
                                   env={})

    assert (run_id("p900"), []) == (named("job-n"), reads)
    assert jobplan.run_id_for("job-c", "job-c:none") == named("job-c")
    assert "succeeded" == jobhelper.run(root, "job-c", {}).state
    assert jobplan.run_id_for("job-c", "job-c:after-none") == named("job-c")
    assert "job-c" in reads


@pytest.fixture
def stamped(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Jobs whose runs' stamps this process takes (the pass that visits every run)."""
    jobs: list[str] = []
    real = runcheck._stamps
    monkeypatch.setattr(runcheck, "_stamps",
                        lambda paths, job_id: jobs.append(job_id) or real(paths, job_id))
    return jobs


def test_job_run_and_a_routine_job_action_visit_the_jobs_runs_once(
    root: Path, stamped: list[str],
) -> None:
    """When neither the run id nor a precondition depends on the checkpoint, the run reads
    it from the import under the exec lock: ``job run`` and a routine's Job action look at
    every run of the Job once, and the new run still starts from the latest checkpoint."""
    from specdojo_routine import api

    outcome = jobhelper.run(root, "job-n", {"period": "p300"})
    assert ["job-n"] == stamped
    paths = jobhelper.paths_of(root)
    (root / "routines" / "rtn-n.yaml").write_text(
        "id: rtn-n\ninterval: 1d\naction: {kind: job, job: job-n, inputs: {period: p301}}\n")
    stamped.clear()
    report = api.run_due(paths, now=jobhelper.SCHEDULED, env=jobhelper.clean_env())
    assert (["job-n"], [], 1) == (stamped, report.errors, len(report.results))
    view = orjson.loads(paths.run_view(run_id("p301")).read_bytes())
    assert ({"last": "p300"}, "succeeded") == (view["checkpoint_before"], outcome.state)
