"""Agent steps the Job runner takes (SPEC §11.1, §11.2): the default executor and analysis.

- :func:`default_executor`: the CLI's :class:`~.agents.RosterExecutor` when the project names
  a roster (``members_path``), else None (then an ``edit``/``review`` attempt fails with
  ``no agent executor configured for mode <mode>``, as before);
- :func:`analyse`: after a command that ended ``succeeded`` or ``partial``, the
  ``task.analysis.agent`` reads a plan holding ``task.analysis.description`` and the attempt's
  ``evidence.json`` verbatim; its outcome decides the run;
- :func:`stamp_result`: the runner's status on a result an agent filled.
"""

from __future__ import annotations

import time
from pathlib import Path

import attrs

from specdojo_routine.core import agentdocs
from specdojo_routine.core.agent_rules import AgentConfigError
from specdojo_routine.core.jobplan import Verdict
from specdojo_routine.execute import agents
from specdojo_routine.execute.agent import AgentRequest
from specdojo_routine.execute.agents import RosterExecutor, stamp_result
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import agentconfig

__all__ = ["Analysed", "analyse", "default_executor", "stamp_result"]


def default_executor(
    paths: ProjectPaths, reporter: str | None = None, *, executor: str | None = None,
    single: str | None = None,
) -> RosterExecutor | None:
    """The roster executor, with ``job run``'s choices (``--reporter-by``, ``--executor-by``
    per stage; ``--by``: one agent for the whole run) ahead of the Job's nomination."""
    config = agentconfig.load_agent_config(paths)
    if config is None:
        return None
    return RosterExecutor(config=config, reporter_override=reporter,
                          executor_override=executor, single_override=single)


@attrs.frozen(kw_only=True, repr=False)
class Analysed:
    verdict: Verdict
    result_written: bool = False


def analysis_plan_path(paths: ProjectPaths, run_id: str) -> Path:
    return paths.plans_dir / f"{run_id}-analysis-plan.md"


def analyse(
    paths: ProjectPaths, request: AgentRequest, command: Verdict, evidence_json: Path
) -> Analysed:
    """Run the analysis agent on the command's evidence (SPEC §11.2)."""
    spec = request.task.get("analysis") or {}
    config = agentconfig.load_agent_config(paths)
    if config is None:
        return Analysed(verdict=Verdict(
            status="failed", reason="analysis failed: the project names no members_path "
            "(roster) to find the analysis agent in"))
    if (refused := config.refusal()) is not None:
        return Analysed(verdict=Verdict(status="failed", reason=f"analysis failed: {refused}"))
    try:
        member = agents.member_of(config, str(spec.get("agent")))
    except AgentConfigError as exc:
        return Analysed(verdict=Verdict(status="failed", reason=f"analysis failed: {exc}"))
    body = evidence_json.read_text(encoding="utf-8")
    description = (f"{str(spec.get('description', '')).rstrip()}\n\n## Command evidence\n\n"
                   f"{agents.fenced(body, 'json')}")
    doc = attrs.evolve(RosterExecutor.doc(request, paths.root), description=description)
    plan_path = analysis_plan_path(paths, request.run_id)
    plan_text = agents.write_documents(paths, doc, plan_path, request.result_path,
                                       review=False, agent=member.nickname)
    how = agents.Launch(paths=paths, config=config, run_id=request.run_id,
                        attempt=request.attempt, cwd=request.cwd or paths.root, env=request.env,
                        plan_path=plan_path, result_path=request.result_path,
                        deadline=None if request.timeout_s is None
                        else time.monotonic() + request.timeout_s, echo=request.echo,
                        kill_grace_s=request.kill_grace_s)
    try:
        stage = agents.launch(how, member, "analysis", plan_text)
    except AgentConfigError as exc:
        return Analysed(verdict=Verdict(status="failed", reason=f"analysis failed: {exc}"))
    return _outcome(stage, request.result_path, command)


def _outcome(stage: agents.Stage, result_path: Path, command: Verdict) -> Analysed:
    """What the analysis decided: its stage's failure, the failure or noop the agent wrote in
    its result, else the command's own verdict."""
    failed = stage.failure()
    if failed is not None:
        reason, skipped = failed
        return Analysed(verdict=Verdict(status="failed", busy=skipped,
                                        reason=reason if skipped else f"analysis failed: {reason}"),
                        result_written=True)
    status, why = agentdocs.agent_outcome(agents.read_result(result_path))
    if status == "failed":
        return Analysed(verdict=Verdict(status="failed", reason=f"analysis failed: {why}"),
                        result_written=True)
    if status == "noop":
        return Analysed(verdict=Verdict(status="noop", reason="analysis: noop"),
                        result_written=True)
    return Analysed(verdict=command, result_written=True)
