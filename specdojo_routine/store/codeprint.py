"""The fingerprint of the code whose results this machine keeps in its private caches.

Five machine-local files only spare work: the definitions cache (``R/.cache/definitions.json``),
the routine view's proof (``R/.cache/routine-state.snapshot.json``), ``job-state.json``'s proof
(``E/.cache/job-state.snapshot.json``), the import check's stamps
(``E/.cache/job-runs/<job_id>.json``) and retention's facts (``E/.cache/retention.json``). Each
holds what some code read, folded or decided; after an upgrade that changes that code, what
the old code wrote must not be trusted - a view the old fold published would otherwise be
carried on incrementally until someone runs ``fold``. So each file records
:func:`fingerprint`, and one with another fingerprint is treated exactly as a missing or
damaged one: the work is done once again and the file written anew.

One fingerprint covers them all: every module of ``core/`` and of ``store/`` (its wings
included, found by folder, so a new module is covered without a list to keep), the modules of
retention that read the facts it caches (``app/prune*.py``, ``execute/prunefiles.py``),
ruamel's and croniter's code (their main files, which name their versions) and Python's
version. A change in any of them costs each cache one recomputation, which is cheap and rare;
one fingerprint is computed at most once per process however many caches a command uses.
The views (``routine-state.json``, ``runs/*.json``, ``job-state.json``) never hold it: they
depend on the ledgers' bytes alone (SPEC §5).

The modules are found, not imported: a command the caches serve needs neither ruamel nor
croniter, nor retention's code.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import sys
from pathlib import Path

__all__ = ["COVERED", "compute", "fingerprint"]

#: The package's modules the caches' meaning depends on, as globs under the package folder.
COVERED = ("core/*.py", "store/*.py", "store/*/*.py", "app/prune*.py", "execute/prunefiles.py")
#: The dependencies whose code is hashed too: (module, the file that names its version).
_DEPENDENCIES = (("ruamel.yaml", "__init__.py"), ("croniter", "croniter.py"))


@functools.cache
def fingerprint() -> str:
    """The fingerprint of the installed code (see the module docstring), computed once a
    process."""
    return compute(Path(__file__).parent.parent)


def compute(package: Path) -> str:
    """The fingerprint of the package at ``package`` (the folder of ``specdojo_routine``):
    the sha256 of Python's version and of each covered file's sha256, in a fixed order (an
    unreadable file is left out)."""
    parts = [sys.version]
    modules = [module for pattern in COVERED for module in sorted(package.glob(pattern))]
    for name, main in _DEPENDENCIES:
        found = importlib.util.find_spec(name)
        if found is not None and found.origin is not None:
            modules.append(Path(found.origin).with_name(main))
    for module in modules:
        with contextlib.suppress(OSError):
            parts.append(hashlib.sha256(module.read_bytes()).hexdigest())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()
