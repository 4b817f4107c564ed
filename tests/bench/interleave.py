"""Time one CLI command as whole processes under two or more source trees, interleaved.

Run: ``python tests/bench/interleave.py TREE [TREE ...] -- ARGS...`` (``N=25`` rounds by
default), e.g. against a worktree of an older commit::

    git worktree add /tmp/before <commit>
    python tests/bench/interleave.py /tmp/before . -- list --root fixtures/demo

Each round runs ``python -m specdojo_routine ARGS`` once per tree (``PYTHONPATH`` choosing the
tree), so load on the machine hits every tree alike; each tree keeps its own bytecode cache (a
private ``PYTHONPYCACHEPREFIX``), as an installed package runs. Prints the best and the median
wall time and CPU time (user + system) of each tree. Not part of the test run.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") == 0:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    cut = argv.index("--")
    trees, args = [str(Path(t).resolve()) for t in argv[:cut]], argv[cut + 1:]
    rounds = int(os.environ.get("N", "25"))
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    wall: dict[str, list[float]] = {t: [] for t in trees}
    cpu: dict[str, list[float]] = {t: [] for t in trees}
    with tempfile.TemporaryDirectory() as caches:
        # PYTHONSAFEPATH: `-m` would put the working directory first on sys.path, and a
        # checkout there would shadow every tree
        envs = {t: base | {"PYTHONPATH": t, "PYTHONPYCACHEPREFIX": f"{caches}/{n}",
                           "PYTHONSAFEPATH": "1"}
                for n, t in enumerate(trees)}
        for _ in range(rounds):
            for tree in trees:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                started = time.perf_counter()
                subprocess.run([sys.executable, "-m", "specdojo_routine", *args],
                               env=envs[tree], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=False)
                wall[tree].append(time.perf_counter() - started)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[tree].append(after.ru_utime - before.ru_utime
                                 + after.ru_stime - before.ru_stime)
    for tree in trees:
        w, c = sorted(wall[tree]), sorted(cpu[tree])
        print(f"{tree}: wall best {w[0] * 1e3:.1f} ms, median {w[rounds // 2] * 1e3:.1f} ms; "
              f"cpu best {c[0] * 1e3:.1f} ms, median {c[rounds // 2] * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
