"""The package's one error family.

Every error a user can cause is a :class:`RoutineError`; the CLI prints ``error: <message>`` on
stderr and exits with the error's ``exit_code``. This module imports nothing from the package.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence

import attrs

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_BUSY = 75


class RoutineError(Exception):
    """Base of every error this package raises on purpose."""

    exit_code: int = EXIT_FAILURE


class ConfigError(RoutineError):
    """The project root, config file or project selection is unusable."""

    exit_code = EXIT_USAGE


class UsageError(RoutineError):
    """The command line asks for something that cannot be done."""

    exit_code = EXIT_USAGE


@attrs.frozen(kw_only=True)
class Problem:
    """One validation finding, located in a file."""

    path: str
    line: int
    col: int
    message: str
    warning: bool = False

    def __str__(self) -> str:
        tag = "warning: " if self.warning else ""
        return f"{self.path}:{self.line}:{self.col}: {tag}{self.message}"


class DefinitionError(RoutineError):
    """One or more definition files are invalid (E-01)."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class LedgerError(RoutineError):
    """A ledger cannot be read or written."""


class CorruptLedgerError(LedgerError):
    """A ledger is damaged somewhere other than a torn last line; never repaired."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        self.path, self.line, self.reason = path, line, reason
        super().__init__(
            f"{path}:{line}: {reason} (this is not a torn last line, so it is never repaired "
            "automatically; restore the ledger from a backup, or upgrade specdojo_routine if "
            "the line was written by a newer version)"
        )


class TornLedgerError(LedgerError):
    """A ledger's last line is torn; `fold --repair` or the next locked append repairs it."""

    def __init__(self, path: str, line: int) -> None:
        self.path, self.line = path, line
        super().__init__(
            f"{path}:{line}: last line is torn (a crash mid-write); "
            "`fold --repair` or the next command that appends to this ledger moves it aside"
        )


class ReplacedLedgerError(LedgerError):
    """The ledger a command folded is no longer the file at its path (renamed over, moved
    away): appending there would mix two histories, so nothing is appended."""

    def __init__(self, path: str, *, gone: bool) -> None:
        self.path, self.gone = path, gone
        what = ("was moved away or deleted" if gone else
                "was replaced by another file (renamed over it: a checkout, a sync or a restore)")
        super().__init__(
            f"{path}: the ledger {what} while this command ran; nothing was appended to "
            f"{'any file there' if gone else 'the new file'} and the command stopped - what it "
            "recorded before is in the file that was there: put the ledger you mean to keep "
            "at this path, then run `list` (and `resolve` a routine it reports interrupted)"
        )


class InvalidTransition(LedgerError):
    """An event is not legal in the routine's current state."""

    def __init__(self, routine_id: str, state: str, event: str, where: str = "") -> None:
        self.routine_id, self.state, self.event = routine_id, state, event
        prefix = f"{where}: " if where else ""
        super().__init__(
            f"{prefix}event {event!r} is not allowed for routine {routine_id} in state {state!r}"
        )


class LockBusy(RoutineError):
    """Another process holds a lock we need."""

    exit_code = EXIT_BUSY


#: What to do when the routine lock is held: the end of its busy message (exit 75).
ROUTINE_BUSY_HINT = ("wait for it to end and run the command again; `status` says what it "
                     "runs, and `stop ID` ends a routine's running attempt")


class JobError(RoutineError):
    """A Job Run cannot be materialised or executed."""


class FileSystemError(RoutineError, OSError):
    """The file system refused what a library call needs (a permission, a full disk, a file
    where a directory should be): the environment, not a bug. The message says where, what and
    what to do (as the CLI's ``error:`` line); ``errno``, ``strerror`` and ``filename`` are
    the original ``OSError``'s, and it is still an ``OSError`` for callers that catch one."""

    def __init__(self, message: str, cause: OSError) -> None:
        super().__init__(message)
        self.errno, self.strerror = cause.errno, cause.strerror
        self.filename, self.filename2 = cause.filename, cause.filename2

    def __str__(self) -> str:
        return str(self.args[0])


class TooManyMissedOccurrences(RoutineError):
    """``missed_run: all`` found more than the cap of missed cron occurrences."""

    def __init__(self, routine_id: str) -> None:
        self.routine_id = routine_id
        super().__init__(f"Too many missed cron occurrences for {routine_id}")


# --- environment errors (OSError) as one line ----------------------------------------------


_REMEDIES = {
    errno.ENOSPC: "free some space on that file system and run the command again",
    errno.EDQUOT: "free some space (disk quota exceeded) and run the command again",
    errno.EROFS: "the file system is read-only: mount it read-write or use another root",
    errno.EACCES: "check the permissions of that path for this user",
    errno.EPERM: "check the permissions of that path for this user",
    errno.EISDIR: "a directory is where a file should be: move it aside",
    errno.ENOTDIR: "a file is where a directory should be: move it aside",
    errno.ENOENT: "check that the path exists",
}


def _text(name: object) -> str:
    if isinstance(name, bytes):
        return name.decode("utf-8", errors="surrogateescape")
    return str(name)


def environment_error(exc: OSError, *, no_inodes: bool = False) -> str:
    """One line for an ``OSError``: the path, what failed, what to do. ``no_inodes``: the
    file system it names has no free inodes (the edge looked; this module does no I/O)."""
    what = exc.strerror or str(exc) or type(exc).__name__
    return f"{_where(exc)}{what} ({remedy(exc, no_inodes=no_inodes)})"


def _where(exc: OSError) -> str:
    names = (exc.filename, exc.filename2)
    where = " -> ".join(_text(f) for f in names if f is not None)
    return f"{where}: " if where else ""


def missing_dependency(exc: ImportError) -> str:
    """One line for a module that cannot be imported (a dependency missing or broken)."""
    return (f"{exc}: a package specdojo_routine needs is missing or broken in this Python "
            f"environment; install specdojo_routine with its dependencies "
            "(pip install -e . in its clone) and run the command again")


#: ENOSPC with bytes still free: every inode is used, which `df -h` does not show.
NO_INODES = ("no free inodes on that file system (df -i): remove files there or raise its "
             "inode limit, and run the command again")


def remedy(exc: OSError, *, no_inodes: bool = False) -> str:
    """What to do about an ``OSError``, by its errno (``no_inodes``: see
    :func:`environment_error`)."""
    if no_inodes and exc.errno == errno.ENOSPC:
        return NO_INODES
    return _REMEDIES.get(exc.errno or 0, "check the file system and run the command again")


def exited_with(code: int, *, stderr_kept: bool = True) -> str:
    """``exited with code N``, with what the shell's codes mean where they say more than a
    number (SPEC §14: a failure says why): 126 and 127 are the shell's own (the command could
    not be run), 128+N a process ended by signal N. ``stderr_kept``: whether there is a
    stderr to point to (a notification hook's is not kept)."""
    see = ": see its stderr" if stderr_kept else ""
    meaning = {126: f"the shell found the command but could not execute it{see}",
               127: f"the shell did not find the command (or a file it runs){see}"
               }.get(code)
    if meaning is None and 128 < code < 160:
        meaning = f"ended by signal {code - 128}"
    return f"exited with code {code}" + (f" ({meaning})" if meaning else "")


_ONCE_ALLOWED = {
    errno.ENOSPC: "there is free space again",
    errno.EDQUOT: "the disk quota allows it again",
    errno.EACCES: "its folder is writable for this user",
    errno.EPERM: "its folder is writable for this user",
    errno.EROFS: "the file system is writable",
}


def view_not_refreshed(view: str, exc: OSError, *, done: str, no_inodes: bool = False) -> str:
    """The ``warning:`` text for a derived view that could not be written after ``done``
    was recorded: the ledger is the source of truth, so what was recorded stands, and
    ``fold`` (or the next command) writes the view once the file system lets it."""
    what = exc.strerror or str(exc) or type(exc).__name__
    when = ("its file system has free inodes again (df -i)" if no_inodes
            and exc.errno == errno.ENOSPC else
            _ONCE_ALLOWED.get(exc.errno or 0, "the file system allows it"))
    return (f"{view} was not refreshed ({_where(exc)}{what}); {done} is recorded in the "
            f"ledger; run `fold` once {when} (the next command refreshes it too)")
