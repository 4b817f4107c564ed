"""Start-up of the CLI as whole processes: the demo's `validate` and `list` vs `python -c pass`.

Run: ``python -m pytest tests/bench/test_bench_startup.py -o addopts= -s -q``

Best of 15 interleaved runs each (other load on the machine hits every figure alike). `list` is
measured on the fresh demo and on a copy after one `run --due` (a ledger and views to read).
Target: <= 10x `python -c pass`, bytecode cached (asserted). Where the time goes:
``python -X importtime`` (docs/performance.md). The floor each command cannot go below is
measured too: a process that only imports the chosen dependencies the command uses (attrs,
orjson, ruamel.yaml; and croniter for `list`, whose demo has cron routines), with what the
command costs above it.

Two conditions, each printed:

- *bytecode cached*, as an installed package runs (pip compiles it on install) and as any
  program runs once Python may write ``__pycache__``: a private ``PYTHONPYCACHEPREFIX`` under
  the test's temp dir, filled by one warm-up run of each command. The target is about this.
- *as this environment runs it*: with ``PYTHONDONTWRITEBYTECODE=1`` (set on the reference
  machine) and a source tree without ``__pycache__``, every run compiles each of the
  package's modules it imports from source, while the standard library and
  ``python -c pass`` use their installed bytecode.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ENVIRON_AT_START

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "fixtures" / "demo"
TARGET_RATIO, ROUNDS = 10, 15


def _commands(ran: Path) -> dict[str, list[str]]:
    py = sys.executable
    return {
        "python -c pass": [py, "-c", "pass"],
        "validate (demo)": [py, "-m", "specdojo_routine", "validate", "--root", str(DEMO)],
        "list (fresh demo)": [py, "-m", "specdojo_routine", "list", "--root", str(DEMO)],
        "list (after a run)": [py, "-m", "specdojo_routine", "list", "--root", str(ran)],
        "import portalocker": [py, "-c", "import portalocker"],
        # what the demo's `validate` and `list` cannot start without: the chosen dependencies
        # they use (ruamel for the YAML, croniter for the cron routines' next occurrences)
        "deps of validate": [py, "-c", "import attrs, orjson, ruamel.yaml"],
        # croniter's import asks platform.architecture(), answered without a `file` child as
        # the process entry answers it (specdojo_routine.__main__)
        "deps of list": [py, "-c", "import platform; platform.architecture = lambda *a, **k: "
                         "('64bit', 'ELF'); import attrs, orjson, ruamel.yaml, croniter"],
    }


def _best(commands: dict[str, list[str]], envs: dict[str, dict[str, str]]) -> dict[str, dict[str,
                                                                                     float]]:
    """Best wall time of each command in each environment, all interleaved."""
    times: dict[str, dict[str, list[float]]] = {e: {n: [] for n in commands} for e in envs}
    for _ in range(ROUNDS):
        for env_name, env in envs.items():
            for name, argv in commands.items():
                started = time.perf_counter()
                done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, check=False)
                times[env_name][name].append(time.perf_counter() - started)
                assert done.returncode == 0, done.stderr
    return {e: {n: min(v) for n, v in by.items()} for e, by in times.items()}


def _met(seconds: float, floor: float) -> bool:
    return seconds <= TARGET_RATIO * floor


_BASELINES = ("python -c pass", "import portalocker", "deps of validate", "deps of list")


def _report(title: str, best: dict[str, float]) -> None:
    floor = best["python -c pass"]
    print(f"\nwhole processes, best of {ROUNDS}, {title}:")
    for name, seconds in best.items():
        verdict = "" if name in _BASELINES else (
            f"  {seconds / floor:5.1f}x pass  {'met' if _met(seconds, floor) else 'NOT met'}")
        print(f"  {name:22s} {seconds * 1000:6.0f} ms{verdict}")
    deps = {"validate (demo)": "deps of validate", "list (fresh demo)": "deps of list",
            "list (after a run)": "deps of list"}
    print("  above the imports of the dependencies it uses: " + ", ".join(
        f"{name} +{(best[name] - best[dep]) * 1000:.0f} ms" for name, dep in deps.items()))


def test_bench_cli_start_up(tmp_path: Path) -> None:
    ran = tmp_path / "demo"
    shutil.copytree(DEMO, ran)
    env = {k: v for k, v in ENVIRON_AT_START.items() if k != "SPECDOJO_PROJECT"}
    env["SPECDOJO_CLI"] = str(ran / "bin" / "fake-specdojo")
    cached = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    subprocess.run([sys.executable, "-m", "specdojo_routine", "run", "--due", "--root", str(ran)],
                   cwd=REPO, env=env, check=True, capture_output=True)
    commands = _commands(ran)
    for argv in commands.values():  # the warm-up that writes the bytecode
        subprocess.run(argv, cwd=REPO, env=cached, check=True, capture_output=True)
    best = _best(commands, {"cached": cached, "as is": env})
    _report("bytecode cached (as installed)", best["cached"])
    as_is = "PYTHONDONTWRITEBYTECODE=1" if env.get("PYTHONDONTWRITEBYTECODE") else "as is"
    _report(f"this environment ({as_is})", best["as is"])
    assert best["cached"]["validate (demo)"] < best["cached"]["list (after a run)"] + 0.05
    cached = best["cached"]
    assert all(_met(cached[name], cached["python -c pass"])
               for name in ("validate (demo)", "list (fresh demo)", "list (after a run)"))
