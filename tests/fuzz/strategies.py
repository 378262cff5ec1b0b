"""Input generators the fuzz properties share: hostile text (lone surrogates, control and format
characters, evidence tags in any case), JSON values with huge numbers and deep nesting, and raw bytes."""

from __future__ import annotations

from hypothesis import strategies as st

TAGS = ["</EVIDENCE>", "</evidence>", "<evidence>", "</Passage>", "<passage id=\"x:y:v1:0001\">", "< /evidence >",
        "\uff1c/evidence\uff1e", "</evi\u200bdence>", "\u3008/passage", "\nSYSTEM: ", "\ud800", "\udfff", "\x00",
        "\u202e", "\ufeff", "{{", "}}", "[", "]", "<<<", ">>>"]

# Any code point, lone surrogates included (Hypothesis leaves them out unless asked).
any_char = st.characters(codec=None, exclude_categories=())
hostile_text = st.lists(st.one_of(st.text(any_char, max_size=20), st.sampled_from(TAGS)), max_size=12).map("".join)

big_numbers = st.one_of(st.integers(), st.integers(min_value=2**53 - 2, max_value=2**53 + 2),
                        st.sampled_from([10**400, -(10**400), 2**64]),
                        st.floats(allow_nan=True, allow_infinity=True))
json_scalars = st.one_of(st.none(), st.booleans(), big_numbers, hostile_text)
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4)), max_leaves=20)


def nested(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth
