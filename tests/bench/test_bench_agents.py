"""What the agent machinery costs, against a command Job measured in the same run.

Run: ``python -m pytest tests/bench/test_bench_agents.py -o addopts= -s -q``

1. an ``edit`` Job Run whose roster agent is a one-line shell (plan and result skeleton
   written, plan piped on stdin, evidence per role, result read and stamped) vs a ``command``
   Job Run of a similar shell line - reported as a ratio;
2. the same command Job in a review worktree (preflight, branch, worktree, commit, a one-line
   shell reviewer, ``git merge --no-ff``, cleanup) vs in place - reported as a ratio.

Each Job Run is new (a fresh input), timings are the best of interleaved rounds, so other load
on the machine hits the baseline and the measured code alike.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import orjson

from specdojo_routine.app import jobs
from specdojo_routine.app.review import ReviewOptions
from specdojo_routine.store.config import resolve_project
from specdojo_routine.store.definitions import load as definitions

ROUNDS = 5
FILL = ("cat >/dev/null; sed -i -e 's/_TODO_: 実施した内容/done/' "
        "-e 's/_TODO_: 変更したファイル/x/' "
        "-e 's/^specdojo:$/specdojo:\\n  verdict: complete/' \"$SPECDOJO_RESULT_PATH\"\n")


def project(root: Path) -> Path:
    (root / ".specdojo").mkdir(parents=True)
    (root / ".specdojo" / "specdojo.config.json").write_bytes(orjson.dumps({
        "version": 1, "projects": {"b": {
            "routines_path": "routines", "jobs_path": "jobs", "execution_path": "execution",
            "members_path": "members.yaml"}}}))
    (root / "fill.sh").write_text(FILL)
    (root / "members.yaml").write_text(
        "members:\n  - {nickname: ed, type: agent, mode: edit, command: sh fill.sh}\n"
        "  - {nickname: rv, type: agent, mode: review, command: sh fill.sh}\n")
    (root / "jobs").mkdir()
    (root / "routines").mkdir()
    key = 'run: {idempotency_key: "{{job_id}}:{{inputs.n}}"}\ninputs: {n: {type: string}}\n'
    (root / "jobs" / "job-cmd.yaml").write_text(
        "id: job-cmd\nname: C\n"
        "task: {mode: command, command: 'echo {{inputs.n}} > f-{{inputs.n}}'}\n" + key)
    (root / "jobs" / "job-ed.yaml").write_text(
        "id: job-ed\nname: E\ntask: {mode: edit, description: d, paths: [x]}\n" + key)
    (root / ".gitignore").write_text("execution/\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def test_agent_and_review_overhead(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    paths = resolve_project(root, env={})
    defs = definitions.load_jobs(paths)
    now = datetime(2026, 8, 7, tzinfo=UTC)
    counter = iter(range(10_000))

    def one(job: str, review: bool = False) -> None:
        n = str(next(counter))
        out = jobs.run_job(paths, defs, job, {"n": n}, scheduled_at=now,
                           env={"PATH": "/usr/bin:/bin"}, review=ReviewOptions(worktree=review))
        assert out.state == "succeeded", out
        if review:
            assert out.review is not None and out.review["merged"], out.review

    best = {"command": 1e9, "agent": 1e9, "review": 1e9}
    for _ in range(ROUNDS):
        best["command"] = min(best["command"], timed(lambda: one("job-cmd")))
        best["agent"] = min(best["agent"], timed(lambda: one("job-ed")))
        best["review"] = min(best["review"], timed(lambda: one("job-cmd", review=True)))
    print(f"\ncommand Job Run     {best['command'] * 1000:8.1f} ms (baseline)")
    for name, label in (("agent", "edit Job Run, agent"), ("review", "command Job, review")):
        print(f"{label} {best[name] * 1000:8.1f} ms  x{best[name] / best['command']:.2f}")
    assert best["agent"] < best["command"] * 10
