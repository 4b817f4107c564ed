"""The project's agent configuration on disk (SPEC §11.1, §11.4): roster and exec defaults.

``members_path`` (from the project config) is the roster; ``run.exec_defaults`` (default
``.specdojo/exec-defaults.yaml``) the provider templates and rate-limit detection. Both are read
with the definitions' safe YAML loader, so their problems are located (``file:line:col``).
A project whose config names no ``members_path`` has no agent configuration (None); a named
roster that is missing is a configuration error (exit 2). A missing exec-defaults file is
simply empty.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

import attrs

from specdojo_routine.core.errors import ConfigError, Problem
from specdojo_routine.core.validation import Node
from specdojo_routine.store.config import ProjectPaths, file_kind

if TYPE_CHECKING:  # imported where a roster is read: most projects have none
    from specdojo_routine.core.agent_rules import ExecDefaults, Roster


@attrs.frozen(kw_only=True, repr=False)
class AgentConfig:
    roster: Roster
    defaults: ExecDefaults
    problems: tuple[Problem, ...] = ()

    def refusal(self) -> str | None:
        """Why no agent may be launched: the roster has errors (None: it has none). A roster
        with errors is not the one its author meant - a member it could not read is missing,
        and the run would pick another one or none - as an invalid Job Definition is not run
        either. An exec-defaults template a member cannot use is that member's refusal, at
        its launch."""
        errors = [p for p in self.problems if not p.warning and p.path == self.roster.path]
        if not errors:
            return None
        return (f"the roster has {len(errors)} error(s), the first {errors[0]}; fix it "
                "(validate lists them all): no agent is launched from it")


def load_agent_config(paths: ProjectPaths) -> AgentConfig | None:
    """The roster and exec defaults, or None when the project names no ``members_path``."""
    if paths.members_path is None:
        return None
    members = paths.members_path
    try:
        kind = file_kind(members.stat().st_mode)
        problem = kind and f"is {kind}, not the roster file; point members_path at the roster"
    except OSError as exc:  # not there, a dangling link, a directory we may not search
        problem = ("does not exist; create the roster or fix members_path"
                   if exc.errno == errno.ENOENT else
                   f"cannot be read ({exc.strerror}); fix its permissions or members_path")
    if problem:
        raise ConfigError(f'members_path "{paths.rel(members)}" of project "{paths.project_id}" '
                          f"{problem}")
    from specdojo_routine.core import agent_rules
    from specdojo_routine.core.agent_rules import ExecDefaults, Roster
    from specdojo_routine.store.definitions.safeyaml import read_definition

    report, data = read_definition(members, paths.rel(members), "members")
    roster = agent_rules.build_roster(report, Node(value=data)) if data is not None \
        else Roster(path=paths.rel(members))
    problems = list(report.problems)
    defaults_path = paths.exec_defaults
    defaults = ExecDefaults(path=paths.rel(defaults_path))
    if defaults_path.is_file():
        dreport, ddata = read_definition(defaults_path, paths.rel(defaults_path), "exec-defaults")
        if ddata is not None:
            defaults = agent_rules.build_exec_defaults(dreport, Node(value=ddata))
            agent_rules.check_templates(dreport, defaults, roster)
        problems += dreport.problems
    return AgentConfig(roster=roster, defaults=defaults, problems=tuple(problems))
