"""``job run --reporter-by / --review-by`` (SPEC §11.3, §11.4): the CLI's agent choices.

A nickname given on the command line must be a member of the roster; an unknown one (or one
given to a project without a roster) is a usage error (exit 2).
"""

from __future__ import annotations

from specdojo_routine.core.errors import UsageError
from specdojo_routine.execute import agentflow
from specdojo_routine.execute.agents import RosterExecutor
from specdojo_routine.store import agentconfig
from specdojo_routine.store.config import ProjectPaths


def check_nicknames(paths: ProjectPaths, **given: str | None) -> None:
    """Each ``--<option> NICK`` names a member of the roster."""
    named = {option: nick for option, nick in given.items() if nick}
    if not named:
        return
    config = agentconfig.load_agent_config(paths)
    for option, nick in named.items():
        flag = "--" + option.replace("_", "-")
        if config is None:
            raise UsageError(f"{flag} {nick}: the project names no members_path (roster)")
        if config.roster.get(str(nick)) is None:
            raise UsageError(f'{flag} "{nick}" is not a member of {config.roster.path}; '
                             "register the nickname there before use")


def cli_executor(paths: ProjectPaths, reporter_by: str | None) -> RosterExecutor | None:
    """The roster executor with ``--reporter-by`` applied (None without a roster)."""
    check_nicknames(paths, reporter_by=reporter_by)
    return agentflow.default_executor(paths, reporter=reporter_by)
