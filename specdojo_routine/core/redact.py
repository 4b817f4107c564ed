"""Secret redaction and size bounds for command output and evidence (pure; SPEC §7.5).

Redaction runs on the full text before any bounding, so a cut can never expose part of a secret.
Here are the entry points the package calls (:func:`redact`, :func:`redact_values`,
:func:`redact_words`, :func:`bound`), the values of the environment's secrets
(:func:`secret_values`) and the order of redaction's passes. What is redacted, and what is
deliberately left, is listed with the rules in the docstring of :mod:`.redact_rules`; the
values on the lines after their key are :mod:`.redact_lines`'s, and a stream that arrives in
pieces (the console's echo) is :mod:`.redact_stream`'s.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

from specdojo_routine.core.redact_rules import (
    _KEY_HINTS,
    _OPTION_WORD,
    MIN_SECRET_LENGTH,
    REDACTED,
    _may_name_a_credential,
    _redact_after,
    _shapes,
    names_a_credential,
)

DEFAULT_LIMIT_BYTES = 65536

_SECRET_NAME_PARTS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "API_KEY",
    "PRIVATE_KEY",
    "CREDENTIAL",
)


def secret_values(env: Mapping[str, str]) -> list[str]:
    """Values (length >= 6) of variables whose names mark them as secrets, each also without
    the blanks around it (a secret read from a file keeps its newline, and a command prints
    the value without it); longest first."""
    found: set[str] = set()
    for name, value in env.items():
        if any(p in name.upper() for p in _SECRET_NAME_PARTS):
            found.update(v for v in (value, value.strip()) if len(v) >= MIN_SECRET_LENGTH)
    return sorted(found, key=lambda v: (-len(v), v))


@functools.lru_cache(maxsize=16)
def _secret_pattern(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    import json  # only where there are secrets to find

    variants: set[str] = set()
    for secret in secrets:
        if secret:
            variants.add(secret)
            variants.add(json.dumps(secret, ensure_ascii=False)[1:-1])
            variants.add(json.dumps(secret)[1:-1])
            variants.add(secret.replace("'", "'\"'\"'"))  # inside a shell-quoted word
    if not variants:
        return None
    ordered = sorted(variants, key=lambda v: (-len(v), v))
    return re.compile("|".join(map(re.escape, ordered)))


def _alone(match: re.Match[str]) -> str:
    """``[REDACTED]`` for a value that stands alone; the match itself where a word character
    goes on before or after it (inside a longer word or number)."""
    text, start, end = match.string, match.start(), match.end()
    inside = (start > 0 and _word_character(text[start - 1]) and _word_character(text[start])
              ) or (end < len(text) and _word_character(text[end])
                    and _word_character(text[end - 1]))
    return match[0] if inside else REDACTED


def _word_character(character: str) -> bool:
    return character.isalnum() or character == "_"


def redact_values(text: str, secrets: Iterable[str], *, whole: bool = False) -> str:
    """``text`` with each of the given secret values (as written, JSON-escaped, and escaped
    inside a single-quoted shell word) replaced by ``[REDACTED]``, and nothing else changed.
    ``whole``: only where the value is not part of a longer word or number - what the
    console and the report use for the product's own text (ids, paths, JSON numbers), where a
    value that is also an everyday word would otherwise mangle what they show; the streams of
    the commands a routine runs are redacted wherever the value occurs."""
    pattern = _secret_pattern(tuple(secrets))  # plain literals: the engine's fast search
    if pattern is None:
        return text
    return pattern.sub(_alone if whole else REDACTED, text)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret it contains replaced by ``[REDACTED]``."""
    text, named = _redact(text, secrets)
    if not named or "\n" not in text:
        return text
    from specdojo_routine.core.redact_lines import _redact_next_lines  # only text that needs it

    return _redact_next_lines(text)


def _redact(text: str, secrets: Iterable[str]) -> tuple[str, bool]:
    """``text`` redacted but for values on the line after their key, and whether it holds a
    word that may name a credential (else no line can carry a value to the next)."""
    text = redact_values(text, secrets)
    shapes = _shapes()
    if "-----BEGIN" in text:
        text = shapes.pem.sub(REDACTED, text)
    text = shapes.tokens.sub(REDACTED, text)
    lowered = text.lower()
    if "bearer" in lowered:
        text = shapes.bearer.sub(rf"\g<1>{REDACTED}", text)
    if "://" in text:
        text = shapes.url_password.sub(rf"\g<1>{REDACTED}\g<2>", text)
    if not any(hint in lowered for hint in _KEY_HINTS):
        return text, False
    text = _redact_after(_redact_after(text, "key_sep"), "option")
    named = _may_name_a_credential(lowered)
    if named:
        text = _redact_after(text, "bare_key")
    return text, named


def redact_words(words: Iterable[str], secrets: Iterable[str] = ()) -> list[str]:
    """A command's words, each redacted, and the word after an option whose name ends with a
    credential word (``--password``, ``-api-token``) replaced whole: what a command line
    shows of itself (a dry run's plan) without the secrets written into it."""
    secrets = tuple(secrets)
    shown: list[str] = []
    after_credential = False
    for word in words:
        if after_credential and not word.startswith("-"):
            shown.append(REDACTED)
        else:
            shown.append(redact(word, secrets))
        option = _OPTION_WORD.fullmatch(word)
        after_credential = option is not None and names_a_credential(option[1])
    return shown


def bound(text: str, limit_bytes: int = DEFAULT_LIMIT_BYTES) -> tuple[str, bool]:
    """Cut ``text`` at a character boundary so its UTF-8 form fits ``limit_bytes``.

    Returns ``(text, truncated)``. Lone surrogates (never produced by decoding) become ``?``.
    """
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = text.encode("utf-8", errors="replace")
        text = data.decode("utf-8")
    if len(data) <= limit_bytes:
        return text, False
    return data[:limit_bytes].decode("utf-8", errors="ignore"), True
