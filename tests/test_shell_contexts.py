"""Shell contexts where a quoted value is still not data (SPEC §7.2 "data, never code"):
refused at ``validate`` with the place and what to write instead, or warned about.

- a here-document delimiter the shells read differently from a plain reading (a backslash,
  ``$``, a backquote, partial quoting);
- a value right after a parameter name, which it would lengthen (``"$HOME{{x}}"``);
- ``$((`` closed by one ``)``, which bash reads as ``$( (``; bash's arithmetic contexts, which
  evaluate a quoted value (``[[ ]]``, ``(( ))``, ``let``, ``$[ ]``, ``declare -i``, subscripts);
- ``sh -c``, ``ssh``, ``eval`` and the like, which run an argument as shell code again.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import Project, period_job

from specdojo_routine.core.templates import (
    TemplateError,
    check_shell_template,
    inner_shell_placeholders,
    render_shell,
)

BASH_PAYLOAD = "HOME[$(touch PWNED)]"


@pytest.mark.parametrize(("template", "message"), [
    ("cat <<'END\\X'\nENDX\n{{inputs.x}}\nEND\\X", "here-document delimiter with a backslash"),
    ('cat <<"END\\X"\nENDX\n{{inputs.x}}\nEND\\X', "here-document delimiter with a backslash"),
    ("cat <<\\EOF\nx\nEOF\necho {{inputs.x}}", "write <<'EOF' or <<EOF"),
    ("cat <<E'O'F\nx\nEOF\necho {{inputs.x}}", "partial quoting"),
    ("cat <<E$X\nx\nE$X\necho {{inputs.x}}", "here-document delimiter"),
])
def test_a_here_document_delimiter_read_differently_is_refused(
    template: str, message: str) -> None:
    """Quote removal in a delimiter differs by quote kind (a backslash stays inside '...'):
    rather than guess, every placeholder after such a delimiter is refused."""
    with pytest.raises(TemplateError, match=message):
        check_shell_template(template)


@pytest.mark.parametrize(("template", "name"), [
    ('echo "$HOME{{inputs.x}}"', "HOME"),
    ("echo $X{{inputs.x}}", "X"),
    ('echo "$_{{inputs.x}}"', "_"),
    ('echo "$1{{inputs.x}}"', "1"),
    ('echo "$@{{inputs.x}}"', "@"),
    ('echo "$#{{inputs.x}}"', "#"),
    ("echo `echo $HO\\\nME{{inputs.x}}`", "HOME"),
    ("{{specdojo}} x $P{{specdojo}}", "P"),
])
def test_a_placeholder_right_after_a_parameter_name_is_refused(template: str, name: str) -> None:
    """``"$HOME{{x}}"`` with x = ``Y_TOKEN`` reads ``$HOMEY_TOKEN``: the value would choose
    the variable. The message says what to write."""
    with pytest.raises(TemplateError) as caught:
        check_shell_template(template)
    assert f"right after the parameter ${name} (write ${{{name}}} instead)" in caught.value.message


def test_braces_end_the_name_so_the_value_is_data(tmp_path: Path) -> None:
    """``${HOME}{{x}}`` is what to write: the value arrives whole after the variable."""
    command = render_shell('printf %s "${HOME}{{inputs.x}}"', {"inputs.x": "Y_X$(touch PWNED)"})
    for shell in ("/bin/dash", "/bin/bash"):
        done = subprocess.run([shell, "-eu", "-c", command], cwd=tmp_path, capture_output=True,
                              text=True, env={"PATH": os.environ["PATH"], "HOME": "/h"},
                              check=True)
        assert ("/hY_X$(touch PWNED)", []) == (done.stdout, os.listdir(tmp_path))


@pytest.mark.parametrize(("template", "message"), [
    ('printf %s "$((printf %s a) ; printf %s "{{inputs.x}}")"', r"closed by a single \)"),
    ("[[ {{inputs.x}} -eq 1 ]] || true", r"\[\[ \.\.\. \]\] test"),
    ('if [[ "$(echo "{{inputs.x}}")" = a ]]; then :; fi', r"\[\[ \.\.\. \]\] test"),
    ("[[ -n a && ( {{inputs.x}} -eq 1 ) ]]", r"\[\[ \.\.\. \]\] test"),
    ("(( {{inputs.x}} > 1 )) || true", "arithmetic expansion"),
    ("for ((i = 0; i < {{inputs.x}}; i++)); do :; done", "arithmetic expansion"),
    ("echo $(( $(printf %s {{inputs.x}}) ))", "arithmetic expansion"),
    ("let n={{inputs.x}} || true", "let command"),
    ("X=1 let n={{inputs.x}}", "let command"),
    ("echo $[ {{inputs.x}} ]", r"\$\[\.\.\.\] expansion"),
    ("declare -i n={{inputs.x}}", "`declare -i`"),
    ('local -ri n; n="{{inputs.x}}"', "`local -ri`"),
    ('typeset -n ref="{{inputs.x}}"', "`typeset -n`"),
    ('a["{{inputs.x}}"]=1', "array subscript"),
    ('a[ "{{inputs.x}}" ]=1', "array subscript"),
    ("declare a[{{inputs.x}}]=1", "array subscript"),
    ('a=( ["{{inputs.x}}"]=1 )', "array subscript"),
])
def test_where_bash_disagrees_or_evaluates_arithmetic_a_placeholder_is_refused(
    template: str, message: str) -> None:
    """bash evaluates a quoted ``HOME[$(cmd)]`` there and runs ``cmd``; dash reads other
    words. Refused, as ``$((...))`` is."""
    with pytest.raises(TemplateError, match=message):
        check_shell_template(template)


@pytest.mark.parametrize("template", [
    '[ "{{inputs.x}}" -eq 1 ] 2>/dev/null || printf no',
    'test "{{inputs.x}}" = a || printf no',
    "[[ -n a ]] && printf %s {{inputs.x}}",
    "echo $((1 + 2)) {{inputs.x}}",
    "( (printf %s a) ); printf %s {{inputs.x}}",
    'printf "%s" "$( (printf %s a) ; printf %s "{{inputs.x}}")"',
    "echo a[b] {{inputs.x}}",
    'n=1; printf %s "{{inputs.x}}" "$n"',
    'local_name="{{inputs.x}}"; printf %s "$local_name"',
])
def test_the_refusals_stay_narrow(template: str, tmp_path: Path) -> None:
    """Nearby ordinary contexts still render, and the value stays data in both shells."""
    command = render_shell(template, {"inputs.x": BASH_PAYLOAD})
    for shell in ("/bin/dash", "/bin/bash"):
        subprocess.run([shell, "-u", "-c", command], cwd=tmp_path, capture_output=True,
                       env={"PATH": os.environ["PATH"], "HOME": "/h"}, check=False)
        assert [] == os.listdir(tmp_path), (shell, command)


@pytest.mark.parametrize(("template", "command"), [
    ('sh -c "echo {{inputs.x}}"', "sh -c"),
    ('bash -lc "{{inputs.x}}"', "bash -lc"),
    ("/bin/sh -c 'printf %s {{inputs.x}}'", "sh -c"),
    ('ssh host "ls {{inputs.x}}"', "ssh"),
    ('eval "echo {{inputs.x}}"', "eval"),
    ('su -c "{{inputs.x}}" bob', "su -c"),
    ('find . | xargs sh -c "echo {{inputs.x}}"', "sh -c"),
    ('out=$(sh -c "echo {{inputs.x}}")', "sh -c"),
])
def test_a_placeholder_in_an_inner_shell_command_is_found(template: str, command: str) -> None:
    """Quoting protects one shell level: these commands run the argument as code again."""
    assert [("inputs.x", command)] == [(ph.name, c) for ph, c in inner_shell_placeholders(template)]


@pytest.mark.parametrize("template", [
    "sh -c 'printf %s \"$1\"' sh \"{{inputs.x}}\"",  # the safe way: a positional argument
    "sh script.sh {{inputs.x}}",
    "echo {{inputs.x}}; sh -c true",
    'printf %s "{{inputs.x}}" | ssh_like_tool',
])
def test_an_argument_that_stays_data_is_not_flagged(template: str) -> None:
    assert [] == inner_shell_placeholders(template)


def test_validate_refuses_at_the_place_and_warns_about_an_inner_shell(project: Project) -> None:
    """The refusals are validate errors located in the file, and the inner shell a located
    warning; a Job with only the warning still validates."""
    project.job("job-var", period_job("Var", "'printf %s \"$HOME{{inputs.period}}\"'"))
    checked = project.cli("validate", env=project.env())
    assert 1 == checked.returncode, checked.stderr
    assert ("jobs/job-var.yaml:7:29: task.command: placeholder {{inputs.period}} cannot be "
            "used safely right after the parameter $HOME (write ${HOME} instead)"
            ) in checked.stderr
    project.job("job-var", period_job("Var", "'sh -c \"echo {{inputs.period}}\"'"))
    checked = project.cli("validate", env=project.env())
    assert 0 == checked.returncode, checked.stderr
    assert ("jobs/job-var.yaml:7:25: warning: task.command: {{inputs.period}} is in an argument "
            "`sh -c` runs as shell code again") in checked.stdout + checked.stderr
