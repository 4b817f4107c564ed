"""Secret redaction and size bounds for command output and evidence (pure; SPEC §7.5).

Redaction runs on the full text before any bounding, so a cut can never expose part of a secret.
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
6, is deliberately left, and so is a word after a key that ends a sentence (``token. Retry``)
or a path (``/etc/token 123456``).

A key whose last word is a credential word may end its line, its value on the next line(s):

- after a separator (``password:``, ``token =``, ``api_key：``), the lines below indented more
  than the key's line are the value (a YAML plain scalar), each redacted whole, whatever they
  hold; so are the lines of a YAML block scalar (``private_key: |`` or ``>-``: the indicator
  is kept). Not a list item, a comment or a key below it (``- x``, ``# x``, ``min_length: 8``:
  the key holds a mapping), nor the next key (``port: 5432``, ``level=info``);
- after a separator with the next line not indented below it (``Your API token:`` then the
  token), or after an option (``--password`` then ``hunter2 --host db``), the next line's first
  word is the value if it looks like a secret, as above: ``Changing password:`` then ``Done.``,
  and ``--password`` then ``    The password to use.`` (``--help``) are left;
- after an option and a ``\\`` (a command going on on the next line), the next line's first
  word, whatever it looks like.

Blank lines between the key and its value are passed over. A word ending its line without a
separator (``please change your password``) carries nothing: the next line is as often a log
line of its own. :class:`LineRedactor` carries the same from one line (or piece of a long line)
to the next, so the console shows what the evidence keeps.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

REDACTED = "[REDACTED]"
DEFAULT_LIMIT_BYTES = 65536
MIN_SECRET_LENGTH = 6

_SECRET_NAME_PARTS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "API_KEY",
    "PRIVATE_KEY",
    "CREDENTIAL",
)

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
    )


class _LinePatterns(NamedTuple):
    line_ends: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...]
    key_ending_line: re.Pattern[str]
    no_value: re.Pattern[str]
    word: re.Pattern[str]


@functools.cache
def _line_patterns() -> _LinePatterns:
    """The patterns of a key ending its line and of the lines below it, compiled on first
    use: start-up that a command which redacts nothing (`list`, `validate`) would pay."""
    return _LinePatterns(
        # the same words ending a line, after blanks a separator, a block indicator or a ``\``
        line_ends=tuple(
            (hints, re.compile(
                rf"""({hints[0]}{rest})["']?{_BLANK}*(?:{_SEP}{_BLANK}*(?:{_BLOCK}{_BLANK}*)?"""
                rf"""|\\{_BLANK}*)?\r?$""", re.M))
            for hints, rest in _NAME_ENDINGS
        ),
        # a key and its separator (and a block indicator) ending a line
        key_ending_line=re.compile(
            rf"""(?<![A-Za-z0-9_.])(["']?)([A-Za-z][A-Za-z0-9_.-]*)\1{_BLANK}*{_SEP}{_BLANK}*"""
            rf"""({_BLOCK})?{_BLANK}*\Z"""
        ),
        # what opens a line below a key that is no value: a list item, a comment, the next key
        no_value=re.compile(
            rf"""-(?:{_BLANK}|\r?\Z)|#|["']?[A-Za-z_][A-Za-z0-9_.-]*["']?{_BLANK}*"""
            rf"""(?:[:\uff1a](?:{_BLANK}|\r?\Z)|[=\uff1d](?![=\uff1d]|\r?\Z))"""
        ),
        word=re.compile(r"[^\s,;]+"),
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


def secret_values(env: Mapping[str, str]) -> list[str]:
    """Values (length >= 6) of variables whose names mark them as secrets; longest first."""
    found = {
        value
        for name, value in env.items()
        if len(value) >= MIN_SECRET_LENGTH and any(p in name.upper() for p in _SECRET_NAME_PARTS)
    }
    return sorted(found, key=lambda v: (-len(v), v))


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
    capital after a small letter. A word of letters (``reset``, ``count``, ``VALUE``, ``Failed``,
    ``re-entered``) is prose after ``password`` or ``token`` as often as a value."""
    core = word.strip(_EDGE_PUNCTUATION)
    return len(word) >= MIN_SECRET_LENGTH and _key_patterns().secretish.search(core) is not None


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
        if kind == "key_sep" and patterns.block.fullmatch(value[1]):
            continue  # ``key: |``: no value here, the lines below are (see _carried)
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


_OPTION_WORD = re.compile(r"--?([A-Za-z][A-Za-z0-9_.-]*)")


@functools.lru_cache(maxsize=16)
def _secret_pattern(secrets: tuple[str, ...], whole: bool) -> re.Pattern[str] | None:
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
    return re.compile("|".join(_alternative(v, whole) for v in ordered))


def _alternative(value: str, whole: bool) -> str:
    """``value`` as a pattern; ``whole``: not where a word character goes on before or after
    it (``value`` inside a longer word or number)."""
    found = re.escape(value)
    if whole and (value[0].isalnum() or value[0] == "_"):
        found = rf"(?<!\w){found}"
    if whole and (value[-1].isalnum() or value[-1] == "_"):
        found = rf"{found}(?!\w)"
    return found


def redact_values(text: str, secrets: Iterable[str], *, whole: bool = False) -> str:
    """``text`` with each of the given secret values (as written, JSON-escaped, and escaped
    inside a single-quoted shell word) replaced by ``[REDACTED]``, and nothing else changed.
    ``whole``: only where the value is not part of a longer word or number - what the
    console and the report use for the product's own text (ids, paths, JSON numbers), where a
    value that is also an everyday word would otherwise mangle what they show; the streams of
    the commands a routine runs are redacted wherever the value occurs."""
    pattern = _secret_pattern(tuple(secrets), whole)
    return pattern.sub(REDACTED, text) if pattern is not None else text


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret it contains replaced by ``[REDACTED]``."""
    text, named = _redact(text, secrets)
    return _redact_next_lines(text) if named and "\n" in text else text


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


class _Carry(NamedTuple):
    """What a line ending with a credential key leaves to the lines after it."""

    kind: str  # "yaml", "block", "word" or "any" (see _carried)
    indent: int  # the indentation of the key's line


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(_BLANK_CHARACTERS))


def _carry_after(line: str, indent: int) -> _Carry | None:
    """What ``line`` (indented by ``indent``) leaves to the next: a key whose last word is a
    credential word ending it with a separator (``password:``, ``token =``: "yaml"), also with
    a block indicator (``private_key: |``: "block"), or an option ending it (``--password``:
    "word"), also before a ``\\`` (a command going on on the next line: "any")."""
    end = line.rstrip(_BLANK_CHARACTERS + "\r")
    if not end:
        return None
    if end[-1] in ":=\uff1a\uff1d" or "|" in end[-3:] or ">" in end[-3:]:
        # (in the line's last 256 characters: no key is longer, and a long line of names
        # with a character no name holds before the end would cost each name start a scan)
        key = _line_patterns().key_ending_line.search(end[-256:])
        if key is not None:
            return _Carry("block" if key[3] else "yaml", indent) if names_a_credential(
                key[2]) else None
    if "-" not in end:
        return None
    words = end.rsplit(None, 2)
    kind = "word"
    if words[-1] == "\\":
        kind, words = "any", words[:-1]
    option = _OPTION_WORD.fullmatch(words[-1].lstrip("\"'")) if words else None
    return _Carry(kind, indent) if option and names_a_credential(option[1]) else None


def _carried(line: str, carry: _Carry) -> tuple[str, _Carry | None, bool]:
    """``line`` with the value that ``carry`` says it holds redacted, the carry for the line
    after it, and whether the line was redacted whole.

    A blank line holds nothing and passes the carry on. Below a "yaml" key, a line indented
    more than the key's is its value (a YAML plain scalar), and so are the lines after it
    indented as much ("block"), each redacted whole; not a list item, a comment or a key
    (``- x``, ``# x``, ``min_length: 8``: the key holds a mapping). Otherwise the line's first
    word is the value after an option and a ``\\`` ("any"), and after an option or a "yaml"
    key is taken for it only if it looks like a secret (``Done.`` or ``The password to use``
    are no value), never if it starts with a dash (another option) or is the next key."""
    start = _indent(line)
    cr = "\r" if line.endswith("\r") else ""
    if start >= len(line) - len(cr):
        return line, carry, False
    patterns = _line_patterns()
    if carry.kind == "block" or (carry.kind == "yaml" and start > carry.indent
                                 and not patterns.no_value.match(line, start)):
        if start > carry.indent:
            return line[:start] + REDACTED + cr, _Carry("block", carry.indent), True
        return line, None, False
    word = patterns.word.match(line, start)
    if (word is None or word[0].startswith("-") or patterns.no_value.match(line, start)
            or (carry.kind != "any" and not _looks_like_a_secret(word[0]))):
        return line, None, False
    return line[:start] + REDACTED + line[word.end() :], None, False


def _redact_next_lines(text: str) -> str:
    """``text`` (redacted but for this) with the values on the lines after their keys
    redacted (:func:`_carried`). The keys ending a line are found from their ends in lower-case
    text, as :func:`_bare_keys` finds its keys."""
    lowered = _lower_in_place(text)
    ends: set[int] = set()
    for hints, pattern in _line_patterns().line_ends:
        if all(hint in lowered for hint in hints):
            ends.update(found.end() for found in pattern.finditer(lowered))
    out: list[str] = []
    pos = done = 0
    for end in sorted(ends):
        if end <= done:
            continue
        start = text.rfind("\n", 0, end) + 1
        carry = _carry_after(text[start:end], _indent(text[start:end]))
        while carry is not None and end < len(text):
            start = end + 1
            end = text.find("\n", start)
            end = len(text) if end < 0 else end
            line = text[start:end]
            shown, carry, _ = _carried(line, carry)
            if shown != line:
                out += [text[pos:start], shown]
                pos = end
            if carry is None:
                carry = _carry_after(shown, _indent(shown))
        done = end
    return "".join(out) + text[pos:]


# What may stand between a credential key (or ``Bearer``) and its value: blanks, a ``:``/``=``
# and (the start of) a scheme word such as ``Basic``. A tail of nothing else may be followed by
# the value of a key before it.
_BLANKS_TO_END = re.compile(rf"\s*(?:{_SEP}\s*)?(?:[A-Za-z]{{1,6}}\s*)?\Z")
_USERINFO_TO_END = re.compile(r"[^/\s]*")
# A separator, a value that looks like a secret, both closing quotes: appended to a head that
# ends with a key (with or without its ``:``/``=``, or with blanks only, ``Authorization Basic``
# too), with ``Bearer`` or inside a quoted value, it is redacted with what comes before it.
_PROBE = "=x0x0x0\"'"


def cut_is_clean(
    text: str, cut: int, secrets: Iterable[str] = (), whole: str | None = None
) -> bool:
    """Whether ``text[:cut]`` can be redacted and shown before its line is complete.

    ``text`` is what has arrived of a line, ``cut`` a position after a separator, and
    ``text[cut:]`` longer than any secret's (JSON-escaped) form and any PEM header. True when
    redacting ``text[:cut]`` and ``text[cut:]`` apart gives what redacting ``text`` gives, and
    no match can come to span the cut when more text follows: ``text[:cut]`` does not end with
    a key (with or without its ``:``/``=``) or ``Bearer``, whose value would follow the cut,
    nor inside a quoted value or ``user:password@``. Otherwise the text after the cut,
    redacted alone, could show a secret in clear. Comparing the two redactions is not enough
    by itself: ``token: ghp_...`` cut after the key redacts the same both ways, but the value
    may go on past what has arrived. ``whole`` is ``redact(text, secrets)``, if the caller
    has it.
    """
    secrets = tuple(secrets)
    head, tail = text[:cut], text[cut:]
    probed = redact(head + _PROBE, secrets)
    if not probed.endswith(_PROBE):
        return False  # what follows the cut is redacted with what comes before it
    # no match touched the probe, so the rest is redact(head) (one pass over head, not two)
    shown = probed[: -len(_PROBE)]
    if shown + redact(tail, secrets) != (redact(text, secrets) if whole is None else whole):
        return False  # a match spans the cut
    if _BLANKS_TO_END.match(tail):
        return False  # only blanks since a key in head: its value may still come
    if head[-1:] in (",", ";"):
        scheme = head.rfind("://")
        if scheme >= 0 and _USERINFO_TO_END.fullmatch(head, scheme + 3):
            return False  # inside ``user:password@`` whose ``@`` has not come
    return True


class LineRedactor:
    """Redacts a stream line by line, remembering when it is inside a PEM private key block."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = tuple(secrets)
        self.in_key = False
        self.carry: _Carry | None = None  # what the last line left to this one
        self.lead = ""  # blanks that opened this line, while nothing else has come
        self.indent: int | None = None  # this line's indentation, once known
        self.blanking = False  # the rest of this line is part of a value redacted whole

    def line(self, text: str) -> str:
        """The redacted form of one line (with or without its line ending), or of a piece of
        a long line: a text without a line ending is followed by the rest of its line."""
        body, ending = (text[:-1], "\n") if text.endswith("\n") else (text, "")
        shapes = _shapes()
        if self.in_key:
            end = shapes.pem_end_line.search(body)
            if end is None:
                return self._ended(REDACTED, ending)
            self.in_key = False
            body = REDACTED + body[end.end() :]
        begin = shapes.pem_begin_line.search(body)
        if begin is not None and shapes.pem_end_line.search(body, begin.end()) is None:
            self.in_key = True
        shown, named = _redact(body, self.secrets)
        lead = self.lead if self.indent is None else None  # None: not at the line's start
        if lead is not None:
            content = len(body.lstrip(_BLANK_CHARACTERS))
            if content:
                self.indent = len(lead) + len(body) - content
            else:
                self.lead += body
        if self.blanking:  # (the line's ``\r`` kept, as where the line is redacted whole)
            shown = "\r" if ending and body.endswith("\r") else ""
        elif self.carry is not None and lead is not None:
            shown, self.carry, self.blanking = _carried(lead + shown, self.carry)
            shown = shown[len(lead) :]
        if ending and self.carry is None and named:
            self.carry = _carry_after(shown, self.indent or 0)
        return self._ended(shown, ending)

    def _ended(self, shown: str, ending: str) -> str:
        if ending:
            self.lead, self.indent, self.blanking = "", None, False
        return shown + ending


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
