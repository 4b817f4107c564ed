"""Reading a view file (``routine-state.json``, ``runs/<id>.json``, ``job-state.json``): the one
reader the proof, the views and the import step share, so that they agree on what a file holds.

A view is evidence, not truth: a missing file and anything but a regular file (a FIFO is checked
with ``fstat``, never waited on) hold no bytes; bytes that are not JSON hold no document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from specdojo_routine.store.config import NotRegularFile, read_regular

__all__ = ["parse", "stored"]


def stored(path: Path) -> bytes | None:
    """The view's bytes as stored; None when there is none or it is not a regular file."""
    try:
        return read_regular(path)
    except (FileNotFoundError, NotRegularFile):
        return None


def parse(data: bytes) -> Any:
    """The JSON document ``data`` holds; None when it is not JSON (or is JSON ``null``)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
