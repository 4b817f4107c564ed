"""``--json`` of ``where``, ``validate`` and ``fold`` (SPEC §14): the text they print, as data."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from specdojo_routine.core.errors import CorruptLedgerError, TornLedgerError
from specdojo_routine.store.config import ProjectPaths

if TYPE_CHECKING:
    from specdojo_routine.app.adoption import FoldReport
    from specdojo_routine.store.definitions.load import Definitions


def where(paths: ProjectPaths) -> dict[str, Any]:
    """The resolved root, project id and paths (absolute)."""
    return {"root": str(paths.root), "project": paths.project_id,
            "routines": str(paths.routines_dir), "jobs": str(paths.jobs_dir),
            "execution": str(paths.execution_dir), "routine_ledger": str(paths.routine_ledger),
            "routine_state": str(paths.routine_state), "job_runs": str(paths.runs_dir),
            "job_state": str(paths.job_state), "evidence": str(paths.evidence_dir)}


def validation(defs: Definitions) -> dict[str, Any]:
    """Counts and every problem, located (``line``/``col`` as in the text form)."""
    def problem(p: Any) -> dict[str, Any]:
        return {"path": p.path, "line": p.line, "col": p.col, "message": p.message}

    return {"valid": not defs.errors, "routines": len(defs.routines), "jobs": len(defs.jobs),
            "errors": [problem(p) for p in defs.errors],
            "warnings": [problem(p) for p in defs.warnings]}


def fold(report: FoldReport, *, check: bool) -> dict[str, Any]:
    """What ``fold`` rewrote (``--check``: would rewrite), moved aside and could not import."""
    return {"check": check, "drifted": list(report.drifted), "repaired": list(report.moved),
            "conflicts": list(report.conflicts), "warnings": list(report.warnings)}


def fold_damaged(
    paths: ProjectPaths, damage: TornLedgerError | CorruptLedgerError, *, check: bool
) -> dict[str, Any]:
    """``fold``'s document when a ledger is damaged (a torn last line, or damage elsewhere):
    the ledger (root-relative), its line and the message the text form prints. The fold
    stopped there, so what differs and what conflicts is not known (null); nothing was
    repaired."""
    return {"check": check, "drifted": None, "repaired": [], "conflicts": None,
            "damaged": {"path": paths.rel(Path(damage.path)), "line": damage.line,
                        "torn": isinstance(damage, TornLedgerError), "message": str(damage)}}
