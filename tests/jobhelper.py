"""Helpers for the Job Run tests; run as a script it holds the exec lock in another process.

Usage: python tests/jobhelper.py hold-exec EXEC_LOCKS_DIR
  takes the project exec lock, prints its token, holds it until stdin reaches EOF.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specdojo_routine.app import jobs
from specdojo_routine.core.jobmodel import InputValue
from specdojo_routine.core.jobplan import JobRunOutcome, Trigger
from specdojo_routine.execute.agent import AgentExecutor
from specdojo_routine.store.config import ProjectPaths, resolve_project
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.locks import execlock

HELPER = Path(__file__).resolve()
SCHEDULED = datetime(2026, 8, 7, 8, 0, tzinfo=UTC)


def paths_of(root: Path) -> ProjectPaths:
    return resolve_project(root, env={})


def run(
    root: Path, job_id: str, inputs: Mapping[str, InputValue] | None = None, *,
    env: Mapping[str, str] | None = None, trigger: Trigger = "manual",
    agent: AgentExecutor | None = None, scheduled_at: datetime = SCHEDULED,
) -> JobRunOutcome:
    """``run_job`` on the project at ``root`` (definitions loaded fresh)."""
    paths = paths_of(root)
    defs = definitions.load_jobs(paths)
    assert () == defs.errors, defs.errors
    return jobs.run_job(paths, defs, job_id, dict(inputs or {}), scheduled_at=scheduled_at,
                        trigger=trigger, agent=agent, env=dict(env or clean_env()))


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SPECDOJO_", "GIT_")) and k != "CODE"}
    env.update(extra)
    return env


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false",
         *args], cwd=root, check=True, capture_output=True, text=True, env=clean_env())
    return done.stdout.strip()


def commit(root: Path, name: str) -> str:
    """Commit a new file ``docs/<name>``; returns the new HEAD sha."""
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / name).write_text(name + "\n")
    git(root, "add", "docs")
    git(root, "commit", "-q", "-m", name)
    return git(root, "rev-parse", "HEAD")


def ledger_events(paths: ProjectPaths, run_id: str) -> list[dict[str, Any]]:
    import orjson

    path = paths.run_ledger(run_id)
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


def hold_exec(locks_dir: Path) -> int:
    with execlock.exec_lock(locks_dir, actor="jobhelper", env={}) as handle:
        print(handle.token, flush=True)
        sys.stdin.read()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["hold-exec"]:
        raise SystemExit(hold_exec(Path(sys.argv[2])))
    raise SystemExit(__doc__)
