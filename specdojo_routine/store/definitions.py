"""Definition files (SPEC §2, §3, §7.1): discovery, safe YAML loading, validation (E-01).

The rules themselves are in :mod:`.routine_rules` and :mod:`.job_rules`; this module
finds the files, reads them safely, applies the rules (Jobs first: routines name Jobs) and
the cross-file ones (duplicate ids).

Every problem of every file is reported, located (``routines/rtn-a.yaml:3:7: ...``); an invalid
file never yields a definition. YAML is read as YAML 1.2 core data only: no tags beyond the
core ones (nothing is ever constructed from a tag), no timestamps, bounded size, depth and
alias expansion, duplicate keys are errors.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs
import orjson
from ruamel.yaml import YAML
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    DocumentStartEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
)
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.resolver import VersionedResolver, implicit_resolvers

from specdojo_routine.core import validation
from specdojo_routine.core.agent_rules import Roster, check_job_nicknames
from specdojo_routine.core.errors import Problem
from specdojo_routine.core.job_rules import build_job
from specdojo_routine.core.model import JobDefinition, Routine
from specdojo_routine.core.routine_rules import JobIndex, build_routine
from specdojo_routine.core.validation import Node, Report, got
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.defcache import DefinitionCache
from specdojo_routine.store.fastyaml import FastReader

MAX_FILE_BYTES = 1 << 20  # definitions are small; anything bigger is a mistake or an attack
MAX_DEPTH = 64  # nesting levels
MAX_NODES = 100_000  # values after alias expansion (a "billion laughs" stops here)
_CORE_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq")
)
_NOT_CORE_IMPLICIT = frozenset({"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value"})
_T = TypeVar("_T")


@attrs.frozen(kw_only=True)
class Definitions:
    """The outcome of loading a project's definitions: the valid ones and every problem."""

    routines: tuple[Routine, ...] = ()  # valid routines only, in sorted file order
    jobs: tuple[JobDefinition, ...] = ()  # valid jobs only, in sorted file order
    invalid_job_ids: frozenset[str] = frozenset()  # base names of invalid job files
    problems: tuple[Problem, ...] = ()  # errors and warnings, sorted by (path, line, col)
    routine_files: int = 0
    job_files: int = 0
    # what the fast path read, for a recording command to keep (remember()); not a result
    cache: DefinitionCache | None = attrs.field(default=None, eq=False, repr=False)

    def job(self, job_id: str) -> JobDefinition | None:
        return next((job for job in self.jobs if job.id == job_id), None)

    def routine(self, routine_id: str) -> Routine | None:
        return next((r for r in self.routines if r.id == routine_id), None)

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if not p.warning)

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.warning)


def load_definitions(paths: ProjectPaths) -> Definitions:
    """Load and validate every routine and Job Definition of the project."""
    return _load(paths, with_routines=True)


def load_jobs(paths: ProjectPaths) -> Definitions:
    """Load and validate the Job Definitions only (``routines`` is empty)."""
    return _load(paths, with_routines=False)


def remember(defs: Definitions) -> bool:
    """Keep what the fast path read for the next load (:mod:`.defcache`); only recording
    commands call this, under the routine lock. True when the cache file was written."""
    return defs.cache.save() if defs.cache is not None else False


# --- discovery ---------------------------------------------------------------------------------


def discover(directory: Path, prefix: str, *, skip: Path | None = None) -> list[Path]:
    """``<directory>/**/<prefix>*.yaml|.yml``, sorted by path; ``skip`` is not entered."""
    found: list[tuple[str, str]] = []  # (path relative to directory, full path): plain strings,
    top = str(directory)  # as Path arithmetic on 10,000 files is measurable
    for here, dirs, files in os.walk(directory):
        if skip is not None:
            dirs[:] = [d for d in dirs if Path(here, d) != skip]
        named = [d for d in dirs if d.startswith(prefix) and d.endswith((".yaml", ".yml"))]
        dirs[:] = [d for d in dirs if d not in named]  # reported, never entered
        sub = os.path.relpath(here, top).replace(os.sep, "/") if here != top else ""
        for name in [*files, *named]:
            if name.startswith(prefix) and name.endswith((".yaml", ".yml")):
                found.append((f"{sub}/{name}" if sub else name, os.path.join(here, name)))
    return [Path(path) for _, path in sorted(found)]


def file_id(path: Path) -> str:
    """The id a definition file must declare: its name without ``.yaml``/``.yml``."""
    return path.name.rsplit(".", 1)[0]


# --- loading -----------------------------------------------------------------------------------


def _load(paths: ProjectPaths, *, with_routines: bool) -> Definitions:
    from specdojo_routine.store import agentconfig  # it reads YAML with this module

    agents = agentconfig.load_agent_config(paths)
    fast = _FAST.available()
    cache = DefinitionCache(paths.routines_dir / ".cache") if fast else None
    job_paths = discover(paths.jobs_dir, "job-")
    jobs, invalid, job_problems = _load_jobs(
        paths, job_paths, cache, agents.roster if agents is not None else None)
    routines: list[Routine] = []
    problems = [*job_problems, *(agents.problems if agents is not None else ())]
    routine_paths: list[Path] = []
    if with_routines:
        routine_paths = discover(paths.routines_dir, "rtn-", skip=paths.routine_generated_dir)
        index = JobIndex(valid={j.id: j for j in jobs}, invalid=invalid,
                         where=paths.rel(paths.jobs_dir))
        routines, routine_problems = _load_routines(paths, routine_paths, index, cache)
        problems += routine_problems
    problems.sort(key=lambda p: (p.path, p.line, p.col))
    return Definitions(
        routines=tuple(routines), jobs=tuple(jobs), invalid_job_ids=invalid,
        problems=tuple(problems), routine_files=len(routine_paths), job_files=len(job_paths),
        cache=cache,
    )


def _load_jobs(
    paths: ProjectPaths, files: list[Path], cache: DefinitionCache | None,
    roster: Roster | None = None,
) -> tuple[list[JobDefinition], frozenset[str], list[Problem]]:
    jobs: dict[str, JobDefinition] = {}
    failed: set[str] = set()
    problems: list[Problem] = []
    rel_of = _relativiser(paths)
    for path in files:
        rel = rel_of(path)
        report, data, job, _ = _read_and_build(
            path, rel, "job", functools.partial(_build_job, file_id=file_id(path), roster=roster),
            cache=cache,
        )
        if job is not None and job.id in jobs:
            other = jobs[job.id].path
            report.error(_id_pos(path, rel, "job", data),
                         f'duplicate job id "{job.id}" (also in {other})')
            job = None
        if job is None:
            failed.add(file_id(path))
        else:
            jobs[job.id] = job
        problems += report.problems
    return list(jobs.values()), frozenset(failed - set(jobs)), problems


def _build_job(
    report: Report, node: Node, *, file_id: str, roster: Roster | None
) -> JobDefinition | None:
    job = build_job(report, node, file_id=file_id)
    if job is not None and roster is not None:  # SPEC §11.1: a Job names roster members
        check_job_nicknames(report, node, roster)
        job = None if report.failed else job
    return job


def _load_routines(
    paths: ProjectPaths, files: list[Path], index: JobIndex, cache: DefinitionCache | None
) -> tuple[list[Routine], list[Problem]]:
    routines: dict[str, Routine] = {}
    problems: list[Problem] = []
    rel_of = _relativiser(paths)
    for path in files:
        rel = rel_of(path)
        report, data, routine, key = _read_and_build(
            path, rel, "routine",
            functools.partial(build_routine, file_id=file_id(path), jobs=index), cache=cache,
        )
        if routine is not None:
            known = cache.digest(key) if cache is not None and key else None
            routine = attrs.evolve(routine, digest=known or digest(data))
            if cache is not None and key and known is None:
                cache.set_digest(key, routine.digest)
        if routine is not None and routine.id in routines:
            other = routines[routine.id].path
            report.error(_id_pos(path, rel, "routine", data),
                         f'duplicate routine id "{routine.id}" (also in {other})')
            routine = None
        if routine is not None:
            routines[routine.id] = routine
        problems += report.problems
    return list(routines.values()), problems


def _relativiser(paths: ProjectPaths) -> Callable[[Path], str]:
    """``paths.rel`` by string slicing where the path lies under the root (the usual case)."""
    top = str(paths.root).rstrip(os.sep) + os.sep

    def rel(path: Path) -> str:
        text = str(path)
        if text.startswith(top) and os.sep == "/" and "/../" not in text and "/./" not in text:
            return text[len(top):]
        return paths.rel(path)

    return rel


def _read_and_build(
    path: Path, rel: str, kind: str, build: Callable[[Report, Node], _T | None], *,
    cache: DefinitionCache | None,
) -> tuple[Report, Any, _T | None, str | None]:
    """Read and build one file: the fast path (or what it read before, :mod:`.defcache`) when
    it is sure and the rules find nothing to report (not even a warning), else the located
    slow path (:mod:`.fastyaml`). The last item is the cache key of fast-path data."""
    report = Report(rel)
    source = _read_text(path, report)
    if source is None:
        return report, None, None, None
    if cache is not None:
        key = cache.key(source)
        cached = cache.get(key)
        data = cached if cached is not None else _FAST.load(source)
        if data is not None:
            quick = Report(rel)  # no source lines: a problem sends the file down the slow path
            built = build(quick, Node(value=data))
            if built is not None and not quick.problems:
                if cached is None:
                    cache.put(key, data, source)
                return quick, data, built, key
    report, data = _parse(source, rel, kind)
    built = build(report, Node(value=data)) if data is not None else None
    return report, data, built, None


def _id_pos(path: Path, rel: str, kind: str, data: Any) -> tuple[int, int]:
    if not hasattr(data, "lc"):  # fast-path data has no positions: read the file slowly
        data = read_definition(path, rel, kind)[1]
    node = Node(value=data).get("id")
    return node.pos if node is not None else (1, 1)


def digest(data: Any) -> str:
    """sha256 hex of the canonical JSON (sorted keys, compact) of a definition's plain data."""
    plain = validation.plain(data)
    try:  # orjson writes the same bytes as json.dumps below for data without floats
        canonical = orjson.dumps(plain, option=orjson.OPT_SORT_KEYS) if not _floats(plain) else b""
    except TypeError:  # an integer beyond 64 bits
        canonical = b""
    if not canonical:
        canonical = json.dumps(
            plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False,
        ).encode("utf-8")
    return hashlib.sha256(canonical).hexdigest()


def _floats(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_floats(v) for v in value.values())
    if isinstance(value, list):
        return any(_floats(v) for v in value)
    return isinstance(value, float)


# --- safe YAML ---------------------------------------------------------------------------------


class _CoreResolver(VersionedResolver):
    """YAML 1.2 implicit typing without timestamps, whatever a document declares."""

    @property
    def versioned_resolver(self) -> Any:
        version = (1, 2)
        if version not in self._version_implicit_resolver:
            for versions, tag, regexp, first in implicit_resolvers:
                if version in versions and tag not in _NOT_CORE_IMPLICIT:
                    self.add_version_implicit_resolver(version, tag, regexp, first)
        return self._version_implicit_resolver[version]


class _CoreConstructor(RoundTripConstructor):
    """Round-trip loading, but an explicit ``!!str`` gives a plain string."""

    def construct_yaml_str(self, node: Any) -> Any:
        return self.construct_scalar(node)


_CoreConstructor.add_constructor("tag:yaml.org,2002:str", _CoreConstructor.construct_yaml_str)


_RESOLVER = _CoreResolver()
_FAST = FastReader(_RESOLVER, MAX_DEPTH)
_TYPED_SCALAR_TAGS = {  # explicit tag -> the implicit types its value may have
    f"tag:yaml.org,2002:{tag}": frozenset(f"tag:yaml.org,2002:{t}" for t in kinds)
    for tag, kinds in (("int", ["int"]), ("float", ["float", "int"]), ("bool", ["bool"]),
                       ("null", ["null"]))
}


def _yaml() -> YAML:
    yaml = YAML(typ="rt", pure=True)
    yaml.Resolver = _CoreResolver
    yaml.Constructor = _CoreConstructor
    return yaml


def read_definition(path: Path, rel: str, kind: str) -> tuple[Report, Any]:
    """Read one definition file safely: ``(report, mapping)``; mapping is None after problems."""
    report = Report(rel)
    source = _read_text(path, report)
    if source is None:
        return report, None
    return _parse(source, rel, kind)


def _parse(source: str, rel: str, kind: str) -> tuple[Report, Any]:
    """The located slow path: scan the events for limits, then a round-trip load."""
    report = Report(rel, source)
    if not _scan(source, report):
        return report, None
    try:
        with warnings.catch_warnings():  # ruamel warns (on stderr) about re-defined anchors,
            warnings.simplefilter("ignore")  # which YAML 1.2 allows: not the user's problem
            data = _yaml().load(source)
    except MarkedYAMLError as exc:
        report.error(_mark_pos(exc), _yaml_message(exc))
        return report, None
    except Exception as exc:  # a constructor surprise is a problem of the file, not a crash
        report.error((1, 1), f"YAML parse error: {type(exc).__name__}: {exc}")
        return report, None
    if not isinstance(data, dict):
        found = "the file is empty" if data is None else f"found {got(data)}"
        report.error((1, 1), f"{kind} file must be a YAML mapping ({found})")
        return report, None
    return report, data


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def _kind(mode: int) -> str | None:
    """What a non-regular file is (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a file")


def _read_text(path: Path, report: Report) -> str | None:
    """The file's text; only a regular file is read (a FIFO, socket, device or directory
    named like a definition is reported; it is opened non-blocking and never read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            kind = _kind(os.fstat(fd).st_mode)
            raw = b"" if kind else handle.read(MAX_FILE_BYTES + 1)
    except IsADirectoryError:
        kind = "a directory"
    except OSError as exc:
        report.error((1, 1), f"cannot read the file ({exc.strerror or exc})")
        return None
    if kind is not None:
        report.error((1, 1), f"not a regular file ({kind}); a definition must be a regular "
                     "YAML file - rename or remove it")
        return None
    if len(raw) > MAX_FILE_BYTES:
        report.error((1, 1), f"file is larger than {MAX_FILE_BYTES} bytes; a definition is a "
                     "small YAML mapping - is this the right file?")
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
        report.error((line, col), f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x}); "
                     "save it as UTF-8")
        return None


@attrs.define
class _Frame:
    mapping: bool
    anchor: str | None
    start: int  # values counted before this collection
    children: int = 0
    keys: set[str] = attrs.field(factory=set)


class _Fatal(Exception):
    """A problem after which scanning stops and the file is not loaded."""

    def __init__(self, pos: tuple[int, int], message: str) -> None:
        super().__init__(message)
        self.pos, self.message = pos, message


@attrs.define
class _Scan:
    """Checks YAML events before anything is built: tags, duplicate keys, nesting depth, alias
    expansion and recursion, the YAML version."""

    report: Report
    stack: list[_Frame] = attrs.field(factory=list)
    sizes: dict[str, int] = attrs.field(factory=dict)  # anchor -> values it expands to
    nodes: int = 0  # values so far, aliases expanded
    blocking: bool = False  # a problem that must stop the load was found

    def event(self, event: Any) -> None:
        pos = _pos(event)
        if isinstance(event, DocumentStartEvent) and event.version not in (None, (1, 2)):
            # not blocking: the file is read as YAML 1.2 anyway, so go on finding problems
            self.report.error(pos, "only YAML 1.2 is supported; remove the %YAML directive")
        if isinstance(event, NodeEvent):
            self._check_tag(event, pos)
            self._check_key(event, pos)
            self._count(event, pos)
        if isinstance(event, CollectionEndEvent) and self.stack:
            frame = self.stack.pop()
            if frame.anchor is not None:
                self.sizes[frame.anchor] = self.nodes - frame.start
        if self.nodes > MAX_NODES:
            raise _Fatal(pos, f"the document expands to more than {MAX_NODES} values (an "
                         "anchor/alias bomb?); a definition is small")

    def _count(self, event: Any, pos: tuple[int, int]) -> None:
        anchor = None if event.anchor is None else str(event.anchor)
        if isinstance(event, AliasEvent):
            if any(frame.anchor == anchor for frame in self.stack):
                raise _Fatal(pos, f"alias *{anchor} is inside its own anchor (recursive data "
                             "is not allowed)")
            self.nodes += self.sizes.get(str(anchor), 1)
            return
        self.nodes += 1
        if isinstance(event, ScalarEvent):
            if anchor is not None:
                self.sizes[anchor] = 1
            return
        self.stack.append(_Frame(isinstance(event, MappingStartEvent), anchor, self.nodes - 1))
        if len(self.stack) > MAX_DEPTH:
            raise _Fatal(pos, f"data is nested deeper than {MAX_DEPTH} levels")

    def _check_tag(self, event: Any, pos: tuple[int, int]) -> None:
        tag = getattr(event, "tag", None)
        if tag is None:
            return
        shown = str(tag).replace("tag:yaml.org,2002:", "!!")
        if str(tag) not in _CORE_TAGS:
            self.report.error(pos, f'YAML tag "{shown}" is not allowed; definitions are plain '
                              "data (strings, numbers, booleans, null, lists, mappings)")
            self.blocking = True
        elif isinstance(event, ScalarEvent) and str(tag) in _TYPED_SCALAR_TAGS:
            plain = str(_RESOLVER.resolve(ScalarNode, event.value, (True, False)))
            if plain not in _TYPED_SCALAR_TAGS[str(tag)]:
                self.report.error(pos, f'"{event.value}" is not a valid {shown} value')
                self.blocking = True

    def _check_key(self, event: Any, pos: tuple[int, int]) -> None:
        if not self.stack:
            return
        frame = self.stack[-1]
        is_key = frame.mapping and frame.children % 2 == 0
        frame.children += 1
        if is_key and isinstance(event, ScalarEvent):
            key = f"{event.style is None}:{event.value}"  # `a` and `"a"`: ruamel's check
            if key in frame.keys:
                self.report.error(pos, f'duplicate key "{event.value}" (each key may appear '
                                  "once in a mapping)")
                self.blocking = True
            frame.keys.add(key)


def _scan(source: str, report: Report) -> bool:
    """Report what the event stream shows; False when the file must not be loaded."""
    scan = _Scan(report)
    try:
        for event in YAML(typ="safe", pure=True).parse(source):  # no comment tracking
            scan.event(event)
    except _Fatal as exc:
        report.error(exc.pos, exc.message)
        return False
    except MarkedYAMLError as exc:
        report.error(_mark_pos(exc), _yaml_message(exc))
        return False
    except ReaderError as exc:
        report.error(_offset_pos(source, exc.position), "YAML parse error: unacceptable "
                     f"character #x{exc.character:04x} ({exc.reason})")
        return False
    except YAMLError as exc:
        report.error((1, 1), f"YAML parse error: {exc}")
        return False
    return not scan.blocking


def _pos(event: Any) -> tuple[int, int]:
    mark = event.start_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def _mark_pos(exc: MarkedYAMLError) -> tuple[int, int]:
    mark = exc.problem_mark or exc.context_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def _offset_pos(source: str, offset: int) -> tuple[int, int]:
    before = source[:offset]
    return (before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1)


def _yaml_message(exc: MarkedYAMLError) -> str:
    problem = str(exc.problem or exc.context or "invalid YAML").strip()
    if problem.startswith("found duplicate key"):
        key = problem.split('"')[1] if problem.count('"') >= 2 else "?"
        return f'duplicate key "{key}" (each key may appear once in a mapping)'
    hint = " (indent with spaces, not tabs)" if "\\t" in problem else ""
    context = f"{exc.context}, " if exc.context and exc.problem else ""
    return f"YAML parse error: {context}{problem}{hint}"
