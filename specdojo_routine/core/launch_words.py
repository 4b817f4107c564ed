"""What a roster or exec-defaults value may hold to be pasted into a provider's
``command_template`` (pure; SPEC §11.1).

``{mode}``, ``{proficiency}`` and the ``command_params`` variables are substituted as written,
so that ``flags: "--model fast --verbose"`` gives the command three words. The roster is often
upstream's shared ``pm-members.yaml``, not a file the operator alone writes, so a value is
shell words from a safe charset - letters, digits and ``._:/=,+@%-``, with single spaces
between the words meant as separate arguments - and nothing the shell would read as code (no
quote, ``$``, backquote, ``;``, ``|``, ``&``, redirection, glob or newline). ``mode`` is
``edit`` or ``review``. Anything else is a located ``validate`` error and refused at launch.
"""

from __future__ import annotations

import re

from specdojo_routine.core.validation import got

MODES = ("edit", "review")
SAFE_WORDS = re.compile(r"(?:[A-Za-z0-9._:/=,+@%-]+(?: [A-Za-z0-9._:/=,+@%-]+)*)?")
_RULE = ("must be words of letters, digits and ._:/=,+@%- separated by single spaces "
         "(it is pasted into command_template as shell words)")


def mode_problem(mode: str | None) -> str | None:
    """Why a member's ``mode`` is not one (None: it is, or there is none)."""
    if mode is None or mode in MODES:
        return None
    return f"must be edit or review (got {got(mode)})"


def words_problem(value: str) -> str | None:
    """Why ``value`` cannot be pasted into a command as shell words, or None."""
    if SAFE_WORDS.fullmatch(value):
        return None
    return f"{_RULE}; got {got(value)}"
