"""Project discovery (SPEC §2): the root, the project and every path derived from them."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path

import attrs
import orjson

from specdojo_routine.core.errors import ConfigError, remedy
from specdojo_routine.core.retention import Retention, check_retention

CONFIG_RELPATH = Path(".specdojo") / "specdojo.config.json"

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def file_kind(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file ("a FIFO", ...); None when it
    is one."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a file")


class NotRegularFile(OSError):
    """A path that must name a regular file names something else (``kind``: "a FIFO", ...)."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(f"{path}: not a regular file ({kind})")
        self.path, self.kind = path, kind


#: The folder of the private, machine-local files that only spare work (SPEC §5): ``R/.cache``
#: and ``E/.cache``.
CACHE_DIR = ".cache"


class LinkedCache(OSError):
    """A private cache file would be reached through a symbolic link (its ``.cache`` folder,
    or a folder under it, is one): what the link names is not ours, so it is neither read nor
    written - the cache is a shortcut, and a command goes on without it."""

    def __init__(self, link: Path) -> None:
        super().__init__(f"{link}: a symbolic link where a private cache folder belongs")
        self.link = link


def check_private(path: Path) -> None:
    """Raise :class:`LinkedCache` when the private file ``path`` (under a ``.cache`` folder)
    would be reached through a symbolic link: a link at the ``.cache`` folder or at one of
    its folders on the way to ``path``. A folder not there yet is fine (it is created as a
    real one); the file itself is not followed either (:func:`read_private`,
    :func:`.ledger.stamps.replace`, ``follow=False``)."""
    folders = list(path.parents)
    top = next((i for i, folder in enumerate(folders) if folder.name == CACHE_DIR), None)
    if top is None:
        return  # not under a cache folder: the folders above it are the project's own choice
    for folder in folders[: top + 1]:
        try:
            mode = os.lstat(folder).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            raise LinkedCache(folder)


def read_private(path: Path) -> bytes:
    """The bytes of the private cache file ``path``: a regular file, reached through no
    symbolic link (:func:`check_private`, :func:`read_regular` with ``follow=False``)."""
    check_private(path)
    return read_regular(path, follow=False)


def read_regular(path: Path, *, follow: bool = True) -> bytes:
    """The bytes of ``path``, which must be a regular file (:class:`NotRegularFile`).

    The file is opened non-blocking and checked with ``fstat`` before anything is read: a
    FIFO, socket or device left at a path we read would otherwise block the command forever
    (a FIFO with no writer) or never end. ``follow=False``: a symbolic link at ``path`` is
    not followed (``O_NOFOLLOW``) but refused like any other non-regular file - for a private
    file of ours, which a link could point anywhere. A directory (which ``open`` would refuse
    naming a descriptor, not the path) and a link that loops are refused the same way. Other
    errors (``FileNotFoundError``, ``PermissionError`` ...) propagate.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise NotRegularFile(path, "a symbolic link loop" if follow
                                 else "a symbolic link") from None
        if exc.errno == errno.ENXIO and stat.S_ISSOCK(os.lstat(path).st_mode):
            raise NotRegularFile(path, "a socket") from None
        raise
    try:
        kind = file_kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise NotRegularFile(path, kind)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        return handle.read()


@attrs.frozen(kw_only=True)
class ProjectPaths:
    """Everything on disk that one project's commands touch."""

    root: Path
    project_id: str
    routines_dir: Path
    jobs_dir: Path
    execution_dir: Path
    # agents and review (SPEC §11.4); None/default when the project config does not name them
    members_path: Path | None = None
    exec_defaults_path: Path | None = None
    worktree_base: Path | None = None
    #: what ``prune`` keeps by default and whether ``run --due`` prunes (SPEC §15)
    retention: Retention = attrs.field(factory=Retention)

    @property
    def exec_defaults(self) -> Path:
        """``run.exec_defaults``, default ``.specdojo/exec-defaults.yaml`` (root-relative)."""
        return self.exec_defaults_path or self.root / ".specdojo" / "exec-defaults.yaml"

    @property
    def worktrees(self) -> Path:
        """``run.worktree_base``, default ``../worktrees`` relative to the root."""
        return self.worktree_base or (self.root / ".." / "worktrees").resolve()

    # routine side
    @property
    def routine_generated_dir(self) -> Path:
        return self.routines_dir / "generated"

    @property
    def routine_ledger(self) -> Path:
        return self.routine_generated_dir / "routine-runs.jsonl"

    @property
    def routine_state(self) -> Path:
        return self.routine_generated_dir / "routine-state.json"

    @property
    def routine_locks_dir(self) -> Path:
        return self.routines_dir / ".locks"

    @property
    def routine_cache_dir(self) -> Path:
        """``R/.cache``: machine-local files that only spare work; deleting them is safe."""
        return self.routines_dir / CACHE_DIR

    @property
    def routine_snapshot(self) -> Path:
        """What proved ``routine-state.json`` against this machine's ledger file (SPEC §5)."""
        return self.routine_cache_dir / "routine-state.snapshot.json"

    # job side
    @property
    def runs_dir(self) -> Path:
        return self.execution_dir / "jobs" / "runs"

    @property
    def job_state(self) -> Path:
        return self.execution_dir / "jobs" / "generated" / "job-state.json"

    @property
    def exec_dir(self) -> Path:
        return self.execution_dir / "exec"

    @property
    def evidence_dir(self) -> Path:
        return self.exec_dir / "evidence"

    @property
    def exec_locks_dir(self) -> Path:
        return self.exec_dir / ".locks"

    @property
    def plans_dir(self) -> Path:
        return self.exec_dir / "plans"

    @property
    def results_dir(self) -> Path:
        return self.exec_dir / "results"

    def run_ledger(self, run_id: str) -> Path:
        return self.runs_dir / f"{run_id}.jsonl"

    def run_view(self, run_id: str) -> Path:
        return self.runs_dir / f"{run_id}.json"

    @property
    def exec_cache_dir(self) -> Path:
        """``E/.cache``: machine-local files that only spare work; deleting them is safe."""
        return self.execution_dir / CACHE_DIR

    @property
    def job_state_snapshot(self) -> Path:
        """What proves ``job-state.json`` is the file this machine last published (SPEC §5)."""
        return self.exec_cache_dir / "job-state.snapshot.json"

    def rel(self, path: Path) -> str:
        """``path`` relative to the root in POSIX form (absolute if outside the root)."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()


def find_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``.specdojo/specdojo.config.json``."""
    here = start.resolve()
    for candidate in (here, *here.parents):
        config = candidate / CONFIG_RELPATH
        if config.exists() and not config.is_dir():  # a FIFO here is refused, not walked past
            return candidate
    return None


def _load_config(root: Path) -> dict[str, object]:
    path = root / CONFIG_RELPATH
    try:
        data = orjson.loads(read_regular(path))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no SpecDojo config here; pass the --root of a project, or "
                          f"create one here with `init --root {root}`") from None
    except NotRegularFile as exc:
        raise ConfigError(f"{path}: not a regular file ({exc.kind}); the SpecDojo config must "
                          "be a regular JSON file - remove it and create the config") from None
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{path}: invalid JSON ({exc}); fix the file") from None
    except OSError as exc:
        not_a_folder = file_in_the_way(root)
        if not_a_folder is not None:
            raise ConfigError(f"--root {root} {is_a_file(root, not_a_folder)}; pass the "
                              "project's directory, the one holding "
                              f"{CONFIG_RELPATH.as_posix()}") from None
        raise ConfigError(f"{path}: cannot read ({exc.strerror}; {remedy(exc)})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config must be a JSON object")
    return data


def file_in_the_way(folder: Path) -> Path | None:
    """The first of ``folder`` and its parents that exists, when it is not a directory: a
    ``--root`` that names a file (or a path through one) cannot be a project's root."""
    for place in (folder, *folder.parents):
        if place.exists():
            return None if place.is_dir() else place
    return None


def is_a_file(folder: Path, file: Path) -> str:
    """What :func:`file_in_the_way` found, said of ``folder``."""
    return ("is a file, not a directory" if file == folder else
            f"goes through {file}, which is a file, not a directory")


def _select_project(
    projects: Mapping[str, object], wanted: str | None, source: str, current: object,
    where: Path,
) -> str:
    """``wanted`` (from ``source``), else ``current_project``, else the first project. A
    choice that names no configured project is an error, never a silent fallback to another
    project's routines."""
    if not wanted and isinstance(current, str) and current.strip():
        wanted, source = current.strip(), '"current_project"'
    if wanted:
        if wanted not in projects:
            known = ", ".join(sorted(projects)) or "none"
            raise ConfigError(
                f'{where}: unknown project "{wanted}" (known: {known}), named by {source}')
        return wanted
    if not projects:
        raise ConfigError(f"{where}: no projects configured under \"projects\"")
    return next(iter(projects))


def resolve_project(
    root: Path | None = None,
    project: str | None = None,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> ProjectPaths:
    """Resolve root and project: ``--root`` or a walk up from ``cwd``; then ``--project``,
    ``SPECDOJO_PROJECT``, ``current_project``, the first project."""
    env = os.environ if env is None else env
    root = _root(root, cwd)
    config = _load_config(root)
    where = root / CONFIG_RELPATH
    projects = config.get("projects")
    if not isinstance(projects, dict):
        raise ConfigError(f'{where}: "projects" must be an object of project ids')
    wanted, source = (project, "--project") if project else (
        env.get("SPECDOJO_PROJECT") or None, "$SPECDOJO_PROJECT")
    project_id = _select_project(projects, wanted, source, config.get("current_project"), where)
    if project_id.startswith("-"):  # passed on as `--project ID`, it would read as an option
        raise ConfigError(f'{where}: project id "{project_id}" must not start with "-"; '
                          "rename the project")
    entry = projects[project_id]
    if not isinstance(entry, dict):
        raise ConfigError(f'{where}: project "{project_id}" must be an object')
    dirs = _project_dirs(root, entry, where, project_id)
    extra = _agent_paths(root, entry, where, project_id)
    return ProjectPaths(
        retention=_retention(entry, where, project_id),
        root=root,
        project_id=project_id,
        routines_dir=dirs["routines_path"],
        jobs_dir=dirs["jobs_path"],
        execution_dir=dirs["execution_path"],
        **extra,
    )


def _root(root: Path | None, cwd: Path | None) -> Path:
    """The project root, resolved: ``--root``, or the nearest directory holding the config
    from ``cwd`` (the working directory) up."""
    if root is None:
        start = cwd if cwd is not None else Path.cwd()
        found = find_root(start)
        if found is None:
            raise ConfigError(
                f"no {CONFIG_RELPATH.as_posix()} found in {start} or any parent; "
                "run inside a SpecDojo project, pass --root DIR, or create one here with `init`"
            )
        root = found
    return root.resolve()


def _project_dirs(
    root: Path, entry: Mapping[str, object], where: Path, project_id: str
) -> dict[str, Path]:
    """The project's three required folders (``routines_path``, ``jobs_path``,
    ``execution_path``), each a non-empty path relative to ``root``."""
    dirs: dict[str, Path] = {}
    for key in ("routines_path", "jobs_path", "execution_path"):
        value = entry.get(key)
        if not isinstance(value, str) or not value:
            raise ConfigError(f'{where}: project "{project_id}" needs "{key}" (a path)')
        _refuse_nul(value, where, project_id, key)
        dirs[key] = root / value
        if not _folder_or_absent(dirs[key]):
            raise ConfigError(f'{where}: project "{project_id}" "{key}" names {value}, which is '
                              "not a folder; point it at a folder")
    return dirs


def _folder_or_absent(path: Path) -> bool:
    """Whether ``path`` is a directory (through a link) or nothing yet."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except FileNotFoundError:
        return True
    except NotADirectoryError:  # a file above it
        return False
    except OSError:  # unreadable above it: the command that uses it says so
        return True


def _refuse_nul(value: str, where: Path, project_id: str, key: str) -> None:
    """Refuse a configured path holding a NUL character (JSON's ``\\u0000``): no file can
    be named by it, and the operating system refuses it wherever the path is first used."""
    if "\0" in value:
        raise ConfigError(f'{where}: project "{project_id}" "{key}" holds a NUL character '
                          "(\\u0000); write the path without it")


#: The roster a project has when its config names no ``members_path`` (seed 002), if present.
DEFAULT_MEMBERS = "agent-members.yaml"


def _agent_paths(
    root: Path, entry: Mapping[str, object], where: Path, project_id: str
) -> dict[str, Path | None]:
    """``members_path`` and the ``run`` block's ``exec_defaults`` / ``worktree_base``."""
    run = entry.get("run", {})
    if not isinstance(run, dict):
        raise ConfigError(f'{where}: project "{project_id}" "run" must be an object')
    found: dict[str, Path | None] = {}
    for name, key, source in (("members_path", "members_path", entry),
                              ("exec_defaults_path", "exec_defaults", run),
                              ("worktree_base", "worktree_base", run)):
        value = source.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ConfigError(f'{where}: project "{project_id}" "{key}" must be a path')
        if isinstance(value, str):
            _refuse_nul(value, where, project_id, key)
        found[name] = _resolved(root, value, where, project_id, key) \
            if isinstance(value, str) else None
    default = root / ".specdojo" / DEFAULT_MEMBERS
    if found["members_path"] is None and default.is_file():  # seed 002's roster (SPEC §13)
        found["members_path"] = default.resolve()
    return found


def _resolved(root: Path, value: str, where: Path, project_id: str, key: str) -> Path:
    """``root / value`` resolved; a symbolic link loop on the way is a configuration error
    that says so (Python raises a RuntimeError for it, an OSError from 3.13), not an internal
    error."""
    try:
        return (root / value).resolve()
    except (RuntimeError, OSError):
        raise ConfigError(f'{where}: project "{project_id}" "{key}" "{value}" is a symbolic '
                          "link loop; point it at a real file or folder") from None


def _retention(entry: Mapping[str, object], where: Path, project_id: str) -> Retention:
    """The project's ``retention`` block (SPEC §15); omitted keys keep their defaults and,
    as everywhere in the config, unknown keys are ignored."""
    block = entry.get("retention", {})
    if not isinstance(block, dict):
        raise ConfigError(f'{where}: project "{project_id}" "retention" must be an object '
                          "with keep_days, keep_runs and auto")
    base = Retention()
    days = block.get("keep_days", base.keep_days)
    runs = block.get("keep_runs", base.keep_runs)
    auto = block.get("auto", base.auto)
    problems = check_retention(days, runs, auto)
    if problems:
        raise ConfigError(f'{where}: project "{project_id}" ' + "; ".join(problems))
    return Retention(keep_days=days, keep_runs=runs, auto=auto)
