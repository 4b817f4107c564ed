"""The upstream-run fixture's ``doc-bot`` Jobs, run by our CLI's own agent executor on an
extracted copy: the roster's ``command`` (upstream's stand-in agent) reads our plan on stdin,
does the work and fills our result, which ends in the upstream result format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import extract_archive

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "upstream" / "upstream-project.tar.gz"  # the shared/ fixture
EXEC = Path("projects/prj-demo/execution/exec")


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    extract_archive(FIXTURE, tmp_path)
    return tmp_path / "upstream-project"


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPECDOJO_", "GIT_"))}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-m", "specdojo_routine", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)


def frontmatter(text: str) -> dict[str, str]:
    block = text.split("---\n")[1]
    fields = {}
    for line in block.splitlines()[1:]:
        if line.startswith("  ") and not line.startswith("    ") and ":" in line:
            key, _, value = line.strip().partition(":")
            fields[key] = value.strip()
    return fields


def body(text: str) -> str:
    return text.split("---\n", 2)[2]


def test_validate_knows_doc_bot(upstream: Path) -> None:
    done = cli(upstream, "validate")
    assert done.returncode == 0, done.stderr


def test_weekly_report_runs_with_doc_bot(upstream: Path) -> None:
    done = cli(upstream, "job", "run", "--job", "job-weekly-report",
               "--input", "period=2026-W50", "--scheduled-at", "2026-12-11T08:00:00.000Z",
               "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    run_id = out["run_id"]
    assert out["state"] == "succeeded"
    report = (upstream / "reports" / "weekly-2026-W50.md").read_text()
    assert report.startswith("# Weekly report 2026-W50")
    ours = (upstream / EXEC / "results" / f"{run_id}-result.md").read_text()
    theirs = (upstream / EXEC / "results" / "JBR-weekly-report-34ff530ffad7-result.md").read_text()
    # the same frontmatter keys and values where they are not run-specific
    mine, upstream_fm = frontmatter(ours), frontmatter(theirs)
    assert set(upstream_fm) <= set(mine), set(upstream_fm) - set(mine)
    for key in ("type", "mode", "status", "project_id", "origin", "job_id", "agent"):
        assert mine[key] == upstream_fm[key], key
    assert mine["plan_ref"] == f"exec/plans/{run_id}-plan.md"
    # the agent filled the mandatory sections exactly as it does for upstream
    assert body(ours) == body(theirs).replace("2026-W49", "2026-W50")
    # the plan came from the project's own template: the same body as upstream's plan
    plan = (upstream / EXEC / "plans" / f"{run_id}-plan.md").read_text()
    upstream_plan = (upstream / EXEC / "plans" / "JBR-weekly-report-34ff530ffad7-plan.md")
    expected = body(upstream_plan.read_text()).replace(
        "JBR-weekly-report-34ff530ffad7", run_id).replace("2026-W49", "2026-W50").replace(
        "2026-12-01T07:00:31.657Z", "2026-12-11T08:00:00.000Z")
    assert body(plan) == expected
    # the view has the upstream record's keys
    view = json.loads((upstream / "projects/prj-demo/execution/jobs/runs" /
                       f"{run_id}.json").read_text())
    upstream_view = json.loads((upstream / "projects/prj-demo/execution/jobs/runs" /
                                "JBR-weekly-report-34ff530ffad7.json").read_text())
    assert set(upstream_view) <= set(view)
    assert view["state"] == "succeeded"


def test_an_unfilled_result_fails_like_upstream(upstream: Path) -> None:
    (upstream / "tools" / "agent-flaky").write_text("")
    done = cli(upstream, "job", "run", "--job", "job-weekly-report",
               "--input", "period=2026-W51", "--json")
    out = json.loads(done.stdout)
    assert done.returncode == 1
    assert out["reason"] == ("agent exited 0 but result mandatory sections remain unfilled "
                             "(treated as blocked)")
    upstream_view = json.loads((upstream / "projects/prj-demo/execution/jobs/runs" /
                                "JBR-weekly-report-a75bc53007a7.json").read_text())
    assert out["reason"] == upstream_view["attempts"][0]["reason"]


def test_translate_docs_runs_with_doc_bot(upstream: Path) -> None:
    done = cli(upstream, "job", "run", "--job", "job-translate-docs", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    out = json.loads(done.stdout)
    assert out["state"] == "succeeded"
    guide = (upstream / "docs" / "en" / "guide.md").read_text()
    assert guide.startswith("<!-- translated from docs/ja/guide.md at ")
