"""Which bytes of ``routine-state.json`` we published last (SPEC §10: a file is ours only if it
is the fold of our ledger).

Another tool may rewrite ``routine-state.json`` in our own shape (the upstream CLI's shallow
merge keeps our keys, ``ledger`` included, and changes ``last_run``/``last_result``), so the
file's own claim of what it covers cannot tell whose it is. Every time we publish it we also
write the sha256 of its bytes to ``.routine-state.json.sha256`` beside it (a file only this
tool writes); a view whose bytes still hash to that is ours and may be folded incrementally,
anything else is compared with a full fold and imported (:mod:`adopt`).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def proof_path(view: Path) -> Path:
    return view.with_name(f".{view.name}.sha256")


def record(view: Path, data: bytes) -> None:
    """Remember that ``data`` is what we published at ``view`` (atomic, best effort)."""
    target = proof_path(view)
    text = hashlib.sha256(data).hexdigest().encode() + b"\n"
    try:
        if target.read_bytes() == text:
            return
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(dir=view.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(text)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def is_ours(view: Path, data: bytes) -> bool:
    """Whether ``data`` (the bytes at ``view``) is exactly what we published last."""
    try:
        recorded = proof_path(view).read_bytes().strip()
    except OSError:
        return False
    return recorded == hashlib.sha256(data).hexdigest().encode()
