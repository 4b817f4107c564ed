"""An operator's stop (SPEC §6.5 "Stopped, not crashed"): SIGINT, SIGTERM or SIGHUP to a
runner.

The process entry (``__main__``) :func:`install`\\ s the handlers. A signal then raises
:class:`Stopped` (a :class:`KeyboardInterrupt`, carrying which signal it was) at once, as
Ctrl-C does in any Python program - except inside :func:`deferred`, which a runner wraps
around what must be recorded whole: an attempt from its ``attempt_started`` to its end, and
every command it runs. There the signal is only noted (:func:`requested`), and the runner
stops in order: the command's process group gets SIGTERM, up to :data:`GRACE_S` to end and
then SIGKILL (:mod:`.runner`); no further action or command starts; the action and the
attempt are recorded as ended with reason ``stopped by SIGINT`` / ``stopped by SIGTERM``
(:func:`reason`); and when the outermost deferred section ends, :class:`Stopped` unwinds the
command, so every lock is released, and the process exits 128 + the signal (130 / 143). A
second signal during the grace cuts it short (SIGKILL now). The line the command ends with
says what the stop met, as the runners told it (:func:`tell`, :func:`attempt_ended`): a
command it ended, an attempt it recorded as failed, or one that had already ended and keeps
its result - a stop after an attempt's end records nothing more for it.

SIGHUP (the terminal of a `run` started by hand went away) is a stop too, recorded ``stopped
by SIGHUP``, exit 129: left to its default it would kill the runner without recording, leave
the attempt interrupted and the action's children running. A runner that was started with
SIGHUP ignored (``nohup``) keeps ignoring it.

Only a runner that dies without recording (SIGKILL, power loss) leaves an attempt open, to
be reviewed as interrupted. A program that calls the library without installing these
handlers keeps Python's own SIGINT behaviour.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

__all__ = ["GRACE_S", "Stopped", "attempt_ended", "count", "deferred", "drain", "install",
           "reason", "reason_for", "requested", "tell", "uninstall", "wakeup_fd"]

GRACE_S = 10.0  # SIGTERM to the command's process group -> SIGKILL (SPEC §6.5)
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_installed = False
_requested: int | None = None  # the first stop signal received
_count = 0  # stop signals received
_depth = 0  # deferred sections entered and not left
_pipe: tuple[int, int] | None = None  # written to by a deferred stop, so a wait wakes up
_told: dict[str, str] = {}  # what became of what a stop met, by subject (:class:`Stopped`)


class Stopped(KeyboardInterrupt):
    """The command was stopped by ``signum`` (SIGINT, SIGTERM or SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP (what a shell
        reports)."""
        return 128 + self.signum

    def __str__(self) -> str:
        met = "; ".join(_told.values()) or ("no command was running, and nothing was recorded "
                                            "as failed for the stop")
        return (f"{reason_for(self.signum)}: {met}; nothing more was started and no attempt "
                "is left open - run the command again to go on")


def tell(subject: str, what: str) -> None:
    """Say what became of ``subject`` (``command``, ``attempt``) for the line a stopped command
    ends with (:class:`Stopped`); the latest word on a subject stands, said last."""
    _told.pop(subject, None)
    _told[subject] = what


def attempt_ended(routine_id: str, attempt_id: str, result: str, why: str | None) -> None:
    """Tell how the latest attempt ended: recorded as failed by the stop (its reason is the
    stop's), or with its own result before the stop, which it keeps (nothing more is recorded
    for it). Told for every attempt, as the stop may come after its end (a notification hook,
    the next attempt not yet started)."""
    if (why or "").startswith("stopped by "):
        tell("attempt", f'attempt {attempt_id} of {routine_id} was recorded as failed (reason '
                        f'"{why}")')
    else:
        tell("attempt", f"attempt {attempt_id} of {routine_id} had already ended ({result}) "
                        "and keeps that result")


def reason_for(signum: int) -> str:
    """``stopped by SIGINT`` / ``SIGTERM`` / ``SIGHUP``: the reason a stop is recorded with."""
    return f"stopped by {signal.Signals(signum).name}"


def install() -> None:
    """Make SIGINT, SIGTERM and SIGHUP an operator's stop for this process (the main thread
    only); a SIGHUP the process was started ignoring (``nohup``) stays ignored."""
    global _installed, _pipe
    _told.clear()  # what an earlier command in this process met is not this one's
    if _pipe is None:
        _pipe = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    for signum in SIGNALS:
        if signum == signal.SIGHUP and signal.getsignal(signum) == signal.SIG_IGN:
            continue
        signal.signal(signum, _on_signal)
    if sys.unraisablehook is not _unraisable:
        _hooks.append(sys.unraisablehook)
        sys.unraisablehook = _unraisable
    _installed = True


def uninstall() -> None:
    """Python's own handling again: SIGINT raises KeyboardInterrupt, SIGTERM and SIGHUP
    terminate (an ignored SIGHUP stays ignored)."""
    global _installed
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if signal.getsignal(signal.SIGHUP) == _on_signal:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    if sys.unraisablehook is _unraisable and _hooks:
        sys.unraisablehook = _hooks.pop()
    _installed = False


_hooks: list[Any] = []  # the unraisable hook :func:`install` replaced


def _unraisable(unraisable: Any) -> None:
    """A stop raised where Python cannot raise it (a ``__del__``, a weakref callback, the
    import machinery's own) is not printed as ignored: it stays requested, so the outermost
    deferred section that ends next raises it and the process exits with its code
    (``__main__``), and the next stop signal raises again as a first one would. Anything else
    goes to the hook it replaced."""
    global _count
    if isinstance(unraisable.exc_value, Stopped):
        _count = 0
        return
    (_hooks[-1] if _hooks else sys.__unraisablehook__)(unraisable)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global _requested, _count
    _count += 1
    if _requested is None:
        _requested = signum
    if _depth == 0 and _count == 1:  # a later one: the command is already stopping
        raise Stopped(signum)
    if _pipe is not None:
        with contextlib.suppress(OSError):  # a full pipe is awake already
            os.write(_pipe[1], b"\0")


def requested() -> int | None:
    """The stop signal received, if any (only ever set where :func:`install` ran)."""
    return _requested


def count() -> int:
    """How many stop signals were received (a second one cuts the grace short)."""
    return _count


def reason() -> str | None:
    """The reason to record for a stop requested, None when there is none."""
    return None if _requested is None else reason_for(_requested)


def wakeup_fd() -> int | None:
    """A descriptor that becomes readable when a deferred stop arrives (for a ``select``)."""
    return _pipe[0] if _pipe is not None and _installed else None


def drain() -> None:
    """Empty the wake-up pipe (its bytes only say "look at :func:`requested`")."""
    if _pipe is not None:
        with contextlib.suppress(OSError):
            while os.read(_pipe[0], 512):
                pass


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Inside, a stop is noted instead of raised; leaving the outermost section with a stop
    noted raises :class:`Stopped` (unless another exception is already on its way)."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
    if _depth == 0 and _requested is not None:
        raise Stopped(_requested)

