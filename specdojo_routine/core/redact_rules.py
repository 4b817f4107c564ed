"""The rules of text redaction: what is redacted, and what is deliberately left (pure; SPEC §7.5).

What is covered: the given secret values (and their JSON-escaped form), PEM private key blocks
(a BEGIN without END is redacted to the end), ``Bearer <token>``, well-known token shapes
(``sk-``, ``sk-proj-``, ``ghp_``/``gho_``/``ghs_``/``ghu_``, ``github_pat_``, ``AKIA``/``ASIA``,
``xox?-``), ``user:password@`` in URLs (also ``:password@``; up to the last ``@`` before the
path, as URL parsers read it), and the value of a credential key.

A credential key is a name holding a credential word (api_key, access_token, auth,
authorization, password, passwd, secret, token, credential, private_key, in any case, also as
part of a longer name such as ``DB_PASSWORD``, ``clientSecret`` or ``PGPASSWORD``). Its value
is redacted, whatever it looks like, when it follows

- a separator: ``key=value`` / ``key: value``, also quoted, JSON style, and as a command-line
  option ``--key=value``. The separator may be full-width, ``：``/``＝``, and the blanks
  around it any Unicode space, such as the no-break space U+00A0 or the ideographic space
  U+3000, which text pasted from a word processor or written in Japanese holds;
- an option whose name ends with a credential word and blanks: ``--password VALUE``,
  ``-db-token VALUE`` (not ``--token-file PATH``, nor ``--password --host``).

With blanks only between them (``api-key VALUE``, ``Authorization Basic VALUE``, a .netrc
``password VALUE``), a key whose last word is a credential word (``DB_PASSWORD``, not
``token_count``) has its next word redacted only when that word is quoted or looks like a
secret: 6 characters or more with (inside punctuation at its ends) a digit, a symbol (``_``,
``@``, ``/``...; not the ``-``, ``'`` or ``.`` of ``re-entered``, ``don't``, ``cache.json``) or
a capital after a small letter. The same words follow ``password`` and ``token`` in ordinary
output: ``password reset succeeded``, ``token count 5``, ``DB_PASSWORD not set``, ``auth
failed``. So a value of letters only (``api-key VALUE``, ``password hunter``), or shorter than
6, is deliberately left, and so are a date, a time or a version (``token 2026-08-07T08:00Z
expired``, ``auth v2.1.0 loaded``) and a word after a key that ends a sentence (``token.
Retry``) or a path (``/etc/token 123456``).

A key whose last word is a credential word may end its line, its value on the next line(s):

- after a separator (``password:``, ``token =``, ``api_key：``), the lines below indented more
  than the key's line are the value (a YAML plain scalar), each redacted whole, whatever they
  hold; so are the lines of a YAML block scalar (``private_key: |`` or ``>-``: the indicator
  is kept). The same when the separator is followed only by a YAML comment (``password:  #
  from vault``: a ``#`` after a blank; ``password=#x`` is a value) or a quote left open
  (``password: '``), each kept. Not a list item, a comment or a key below it (``- x``,
  ``# x``, ``min_length: 8``: the key holds a mapping), nor the next key (``port: 5432``,
  ``level=info``);
- after a separator with the next line not indented below it (``Your API token:`` then the
  token), or after an option (``--password`` then ``hunter2 --host db``), the next line's first
  word is the value if it looks like a secret, as above: ``Changing password:`` then ``Done.``,
  and ``--password`` then ``    The password to use.`` (``--help``) are left;
- after an option and a ``\\`` (a command going on on the next line), also after
  ``--password=\\``, the next line's first word, whatever it looks like.

Blank lines between the key and its value are passed over. A word ending its line without a
separator (``please change your password``) carries nothing: the next line is as often a log
line of its own. :class:`LineRedactor` carries the same from one line (or piece of a long line)
to the next, so the console shows what the evidence keeps.

Here, so that the rules are read in one place: the patterns (compiled on first use), which
names are credential keys, and the value that follows a key on its line. :mod:`.redact`
applies them in order after the environment's secret values; a value on the lines below its
key is :mod:`.redact_lines`'s.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable
from typing import NamedTuple

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 6

# What may stand between a key and its value on one line: ASCII blanks, the no-break space and
# the other Unicode spaces (U+3000, the ideographic space of Japanese text, too); no line break
_BLANK_CHARACTERS = " \t\u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + (
    "\u202f\u205f\u3000")
_BLANK = f"[{_BLANK_CHARACTERS}]"
# what separates a key from its value: ``:`` or ``=``, ASCII or full-width (``：``, ``＝``)
_SEP = r"[:=\uff1a\uff1d]"
# a YAML block scalar's indicator (``|``, ``>-``, ``|2``): the value is on the lines below
_BLOCK = r"[|>](?:[1-9]?[+-]?|[+-][1-9])"

_PEM_BEGIN = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
_PEM_END = r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"


class _Shapes(NamedTuple):
    pem: re.Pattern[str]
    pem_begin_line: re.Pattern[str]
    pem_end_line: re.Pattern[str]
    tokens: re.Pattern[str]
    bearer: re.Pattern[str]
    url_password: re.Pattern[str]


@functools.cache
def _shapes() -> _Shapes:
    """The patterns of the secrets known by their shape (a private key, a token, ``Bearer``,
    a URL's password), compiled on first use: start-up that a command which redacts nothing
    (`list`, `validate`) would pay."""
    return _Shapes(
        pem=re.compile(rf"{_PEM_BEGIN}(?:.*?{_PEM_END}|.*\Z)", re.S),
        pem_begin_line=re.compile(_PEM_BEGIN),
        pem_end_line=re.compile(_PEM_END),
        tokens=re.compile(
            r"(?<![A-Za-z0-9])(?:"
            r"sk-(?:proj-)?[A-Za-z0-9_-]{8,}"
            r"|gh[opsu]_[A-Za-z0-9_]{8,}"
            r"|github_pat_[A-Za-z0-9_]{8,}"
            r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
            r"|xox[abeoprs]-[A-Za-z0-9-]{8,}"
            r")"
        ),
        bearer=re.compile(r"\b(Bearer\s+)[A-Za-z0-9._~+/=-]+", re.I),
        url_password=re.compile(r"(://[^/\s:@]*:)[^/\s]+(@)"),
    )


# How a word that may name a credential ends (lower case): words that hold all the hints may
# (``api`` and ``key`` for ``api_key``), and the pattern that follows the first
_NAME_ENDINGS = (
    (("token",), ""), (("secret",), ""), (("passw",), "(?:or)?d"), (("auth",), "(?:orization)?"),
    (("credential",), "s?"), (("api", "key"), "[_.-]?key"), (("private", "key"), "[_.-]?key"),
)


class _KeyPatterns(NamedTuple):
    key_sep: re.Pattern[str]
    value: re.Pattern[str]
    option: re.Pattern[str]
    bare_keys: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...]
    block: re.Pattern[str]
    secretish: re.Pattern[str]
    dated: re.Pattern[str]


@functools.cache
def _key_patterns() -> _KeyPatterns:
    """The patterns of a credential key and its value on one line, compiled on first use (as
    :func:`_shapes`)."""
    return _KeyPatterns(
        # a key starts a word or a quote, after an option's dashes (`--password=x`); a longer
        # name (`db-password`, `2fa-token`) is taken whole, from its beginning, and only
        # there: a match tried at every `-` inside a long run of name characters would cost
        # the square of its length (a line of `a-a-a-…` took seconds)
        key_sep=re.compile(
            rf"""(?:(?<![A-Za-z0-9_.-])|(?=["']))-*+(["']?)([A-Za-z0-9][A-Za-z0-9_.-]*+)\1"""
            rf"""({_BLANK}*{_SEP}{_BLANK}*)"""
        ),
        value=re.compile(
            rf"""(?:(?:Bearer|Basic|Token|Digest|Bot){_BLANK}+)?"""
            r"""("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s,;]+)"""
        ),
        # an option and the blanks before its value (which does not start with a dash, nor is
        # the ``\`` that continues a command on the next line)
        option=re.compile(
            rf"(?<![^\s\"'=])--?([A-Za-z][A-Za-z0-9_.-]*){_BLANK}+(?=[^\s-])"
            rf"(?!\\{_BLANK}*(?:\r?\n|\Z))"
        ),
        # the ends of words that may name a credential, in lower case, and the blanks after
        # them; each with a literal start, found in text only when that start is in it
        bare_keys=tuple(
            (hints, re.compile(rf"({hints[0]}{rest}){_BLANK}+")) for hints, rest in _NAME_ENDINGS
        ),
        block=re.compile(_BLOCK),
        # what makes a word look like a secret rather than prose: a digit, a symbol (not the
        # ``-``, ``'`` or ``.`` of ``re-entered``, ``don't``, ``cache.json``), a capital after
        # a small letter
        secretish=re.compile(r"\d|_|[^\w'.-]|[a-z][A-Z]"),
        # digits that say when or which version, not a secret: a date, a time, an ISO
        # instant, a version (``2026-08-07T08:00:00Z``, ``12:30``, ``v2.1.0``, ``1.2.3-rc1``)
        dated=re.compile(
            r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?"
            r"|\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?|[vV]?\d+(?:\.\d+)+(?:[-+][0-9A-Za-z.]+)?"
        ),
    )


# every credential key contains one of these (lower case); text without them skips that pass
_KEY_HINTS = ("token", "secret", "passw", "auth", "key", "credential")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_KEY_WORDS = frozenset(
    {
        "token",
        "secret",
        "password",
        "passwd",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "apikey",
        "api_key",
        "access_token",
        "accesstoken",
        "private_key",
    }
)


# Key words that also end a one-word name (``PGPASSWORD``, ``GITHUBTOKEN``, ``clientsecret``):
# long enough that a word ending with one names a credential (unlike ``auth``: ``oauth`` but
# also words that are no credential).
_KEY_ENDINGS = ("password", "passwd", "secret", "token")


def _key_words(key: str) -> list[str]:
    return [p for p in re.split(r"[_.-]+", _CAMEL.sub(r"\1_\2", key).lower()) if p]


def _credential_word(word: str) -> bool:
    return word in _KEY_WORDS or word.endswith(_KEY_ENDINGS)


def _judged_once(judge: Callable[[str], bool]) -> Callable[[str], bool]:
    """``judge`` (of a name, pure) keeping its verdicts on names of up to 64 characters, 4,096
    of them: key names recur line after line of output (``key=``, ``token``), and judging one
    (camel case split, words, pairs) was a quarter of redaction's time. A longer name is judged
    afresh, so output of long words cannot fill memory."""
    kept = functools.lru_cache(maxsize=4096)(judge)

    @functools.wraps(judge)
    def judged(name: str) -> bool:
        return kept(name) if len(name) <= 64 else judge(name)

    return judged


@_judged_once
def _is_credential_key(key: str) -> bool:
    parts = _key_words(key)
    pairs = {f"{a}_{b}" for a, b in itertools.pairwise(parts)}
    return any(map(_credential_word, parts)) or bool(_KEY_WORDS.intersection(pairs))


@_judged_once
def names_a_credential(name: str) -> bool:
    """Whether a name's last word (or last two) is a credential key word: ``db_password``,
    ``api_token``, ``api_key``, but not ``token_count``, which text redaction (any word) also
    takes for a key. For judging a name itself, where a false alarm refuses it."""
    parts = _key_words(name)
    return bool(parts) and (_credential_word(parts[-1]) or "_".join(parts[-2:]) in _KEY_WORDS)


def _closing_quotes(value: str) -> str:
    """Quote characters ending a bare value that close a quote opened before it (an odd count
    of that quote in the value): ``echo "password=x"`` keeps its closing ``"``, so a recorded
    command stays the command that ran."""
    kept = ""
    while value and value[-1] in "\"'" and value.count(value[-1]) % 2 == 1 and len(value) > 1:
        kept = value[-1] + kept
        value = value[:-1]
    return kept


def _may_name_a_credential(lowered: str) -> bool:
    """Whether lower-case text holds a word that may name a credential (``password``,
    ``api_key``), which blanks or a line break may separate from its value."""
    return any(hint in lowered for hint in _BARE_KEY_HINTS) or (
        "key" in lowered and ("api" in lowered or "private" in lowered))


# every word that may name a credential contains one of these, or api/private and key
_BARE_KEY_HINTS = ("token", "secret", "passw", "auth", "credential")
_NAME_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _lower_in_place(text: str) -> str:
    """``text`` in lower case, each character where it was (İ lowers to two)."""
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    return lowered


def _bare_keys(text: str) -> list[tuple[int, str, int]]:
    """(start, name, end) of each word of ``text`` that may name a credential and is followed
    by blanks (``end`` is after them), in order. A word starts with a letter and is not part of
    a path (``/etc/token``) nor an option (``--password``, the option pattern's). Found from
    its end in lower-case text, by patterns with a literal start: a pattern that tried every
    word start, or ignored case, cost half again the time of all redaction on ordinary output.
    """
    lowered = _lower_in_place(text)
    found: set[tuple[int, str, int]] = set()
    for hints, pattern in _key_patterns().bare_keys:
        if not all(hint in lowered for hint in hints):
            continue
        for key in pattern.finditer(lowered):
            start = key.start()
            while start > 0 and text[start - 1] in _NAME_CHARACTERS:
                start -= 1
            first = text[start]
            if first.isascii() and first.isalpha() and text[start - 1 : start] not in ("/", "\\"):
                found.add((start, text[start : key.end(1)], key.end()))
    return sorted(found)


# punctuation around a word in prose (``(hunter2).``), not counted as part of its shape
_EDGE_PUNCTUATION = "\"'.,:;!?()[]{}<>"


def _looks_like_a_secret(word: str) -> bool:
    """Whether a word after a credential key and blanks only is taken for the key's value: at
    least 6 characters, with (inside any punctuation at its ends) a digit, a symbol or a
    capital after a small letter, and not a date, a time or a version. A word of letters
    (``reset``, ``count``, ``VALUE``, ``Failed``, ``re-entered``) is prose after ``password``
    or ``token`` as often as a value, and so is ``2026-08-07`` (``Password 2026-08-07
    rotated``) or ``v2.1.0`` (``auth v2.1.0 loaded``)."""
    core = word.strip(_EDGE_PUNCTUATION)
    patterns = _key_patterns()
    return (len(word) >= MIN_SECRET_LENGTH and patterns.secretish.search(core) is not None
            and patterns.dated.fullmatch(core) is None)


def _redact_after(text: str, kind: str) -> str:
    """The values after the credential keys with a separator (``key_sep``), options
    (``option``) or credential keys with blanks only (``bare_key``: a value that is quoted or
    looks like a secret) of ``text`` redacted."""
    out: list[str] = []
    pos = 0
    patterns = _key_patterns()
    keys: Iterable[tuple[int, str, int]]
    if kind == "bare_key":
        keys = _bare_keys(text)
    else:
        group = 2 if kind == "key_sep" else 1
        found = (patterns.key_sep if kind == "key_sep" else patterns.option).finditer(text)
        keys = [(key.start(), key[group], key.end()) for key in found]
    credential = _is_credential_key if kind == "key_sep" else names_a_credential
    for start, name, end in keys:
        if start < pos or not credential(name):
            continue
        value = patterns.value.match(text, end)
        if value is None:
            continue
        quoted = value[1][:1] in "\"'" and len(value[1]) >= 2
        if kind == "key_sep" and (patterns.block.fullmatch(value[1])
                                  or _value_below(text, text[start:end], value)):
            continue  # ``key: |``: no value here, the lines below are (redact_lines._carried)
        if kind == "bare_key" and not quoted and (
                value[1].startswith("-") or not _looks_like_a_secret(value[1])):
            continue
        closing = "" if quoted else _closing_quotes(value[1])
        out += [
            text[pos : value.start(1)],
            value[1][0] + REDACTED + value[1][0] if quoted else REDACTED + closing,
        ]
        pos = value.end()
    return "".join(out) + text[pos:]


def _value_below(text: str, key: str, value: re.Match[str]) -> bool:
    r"""Whether what follows ``key`` (the key and its separator) on its line only says that
    the value is on the lines below: a ``\`` that continues the line, a quote opened and not
    closed on it, or a YAML comment after ``key:`` and a blank (``password:  # from vault``)."""
    if value[1].startswith("#"):
        return text[value.start(1) - 1] in _BLANK_CHARACTERS and (":" in key or "\uff1a" in key)
    if value[1] not in ("\\", "'", '"'):
        return False
    line_end = text.find("\n", value.end())
    return not text[value.end() : len(text) if line_end < 0 else line_end].strip()


_OPTION_WORD = re.compile(r"--?([A-Za-z][A-Za-z0-9_.-]*)")
