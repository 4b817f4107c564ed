"""The process (specdojo_routine/__main__.py): one entry for `python -m` and the script, and an
exit that is Python's own (atexit hooks run, threads are waited for, the output is flushed);
what the command built is frozen for the collector, not finalized one object at a time."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO, cli_environ, console_script, copy_source

DEMO = REPO / "fixtures" / "demo"
# An object with a finaliser; an atexit hook, or a thread that outlives the command by half a
# second; then the real entry.
PROBE = textwrap.dedent("""\
    import atexit, os, sys, threading, time
    class Finalised:
        def __del__(self):
            os.write(2, b"finalised\\n")
    kept = Finalised()
    hook, *args = sys.argv[1:]
    if hook == "atexit":
        atexit.register(lambda: os.write(2, b"atexit ran\\n"))
    if hook == "thread":
        def later():
            time.sleep(0.5)
            os.write(2, b"thread ended\\n")
        threading.Thread(target=later).start()
    sys.argv = ["specdojo-routine", *args]
    from specdojo_routine.__main__ import main
    main()
""")


def run(hook: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = cli_environ()
    return subprocess.run([sys.executable, "-c", PROBE, hook, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("hook", ["none", "atexit", "thread"])
def test_the_exit_is_pythons_own(hook: str) -> None:
    """An ``atexit`` hook runs and a thread still running is waited for; an object still alive
    when the command is over is frozen with the rest, not finalised (Python promises no
    finaliser at exit, and nothing of ours waits for one)."""
    done = run(hook, "validate", "--root", str(DEMO))
    said = {"none": "", "atexit": "atexit ran\n", "thread": "thread ended\n"}[hook]
    assert (0, said) == (done.returncode, done.stderr)
    assert done.stdout.startswith("Validated: 5 routine(s)")


def test_the_exit_code_and_every_byte_of_a_long_output_come_through(tmp_path: Path) -> None:
    """The output of a dry run of 3,000 routines (a pipe far smaller than it) arrives whole,
    as main() writes it in-process, and a failing command's code is its exit status."""
    root = tmp_path / "p"
    copy_source(DEMO, root)
    for n in range(3000):
        (root / "routines" / f"rtn-many-{n:04d}.yaml").write_text(
            f"id: rtn-many-{n:04d}\ninterval: 1h\naction: {{kind: specdojo, args: [x]}}\n")
    args = ["run", "--due", "--dry-run", "--now", "2026-08-07T08:02:00Z", "--root", str(root)]
    env = cli_environ()
    inline = ("import contextlib, io, sys; from specdojo_routine.cli import main\n"
              "out = io.StringIO()\n"
              "with contextlib.redirect_stdout(out): main(sys.argv[1:])\n"
              "sys.__stdout__.write(out.getvalue())")
    whole = [subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=120, check=False)
             for argv in ([*console_script(), *args], [sys.executable, "-c", inline, *args])]
    assert (0, 0) == (whole[0].returncode, whole[1].returncode), whole[0].stderr
    assert whole[0].stdout == whole[1].stdout
    assert whole[0].stdout.count("rtn-many-") == 3000 and len(whole[0].stdout) > 1 << 16
    (root / "routines" / "rtn-many-0000.yaml").write_text("id: rtn-many-0000\n")
    failed = subprocess.run([*console_script(), "validate", "--root", str(root)], cwd=REPO,
                            env=env, capture_output=True, text=True, timeout=120, check=False)
    assert (1, True) == (failed.returncode, "rtn-many-0000.yaml" in failed.stderr)


def test_the_process_sets_the_collector_threshold_and_main_alone_does_not() -> None:
    """Importing the process entry raises the young-generation threshold (its first statement
    after the standard library); a program that calls ``cli.main`` keeps its own, and nothing
    of its is frozen."""
    probe = ("import gc, sys; gc.set_threshold(700, 10, 10); "
             "import specdojo_routine.__main__; during = gc.get_threshold(); "
             "gc.set_threshold(700, 10, 10); from specdojo_routine.cli import main; "
             "main(['validate', '--root', sys.argv[1]]); "
             "print(during, gc.get_threshold(), gc.get_freeze_count())")
    done = subprocess.run([sys.executable, "-c", probe, str(DEMO)], cwd=REPO, env=cli_environ(),
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.splitlines()[-1] == "(300000, 10, 10) (700, 10, 10) 0"


def test_the_process_freezes_what_its_command_built_before_it_exits() -> None:
    """The process entry freezes the collector's objects once the command is over (the
    collections at exit would only walk them); the exit code and the output are the
    command's."""
    probe = ("import atexit, gc, sys; "
             "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 1000)); "
             "sys.argv = ['specdojo-routine', 'validate', '--root', sys.argv[1]]; "
             "from specdojo_routine.__main__ import main; main()")
    done = subprocess.run([sys.executable, "-c", probe, str(DEMO)], cwd=REPO, env=cli_environ(),
                          capture_output=True, text=True, timeout=60, check=False)
    assert (0, "frozen True") == (done.returncode, done.stdout.splitlines()[-1]), done.stderr
    assert done.stdout.startswith("Validated: 5 routine(s)")


def test_the_process_asks_no_file_child_about_the_interpreter(tmp_path: Path) -> None:
    """A command that iterates a schedule imports croniter, which asks
    ``platform.architecture()``; in the process entry that starts no ``file`` child (a
    ``file`` on PATH that leaves a mark shows it), while a bare import of croniter does, and a
    program that calls ``cli.main`` keeps the standard ``platform.architecture``."""
    bin_dir, mark = tmp_path / "bin", tmp_path / "file-ran"
    bin_dir.mkdir()
    (bin_dir / "file").write_text(f"#!/bin/sh\necho ran >> {mark}\necho 'ELF 64-bit LSB'\n")
    (bin_dir / "file").chmod(0o755)
    env = cli_environ() | {"PATH": f"{bin_dir}:{cli_environ()['PATH']}"}

    def ran(*argv: str) -> bool:
        mark.unlink(missing_ok=True)
        done = subprocess.run([sys.executable, *argv], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return mark.exists()

    assert ran("-c", "import croniter")  # the probe sees the child when there is one
    assert not ran("-m", "specdojo_routine", "next", "rtn-nightly", "--root", str(DEMO))
    keeps = ("import platform, sys; ask = platform.architecture; "
             "from specdojo_routine.cli import main; main(['next', 'rtn-nightly', '--root', "
             "sys.argv[1]]); assert platform.architecture is ask")
    assert ran("-c", keeps, str(DEMO))


# On PYTHONPATH as sitecustomize: the process sends itself a real SIGINT when it first looks
# for the module named in STOP_AT_IMPORT, as a Ctrl-C that lands while the package imports,
# then waits a little and notes in IMPORT_GOES_ON that the import went on: a signal delivered
# there would have ended the wait with KeyboardInterrupt, inside the import.
SIGINT_AT_IMPORT = textwrap.dedent("""\
    import os, signal, sys, time
    class _SigintAt:
        def find_spec(self, name, path=None, target=None):
            if name == os.environ.get("STOP_AT_IMPORT"):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.3)
                open(os.environ["IMPORT_GOES_ON"], "w").close()
            return None
    sys.meta_path.insert(0, _SigintAt())
""")


@pytest.mark.parametrize(("module", "script"), [
    ("specdojo_routine.cli", False), ("specdojo_routine.cli", True),
    ("specdojo_routine.execute.stop", False), ("argparse", False),
    ("dataclasses", False),  # imported by orjson's compiled extension as it initialises
])
def test_ctrl_c_while_the_package_imports_is_a_stop_once_it_has_imported(
    tmp_path: Path, module: str, script: bool,
) -> None:
    """SIGINT while ``python -m specdojo_routine`` (or the script) still imports the package,
    before ``main()`` runs, waits until the imports are done (one that a signal interrupts
    inside a compiled extension can crash the interpreter), then is a stop: nothing had
    started, so one ``error:`` line and exit 130, as for any stop by SIGINT - no
    KeyboardInterrupt traceback, nothing written to the project."""
    (tmp_path / "sitecustomize.py").write_text(SIGINT_AT_IMPORT)
    env = cli_environ()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tmp_path), env.get("PYTHONPATH")) if p)
    env["STOP_AT_IMPORT"] = module
    env["IMPORT_GOES_ON"] = str(tmp_path / "import-went-on")
    root = tmp_path / "p"
    copy_source(DEMO, root)
    program = console_script() if script else [sys.executable, "-m", "specdojo_routine"]
    done = subprocess.run([*program, "run", "--due", "--root", str(root)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert (130, 1) == (done.returncode, len(done.stderr.splitlines())), done.stderr
    assert done.stderr.startswith("error: stopped by SIGINT while starting"), done.stderr
    assert "Traceback" not in done.stderr and "" == done.stdout
    assert (tmp_path / "import-went-on").exists()
    assert not (root / "routines" / "generated").exists()
