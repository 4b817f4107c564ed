"""The cache of fast-path reads (store/definitions/defcache.py): written only by recording
commands, keyed by content, and never a different result from reading the files afresh."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.store.config import resolve_project
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.definitions.fastyaml import FastReader
from tests.conftest import FAKE_CLI, cli_environ
from tests.test_fast_definitions import load
from tests.test_validate_corpus import VALID, make_project

REPO = Path(__file__).resolve().parent.parent
FAST = definitions._fast()

pytestmark = pytest.mark.skipif(not FastReader.available(), reason="no C parser: no cache")


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = cli_environ()
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
    texts = [orjson.loads(entry["data"]).get("id") for entry in cached.values()]
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


# --- built routines: kept, verified, and never a different result -------------------------------


SELF_CONTAINED = {  # routines without a Job action: every field and action kind the cache keeps
    # (no float: the fast path declines floats, so a file with one is read the slow way)
    "rtn-c-cron": 'name: Cron\ntrigger: {cron: "5 4 * * 1-5", timezone: Asia/Tokyo}\n'
                  "action: {kind: specdojo, args: [index, build]}\n",
    "rtn-c-policy": "description: every field\nenabled: false\ninterval: 90m\n"
                    "policy: {missed_run: all, on_interrupted: resume, on_failure: hold, "
                    "starting_deadline: 90s, timeout: 2h, notify: {on: [failure, recovered], "
                    "command: ./tell.sh}}\naction: {kind: exec-resume, parallel: 3, "
                    "timeout: 10m}\n",
    "rtn-c-list": 'trigger: {cron: "0 */6 * * *", timezone: Europe/Berlin}\naction:\n'
                  "  - kind: exec-auto\n    strategy: fifo\n    loop: true\n    max_rounds: 4\n"
                  "  - kind: exec-cycle\n    parallel: 2\n  - kind: exec-resume\n"
                  "  - kind: register\n    limit: 9\n",
    "rtn-c-skip": "interval: 1w\npolicy: {missed_run: skip, retry: {attempts: 4, delay: 1m, "
                  "backoff: 3, max_delay: 2h}}\n"
                  "action: {kind: register, filter: {statuses: [open, review]}}\n",
}


def self_contained(tmp_path: Path) -> Path:
    root = project(tmp_path)
    for name, text in SELF_CONTAINED.items():
        (root / "routines" / f"{name}.yaml").write_text(f"id: {name}\n{text}")
    return root


def built_loads(root: Path) -> int:
    """How many routine files the rules build in one load (the rest come from the cache)."""
    from specdojo_routine.core import routine_rules  # where the loader takes it from

    calls = []
    real = routine_rules.build_routine

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    routine_rules.build_routine = spy  # type: ignore[assignment]
    try:
        definitions.load_definitions(resolve_project(root, env={}))
    finally:
        routine_rules.build_routine = real  # type: ignore[assignment]
    return len(calls)


def test_a_warm_load_neither_parses_nor_builds_a_self_contained_routine(tmp_path: Path) -> None:
    """After a run, a routine without a Job action is taken as built; one naming a Job (its
    checks read the Job Definitions) and the file with a problem (twice: on fast-path data,
    then on located data for its messages) are built again."""
    root = self_contained(tmp_path)
    files = len(list((root / "routines").rglob("rtn-*.y*ml")))
    naming_a_job = sum("kind: job" in p.read_text() for p in (root / "routines").rglob("rtn-*"))
    cli(root, "run", "--due")
    assert (1, naming_a_job + 2) == (parses(root), built_loads(root))
    assert files >= naming_a_job + 6
    assert load(root, pure=False) == load(root, pure=True)


def test_built_routines_round_trip_exactly(tmp_path: Path) -> None:
    """What the cache keeps of each valid fixture and demo routine decodes to an equal one."""
    from specdojo_routine.store.definitions import routine_json

    roots = [self_contained(tmp_path / "valid"), REPO / "fixtures" / "demo"]
    routines = [r for root in roots for r in load(root, pure=True).routines]
    kept = [r for r in routines if routine_json.cacheable(r)]
    decoder = routine_json.Decoder()
    assert (kept, True) == ([decoder.decode(orjson.loads(orjson.dumps(routine_json.encode(r))))
                             for r in kept], len(kept) >= 5)


def _rewrite(root: Path, change: Any, *, checksum: bool) -> None:
    """Change the cache's document; recompute its checksum (a forger's edit) or not."""
    from specdojo_routine.store.definitions.defcache import DefinitionCache

    doc = orjson.loads(cache_file(root).read_bytes())
    change(doc["files"])
    if checksum:
        cache = DefinitionCache.__new__(DefinitionCache)
        cache._print = doc["fingerprint"]
        doc["checksum"] = cache._checksum(doc["files"], doc["next"])
    cache_file(root).write_bytes(orjson.dumps(doc))


def _routine_entries(files: dict[str, Any]) -> list[list[Any]]:
    """The routines the cache holds (each entry keeps its routine as a JSON text)."""
    return [orjson.loads(entry["routine"]) for entry in files.values() if "routine" in entry]


def _edit_routines(files: dict[str, Any], change: Any) -> None:
    for entry in files.values():
        if "routine" in entry:
            routine = orjson.loads(entry["routine"])
            change(routine)
            entry["routine"] = orjson.dumps(routine).decode()


def test_a_hand_edited_cache_is_ignored_as_a_whole(tmp_path: Path) -> None:
    """An edit that leaves the checksum stale (a routine's arguments changed in the cache):
    every file is read and checked afresh; the result is the files', not the cache's."""
    root = self_contained(tmp_path)
    cli(root, "run", "--due")

    def edit(files: dict[str, Any]) -> None:
        _edit_routines(files, lambda routine: routine.__setitem__(3, "renamed in the cache"))

    _rewrite(root, edit, checksum=False)
    fast = load(root, pure=False)
    assert (True, fast) == (parses(root) >= 8, load(root, pure=True))
    assert all(r.name != "renamed in the cache" for r in fast.routines)


@pytest.mark.parametrize("damage", ["type", "shape", "path", "zone", "machine-zone", "kind",
                                    "text"])
def test_an_entry_that_does_not_decode_exactly_is_built_again(damage: str,
                                                              tmp_path: Path) -> None:
    """A consistent checksum is not enough: an entry with a wrong type, a wrong shape, another
    file's path, a time zone this machine lacks or one that means the machine's own zone
    (``localtime``, which a routine may not name), an unknown action kind or a text that is
    not JSON is read afresh."""
    root = self_contained(tmp_path)
    cold = built_loads(root)
    cli(root, "run", "--due")
    warm = built_loads(root)
    zoned = sum(routine[7] is not None for routine in _routine_entries(
        orjson.loads(cache_file(root).read_bytes())["files"]))  # routines with a time zone
    changes = {
        "type": lambda r: r.__setitem__(5, "yes"),  # enabled
        "shape": lambda r: r.append(None),
        "path": lambda r: r.__setitem__(1, "routines/rtn-elsewhere.yaml"),
        "zone": lambda r: r.__setitem__(7, [r[7][0], "Mars/Olympus"]) if r[7] else None,
        "machine-zone": lambda r: r.__setitem__(7, [r[7][0], "localtime"]) if r[7] else None,
        "kind": lambda r: r.__setitem__(10, '[["exec-everything"]]'),
    }

    def edit(files: dict[str, Any]) -> None:
        if damage == "text":  # not JSON at all
            for entry in files.values():
                if "routine" in entry:
                    entry["routine"] = entry["routine"][:-1]
            return
        _edit_routines(files, changes[damage])

    _rewrite(root, edit, checksum=True)
    fast = load(root, pure=False)
    assert fast == load(root, pure=True)
    rezoned = damage in ("zone", "machine-zone")
    assert (True, built_loads(root)) == (zoned >= 3, warm + zoned if rezoned else cold)


def test_a_duplicate_id_among_cached_routines_is_still_found_and_located(tmp_path: Path) -> None:
    """Two files of one name in two folders: each is a valid routine alone (and cached), the
    second is a duplicate, found on every load and located by a slow read of the file."""
    root = make_project(tmp_path / "project")
    for folder in ("a", "b"):
        (root / "routines" / folder).mkdir()
        (root / "routines" / folder / "rtn-twin.yaml").write_text(
            f"name: {folder}\n\n   \nid: rtn-twin\ninterval: 1h\naction: {{kind: exec-auto}}\n")
    cli(root, "run", "--due")
    assert 0 == built_loads(root)  # both taken whole from the cache
    fast, pure = load(root, pure=False), load(root, pure=True)
    messages = [str(p) for p in fast.problems]
    assert (fast, True) == (pure, any(m.startswith("routines/b/rtn-twin.yaml:4:5: duplicate")
                                      for m in messages))


def test_zone_rules_are_read_where_zoneinfo_reads_them(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A remembered occurrence is keyed by the data zoneinfo reads for its zone: the first file
    of that name on ``zoneinfo.TZPATH``, else the tzdata package's; a zone whose data cannot be
    found has nothing remembered (every call works its occurrences out)."""
    import zoneinfo

    import tzdata

    from specdojo_routine.store.definitions import defcache

    packaged = Path(tzdata.__file__).parent / "zoneinfo" / "Asia" / "Tokyo"
    monkeypatch.setattr(zoneinfo, "TZPATH", (str(tmp_path / "zones"),))
    assert packaged == defcache._zone_file("Asia/Tokyo")
    (tmp_path / "zones" / "Asia").mkdir(parents=True)
    (tmp_path / "zones" / "Asia" / "Tokyo").write_bytes(packaged.read_bytes())
    assert tmp_path / "zones" / "Asia" / "Tokyo" == defcache._zone_file("Asia/Tokyo")
    assert None is defcache._zone_file("Nowhere/Atlantis")
    cache = defcache.DefinitionCache(tmp_path / "routines")
    cursor = "2026-12-07T00:00:00.000Z"
    for zone in ("Asia/Tokyo", "Nowhere/Atlantis"):
        cache.learn_next("0 9 * * *", zone, cursor, "2026-12-08T00:00:00.000Z")
    assert "2026-12-08T00:00:00.000Z" == cache.next_after("0 9 * * *", "Asia/Tokyo", cursor)
    assert defcache.UNKNOWN == cache.next_after("0 9 * * *", "Nowhere/Atlantis", cursor)
