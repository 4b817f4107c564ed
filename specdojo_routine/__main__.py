"""The process: ``python -m specdojo_routine`` and the ``specdojo-routine`` script
(:func:`main`) run the command line's command in it, alike.

- Python's cyclic collector runs every 300,000 young allocations, not 700, from before
  anything of ours is imported: a command is a short process that keeps most of the many small
  objects it builds (definitions, folds) to the end, so frequent young collections would only
  walk survivors. When the command is over, everything it built is frozen
  (:func:`gc.freeze`): the interpreter's exit does not walk and finalize, one by one,
  objects that die with the process anyway - so an object still alive then gets no
  ``__del__`` (Python promises none at exit). Nothing of ours waits for one: files are
  written and closed in ``with`` blocks (a ledger append is fsync'd before the command goes
  on), locks are released by their context managers, the Redis connection in a ``finally``;
  atexit hooks, waiting for threads and flushing the output stay Python's own. A program
  that calls ``cli.main`` keeps its own settings and nothing of its is frozen.
- croniter asks ``platform.architecture()`` at import whether this Python is 32-bit, and the
  standard library answers by running ``file`` on the interpreter in a child process. In this
  process the question is answered without one (``_architecture_without_file`` below); a
  program that imports the package keeps its ``platform`` as it is.
- A dependency that is missing is one line that says what to do, before anything of ours
  loads.
- SIGINT (Ctrl-C), SIGTERM (a scheduler's timeout) and SIGHUP (a closed terminal; unless
  started ignoring it, as under ``nohup``) are an operator's stop (SPEC §6.5,
  :mod:`specdojo_routine.execute.stop`): the running command's process group is terminated
  (SIGTERM, 10 s, SIGKILL), the action and the attempt are recorded as ended with reason
  ``stopped by SIGINT`` / ``SIGTERM`` / ``SIGHUP``, every lock is released and the process
  exits 130 / 143 / 129. Only a runner killed outright leaves an attempt open (interrupted).
  A stop while the process is still starting (Ctrl-C while the package imports, before the
  command began) is one ``error:`` line and the same exit code, not a traceback: nothing had
  started, so nothing is ended or recorded. The three signals are blocked while the package
  imports and delivered once the stop handling is in place: a signal that interrupts an
  import leaves a half-initialised module, and in a compiled extension (orjson's) that can
  crash the interpreter. (The package's own ``__init__``, which imports only ``typing``, runs
  before this module and is not covered.)
"""

from __future__ import annotations

import gc
import signal
import sys
from typing import NoReturn

gc.set_threshold(300_000, 10, 10)  # before anything of ours is imported (see above)
_STOPS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)  # until main() handles them (see above)


def _stopped_starting(exc: KeyboardInterrupt) -> NoReturn:
    """A stop before the command began: one line and 128 + the signal, not a traceback."""
    signum = getattr(exc, "signum", 2)  # a Stopped says which; a bare KeyboardInterrupt: SIGINT
    name = {1: "SIGHUP", 2: "SIGINT", 15: "SIGTERM"}.get(signum, f"signal {signum}")
    sys.stderr.write(f"error: stopped by {name} while starting: nothing had started and "
                     "nothing was recorded - run the command again\n")
    sys.exit(128 + signum)


try:
    from specdojo_routine.cli import main as run_command
    from specdojo_routine.execute import stop
except ImportError as exc:  # before anything of ours loads, so the wording is repeated here
    sys.stderr.write(f"error: {exc}: a package specdojo_routine needs is missing or broken in "
                     "this Python environment; install specdojo_routine with its dependencies "
                     "(pip install -e . in its clone) and run the command again\n")
    sys.exit(1)

__all__ = ["main"]


def main() -> NoReturn:
    """Run the command line's command and exit with its code."""
    try:
        stop.install()
        _architecture_without_file()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)  # one received meanwhile arrives
    except KeyboardInterrupt as exc:  # a stop before the command began (see above)
        _stopped_starting(exc)
    code = run_command()
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)  # over: a late stop cannot cut the exit
    stop.uninstall()  # nothing more to record
    gc.freeze()  # nor anything left to collect (see above)
    sys.exit(_with_the_stop(code))


def _with_the_stop(code: int) -> int:
    """The exit code: 128 + the signal of a stop received (SPEC §6.5), also of one that
    landed where Python could not raise it (a finalizer, the import machinery) and so did not
    end the command; the command's own line says so, or one more line does."""
    signum = stop.requested()
    if signum is None or code == 128 + signum:
        return code
    sys.stderr.write(f"error: {stop.Stopped(signum)}\n")
    return 128 + signum


def _architecture_without_file() -> None:
    """Answer ``platform.architecture()`` for this interpreter from its pointer size.

    croniter asks it when it is imported (to learn whether this Python is 32-bit), and the
    standard library asks ``file`` about the interpreter in a child process: a process the
    command did not ask for, on the start-up of every command that iterates a schedule. For
    the running interpreter the pointer size is the answer - what the standard library itself
    answers where ``file`` is missing; any other executable is asked the standard way."""
    import platform
    import struct

    ask = platform.architecture

    def architecture(executable: str = sys.executable, bits: str = "",
                     linkage: str = "") -> tuple[str, str]:
        if executable != sys.executable:
            return ask(executable, bits, linkage)
        return bits or f"{struct.calcsize('P') * 8}bit", linkage

    platform.architecture = architecture


if __name__ == "__main__":
    main()
