"""Roster and exec-defaults values pasted into a provider's ``command_template`` (SPEC §11.1):
``mode`` is ``edit`` or ``review``, and ``proficiency`` and the ``command_params`` variables
are shell words from a safe charset. Anything else is a located ``validate`` error and is
refused at launch, so a shared roster cannot make the launch command run code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specdojo_routine.core import agent_rules
from specdojo_routine.core.agent_rules import ExecDefaults, Member, Provider
from specdojo_routine.core.launch_words import words_problem
from tests.agenthelper import AgentProject

MARKER = "PWNED"


@pytest.fixture
def ap(tmp_path: Path) -> AgentProject:
    project = AgentProject(tmp_path / "proj")
    project.edit_job("job-e", agent="{executor: editor}")
    return project


def _roster(ap: AgentProject, old: str, new: str) -> None:
    path = ap.root / "members.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _run(ap: AgentProject) -> dict[str, object]:
    done = ap.cli("job", "run", "--job", "job-e", "--input", "period=w1", "--json")
    data: dict[str, object] = json.loads(done.stdout)
    return data


def test_a_mode_that_is_not_edit_or_review_is_refused(ap: AgentProject) -> None:
    """``mode: "edit; touch PWNED #"`` is a validate error at the value, and the launch is
    refused: the shell never sees it."""
    _roster(ap, "mode: edit\n", f'mode: "edit; touch {MARKER} #"\n')
    done = ap.cli("validate")
    assert 1 == done.returncode
    assert ('members.yaml:7:11: members[0].mode must be edit or review (got "edit; touch '
            'PWNED #")') in done.stderr
    out = _run(ap)
    assert ("failed", False) == (out["state"], (ap.root / MARKER).exists())
    assert ('the roster has 1 error(s), the first members.yaml:7:11: members[0].mode must be '
            "edit or review") in str(out["reason"])
    assert [] == ap.launches()


@pytest.mark.parametrize("value", [f"high$(touch {MARKER})", f"high;touch {MARKER}", "a  b",
                                   "'high'", "high\nx", "*", "~root"])
def test_a_proficiency_outside_the_safe_charset_is_refused(ap: AgentProject, value: str) -> None:
    """Located at the value in the roster (the launch refusal: the test below)."""
    _roster(ap, "proficiency: high\n", f"proficiency: {json.dumps(value)}\n")
    done = ap.cli("validate")
    assert 1 == done.returncode
    assert ["members.yaml:8:18: members[0].proficiency must be words of letters, digits and "
            "._:/=,+@%- separated by single spaces (it is pasted into command_template as "
            f"shell words); got {json.dumps(value)}"] == done.stderr.splitlines()


@pytest.mark.parametrize(("written", "shown"), [
    (f"--edit; touch {MARKER}", f'"--edit; touch {MARKER}"'), ("--edit\\0", '"--edit\\x00"')])
def test_a_command_params_value_outside_the_safe_charset_is_refused(
        ap: AgentProject, written: str, shown: str) -> None:
    """The error is at the value in the exec-defaults file, reported once (a NUL too, which
    no command line can hold)."""
    path = ap.root / ".specdojo" / "exec-defaults.yaml"
    path.write_text(path.read_text().replace('"--edit"', f'"{written}"'))
    done = ap.cli("validate")
    assert 1 == done.returncode
    lines = [line for line in done.stderr.splitlines() if "exec-defaults" in line]
    assert [".specdojo/exec-defaults.yaml:9:23: providers.fake.command_params.by_mode.edit.flags"
            " must be words of letters, digits and ._:/=,+@%- separated by single spaces (it is "
            f"pasted into command_template as shell words); got {shown}"] == lines
    out = _run(ap)
    assert ("failed", False, []) == (out["state"], (ap.root / MARKER).exists(), ap.launches())


def test_safe_words_are_pasted_as_separate_arguments(ap: AgentProject) -> None:
    """Spaces between safe words still give separate arguments, as before."""
    path = ap.root / ".specdojo" / "exec-defaults.yaml"
    path.write_text(path.read_text().replace('"--edit"', '"--edit --model=a/b:1 -x@%+,."'))
    assert 0 == ap.cli("validate").returncode
    assert "succeeded" == _run(ap)["state"]
    assert [["--mode=edit", "--edit", "--model=a/b:1", "-x@%+,."]] == [
        x["argv"] for x in ap.launches()]


def test_launch_command_refuses_unsafe_values_built_in_code() -> None:
    """The library check holds for a roster built without the YAML loader too."""
    defaults = ExecDefaults(providers={"p": Provider(
        name="p", command_template="agent {mode} {proficiency} {flags}",
        by_mode={"edit": {"flags": "--ok"}})})
    assert "agent edit senior --ok" == agent_rules.launch_command(
        defaults, Member(nickname="a", provider="p", mode="edit", proficiency="senior"))
    for member in (Member(nickname="a", provider="p", mode="edit; id", proficiency="x"),
                   Member(nickname="a", provider="p", mode="edit", proficiency="x`id`")):
        with pytest.raises(agent_rules.UnsafeLaunchValue):
            agent_rules.launch_command(defaults, member)


@pytest.mark.parametrize(("value", "safe"), [
    ("", True), ("--fast", True), ("--a b --c=d", True), ("a/b:c@d%e+f,g.h_i", True),
    ("a  b", False), (" a", False), ("a ", False), ("a\tb", False), ("$x", False),
    ("a;b", False), ("a|b", False), ("a&b", False), ("a>b", False), ("'a'", False),
    ('"a"', False), ("`a`", False), ("a*", False), ("a?", False), ("[a]", False),
    ("~", False), ("a\\b", False), ("{a,b}", False), ("#a", False), ("a\nb", False),
])
def test_the_safe_charset(value: str, safe: bool) -> None:
    assert safe == (words_problem(value) is None)
