"""The fast paths of redaction agree with the slow ones they stand in for, on any text: the
pre-filter (lowercased ASCII, searched case-sensitively) with the case-insensitive search,
and the per-rule gates on ASCII text with running every rule."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from forensics.core.redaction import _ANY_TRIGGER, _may_hold_secret, redact_counted

PIECES = st.sampled_from(
    ["PASS", "pAsS", "Token", "KEY", "eYj", "GHP_", "gh_", "AkIa", "://", "Sk-", "MySQL", "xo"]
)
# Each rule's food, whole and cut (a piece alone, or two pieces that only together match).
SECRETS = st.sampled_from(
    [
        "password=hunter2", "--api-key=abc123", "--Token abc", "PASSWORD: 'two words'",
        "token Tk9Lmn0p", '{"secret": "x y"}', "Authorization: Bearer abc.def",
        "proxy-authorization=Basic dXNlcjpw", "postgres://bob:s3cret@db/x", "redis://:pw@",
        "ghp_" + "a" * 20, "AKIA" + "B" * 16, "eyJhbGciOi.eyJzdWIiOi.c2lnbmF0", "sk-" + "c" * 20,
        "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----", "mysql -pS3cret",
        "mariadb-dump -uroot -pX db; ssh -p22 h", "pass", "word=", "to", "ken x", "://", "@",
        "-----BEGIN ", "PRIVATE KEY", "api_", "key",
    ]
)  # fmt: skip
ASCII_TEXT = st.text(alphabet=st.characters(max_codepoint=127), max_size=8)


@given(st.lists(st.one_of(st.text(max_size=8), PIECES), max_size=8))
def test_the_prefilter_agrees_with_the_case_insensitive_search(parts: list[str]) -> None:
    text = "".join(parts)
    assert _may_hold_secret(text) == (_ANY_TRIGGER.search(text) is not None)


@given(st.lists(st.one_of(ASCII_TEXT, PIECES, SECRETS), max_size=10))
def test_the_rules_skipped_on_ascii_text_could_not_have_matched(parts: list[str]) -> None:
    text = "".join(parts)
    # Text that is not ASCII meets every rule; behind "é " (a space: no rule looks past
    # it) the same text is the reference.
    redacted, counts = redact_counted(text)
    assert redact_counted("\u00e9 " + text) == ("\u00e9 " + redacted, counts)
