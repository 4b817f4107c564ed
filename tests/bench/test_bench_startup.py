"""Start-up of the CLI as whole processes: the demo's `validate` and `list` vs `python -c pass`.

Run: ``python -m pytest tests/bench/test_bench_startup.py -o addopts= -s -q``

Best of 15 interleaved runs each (other load on the machine hits every figure alike). `list` is
measured on the fresh demo and on a copy after one `run --due` (a ledger and views to read).
Target (issue 16): <= 0.12 s and <= 10x `python -c pass`. Where the time goes:
tests/bench/IMPORTS.md (``python -X importtime``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "fixtures" / "demo"


def test_bench_cli_start_up(tmp_path: Path) -> None:
    ran = tmp_path / "demo"
    shutil.copytree(DEMO, ran)
    env = {k: v for k, v in os.environ.items() if k != "SPECDOJO_PROJECT"}
    env["SPECDOJO_CLI"] = str(ran / "bin" / "fake-specdojo")
    py = sys.executable
    subprocess.run([py, "-m", "specdojo_routine", "run", "--due", "--root", str(ran)], cwd=REPO,
                   env=env, check=True, capture_output=True)
    commands = {
        "python -c pass": [py, "-c", "pass"],
        "validate (demo)": [py, "-m", "specdojo_routine", "validate", "--root", str(DEMO)],
        "list (fresh demo)": [py, "-m", "specdojo_routine", "list", "--root", str(DEMO)],
        "list (after a run)": [py, "-m", "specdojo_routine", "list", "--root", str(ran)],
        "import portalocker": [py, "-c", "import portalocker"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(15):
        for name, argv in commands.items():
            started = time.perf_counter()
            done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, check=False)
            times[name].append(time.perf_counter() - started)
            assert done.returncode == 0, done.stderr
    best = {name: min(values) for name, values in times.items()}
    floor = best["python -c pass"]
    print("\nwhole processes, best of 15:")
    for name, seconds in best.items():
        verdict = "" if name == "python -c pass" else (
            f"  {seconds / floor:5.1f}x pass  "
            f"{'met' if seconds <= 0.12 and seconds <= 10 * floor else 'NOT met'}")
        print(f"  {name:22s} {seconds * 1000:6.0f} ms{verdict}")
    assert best["validate (demo)"] < best["list (after a run)"] + 0.05
