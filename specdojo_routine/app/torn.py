"""Torn ledger tails that a read-only answer leaves out (SPEC §5 "Damage"), said once each.

A crash mid-append can leave a ledger's last line torn. Every reader leaves the fragment out
(it was never acknowledged), and only a locked append or ``fold --repair`` moves it aside, so
a read-only command - which writes nothing - would otherwise answer without it and without a
word. These are the ``warning:`` lines it prints instead: which ledger, what tore it and what
repairs it, found by the ledger's own tail scan (the one ``fold --check`` refuses on).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from specdojo_routine.core.errors import RoutineError, TornLedgerError
from specdojo_routine.store.config import ProjectPaths


def warnings(paths: ProjectPaths, *, routine: bool = True,
             run_ids: Iterable[str] = ()) -> list[str]:
    """One line for each torn ledger among the routine ledger (``routine``) and the Job Run
    ledgers of ``run_ids``, in that order. A ledger that is missing, or damaged some other
    way, has none here: the command's own reading refuses damage with its line."""
    ledgers = [paths.routine_ledger] if routine else []
    ledgers += [paths.run_ledger(run_id) for run_id in dict.fromkeys(run_ids)]
    return [f"warning: {TornLedgerError(str(path), line)} (this answer leaves it out)"
            for path in ledgers if (line := _torn_line(path)) is not None]


def _torn_line(path: Path) -> int | None:
    """The torn line of the ledger at ``path``, if any. Where there is no ledger (a project
    that never ran) the ledger's code is not even loaded."""
    try:
        os.lstat(path)
    except OSError:
        return None
    from specdojo_routine.store.ledger import journal

    try:
        return journal.tail(path).torn_line
    except (RoutineError, OSError):
        return None
