"""``python -m specdojo_routine``."""

from __future__ import annotations

import signal
import sys
from types import FrameType

from specdojo_routine.cli import main


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (a scheduler's timeout) unwinds like Ctrl-C: running commands' process groups
    are killed and the open attempt stays open, to be reported as interrupted next time."""
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminate)
    sys.exit(main())
