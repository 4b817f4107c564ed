"""The command-line face: argparse, rendering and exit codes (``python -m specdojo_routine``)."""

from specdojo_routine.cli.main import main

__all__ = ["main"]
