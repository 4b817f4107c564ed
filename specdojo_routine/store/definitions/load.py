"""Definition files (SPEC §2, §3, §7.1): discovery, loading, validation (E-01).

The rules themselves are in :mod:`specdojo_routine.core.routine_rules` and
:mod:`specdojo_routine.core.job_rules`; this module
finds the files, reads them (fast path :mod:`.fastyaml` and its cache :mod:`.defcache` where
nothing can differ, else the located safe-YAML path :mod:`.safeyaml`), applies the rules
(Jobs first: routines name Jobs) and the cross-file ones (duplicate ids).

The YAML readers (:mod:`.fastyaml`, :mod:`.safeyaml`, :mod:`.yamlcore`: ruamel.yaml and its
C parser) are imported where a file is first parsed, and the rules that build routines and
Jobs (:mod:`~specdojo_routine.core.routine_rules`, :mod:`~specdojo_routine.core.job_rules`,
the agent configuration) where a definition is first built: a load the cache serves whole
parses and builds nothing, and importing them costs more than such a load.

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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import orjson

from specdojo_routine.core import validation
from specdojo_routine.core.errors import Problem
from specdojo_routine.core.model import Routine
from specdojo_routine.core.validation import Node, Report
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions.defcache import DefinitionCache
from specdojo_routine.store.definitions.deffile import (  # the limits: re-exported
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    OUT_OF_MEMORY,
    PURE_YAML,
    read_text,
)

if TYPE_CHECKING:
    from specdojo_routine.core.jobmodel import JobDefinition
    from specdojo_routine.core.routine_rules import JobIndex
    from specdojo_routine.store.definitions import fastyaml
    from specdojo_routine.store.definitions.agentconfig import AgentConfig

_T = TypeVar("_T")
_Built = tuple[list[Problem], "Routine | None"]  # what one routine file gave


@functools.cache
def _fast() -> fastyaml.FastReader:
    """The fast path's reader, typing scalars with the slow path's own resolver."""
    from specdojo_routine.store.definitions import fastyaml, yamlcore  # see the docstring

    return fastyaml.FastReader(yamlcore.RESOLVER, MAX_DEPTH)


def read_definition(path: Path | str, rel: str, kind: str) -> tuple[Report, Any]:
    """Read one definition file by the located slow path (:mod:`.safeyaml`): ``(report,
    mapping)``; mapping is None after problems."""
    from specdojo_routine.store.definitions import safeyaml  # see the module docstring

    return safeyaml.read_definition(path, rel, kind)


def _parse(source: str, rel: str, kind: str) -> tuple[Report, Any]:
    from specdojo_routine.store.definitions import safeyaml

    return safeyaml._parse(source, rel, kind)


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
    return [Path(path) for path in _discover(directory, prefix, skip=skip)]


def _discover(directory: Path, prefix: str, *, skip: Path | None = None) -> list[str]:
    """:func:`discover`, as plain strings (Path objects for 10,000 files are measurable)."""
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
    return [path for _, path in sorted(found)]


def file_id(path: Path | str) -> str:
    """The id a definition file must declare: its name without ``.yaml``/``.yml``."""
    return os.path.basename(path).rsplit(".", 1)[0]


# --- loading -----------------------------------------------------------------------------------


def _load(paths: ProjectPaths, *, with_routines: bool) -> Definitions:
    agents = None
    if paths.members_path is not None:  # else there is no agent configuration (SPEC §11.1)
        from specdojo_routine.store.definitions import agentconfig  # see the module docstring

        agents = agentconfig.load_agent_config(paths)
    # the cache holds what the fast path read; without the fast path (forced off here, or no
    # C parser: fastyaml.FastReader.load then reads nothing) it gives and takes nothing
    fast = os.environ.get(PURE_YAML) != "1"
    cache = DefinitionCache(paths.routine_cache_dir) if fast else None
    job_paths = discover(paths.jobs_dir, "job-")
    jobs, invalid, job_problems = _load_jobs(
        paths, job_paths, cache, agents)
    routines: list[Routine] = []
    problems = [*job_problems, *(agents.problems if agents is not None else ())]
    routine_paths: list[str] = []
    if with_routines:
        routine_paths = _discover(paths.routines_dir, "rtn-", skip=paths.routine_generated_dir)
        valid = {j.id: j for j in jobs}

        @functools.cache
        def index() -> JobIndex:  # what a routine's job: may name, for a routine to build
            from specdojo_routine.core.routine_rules import JobIndex

            return JobIndex(valid=valid, invalid=invalid, where=paths.rel(paths.jobs_dir))

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
    agents: AgentConfig | None = None,
) -> tuple[list[JobDefinition], frozenset[str], list[Problem]]:
    jobs: dict[str, JobDefinition] = {}
    failed: set[str] = set()
    problems: list[Problem] = []
    rel_of = _relativiser(paths)
    for path in files:
        rel = rel_of(path)
        report, data, job, _ = _read_and_build(
            path, rel, "job", functools.partial(_build_job, file_id=file_id(path), agents=agents),
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
    report: Report, node: Node, key: str | None, *, file_id: str, agents: AgentConfig | None
) -> JobDefinition | None:
    from specdojo_routine.core.job_rules import build_job  # see the module docstring

    job = build_job(report, node, file_id=file_id)
    if job is not None and agents is not None:  # SPEC §11.1: a Job names roster members
        from specdojo_routine.core.agent_checks import check_job_nicknames, check_job_picks

        check_job_nicknames(report, node, agents.roster, agents.defaults)
        check_job_picks(report, node, agents.roster, agents.defaults)
        job = None if report.failed else job
    return job


def _load_routines(
    paths: ProjectPaths, files: list[str], index: Callable[[], JobIndex],
    cache: DefinitionCache | None,
) -> tuple[list[Routine], list[Problem]]:
    rel_of = _relativiser(paths)
    built = [_routine_file(path, rel_of(path), index, cache) for path in files]
    routines: dict[str, Routine] = {}
    places: dict[str, list[str]] = {}  # routine id -> every file that defines it
    problems: list[Problem] = []
    for path, (found, routine) in zip(files, built, strict=True):
        problems += found
        if routine is not None:
            places.setdefault(routine.id, []).append(str(path))
            routines.setdefault(routine.id, routine)
    for routine_id, where in places.items():
        if len(where) < 2:
            continue
        # Seed 000 T-01: a duplicated id runs from neither file (the first is not "right"),
        # and every file that defines it is reported.
        del routines[routine_id]
        rels = [rel_of(p) for p in where]
        for path, rel in zip(where, rels, strict=True):
            duplicate = Report(rel)
            others = ", ".join(r for r in rels if r != rel)
            duplicate.error(_id_pos(path, rel, "routine", None),
                            f'duplicate routine id "{routine_id}" (also in {others}); it runs '
                            "from neither file until one is removed or renamed")
            problems += duplicate.problems
    return list(routines.values()), problems


def _routine_file(
    path: str, rel: str, jobs: Callable[[], JobIndex], cache: DefinitionCache | None
) -> _Built:
    """One routine file: the routine the cache kept of its text, else read and built (and
    then remembered in the cache)."""
    report = Report(rel)
    source = read_text(path, report)
    if source is None:
        return report.problems, None
    routine_id = file_id(path)
    key = None
    if cache is not None:
        key = cache.key(source)
        if (kept := cache.routine(key, rel=rel, routine_id=routine_id)) is not None:
            return [], kept  # an unchanged file: nothing to parse, check or report
    build = functools.partial(_build_routine, routine_id=routine_id, jobs=jobs, cache=cache)
    report, _, routine, key = _build(source, rel, "routine", build, cache=cache, key=key)
    if routine is not None and cache is not None and key and cache.digest(key) is None:
        cache.put_routine(key, routine)  # built now, not taken whole from the cache
    return report.problems, routine


def _build_routine(
    report: Report, node: Node, key: str | None, *, routine_id: str,
    jobs: Callable[[], JobIndex],
    cache: DefinitionCache | None,
) -> Routine | None:
    def digest_of() -> str:  # what the cache knows, or the digest of what was read
        if cache is None or key is None:
            return digest(node.value)
        return cache.digest(key) or _digest(node.value, fresh=not cache.holds(key))

    from specdojo_routine.core.routine_rules import build_routine  # see the module docstring

    return build_routine(report, node, file_id=routine_id, jobs=jobs(), digest=digest_of)


def _relativiser(paths: ProjectPaths) -> Callable[[Path | str], str]:
    """``paths.rel`` by string slicing where the path lies under the root (the usual case)."""
    top = str(paths.root).rstrip(os.sep) + os.sep

    def rel(path: Path | str) -> str:
        text = str(path)
        if text.startswith(top) and os.sep == "/" and "/../" not in text and "/./" not in text:
            return text[len(top):]
        return paths.rel(Path(path))

    return rel


def _read_and_build(
    path: Path | str, rel: str, kind: str,
    build: Callable[[Report, Node, str | None], _T | None], *,
    cache: DefinitionCache | None,
) -> tuple[Report, Any, _T | None, str | None]:
    """Read and build one file (:func:`_build`)."""
    report = Report(rel)
    source = read_text(path, report)
    if source is None:
        return report, None, None, None
    return _build(source, rel, kind, build, cache=cache,
                  key=cache.key(source) if cache is not None else None)


def _build(
    source: str, rel: str, kind: str, build: Callable[[Report, Node, str | None], _T | None],
    *, cache: DefinitionCache | None, key: str | None,
) -> tuple[Report, Any, _T | None, str | None]:
    """Build one file's text (:func:`_build_text`); a file that needs more memory than there is
    is that file's problem, not the end of the load: the other files are still read."""
    try:
        return _build_text(source, rel, kind, build, cache=cache, key=key)
    except MemoryError:
        report = Report(rel)
        report.error((1, 1), OUT_OF_MEMORY)
        return report, None, None, None


def _build_text(
    source: str, rel: str, kind: str, build: Callable[[Report, Node, str | None], _T | None],
    *, cache: DefinitionCache | None, key: str | None,
) -> tuple[Report, Any, _T | None, str | None]:
    """Build one file's text: from what the cache (:mod:`.defcache`) kept of what the fast
    path read (``key``: the text's cache key), or from the fast path, when it is sure and the
    rules find nothing to report (not even a warning); else from the located slow path
    (:mod:`.safeyaml`). The last item is the cache key of fast-path data."""
    if cache is not None and key is not None:
        cached = cache.get(key)
        data = cached if cached is not None else _fast().load(source)
        if data is not None:
            quick = Report(rel)  # no source lines: a problem sends the file down the slow path
            built = build(quick, Node(data), key)
            if built is not None and not quick.problems:
                if cached is None:
                    cache.put(key, data, source)
                return quick, data, built, key
    report, data = _parse(source, rel, kind)
    built = build(report, Node(data), None) if data is not None else None
    return report, data, built, None


def _id_pos(path: Path | str, rel: str, kind: str, data: Any) -> tuple[int, int]:
    if not hasattr(data, "lc"):  # fast-path data has no positions: read the file slowly
        data = read_definition(path, rel, kind)[1]
    node = Node(value=data).get("id")
    return node.pos if node is not None else (1, 1)


def _digest(data: Any, *, fresh: bool) -> str:
    """:func:`digest`, without the copy into plain data for data that is plain already: what
    the fast path read (``fresh``: a dict of str, int within 64 bits, bool, None, lists, dicts
    - never a float), or what the cache holds of it (checked for floats)."""
    if type(data) is dict and (fresh or not _floats(data)):
        try:
            return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()
        except TypeError:  # not plain after all (an integer beyond 64 bits)
            pass
    return digest(data)


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


__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "Definitions",
    "digest",
    "discover",
    "file_id",
    "load_definitions",
    "load_jobs",
    "read_definition",
    "remember",
]
