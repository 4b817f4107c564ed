"""``python -m specdojo_routine ARGS``, as the tests run it: in this process, or in a child.

Most end-to-end tests are about what a command does to a project, not about the process it
runs in; starting a Python process for each of them was most of the suite's time. So
:func:`run_cli` runs :func:`specdojo_routine.cli.main` in this process - with the command's
environment as ``os.environ``, its directory as the working directory, stdin empty, stdout and
stderr captured, everything restored after - and returns what :func:`subprocess.run` would.

A real child process is used:

- when the caller gives a ``timeout``: the test is about a command that could hang (a FIFO,
  a lock), and only a child can be given up on;
- when the caller asks for one (``process=True``): the test reads what only a process shows
  (``PYTHONPROFILEIMPORTTIME``'s list of what it imported, its own pid);
- for every call when ``SPECDOJO_TEST_SUBPROCESS=1`` is set (the whole suite then runs each
  command as its own process, as it did before this runner existed);
- always for what is about the process itself (signals, ``python -m``, the console script,
  exit on a closed pipe): those tests start their own processes (``Project.popen``,
  ``subprocess``) and do not come here.

An exception that escapes ``main`` is not caught: in a child it would have been a traceback
and exit 1, here it fails the test with the same traceback.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

SUBPROCESS_ENV = "SPECDOJO_TEST_SUBPROCESS"


def run_cli(args: Sequence[str], *, cwd: os.PathLike[str] | str, env: Mapping[str, str],
            timeout: float | None = None, process: bool = False,
            ) -> subprocess.CompletedProcess[str]:
    """``python -m specdojo_routine ARGS`` in ``cwd`` with exactly ``env``; in a child when
    ``process`` or ``timeout`` is given (see the module)."""
    argv = [sys.executable, "-m", "specdojo_routine", *args]
    if process or timeout is not None or os.environ.get(SUBPROCESS_ENV) == "1":
        return subprocess.run(argv, cwd=cwd, env=dict(env), capture_output=True, text=True,
                              timeout=120 if timeout is None else timeout, check=False)
    from specdojo_routine.cli import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(), out, err
        code = main(list(args))
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())
