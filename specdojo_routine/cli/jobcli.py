"""``job run | list | show`` (SPEC §8): parsing results into text or JSON; the work is in jobs."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

from specdojo_routine.app import agentopts, handlers, jobs, named_run
from specdojo_routine.cli import render
from specdojo_routine.core import jobplan
from specdojo_routine.core.jobfold import JobRunDoc
from specdojo_routine.core.jobplan import JobRunOutcome
from specdojo_routine.core.validation import one_line
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.ledger import adopt, views


def _paths(args: argparse.Namespace) -> ProjectPaths:
    return handlers.project(args.root, args.project)


_json = render.dumps
_table = render.table


# --- job run -----------------------------------------------------------------------------------


def cmd_job_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``job run --job ID [--input k=v]… [--scheduled-at T] [--trigger …] [--dry-run] [--json]``"""
    paths = _paths(args)
    defs = definitions.load_jobs(paths)
    job = jobs.find_job(defs, args.job)
    explicit = jobplan.parse_cli_inputs(job, args.input)
    scheduled_at = args.scheduled_at or datetime.now(UTC)
    if args.dry_run:
        return _dry_run(paths, defs, args, explicit, scheduled_at, out)
    options = agentopts.review_options(paths, args)
    agent = agentopts.cli_executor(paths, options.reporter_by,
                                   executor_by=getattr(args, "executor_by", None),
                                   by=getattr(args, "by", None))
    outcome = jobs.run_job(paths, defs, job.id, explicit, scheduled_at=scheduled_at,
                           trigger=args.trigger, echo=err if args.json else out, agent=agent,
                           review=options)
    out.write(_json(outcome.to_json()) if args.json else
              _summary(outcome) + agentopts.review_summary(paths, outcome))
    for warning in outcome.warnings:  # the outcome is recorded; a file around it is not
        err.write(f"warning: {warning}\n")
    return jobplan.exit_code_for(outcome)


def _summary(o: JobRunOutcome) -> str:
    if o.duplicate_complete:
        return f"{o.run_id}: duplicate complete (state {o.state}, attempt {o.attempt}); " \
               "nothing to do\n"
    if o.run_id is None:
        what = "skipped" if o.skipped else "failed"
        return f"{o.job_id}: {what}, no Job Run created: {o.reason}\n"
    if o.skipped and o.attempt is None:
        return f"{o.run_id}: skipped (state {o.state}): {o.reason}\n"
    line = f"{o.run_id}: {o.state} (attempt {o.attempt})"
    if o.skipped:
        line += ", skipped: the project is busy (exit 75)"
    line += f": {o.reason}" if o.reason else ""
    line += f"\n  evidence: {o.evidence_ref}" if o.evidence_ref else ""
    return line + "\n"


def _dry_run(
    paths: ProjectPaths, defs: definitions.Definitions, args: argparse.Namespace,
    explicit: Mapping[str, Any], scheduled_at: datetime, out: TextIO,
) -> int:
    env = dict(os.environ)
    prep = jobs.prepare(paths, defs, args.job, explicit, scheduled_at=scheduled_at,
                        trigger=args.trigger, env=env)
    view = adopt.load_run(paths, prep.run_id)  # imported in memory (SPEC §10)
    decision = jobplan.existing_run(view, run_id=prep.run_id, job_id=prep.job.id,
                                    key=prep.recorded_key)
    existing = {"new": "new run", "duplicate": "duplicate complete (nothing would run)",
                "retry": f"existing run, attempt {decision.attempt} would start"}[decision.action]
    flow = agentopts.dry_run_review(paths, prep.run_id, prep.task,
                                    agentopts.review_options(paths, args), env)
    if args.json:
        out.write(_json({"dry_run": True, "job_id": prep.job.id, "run_id": prep.run_id,
                         "idempotency_key": prep.recorded_key, "scheduled_at": prep.scheduled_at,
                         "trigger": prep.trigger, "inputs": prep.inputs,
                         "existing": decision.action, "attempt": decision.attempt,
                         "task": prep.recorded_task}
                        | ({"review": flow} if flow is not None else {})))
        return 0
    lines = [f"job: {prep.job.id}", f"run_id: {prep.run_id}",
             one_line(f"idempotency_key: {prep.recorded_key}"),
             f"scheduled_at: {prep.scheduled_at}", f"trigger: {prep.trigger}",
             f"existing: {existing}", "inputs:"]
    lines += [one_line(f"  {k}: {_text(v)}") for k, v in prep.inputs.items()] or ["  (none)"]
    task = prep.recorded_task
    if "precondition" in task:
        lines.append(_lines(f"precondition: {task['precondition']['command']}"))
    if task.get("mode") == "command":
        lines.append(_lines(f"command: {task['command']}"))
    else:
        lines += [f"mode: {task.get('mode')}", _lines(f"description: {task.get('description')}")]
    lines += agentopts.dry_run_lines(flow)
    out.write("\n".join(lines) + "\n(dry run: nothing written)\n")
    return 0


def _text(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def _lines(text: str) -> str:
    """A command or description as shown: its lines kept, control characters escaped as in
    every other output (an input value inside it could otherwise repaint or hide text)."""
    return "\n".join(map(one_line, text.split("\n")))


# --- job list ------------------------------------------------------------------------------------


def _runs(plan: adopt.JobImports) -> list[JobRunDoc]:
    found = [plan.document(run_id) for run_id in sorted(plan.folds)]
    return [doc for doc in found if doc is not None]


def _interrupted(paths: ProjectPaths, doc: JobRunDoc) -> bool:
    """An open attempt whose runner is gone (SPEC §7.3); asked only of running runs."""
    from specdojo_routine.app import job_resolve

    return doc["state"] == "running" and job_resolve.interrupted(paths, doc["run_id"], doc)


def _run_row(paths: ProjectPaths, doc: JobRunDoc) -> dict[str, Any]:
    row = _row_of(doc)
    if _interrupted(paths, doc):
        row |= {"state": "interrupted", "interrupted": True}
    return row


def _row_of(doc: JobRunDoc) -> dict[str, Any]:
    return {"run_id": doc["run_id"], "job_id": doc["job_id"], "state": doc["state"],
            "attempts": len(doc["attempts"]), "trigger": doc["trigger"],
            "scheduled_at": doc["scheduled_at"], "created_at": doc["created_at"],
            "updated_at": doc["updated_at"]}


def cmd_job_list(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``job list [--json]``: every valid Job Definition, its checkpoint and its runs; then
    a warning for each torn Job Run ledger it read."""
    paths = _paths(args)
    _job_list(args, paths, out, err)
    render.torn_warnings(paths, err, routine=False, run_ids=adopt.run_ids(paths))
    return 0


def _job_list(args: argparse.Namespace, paths: ProjectPaths, out: TextIO, err: TextIO) -> None:
    defs = definitions.load_jobs(paths)
    plan = adopt.plan_job_imports(paths)  # another tool's records, imported in memory (§10)
    runs = sorted((_run_row(paths, doc) for doc in _runs(plan)),
                  key=lambda r: (r["job_id"], r["created_at"], r["run_id"]))
    state = plan.jobs()
    listing: list[dict[str, Any]] = [
        {"id": job.id, "name": job.name, "mode": job.task.mode, "path": job.path,
         "checkpoint": state[job.id]["checkpoint"] if job.id in state else None,
         "runs": [r["run_id"] for r in runs if r["job_id"] == job.id]}
        for job in defs.jobs]
    if defs.invalid_job_ids:
        err.write(f"warning: {len(defs.invalid_job_ids)} invalid Job Definition(s) not listed: "
                  f"{', '.join(sorted(defs.invalid_job_ids))} (see `job validate`)\n")
    if args.json:
        out.write(_json({"jobs": listing, "runs": runs,
                         "invalid_job_ids": sorted(defs.invalid_job_ids)}))
        return
    by_id = {r["run_id"]: r for r in runs}
    rows = []
    for job in listing:
        last = max((by_id[i] for i in job["runs"]), key=lambda r: r["updated_at"], default=None)
        rows.append([job["id"], job["name"], job["mode"], str(len(job["runs"])),
                     last["run_id"] if last else "-", last["state"] if last else "-",
                     _text_map(job["checkpoint"])])
    out.write(_table(["JOB", "NAME", "MODE", "RUNS", "LAST RUN", "STATE", "CHECKPOINT"], rows)
              if rows else "no Job Definitions\n")
    if runs:
        out.write("\n" + _table(
            ["RUN", "JOB", "STATE", "ATTEMPTS", "TRIGGER", "SCHEDULED AT", "UPDATED AT"],
            [[r["run_id"], r["job_id"], r["state"], str(r["attempts"]), r["trigger"],
              r["scheduled_at"], r["updated_at"]] for r in runs]))


def _text_map(values: Mapping[str, Any] | None) -> str:
    if not values:
        return "-"
    return " ".join(f"{k}={_text(v)}" for k, v in values.items())


# --- job show ------------------------------------------------------------------------------------


def cmd_job_show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``job show RUN_ID [--json]``: the run's view (``--json``: exactly runs/<id>.json); then
    a warning if its ledger is torn."""
    paths = _paths(args)
    found = named_run.load(paths, args.run_id)  # imported in memory (SPEC §10)
    interrupted = _interrupted(paths, found)
    if args.json:  # the view as stored; an interrupted run says so (SPEC §7.3)
        shown: Any = {**found, "interrupted": True} if interrupted else found
        out.write(views.render(shown).decode("utf-8"))
    else:
        out.write(_show_text(args.run_id, found, interrupted))
    render.torn_warnings(paths, err, routine=False, run_ids=[args.run_id])
    return 0


def _show_text(run_id: str, found: JobRunDoc, interrupted: bool) -> str:
    doc: dict[str, Any] = dict(found)
    if interrupted:
        doc["state"] = ("interrupted (its runner died; `job resolve "
                        f"{run_id} --status succeeded|failed|noop --note TEXT`)")
    lines = [one_line(f"{key}: {doc[key]}") for key in
             ("run_id", "job_id", "state", "trigger", "scheduled_at", "created_at",
              "updated_at", "idempotency_key", "plan_ref", "result_ref")]
    lines.append(one_line(f"inputs: {_text_map(doc['inputs'])}"))
    lines.append(one_line(f"checkpoint_before: {_text_map(doc['checkpoint_before'])}"))
    lines.append(one_line(f"checkpoint_after: {_text_map(doc.get('checkpoint_after'))}"))
    task = doc["task"]
    body = task.get("command") if task.get("mode") == "command" else task.get("description")
    lines.append(_lines(f"task: {task.get('mode')}: {body}"))
    if doc.get("review") is not None:  # SPEC §11.4
        review = doc["review"]
        reviewed = review.get("attempt")
        lines.append(("review" if reviewed is None else f"review of attempt {reviewed}")
                     + f": verdict {review.get('verdict') or '-'}, merged "
                     f"{str(review.get('merged')).lower()}, commit {review.get('commit') or '-'}"
                     + (f": {review['reason']}" if review.get("reason") else ""))
    for pruned in doc.get("pruned") or []:  # SPEC §15: the refs above name what existed
        lines.append(f"pruned: {pruned['at']}, {len(pruned['paths'])} path(s), "
                     f"{pruned['bytes']} bytes: {', '.join(pruned['paths'])}")
    return "\n".join(lines) + "\n\n" + _table(
        ["ATTEMPT", "STATUS", "STARTED", "COMPLETED", "EXIT", "REASON", "EVIDENCE"],
        [[str(a["attempt"]), a["status"], a["started_at"], a.get("completed_at", "-"),
          str(a.get("exit_code", "-")), a.get("reason", "-"), a.get("evidence_ref", "-")]
         for a in doc["attempts"]])


# --- job resolve ---------------------------------------------------------------------------------


def cmd_job_resolve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``job resolve RUN_ID --status S --note TEXT [--by NAME]`` (SPEC §7.3)."""
    from specdojo_routine.app import job_resolve

    paths = _paths(args)
    attempt = job_resolve.resolve_job_run(paths, args.run_id, status=args.status,
                                          note=args.note, by=args.resolved_by)
    out.write(f"{args.run_id}: attempt {attempt} resolved as {args.status}\n")
    left = job_resolve.unmerged_worktree(paths, args.run_id, args.status)
    if left is not None:
        err.write(f"warning: {left}\n")
    return 0
