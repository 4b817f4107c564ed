"""Who asked a runner to stop, and why (SPEC §13 ``stop ID --note``), beside the routine lock.

``stop`` cannot hand a note to a process with a signal, so it leaves one small file for the
attempt it stops, ``R/.locks/stop-<attempt_id>.json`` (``{"by", "note"}``), before it sends
SIGTERM; the runner that records the stop reads and removes it. A second ``stop`` of the
same attempt finds the file there and leaves it (and sends nothing: a second signal would cut
the action's grace short). A file left by a stop whose runner had already ended is harmless:
no other attempt has that id.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

import orjson

from specdojo_routine.store.config import read_regular


def _path(locks_dir: Path, attempt_id: str) -> Path:
    return locks_dir / f"stop-{attempt_id}.json"


def leave(locks_dir: Path, attempt_id: str, *, by: str, note: str | None) -> bool:
    """Write the request for ``attempt_id`` (atomically: a reader never sees half of it);
    False, and nothing written, when a request for it is there already: a stop is under way,
    and who asked first is who is recorded.
    The temporary file is created afresh: whatever holds its name (a link, which would be
    written through, a FIFO, which would wait for a reader) is removed first."""
    path = _path(locks_dir, attempt_id)
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644)
    try:
        os.write(fd, orjson.dumps({"by": by, "note": note}) + b"\n")
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # never replaces: two stops at once, one of them is first
    except FileExistsError:
        return False
    finally:
        tmp.unlink()
    return True


def older_than(locks_dir: Path, attempt_id: str, seconds: float) -> bool:
    """Whether the request for ``attempt_id`` was left more than ``seconds`` ago (a stop
    whose runner has not ended in that time may be signalled again)."""
    try:
        return time.time() - _path(locks_dir, attempt_id).lstat().st_mtime > seconds
    except OSError:
        return False


def take(locks_dir: Path, attempt_id: str) -> dict[str, Any] | None:
    """The request for ``attempt_id`` (removed as it is read), or None when there is none."""
    path = _path(locks_dir, attempt_id)
    try:
        # a FIFO there is no request, not a wait; a link is not ours, and not followed
        data = orjson.loads(read_regular(path, follow=False))
    except (OSError, orjson.JSONDecodeError):
        return None
    with contextlib.suppress(OSError):
        path.unlink()
    return data if isinstance(data, dict) else None
