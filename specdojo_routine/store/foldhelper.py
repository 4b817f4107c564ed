"""A second process that folds the second half of a long routine ledger (issue 16).

A full fold of at least :data:`MIN_BYTES` is split at a line near its middle.
:func:`second_part` starts ``python -I`` on the second part - handed its own open file
description of the very file this process reads, not the file's name - and that process
parses those lines, checks their hash chain and folds them speculatively
(:func:`.fold_parts.speculate`) while this process folds the first part. The helper is this
package's own fold, run on bytes of the same open file; what it could not know is the first
part's state, and its answer, a :class:`.fold_parts.Part`, is taken only once
:func:`.fold_parts.join` has checked everything it assumed about that state. A helper that
cannot start, dies, fails or answers garbage, a file that changed meanwhile, or an assumption
that does not hold leaves the second part to this process, which folds it as a fold in one
piece does (and reports any error the same way).

Only where it can help: Linux (``/proc/self/fd`` gives the helper a description of its own,
with its own offset), two usable cores, a Python to start.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, BinaryIO

from specdojo_routine.store import chainhelper, forked
from specdojo_routine.store.stamps import Stamp

if TYPE_CHECKING:  # imported where used: only a long fold pays for them (issue 16)
    import subprocess

    from specdojo_routine.core.fold_docs import RoutineFold
    from specdojo_routine.core.fold_parts import Part

__all__ = ["MIN_BYTES", "Helper", "main", "second_part"]

#: Ranges shorter than this are folded in one piece (the helper costs ~50 ms to start).
MIN_BYTES = 8 << 20
#: About what this process folds while the helper starts: the first part is longer by this.
_START_BYTES = 8 << 20
_CUT_SEARCH = 1 << 20  # a line must end within this much of the middle
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SCRIPT = ("import sys; sys.path.insert(0, sys.argv[1]); "
           "from specdojo_routine.store.foldhelper import main; main(sys.argv[2:])")


class Helper:
    """A helper folding bytes ``[cut, end)`` of the file."""

    def __init__(self, child: subprocess.Popen[bytes], cut: int, fd: int) -> None:
        self.cut = cut  #: where the second part starts (a line start)
        self._child = child
        self._fd, self._stamp = fd, Stamp.of(fd)

    def part(self) -> Part | None:
        """The helper's fold of the second part (waiting for it), or None if there is none
        to trust: it failed, or the file changed while it was read."""
        import pickle

        from specdojo_routine.core.fold_parts import Part

        out = self._child.stdout
        assert out is not None
        data = out.read()
        if self._child.wait() != 0 or Stamp.of(self._fd) != self._stamp:
            return None
        try:
            part = pickle.loads(data)
        except Exception:  # whatever a broken answer raises: it is not an answer
            return None
        return part if isinstance(part, Part) else None

    def join(self, state: RoutineFold, head: str) -> bool:
        """Join the helper's fold to ``state`` (the first part's; ``head`` the hash of its
        last line) if there is one and :func:`.fold_parts.join` proves it."""
        from specdojo_routine.core import fold_parts

        part = self.part()
        return part is not None and fold_parts.join(state, part, head=head)

    def stop(self) -> None:
        chainhelper.stop(self._child)


@contextlib.contextmanager
def second_part(f: BinaryIO, offset: int, end: int) -> Iterator[Helper | None]:
    """A helper folding the second part of bytes ``[offset, end)`` of the open ledger ``f``
    (``offset`` a line start), or None: fold the range in one piece."""
    helper = _start(f.fileno(), offset, end) if end - offset >= MIN_BYTES else None
    try:
        yield helper
    finally:
        if helper is not None:
            helper.stop()


def _start(fd: int, offset: int, end: int) -> Helper | None:
    cut = _cut(fd, offset, end)
    if cut is None or not sys.executable or not forked.several_cores():
        return None
    import subprocess  # only a long fold pays for it (start-up of short commands)

    try:
        own = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        child = subprocess.Popen(
            [sys.executable, "-I", *_bytecode_flags(), "-c", _SCRIPT, _ROOT, str(own),
             str(cut), str(end)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            pass_fds=(own,))
    except OSError:
        return None
    finally:
        os.close(own)
    return Helper(child, cut, fd)


def _bytecode_flags() -> list[str]:
    """This process's bytecode settings, for a helper that ``-I`` keeps from reading them in
    the environment (``PYTHONDONTWRITEBYTECODE``, ``PYTHONPYCACHEPREFIX``)."""
    flags = ["-B"] if sys.dont_write_bytecode else []
    prefix = getattr(sys, "pycache_prefix", None)
    return [*flags, "-X", f"pycache_prefix={prefix}"] if prefix else flags


def _cut(fd: int, offset: int, end: int) -> int | None:
    """The start of the line after the middle of the range (the first part a little longer,
    for the helper's start), or None when there is no such line nearby."""
    middle = offset + (end - offset + _START_BYTES) // 2
    if middle >= end:
        return None
    found = os.pread(fd, _CUT_SEARCH, middle - 1).find(b"\n")
    cut = middle + found
    return cut if found >= 0 and cut < end else None


# --- the helper process --------------------------------------------------------------------


def main(argv: list[str]) -> None:
    """The helper: fold bytes ``[cut, end)`` of the open file ``fd`` speculatively, write the
    pickled :class:`.Part` to standard output. Any error: a traceback and a failed exit."""
    import pickle

    fd, cut, end = map(int, argv)
    with os.fdopen(fd, "rb") as f:
        part = fold_part(f, cut, end)
    out: IO[bytes] = sys.stdout.buffer
    out.write(pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL))
    out.flush()


def fold_part(f: BinaryIO, cut: int, end: int) -> Part:
    """The speculative fold of bytes ``[cut, end)`` of ``f`` (``cut`` a line start), its hash
    chain checked from its first line on; that line's own ``seq`` and ``prev`` are what
    :func:`.fold_parts.join` checks against the first part."""
    import orjson

    from specdojo_routine.core.fold_parts import Part, speculate
    from specdojo_routine.store import chain, codec

    f.seek(cut)
    first = orjson.loads(f.readline())
    seq, prev = first["seq"], first.get("prev")
    if type(seq) is not int or ("prev" in first and type(prev) is not str):
        raise ValueError("the part's first line has no usable seq or prev")
    part = Part(first_seq=seq, first_prev=prev, seq=seq - 1)
    for raws in chain.verified_chunks(f, Path("<part>"), cut, end, line=seq,
                                      head=prev or chain.EMPTY_HEAD, helper=False):
        speculate(part, raws, upgrade=codec.upgrade)
    return part
