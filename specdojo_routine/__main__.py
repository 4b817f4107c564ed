"""The process: ``python -m specdojo_routine`` and the ``specdojo-routine`` script
(:func:`main`) run the command line's command in it, alike.

- Python's cyclic collector runs every 300,000 young allocations, not 700, from before
  anything of ours is imported. A command is a short process that builds many small objects it
  keeps to the end (10,000 definitions make ~200,000), so a young collection walks survivors
  only (one took 25-45 ms of a 10,000-file dry run; during the imports alone the default made
  29 collections, 6 ms of `list`). Garbage cycles still bound memory (the located slow path
  leaves some for every file: 10,000 such files peak at 67 MB, 46 MB at 100,000). A program
  that calls ``cli.main`` keeps its own setting.
- A dependency that is missing is one line that says what to do, before anything of ours
  loads.
- SIGINT (Ctrl-C) and SIGTERM (a scheduler's timeout) are an operator's stop (SPEC §6.5,
  :mod:`specdojo_routine.execute.stop`): the running command's process group is terminated
  (SIGTERM, 10 s, SIGKILL), the action and the attempt are recorded as ended with reason
  ``stopped by SIGINT`` / ``stopped by SIGTERM``, every lock is released and the process exits
  130 / 143. Only a runner killed outright leaves an attempt open (interrupted).
- The exit skips the interpreter's teardown when nothing is left for it to do. Freeing every
  module and object one by one costs 15 ms after `list` of the demo (a tenth of the command)
  and 60-100 ms after a 10,000-file dry run. It is skipped only when the command's output is
  flushed, no other thread is running and nothing is registered to run at exit (``atexit``:
  logging, ``weakref.finalize``, a program's own hooks); files are closed where they are
  written. Otherwise the process exits as Python does.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
from typing import NoReturn

gc.set_threshold(300_000, 10, 10)  # before anything of ours is imported (see above)

try:
    from specdojo_routine.cli import main as run_command
    from specdojo_routine.execute import stop
except ImportError as exc:  # before anything of ours loads, so the wording is repeated here
    sys.stderr.write(f"error: {exc}: a package specdojo_routine needs is missing or broken in "
                     "this Python environment; install specdojo_routine with its dependencies "
                     "(pip install specdojo_routine) and run the command again\n")
    sys.exit(1)

__all__ = ["main"]


def main() -> NoReturn:
    """Run the command line's command and exit with its code."""
    stop.install()
    code = run_command()
    stop.uninstall()  # the command is over: nothing to record
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # Python's own exit says what it says about such a stream
        sys.exit(code)
    if _nothing_left_at_exit():
        os._exit(code)
    sys.exit(code)


def _nothing_left_at_exit() -> bool:
    if threading.active_count() > 1:
        return False
    registered = getattr(atexit, "_ncallbacks", None)  # CPython's; elsewhere: assume some
    return registered is not None and registered() == 0


if __name__ == "__main__":
    main()
