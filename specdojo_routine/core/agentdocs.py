"""The Markdown an agent reads and writes (SPEC §11.1, §11.3, §11.4), pure.

The runner writes a *plan* (what to do) and a *result skeleton* (what the agent must fill in)
from the project's own templates when it has them (upstream's placeholders ``_FRONTMATTER_``,
``_JOB_ID_`` …), else from the built-in ones below, which have the same sections. After the
agent exits 0 the result decides: a mandatory marker left means "blocked"; ``outcome: noop``
in the frontmatter means nothing needed changing; a review result carries a ``verdict``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PLACEHOLDERS = ("_FRONTMATTER_", "_JOB_ID_", "_JOB_NAME_", "_RUN_ID_", "_SCHEDULED_AT_",
                "_JOB_DESCRIPTION_", "_JOB_INPUTS_", "_JOB_TARGETS_", "_JOB_PATHS_",
                "_RESULT_REF_", "_COMMON_CONVENTIONS_", "_REVIEW_COMMIT_")
WORK_MARKER = "_TODO_: 実施した内容"
FILES_MARKER = "_TODO_: 変更したファイル"
RECOMMENDATION_MARKER = "recommendation: _TODO_"
MARKERS = (WORK_MARKER, FILES_MARKER, RECOMMENDATION_MARKER)
UNFILLED_REASON = ("agent exited 0 but result mandatory sections remain unfilled "
                   "(treated as blocked)")
NO_RESULT_REASON = ("agent exited 0 but left no result document (it removed or emptied the "
                    "result file; treated as blocked): the agent must fill the result in place")
VERDICTS = ("complete", "complete-with-findings", "changes-requested", "blocked")
_RECOMMENDATIONS = {"approve": "complete", "revise": "changes-requested", "reject": "blocked"}

PLAN_TEMPLATE = """_FRONTMATTER_

# Job Run plan: _JOB_NAME_

- Job: `_JOB_ID_`
- Run: `_RUN_ID_`
- Scheduled at: `_SCHEDULED_AT_`
- Result file: `_RESULT_REF_`

## What to do

_JOB_DESCRIPTION_

## Inputs

```json
_JOB_INPUTS_
```

## Targets

_JOB_TARGETS_

## Paths

_JOB_PATHS_

_COMMON_CONVENTIONS_
"""

RESULT_TEMPLATE = f"""_FRONTMATTER_

# Job Run result

## Work done

{WORK_MARKER}

## Changed files

{FILES_MARKER}
"""

REVIEW_PLAN_TEMPLATE = """_FRONTMATTER_

# Review plan: _JOB_NAME_

- Job: `_JOB_ID_`
- Run: `_RUN_ID_`
- Output commit: `_REVIEW_COMMIT_`
- Result file: `_RESULT_REF_`

## What to review

_JOB_DESCRIPTION_

The review is read-only: do not change the working tree. Write the verdict
(`verdict: complete | complete-with-findings | changes-requested | blocked`) in the result
file's frontmatter, or a `recommendation: approve | revise | reject` line in its body.

## Inputs

```json
_JOB_INPUTS_
```

## Paths

_JOB_PATHS_

_COMMON_CONVENTIONS_
"""

REVIEW_RESULT_TEMPLATE = f"""_FRONTMATTER_

# Review result

## Findings

{WORK_MARKER}

## Recommendation

{RECOMMENDATION_MARKER}
"""

CONVENTIONS = "## Conventions\n\n- Fill every section of the result file before exiting."


def fill(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each known placeholder replaced (one pass: values are not rescanned)."""
    pattern = re.compile("|".join(re.escape(p) for p in sorted(values, key=len, reverse=True)))
    return pattern.sub(lambda m: values[m.group(0)], template) if values else template


def bullet_list(items: list[str]) -> str:
    return "\n".join(f"- `{item}`" for item in items) if items else "- -"


# --- reading what the agent wrote ----------------------------------------------------------------


def _frontmatter(text: str) -> tuple[list[str], int, int] | None:
    """The frontmatter lines and their [start, end) line indexes in ``text``."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return None
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            return lines, 1, end
    return None


def _scope(lines: list[str], start: int, end: int) -> tuple[int, int, str]:
    """The ``specdojo:`` block's lines (and their indent) when there is one, else the top."""
    for index in range(start, end):
        if lines[index].rstrip() == "specdojo:":
            stop = index + 1
            while stop < end and (lines[stop].startswith((" ", "\t")) or not lines[stop].strip()):
                stop += 1
            return index + 1, stop, "  "
    return start, end, ""


def frontmatter_value(text: str, key: str) -> str | None:
    """A scalar of the frontmatter, from the ``specdojo:`` block or else the top level."""
    found = _frontmatter(text)
    if found is None:
        return None
    lines, start, end = found
    first, stop, indent = _scope(lines, start, end)
    pattern = re.compile(rf"{re.escape(indent)}{re.escape(key)}:\s*(.*?)\s*$")
    for line in lines[first:stop]:
        match = pattern.fullmatch(line)
        if match:
            return match.group(1).strip().strip("\"'") or None
    return None


def set_status(
    text: str, status: str, reason: str | None = None, completed_at: str | None = None
) -> str:
    """The runner's last word on a result: its ``status`` (``blocked_reason``,
    ``completed_at``)."""
    found = _frontmatter(text)
    if found is None:
        head = f"---\nstatus: {status}\n" + (f"blocked_reason: {_quote(reason)}\n" if reason
                                             else "") + "---\n\n"
        return head + text
    lines, start, end = found
    first, stop, indent = _scope(lines, start, end)
    owned = tuple(f"{indent}{key}:" for key in ("status", "blocked_reason", "completed_at"))
    kept = [line for line in lines[first:stop] if not line.startswith(owned)]
    while kept and not kept[-1].strip():
        kept.pop()
    kept.append(f"{indent}status: {status}")
    if completed_at:
        kept.append(f'{indent}completed_at: "{completed_at}"')
    if reason:
        kept.append(f"{indent}blocked_reason: {_quote(reason)}")
    return "\n".join([*lines[:first], *kept, *lines[stop:]])


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def markers_left(text: str) -> bool:
    return any(marker in text for marker in MARKERS)


def agent_outcome(text: str) -> tuple[str, str | None]:
    """(status, reason) of an agent that exited 0, from its result document. No document (the
    agent removed it, emptied it or put something else there) is no outcome: without it
    nothing says the work was done, and the run must not read as succeeded."""
    if not text.strip():
        return "failed", NO_RESULT_REASON
    if markers_left(text):
        return "failed", UNFILLED_REASON
    if (frontmatter_value(text, "outcome") or "").lower() == "noop":
        return "noop", None
    return "succeeded", None


def review_verdict(text: str) -> str:
    """The verdict: frontmatter ``verdict``, else the body's ``recommendation``, else blocked."""
    verdict = (frontmatter_value(text, "verdict") or "").lower()
    if verdict in VERDICTS:
        return verdict
    match = re.search(r"^\s*recommendation:\s*([A-Za-z-]+)\s*$", text, re.MULTILINE)
    if match and match.group(1).lower() in _RECOMMENDATIONS:
        return _RECOMMENDATIONS[match.group(1).lower()]
    return "blocked"
