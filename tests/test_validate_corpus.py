"""`validate` against the malformed-definition corpus (fixtures/invalid) and hostile files.

Each case under ``fixtures/invalid/<case>/`` is a project fragment (``routines/``, ``jobs/``)
with ``expected.txt`` (the exact stderr lines) and ``summary.txt`` (the stdout line). The test
copies it into a temporary project, runs the real CLI in-process and compares.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from specdojo_routine.cli import main
from tests.conftest import cli_environ, copy_source

REPO = Path(__file__).resolve().parent.parent
INVALID = REPO / "fixtures" / "invalid"
VALID = REPO / "fixtures" / "valid"
DEMO = REPO / "fixtures" / "demo"
CASES = sorted(p.name for p in INVALID.iterdir() if p.is_dir())
CONFIG = {
    "version": 1,
    "current_project": "demo",
    "projects": {
        "demo": {"routines_path": "routines", "jobs_path": "jobs", "execution_path": "execution"}
    },
}


@pytest.fixture(autouse=True)
def _no_project_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """These projects are selected by their config, whatever the caller's shell says."""
    monkeypatch.delenv("SPECDOJO_PROJECT", raising=False)


def make_project(root: Path, case: Path | None = None) -> Path:
    """A project at ``root`` holding the fragment ``case`` (routines/, jobs/)."""
    (root / ".specdojo").mkdir(parents=True)
    (root / ".specdojo" / "specdojo.config.json").write_text(json.dumps(CONFIG))
    for sub in ("routines", "jobs"):
        if case is not None and (case / sub).is_dir():
            copy_source(case / sub, root / sub)
        else:
            (root / sub).mkdir()
    return root


def validate(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    code = main(["validate", "--root", str(root)])
    out, err = capsys.readouterr()
    return code, err.splitlines(), out


def test_the_corpus_is_big_enough() -> None:
    """At least 40 malformed cases, each with its expected output."""
    complete = [c for c in CASES if (INVALID / c / "expected.txt").is_file()
                and (INVALID / c / "summary.txt").is_file()]
    assert (True, CASES) == (len(CASES) >= 40, complete)


@pytest.mark.parametrize("case", CASES)
def test_invalid_case(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exact stderr lines, the summary line and exit code 1; never a traceback."""
    source = INVALID / case
    root = make_project(tmp_path / "project", source)
    code, err, out = validate(root, capsys)
    expected = (source / "expected.txt").read_text(encoding="utf-8").splitlines()
    summary = (source / "summary.txt").read_text(encoding="utf-8")
    assert (expected, summary, 1) == (err, out, code)
    assert "Traceback" not in "\n".join(err) + out


def test_expected_files_agree_with_their_summaries() -> None:
    """Each summary counts exactly the error and warning lines of its expected.txt."""
    mismatched = []
    for case in CASES:
        lines = (INVALID / case / "expected.txt").read_text(encoding="utf-8").splitlines()
        warnings = sum(": warning: " in line for line in lines)
        summary = (INVALID / case / "summary.txt").read_text(encoding="utf-8")
        if f"{len(lines) - warnings} error(s), {warnings} warning(s)" not in summary:
            mismatched.append(case)
    assert [] == mismatched


# --- hostile files generated here (too big or too binary to commit) ---------------------------


def write(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


HOSTILE = {
    "ten-megabytes": (
        "routines/rtn-big.yaml",
        b"id: rtn-big\ninterval: 1h\ndescription: " + b"a" * (10 * 1024 * 1024) + b"\n",
        "routines/rtn-big.yaml:1:1: file is larger than 1048576 bytes; a definition is a small "
        "YAML mapping - is this the right file?",
    ),
    "ten-thousand-brackets": (
        "routines/rtn-deep.yaml",
        b"id: rtn-deep\ninterval: 1h\naction: " + b"[" * 10_000 + b"\n",
        "routines/rtn-deep.yaml:3:72: data is nested deeper than 64 levels",
    ),
    "binary-garbage": (
        "routines/rtn-bin.yaml",
        b"id: rtn-bin\n\x7fELF\x02\x01\x01\x00\x00\x00\x00garbage\xff\xfe\n",
        "routines/rtn-bin.yaml:2:19: file is not valid UTF-8 (byte 0xff); save it as UTF-8",
    ),
    "control-characters": (
        "routines/rtn-ctl.yaml",
        b"id: rtn-ctl\n\x7fELF\x02\x01\x01\x00\x00\x00garbage\n",
        "routines/rtn-ctl.yaml:2:1: YAML parse error: unacceptable character #x007f (special "
        "characters are not allowed)",
    ),
    "invalid-utf8": (
        "jobs/job-latin.yaml",
        b"id: job-latin\nname: caf\xe9\n",
        "jobs/job-latin.yaml:2:10: file is not valid UTF-8 (byte 0xe9); save it as UTF-8",
    ),
    "nul-bytes-only": (
        "jobs/job-zero.yaml",
        b"\x00" * 4096,
        "jobs/job-zero.yaml:1:1: YAML parse error: unacceptable character #x0000 (special "
        "characters are not allowed)",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_file(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Huge, deep, binary or mis-encoded files give one located line, exit 1, no traceback."""
    rel, data, line = HOSTILE[name]
    root = make_project(tmp_path / "project")
    write(root, rel, data)
    code, err, out = validate(root, capsys)
    assert ([line], 1) == (err, code)
    assert out.startswith("Validated: 0 routine(s), 0 job(s), 1 error(s)")


def test_billion_laughs_is_stopped_quickly_and_cheaply(tmp_path: Path) -> None:
    """The alias bomb is refused before it expands: well under a second and 20 MB."""
    from specdojo_routine.store.config import resolve_project
    from specdojo_routine.store.definitions.load import load_definitions

    root = make_project(tmp_path / "project", INVALID / "yaml-billion-laughs")
    tracemalloc.start()
    started = time.perf_counter()
    defs = load_definitions(resolve_project(root, env={}))
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert (1, True, True) == (len(defs.errors), elapsed < 1.0, peak < 20 * 1024 * 1024)


def test_a_wide_alias_fan_out_is_counted_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Many aliases of one big anchor (no nesting) hit the same expansion limit."""
    root = make_project(tmp_path / "project")
    items = ", ".join(["x"] * 1000)
    text = f"id: rtn-fan\ninterval: 1h\nbig: &b [{items}]\nfan: [{', '.join(['*b'] * 200)}]\n"
    write(root, "routines/rtn-fan.yaml", text.encode())
    code, err, _ = validate(root, capsys)
    assert (1, True) == (code, "expands to more than 100000 values" in err[0])


# --- clean definitions -------------------------------------------------------------------------


def test_valid_fixtures_validate_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """fixtures/valid: no problem at all, exit 0."""
    root = make_project(tmp_path / "project", VALID)
    code, err, out = validate(root, capsys)
    assert (0, [], "Validated: 5 routine(s), 3 job(s), 0 error(s), 0 warning(s)\n") == (
        code, err, out
    )


def test_demo_project_validates_clean(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """fixtures/demo is a complete project of its own that validates clean."""
    copy_source(DEMO, tmp_path / "demo")
    code, err, out = validate(tmp_path / "demo", capsys)
    assert (0, [], "Validated: 5 routine(s), 4 job(s), 0 error(s), 0 warning(s)\n") == (
        code, err, out
    )


def test_warnings_alone_exit_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A day-of-month + day-of-week cron is a warning: reported, counted, exit 0."""
    root = make_project(tmp_path / "project")
    write(root, "routines/rtn-f13.yaml",
          b'id: rtn-f13\ntrigger: {cron: "0 0 13 * 5", timezone: UTC}\naction: {kind: exec-auto}\n')
    code, err, out = validate(root, capsys)
    assert (0, 1, "Validated: 1 routine(s), 0 job(s), 0 error(s), 1 warning(s)\n") == (
        code, len(err), out
    )
    assert err[0].startswith("routines/rtn-f13.yaml:2:17: warning: cron \"0 0 13 * 5\"")


def test_job_validate_ignores_routines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`job validate` checks Job Definitions only; a broken routine does not count."""
    root = make_project(tmp_path / "project", INVALID / "action-job-inputs")
    code = main(["job", "validate", "--root", str(root)])
    out, err = capsys.readouterr()
    assert (0, "", "Validated: 1 job(s), 0 error(s), 0 warning(s)\n") == (
        code, err, out
    )


# --- a few through `python -m specdojo_routine` in a subprocess --------------------------------


def run_module(root: Path) -> subprocess.CompletedProcess[str]:
    env = cli_environ()
    return subprocess.run(
        [sys.executable, "-m", "specdojo_routine", "validate", "--root", str(root)],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=60, check=False,
    )


@pytest.mark.parametrize("case", ["action-unknown-kind", "yaml-python-tag", "job-templates"])
def test_invalid_case_in_a_subprocess(case: str, tmp_path: Path) -> None:
    """The installed entry point prints the same lines and exits 1."""
    root = make_project(tmp_path / "project", INVALID / case)
    done = run_module(root)
    expected = (INVALID / case / "expected.txt").read_text(encoding="utf-8").splitlines()
    summary = (INVALID / case / "summary.txt").read_text(encoding="utf-8")
    assert (expected, summary, 1) == (done.stderr.splitlines(), done.stdout, done.returncode)


def test_hostile_file_in_a_subprocess(tmp_path: Path) -> None:
    """Deep nesting through the real process: one line, exit 1, no traceback."""
    root = make_project(tmp_path / "project")
    rel, data, line = HOSTILE["ten-thousand-brackets"]
    write(root, rel, data)
    done = run_module(root)
    assert ([line], 1, False) == (
        done.stderr.splitlines(), done.returncode, "Traceback" in done.stderr
    )


def test_demo_in_a_subprocess_exits_zero() -> None:
    """The demo validates clean through the real process."""
    done = run_module(DEMO)
    assert (0, "") == (done.returncode, done.stderr)


# --- the demo project --------------------------------------------------------------------------

FAKE = DEMO / "bin" / "fake-specdojo"


def run_fake(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(FAKE), *args], capture_output=True, text=True, timeout=30,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
                          check=False)


def test_fake_specdojo_logs_its_arguments_on_one_line(tmp_path: Path) -> None:
    """Each call appends its argv, space-joined, as one line of $FAKE_SPECDOJO_LOG."""
    log = tmp_path / "calls.log"
    run_fake(["index", "build", "--project", "demo"], FAKE_SPECDOJO_LOG=str(log))
    run_fake(["exec", "resume", "--due"], FAKE_SPECDOJO_LOG=str(log))
    assert "index build --project demo\nexec resume --due\n" == log.read_text()


def test_fake_specdojo_exits_with_the_requested_code() -> None:
    """$FAKE_SPECDOJO_EXIT sets the exit code (75 = busy); the default is 0."""
    assert (75, 0) == (run_fake(["x"], FAKE_SPECDOJO_EXIT="75").returncode,
                       run_fake(["x"]).returncode)


def test_fake_specdojo_without_a_log_still_runs() -> None:
    """Without $FAKE_SPECDOJO_LOG nothing is written and the call succeeds."""
    done = run_fake(["index", "build"])
    assert (0, "fake-specdojo: index build\n") == (done.returncode, done.stdout)


def test_demo_has_an_interval_routine_due_on_a_fresh_project() -> None:
    """rtn-heartbeat (interval) is due when nothing has run yet, whatever the time."""
    from datetime import UTC, datetime

    from specdojo_routine.core.schedule import due_occurrences
    from specdojo_routine.store.config import resolve_project
    from specdojo_routine.store.definitions.load import load_definitions

    routine = load_definitions(resolve_project(DEMO, env={})).routine("rtn-heartbeat")
    assert routine is not None and routine.interval is not None
    now = datetime(2031, 1, 2, 3, 4, tzinfo=UTC)
    due = due_occurrences(routine, last_run=None, last_scheduled_for=None, now=now)
    assert [now] == [occurrence.scheduled_for for occurrence in due]


def test_demo_runs_end_to_end_with_the_fake_cli(tmp_path: Path) -> None:
    """`run --due` on a fresh copy (source files only, never the state a run of the README's
    demo left in fixtures/): exit 0, the Jobs write only under execution/, the delegated calls
    reach bin/fake-specdojo."""
    root = tmp_path / "demo"
    source = copy_source(DEMO, root)
    log = tmp_path / "calls.log"
    env = cli_environ()
    env.update(SPECDOJO_CLI=str(root / "bin" / "fake-specdojo"), FAKE_SPECDOJO_LOG=str(log))
    done = subprocess.run(
        [sys.executable, "-m", "specdojo_routine", "run", "--due", "--root", str(root)],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=120, check=False,
    )
    new = sorted(set(_files(root)) - set(source))
    outside = [rel for rel in new if not rel.startswith(RUNTIME_DIRS)]
    assert (0, [], True, True) == (
        done.returncode, outside, "index build --project demo" in log.read_text(),
        "execution/demo/heartbeat.log" in new,
    )


def test_demo_config_carries_schedule_path_and_still_validates(tmp_path: Path) -> None:
    """SPEC §10 (7): the demo project's config carries `schedule_path` for its project (so the
    upstream CLI accepts it), and a copy of the demo with that config validates clean through
    `python -m specdojo_routine validate`."""
    root = tmp_path / "demo"
    copy_source(DEMO, root)
    config = json.loads((root / ".specdojo" / "specdojo.config.json").read_text("utf-8"))
    entry = config["projects"][config["current_project"]]
    schedule_path = entry.get("schedule_path")
    assert isinstance(schedule_path, str) and schedule_path, entry
    done = run_module(root)
    assert (0, "") == (done.returncode, done.stderr)
    assert done.stdout.startswith("Validated: ") and " 0 error(s)" in done.stdout


RUNTIME_DIRS = ("execution/", "routines/generated/", "routines/.locks/", "routines/.cache/")


def _files(root: Path) -> list[str]:
    return [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
