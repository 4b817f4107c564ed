"""\"Did you mean\" for an id that names nothing (pure).

``difflib`` is imported where a message is made: every command that can name an unknown id
imports this module, and only a mistyped one needs it.
"""

from __future__ import annotations

from collections.abc import Iterable


def unknown(what: str, given: str, known: Iterable[str], see: str) -> str:
    """The one-line message for an unknown ``what`` (``routine``): the closest known ids, or
    where to look them up (``see``, a command). Ids are compared without the prefix they all
    share (``rtn-``), which would make any two of them look alike."""
    import difflib

    names = sorted(set(known) - {given})  # never the id given: it names nothing
    cut = len(_shared_prefix([given, *names])) if names else 0
    by_rest = {name[cut:]: name for name in names}
    close = [by_rest[rest] for rest in
             difflib.get_close_matches(given[cut:], list(by_rest), n=3, cutoff=0.6)]
    if close:
        return f'unknown {what} "{given}"; did you mean {" or ".join(close)}? (see `{see}`)'
    return f'unknown {what} "{given}" (see `{see}`)'


def _shared_prefix(words: list[str]) -> str:
    """The prefix up to and including the last ``-`` that every word begins with."""
    prefix = words[0]
    for word in words[1:]:
        while not word.startswith(prefix):
            prefix = prefix[:-1]
    return prefix[: prefix.rfind("-") + 1]
