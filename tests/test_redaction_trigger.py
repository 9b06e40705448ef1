"""The fast pre-filter of redaction (lowercased ASCII, searched case-sensitively) agrees
with the case-insensitive search it stands in for, on any text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from forensics.core.redaction import _ANY_TRIGGER, _may_hold_secret

PIECES = st.sampled_from(
    ["PASS", "pAsS", "Token", "KEY", "eYj", "GHP_", "gh_", "AkIa", "://", "Sk-", "MySQL", "xo"]
)


@given(st.lists(st.one_of(st.text(max_size=8), PIECES), max_size=8))
def test_the_prefilter_agrees_with_the_case_insensitive_search(parts: list[str]) -> None:
    text = "".join(parts)
    assert _may_hold_secret(text) == (_ANY_TRIGGER.search(text) is not None)
