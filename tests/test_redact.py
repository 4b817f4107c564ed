"""Redaction of secrets and UTF-8 bounding of evidence text (SPEC §7.5)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specdojo_routine.core.redact import (
    bound,
    redact,
    redact_values,
    redact_words,
    secret_values,
)
from specdojo_routine.core.redact_rules import REDACTED, names_a_credential
from specdojo_routine.core.redact_stream import LineRedactor, cut_is_clean

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAsecretbodyline1\n"
    "c2VjcmV0Ym9keWxpbmUy\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Authorization: Bearer eyJhbGciOi.payload.sig", "eyJhbGciOi.payload.sig"),
        ("curl -H 'bearer abc123def456'", "abc123def456"),
        ("key sk-abcdefgh12345678 used", "sk-abcdefgh12345678"),
        ("key sk-proj-AbCdEfGh_12345678 used", "AbCdEfGh_12345678"),
        ("GITHUB=ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_abcdefghijklmnopqrstuvwxyz0123"),
        ("t gho_abcdefghijklmnop", "gho_abcdefghijklmnop"),
        ("t ghs_abcdefghijklmnop", "ghs_abcdefghijklmnop"),
        ("t ghu_abcdefghijklmnop", "ghu_abcdefghijklmnop"),
        ("t github_pat_11ABCDEFG_abcdefghijkl", "github_pat_11ABCDEFG_abcdefghijkl"),
        ("aws AKIAIOSFODNN7EXAMPLE key", "AKIAIOSFODNN7EXAMPLE"),
        ("slack xoxb-123456789-abcdefghij", "xoxb-123456789-abcdefghij"),
        ("slack xoxp-123456789-abcdefghij", "xoxp-123456789-abcdefghij"),
        ("api_key=s3cr3tvalue", "s3cr3tvalue"),
        ("API-KEY: s3cr3tvalue", "s3cr3tvalue"),
        ("access_token=s3cr3tvalue&x=1", "s3cr3tvalue"),
        ("auth = s3cr3tvalue", "s3cr3tvalue"),
        ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
        ("password=hunter22", "hunter22"),
        ("passwd: hunter22", "hunter22"),
        ("secret=hunter22", "hunter22"),
        ("token: hunter22", "hunter22"),
        ("DB_PASSWORD=hunter22", "hunter22"),
        ("clientSecret=hunter22", "hunter22"),
        ("PGPASSWORD=hunter22 psql -h db", "hunter22"),  # one word ending with the key word
        ("GITHUBTOKEN: s3cr3tvalue", "s3cr3tvalue"),
        ("--clientsecret s3cr3tvalue", "s3cr3tvalue"),
        ('{"api_key": "s3cr3t value", "name": "x"}', "s3cr3t value"),
        ("{'password': 'with spaces'}", "with spaces"),
        ("git clone https://user:hunter22@example.com/repo", "hunter22"),
        ("SPECDOJO_ROUTINE_LOCK_URL=redis://:redispw99@127.0.0.1:6379/0", "redispw99"),
        ("redis://:re@dispw99@127.0.0.1/0", "dispw99"),  # urllib splits at the last @
        (f"key:\n{PEM}\nafter", "secretbodyline1"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n(truncated", "b3BlbnNzaC1rZXk"),
        ("specdojo index --password=hunter22 --project demo", "hunter22"),
        ("curl --api-token=s3cr3tvalue https://x", "s3cr3tvalue"),
        ("mysql --password hunter22 -h db", "hunter22"),
        ("tool -db-token s3cr3tvalue", "s3cr3tvalue"),
        ('echo "--secret hunter22"', "hunter22"),
    ],
)
def test_redact_removes_the_secret(text: str, secret: str) -> None:
    """Each covered secret form is replaced by [REDACTED]."""
    redacted = redact(text)
    assert (False, True) == (secret in redacted, REDACTED in redacted)


@pytest.mark.parametrize("kind", ["a", "b", "p", "r"])
def test_redact_removes_every_slack_token_kind(kind: str) -> None:
    """SPEC §7.5: `xox[abpr]-…` tokens are redacted, each of the four kinds. (SPEC says "at
    least", so what else is redacted is not pinned here.)"""
    assert f"slack {REDACTED} end" == redact(f"slack xox{kind}-123456789-abcdefghij end")


def test_redact_keeps_the_key_and_quotes() -> None:
    """key=value keeps the key, the separator and any quotes around the value."""
    assert 'api_key=[REDACTED] {"token": "[REDACTED]"}' == redact('api_key=abc {"token": "x y"}')


def test_redact_keeps_the_bearer_scheme() -> None:
    """A bearer token keeps its scheme word, like the upstream redaction."""
    assert "send Bearer [REDACTED] now" == redact("send Bearer abc.def-ghi now")


def test_redact_pem_block_keeps_the_text_around_it() -> None:
    """A complete PEM block is replaced as a whole; text after END is kept."""
    assert f"before\n{REDACTED}\nafter" == redact(f"before\n{PEM}\nafter")


def test_redact_pem_without_end_redacts_to_the_end() -> None:
    """A BEGIN without an END redacts everything after it."""
    text = "ok\n-----BEGIN PRIVATE KEY-----\nAAAA\nBBBB"
    assert f"ok\n{REDACTED}" == redact(text)


def test_redact_given_secret_values() -> None:
    """Given secret values are redacted wherever they occur, also JSON-escaped."""
    secret = 'pa"ss\\word9'
    text = f'raw {secret} json "pa\\"ss\\\\word9"'
    assert f'raw {REDACTED} json "{REDACTED}"' == redact(text, [secret])


def test_redact_prefers_the_longest_secret() -> None:
    """An overlapping shorter secret cannot leave the rest of a longer one behind."""
    assert f"x {REDACTED} y" == redact("x abcdef-ghijkl y", ["abcdef", "abcdef-ghijkl"])


@pytest.mark.parametrize(
    "text",
    [
        "author: Bob",
        "tokens_used: 5",
        "url=https://example.com/path?page=2",
        "task-abcdefghijklmnop",
        "the secretary said",
        "tokenizer=bpe passwordless=true",
        "tool --token-file /etc/tool/token --token-count 5",
        "mysql --password --host db",
    ],
)
def test_redact_leaves_ordinary_text(text: str) -> None:
    """Text that only resembles a credential is left alone."""
    assert text == redact(text)


def test_secret_values_by_name() -> None:
    """Values of secret-named variables (>= 6 chars) are returned, longest first."""
    env = {
        "MY_API_TOKEN": "tok-123456",
        "DB_PASSWORD": "longer-password",
        "github_secret": "lower-case-name",
        "SSH_PRIVATE_KEY": "keydata",
        "AWS_CREDENTIALS": "credvalue",
        "OPENAI_API_KEY": "sk-abcdef",
        "HOME": "/home/someone",
        "SHORT_TOKEN": "12345",
    }
    assert [
        "longer-password",
        "lower-case-name",
        "tok-123456",
        "credvalue",
        "sk-abcdef",
        "keydata",
    ] == secret_values(env)


def test_line_redactor_hides_every_line_of_a_key() -> None:
    """Streaming line by line, the body lines of a PEM key are redacted too."""
    redactor = LineRedactor()
    lines = [redactor.line(line + "\n") for line in ["start", *PEM.split("\n"), "end"]]
    assert ["start\n", *[f"{REDACTED}\n"] * 4, "end\n"] == lines


def test_line_redactor_uses_secret_values() -> None:
    """The line redactor redacts the given secret values."""
    assert f"v={REDACTED}\n" == LineRedactor(["abcdef123"]).line("v=abcdef123\n")


def test_bound_leaves_short_text() -> None:
    """Text within the limit is returned unchanged and not truncated."""
    assert ("日本語", False) == bound("日本語", 9)


def test_bound_cuts_at_a_character_boundary() -> None:
    """A cut inside a multi-byte character drops the whole character."""
    assert ("日本", True) == bound("日本語", 8)


def test_bound_replaces_lone_surrogates() -> None:
    """A lone surrogate cannot be encoded; it becomes '?' so the result is valid UTF-8."""
    assert ("a?b", False) == bound("a\udc80b", 10)


@given(st.text(), st.integers(min_value=0, max_value=64))
def test_bound_property(text: str, limit: int) -> None:
    """The result is the longest prefix whose UTF-8 form fits the limit."""
    cut, truncated = bound(text, limit)
    clean = text.encode("utf-8", "replace").decode("utf-8")
    size = len(cut.encode("utf-8"))
    longest = size <= limit and (cut == clean or size + len(clean[len(cut)].encode()) > limit)
    assert (True, True, cut != clean) == (clean.startswith(cut), longest, truncated)


def test_redact_before_bound_never_exposes_a_partial_secret() -> None:
    """Redacting the full text before the cut leaves no prefix of a secret behind."""
    secret = "supersecretvalue99"
    text = "x" * 60 + secret + "y" * 100
    cut, _ = bound(redact(text, [secret]), 70)
    assert ("x" * 60 + REDACTED, False) == (cut, "super" in cut)


@pytest.mark.parametrize(("name", "credential"), [
    ("password", True), ("db_password", True), ("api_token", True), ("api_key", True),
    ("private_key", True), ("client_secret", True), ("credentials", True), ("dbPassword", True),
    ("token_count", False), ("secret_name", False), ("auth_mode", False), ("period", False),
])
def test_a_name_names_a_credential_by_its_last_word(name: str, credential: bool) -> None:
    """Judging a name itself (a Job input's, SPEC §7.5): its last word, or last two, is a
    credential key word; a credential word earlier in it (``token_count``) is not enough."""
    assert credential == names_a_credential(name)


TAIL = "x" * 64  # what has arrived after the cut: more than any pattern's bounded part


@pytest.mark.parametrize(
    ("head", "tail", "clean"),
    [
        ("words ", "token: hunter2hunter2 " + TAIL, True),
        ("words token: ", "hunter2hunter2 " + TAIL, False),  # a value cut from its key
        ("words TOKEN= ", "hunter2hunter2" + TAIL, False),
        ("Authorization: Bearer ", "eyJhbGciOi.payload" + TAIL, False),
        ("words token:", " " * 64, False),  # only blanks after the key: its value may follow
        ("words token ", " " * 60 + "= ", False),
        ('words token: "a b ', "c d " + TAIL, False),  # a quoted value still open
        ('words token: "a b ', 'c d" ' + TAIL, False),  # ... or closed after the cut
        ('words msg: "a b ', "c d " + TAIL, True),  # a quoted string that is no credential
        ("words token: 'a b ", "c d " + TAIL, False),
        ("see https://us;", "er:pass" + TAIL, False),  # inside user:password@
        ("see https://user:pa;", "ss" + TAIL, False),
        ("see redis://:pa@ss;", "word@host " + TAIL, False),  # the password holds an @
        ("see https://host/a;", "b " + TAIL, True),
        ("-----BEGIN RSA ", "PRIVATE KEY----- body " + TAIL, False),
    ],
)
def test_cut_is_clean(head: str, tail: str, clean: bool) -> None:
    """A long line is echoed in pieces only at a cut where redacting the two sides apart
    shows no more than redacting the line, now or once the rest of the line arrives."""
    assert clean == cut_is_clean(head + tail, len(head), ["env-secret-value"])


def test_cut_is_clean_through_a_secret_value() -> None:
    """A cut inside a secret of the environment (it may hold separators) is not clean."""
    secret = "open sesame, 42"
    text = "say " + secret + " " + TAIL
    assert [False, True] == [cut_is_clean(text, text.index(s) + len(s), [secret])
                             for s in ("open ", "42 ")]


HEAD_PARTS = ["word", " ", ",", ";", "token", ": ", "=", "Bearer ", '"', "'", "://u:p", "@",
              "ghp_abcdefgh1234", "-----BEGIN RSA PRIVATE KEY-----", "env-secret-value", "\\"]


@given(st.lists(st.sampled_from(HEAD_PARTS), max_size=30).map("".join))
def test_a_probe_left_intact_leaves_the_head_redacted_as_alone(head: str) -> None:
    """cut_is_clean reads redact(head) off redact(head + probe) when the probe comes out
    intact: then no match reached into it, and nothing before it changed."""
    from specdojo_routine.core.redact_stream import _PROBE

    probed = redact(head + _PROBE, ["env-secret-value"])
    if probed.endswith(_PROBE):
        assert redact(head, ["env-secret-value"]) == probed[: -len(_PROBE)]


@pytest.mark.parametrize(
    ("words", "shown"),
    [
        (["index", "--password", "hunter22", "-v"], ["index", "--password", REDACTED, "-v"]),
        (["--password=hunter22"], [f"--password={REDACTED}"]),
        (["-api-token", "s3cr3tvalue"], ["-api-token", REDACTED]),
        (["--password", "--prompt"], ["--password", "--prompt"]),
        (["--token-file", "/etc/token"], ["--token-file", "/etc/token"]),
        (["index", "build"], ["index", "build"]),
    ],
)
def test_redact_words_hides_the_value_after_a_credential_option(words: list[str],
                                                                shown: list[str]) -> None:
    """A command's words: each redacted, and the word after ``--password`` too (a separate
    word that no text pattern can tell from an ordinary argument)."""
    assert shown == redact_words(words)


@given(st.lists(st.text(alphabet="ab-=-_ ", max_size=8), max_size=6))
def test_redact_words_is_redact_of_each_word_when_no_word_is_a_credential_option(
        words: list[str]) -> None:
    """Words with no credential option among them are shown as each word redacted alone."""
    assert [redact(w) for w in words] == redact_words(words)


# -- separators other than ASCII (audit miss 3) --------------------------------------------

@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("password：hunter22", f"password：{REDACTED}"),  # full-width colon
        ("password＝hunter22", f"password＝{REDACTED}"),  # full-width equals
        ("token\u3000：\u3000hunter22", f"token\u3000：\u3000{REDACTED}"),  # ideographic space
        ("password:\u00a0hunter22", f"password:\u00a0{REDACTED}"),  # no-break space after
        ("password\u00a0=\u00a0hunter22", f"password\u00a0=\u00a0{REDACTED}"),
        ("api_key\u2003=\u2003hunter22", f"api_key\u2003=\u2003{REDACTED}"),  # em space
        ("--password\u00a0hunter22", f"--password\u00a0{REDACTED}"),
        ("--db-token＝hunter22", f"--db-token＝{REDACTED}"),
        ("Authorization:\u00a0Basic\u00a0dXNlcjpw",
         f"Authorization:\u00a0Basic\u00a0{REDACTED}"),
    ],
)
def test_a_value_after_a_full_width_separator_or_unicode_space_is_redacted(
        text: str, shown: str) -> None:
    """A full-width ：/＝ separates a key from its value, and any Unicode space is a blank."""
    assert shown == redact(text)


# -- a key and its value with blanks only between them (audit miss 2) ---------------------

@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("api-key s3cr3tValue9", f"api-key {REDACTED}"),
        ("DB_PASSWORD hunter22 psql -h db", f"DB_PASSWORD {REDACTED} psql -h db"),
        ("machine h login bob password hunter22", f"machine h login bob password {REDACTED}"),
        ("Authorization Basic dXNlcjpwYXNz", f"Authorization Basic {REDACTED}"),
        ("token abc123def456 expired", f"token {REDACTED} expired"),
        ("apiKey AbCdEfGhIj", f"apiKey {REDACTED}"),  # mixed case
        ("secret p@ss/word", f"secret {REDACTED}"),  # symbols
        ("password\u00a0hunter22", f"password\u00a0{REDACTED}"),
        ("token\u3000abc123def456", f"token\u3000{REDACTED}"),
    ],
)
def test_a_secret_shaped_value_after_a_credential_key_and_blanks_is_redacted(
        text: str, shown: str) -> None:
    """A secret-looking word after a credential key and blanks only is redacted."""
    assert shown == redact(text)


def test_a_quoted_value_after_a_credential_key_and_blanks_is_redacted() -> None:
    """A quoted string right after a credential key is its value, whatever it holds."""
    assert f'password "{REDACTED}" given' == redact('password "correct horse" given')


@pytest.mark.parametrize(
    "text",
    [
        "password reset succeeded",
        "token count 5",
        "Token Count: 5",
        "DB_PASSWORD not set",
        "Set OPENAI_API_KEY in your environment",
        "secret santa",
        "auth failed",
        "api-key VALUE",  # a word of letters: prose, not taken for a secret
        "password re-entered",
        "token cache.json written",
        "token 5 of 10",
        "token_count 123456",  # the key's last word names no credential
        "tokens 123456",
        "the keyboard layout 2024",
        "Invalid token. Retry2024 later",  # a sentence ends at the key
        "see /etc/token 123456",  # a path ending with a key word
        "mysql --password --host db2host",
        "token 2026-08-07T08:00:00Z expired",  # a date, a time or a version: not a secret
        "Password 2026-08-07 rotated",
        "auth v2.1.0 loaded",
        "token 1.2.3-rc1",
        "Your API token:\n2026-12-06 08:00:01 INFO next step",
    ],
)
def test_a_plain_word_after_a_credential_key_and_blanks_is_kept(text: str) -> None:
    """A word of letters, a short word, a date, a time or a version, or a word after a
    sentence or path end is kept."""
    assert text == redact(text)


@pytest.mark.parametrize("head", ["Authorization Basic ", "machine h password ", "api-key\u00a0"])
def test_a_cut_after_a_credential_key_and_blanks_is_not_clean(head: str) -> None:
    """A long line is never cut between a key and the value blanks alone separate from it."""
    assert False is cut_is_clean(head + "abcdefgh" * 16, len(head))


# -- a value on the line after its key (audit miss 1) --------------------------------------

@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("password:\n  hunter22", f"password:\n  {REDACTED}"),
        ("password =\n    hunter22\n", f"password =\n    {REDACTED}\n"),
        ("token：\n\u3000hunter", f"token：\n\u3000{REDACTED}"),
        ("token:\n  dGVzdA==", f"token:\n  {REDACTED}"),
        ("db:\n  password:\n    correct horse\n    battery\n  host: db",
         f"db:\n  password:\n    {REDACTED}\n    {REDACTED}\n  host: db"),
        ("password:\r\n  hunter22\r\nhost: db", f"password:\r\n  {REDACTED}\r\nhost: db"),
        ("password:\n\n  hunter22", f"password:\n\n  {REDACTED}"),
    ],
)
def test_an_indented_line_after_a_key_and_separator_is_its_value(text: str, shown: str) -> None:
    """Lines indented below a key ending its line with a separator are redacted whole."""
    assert shown == redact(text)


@pytest.mark.parametrize("indicator", ["|", ">", "|-", ">+", "|2"])
def test_a_yaml_block_scalar_after_a_credential_key_is_redacted(indicator: str) -> None:
    """Each line of a YAML block scalar under a credential key is redacted, its indicator kept."""
    text = f"private_key: {indicator}\n  line one\n\n  line two\nnext: 1"
    assert f"private_key: {indicator}\n  {REDACTED}\n\n  {REDACTED}\nnext: 1" == redact(text)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("password:\nhunter22", f"password:\n{REDACTED}"),
        ("Your API token:\nabc123def456\nDone.", f"Your API token:\n{REDACTED}\nDone."),
        ("--password\nhunter22 --host db", f"--password\n{REDACTED} --host db"),
        ("mysql --password\n  hunter22", f"mysql --password\n  {REDACTED}"),
    ],
)
def test_a_secret_shaped_word_opening_the_line_after_a_key_is_redacted(
        text: str, shown: str) -> None:
    """A secret-looking first word on the line after a key or option is redacted."""
    assert shown == redact(text)


def test_the_word_after_an_option_and_a_line_continuation_is_redacted() -> None:
    """After an option and a line continuation, the next line's first word is redacted."""
    assert f"--password \\\n  {REDACTED} --host db" == redact("--password \\\n  hunter --host db")


@pytest.mark.parametrize(
    "text",
    [
        "password:\n  min_length: 8",  # a mapping under the key
        "password:\n  - first",
        "password:\n  # set below",
        "password:\nport: 5432",  # the next key: the value is empty
        "password:\nlevel=info msg=done",
        "Changing password:\nDone.",
        "--password\n    The password to use (default: prompt).",  # --help text
        "--password\n--host db2host",
        "please change your password\n2024-05-01 12:00 next entry",  # no separator
        "password: hunter22\n  at line 5",  # the value was on the key's line
    ],
)
def test_the_line_after_a_key_is_kept_when_it_holds_no_value(text: str) -> None:
    """A line below a key that holds no value for it is kept."""
    assert text.split("\n", 1)[1] == redact(text).split("\n", 1)[1]


def test_line_redactor_redacts_a_value_on_the_next_line() -> None:
    """Streaming line by line, a key ending one line has its value redacted on the next."""
    redactor = LineRedactor()
    lines = ["db:\n", "  password:\n", "    hunter22\n", "  host: db\n"]
    assert ["db:\n", "  password:\n", f"    {REDACTED}\n", "  host: db\n"] == [
        redactor.line(line) for line in lines]


@pytest.mark.parametrize(
    ("pieces", "shown"),
    [
        (["token:\n", "  ", "abc def ", "ghi\n", "host: db\n"],
         f"token:\n  {REDACTED}\nhost: db\n"),
        (["--password\n", "abc123def ", "--host db\n"], f"--password\n{REDACTED} --host db\n"),
    ],
)
def test_line_redactor_redacts_a_next_line_value_echoed_in_pieces(
        pieces: list[str], shown: str) -> None:
    """A next-line value echoed in pieces is redacted as in the whole line."""
    redactor = LineRedactor()
    assert shown == "".join(redactor.line(piece) for piece in pieces)


# -- properties -------------------------------------------------------------------------------

CREDENTIAL_KEYS = ["password", "DB_PASSWORD", "api_key", "apiKey", "api-key", "clientSecret",
                   "access_token", "PGPASSWORD", "secret", "token", "auth", "Authorization",
                   "credentials", "private_key"]
SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~+/@!%^*"


@given(st.sampled_from(CREDENTIAL_KEYS),
       st.sampled_from([":", "=", ": ", " = ", "：", "＝", "\u00a0:\u00a0", "\u3000＝\u3000",
                        "=\u2003", ":\n  ", "=\n    ", "：\n\t", ":\n\n  "]),
       st.text(alphabet=SAFE + "-", min_size=1, max_size=40).filter(lambda v: v[0] != "-"))
def test_a_value_after_a_credential_key_and_a_separator_never_survives(
        key: str, sep: str, value: str) -> None:
    """Any safe value after a credential key and any separator never survives."""
    assert key + sep + REDACTED == redact(key + sep + value)


@given(st.sampled_from(CREDENTIAL_KEYS),
       st.sampled_from([" ", "  ", "\t", "\u00a0", "\u3000", "\u2009"]),
       st.tuples(st.text(alphabet=SAFE, min_size=5, max_size=40),
                 st.sampled_from("0123456789")).map("".join).filter(lambda v: v[0] != "-"))
def test_a_secret_shaped_value_after_a_credential_key_and_blanks_never_survives(
        key: str, blanks: str, value: str) -> None:
    """Any secret-shaped value after a credential key and blanks never survives."""
    assert key + blanks + REDACTED == redact(key + blanks + value)


LINE_PARTS = ["password:", "token =", "--password", "private_key: |", " ", "  ", "\n", "\n  ",
              "hunter22", "word", "host: db", "- item", "# note", "\\", "abc123def"]


@given(st.lists(st.sampled_from(LINE_PARTS), max_size=30).map("".join))
def test_line_redactor_agrees_with_redact_of_the_whole_text(text: str) -> None:
    """LineRedactor over lines gives what redact gives over the whole text."""
    redactor = LineRedactor()
    assert redact(text) == "".join(redactor.line(line) for line in text.splitlines(True))


@pytest.mark.parametrize(("text", "whole", "expected"), [
    ('{"start":4956808}', True, '{"start":4956808}'),  # inside a longer number: left
    ('{"start":4956808}', False, '{"start":[REDACTED]8}'),  # a stream: wherever it occurs
    ('{"pid":495680}', True, '{"pid":[REDACTED]}'),
    ("rtn-495680.yaml", True, "rtn-[REDACTED].yaml"),
    ("x495680", True, "x495680"),
])
def test_whole_values_are_redacted_where_they_stand_alone(
        text: str, whole: bool, expected: str) -> None:
    """``whole``: a secret value inside a longer word or number is left (the console's own
    text stays readable and its JSON valid); a stream's text is redacted wherever it is."""
    assert expected == redact_values(text, ["495680"], whole=whole)


@pytest.mark.parametrize("whole", [True, False])
def test_a_value_with_a_quote_is_redacted_as_a_shell_quoted_word_writes_it(whole: bool) -> None:
    """``shlex.quote`` writes a `'` as `'"'"'`: that form of the value is redacted too."""
    import shlex

    assert "--label [REDACTED]" == redact_values(
        shlex.join(["--label", "it's hunter 2"]), ["it's hunter 2"], whole=whole).replace(
        "'[REDACTED]'", "[REDACTED]")


def test_a_long_run_of_name_characters_is_redacted_in_linear_time() -> None:
    """A line of 400,000 characters of `a-a-a-…` after a credential word, with no separator:
    a key is tried once per run of name characters, not at every `-` in it (that cost the
    square of the length: a tenth of this line took seconds), so a child that prints it
    cannot stall the echo or the evidence."""
    import time

    line = "token " + "a-" * 200_000 + "!"
    started = time.process_time()
    assert line == redact(line)
    assert time.process_time() - started < 2.0


def test_a_secret_read_from_a_file_is_redacted_without_its_newline() -> None:
    """A variable that holds its secret with a trailing newline (a secret mounted from a
    file): the value a command prints, without the newline, is redacted too."""
    secrets = secret_values({"MY_TOKEN": "Zq9xK2mP7v\n", "SHORT_TOKEN": "abcd\n"})
    assert ["Zq9xK2mP7v\n", "Zq9xK2mP7v"] == secrets  # "abcd" is too short to be one
    assert f"using {REDACTED} to connect" == redact("using Zq9xK2mP7v to connect", secrets)


def test_whole_values_are_found_as_fast_as_plain_ones() -> None:
    """The console's filter with 50 secret values over 1 MB of output: a literal search, not
    a look-around tried at every character (which took a second)."""
    import time

    secrets = [f"Secret{i:04d}xyz" for i in range(50)]
    text = " a" * 500_000 + " Secret0007xyz"
    started = time.process_time()
    assert text[:-13] + REDACTED == redact_values(text, secrets, whole=True)
    assert time.process_time() - started < 0.25


@pytest.mark.parametrize(("text", "shown"), [
    ("--password=\\\nhunter2x9Q --host db", f"--password=\\\n{REDACTED} --host db"),
    ("password:  # from vault\n  hunter2x9Q", f"password:  # from vault\n  {REDACTED}"),
    ("password: '\n  hunter2x9Q'", f"password: '\n  {REDACTED}"),
    ('token: "\nhunter2x9Q"', f'token: "\n{REDACTED}'),
])
def test_a_value_that_a_line_says_is_below_is_redacted_there(text: str, shown: str) -> None:
    """What follows a key and its separator may only say the value is below - a ``\\`` that
    continues the line, a YAML comment, a quote left open: the value on the next line is
    redacted, the same in a whole text and line by line."""
    redactor = LineRedactor()
    assert (shown, shown) == (redact(text), "".join(
        redactor.line(line) for line in text.splitlines(keepends=True)))


@pytest.mark.parametrize(("text", "shown"), [
    ("password=#abc123", f"password={REDACTED}"),  # no blank before `#`: the value
    ("password: hunter2 # c", f"password: {REDACTED} # c"),
    ("password: # none\nport: 5432", "password: # none\nport: 5432"),  # no value below
])
def test_a_hash_is_a_comment_only_after_a_blank(text: str, shown: str) -> None:
    """A `#` after a key's separator and a blank starts a comment; without the blank it is
    part of the value."""
    assert shown == redact(text)
