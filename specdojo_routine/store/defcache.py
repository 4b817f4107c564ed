"""A cache of what the fast path read from definition files, keyed by their content.

``R/.cache/definitions.json`` maps the sha256 of a file's text to the plain data
:mod:`.fastyaml` read from it (and, for routines, the definition digest), so an unchanged file
is neither parsed nor hashed canonically again. The rules still run on that data every time,
exactly as on freshly parsed data, so a cached file gives the same definitions and problems as
a parsed one; a file that has something to report never enters the cache (it is read by the
located slow path, always).

- Only recording commands write it (``run`` without ``--dry-run``, under the routine lock);
  ``validate``, ``list``, ``run --dry-run`` only read it and write nothing.
- It is valid only for the parser that filled it: a fingerprint of this package's version,
  the fast path's source and ruamel's version; any other fingerprint, or a file that is not
  what this module writes, is ignored (and replaced by the next recording command).
- Entries of files no longer seen are dropped when it is written. Deleting it is always safe.
- It lives beside the definitions and has their trust: whoever can write it can write them.
  A file whose text looks like it holds a secret (a token, a ``password:`` ...) is not cached,
  so no secret is copied out of the definitions.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from specdojo_routine.core.redact import redact
from specdojo_routine.store import lazy

if TYPE_CHECKING:
    import tempfile
else:  # on first use (store/lazy.py): only recording commands write the cache
    tempfile = lazy.module("tempfile")

CACHE_NAME = "definitions.json"
_VERSION = 1


def fingerprint() -> str:
    """What the cached data depends on: the fast path's code and ruamel's version."""
    import ruamel.yaml

    from specdojo_routine.store import definitions, fastyaml, safeyaml

    parts = [str(_VERSION), str(ruamel.yaml.__version__)]
    for module in (definitions, fastyaml, safeyaml):
        parts.append(hashlib.sha256(Path(str(module.__file__)).read_bytes()).hexdigest())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


class DefinitionCache:
    """The cache of one project's definition directory; see the module docstring."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / CACHE_NAME
        self._print = fingerprint()
        self._old: dict[str, Any] = self._read()
        self._seen: dict[str, Any] = {}

    def _read(self) -> dict[str, Any]:
        try:
            doc = orjson.loads(self.path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        ok = isinstance(doc, dict) and doc.get("fingerprint") == self._print
        files = doc.get("files") if ok else None
        return files if isinstance(files, dict) else {}

    @staticmethod
    def key(source: str) -> str:
        return hashlib.sha256(source.encode("utf-8")).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        """The plain data of the file whose text has this key, if cached."""
        entry = self._old.get(key)
        if not isinstance(entry, dict) or not isinstance(entry.get("data"), dict):
            return None
        self._seen[key] = entry
        return dict(entry["data"])

    def put(self, key: str, data: dict[str, Any], source: str) -> None:
        """Remember a file's data - unless its text holds something that looks like a secret
        (core/redact.py): secrets stay in the definitions, never in a copy (SPEC §7.5)."""
        if redact(source) == source:
            self._seen[key] = {"data": data, "digest": None}

    def digest(self, key: str) -> str | None:
        found = self._seen.get(key, {}).get("digest")
        return found if isinstance(found, str) else None

    def set_digest(self, key: str, digest: str) -> None:
        if key in self._seen:
            self._seen[key] = {**self._seen[key], "digest": digest}

    def save(self) -> bool:
        """Write the entries seen by this load (atomically); False when nothing changed."""
        if self._seen == self._old:
            return False
        doc = {"version": _VERSION, "fingerprint": self._print, "files": self._seen}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".definitions-")
        try:
            os.fchmod(fd, 0o644)
            with os.fdopen(fd, "wb") as out:
                out.write(orjson.dumps(doc))
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        self._old = dict(self._seen)
        return True
