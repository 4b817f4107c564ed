"""A SpecDojo project whose agents are the fake agent CLI (tests/support/fake_agent.py),
registered through a real roster (``members_path``) and a real exec-defaults file."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson

from tests.conftest import Project, wait_for

FAKE_AGENT = Path(__file__).resolve().parent / "support" / "fake_agent.py"

ROSTER = """\
version: 1
project_id: demo
members:
  - nickname: editor
    type: agent
    provider: fake
    mode: edit
    proficiency: high
    priority: 2
  - nickname: editor-b
    type: agent
    provider: fake
    mode: edit
    priority: 1
    disabled: true
  - nickname: reporter
    type: agent
    provider: fake
    mode: edit
    stage_role: reporter
    priority: 5
  - nickname: analyst
    type: agent
    provider: fake
    mode: review
    priority: 3
  - nickname: reviewer
    type: agent
    provider: fake
    mode: review
    priority: 1
  - nickname: reviewer-2
    type: agent
    provider: fake
    mode: review
    priority: 9
  - nickname: own-command
    type: agent
    mode: edit
    command: "{python} {agent} own-command {control}"
  - nickname: alice
    type: human
"""

EXEC_DEFAULTS = """\
rate_limit_detection:
  exit_codes: [42]
  stderr_patterns: ["rate limit"]
providers:
  fake:
    command_template: "{python} {agent} {{nickname}} {control} --mode={{mode}} {{flags}}"
    command_params:
      by_mode:
        edit: {{flags: "--edit"}}
        review: {{flags: "--review"}}
"""


class AgentProject(Project):
    """A project with a roster, exec defaults, a control file for the fake agent and git."""

    def __init__(self, root: Path, *, run: dict[str, str] | None = None) -> None:
        super().__init__(root)
        self.control = root.parent / "agent-control.json"
        config: dict[str, Any] = {"routines_path": "routines", "jobs_path": "jobs",
                                  "execution_path": "execution", "members_path": "members.yaml"}
        if run:
            config["run"] = run
        (root / ".specdojo" / "specdojo.config.json").write_bytes(orjson.dumps(
            {"version": 1, "current_project": "demo", "projects": {"demo": config}}))
        fill = {"python": shlex.quote(sys.executable), "agent": shlex.quote(str(FAKE_AGENT)),
                "control": shlex.quote(str(self.control))}
        (root / "members.yaml").write_text(ROSTER.format(**fill))
        (root / ".specdojo" / "exec-defaults.yaml").write_text(
            EXEC_DEFAULTS.format(**fill))
        self.behave({})

    def behave(self, control: dict[str, Any]) -> None:
        self.control.write_text(json.dumps(control))

    def launches(self) -> list[dict[str, Any]]:
        path = Path(f"{self.control}.record.jsonl")
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def edit_job(self, jid: str, extra: str = "", **task: str) -> Path:
        lines = "".join(f"  {k}: {v}\n" for k, v in task.items())
        return self.job(jid, textwrap.dedent(f"""\
            name: Edit job {jid}
            inputs:
              period: {{type: string, required: true}}
            task:
              mode: edit
              description: "Edit for {{{{inputs.period}}}}"
              paths: [docs]
            """) + lines + 'run:\n  idempotency_key: "{{job_id}}:{{inputs.period}}"\n' + extra)

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com",
             "-c", "commit.gpgsign=false", *args], cwd=self.root, check=True,
            capture_output=True, text=True)
        return done.stdout.strip()

    def init_git(self) -> str:
        (self.root / ".gitignore").write_text("execution/\nroutines/generated/\nroutines/.locks/\n"
                                              "fake-cli.*\n")
        (self.root / "docs").mkdir(exist_ok=True)
        (self.root / "docs" / "a.md").write_text("a\n")
        self.git("init", "-q", "-b", "main")
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "initial")
        return self.git("rev-parse", "HEAD")

    def view(self, run_id: str) -> dict[str, Any]:
        data: dict[str, Any] = orjson.loads(
            (self.root / "execution" / "jobs" / "runs" / f"{run_id}.json").read_bytes())
        return data

    def result_text(self, run_id: str, kind: str = "result") -> str:
        return (self.root / "execution" / "exec" / "results" / f"{run_id}-{kind}.md").read_text()


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for init is dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def terminated_once_its_child_runs(
        ap: AgentProject, proc: subprocess.Popen[str]) -> tuple[int, str, int]:
    """SIGTERM the runner ``proc`` once its agent has started the background child the
    control file asked for (``child``); (its exit code, its stderr, the child's pid)."""
    child_file = Path(f"{ap.control}.child.pid")
    try:
        wait_for(lambda: proc.poll() is None and child_file.exists()
                 and child_file.read_text().strip())
        child = int(child_file.read_text())
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return code, proc.stderr.read() if proc.stderr else "", child
