"""A cache of what was read and built from definition files, keyed by their content.

``R/.cache/definitions.json`` maps the sha256 of a file's text to the plain data
:mod:`.fastyaml` read from it, the definition digest and - for a routine whose meaning depends
on its file alone (no ``job`` action: those are checked against the Job Definitions) - the
routine the rules built from it (:mod:`.routine_json`). An unchanged routine file is then
neither parsed nor checked again; a Job file, or a routine naming a Job, is not parsed again
and the rules check it every time. A file that has something to report (an error or a
warning) never enters the cache: it is read by the located slow path, always.

What is trusted, and why (trust only what we wrote and can verify):

- **Every file is read and hashed on every load; its identity is not trusted.** Device, inode,
  size and modification/change times would spare the reads of thousands of files, but they
  are not a proof of content: two writes of the same size within one timestamp tick, an inode
  number reused by a restored file, a file system with coarse or copied times all keep them
  while the text changes. The sha256 of the text is what ties an entry to a file.
- An entry is used only for the file it was built from (its path and id, checked) and only
  while this machine still has the time zone it names.
- It is valid only for the code that filled it: this format's version and the code's
  fingerprint (:func:`~specdojo_routine.store.codeprint.fingerprint`: the fast path and the
  rules - every module of ``store/`` and ``core/`` -, croniter's and ruamel's code, Python's
  version); a cache with another of either is ignored (and replaced by the next recording
  command).
- The document carries a checksum of its entries: a truncated or damaged cache (or one edited
  without its checksum) is ignored as a whole, and an entry that does not decode to exactly
  what this code writes (field by field) is ignored alone - either way the file is read and
  checked afresh. The checksum has no key: it finds damage, not a forgery (see below).
- Only a regular file is read: anything else at the cache's path (a FIFO would block every
  command) is ignored like a damaged cache, and the next recording command replaces the entry
  with a regular file (a rename over it: nothing is ever opened through it).
- It lives beside the definitions and has their trust: whoever can write it can write them,
  so a cache forged with its checksum recomputed is taken as the definitions it names (a
  machine-local key would only move the trust to the key's file).
  A file whose text looks like it holds a secret (a token, a ``password:`` ...), or that
  passes one to an option in a list of words (``[--password, VALUE]``), is not cached, so no
  secret is copied out of the definitions.

It also keeps, per cron schedule and cursor, the schedule's next occurrence after that cursor
(``next``: ``"<cron>|<zone>|<zone rules>|<last_scheduled_for>"`` -> the instant, or null for
none): a pure function of the four (:func:`~specdojo_routine.core.schedule.next_after`, under
the same fingerprint), so the call cron makes every minute tells that nothing is due without
iterating any schedule (:func:`~specdojo_routine.core.schedule.none_due`). The zone's rules
are a digest of the zone data this machine has for it: the same wall-clock time is another
instant once a country moves its clocks and the machine's zone data is updated, and an
occurrence worked out with the old rules is then not asked for again. Only what a load asked
for is kept when it is written.

Only recording commands write it (``run`` without ``--dry-run``, under the routine lock);
``validate``, ``list``, ``run --dry-run`` only read it and write nothing. Entries of files no
longer seen are dropped when it is written. Deleting it is always safe.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import os
import zoneinfo
from pathlib import Path
from typing import Any

import orjson

from specdojo_routine.core.model import Routine
from specdojo_routine.core.redact import redact, redact_words
from specdojo_routine.core.zones import usable_zone
from specdojo_routine.store import codeprint
from specdojo_routine.store.config import check_private, read_private, read_regular
from specdojo_routine.store.definitions import routine_json

CACHE_NAME = "definitions.json"
_VERSION = 4
#: :meth:`DefinitionCache.next_after` of a cursor it has not seen
UNKNOWN = "unknown"


class DefinitionCache:
    """The cache of one project's definition directory; see the module docstring."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / CACHE_NAME
        self._old_next: dict[str, str | None] = {}
        self._old: dict[str, Any] = self._read()
        self._seen: dict[str, Any] = {}  # entries of the cache this load used
        self._next: dict[str, str | None] = {}  # next occurrences this load asked for
        # what this load read itself: data, text, and the routine the rules built from it
        self._fresh: dict[str, tuple[str, str, Routine | None]] = {}
        self._decoder = routine_json.Decoder()

    @functools.cached_property
    def _print(self) -> str:
        """The code's fingerprint: computed only for a cache file to check or write (a fresh
        project's `list` does neither)."""
        return codeprint.fingerprint()

    def _read(self) -> dict[str, Any]:
        try:
            doc = orjson.loads(read_private(self.path))
        except (OSError, orjson.JSONDecodeError):  # NotRegularFile too: a FIFO is never read
            return {}
        if not isinstance(doc, dict) or doc.get("version") != _VERSION \
                or doc.get("fingerprint") != self._print:
            return {}
        files, nexts = doc.get("files"), doc.get("next")
        if not isinstance(files, dict) or not isinstance(nexts, dict) or (
                doc.get("checksum") != self._checksum(files, nexts)):
            return {}  # damaged, or edited by hand: evidence of nothing
        self._old_next = {k: v for k, v in nexts.items() if v is None or isinstance(v, str)}
        return files

    def _checksum(self, files: dict[str, Any], nexts: dict[str, Any]) -> str:
        return hashlib.sha256(self._print.encode() + orjson.dumps(files)
                              + orjson.dumps(nexts)).hexdigest()

    def next_after(self, cron: str, timezone: str, cursor: str) -> str | None:
        """The remembered next occurrence of ``cron`` in ``timezone`` after the instant
        ``cursor`` (as the view records it): its instant as :func:`timefmt.format_ms` writes
        it, None for none, :data:`UNKNOWN` when not remembered (or when the zone's rules are
        not the ones it was worked out with)."""
        key = _next_key(cron, timezone, cursor)
        if key is None:
            return UNKNOWN
        if key in self._next:
            return self._next[key]
        if key in self._old_next:
            self._next[key] = self._old_next[key]
            return self._next[key]
        return UNKNOWN

    def learn_next(self, cron: str, timezone: str, cursor: str, found: str | None) -> None:
        """Remember what :meth:`next_after` did not know (kept when saved)."""
        key = _next_key(cron, timezone, cursor)
        if key is not None:
            self._next[key] = found

    @staticmethod
    def key(source: str) -> str:
        return hashlib.sha256(source.encode("utf-8")).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        """The plain data of the file whose text has this key, if cached."""
        entry = self._old.get(key)
        data = _json(entry.get("data")) if isinstance(entry, dict) else None
        if not isinstance(data, dict):
            return None
        self._seen[key] = entry
        return data

    def routine(self, key: str, *, rel: str, routine_id: str) -> Routine | None:
        """The routine built from the file ``rel`` whose text has this key, if cached - the
        entry is decoded and checked field by field (:mod:`.routine_json`), and must name this
        file, its id and a time zone this machine still has; else None (build it again)."""
        entry = self._old.get(key)
        if not isinstance(entry, dict) or not isinstance(entry.get("data"), str):
            return None
        routine = self._decoder.decode(_json(entry.get("routine")))
        if routine is None or routine.path != rel or routine.id != routine_id:
            return None
        if routine.trigger is not None and not _zone_exists(routine.trigger.timezone):
            return None
        self._seen[key] = entry
        return routine

    def put(self, key: str, data: dict[str, Any], source: str) -> None:
        """Remember a file's data (kept when saved - unless its text holds something that
        looks like a secret, core/redact_rules.py: secrets stay in the definitions, never in a copy,
        SPEC §7.5)."""
        self._fresh[key] = (orjson.dumps(data).decode(), source, None)  # text: see _entry

    def put_routine(self, key: str, routine: Routine) -> None:
        """Remember the routine built from the file with this key (its digest, and the
        routine itself when it depends on that file alone: :func:`.routine_json.cacheable`)."""
        if key in self._fresh:
            data, source, _ = self._fresh[key]
            self._fresh[key] = (data, source, routine)
        elif key in self._seen:  # read from the cache, built again (another file's entry)
            self._seen[key] = _entry(self._seen[key]["data"], routine)

    def holds(self, key: str) -> bool:
        """Whether this load took something of the file with this key from the cache."""
        return key in self._seen

    def digest(self, key: str) -> str | None:
        found = self._seen.get(key, {}).get("digest")
        return found if isinstance(found, str) else None

    def _write(self, data: bytes) -> bool:
        """Replace the cache file with ``data`` (atomically); False when it cannot be written
        (a full disk, a directory in its place): the cache only spares work, so the command
        goes on without it."""
        import tempfile  # here: only a recording command writes the cache

        try:
            check_private(self.path)  # a link there names a folder that is not ours
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".definitions-")
        except OSError:
            return False
        try:
            os.fchmod(fd, 0o644)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temp, self.path)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            if isinstance(exc, OSError):
                return False
            raise
        return True

    def save(self) -> bool:
        """Write the entries seen by this load (atomically); False when nothing changed.
        What this load read itself is encoded here, so that a load that saves nothing (every
        one but a recording command's) never pays for it."""
        files = dict(self._seen)
        for key, (data, source, routine) in self._fresh.items():
            if redact(source) == source and not _passes_a_secret(orjson.loads(data)):
                files[key] = _entry(data, routine)
        nexts = dict(self._next)
        if files == self._old and nexts == self._old_next:
            return False
        doc = {"version": _VERSION, "fingerprint": self._print,
               "checksum": self._checksum(files, nexts), "files": files, "next": nexts}
        if not self._write(orjson.dumps(doc)):
            return False
        self._old, self._seen, self._fresh = files, dict(files), {}
        self._old_next = nexts
        return True


def _passes_a_secret(data: Any) -> bool:
    """Whether a list of words in the data passes a secret to an option (``[--password,
    VALUE]``: no text pattern sees it, :func:`redact_words` does)."""
    if isinstance(data, dict):
        return any(_passes_a_secret(value) for value in data.values())
    if isinstance(data, list):
        words = [word for word in data if isinstance(word, str)]
        return redact_words(words) != words or any(_passes_a_secret(v) for v in data)
    return False


def _entry(data: str, routine: Routine | None) -> dict[str, Any]:
    """An entry: the data and the routine as JSON texts, so that a loaded cache (and what a
    load read, kept for saving) is a dict of strings - nothing for Python's cyclic collector to
    walk again and again for the rest of the process (as 60,000 dicts and lists of 10,000
    entries would be), and nothing parsed that this load does not use."""
    entry: dict[str, Any] = {"data": data, "digest": None if routine is None else routine.digest}
    if routine is not None and routine_json.cacheable(routine):
        entry["routine"] = orjson.dumps(routine_json.encode(routine)).decode()
    return entry


def _json(text: object) -> Any:
    if not isinstance(text, str):
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


_zone_exists = functools.cache(usable_zone)  # a cached routine's zone, checked once a process


def _next_key(cron: str, timezone: str, cursor: str) -> str | None:
    """The key of a remembered next occurrence: the schedule, the zone's rules and the cursor
    it was worked out from (None: the zone's rules cannot be read, so nothing is remembered)."""
    rules = _zone_rules(timezone)
    return None if rules is None else f"{cron}|{timezone}|{rules}|{cursor}"


@functools.cache
def _zone_rules(name: str) -> str | None:
    """A digest of the data zoneinfo reads for the zone ``name`` (None: it cannot be read). A
    remembered occurrence is an instant worked out with the zone's rules as they were; the
    machine's zone data changes when a country moves its clocks (a tzdata update), and with it
    the instants of the same wall-clock times."""
    path = _zone_file(name)
    try:
        return None if path is None else hashlib.sha256(read_regular(path)).hexdigest()[:16]
    except OSError:
        return None


def _zone_file(name: str) -> Path | None:
    """The file zoneinfo reads for the zone ``name``, in zoneinfo's order: the first of that
    name on ``zoneinfo.TZPATH``, else the tzdata package's."""
    for root in zoneinfo.TZPATH:
        if (Path(root) / name).is_file():
            return Path(root) / name
    found = importlib.util.find_spec("tzdata")  # a dependency: where the machine has none
    for package in (found and found.submodule_search_locations) or ():
        if (Path(package) / "zoneinfo" / name).is_file():
            return Path(package) / "zoneinfo" / name
    return None
