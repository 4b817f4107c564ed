"""SPEC §10 on a project the upstream SpecDojo CLI really ran (fixtures/upstream, extracted
into a temp dir for each test; the archive is never touched).

Upstream ran it on 2026-12-01 between 07:00 and 07:02 UTC: three routines, five completed Job
Runs (no ledgers), a checkpoint at commit B. Adopting it must lose nothing and run nothing again.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.clirun import run_cli
from tests.conftest import extract_archive

REPO = Path(__file__).resolve().parent.parent
ARCHIVE = REPO / "fixtures" / "upstream" / "upstream-project.tar.gz"
FAKE_CLI = REPO / "tests" / "support" / "fake-specdojo"
COMMIT_B = "658187014fc1e642a51a3d62b54917108f601632"
SHORTLY_AFTER = "2026-12-01T07:02:20Z"  # upstream's last run was at 07:01:26Z
RUNS = ["JBR-translate-docs-4c43d9acfb27", "JBR-weekly-report-a75bc53007a7",
        "JBR-translate-docs-2db4124a7766", "JBR-weekly-report-34ff530ffad7",
        "JBR-translate-docs-075f515b9ea9"]
R = Path("projects/prj-demo/routines")
E = Path("projects/prj-demo/execution")


class Upstream:
    """An extracted copy of the upstream project, and our CLI run on it."""

    def __init__(self, tmp: Path) -> None:
        extract_archive(ARCHIVE, tmp)
        self.root = tmp / "upstream-project"
        self.log = tmp / "fake-cli.log"
        self.original = self.files()

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "SPECDOJO"))}
        return env | {"SPECDOJO_CLI": str(FAKE_CLI), "FAKE_SPECDOJO_LOG": str(self.log)}

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_cli([*args, "--root", str(self.root)], cwd=self.root, env=self.env())

    def ok(self, *args: str) -> str:
        proc = self.cli(*args)
        assert 0 == proc.returncode, proc.stdout + proc.stderr
        return proc.stdout

    def files(self) -> dict[str, bytes]:
        return {p.relative_to(self.root).as_posix(): p.read_bytes()
                for p in sorted(self.root.rglob("*")) if p.is_file() and ".git" not in p.parts}

    def path(self, rel: Path | str) -> Path:
        return self.root / rel

    def lines(self, rel: Path | str) -> list[dict[str, Any]]:
        return [orjson.loads(x) for x in self.path(rel).read_bytes().splitlines()]

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


@pytest.fixture
def up(tmp_path: Path) -> Iterator[Upstream]:
    yield Upstream(tmp_path)


def write_doc(path: Path, doc: Any) -> None:
    """``doc`` as upstream writes a view: 2-space JSON and a newline."""
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")


def run_line(rid: str, started: str, scheduled: str, result: Any = "success") -> bytes:
    """A run record line as newer upstream versions append it (no type, no seq)."""
    return orjson.dumps({"version": 1, "routine_id": rid, "scheduled_for": scheduled,
                         "started_at": started, "completed_at": started, "result": result,
                         "job_run_ids": []}) + b"\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _run_json(rel_run: str) -> str:
    return f"{E}/jobs/runs/{rel_run}.json"


# --- what adoption shows ---------------------------------------------------------------------


def test_list_shows_upstreams_last_runs_and_results(up: Upstream) -> None:
    """After adoption, list shows every routine's last run and result as upstream left them,
    and neither cron routine is due shortly after."""
    upstream = orjson.loads(up.original[f"{R}/generated/routine-state.json"])["routines"]
    listing = orjson.loads(up.ok("list", "--json", "--now", SHORTLY_AFTER))
    rows = {r["id"]: r for r in listing["routines"]}
    assert {rid: (e["last_run"], e["last_result"], e.get("last_scheduled_for"))
            for rid, e in upstream.items()} == {
        rid: (r["last_run"], r["last_result"], r["last_scheduled_for"]) for rid, r in rows.items()}
    assert {"success"} == {r["status"] for r in rows.values()}
    assert not any(r["due"] for r in rows.values())


def test_run_due_shortly_after_upstream_delegates_nothing(up: Upstream) -> None:
    """run --due a minute after upstream's last runs runs nothing upstream already ran; a few
    minutes later only the 1-minute interval routine is due, no cron occurrence again."""
    assert "no due routines" in up.ok("run", "--due", "--now", SHORTLY_AFTER)
    assert [] == up.calls()
    plan = orjson.loads(up.ok("run", "--due", "--dry-run", "--json", "--now",
                              "2026-12-01T07:05:00Z"))
    assert ["rtn-register-sweep"] == [s["routine_id"] for s in plan["selected"]]


def test_run_first_keeps_upstreams_routine_state_verbatim_in_the_ledger(up: Upstream) -> None:
    """The first recording command imports routine-state.json before replacing it: every
    entry survives verbatim with the sha256 of the file it came from."""
    source = f"{R}/generated/routine-state.json"
    up.ok("run", "--due", "--now", SHORTLY_AFTER)
    imported = [e for e in up.lines(f"{R}/generated/routine-runs.jsonl")
                if e["type"] == "routine_state_imported"]
    original = orjson.loads(up.original[source])["routines"]
    assert {rid: rec for rid, rec in original.items()} == {
        e["routine_id"]: e["record"] for e in imported}
    assert {(source, _sha(up.original[source]))} == {
        (e["source"], e["source_sha256"]) for e in imported}
    assert [list(original[e["routine_id"]]) for e in imported] == [
        list(e["record"]) for e in imported]  # keys in file order


def test_job_run_with_each_completed_runs_inputs_is_a_duplicate_complete(up: Upstream) -> None:
    """job run with the inputs of each of the five upstream runs runs nothing again: duplicate
    complete, same run id, and the upstream record stays byte for byte."""
    for run_id in RUNS:
        record = orjson.loads(up.original[_run_json(run_id)])
        inputs = [f"--input={k}={v}" for k, v in record["inputs"].items()]
        out = orjson.loads(up.ok("job", "run", "--job", record["job_id"], *inputs, "--json"))
        assert (run_id, True) == (out["run_id"], out["duplicate_complete"])
        assert up.original[_run_json(run_id)] == up.path(_run_json(run_id)).read_bytes()
    assert [] == up.calls()
    assert not list(up.path(E / "exec").glob("evidence/*"))  # nothing was executed


def test_translate_jobs_next_from_revision_is_commit_b(up: Upstream) -> None:
    """The checkpoint upstream advanced (commit B) is where the next translation starts."""
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "C"], cwd=up.root, check=True, env=up.env())
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=up.root, check=True, text=True,
                          capture_output=True, env=up.env()).stdout.strip()
    plan = orjson.loads(up.ok("job", "run", "--job", "job-translate-docs", "--dry-run",
                              "--json"))
    assert ({"from_revision": COMMIT_B, "to_revision": head}, "new") == (
        plan["inputs"], plan["existing"])


def test_every_upstream_record_survives_verbatim_and_job_show_matches(up: Upstream) -> None:
    """import: each Job Run record is the first event of its new ledger, verbatim with its
    file's sha256, and job show --json prints exactly the upstream file."""
    assert "imported 3 routine states, 5 Job Runs, 0 checkpoints; 0 conflicts\n" == \
        up.ok("import")
    for run_id in RUNS:
        data = up.original[_run_json(run_id)]
        events = up.lines(f"{E}/jobs/runs/{run_id}.jsonl")
        assert [("run_imported", orjson.loads(data), _sha(data))] == [
            (e["type"], e["record"], e["source_sha256"]) for e in events]
        assert list(orjson.loads(data)) == list(events[0]["record"])
        assert data.decode() == up.ok("job", "show", run_id, "--json")
        assert data == up.path(_run_json(run_id)).read_bytes()
    assert up.original[f"{E}/jobs/generated/job-state.json"] == \
        up.path(E / "jobs/generated/job-state.json").read_bytes()


def test_job_show_and_list_see_upstream_runs_before_any_import(up: Upstream) -> None:
    """Read-only commands show the imported view in memory: five runs, the checkpoint."""
    listing = orjson.loads(up.ok("job", "list", "--json"))
    assert sorted(RUNS) == sorted(r["run_id"] for r in listing["runs"])
    checkpoints = {j["id"]: j["checkpoint"] for j in listing["jobs"]}
    assert {"revision": COMMIT_B} == checkpoints["job-translate-docs"]
    assert up.original[_run_json(RUNS[1])].decode() == up.ok("job", "show", RUNS[1], "--json")


def test_fold_check_is_clean_before_and_after_and_a_second_import_appends_nothing(
    up: Upstream,
) -> None:
    """fold --check is clean on the untouched project (its files would import cleanly) and
    after the import; importing again appends nothing; fold then rewrites nothing."""
    assert "views match the ledgers" in up.ok("fold", "--check")
    up.ok("import")
    after = up.files()
    assert "imported 0 routine states, 0 Job Runs, 0 checkpoints; 0 conflicts\n" == \
        up.ok("import")
    assert "views match the ledgers" in up.ok("fold", "--check")
    assert "folded: 0 view(s) rewritten" in up.ok("fold")
    ledgers = {k: v for k, v in up.files().items() if k.endswith(".jsonl")}
    assert ledgers == {k: v for k, v in after.items() if k.endswith(".jsonl")}


def test_fold_counts_the_view_its_own_import_rewrote(up: Upstream) -> None:
    """fold on the untouched project imports upstream's routine-state.json and republishes it
    (ours now, folded from the ledger): that is one view rewritten, said so, and the next fold
    rewrites none."""
    before = up.path(f"{R}/generated/routine-state.json").read_bytes()
    assert "folded: 1 view(s) rewritten\n" == up.ok("fold")
    assert before != up.path(f"{R}/generated/routine-state.json").read_bytes()
    assert "folded: 0 view(s) rewritten\n" == up.ok("fold")


def test_read_only_commands_change_no_byte(up: Upstream) -> None:
    """list, history, next, status, job list/show and every dry run write nothing at all (no
    lock file)."""
    for args in (["list"], ["list", "--json"], ["history"], ["history", "--json"], ["next"],
                 ["status"], ["status", "--json"],
                 ["job", "list"], ["job", "show", RUNS[0]], ["fold", "--check"],
                 ["import", "--dry-run"], ["import", "--dry-run", "--json"],
                 ["run", "--due", "--dry-run", "--now", "2026-12-01T07:05:00Z"],
                 ["job", "run", "--job", "job-translate-docs", "--dry-run"]):
        up.ok(*args)
    assert up.original == up.files()


def test_import_dry_run_reports_without_writing(up: Upstream) -> None:
    """import --dry-run --json counts what a real import would append."""
    report = orjson.loads(up.ok("import", "--dry-run", "--json"))
    assert {"dry_run": True, "routine_states": 3, "job_runs": 5, "checkpoints": 0,
            "conflicts": [], "warnings": []} == report
    assert up.original == up.files()


def test_a_checkpoint_the_runs_do_not_account_for_is_imported(up: Upstream) -> None:
    """job-state.json holding a checkpoint newer than any run's is imported into the ledger
    of its last_run_id, and the next translation starts from it."""
    path = up.path(E / "jobs/generated/job-state.json")
    doc = orjson.loads(path.read_bytes())
    entry = doc["jobs"]["job-translate-docs"]
    entry["checkpoint"] = {"revision": "064ac71aad669c714f68dacde0cd06105f5a36d3"}
    entry["updated_at"] = "2026-12-01T07:30:00.000Z"
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    assert "imported 3 routine states, 5 Job Runs, 1 checkpoint; 0 conflicts\n" == \
        up.ok("import")
    events = up.lines(f"{E}/jobs/runs/{entry['last_run_id']}.jsonl")
    assert ["run_imported", "checkpoint_imported"] == [e["type"] for e in events]
    assert (entry["checkpoint"], entry["updated_at"]) == (events[1]["checkpoint"],
                                                          events[1]["updated_at"])
    plan = orjson.loads(up.ok("job", "run", "--job", "job-translate-docs", "--dry-run",
                              "--json"))
    assert "064ac71aad669c714f68dacde0cd06105f5a36d3" == plan["inputs"]["from_revision"]
    assert "views match the ledgers" in up.ok("fold", "--check")


#: What every line we append carries besides its payload (SPEC §5).
ENVELOPE = {"version", "seq", "type", "at", "prev"}


def test_run_imported_carries_exactly_run_id_record_and_source_sha256(up: Upstream) -> None:
    """SPEC §10 rule 1 (docs/adopting.md): run_imported's payload is {run_id, record,
    source_sha256}, its run_id the run whose ledger it opens."""
    up.ok("import")
    firsts = [up.lines(f"{E}/jobs/runs/{run_id}.jsonl")[0] for run_id in RUNS]
    assert [(run_id, {"run_id", "record", "source_sha256"}) for run_id in RUNS] == [
        (e["run_id"], set(e) - ENVELOPE) for e in firsts]


def test_checkpoint_imported_carries_the_documented_fields(up: Upstream) -> None:
    """SPEC §10 rules 1, 3: checkpoint_imported is {job_id, checkpoint, last_run_id,
    updated_at, source_sha256}, naming the Job, its last run and job-state.json's sha256."""
    path = up.path(E / "jobs/generated/job-state.json")
    doc = orjson.loads(path.read_bytes())
    entry = doc["jobs"]["job-translate-docs"]
    entry["checkpoint"] = {"revision": "064ac71aad669c714f68dacde0cd06105f5a36d3"}
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
    path.write_bytes(data)
    up.ok("import")
    [event] = [e for e in up.lines(f"{E}/jobs/runs/{entry['last_run_id']}.jsonl")
               if e["type"] == "checkpoint_imported"]
    assert ({"job_id", "checkpoint", "last_run_id", "updated_at", "source_sha256"},
            "job-translate-docs", entry["last_run_id"], _sha(data)) == (
        set(event) - ENVELOPE, event["job_id"], event["last_run_id"], event["source_sha256"])


def test_the_next_nightly_occurrence_continues_from_upstreams_checkpoint(up: Upstream) -> None:
    """At the next nightly occurrence the translate Job starts from commit B; with HEAD still
    at B that is upstream's manual run B..B, so the routine succeeds without running again."""
    out = orjson.loads(up.ok("run", "--due", "--json", "--now", "2026-12-01T17:00:30Z"))
    nightly = [r for r in out["results"] if r["routine_id"] == "rtn-nightly-translate"]
    assert ["success"] == [r["result"] for r in nightly]
    ended = [e for e in up.lines(f"{R}/generated/routine-runs.jsonl")
             if e["type"] == "action_ended" and e["kind"] == "job"]
    assert ["JBR-translate-docs-075f515b9ea9"] == [e["job_run_id"] for e in ended]
    assert up.original[_run_json(RUNS[4])] == up.path(_run_json(RUNS[4])).read_bytes()
    assert "views match the ledgers" in up.ok("fold", "--check")


def test_an_unreadable_routine_state_is_a_conflict_and_is_kept(up: Upstream) -> None:
    """A routine-state.json that is not a state document is never overwritten: run refuses
    with a conflict naming it, exit 1, and records nothing."""
    path = up.path(R / "generated/routine-state.json")
    path.write_bytes(b'{"routines": ')
    proc = up.cli("run", "--due", "--now", SHORTLY_AFTER)
    assert 1 == proc.returncode, proc.stderr
    assert proc.stderr.startswith(
        f"error: conflict: {R}/generated/routine-state.json is not a routine state document")
    assert b'{"routines": ' == path.read_bytes()
    assert not up.path(R / "generated/routine-runs.jsonl").exists()
