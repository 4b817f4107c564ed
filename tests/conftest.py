"""Shared fixtures: temporary SpecDojo projects and their CLI runner (:mod:`tests.clirun`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from tests.clirun import run_cli

if TYPE_CHECKING:
    from specdojo_routine.store.config import ProjectPaths

REPO = Path(__file__).resolve().parent.parent


def cli_environ() -> dict[str, str]:
    """This process's environment for a CLI subprocess: without ``SPECDOJO_PROJECT``, so that
    the project is the one the test names."""
    return {k: v for k, v in os.environ.items() if k != "SPECDOJO_PROJECT"}


def console_script() -> list[str]:
    """The ``specdojo-routine`` script as pip writes it for the entry point pyproject.toml
    names (``module:function``), run by this interpreter."""
    import tomllib

    target = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"][
        "specdojo-routine"]
    module, function = target.split(":")
    return [sys.executable, "-c", f"import sys; from {module} import {function}; "
            f"sys.argv[0] = 'specdojo-routine'; sys.exit({function}())"]
FAKE_CLI = REPO / "tests" / "support" / "fake-specdojo"
# What running a project writes (git-ignored under fixtures/): never copied into a test.
RUNTIME_STATE = frozenset({"generated", ".locks", ".cache", "execution"})
#: The environment the test run started in: the benchmarks measure under it (the tests' own
#: subprocesses get a private bytecode cache, :func:`_bytecode_cache`).
ENVIRON_AT_START = dict(os.environ)


@pytest.fixture(scope="session", autouse=True)
def _bytecode_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The tests start Python subprocesses by the hundred (the process-boundary tests, the doc
    blocks). Where ``PYTHONDONTWRITEBYTECODE``
    is set (the reference machine sets it), each compiled the package from source again
    (~50 ms a process); they share one bytecode cache under this run's temp dir instead, so
    nothing is written into the source tree, as that variable intends. A
    ``PYTHONPYCACHEPREFIX`` set by the caller is kept."""
    if "PYTHONPYCACHEPREFIX" in os.environ:
        yield
        return
    saved = os.environ.get("PYTHONDONTWRITEBYTECODE")
    os.environ["PYTHONPYCACHEPREFIX"] = str(tmp_path_factory.mktemp("pycache"))
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        yield
    finally:
        del os.environ["PYTHONPYCACHEPREFIX"]
        if saved is not None:
            os.environ["PYTHONDONTWRITEBYTECODE"] = saved


def extract_archive(archive: Path, into: Path) -> None:
    """Extract one of the repository's tar fixtures into ``into``. Python's ``"data"`` filter
    (3.12, and 3.11.4 on) refuses absolute paths, paths out of ``into`` and anything but
    files and directories; an earlier 3.11, which ``requires-python`` admits, has no filter,
    so the same is checked here before extracting."""
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
            return
        top = into.resolve()
        for member in tar.getmembers():
            inside = (top / member.name).resolve().is_relative_to(top)
            if not (inside and (member.isfile() or member.isdir())):
                raise ValueError(f"{archive}: refusing {member.name!r}")
        tar.extractall(into)


def source_files(src: Path) -> list[str]:
    """The files under ``src`` that belong to the source tree (relative POSIX paths, sorted):
    what git tracks plus new files it does not ignore, so state that running the demo left in
    ``fixtures/`` never reaches a test. Outside a git checkout (an unpacked sdist): every file
    except the runtime-state directories."""
    try:
        done = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard", "--", "."],
                              cwd=src, capture_output=True, check=False)
    except FileNotFoundError:  # no git on this machine
        done = None
    if done is not None and done.returncode == 0:
        names = done.stdout.decode("utf-8").split("\0")
        return sorted(n for n in names if n and (src / n).is_file())
    return sorted(p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()
                  and not RUNTIME_STATE.intersection(p.relative_to(src).parts))


def copy_source(src: Path, dest: Path) -> list[str]:
    """Copy the source files of ``src`` (see :func:`source_files`) to ``dest``; returns them.

    The one way tests copy anything out of the repository's ``fixtures/``."""
    names = source_files(src)
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / name, dest / name)
    return names


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (zombies not yet reaped included)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def descendants(pid: int) -> list[int]:
    """The children of ``pid``, theirs, and so on: what this test started, where a look at
    every process on the machine would also find other test workers' (``pytest -n``)."""
    found = children(pid)
    for child in list(found):
        with contextlib.suppress(OSError):  # it exited meanwhile
            found += descendants(child)
    return found


def argv_of(pid: int) -> list[str]:
    """The command line of ``pid`` (empty once it has exited or is a zombie)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def period_job(name: str, command: str, extra: str = "") -> str:
    """A Job Definition body with one required ``period`` input and key
    ``{{job_id}}:{{inputs.period}}`` (``extra``: more top-level YAML, e.g. a checkpoint)."""
    return (f"name: {name}\ninputs:\n  period: {{type: string, required: true}}\n"
            f"task:\n  mode: command\n  command: {command}\n"
            'run:\n  idempotency_key: "{{job_id}}:{{inputs.period}}"\n' + extra)


class Project:
    """A SpecDojo project in a temp dir, with the fake SpecDojo CLI wired in."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / ".specdojo").mkdir(parents=True)
        (root / ".specdojo" / "specdojo.config.json").write_bytes(orjson.dumps({
            "version": 1, "current_project": "demo",
            "projects": {"demo": {"routines_path": "routines", "jobs_path": "jobs",
                                  "execution_path": "execution"}},
        }))
        (root / "routines").mkdir()
        (root / "jobs").mkdir()
        self.log = root / "fake-cli.log"
        self.codes = root / "fake-cli.codes"

    def routine(self, rid: str, body: str) -> Path:
        path = self.root / "routines" / f"{rid}.yaml"
        path.write_text(f"id: {rid}\n" + textwrap.dedent(body), encoding="utf-8")
        return path

    def job(self, jid: str, body: str) -> Path:
        path = self.root / "jobs" / f"{jid}.yaml"
        path.write_text(f"id: {jid}\n" + textwrap.dedent(body), encoding="utf-8")
        return path

    def exit_codes(self, mapping: Mapping[str, int]) -> None:
        self.codes.write_text("".join(f"{k} {v}\n" for k, v in mapping.items()))

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("SPECDOJO_PROJECT", None)
        env.update(SPECDOJO_CLI=str(FAKE_CLI), FAKE_SPECDOJO_LOG=str(self.log),
                   FAKE_SPECDOJO_CODES=str(self.codes))
        env.update(extra)
        return env

    def cli(self, *args: str, env: Mapping[str, str] | None = None,
            timeout: float | None = None, process: bool = False,
            ) -> subprocess.CompletedProcess[str]:
        """``python -m specdojo_routine ARGS --root ROOT`` (:func:`tests.clirun.run_cli`: in
        this process, or in a child when ``process`` or a ``timeout`` is given)."""
        return run_cli([*args, "--root", str(self.root)], cwd=self.root,
                       env=env or self.env(), timeout=timeout, process=process)

    def popen(self, *args: str, env: Mapping[str, str] | None = None,
              script: bool = False) -> subprocess.Popen[str]:
        """``python -m specdojo_routine`` (``script``: the console script) in the background."""
        program = console_script() if script else [sys.executable, "-m", "specdojo_routine"]
        return subprocess.Popen(
            [*program, *args, "--root", str(self.root)],
            cwd=self.root, env=dict(env or self.env()), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    @property
    def ledger(self) -> Path:
        return self.root / "routines" / "generated" / "routine-runs.jsonl"

    def events(self) -> list[dict[str, Any]]:
        if not self.ledger.exists():
            return []
        return [orjson.loads(line) for line in self.ledger.read_bytes().splitlines()]

    @property
    def state_path(self) -> Path:
        return self.root / "routines" / "generated" / "routine-state.json"

    def state(self) -> dict[str, Any]:
        data: dict[str, Any] = orjson.loads(
            (self.root / "routines" / "generated" / "routine-state.json").read_bytes())
        return data

    def files(self) -> dict[str, bytes]:
        """Every file under the root with its content (to prove nothing was written)."""
        return {p.relative_to(self.root).as_posix(): p.read_bytes()
                for p in sorted(self.root.rglob("*")) if p.is_file()}


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    yield Project(tmp_path / "proj")


# The week of history of SPEC §14's tests (tests/weekhistory.py): its fixtures, for every module.
from tests.weekhistory import week, week_built, week_copy  # noqa: E402, F401


@contextlib.contextmanager
def tmpfs_at(target: Path, options: str) -> Iterator[Path]:
    """A real tmpfs mounted at ``target`` (a directory) with mount ``options`` (``size=1m``,
    ``nr_inodes=64`` ...) for a full disk or exhausted inodes; the test is skipped where
    mounting is refused, and the mount is gone afterwards."""
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


def wait_for(predicate: Callable[[], object], timeout: float = 30.0) -> None:
    """Return once ``predicate()`` is true (polled every 20 ms); fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def demo_that_ran(tmp_path: Path, routine_id: str) -> ProjectPaths:
    """A copy of the bundled demo under ``tmp_path`` after one real ``run --id routine_id``
    (a subprocess, with the demo's fake SpecDojo CLI), and its project paths."""
    from specdojo_routine.store.config import resolve_project

    root = tmp_path / "demo"
    copy_source(REPO / "fixtures" / "demo", root)
    env = dict(cli_environ(), SPECDOJO_CLI=str(root / "bin" / "fake-specdojo"),
               FAKE_SPECDOJO_LOG=str(tmp_path / "calls.log"))
    subprocess.run([sys.executable, "-m", "specdojo_routine", "run", "--id", routine_id,
                    "--root", str(root)], env=env, check=True, capture_output=True)
    return resolve_project(root)


def wait_for_a_child_in_group(pgid: int) -> None:
    """Until group ``pgid``'s leader (``sh``, which dies with a killed runner) has started a
    command that is to outlive it: the runner records the group as soon as the leader
    exists, and a runner killed before the leader's fork leaves no group behind."""
    def a_child() -> bool:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_bytes().rpartition(b")")[2].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and int(stat.parent.name) != pgid \
                    and fields[0] not in (b"Z", b"X"):
                return True
        return False
    wait_for(a_child)


def wait_for_text(path: Path, timeout: float = 20) -> str:
    """The stripped text of ``path`` once it exists and holds some (a command under test
    writing its pid, say); fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``: what a stopped or timed-out
    action, or a killed hook, must leave none of (a reaper-less PID 1 may keep zombies)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_bytes().rpartition(b")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            found.append(int(entry.name))
    return found


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers per usable core. Most of the suite's tests spend their time
    waiting - on a child process, a lock, a redis-server, a sleep of a test about time - so one
    worker per core left the cores idle about half the time (on 2 cores the suite took 365 s
    with 2 workers and 211 s with 4, the same tests)."""
    return 2 * max(1, len(os.sched_getaffinity(0)))
