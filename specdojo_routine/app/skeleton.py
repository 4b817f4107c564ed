"""``init``: a new project skeleton that ``validate`` accepts and ``run --due`` runs (SPEC §8).

Four files, each written only if nothing is at its path yet (exclusive create): the config
(with ``schedule_path``, which the upstream CLI wants), one example routine that is due at once
and runs one example Job - a shell ``echo``, so it runs on any machine without the SpecDojo
CLI - and a ``.gitignore`` for the runtime state (locks) and the machine-local caches. The
ledgers are not ignored: they are the project's audit trail.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import orjson

from specdojo_routine.core.errors import UsageError
from specdojo_routine.store.config import CONFIG_RELPATH, file_in_the_way, is_a_file

#: What a project id may be: it names the project in the config, in delegated calls
#: (``--project ID``) and in review branches, so nothing a shell or git would read otherwise.
PROJECT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

EXAMPLE_ROUTINE = """\
# An example routine: due at once on a new project (it has never run), then every hour.
# Edit it or add more: routines/rtn-<name>.yaml, the id equal to the file name.
id: rtn-example
name: Example
description: Runs job-example every hour.
interval: 1h
action:
  kind: job
  job: job-example
"""

EXAMPLE_JOB = """\
# An example Job Definition: one shell command. A Job Run per scheduled time (the idempotency
# key), so a retry never runs a completed one twice; its output is kept as evidence under
# execution/exec/evidence/<run id>/.
id: job-example
name: Example
inputs:
  greeting:
    type: string
    default: hello
task:
  mode: command
  command: echo "{{inputs.greeting}} from {{job_id}}, scheduled at {{scheduled_at}}"
  timeout: 30s
run:
  idempotency_key: "{{job_id}}:{{scheduled_at}}"
"""

GITIGNORE = """\
# Runtime state of specdojo_routine: locks held while a run or a Job Run is in progress, and
# machine-local caches (safe to delete). The ledgers - routines/generated/routine-runs.jsonl,
# execution/jobs/runs/*.jsonl - are the audit trail, and are not ignored here.
.locks/
.cache/
"""


class Created(NamedTuple):
    """What ``init`` wrote: the project's root and id, and its files relative to the root."""

    root: Path
    project_id: str
    files: tuple[str, ...]


def skeleton(project_id: str) -> dict[str, str]:
    """The skeleton's files (relative POSIX path -> text), in the order they are written."""
    config = {"version": 1, "current_project": project_id, "projects": {project_id: {
        "schedule_path": "schedule", "routines_path": "routines", "jobs_path": "jobs",
        "execution_path": "execution"}}}
    return {
        CONFIG_RELPATH.as_posix(): orjson.dumps(config, option=orjson.OPT_INDENT_2).decode()
        + "\n",
        "routines/rtn-example.yaml": EXAMPLE_ROUTINE,
        "jobs/job-example.yaml": EXAMPLE_JOB,
        ".gitignore": GITIGNORE,
    }


def create(root: Path, project_id: str | None = None) -> Created:
    """Write the skeleton under ``root`` (made if missing) for ``project_id`` (default: the
    directory's name). Refuses - :class:`UsageError`, nothing written - when a file of the
    skeleton is already there or the id is not usable."""
    root = root.absolute()
    chosen = project_id if project_id is not None else root.name
    if not PROJECT_ID.fullmatch(chosen):
        named = "--project" if project_id is not None else "the directory's name"
        raise UsageError(f'cannot use "{chosen}" ({named}) as a project id: use letters, '
                         "digits, '.', '_' and '-', starting with a letter or digit "
                         "(init --project ID)")
    not_a_folder = file_in_the_way(root)
    if not_a_folder is not None:
        raise UsageError(f"--root {root} {is_a_file(root, not_a_folder)}; name the "
                         "directory to create the project in (nothing was written)")
    files = skeleton(chosen)
    for name in files:
        path = root / name
        if path.exists() or path.is_symlink():
            raise UsageError(f"{path} already exists; init writes only new files and wrote "
                             "nothing (run it in an empty directory, or --root DIR)")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as out:  # "x": never over a file made meanwhile
            out.write(text)
    return Created(root=root, project_id=chosen, files=tuple(files))
