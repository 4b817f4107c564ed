"""The handlers every command starts from: which project, and its definitions (SPEC §2, §3).

Moved out of :mod:`.handlers` (which re-exports both) so that ``where``, ``validate`` and
``list`` start without importing the run machinery (docs/performance.md).
"""

from __future__ import annotations

from pathlib import Path

import attrs

from specdojo_routine.store.config import ProjectPaths, resolve_project
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.definitions.load import Definitions


def project(root: Path | None = None, project_id: str | None = None) -> ProjectPaths:
    """Resolve the project the command works on (SPEC §2)."""
    return resolve_project(root, project_id)


def validate(paths: ProjectPaths, *, jobs_only: bool = False) -> Definitions:
    """Load and validate every definition, and the config's ``routine.notify`` (SPEC §13);
    problems are in the result, not raised."""
    if jobs_only:
        return definitions.load_jobs(paths)
    from specdojo_routine.store.definitions.notifyconfig import load_default_notify

    defs = definitions.load_definitions(paths)
    _, problems = load_default_notify(paths)
    return attrs.evolve(defs, problems=(*defs.problems, *problems)) if problems else defs
