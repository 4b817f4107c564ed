"""Print README command N (1: the demo, 2: the tests) exactly as README.md shows it.

The commands are the fenced ``sh`` blocks of the README's "Set-up" section, in order. `.ci/run`
runs them from here, so CI and the README cannot drift apart. Exit 2 when the README does not
have exactly two such blocks.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
SECTION = re.compile(r"^## Set-up\b.*?(?=^## |\Z)", re.M | re.S)
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)


def commands(text: str) -> list[str]:
    """The set-up section's ``sh`` blocks, each stripped of surrounding blank lines."""
    section = SECTION.search(text)
    return [m.group(1).strip() for m in BLOCK.finditer(section.group(0))] if section else []


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("1", "2"):
        sys.stderr.write("error: usage: readme_command.py 1|2\n")
        return 2
    found = commands(README.read_text(encoding="utf-8"))
    if len(found) != 2:
        sys.stderr.write(f"error: {README} must have exactly two ```sh blocks under "
                         f"'## Set-up' (found {len(found)})\n")
        return 2
    print(found[int(argv[0]) - 1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
