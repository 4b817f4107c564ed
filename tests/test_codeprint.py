"""The code's fingerprint (store/codeprint.py), which every private cache records: it covers
what the caches' meaning depends on, found by folder, and one process computes it once."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from specdojo_routine.store import codeprint
from specdojo_routine.store.definitions.fastyaml import FastReader
from tests.viewhelper import REPO, T1, env_for

PACKAGE = REPO / "specdojo_routine"


def test_the_fingerprint_covers_the_caches_code_by_folder(tmp_path: Path) -> None:
    """A module added to core/, store/ or any store wing, or a change to retention's modules,
    changes the fingerprint: folders are hashed, not a list of names someone must remember to
    extend; a module elsewhere (cli/) does not. (A copy of the package: a probe in the source
    tree would change the fingerprint other workers see.)"""
    copy = tmp_path / "specdojo_routine"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert codeprint.fingerprint() == codeprint.compute(copy)
    for probe in ("core/_probe.py", "store/_probe.py", "store/definitions/_probe.py",
                  "store/ledger/_probe.py", "store/locks/_probe.py", "app/prune_probe.py"):
        (copy / probe).write_text("X = 1\n", encoding="utf-8")
        assert codeprint.fingerprint() != codeprint.compute(copy), probe
        (copy / probe).unlink()
    prunefiles = copy / "execute" / "prunefiles.py"
    prunefiles.write_bytes(prunefiles.read_bytes() + b"\n")
    assert codeprint.fingerprint() != codeprint.compute(copy)
    shutil.copy2(PACKAGE / "execute" / "prunefiles.py", prunefiles)
    (copy / "cli" / "_probe.py").write_text("X = 1\n", encoding="utf-8")
    assert codeprint.fingerprint() == codeprint.compute(copy)


COUNTING = """
import sys
from specdojo_routine.store import codeprint
real, calls = codeprint.compute, []
codeprint.compute = lambda package: calls.append(package) or real(package)
from specdojo_routine.cli.main import main
code = main(sys.argv[1:])
print(len(calls))
sys.exit(code)
"""


@pytest.mark.skipif(not FastReader.available(), reason="no C parser: no definitions cache")
def test_one_process_computes_the_fingerprint_once(tmp_path: Path) -> None:
    """`run --due` of the demo with retention.auto writes all four caches - definitions, the
    routine view's snapshot, the import check's stamps, retention's facts - each with the
    fingerprint; the next call reads all four: each process hashed the code once."""
    from tests.conftest import copy_source

    root = tmp_path / "demo"
    copy_source(REPO / "fixtures" / "demo", root)
    config = root / ".specdojo" / "specdojo.config.json"
    doc = orjson.loads(config.read_bytes())
    doc["projects"]["demo"]["retention"] = {"keep_days": 90, "keep_runs": 50, "auto": True}
    config.write_bytes(orjson.dumps(doc))
    for now in (T1, "2026-08-07T08:01:00Z"):
        done = subprocess.run([sys.executable, "-c", COUNTING, "run", "--due", "--now", now,
                               "--root", str(root)], cwd=root, env=env_for(root),
                              capture_output=True, text=True, timeout=120, check=False)
        assert (0, "1") == (done.returncode, done.stdout.splitlines()[-1]), done.stderr
    cache = root / "routines" / ".cache"
    written = {"definitions": orjson.loads((cache / "definitions.json").read_bytes())
               ["fingerprint"],
               "snapshot": orjson.loads((cache / "routine-state.snapshot.json").read_bytes())
               ["code"],
               "retention": orjson.loads((root / "execution" / ".cache" / "retention.json")
                                         .read_bytes())["code"]}
    for stamps in (root / "execution" / ".cache" / "job-runs").glob("*.json"):
        written[stamps.stem] = orjson.loads(stamps.read_bytes())["code"]
    assert len(written) >= 4
    assert {codeprint.fingerprint()} == set(written.values())
