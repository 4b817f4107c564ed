"""Process groups that may outlive their runner (SPEC §6.5, §7): recorded when a command starts,
checked before its work is done again or its attempt is closed.

A command runs in its own process group and gets SIGKILL when its runner dies (runner.py), but
what it started in its group may live on. The group is recorded beside the attempt (a Job
Run's ``process.json``; a routine action's ``R/.locks/action-group.json``) with the host and the
facts that name the attempt; :func:`still_running` is the group id while a member of it is
alive on this host, else None (another host's group cannot be checked here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from specdojo_routine.execute import runner
from specdojo_routine.store.config import ProjectPaths, read_regular
from specdojo_routine.store.ledger import views
from specdojo_routine.store.locks import routine as locks

__all__ = ["action_group_path", "action_still_running", "record", "record_action", "still_running"]


def action_group_path(paths: ProjectPaths) -> Path:
    """Where the process group of the routine action running now is recorded (one routine
    run at a time holds the routine lock, so one file)."""
    return paths.routine_locks_dir / "action-group.json"


def record_action(paths: ProjectPaths, pgid: int, *, attempt_id: str, index: int) -> None:
    """Record the group of the routine action running now (action ``index`` of the attempt)."""
    record(action_group_path(paths), pgid, attempt_id=attempt_id, index=index)


def action_still_running(paths: ProjectPaths, attempt_id: str | None) -> int | None:
    """The group of an action of routine attempt ``attempt_id`` while it is alive here."""
    if attempt_id is None:
        return None
    return still_running(action_group_path(paths), attempt_id=attempt_id)


def record(target: Path, pgid: int, **facts: Any) -> None:
    """Record command group ``pgid`` (with ``facts`` naming its attempt), as soon as it runs."""
    target.parent.mkdir(parents=True, exist_ok=True)
    entry = {**facts, "pgid": pgid, "host": locks.this_host(), "start": locks.process_start(pgid)}
    views.publish(target, orjson.dumps(entry) + b"\n")


def still_running(target: Path, **facts: Any) -> int | None:
    """The group recorded at ``target`` for the attempt ``facts`` name, if a member of it is
    still alive on this host; else None (no record, another attempt's, another host's)."""
    try:
        raw = orjson.loads(read_regular(target))  # a FIFO there is no record, not a wait
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(raw, dict) or any(raw.get(k) != v for k, v in facts.items()):
        return None
    pgid = raw.get("pgid")
    if type(pgid) is not int or raw.get("host") != locks.this_host():
        return None
    return pgid if runner.group_alive(pgid) else None
