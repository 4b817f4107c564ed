"""Seed fidelity (SPEC §13): a duplicated routine id runs from neither file (seed 000 T-01);
the roster default is `.specdojo/agent-members.yaml` (seed 002); `job run --by` replaces the
single agent and `--executor-by` / `--reporter-by` the stages, ahead of the Job's nomination."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from tests.agenthelper import AgentProject
from tests.conftest import Project

BODY = "interval: 1h\naction: {kind: specdojo, args: [work]}\n"


def test_a_duplicated_routine_id_runs_from_neither_file(project: Project) -> None:
    """validate reports both files (located); run --due runs neither, reports both and exits
    1; run --id names both; the other routines still run."""
    for sub in ("a", "b"):
        (project.root / "routines" / sub).mkdir()
        (project.root / "routines" / sub / "rtn-dup.yaml").write_text("id: rtn-dup\n" + BODY)
    project.routine("rtn-ok", BODY)
    checked = project.cli("validate")
    assert 1 == checked.returncode
    for sub, other in (("a", "b"), ("b", "a")):
        assert (f'routines/{sub}/rtn-dup.yaml:1:5: duplicate routine id "rtn-dup" (also in '
                f"routines/{other}/rtn-dup.yaml)") in checked.stderr, checked.stderr
    ran = project.cli("run", "--due", "--now", "2026-05-01T10:00:00Z")
    assert 1 == ran.returncode
    assert "routines/a/rtn-dup.yaml" in ran.stderr and "routines/b/rtn-dup.yaml" in ran.stderr
    assert 1 == len(project.calls()), "rtn-ok only"
    assert {"rtn-ok"} == {e["routine_id"] for e in project.events()}
    one = project.cli("run", "--id", "rtn-dup")
    assert 1 == one.returncode and "routines/a/rtn-dup.yaml, routines/b/rtn-dup.yaml" in (
        one.stderr), one.stderr


@pytest.fixture
def seeded(tmp_path: Path) -> AgentProject:
    """An agent project whose roster is at seed 002's default place and whose config names no
    members_path."""
    ap = AgentProject(tmp_path / "proj")
    config = orjson.loads((ap.root / ".specdojo" / "specdojo.config.json").read_bytes())
    del config["projects"]["demo"]["members_path"]
    (ap.root / ".specdojo" / "specdojo.config.json").write_bytes(orjson.dumps(config))
    (ap.root / "members.yaml").rename(ap.root / ".specdojo" / "agent-members.yaml")
    return ap


def _run(ap: AgentProject, period: str, *args: str, code: int = 0) -> None:
    done = ap.cli("job", "run", "--job", "job-e", "--input", f"period={period}", "--json",
                  *args)
    assert code == done.returncode, (done.stdout, done.stderr)
    json.loads(done.stdout)


def test_the_default_roster_and_by_options_ahead_of_the_nomination(seeded: AgentProject) -> None:
    """Without members_path the roster is .specdojo/agent-members.yaml; --by runs one agent
    (no reporter), --executor-by replaces the executor stage; --by with a stage option and an
    unknown nickname are usage errors."""
    seeded.edit_job("job-e", agent="{executor: editor, reporter: reporter}")
    _run(seeded, "w1")
    assert [("editor", "executor"), ("reporter", "reporter")] == [
        (x["nickname"], x["role"]) for x in seeded.launches()]
    _run(seeded, "w2", "--by", "own-command")
    assert [("own-command", "executor")] == [
        (x["nickname"], x["role"]) for x in seeded.launches()[2:]]
    _run(seeded, "w3", "--executor-by", "own-command")
    assert [("own-command", "executor"), ("reporter", "reporter")] == [
        (x["nickname"], x["role"]) for x in seeded.launches()[3:]]
    for args in (["--by", "editor", "--reporter-by", "reporter"], ["--by", "nobody"],
                 ["--executor-by", "nobody"]):
        bad = seeded.cli("job", "run", "--job", "job-e", "--input", "period=w9", *args)
        assert (2, 1) == (bad.returncode, len(bad.stderr.splitlines())), bad.stderr
        assert bad.stderr.startswith("error: ")
