"""Who asked a runner to stop, and why (SPEC §13 ``stop ID --note``), beside the routine lock.

``stop`` cannot hand a note to a process with a signal, so it leaves one small file for the
attempt it stops, ``R/.locks/stop-<attempt_id>.json`` (``{"by", "note"}``), before it sends
SIGTERM; the runner that records the stop reads and removes it. A file left by a stop whose
runner had already ended is harmless: no other attempt has that id.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import orjson

from specdojo_routine.store.config import read_regular


def _path(locks_dir: Path, attempt_id: str) -> Path:
    return locks_dir / f"stop-{attempt_id}.json"


def leave(locks_dir: Path, attempt_id: str, *, by: str, note: str | None) -> None:
    """Write the request for ``attempt_id`` (atomically: a reader never sees half of it)."""
    path = _path(locks_dir, attempt_id)
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_bytes(orjson.dumps({"by": by, "note": note}) + b"\n")
    os.replace(tmp, path)


def take(locks_dir: Path, attempt_id: str) -> dict[str, Any] | None:
    """The request for ``attempt_id`` (removed as it is read), or None when there is none."""
    path = _path(locks_dir, attempt_id)
    try:
        data = orjson.loads(read_regular(path))  # a FIFO there is no request, not a wait
    except (OSError, orjson.JSONDecodeError):
        return None
    with contextlib.suppress(OSError):
        path.unlink()
    return data if isinstance(data, dict) else None
