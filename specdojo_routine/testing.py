"""Helpers for tests that embed or audit specdojo_routine (replay a ledger, check views).

Typical audit test::

    paths = write_project(tmp_path, routines={"rtn-daily": "interval: 1d\\n..."})
    specdojo_routine.run_due(paths, now=...)
    views = replay_ledger(paths.routine_ledger)
    assert "success" == views["routine-state.json"]["routines"]["rtn-daily"]["status"]
    assert_views_match_ledgers(paths)
"""

from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import orjson

from specdojo_routine.api import replay
from specdojo_routine.execute.agent import AgentRequest, AgentResult, AgentStatus
from specdojo_routine.store.config import ProjectPaths, resolve_project
from specdojo_routine.store.ledger.views import fold_all
from specdojo_routine.store.locks.routine import LockInfo, routine_lock

__all__ = [
    "FakeAgentExecutor",
    "assert_views_match_ledgers",
    "hold_routine_lock",
    "replay_ledger",
    "routine_statuses",
    "write_project",
]


def write_project(
    root: Path,
    *,
    routines: Mapping[str, str] = {},
    jobs: Mapping[str, str] = {},
    project_id: str = "demo",
) -> ProjectPaths:
    """Create a SpecDojo project at ``root``: config, ``routines/<id>.yaml`` and
    ``jobs/<id>.yaml`` (bodies are dedented; ``id:`` is added when missing)."""
    (root / ".specdojo").mkdir(parents=True, exist_ok=True)
    (root / ".specdojo" / "specdojo.config.json").write_bytes(orjson.dumps({
        "version": 1, "current_project": project_id,
        "projects": {project_id: {"routines_path": "routines", "jobs_path": "jobs",
                                  "execution_path": "execution"}},
    }))
    for folder, files in (("routines", routines), ("jobs", jobs)):
        (root / folder).mkdir(exist_ok=True)
        for ident, body in files.items():
            text = textwrap.dedent(body)
            if not text.lstrip().startswith("id:") and f"\nid: {ident}" not in text:
                text = f"id: {ident}\n{text}"
            if folder == "jobs" and not any(ln.startswith("name:") for ln in text.splitlines()):
                text = f"{text.rstrip()}\nname: {ident}\n"
            (root / folder / f"{ident}.yaml").write_text(text, encoding="utf-8")
    return resolve_project(root, project_id)


@contextlib.contextmanager
def hold_routine_lock(paths: ProjectPaths) -> Iterator[LockInfo]:
    """Hold the project's routine lock, as a running ``run`` would (to test ``LockBusy``).

    Locks are per open file description, so a ``run_due`` in this same process is refused too.
    """
    with routine_lock(paths.routine_locks_dir, project=paths.project_id) as info:
        yield info


def replay_ledger(*sources: Path | str) -> dict[str, Any]:
    """Fold ledger files into view documents in memory (keys: ``routine-state.json``,
    ``runs/<run_id>.json``, ``job-state.json``); nothing on disk is touched. A file that does
    not exist is a :class:`~specdojo_routine.FileSystemError`, not an empty ledger."""
    return replay(*sources)


def assert_views_match_ledgers(paths: ProjectPaths) -> None:
    """Fail when any published view differs from the fold of its ledger (``fold --check``)."""
    drifted = fold_all(paths, check=True)
    assert not drifted, f"views differ from their ledgers: {', '.join(drifted)}"


def routine_statuses(views: Mapping[str, Any]) -> dict[str, str]:
    """``{routine_id: status}`` from a replayed (or loaded) set of views."""
    routines = views["routine-state.json"]["routines"]
    return {rid: entry["status"] for rid, entry in routines.items()}


@attrs.define(repr=False)
class FakeAgentExecutor:
    """An :class:`~specdojo_routine.execute.agent.AgentExecutor` that records each request and
    answers with a fixed status (``succeeded`` by default)."""

    status: AgentStatus = "succeeded"
    reason: str | None = None
    requests: list[AgentRequest] = attrs.field(factory=list)

    def __call__(self, request: AgentRequest) -> AgentResult:
        self.requests.append(request)
        return AgentResult(status=self.status, reason=self.reason,
                           final_message=f"fake agent: {self.status}")
