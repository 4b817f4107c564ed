"""The last lines of a command's output, redacted, for the places people look first (pure).

``run`` prints them under a failed action and ``status`` under a failed attempt: the line that
explains a failure (``ERROR: disk full``) is usually among the last few of stderr.
"""

from __future__ import annotations

from collections.abc import Iterable

from specdojo_routine.core.redact import redact

TAIL_LINES = 5
LINE_LIMIT = 200  # characters of one shown line; the rest is in the evidence file


def last_lines(text: str, secrets: Iterable[str] = (), count: int = TAIL_LINES) -> list[str]:
    """The last ``count`` non-blank lines of ``text``, redacted first (so a cut never shows
    part of a secret), each cut to :data:`LINE_LIMIT` characters."""
    lines = [line.rstrip() for line in redact(text, tuple(secrets)).splitlines()]
    shown = [line for line in lines if line.strip()][-count:] if count > 0 else []
    return [line if len(line) <= LINE_LIMIT else line[: LINE_LIMIT - 1] + "…"
            for line in shown]
