"""A project with minute-by-minute history made by the product's own run handler.

Used by ``test_bench_retention.py``; run as a script it builds one project (so a long history
can be made once, in the background, and reused by the benchmark):

    python tests/bench/yearhistory.py DIR MINUTES

One routine, ``rtn-tick`` (``* * * * *`` UTC, ``missed_run: all``), with one Job action. Every
attempt is recorded by :func:`specdojo_routine.app.handlers.run` exactly as ``run --due`` records
it: ``attempt_started``, ``action_started``, ``action_ended``, ``attempt_ended`` (four events a
minute, about 2.1 million a year), the routine view published after each. ``run --now`` steps
999 minutes a call (each call runs every missed minute, oldest first), with the wall clock of
each call set to that ``now`` so the events' ``at`` stamps step with it.

Two shortcuts keep a year of it within reach, and neither changes a byte that is written: the
Job action is answered in-process (success, with the run id the Job would have: no command and
no Job Run files), and ``os.fsync`` is a no-op while the history is made (the lines and views
are the same; only their durability is skipped).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TextIO

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from specdojo_routine.app import handlers
from specdojo_routine.app.job_seam import JobActionOutcome
from specdojo_routine.core import jobplan
from specdojo_routine.core.model import Result
from specdojo_routine.core.timefmt import format_ms
from specdojo_routine.store.config import ProjectPaths, resolve_project
from specdojo_routine.store.definitions.load import Definitions

START = datetime(2026, 1, 1, tzinfo=UTC)
STEP = 999  # minutes per call: missed_run: all refuses more than 1000 occurrences at once
ROUTINE = ('id: rtn-tick\ntrigger: {cron: "* * * * *", timezone: UTC}\n'
           "policy: {missed_run: all}\naction: {kind: job, job: job-tick}\n")
JOB = ("id: job-tick\nname: tick\ntask: {mode: command, command: \"true\"}\n"
       'run: {idempotency_key: "{{job_id}}:{{scheduled_at}}"}\n')
MARKER = "history.json"


def write_project(root: Path) -> ProjectPaths:
    """The project skeleton: config, the routine and its Job."""
    (root / ".specdojo").mkdir(parents=True, exist_ok=True)
    (root / ".specdojo" / "specdojo.config.json").write_bytes(orjson.dumps({
        "version": 1, "projects": {"p": {"routines_path": "routines", "jobs_path": "jobs",
                                         "execution_path": "execution"}}}))
    for sub, name, body in (("routines", "rtn-tick.yaml", ROUTINE), ("jobs", "job-tick.yaml", JOB)):
        (root / sub).mkdir(exist_ok=True)
        (root / sub / name).write_text(body)
    return resolve_project(root, env={})


def answered_job(
    paths: ProjectPaths, defs: Definitions, *, job_id: str, inputs: Mapping[str, str],
    scheduled_at: datetime, echo: TextIO | None, worktree: bool = False,
) -> JobActionOutcome:
    """The Job action's outcome without running it: success, with the run id its key gives."""
    run_id = jobplan.run_id_for(job_id, f"{job_id}:{format_ms(scheduled_at)}")
    return JobActionOutcome(result=Result.SUCCESS, reason=None, job_run_id=run_id, exit_code=0)


@contextmanager
def no_fsync() -> Iterator[None]:
    saved = os.fsync
    os.fsync = lambda fd: None
    try:
        yield
    finally:
        os.fsync = saved


def last_minute(minutes: int) -> datetime:
    """The scheduled time of the last attempt of a history of ``minutes`` minutes."""
    return START + timedelta(minutes=minutes - 1)


def make_history(root: Path, minutes: int) -> ProjectPaths:
    """A project whose routine ran once a minute for ``minutes`` minutes from :data:`START`
    (reused when ``root`` already holds exactly that history)."""
    marker = root / MARKER
    if marker.exists() and orjson.loads(marker.read_bytes()).get("minutes") == minutes:
        return resolve_project(root, env={})
    paths = write_project(root)
    done, now = 0, START
    with no_fsync():
        while done < minutes:
            now = START + timedelta(minutes=min(done + STEP, minutes) - 1) if done else START
            at = now + timedelta(seconds=5)
            report = handlers.run(paths, now=at, job_runner=answered_job, clock=lambda at=at: at,
                                  env={})
            assert not report.errors, report.errors
            done += len(report.results)
    marker.write_bytes(orjson.dumps({"minutes": minutes, "events": minutes * 4 + 1}))
    return paths


if __name__ == "__main__":
    built = make_history(Path(sys.argv[1]), int(sys.argv[2]))
    print(built.routine_ledger, built.routine_ledger.stat().st_size)
