"""The code's fingerprint (store/codeprint.py), which every private cache records: it covers
what the caches' meaning depends on, found by folder, and one process computes it once."""

from __future__ import annotations

import shutil
from pathlib import Path

from specdojo_routine.store import codeprint
from tests.viewhelper import REPO

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
