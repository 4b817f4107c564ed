"""Is a routine run in progress? Open attempts and their live owners (SPEC §6.2).

Shared by ``run``, ``resolve`` and ``release``; moved out of :mod:`.handlers` (which
re-exports these names).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specdojo_routine.core import errors
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.ledger import views
from specdojo_routine.store.locks import routine as locks


def _is_open(state: Mapping[str, Any] | None) -> bool:
    """An attempt is started and not yet ended or resolved."""
    return state is not None and state.get("status") == "running"


def live_owner(view: views.RoutineView) -> tuple[str, Mapping[str, Any]] | None:
    """(routine id, open attempt) of an attempt whose recorded owner is a live process on this
    host other than this one (pid and start time checked), if any."""
    for routine_id, entry in view.routines.items():
        opened: Mapping[str, Any] | None = entry.get("open_attempt")
        if opened is None:
            continue
        owner: Mapping[str, Any] = opened.get("owner") or {}
        if locks.is_self(owner.get("pid"), owner.get("host")):
            continue
        if locks.owner_alive(owner.get("pid"), owner.get("host"), owner.get("start")) is True:
            return routine_id, opened
    return None


def refuse_if_owner_lives(view: views.RoutineView, paths: ProjectPaths) -> None:
    """Never rob the living (SPEC §6.2): an open attempt whose owner is alive on this host
    means its run is in progress, whatever the lock file says (it may have been deleted)."""
    found = live_owner(view)
    if found is None:
        return
    routine_id, opened = found
    owner = opened["owner"]
    raise errors.LockBusy(
        f"Another routine run is in progress (attempt {opened['attempt_id']} of {routine_id} "
        f"is owned by live pid {owner['pid']} on {owner['host']} since {opened['started_at']}; "
        f"the lock {paths.routine_locks_dir / locks.ROUTINE_FLOCK_NAME} was not held by it - "
        "was it deleted?); nothing was recorded")
