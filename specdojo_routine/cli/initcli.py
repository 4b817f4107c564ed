"""``init``: its options and what it prints (the skeleton itself: :mod:`..app.skeleton`)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from specdojo_routine.cli import helptext

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[Any]


def add_parser(sub: Subparsers) -> None:
    """``init [--root DIR] [--project ID]``: its own options, since here they name a project
    that does not exist yet rather than find one."""
    p = sub.add_parser("init", help="start a new project: config, an example routine and Job")
    p.add_argument("--root", type=Path, metavar="DIR",
                   help="where to create the project (default: the current directory)")
    p.add_argument("--project", metavar="ID",
                   help="the new project's id (default: the directory's name)")


def cmd_init(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from specdojo_routine.app import skeleton  # on first use, like every command's handler

    made = skeleton.create(args.root if args.root is not None else Path.cwd(), args.project)
    where = "" if args.root is None else f" --root {shlex.quote(str(args.root))}"
    out.write(f'Created project "{made.project_id}" in {made.root}:\n')
    out.write("".join(f"  {name}\n" for name in made.files))
    out.write(f"Next: {helptext.prog()} validate{where}\n"
              f"      {helptext.prog()} run --due --dry-run{where}\n")
    return 0
