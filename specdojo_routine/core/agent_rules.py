"""Agents from the project's own configuration (SPEC §11.1, §11.4), pure.

- the roster (``members_path``, upstream's ``pm-members.yaml``) and the exec defaults
  (``.specdojo/exec-defaults.yaml``: provider ``command_template`` / ``command_params``,
  ``rate_limit_detection``), built from loaded YAML :class:`Node` trees with positions;
- the launch command of a member (its ``command``, else its provider's template expanded);
- the rate-limit signal of a finished agent;
- which member runs a role when the Job names none;
- the ``validate`` check of unresolvable placeholders (a Job's nicknames and the members the
  run picks for it are checked in :mod:`.agent_checks`).

Loading the files is :mod:`specdojo_routine.store.definitions.agentconfig`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import attrs

from specdojo_routine.core.launch_words import mode_problem, words_problem
from specdojo_routine.core.shellquote import shell_problem
from specdojo_routine.core.validation import (
    Node,
    Pos,
    Report,
    flag,
    got,
    is_int,
    mapping,
    text,
    unknown_keys,
)

PLACEHOLDER = re.compile(r"(?<![$])\{([a-z_][a-z0-9_]*)\}")
BUILTIN_VARIABLES = ("nickname", "mode", "proficiency")
NICKNAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
ROLES = ("executor", "reporter", "analysis", "review-executor", "review-reporter")


class AgentConfigError(Exception):
    """A member's launch command cannot be built (the message says why)."""


class UnsafeLaunchValue(AgentConfigError):
    """A value to paste into a launch command is not safe shell words (``validate`` reports
    it at the value itself)."""


@attrs.frozen(kw_only=True, repr=False)
class Member:
    nickname: str
    type: str = "agent"
    provider: str | None = None
    mode: str | None = None
    proficiency: str | None = None
    priority: int | None = None
    command: str | None = None
    disabled: bool = False
    stage_role: str | None = None
    index: int = 0  # roster order (ties of priority)

    @property
    def enabled_agent(self) -> bool:
        return self.type == "agent" and not self.disabled


@attrs.frozen(kw_only=True, repr=False)
class Roster:
    path: str  # root-relative, for messages
    members: tuple[Member, ...] = ()

    def get(self, nickname: str) -> Member | None:
        return next((m for m in self.members if m.nickname == nickname), None)


@attrs.frozen(kw_only=True, repr=False)
class Detection:
    """``rate_limit_detection``; a field left ``None`` falls back to the global block."""

    exit_codes: tuple[int, ...] | None = None
    stderr_patterns: tuple[str, ...] | None = None
    stderr_requires_nonzero_exit: bool | None = None

    def over(self, base: Detection | None) -> Detection:
        if base is None:
            return self
        return Detection(
            exit_codes=base.exit_codes if self.exit_codes is None else self.exit_codes,
            stderr_patterns=(base.stderr_patterns if self.stderr_patterns is None
                             else self.stderr_patterns),
            stderr_requires_nonzero_exit=(
                base.stderr_requires_nonzero_exit if self.stderr_requires_nonzero_exit is None
                else self.stderr_requires_nonzero_exit))


@attrs.frozen(kw_only=True, repr=False)
class Provider:
    name: str
    command_template: str | None = None
    template_pos: Pos = (1, 1)
    # the variables as loaded: text, a number, or a value no command can hold (null, a list)
    by_mode: Mapping[str, Mapping[str, object]] = attrs.field(factory=dict)
    by_proficiency: Mapping[str, Mapping[str, object]] = attrs.field(factory=dict)
    detection: Detection | None = None


@attrs.frozen(kw_only=True, repr=False)
class ExecDefaults:
    path: str = ".specdojo/exec-defaults.yaml"
    detection: Detection | None = None
    providers: Mapping[str, Provider] = attrs.field(factory=dict)

    def detection_for(self, provider: str | None) -> Detection:
        found = self.providers.get(provider) if provider is not None else None
        own = found.detection if found is not None else None
        if own is None:
            return self.detection or Detection()
        return own.over(self.detection)


# --- building from YAML --------------------------------------------------------------------------

_MEMBER_KEYS = ("nickname", "type", "provider", "mode", "proficiency", "priority", "command",
                "disabled", "stage_role")


def build_roster(r: Report, root: Node) -> Roster:
    """The members of a roster file; unknown keys are ignored (upstream's file has more)."""
    members_node = root.get("members")
    if members_node is None or not isinstance(members_node.value, list):
        r.error(members_node.where() if members_node else (1, 1),
                "members must be a list of members")
        return Roster(path=r.path)
    members: list[Member] = []
    seen: set[str] = set()
    for index, node in enumerate(members_node.elements(lambda i: f"members[{i}]")):
        member = _member(r, node, index)
        if member is None:
            continue
        if member.nickname in seen:
            r.error(node.where(), f'duplicate member nickname "{member.nickname}"')
            continue
        seen.add(member.nickname)
        members.append(member)
    return Roster(path=r.path, members=tuple(members))


def _member(r: Report, node: Node, index: int) -> Member | None:
    if not mapping(r, node, " with nickname"):
        return None
    nick_node = node.get("nickname")
    nickname = nick_node.value if nick_node is not None else None
    if not isinstance(nickname, str) or not NICKNAME.fullmatch(nickname):
        r.error(nick_node.where() if nick_node else node.where(),
                f"{node.label}.nickname must match [a-z0-9][a-z0-9_-]* (got {got(nickname)})")
        return None
    values = {key: _optional_text(r, node.get(key)) for key in
              ("type", "provider", "mode", "proficiency", "command", "stage_role")}
    for key, check in (("mode", mode_problem), ("proficiency", words_problem)):
        value, value_node = values[key], node.get(key)
        if value_node is not None and value is not None and (problem := check(value)):
            r.error(value_node.where(), f"{value_node.label} {problem}")
    command_node = node.get("command")
    if command_node is not None and values["command"] and (
            problem := shell_problem(values["command"])) is not None:
        r.error(command_node.pos, f"{command_node.label}: {problem}")
    priority_node = node.get("priority")
    priority = priority_node.value if priority_node is not None else None
    if priority_node is not None and priority is not None and (
            isinstance(priority, bool) or not isinstance(priority, int)):
        r.error(priority_node.where(), f"{priority_node.label} must be an integer "
                f"(got {got(priority)})")
        priority = None
    return Member(nickname=nickname, type=values["type"] or "agent", provider=values["provider"],
                  mode=values["mode"], proficiency=values["proficiency"], priority=priority,
                  command=(values["command"] or "").strip() or None,
                  disabled=bool(flag(r, node.get("disabled"))), stage_role=values["stage_role"],
                  index=index)


def _optional_text(r: Report, node: Node | None) -> str | None:
    return None if node is None or node.value is None else text(r, node)


def build_exec_defaults(r: Report, root: Node) -> ExecDefaults:
    detection = _detection(r, root.get("rate_limit_detection"))
    providers: dict[str, Provider] = {}
    node = root.get("providers")
    if node is not None and mapping(r, node, " of provider names"):
        for name, child in node.entries():
            if mapping(r, child, " (command_template, command_params, ...)"):
                providers[str(name)] = _provider(r, str(name), child)
    return ExecDefaults(path=r.path, detection=detection, providers=providers)


def _provider(r: Report, name: str, node: Node) -> Provider:
    template_node = node.get("command_template")
    template = text(r, template_node, nonempty=True)
    params = node.get("command_params")
    tables: dict[str, dict[str, dict[str, object]]] = {"by_mode": {}, "by_proficiency": {}}
    if params is not None and mapping(r, params, " with by_mode and/or by_proficiency"):
        unknown_keys(r, params, tuple(tables), f"providers.{name}.command_params")
        for table, rows in tables.items():
            table_node = params.get(table)
            if table_node is None or not mapping(r, table_node, " of variable sets"):
                continue
            for key, row in table_node.entries():
                if mapping(r, row, " of variable names to text"):
                    rows[str(key)] = {str(k): v.value for k, v in row.entries()}
                    _check_words(r, row)
    return Provider(name=name, command_template=template,
                    template_pos=template_node.where() if template_node else node.key_pos,
                    by_mode=tables["by_mode"], by_proficiency=tables["by_proficiency"],
                    detection=_detection(r, node.get("rate_limit_detection")))


def _check_words(r: Report, row: Node) -> None:
    """Each text variable of a ``command_params`` row is safe shell words."""
    for _, value in row.entries():
        if isinstance(value.value, str) and (problem := words_problem(value.value)) is not None:
            r.error(value.where(), f"{value.label} {problem}")


def _detection(r: Report, node: Node | None) -> Detection | None:
    if node is None or not mapping(r, node, " (exit_codes, stderr_patterns, ...)"):
        return None
    codes = _list(r, node.get("exit_codes"), int)
    patterns = _list(r, node.get("stderr_patterns"), str)
    return Detection(exit_codes=None if codes is None else tuple(int(str(c)) for c in codes),
                     stderr_patterns=None if patterns is None else tuple(map(str, patterns)),
                     stderr_requires_nonzero_exit=flag(r, node.get("stderr_requires_nonzero_exit")))


def _list(r: Report, node: Node | None, kind: type) -> list[object] | None:
    if node is None:
        return None
    value = node.value
    if not isinstance(value, list) or not all(
            isinstance(v, kind) and not isinstance(v, bool) for v in value):
        r.error(node.where(), f"{node.label} must be a list of {kind.__name__} "
                f"(got {got(value)})")
        return None
    return list(value)


# --- launch commands -----------------------------------------------------------------------------


def _variables(provider: Provider, member: Member) -> dict[str, object]:
    mode_keys = {k for row in provider.by_mode.values() for k in row}
    prof_keys = {k for row in provider.by_proficiency.values() for k in row}
    both = sorted(mode_keys & prof_keys)
    if both:
        shown = ", ".join(f"{{{k}}}" for k in both)
        raise AgentConfigError(f"providers.{provider.name}.command_params defines {shown} in "
                               f"both by_mode and by_proficiency (member {member.nickname})")
    builtin = sorted((mode_keys | prof_keys) & set(BUILTIN_VARIABLES))
    if builtin:
        raise AgentConfigError(f"providers.{provider.name}.command_params must not redefine "
                               f"{{{builtin[0]}}} (member {member.nickname})")
    found: dict[str, object] = {"nickname": member.nickname}
    if member.mode:
        found["mode"] = member.mode
    if member.proficiency:
        found["proficiency"] = member.proficiency
    found.update(provider.by_mode.get(member.mode or "", {}))
    found.update(provider.by_proficiency.get(member.proficiency or "", {}))
    return found


def launch_command(defaults: ExecDefaults, member: Member) -> str:
    """The member's ``command``, else its provider's template expanded (SPEC §11.1); one
    ``/bin/sh`` cannot run (:func:`.shellquote.shell_problem`) is refused in the words
    ``validate`` uses, instead of by the shell at every launch. A substituted value that is
    not safe shell words (:mod:`.launch_words`) is refused: it would be code."""
    if (problem := mode_problem(member.mode)) is not None:
        raise UnsafeLaunchValue(f"member {member.nickname}: mode {problem}")
    if member.command:
        if (problem := shell_problem(member.command)) is not None:
            raise AgentConfigError(f"the command of member {member.nickname}: {problem}")
        return member.command
    provider = defaults.providers.get(member.provider or "")
    if provider is None or not provider.command_template:
        raise AgentConfigError(no_launcher(defaults, member) or "")
    variables = _variables(provider, member)
    missing = sorted({name for name in PLACEHOLDER.findall(provider.command_template)
                      if name not in variables})
    if missing:
        shown = ", ".join(f"{{{name}}}" for name in missing)
        raise AgentConfigError(
            f"cannot resolve {shown} in providers.{provider.name}.command_template for member "
            f"{member.nickname} (mode: {member.mode or '-'}, proficiency: "
            f"{member.proficiency or '-'})")
    used = {name: _variable_text(provider, member, name, variables[name])
            for name in PLACEHOLDER.findall(provider.command_template)}
    for name, text_value in used.items():
        if (problem := words_problem(text_value)) is not None:
            raise UnsafeLaunchValue(f"{{{name}}} of member {member.nickname} {problem}")
    command = PLACEHOLDER.sub(lambda m: used[m.group(1)], provider.command_template)
    if (problem := shell_problem(command)) is not None:
        raise AgentConfigError(f"providers.{provider.name}.command_template for member "
                               f"{member.nickname}: {problem}")
    return command


def _variable_text(provider: Provider, member: Member, name: str, value: object) -> str:
    """A variable's text in the command: text as written, a number as YAML wrote it. A null
    (``flags:`` with nothing after it), a boolean or a collection is refused: Python's
    spelling of it (``None``, ``True``, ``['a']``) is no value anyone meant to launch with,
    and an empty value is written ``""``."""
    if isinstance(value, str):
        return value
    if is_int(value) or isinstance(value, float):
        return str(value)
    table = "by_mode" if name in provider.by_mode.get(member.mode or "", {}) \
        else "by_proficiency"
    row = member.mode if table == "by_mode" else member.proficiency
    where = f"providers.{provider.name}.command_params.{table}.{row}.{name}"
    if value is None:
        raise AgentConfigError(f'{where} is null for member {member.nickname}; write "" for '
                               "an empty value")
    hint = (f'quote it ("{got(value)}")' if isinstance(value, bool)
            else "write it as one text")
    raise AgentConfigError(f"{where} must be text (got {got(value)}) for member "
                           f"{member.nickname}; {hint}")


def no_launcher(defaults: ExecDefaults, member: Member) -> str | None:
    """Why ``member`` cannot be launched at all (no ``command``, and no ``command_template``
    for its provider), or None."""
    provider = defaults.providers.get(member.provider or "")
    if member.command or (provider is not None and provider.command_template):
        return None
    source = f"provider {member.provider}" if member.provider else "no provider"
    return (f"member {member.nickname} has no command and {source} has no command_template "
            f"in {defaults.path}")


def check_templates(r: Report, defaults: ExecDefaults, roster: Roster) -> None:
    """``validate``: every member that uses a template can have its command built."""
    for member in roster.members:
        provider = defaults.providers.get(member.provider or "")
        if member.command or provider is None or not provider.command_template:
            continue
        try:
            launch_command(defaults, member)
        except UnsafeLaunchValue:
            continue  # reported at the value, in the roster or in the exec defaults
        except AgentConfigError as exc:
            r.error(provider.template_pos, str(exc))


# --- outcomes -------------------------------------------------------------------------------------


def rate_limit_signal(
    detection: Detection, exit_code: int | None, stdout: str, stderr: str
) -> str | None:
    """``exit code 42`` / ``stderr matched "rate limit"`` when the agent hit a limit.

    Patterns are case-insensitive substrings of stdout + stderr (some CLIs print the notice on
    stdout); by default they count only when the agent also exited non-zero."""
    if exit_code is not None and exit_code in (detection.exit_codes or ()):
        return f"exit code {exit_code}"
    requires = detection.stderr_requires_nonzero_exit
    if (requires is None or requires) and exit_code == 0:
        return None
    output = (stdout + "\n" + stderr).lower()
    for pattern in detection.stderr_patterns or ():
        if pattern and pattern.lower() in output:
            return f'stderr matched "{pattern}"'
    return None


# --- selection ------------------------------------------------------------------------------------


def _by_priority(members: Iterable[Member]) -> Member | None:
    ranked = sorted(members, key=lambda m: (m.priority is None, m.priority or 0, m.index))
    return ranked[0] if ranked else None


def executor_for_mode(roster: Roster, mode: str) -> Member | None:
    """The enabled agent whose ``mode`` is ``mode``, lowest ``priority`` first (SPEC §11.4)."""
    return _by_priority(m for m in roster.members if m.enabled_agent and m.mode == mode)


def auto_reporter(roster: Roster) -> Member | None:
    """The enabled agent with ``stage_role: reporter`` and the lowest ``priority``, or None."""
    return _by_priority(m for m in roster.members
                        if m.enabled_agent and m.stage_role == "reporter")


# --- who reviews -------------------------------------------------------------------------------

Source = Literal["--review-by", "--reporter-by", "task.review.agent.executor",
                 "task.review.agent.reporter", "auto", "none"]


@attrs.frozen(kw_only=True, repr=False)
class Pick:
    """A review agent and where it came from (for ``--dry-run`` and the review plan)."""

    nickname: str | None
    source: Source


def review_agents(
    roster: Roster, review: Mapping[str, Any] | None, *, review_by: str | None,
    reporter_by: str | None,
) -> tuple[Pick, Pick]:
    """(executor, reporter): ``--review-by``/``--reporter-by``, then ``task.review.agent.*``,
    then automatic (lowest-priority enabled ``mode: review`` agent; ``stage_role: reporter``
    agent, or none)."""
    agent = (review or {}).get("agent") or {}
    if review_by:
        executor = Pick(nickname=review_by, source="--review-by")
    elif agent.get("executor"):
        executor = Pick(nickname=str(agent["executor"]), source="task.review.agent.executor")
    else:
        auto = executor_for_mode(roster, "review")
        executor = Pick(nickname=auto.nickname if auto else None, source="auto")
    if reporter_by:
        reporter = Pick(nickname=reporter_by, source="--reporter-by")
    elif agent.get("reporter"):
        reporter = Pick(nickname=str(agent["reporter"]), source="task.review.agent.reporter")
    else:
        auto = auto_reporter(roster)
        reporter = Pick(nickname=auto.nickname if auto else None,
                        source="auto" if auto else "none")
    return executor, reporter
