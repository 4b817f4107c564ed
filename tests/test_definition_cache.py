"""The cache of fast-path reads (store/defcache.py): written only by recording commands, keyed
by content, and never a different result from reading the files afresh."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.store import definitions
from specdojo_routine.store.config import resolve_project
from specdojo_routine.store.fastyaml import FastReader
from tests.conftest import FAKE_CLI
from tests.test_fast_definitions import load
from tests.test_validate_corpus import VALID, make_project

REPO = Path(__file__).resolve().parent.parent
FAST = definitions._FAST

pytestmark = pytest.mark.skipif(not FastReader.available(), reason="no C parser: no cache")


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SPECDOJO_PROJECT"}
    env["SPECDOJO_CLI"] = str(FAKE_CLI)
    return subprocess.run([sys.executable, "-m", "specdojo_routine", *args, "--root", str(root)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


def cache_file(root: Path) -> Path:
    return root / "routines" / ".cache" / "definitions.json"


def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "project", VALID)
    (root / "routines" / "rtn-broken.yaml").write_text(
        "id: rtn-broken\ninterval: 1h\naction: {kind: nope}\n")
    return root


def parses(root: Path) -> int:
    """How many files the fast parser reads in one load."""
    calls = []
    real = FAST.load

    def spy(source: str) -> Any:
        calls.append(source)
        return real(source)

    FAST.load = spy  # type: ignore[method-assign]
    try:
        definitions.load_definitions(resolve_project(root, env={}))
    finally:
        FAST.load = real  # type: ignore[method-assign]
    return len(calls)


def test_only_a_recording_run_writes_the_cache(tmp_path: Path) -> None:
    """validate, list, job validate and run --dry-run write nothing; run --due writes it."""
    root = project(tmp_path)
    for args in (["validate"], ["list"], ["list", "--json"], ["job", "validate"],
                 ["run", "--due", "--dry-run"]):
        cli(root, *args)
    before = cache_file(root).exists()
    cli(root, "run", "--due")
    assert (False, True) == (before, cache_file(root).is_file())


def test_a_second_load_parses_only_the_file_with_a_problem(tmp_path: Path) -> None:
    """After a run, only rtn-broken (never cached) is parsed again; same result."""
    root = project(tmp_path)
    first = parses(root)
    cli(root, "run", "--due")
    again = parses(root)
    assert (True, 1) == (first >= 8, again)
    assert load(root, pure=False) == load(root, pure=True)


def test_files_with_problems_are_never_cached(tmp_path: Path) -> None:
    root = project(tmp_path)
    cli(root, "run", "--due")
    cached = orjson.loads(cache_file(root).read_bytes())["files"]
    texts = [entry["data"].get("id") for entry in cached.values()]
    assert ("rtn-broken" in texts, len(texts) >= 8) == (False, True)


def test_an_edited_file_is_read_again_and_its_old_entry_dropped(tmp_path: Path) -> None:
    root = project(tmp_path)
    cli(root, "run", "--due")
    old = set(orjson.loads(cache_file(root).read_bytes())["files"])
    target = next((root / "routines").glob("rtn-*.yaml"))
    if target.name == "rtn-broken.yaml":
        target = sorted((root / "routines").glob("rtn-*.yaml"))[1]
    target.write_text(target.read_text() + "description: edited\n")
    assert 2 == parses(root)  # the edited file and rtn-broken
    cli(root, "run", "--due")
    new = set(orjson.loads(cache_file(root).read_bytes())["files"])
    assert (1, 1) == (len(old - new), len(new - old))
    assert load(root, pure=False) == load(root, pure=True)


def test_rules_still_run_on_cached_data(tmp_path: Path) -> None:
    """A routine read from the cache is checked again: once the Job it names is gone, the
    error is reported, located, exactly as without the cache."""
    root = make_project(tmp_path / "project")
    (root / "jobs" / "job-report.yaml").write_text(
        "id: job-report\nname: Report\ntask: {mode: command, command: echo hi}\n"
        'run: {idempotency_key: "{{job_id}}"}\n')
    (root / "routines" / "rtn-report.yaml").write_text(
        "id: rtn-report\ninterval: 1h\naction:\n  kind: job\n  job: job-report\n")
    cli(root, "run", "--due")
    (root / "jobs" / "job-report.yaml").unlink()
    fast, pure = load(root, pure=False), load(root, pure=True)
    assert (fast, ["routines/rtn-report.yaml:5:8"]) == (
        pure, [f"{p.path}:{p.line}:{p.col}" for p in fast.errors])


@pytest.mark.parametrize("garbage", [b"not json", b"[]", b'{"fingerprint": "x", "files": {}}',
                                     b'{"files": {"k": {"data": 1}}}'])
def test_a_damaged_or_foreign_cache_is_ignored(garbage: bytes, tmp_path: Path) -> None:
    root = project(tmp_path)
    cache_file(root).parent.mkdir(parents=True)
    cache_file(root).write_bytes(garbage)
    assert (True, True) == (parses(root) >= 8, load(root, pure=False) == load(root, pure=True))
    cli(root, "run", "--due")
    assert 1 == parses(root)  # rtn-broken only


def test_a_cache_from_another_parser_version_is_ignored(tmp_path: Path) -> None:
    root = project(tmp_path)
    cli(root, "run", "--due")
    doc = orjson.loads(cache_file(root).read_bytes())
    doc["fingerprint"] = "0" * 64
    cache_file(root).write_bytes(orjson.dumps(doc))
    assert parses(root) >= 8


def test_a_file_that_holds_a_secret_is_not_copied_into_the_cache(tmp_path: Path) -> None:
    """SPEC §7.5: a token written in a definition stays there; the cache holds no copy."""
    root = project(tmp_path)
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    (root / "routines" / "rtn-token.yaml").write_text(
        f"id: rtn-token\ninterval: 1h\naction: {{kind: specdojo, args: [notify, {token}]}}\n")
    cli(root, "run", "--due")
    assert (True, False) == (cache_file(root).is_file(),
                             token.encode() in cache_file(root).read_bytes())
