"""A command imports only what it needs (issue 16): `validate` and `list` start like git.

Each check runs a fresh interpreter, runs the command in it and lists which heavy modules were
really executed (a module registered by store/lazy.py but never touched does not count).
Figures: tests/bench/test_bench_startup.py and tests/bench/IMPORTS.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.conftest import cli_environ, copy_source

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "fixtures" / "demo"
HEAVY = ("specdojo_routine.execute.runner", "specdojo_routine.execute.agent",
         "specdojo_routine.execute.jobfiles", "specdojo_routine.app.jobs",
         "specdojo_routine.store.execlock", "specdojo_routine.store.codec",
         "specdojo_routine.store.ledger", "specdojo_routine.store.views",
         "specdojo_routine.core.events", "specdojo_routine.core.decide", "cattrs",
         "portalocker", "redis", "croniter", "dateutil", "importlib.metadata", "logging",
         "specdojo_routine.store.locks", "specdojo_routine.store.redislock",
         "specdojo_routine.core.schedule", "specdojo_routine.app.listing",
         "specdojo_routine.app.release", "specdojo_routine.app.preview",
         "specdojo_routine.app.handlers", "specdojo_routine.app.job_seam",
         "specdojo_routine.app.routine_commands", "specdojo_routine.app.run_owner",
         # the demo names no roster (members_path), and every file is valid
         "specdojo_routine.core.agent_rules", "specdojo_routine.store.agentconfig",
         "difflib", "socket",
         # a short ledger is folded in one piece: no fold helper, no pickle, no subprocess
         "specdojo_routine.core.fold_parts", "pickle", "subprocess",
         # the routine view is all `list` reads: not the Job Run fold
         "specdojo_routine.core.jobfold")
PROBE = """
import contextlib, io, json, sys
from specdojo_routine.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[2:])
names = json.loads(sys.argv[1])
loaded = [n for n in names if n in sys.modules
          and type(sys.modules[n]).__name__ != "_LazyModule"]
print(json.dumps([code, loaded]))
"""


def loaded_by(*argv: str, env: dict[str, str] | None = None,
              names: Iterable[str] = HEAVY) -> tuple[int, list[str]]:
    full = cli_environ() | (env or {})
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(names)), *argv],
                          cwd=REPO, capture_output=True, text=True, timeout=60, check=True,
                          env=full)
    code, loaded = json.loads(done.stdout)
    return int(code), list(loaded)


def test_validate_loads_no_runner_ledger_codec_locks_croniter_or_metadata() -> None:
    """A cron expression is checked without croniter; the version is read only for
    `--version`; no lock, schedule, listing or policy command module is executed."""
    assert (0, []) == loaded_by("validate", "--root", str(DEMO))


LISTING = {"specdojo_routine.store.views", "specdojo_routine.store.ledger",
           "specdojo_routine.store.codec",
           "specdojo_routine.store.locks", "specdojo_routine.store.redislock",
           "specdojo_routine.core.schedule", "specdojo_routine.app.listing", "croniter",
           "dateutil"}


@pytest.mark.parametrize("ran", [False, True], ids=["fresh", "after a run"])
def test_list_loads_no_runner_agent_job_machinery_portalocker_or_cattrs(
    ran: bool, tmp_path: Path,
) -> None:
    """`list` reads the views, the ledger tail (under a shared flock taken without
    portalocker, whose import imports redis) and the schedules, but never the job runner, the
    agent seam, git, the exec lock, the event classes, the cattrs converter or the package
    metadata."""
    root = DEMO
    if ran:
        root = tmp_path / "demo"
        copy_source(DEMO, root)
        assert 0 == loaded_by("run", "--due", "--root", str(root), env={
            "SPECDOJO_CLI": str(root / "bin" / "fake-specdojo")})[0]
    code, loaded = loaded_by("list", "--root", str(root))
    assert (0, []) == (code, [n for n in loaded if n not in LISTING])


@pytest.mark.parametrize("words", [["--help"], ["validate", "--help"], ["where"]])
def test_help_and_where_load_no_definitions_machinery(words: list[str]) -> None:
    """Only `--version` reads the package metadata; `--help` and `where` read no definition."""
    args = [*words, "--root", str(DEMO)] if words == ["where"] else words
    names = (*HEAVY, "specdojo_routine.store.definitions", "ruamel.yaml")
    assert (0, []) == loaded_by(*args, names=names)


def test_importing_the_package_loads_nothing_heavy() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import json, sys, specdojo_routine; print(json.dumps("
         "[n for n in sys.modules if n.startswith('specdojo_routine.')]))"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
    assert [] == json.loads(done.stdout)


def test_every_public_name_still_imports_from_the_package() -> None:
    """`from specdojo_routine import X` works for every X of __all__, in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", "import specdojo_routine as s; "
         "exec('from specdojo_routine import ' + ', '.join(s.__all__)); print('ok')"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert ("ok\n", "") == (done.stdout, done.stderr)


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import specdojo_routine

    with pytest.raises(AttributeError):
        specdojo_routine.no_such_name  # noqa: B018


def test_run_still_works_once_everything_is_loaded(tmp_path: Path) -> None:
    """The lazily imported runner, ledger and views do their job in a real `run --due`."""
    root = tmp_path / "demo"
    copy_source(DEMO, root)
    code, loaded = loaded_by("run", "--due", "--root", str(root), env={
        "SPECDOJO_CLI": str(root / "bin" / "fake-specdojo")})
    assert (0, True) == (code, {"specdojo_routine.store.ledger",
                                "specdojo_routine.store.views"} <= set(loaded))


@pytest.mark.parametrize("ran", [False, True], ids=["fresh", "after a run"])
def test_list_starts_no_process(ran: bool, tmp_path: Path) -> None:
    """croniter asks ``platform.architecture()`` at import, which runs ``file`` on the
    interpreter (~9 ms of `list`); schedule imports croniter without that, and `list` starts
    no process and imports no ``subprocess``."""
    root = tmp_path / "demo"
    copy_source(DEMO, root)
    if ran:
        assert 0 == loaded_by("run", "--due", "--root", str(root), env={
            "SPECDOJO_CLI": str(root / "bin" / "fake-specdojo")})[0]
    bin_dir, called = tmp_path / "bin", tmp_path / "file-called"
    bin_dir.mkdir()
    (bin_dir / "file").write_text(f'#!/bin/sh\necho "$@" >> {called}\n'
                                  'echo "ELF 64-bit LSB executable"\n')
    (bin_dir / "file").chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    code, loaded = loaded_by("list", "--root", str(root), env=env,
                             names=("croniter", "subprocess"))
    assert (0, ["croniter"], False) == (code, loaded, called.exists())


def test_a_load_the_definition_cache_serves_whole_imports_no_yaml_parser(
    tmp_path: Path,
) -> None:
    """Once a run has filled the definition cache, `list`, `validate`, a dry run and the next
    run read every file from it: ruamel (~10 ms to import) is not loaded. A file edited since
    is parsed again, and only then is it loaded."""
    root = tmp_path / "demo"
    copy_source(DEMO, root)
    env = {"SPECDOJO_CLI": str(root / "bin" / "fake-specdojo")}
    assert 0 == loaded_by("run", "--due", "--root", str(root), env=env)[0]
    for words in (["list"], ["validate"], ["run", "--due", "--dry-run"], ["run", "--due"]):
        code, loaded = loaded_by(*words, "--root", str(root), env=env,
                                 names=("ruamel.yaml", "_ruamel_yaml", "_ruamel_yaml_clibz"))
        assert (words, 0, []) == (words, code, loaded)
    with (root / "routines" / "rtn-heartbeat.yaml").open("a") as f:
        f.write("# edited\n")
    assert (0, ["ruamel.yaml"]) == loaded_by("list", "--root", str(root),
                                             names=("ruamel.yaml",))


def test_croniter_imported_by_schedule_still_finds_this_python_64_bit() -> None:
    """What croniter decides from ``platform.architecture()`` at import is what it decides
    when imported directly; ``platform.architecture`` is the real one again afterwards."""
    probe = ("import json, platform, sys; real = platform.architecture; "
             "from specdojo_routine.core import schedule; schedule._croniter(); "
             "c = sys.modules['croniter.croniter']; "
             "print(json.dumps([c.OVERFLOW32B_MODE, c.is_32bit(), "
             "platform.architecture is real, 'croniter' in sys.modules]))")
    direct = ("import json, sys, croniter; c = sys.modules['croniter.croniter']; "
              "print(json.dumps([c.OVERFLOW32B_MODE, c.is_32bit(), True, True]))")
    answers = [json.loads(subprocess.run([sys.executable, "-c", code], cwd=REPO,
                                         capture_output=True, text=True, timeout=60,
                                         check=True).stdout) for code in (probe, direct)]
    assert answers[0] == answers[1] == [False, False, True, True]
