"""Child output that names its routine (SPEC §14): ``[rtn-nightly] ERROR: disk full``; and
the command a delegated call starts with (:func:`specdojo_prefix`), here rather than in
:mod:`.runner` so that a run with nothing to start never imports the process machinery."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any, TextIO, cast

from specdojo_routine.core.errors import ConfigError


def specdojo_prefix(env: Mapping[str, str]) -> list[str]:
    """The SpecDojo CLI command: ``$SPECDOJO_CLI`` split like a shell would, or ``specdojo``."""
    raw = env.get("SPECDOJO_CLI", "").strip()
    try:
        words = shlex.split(raw)
    except ValueError as exc:
        raise ConfigError(f"SPECDOJO_CLI is not valid shell syntax ({exc}): {raw}") from None
    return words or ["specdojo"]


class Prefixed:
    """An echo stream that starts every line with ``[<routine id>] ``: the output of several
    routines' children in one log (cron mail, CI) says whose it is."""

    def __init__(self, stream: TextIO, prefix: str) -> None:
        self._stream, self._prefix = stream, f"[{prefix}] "
        self._line_start = True

    def write(self, text: str) -> int:
        if not text:
            return 0
        lines = text.split("\n")
        parts = []
        for i, piece in enumerate(lines):
            if i > 0:
                parts.append("\n")
                self._line_start = True
            if piece:
                if self._line_start:
                    parts.append(self._prefix)
                parts.append(piece)
                self._line_start = False
        self._stream.write("".join(parts))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def prefixed(stream: TextIO | None, routine_id: str) -> TextIO | None:
    """``stream`` with every line starting ``[routine_id] `` (None stays None)."""
    return None if stream is None else cast(TextIO, Prefixed(stream, routine_id))
