"""A forked helper process that does the second part of a long loop while this one does the
first (issue 16: a 10,000-file ``run --due --dry-run`` in a second; this machine has 2 cores).

:func:`in_two` calls ``work`` on the first part of a list here and, in a child made by
``os.fork()``, on the rest; the child hands its result back pickled through a pipe. ``work``
must depend only on what the child inherits and on its part of the list, and must return
everything it did (a child's side effects are lost with it), so that calling it on the two
parts in one process gives the same.

What the child sends is used only when it is whole (a length header and its own exit status
say so). A child that cannot be made, raises, is killed or sends less leaves its part to be
done here, after the first: the helper can only save time, never change a result. The parent
never waits for the child before it has done its own part, and it reaps the child (killing
it first, if it is still running) however its own part ends, an exception included.

A fork is made only where it is safe and pays: when a command-line process allowed it
(:func:`allowed`; a program that imports the package keeps its own process to itself), with
no other Python thread running (a thread's locks would be copied held), with more than one
core to run on and at least :data:`MIN_ITEMS` items.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import NoReturn, TypeVar

__all__ = ["MIN_ITEMS", "allowed", "in_two"]

_T = TypeVar("_T")
_R = TypeVar("_R")

#: Fewer items are done here alone (a fork and its pickled answer cost a few milliseconds).
MIN_ITEMS = 1000
#: The share of the items done here: this process also unpickles the child's answer.
HERE = 0.55
_HEADER = 8  # the length of the pickled answer, big-endian
_allowed = False


@contextlib.contextmanager
def allowed() -> Iterator[None]:
    """Within this block, :func:`in_two` may fork (the CLI's ``main`` allows it)."""
    global _allowed
    before, _allowed = _allowed, True
    try:
        yield
    finally:
        _allowed = before


def in_two(work: Callable[[Sequence[_T]], _R], items: Sequence[_T]) -> tuple[_R, _R]:
    """``(work(first part), work(the rest))``, the rest done by a forked child when one may be
    made (see the module docstring), else here."""
    cut = round(len(items) * HERE) if _worth_a_fork(len(items)) else len(items)
    first, rest = items[:cut], items[cut:]
    if not rest:
        return work(first), work(rest)
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return work(first), work(rest)
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return work(first), work(rest)
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(work, rest, write_end)
    os.close(write_end)
    answer: bytes | None = None
    try:
        mine = work(first)
        answer = _read_all(read_end)
    finally:
        os.close(read_end)
        whole = _reap(pid, finished=answer is not None)
    if answer is not None and whole and len(answer) >= _HEADER:
        size = int.from_bytes(answer[:_HEADER], "big")
        if size == len(answer) - _HEADER:
            import pickle

            try:
                theirs: _R = pickle.loads(answer[_HEADER:])
            except Exception:  # not what a child of ours writes: do it here
                return mine, work(rest)
            return mine, theirs
    return mine, work(rest)


def _worth_a_fork(count: int) -> bool:
    if not _allowed or count < MIN_ITEMS or not hasattr(os, "fork"):
        return False
    threading = sys.modules.get("threading")  # never imported: no other Python thread
    if threading is not None and threading.active_count() > 1:
        return False
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(
        os.cpu_count() or 1)
    return len(cores) > 1


def _child(work: Callable[[Sequence[_T]], _R], rest: Sequence[_T], fd: int) -> NoReturn:
    """Do ``work(rest)``, write the pickled answer to ``fd`` and exit: 0 when it was written
    whole, 1 otherwise. Nothing else of this process is run (no ``atexit``, no flush of the
    parent's buffered output, no ``finally`` of the callers)."""
    code = 1
    try:
        import gc
        import pickle

        gc.disable()  # a short life; a collection would only copy the parent's pages
        result = work(rest)
        answer = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        data = len(answer).to_bytes(_HEADER, "big") + answer
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        code = 0
    except BaseException:  # the parent does the work itself
        pass
    finally:
        os._exit(code)


def _read_all(fd: int) -> bytes:
    parts = []
    while chunk := os.read(fd, 1 << 20):
        parts.append(chunk)
    return b"".join(parts)


def _reap(pid: int, *, finished: bool) -> bool:
    """Wait for the child (killed first unless it sent everything); True if it exited 0."""
    if not finished:
        import signal

        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # reaped by someone else (a SIGCHLD handler): unknown
        return False
    return os.waitstatus_to_exitcode(status) == 0
