"""Conventions every command shares (SPEC §14): quiet for cron, and a closed pipe ends quietly.

- ``--quiet`` (or ``SPECDOJO_ROUTINE_QUIET=1``) keeps everything a command prints until it
  ends, and prints it only when it failed (chronic-style): cron's MAILTO then mails only
  failures. A busy lock (exit 75) is not a failure: the run that holds it reports. Its
  ``warning:`` lines are printed whatever the outcome (a failing notification hook: an alarm
  channel that is broken must reach cron's mail even when the routines succeed).
- A reader that goes away (``history | head -1``) is not an error: output stops, and the
  command ends with the status it would have had anyway.
- Nothing a command prints carries a secret value the environment holds (SPEC §7.5).
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO, cast

from specdojo_routine.core.errors import EXIT_BUSY, EXIT_OK, RoutineError
from specdojo_routine.core.redact import redact_values

QUIET_ENV = "SPECDOJO_ROUTINE_QUIET"
_QUIET_EXIT = (EXIT_OK, EXIT_BUSY)


class PipeGuard:
    """A text stream whose reader may go away: once writing fails with ``BrokenPipeError``
    the stream is pointed at /dev/null (so the interpreter's last flush stays quiet) and every
    later write is dropped."""

    def __init__(self, stream: TextIO, silence: Callable[[TextIO], None]) -> None:
        self._stream, self._silence = stream, silence
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                self._stream.write(text)
            except BrokenPipeError:
                self._broke()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._broke()

    def _broke(self) -> None:
        self.broken = True
        self._silence(self._stream)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...
        return getattr(self._stream, name)


class WithoutSecrets:
    """A text stream that never carries the secret values the environment holds (SPEC §7.5):
    whatever a command writes - an error line, a definition's problem, a JSON document -
    may quote a value that is also a ``*_PASSWORD`` variable's, which no pattern can know.
    A value is kept out where it stands alone, not inside a longer word or number, so that a
    secret that is also an everyday word leaves ids, paths and JSON numbers readable."""

    def __init__(self, stream: TextIO, secrets: Sequence[str]) -> None:
        self._stream, self._secrets = stream, secrets

    def write(self, text: str) -> int:
        self._stream.write(redact_values(text, self._secrets, whole=True))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, ...
        return getattr(self._stream, name)


def without(stream: TextIO, secrets: Sequence[str]) -> TextIO:
    """``stream`` behind :class:`WithoutSecrets`, or itself when there are none to keep out."""
    return cast(TextIO, WithoutSecrets(stream, secrets)) if secrets else stream


def guarded(stream: TextIO, silence: Callable[[TextIO], None]) -> TextIO:
    """``stream`` behind a :class:`PipeGuard`."""
    return cast(TextIO, PipeGuard(stream, silence))


def quiet_requested(args: Any, env: Mapping[str, str] | None = None) -> bool:
    """Whether this command was asked to be quiet (only commands with ``--quiet`` can be)."""
    if not hasattr(args, "quiet"):
        return False
    return bool(args.quiet) or (env if env is not None else os.environ).get(QUIET_ENV) == "1"


def run_quietly(command: Callable[[TextIO, TextIO], int], out: TextIO, err: TextIO) -> int:
    """Run ``command`` with its output held back; print it only if the command failed, and
    its ``warning:`` lines in any case."""
    held_out, held_err = io.StringIO(), io.StringIO()
    try:
        code = command(held_out, held_err)
    except RoutineError as exc:
        if exc.exit_code not in _QUIET_EXIT:
            _release(held_out, held_err, out, err)
        else:
            _warnings(held_err, err)
        raise
    except BaseException:
        _release(held_out, held_err, out, err)
        raise
    if code not in _QUIET_EXIT:
        _release(held_out, held_err, out, err)
    else:
        _warnings(held_err, err)
    return code


def _warnings(held_err: io.StringIO, err: TextIO) -> None:
    """The ``warning:`` lines of what a quiet command held back on stderr."""
    lines = [line for line in held_err.getvalue().splitlines(keepends=True)
             if line.startswith("warning:")]
    if lines:
        err.writelines(lines)
        err.flush()


def _release(held_out: io.StringIO, held_err: io.StringIO, out: TextIO, err: TextIO) -> None:
    out.write(held_out.getvalue())
    out.flush()
    err.write(held_err.getvalue())
    err.flush()
