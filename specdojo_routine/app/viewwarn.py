"""The routine view after something was recorded: a view that cannot be written is a warning.

The ledger is the source of truth and ``routine-state.json`` is derived from it (SPEC §2, §5).
Once a control or an attempt's event is in the ledger, it has happened: a full disk or a
folder this user may not write that stops only the view from being refreshed must not turn
it into a failure (the operator would do it again and be told it was done already) nor cut
an attempt short. So the command carries on from the folded view, and says once which view
is stale, why, and that ``fold`` (or the next command) writes it when the file system lets it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from specdojo_routine.store import fsfacts
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.ledger import views

#: Where a command's warnings go: the CLI writes each as one ``warning:`` line on stderr.
Warn = Callable[[str], None]


def not_refreshed(paths: ProjectPaths, exc: OSError, *, done: str) -> str:
    """The warning's text (without ``warning:``) for the routine view ``exc`` kept stale
    after ``done`` was recorded."""
    return fsfacts.view_not_refreshed(paths.routine_state, exc, done=done)


def say(warn: Warn | None, text: str) -> None:
    """Hand ``text`` to ``warn``; a library caller that passed none gets a
    :class:`RuntimeWarning` (Python's own channel for "done, but look at this")."""
    if warn is None:
        warnings.warn(text, RuntimeWarning, stacklevel=3)
    else:
        warn(text)


def refresh_after(paths: ProjectPaths, *, done: str, warn: Warn | None) -> None:
    """Publish the routine view after ``done`` was recorded; if it cannot be written, warn
    (:func:`not_refreshed`) instead of failing what the ledger already holds."""
    try:
        views.refresh_routine_view(paths)
    except OSError as exc:
        say(warn, not_refreshed(paths, exc, done=done))
