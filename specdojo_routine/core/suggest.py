"""\"Did you mean\" for an id that names nothing (pure)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def unknown(what: str, given: str, known: Iterable[str], see: str) -> str:
    """The one-line message for an unknown ``what`` (``routine``): the closest known ids, or
    where to look them up (``see``, a command)."""
    close = difflib.get_close_matches(given, sorted(set(known)), n=3, cutoff=0.6)
    if close:
        return f'unknown {what} "{given}"; did you mean {" or ".join(close)}? (see `{see}`)'
    return f'unknown {what} "{given}" (see `{see}`)'
