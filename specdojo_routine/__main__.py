"""``python -m specdojo_routine``: :func:`specdojo_routine.cli.entry.entry`."""

from __future__ import annotations

import sys

try:
    from specdojo_routine.cli.entry import entry
except ImportError as exc:  # before anything of ours loads, so the wording is repeated here
    sys.stderr.write(f"error: {exc}: a package specdojo_routine needs is missing or broken in "
                     "this Python environment; install specdojo_routine with its dependencies "
                     "(pip install specdojo_routine) and run the command again\n")
    sys.exit(1)


if __name__ == "__main__":
    entry()
