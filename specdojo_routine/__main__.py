"""``python -m specdojo_routine``."""

from __future__ import annotations

import signal
import sys
from types import FrameType

try:
    from specdojo_routine.cli import main
except ImportError as exc:  # before anything of ours loads, so the wording is repeated here
    sys.stderr.write(f"error: {exc}: a package specdojo_routine needs is missing or broken in "
                     "this Python environment; install specdojo_routine with its dependencies "
                     "(pip install specdojo_routine) and run the command again\n")
    sys.exit(1)


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (a scheduler's timeout) unwinds like Ctrl-C: running commands' process groups
    are killed and the open attempt stays open, to be reported as interrupted next time."""
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminate)
    sys.exit(main())
