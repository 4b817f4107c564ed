"""The demo project after a real run, its views, and a CLI run that shows which chain it read.

Used by tests/test_views_portable.py and tests/test_views_unreadable.py. Run as a script,
``python tests/viewhelper.py OUT ARGS...`` runs the CLI command ``ARGS`` in this process with
:func:`chain.verified_chunks` wrapped, and writes to ``OUT`` (JSON) the byte offset every read
of the routine ledger started at: ``0`` is a chain verified from line 1, a later offset a fold
that continued from a view, no entry a view reused as it is.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.clirun import run_cli

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent
#: The routines dir of the demo project (``R``).
R = Path("routines")
T1, T2, T3 = "2026-08-07T08:00:00Z", "2026-08-07T08:10:00Z", "2026-08-07T08:20:00Z"


def env_for(root: Path) -> dict[str, str]:
    """The test run's environment for a CLI subprocess in ``root`` (the demo's fake SpecDojo
    CLI, its log outside the project)."""
    env = {k: v for k, v in os.environ.items() if k != "SPECDOJO_PROJECT"}
    env.update(SPECDOJO_CLI=str(root / "bin" / "fake-specdojo"),
               FAKE_SPECDOJO_LOG=str(root.parent / f"{root.name}-calls.log"))
    return env


def cli(root: Path, *args: str, timeout: float | None = None
        ) -> subprocess.CompletedProcess[str]:
    """``python -m specdojo_routine ARGS --root ROOT`` (:func:`tests.clirun.run_cli`)."""
    return run_cli([*args, "--root", str(root)], cwd=root, env=env_for(root), timeout=timeout)


def spied(root: Path, *args: str, timeout: float = 120) -> tuple[int, list[int]]:
    """(exit code, offsets of every routine-ledger read) of the CLI command ``ARGS`` run in a
    fresh process (nothing this test process did is remembered there)."""
    out = root.parent / f"{root.name}-spy.json"
    done = subprocess.run([sys.executable, str(HERE), str(out), *args, "--root", str(root)],
                          cwd=root, env=env_for(root), capture_output=True, text=True,
                          timeout=timeout)
    assert out.exists(), done.stderr
    offsets: list[int] = orjson.loads(out.read_bytes())
    out.unlink()
    return done.returncode, offsets


def demo_after_run(root: Path) -> Path:
    """The demo project copied to ``root`` after one real ``run --due`` at :data:`T1` (four
    views: routine-state, two run views, job-state)."""
    from tests.conftest import copy_source

    copy_source(REPO / "fixtures" / "demo", root)
    done = cli(root, "run", "--due", "--now", T1)
    assert 0 == done.returncode, done.stderr
    return root


def cp_a(src: Path, dest: Path) -> Path:
    """``cp -a SRC DEST``: a copy with times and modes kept, as an operator makes one."""
    subprocess.run(["cp", "-a", str(src), str(dest)], check=True)
    return dest


def ledger(root: Path) -> Path:
    return root / R / "generated" / "routine-runs.jsonl"


def routine_state(root: Path) -> Path:
    return root / R / "generated" / "routine-state.json"


def snapshot(root: Path) -> Path:
    return root / R / ".cache" / "routine-state.snapshot.json"


def job_state(root: Path) -> Path:
    return root / "execution" / "jobs" / "generated" / "job-state.json"


def runs_dir(root: Path) -> Path:
    return root / "execution" / "jobs" / "runs"


def view_files(root: Path) -> list[Path]:
    """Every public view of the project: routine-state, each run's view, job-state."""
    return [routine_state(root), *sorted(runs_dir(root).glob("*.json")), job_state(root)]


def views_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in view_files(root)}


def fresh_fold(root: Path) -> dict[str, bytes]:
    """Every view a fold of the project's ledgers from scratch gives (in memory)."""
    from specdojo_routine.store.config import resolve_project
    from specdojo_routine.store.ledger import views

    paths = resolve_project(root)
    found: dict[str, Any] = views.replay(paths.routine_ledger,
                                         *sorted(paths.runs_dir.glob("*.jsonl")))
    where = {"routine-state.json": paths.routine_state, "job-state.json": paths.job_state}
    return {paths.rel(where.get(name) or paths.runs_dir / name.removeprefix("runs/")):
            views.render(doc) for name, doc in found.items()}


def _spy(out: Path, argv: list[str]) -> int:
    from specdojo_routine.store.ledger import chain

    offsets: list[int] = []
    real = chain.verified_chunks

    def recording(f: Any, path: Path, offset: int, end: int, **kw: Any) -> Any:
        if Path(path).name == "routine-runs.jsonl":
            offsets.append(offset)
        return (yield from real(f, path, offset, end, **kw))

    chain.verified_chunks = recording  # type: ignore[assignment]
    from specdojo_routine.cli.main import main

    try:
        return main(argv)
    finally:
        out.write_bytes(orjson.dumps(offsets))


if __name__ == "__main__":
    sys.exit(_spy(Path(sys.argv[1]), sys.argv[2:]))
