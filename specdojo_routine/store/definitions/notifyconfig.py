"""The project's default notification hook: ``projects.<id>.routine.notify`` (SPEC §13).

It lives in the SpecDojo config (JSON, which the definitions' safe YAML loader reads as YAML
1.2), so its problems are located (``file:line:col``) like a routine's ``policy.notify``. The
config is parsed located only when the block is there: a project without one pays one JSON
read.
"""

from __future__ import annotations

import orjson

from specdojo_routine.core import model, policy_rules
from specdojo_routine.core.errors import Problem
from specdojo_routine.core.validation import Node, Report
from specdojo_routine.store.config import (
    CONFIG_RELPATH,
    NotRegularFile,
    ProjectPaths,
    read_regular,
)


def load_default_notify(paths: ProjectPaths) -> tuple[model.Notify | None, tuple[Problem, ...]]:
    """The project's ``routine.notify`` (None when it has none) and its problems."""
    path = paths.root / CONFIG_RELPATH
    rel = CONFIG_RELPATH.as_posix()
    try:
        raw = orjson.loads(read_regular(path))  # never a FIFO (SPEC §10 rule 8)
    except (OSError, NotRegularFile, orjson.JSONDecodeError):  # resolve_project read it
        return None, ()
    entry = (raw.get("projects") or {}).get(paths.project_id) if isinstance(raw, dict) else None
    block = entry.get("routine") if isinstance(entry, dict) else None
    if not isinstance(block, dict) or "notify" not in block:
        return None, ()
    from specdojo_routine.store.definitions.safeyaml import read_definition  # ruamel: only here

    report, data = read_definition(path, rel, "config")
    if data is None:  # not readable as YAML (tabs, say): check it unlocated
        report, data = Report(rel), raw
    root = Node(value=data)
    node = root.child("projects").child(paths.project_id).child("routine").child("notify")
    notify = policy_rules.notify_block(report, node)
    return notify, tuple(report.problems)
