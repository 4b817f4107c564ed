"""A project with a real week of history, made by the product itself.

Four routines - a cron Job routine whose command fails every night, a cron Job routine that
succeeds once a week, an interval routine delegating a SpecDojo call that succeeds and one whose
call fails - are run by the CLI in subprocesses, ``run --due --now T`` with ``T`` stepping twelve
hours at a time through the week of 2026-08-03 (a Monday). The project is built once per test
session (once per worker under xdist) into a temp dir; a test that records anything works on
its own copy (:func:`week_copy`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.clirun import run_cli

START = datetime(2026, 8, 3, 0, 0, tzinfo=UTC)
END = datetime(2026, 8, 10, 0, 0, tzinfo=UTC)
STEP = timedelta(hours=12)
#: A time after the last step, at which the week's state is judged (nothing is due at once).
AFTER = "2026-08-10T00:30:00Z"
SECRET = "s3cr3t-token-value-42"

FAKE_CLI = """\
#!/bin/sh
# The SpecDojo CLI of the week: `cleanup` fails (and leaks a token to stderr), anything else
# succeeds.
case "$1" in
  cleanup)
    echo "cleaning /srv/cache"
    echo "using token $WEEK_API_TOKEN" >&2
    echo "ERROR: quota exceeded on /srv/cache" >&2
    exit 4 ;;
  *)
    echo "synced: $*"
    exit 0 ;;
esac
"""

ROUTINES = {
    "rtn-nightly-export": """\
        name: Nightly export
        trigger: {cron: "0 2 * * *", timezone: Europe/Berlin}
        action: {kind: job, job: job-export, inputs: {period: "{{scheduled_at}}"}}
        """,
    "rtn-weekly-report": """\
        name: Weekly report
        trigger: {cron: "0 17 * * 5", timezone: Asia/Tokyo}
        action: {kind: job, job: job-report, inputs: {period: "{{scheduled_at | iso_week}}"}}
        """,
    "rtn-sync": """\
        interval: 12h
        action: {kind: specdojo, args: [sync, index]}
        """,
    "rtn-cleanup": """\
        interval: 1d
        action: {kind: specdojo, args: [cleanup]}
        """,
}
JOBS = {
    "job-export": ("Export", 'echo "exporting {{inputs.period}}"; '
                   'echo "ERROR: disk /var/export full" >&2; exit 3'),
    "job-report": ("Report", 'echo "report {{inputs.period}} written"'),
}


class Week:
    """The week's project: its root and the environment its CLI calls need."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("SPECDOJO_PROJECT", "SPECDOJO_ROUTINE_QUIET")}
        env.update(SPECDOJO_CLI=str(self.root / "fake-specdojo"), WEEK_API_TOKEN=SECRET)
        env.update(extra)
        return env

    def cli(self, *args: str, env: Mapping[str, str] | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess[str]:
        """``python -m specdojo_routine ARGS --root ROOT`` (:func:`tests.clirun.run_cli`)."""
        return run_cli([*args, "--root", str(self.root)], cwd=self.root,
                       env=env or self.env(), timeout=timeout)

    def json(self, *args: str) -> Any:
        return orjson.loads(self.cli(*args).stdout)

    @property
    def ledger(self) -> Path:
        return self.root / "routines" / "generated" / "routine-runs.jsonl"

    def events(self) -> list[dict[str, Any]]:
        return [orjson.loads(line) for line in self.ledger.read_bytes().splitlines()]


def write_project(root: Path) -> Week:
    """The week's project, never run."""
    (root / ".specdojo").mkdir(parents=True)
    (root / ".specdojo" / "specdojo.config.json").write_bytes(orjson.dumps({
        "version": 1, "current_project": "demo",
        "projects": {"demo": {"routines_path": "routines", "jobs_path": "jobs",
                              "execution_path": "execution"}}}))
    (root / "routines").mkdir()
    (root / "jobs").mkdir()
    for rid, body in ROUTINES.items():
        (root / "routines" / f"{rid}.yaml").write_text(f"id: {rid}\n" + textwrap.dedent(body))
    for jid, (name, command) in JOBS.items():
        (root / "jobs" / f"{jid}.yaml").write_text(
            f"id: {jid}\nname: {name}\ninputs:\n  period: {{type: string, required: true}}\n"
            f"task:\n  mode: command\n  command: '{command}'\n"
            'run:\n  idempotency_key: "{{job_id}}:{{inputs.period}}"\n')
    cli = root / "fake-specdojo"
    cli.write_text(FAKE_CLI)
    cli.chmod(0o755)
    return Week(root)


def build(root: Path) -> Week:
    """Write the project and run its week, step by step, with the CLI."""
    week = write_project(root)
    at = START
    while at <= END:
        done = week.cli("run", "--due", "--now", at.strftime("%Y-%m-%dT%H:%M:%SZ"))
        assert done.returncode in (0, 1), done.stderr
        at += STEP
    return week


@pytest.fixture(scope="session")
def week_built(tmp_path_factory: pytest.TempPathFactory) -> Week:
    """The week, built once per session (per xdist worker); never write into it."""
    return build(tmp_path_factory.mktemp("week") / "proj")


@pytest.fixture
def week(week_built: Week) -> Week:
    """The shared week, read-only."""
    return week_built


@pytest.fixture
def week_copy(week_built: Week, tmp_path: Path) -> Week:
    """A private copy of the week, for tests that record something."""
    shutil.copytree(week_built.root, tmp_path / "proj", symlinks=True)
    return Week(tmp_path / "proj")
