"""Why it failed, where people look (SPEC §14): reasons and stderr tails in `run` and `list`,
`last_reason` / `reason` / `job_run_ids` in JSON, and one health rule for the exit codes of
`list` and `status` - on a project with a real week of history."""

from __future__ import annotations

import orjson
import pytest

from specdojo_routine.core import health
from tests.conftest import Project
from tests.weekhistory import AFTER, SECRET, Week


def test_run_prints_each_failed_actions_reason_stderr_tail_and_evidence(week_copy: Week) -> None:
    """Under a failed Job action: its reason and Job Run id, the last lines of its stderr and
    the path of its evidence."""
    done = week_copy.cli("run", "--id", "rtn-nightly-export", "--now", AFTER)
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("rtn-nightly-export  "))
    assert (1, "failure - action 1 (job): command exited with code 3") == (
        done.returncode, lines[at].split("  ", 2)[2])
    assert lines[at + 1].startswith("  action 1 (job) failure: command exited with code 3 (JBR-")
    assert "    | ERROR: disk /var/export full" == lines[at + 2]
    assert lines[at + 3].startswith("    evidence: execution/exec/evidence/JBR-export-")


def test_a_delegated_calls_stderr_tail_is_shown_redacted(week_copy: Week) -> None:
    """A failing SpecDojo call: its stderr tail under the attempt, the token it printed
    redacted - on the console, in the run's output and in its evidence."""
    done = week_copy.cli("run", "--id", "rtn-cleanup", "--now", AFTER)
    assert "    | ERROR: quota exceeded on /srv/cache" in done.stdout.splitlines()
    assert "    | using token [REDACTED]" in done.stdout.splitlines()
    evidence = week_copy.root / "execution" / "exec" / "evidence" / "routines"
    written = b"".join(p.read_bytes() for p in evidence.rglob("*") if p.is_file())
    assert (False, False, True) == (SECRET in done.stdout + done.stderr,
                                    SECRET.encode() in written, b"quota exceeded" in written)


def test_run_json_results_carry_reason_and_job_run_ids(week_copy: Week) -> None:
    """`run --json` results: `reason` and `job_run_ids` beside the documented keys."""
    doc = orjson.loads(week_copy.cli("run", "--id", "rtn-nightly-export", "--json", "--now",
                                     AFTER).stdout)
    result = doc["results"][0]
    assert (["routine_id", "attempt_id", "scheduled_for", "result", "reason", "job_run_ids",
             "action_results"], "action 1 (job): command exited with code 3") == (
        list(result), result["reason"])
    assert [True] == [r.startswith("JBR-export-") for r in result["job_run_ids"]]


def test_list_json_routines_carry_last_reason(week: Week) -> None:
    """`list --json`: each routine's `last_reason` (null after a success)."""
    doc = week.json("list", "--json", "--now", AFTER)
    reasons = {r["id"]: r["last_reason"] for r in doc["routines"]}
    assert {"rtn-cleanup": "action 1 (specdojo): command exited with code 4",
            "rtn-nightly-export": "action 1 (job): command exited with code 3",
            "rtn-sync": None, "rtn-weekly-report": None} == reasons


def test_list_shows_reasons_exits_1_after_a_failure_and_says_which(week: Week) -> None:
    """The most common problem, a failed last run, fails the health check; the table fits 80
    columns and names each failure's reason below it."""
    done = week.cli("list", "--now", AFTER)
    lines = done.stdout.splitlines()
    assert (1, ["ID", "STATUS", "LAST", "RUN", "RESULT", "DUE", "NEXT"]) == (
        done.returncode, lines[0].split())
    assert [] == [line for line in lines[:5] if len(line) > 80]
    assert ("! rtn-nightly-export: last failure: action 1 (job): command exited with code 3"
            in lines)
    assert "unhealthy: rtn-cleanup, rtn-nightly-export (see `status ID`)" == lines[-1]


def test_list_exits_0_when_the_failing_routines_are_disabled(week_copy: Week) -> None:
    """Only enabled routines are judged: disabling both failing routines makes it healthy."""
    for rid in ("rtn-cleanup", "rtn-nightly-export"):
        path = week_copy.root / "routines" / f"{rid}.yaml"
        path.write_text(path.read_text() + "enabled: false\n")
    done = week_copy.cli("list", "--now", AFTER)
    assert (0, "unhealthy" in done.stdout) == (done.returncode, False)


@pytest.mark.parametrize(("facts", "state", "problems"), [
    (health.Facts(enabled=True, status="failure", last_result="failure"),
     "failure", ["last result failure"]),
    (health.Facts(enabled=False, status="failure", last_result="failure"), "disabled", []),
    (health.Facts(enabled=True, status="running", last_result="success", interrupted=True),
     "interrupted", ["interrupted"]),
    (health.Facts(enabled=True, status="success", last_result="success", missed=True),
     "missed", ["missed since its last success"]),
    (health.Facts(enabled=True, status="failure", last_result="failure", held=True),
     "held", ["held", "last result failure"]),
    (health.Facts(enabled=True, status="success", last_result="success", paused=True),
     "paused", []),
    (health.Facts(enabled=True, status="never", last_result=None), "never", []),
    (health.Facts(enabled=True, status="skipped", last_result="skipped"), "skipped", []),
])
def test_the_health_rule(facts: health.Facts, state: str, problems: list[str]) -> None:
    """One rule: failure, interrupted, held or a miss since the last success is unhealthy; a
    paused routine is an operator's decision and a disabled one is not judged."""
    assert (state, problems) == (health.state_of(facts), health.problems(facts))


def test_states_sort_worst_first() -> None:
    """The overview's order: interrupted and held before failures, successes last."""
    names = ["success", "failure", "never", "held", "interrupted", "running", "paused"]
    assert ["interrupted", "held", "failure", "running", "paused", "never", "success"] == \
        sorted(names, key=health.rank)


def test_run_shows_the_last_5_lines_of_a_failed_calls_stderr(project: Project) -> None:
    """SPEC §14: under a failed action, `run` prints the last 5 lines of its stderr - the
    end, where the line that explains a failure usually is - and the evidence keeps it all."""
    project.routine("rtn-loud", "interval: 1h\naction: {kind: specdojo, args: [loud]}\n")
    loud = project.root / "loud.sh"
    loud.write_text("#!/bin/sh\nfor n in 1 2 3 4 5 6 7 8 9 10 11 12; do echo \"line $n\" >&2; "
                    "done\nexit 1\n")
    loud.chmod(0o755)
    done = project.cli("run", "--due", env=project.env(SPECDOJO_CLI=str(loud)))
    shown = [line for line in done.stdout.splitlines() if line.startswith("    | ")]
    assert (1, [f"    | line {n}" for n in range(8, 13)]) == (done.returncode, shown)


@pytest.mark.parametrize(("command", "said"), [
    ("nothere-xyz --now", "command exited with code 127 (the shell did not find the command "
                          "(or a file it runs): see its stderr)"),
    ("./notes.txt", "command exited with code 126 (the shell found the command but could not "
                    "execute it: see its stderr)"),
    ("sh -c 'kill -9 $$'", "command exited with code 137 (ended by signal 9)"),
])
def test_a_shell_exit_code_says_what_it_means(project: Project, command: str,
                                              said: str) -> None:
    """SPEC §14, why it failed: 127 and 126 are the shell's own (the command was not found,
    or could not be executed) and 128+N a process ended by signal N; the reason said only
    `command exited with code 127`."""
    from tests.conftest import period_job

    (project.root / "notes.txt").write_text("not a program\n")
    project.job("job-x", period_job("x", command))
    project.routine("rtn-x", "interval: 1h\naction: {kind: job, job: job-x, "
                             "inputs: {period: W1}}\n")
    done = project.cli("run", "--due", "--json")
    [result] = orjson.loads(done.stdout)["results"]
    assert (1, f"action 1 (job): {said}") == (done.returncode, result["reason"]), done.stdout
