"""Templates: routine inputs, plain text, job context and shell-safe commands (SPEC §3, §7.2)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specdojo_routine.core.templates import (
    TemplateError,
    check_shell_template,
    iso_week,
    job_context,
    render_routine_inputs,
    render_shell,
    render_text,
)
from specdojo_routine.execute.runner import run_shell

AUG_7 = datetime(2026, 8, 7, 8, 0, tzinfo=UTC)

# --- iso_week / routine inputs ---------------------------------------------------------------


def test_iso_week_in_utc() -> None:
    """iso_week formats the ISO week of the instant in UTC when no timezone is given."""
    assert "2026-W32" == iso_week(AUG_7, None)


def test_iso_week_uses_the_routine_timezone() -> None:
    """A Sunday evening in UTC is already Monday of the next ISO week in Tokyo."""
    sunday_utc = datetime(2026, 1, 4, 20, 0, tzinfo=UTC)
    assert ("2026-W01", "2026-W02") == (
        iso_week(sunday_utc, None),
        iso_week(sunday_utc, "Asia/Tokyo"),
    )


def test_iso_week_belongs_to_the_iso_year() -> None:
    """1 January 2027 (a Friday) is in week 53 of ISO year 2026."""
    assert "2026-W53" == iso_week(datetime(2027, 1, 1, 12, tzinfo=UTC), "UTC")


def test_render_routine_inputs_scheduled_at_has_milliseconds() -> None:
    """{{scheduled_at}} renders as UTC ISO with milliseconds."""
    rendered = render_routine_inputs(
        {"at": "{{scheduled_at}}", "period": "week {{ scheduled_at | iso_week }}", "x": "plain"},
        scheduled_for=AUG_7,
        timezone="Asia/Tokyo",
    )
    assert {"at": "2026-08-07T08:00:00.000Z", "period": "week 2026-W32", "x": "plain"} == rendered


@pytest.mark.parametrize("template", ["{{inputs.x}}", "{{scheduled_at | upper}}", "{{job_id}}"])
def test_render_routine_inputs_rejects_other_values(template: str) -> None:
    """Routine inputs may use nothing but scheduled_at and its iso_week filter."""
    with pytest.raises(TemplateError, match="unknown template value"):
        render_routine_inputs({"x": template}, scheduled_for=AUG_7, timezone=None)


# --- render_text / job_context ---------------------------------------------------------------


def test_render_text_substitutes_full_names() -> None:
    """render_text replaces each placeholder by the value of its full name."""
    values = {"job_id": "job-a", "inputs.period": "2026-W32"}
    assert "job-a:2026-W32" == render_text("{{job_id}}:{{ inputs.period }}", values)


def test_render_text_missing_value_is_an_error() -> None:
    """A name without a value is a TemplateError naming it."""
    with pytest.raises(TemplateError, match=r"unknown template value \{\{inputs.nope\}\}"):
        render_text("{{inputs.nope}}", {})


def test_render_text_job_run_id_before_identity_is_explained() -> None:
    """job_run_id is unavailable while the run identity (the key) is being computed."""
    with pytest.raises(TemplateError, match="before the Job Run identity exists"):
        render_text("{{job_run_id}}", {"job_id": "job-a"})


def test_render_text_empty_if_missing_renders_blank() -> None:
    """Missing names under an optional root render as empty text, like the upstream tool."""
    rendered = render_text(
        "[{{checkpoint.revision}}]", {}, empty_if_missing=frozenset({"checkpoint"})
    )
    assert "[]" == rendered


def test_render_text_rejects_filters() -> None:
    """Filters other than in routine inputs are template errors."""
    with pytest.raises(TemplateError, match="unknown template filter"):
        render_text("{{job_id | iso_week}}", {"job_id": "job-a"})


def test_job_context_flattens_values() -> None:
    """Lists join with ',', booleans are true/false, nested mappings use dotted names."""
    context = job_context(
        job_id="job-a",
        project_id="p1",
        specdojo="specdojo",
        scheduled_at="2026-08-07T08:00:00.000Z",
        inputs={"types": ["todo", "risk"], "dry": True, "limit": 5, "none": None},
        checkpoint={"git": {"head": "abc"}},
        job_run_id=None,
    )
    assert {
        "job_id": "job-a",
        "project_id": "p1",
        "specdojo": "specdojo",
        "scheduled_at": "2026-08-07T08:00:00.000Z",
        "inputs.types": "todo,risk",
        "inputs.dry": "true",
        "inputs.limit": "5",
        "inputs.none": "",
        "checkpoint.git.head": "abc",
    } == context


def test_job_context_includes_job_run_id_once_known() -> None:
    """job_run_id is part of the context once the run identity exists."""
    context = job_context(
        job_id="job-a",
        project_id="p1",
        specdojo="specdojo",
        scheduled_at="t",
        inputs={},
        checkpoint=None,
        job_run_id="JBR-a-0123456789ab",
    )
    assert "JBR-a-0123456789ab" == context["job_run_id"]


# --- render_shell: values reach the shell as data ---------------------------------------------

NASTY = [
    'x"; touch PWNED; echo "',
    "$(touch PWNED)",
    "`touch PWNED`",
    "'; touch PWNED; '",
    "line1\nline2; touch PWNED",
    "*",
    "~",
    "$HOME",
    "",
    "a\\b\\",
    "\\$(touch PWNED)",
    "日本語 😀 \t end",
    "-n",
    "#not a comment",
]

CONTEXTS = {
    "bare": ("printf '%s|' {{inputs.x}}", "{v}|"),
    "double": ('printf "%s|" "{{inputs.x}}"', "{v}|"),
    "single": ("printf '%s|' '{{inputs.x}}'", "{v}|"),
    "option": ("printf '%s|' --v={{inputs.x}}", "--v={v}|"),
    "pre-post": ('printf "%s|" "pre-{{inputs.x}}-post"', "pre-{v}-post|"),
    "single-pre-post": ("printf '%s|' 'pre-{{inputs.x}}-post'", "pre-{v}-post|"),
}


def _run(command: str, cwd: Path) -> str:
    outcome = run_shell(command, cwd=cwd, env=dict(os.environ), timeout_s=20)
    assert 0 == outcome.exit_code, outcome.stderr
    return outcome.stdout


@pytest.mark.parametrize("value", NASTY, ids=range(len(NASTY)))
@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_render_shell_value_is_data(context: str, value: str, tmp_path: Path) -> None:
    """In every quoting context the command receives the value verbatim and runs nothing else."""
    template, expected = CONTEXTS[context]
    output = _run(render_shell(template, {"inputs.x": value}), tmp_path)
    assert (expected.format(v=value), []) == (output, sorted(os.listdir(tmp_path)))


@pytest.mark.parametrize("value", NASTY, ids=range(len(NASTY)))
def test_render_shell_inside_command_substitution(value: str, tmp_path: Path) -> None:
    """Inside "$( )" and "` `" the inner command receives the value verbatim."""
    template = (
        "printf '%s|' \"$(printf '%s' {{inputs.x}})\" \"`printf '%s' \"{{inputs.x}}\"`\" "
        "`printf '%s' '{{inputs.x}}' | od -An -c | tr -d ' \\n'`"
    )
    reference = subprocess.run(
        ["od", "-An", "-c"], input=value.encode(), capture_output=True, check=True
    ).stdout.decode()
    od = "".join(reference.split())
    stripped = value.rstrip("\n")
    output = _run(render_shell(template, {"inputs.x": value}), tmp_path)
    assert (f"{stripped}|{stripped}|{od}|" if od else f"{stripped}|{stripped}|", []) == (
        output,
        sorted(os.listdir(tmp_path)),
    )


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
@pytest.mark.parametrize("value", NASTY, ids=range(len(NASTY)))
def test_render_shell_is_also_safe_under_bash(value: str, tmp_path: Path) -> None:
    """Where /bin/sh is bash (macOS), the rendered command means the same."""
    template = " ".join(t for t, _ in CONTEXTS.values()).replace("printf", ";printf")[1:]
    expected = "".join(e.format(v=value) for _, e in CONTEXTS.values())
    command = render_shell(template, {"inputs.x": value})
    result = subprocess.run(
        ["bash", "-eu", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert (expected, []) == (result.stdout, sorted(os.listdir(tmp_path)))


PROPERTY_TEMPLATE = (
    "printf '%s\\0' {{inputs.x}} \"{{inputs.x}}\" '{{inputs.x}}' --v={{inputs.x}} "
    "\"pre-{{inputs.x}}-post\" 'a{{inputs.x}}b' \"$(printf '%s' {{inputs.x}})\" "
    '"$(printf \'%s\' "{{inputs.x}}")" '
    '"`printf \'%s\' "{{inputs.x}}"`"  # {{inputs.x}}'
)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=st.text(st.characters(codec="utf-8", exclude_characters="\0")))
def test_render_shell_property_printf_receives_value(value: str, tmp_path: Path) -> None:
    """For any text (no NUL) printf receives exactly the value in every quoting context."""
    output = _run(render_shell(PROPERTY_TEMPLATE, {"inputs.x": value}), tmp_path)
    stripped = value.rstrip("\n")
    expected = [value, value, value, f"--v={value}", f"pre-{value}-post", f"a{value}b"]
    assert [*expected, stripped, stripped, stripped, ""] == output.split("\0")


def test_render_shell_upstream_style_renders_like_plain_text() -> None:
    """Upstream-style "{{inputs.x}}" with an ordinary value renders exactly as before."""
    template = 'tool report --period "{{inputs.period}}" --project "{{project_id}}"'
    values = {"inputs.period": "2026-W32", "project_id": "p1"}
    assert render_text(template, values) == render_shell(template, values)


def test_render_shell_specdojo_is_inserted_as_words(tmp_path: Path) -> None:
    """{{specdojo}} is a trusted prefix of shell words, not a single quoted word."""
    prefix = shlex.join(["printf", "%s|"])
    command = render_shell("{{specdojo}} a 'b c'", {"specdojo": prefix})
    assert "a|b c|" == _run(command, tmp_path)


def test_render_shell_trusted_inside_quotes_is_data(tmp_path: Path) -> None:
    """A trusted name standing inside quotes is still inserted as data."""
    command = render_shell("printf '%s|' \"{{specdojo}}\"", {"specdojo": "a $(b)"})
    assert "a $(b)|" == _run(command, tmp_path)


def test_render_shell_comment_cannot_be_escaped(tmp_path: Path) -> None:
    """A value in a comment cannot end the comment with a newline."""
    command = render_shell("printf ok # {{inputs.x}}\n", {"inputs.x": "\ntouch PWNED"})
    assert ("ok", []) == (_run(command, tmp_path), sorted(os.listdir(tmp_path)))


def test_render_shell_after_a_heredoc(tmp_path: Path) -> None:
    """Placeholders after a here-document ends are quoted for the top level again."""
    template = "cat <<'EOF'\n{ it's literal }\nEOF\nprintf '%s' {{inputs.x}}"
    command = render_shell(template, {"inputs.x": "$(touch PWNED)"})
    assert ("{ it's literal }\n$(touch PWNED)", []) == (
        _run(command, tmp_path),
        sorted(os.listdir(tmp_path)),
    )


def test_render_shell_a_line_continuation_joins_the_lines(tmp_path: Path) -> None:
    """A backslash-newline is removed by the shell before it reads the line: after
    ``start \\<newline>`` a ``#`` starts a comment, so the value is quoted for a comment and
    its newlines cannot end it."""
    command = render_shell("printf start \\\n#{{inputs.x}}", {"inputs.x": "x\ntouch PWNED\n#"})
    assert ("start", []) == (_run(command, tmp_path), sorted(os.listdir(tmp_path)))


def test_render_shell_a_line_continuation_in_single_quotes_is_literal(tmp_path: Path) -> None:
    """Inside single quotes a backslash-newline stays two characters, and the quoting goes on."""
    command = render_shell("printf '%s' 'a\\\n{{inputs.x}}'", {"inputs.x": "'$(touch PWNED)"})
    assert ("a\\\n'$(touch PWNED)", []) == (_run(command, tmp_path), sorted(os.listdir(tmp_path)))


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("cat <<EOF\n{{inputs.x}}\nEOF", "inside a here-document body"),
        ("cat <\\\n<EOF\n{{inputs.x}}\nEOF", "inside a here-document body"),
        ("cat <<\\\n-EOF\n\t{{inputs.x}}\n\tEOF", "inside a here-document body"),
        ('echo "$\\\n{X:-{{inputs.x}}}"', "inside a \\$\\{...\\} expansion"),
        ("echo $\\\n(\\\n( 1 + {{inputs.x}} ))", "inside an arithmetic expansion"),
        ("cat <<E\\\nOF\nx\nEOF\necho {{inputs.x}}", "here-document operator"),
        ("cat <<EOF\na\\\nEOF\nEOF\necho {{inputs.x}}", "backslash-newline inside a here-doc"),
        ("echo $\\\n{{inputs.x}}", "right after '\\$'"),
        ("cat <<-EOF\n\tline\n\t{{inputs.x}}\n\tEOF", "inside a here-document body"),
        ("cat <<{{inputs.x}}\nbody\n", "here-document operator"),
        ('echo "${HOME:-{{inputs.x}}}"', "inside a \\$\\{...\\} expansion"),
        ("echo $(( 1 + {{inputs.x}} ))", "inside an arithmetic expansion"),
        ("echo \\{{inputs.x}}", "right after a backslash"),
        ('echo "\\{{inputs.x}}"', "right after a backslash"),
        ("echo ${{inputs.x}}", "right after '\\$'"),
        ("echo $(case a in a) echo;; esac) {{inputs.x}}", "after a case statement"),
        ("echo `echo \\`echo\\`` {{inputs.x}}", "use \\$\\( \\) instead"),
        ("echo $'a' {{inputs.x}}", "after a \\$'...' string"),
        ("echo '{{inputs.x}}", "unterminated single quote"),
        ('echo "{{inputs.x}}', "unterminated double quote"),
        ("echo $(echo {{inputs.x}}", "unterminated \\$\\("),
    ],
)
def test_render_shell_refuses_unsafe_contexts(template: str, message: str) -> None:
    """Where the quoting context is unsafe or unknown, rendering refuses instead of guessing."""
    with pytest.raises(TemplateError, match=message):
        render_shell(template, {"inputs.x": "v"})


def test_render_shell_missing_value_is_an_error() -> None:
    """An unknown name in a command is a TemplateError, not an empty word."""
    with pytest.raises(TemplateError, match="unknown template value"):
        render_shell("echo {{inputs.nope}}", {})


def test_check_shell_template_accepts_the_upstream_style() -> None:
    """check_shell_template passes a typical upstream command definition."""
    check_shell_template(
        '{{specdojo}} exec run --project "{{project_id}}" --since "{{checkpoint.revision}}"\n'
        "# done for {{job_id}}\n"
    )


def test_check_shell_template_reports_the_offset() -> None:
    """A refused placeholder is reported at its offset in the template."""
    template = "echo ok\ncat <<EOF\n{{inputs.x}}\nEOF\n"
    with pytest.raises(TemplateError) as caught:
        check_shell_template(template)
    assert template.index("{{") == caught.value.offset


def test_render_shell_refuses_a_nul_in_the_command_or_a_value() -> None:
    """No process receives a NUL in its arguments: the renderer says where it is instead of
    the process start failing with 'embedded null byte'."""
    with pytest.raises(TemplateError, match="NUL character") as caught:
        render_shell("echo a\0b", {})
    assert 6 == caught.value.offset
    held = r"the value of \{\{inputs\.x\}\} holds a NUL"
    with pytest.raises(TemplateError, match=held) as caught:
        render_shell("echo {{inputs.x}}", {"inputs.x": "a\0b"})
    assert 5 == caught.value.offset
