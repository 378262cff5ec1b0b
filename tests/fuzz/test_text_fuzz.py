"""Properties of the edge sanitiser (store/untrusted.py): whatever comes in, what goes on is text every
store, log and HTTP body can take, JSON within its depth and number bounds — or a ValueError that says
why, never another exception."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from store import untrusted
from tests.fuzz.strategies import any_char, hostile_text, json_values, nested


def _clean_everywhere(value: object) -> None:
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate


@given(hostile_text)
def test_clean_text_leaves_nothing_unencodable_and_is_idempotent(text: str) -> None:
    out = untrusted.clean_text(text)
    out.encode("utf-8")
    assert untrusted.clean_text(out) == out
    assert len(out) <= len(text)  # a surrogate pair may become one character, nothing grows


@given(st.text(st.characters(codec="utf-8")))
def test_clean_text_keeps_valid_text_as_it_is(text: str) -> None:
    assert untrusted.clean_text(text) == text


@given(st.binary(max_size=300))
def test_decode_never_fails(data: bytes) -> None:
    untrusted.decode(data).encode("utf-8")


@given(json_values)
def test_loads_returns_clean_bounded_json_or_says_why(value: object) -> None:
    try:
        text = json.dumps(value)  # ensure_ascii: lone surrogates travel as \\udXXX escapes, as Slack sends them
    except ValueError:
        return  # NaN/Infinity are written by json.dumps; a value it cannot write is no input
    try:
        parsed = untrusted.loads(text)
    except ValueError as exc:
        assert str(exc)
        return
    _clean_everywhere(parsed)


@given(st.one_of(st.binary(max_size=400), st.text(any_char, max_size=400).map(lambda t: t.encode("utf-8", "surrogatepass")),
                 st.integers(min_value=0, max_value=20_000).map(lambda d: nested(d).encode())))
def test_loads_of_any_bytes_never_raises_anything_but_value_error(data: bytes) -> None:
    try:
        parsed = untrusted.loads(data)
    except ValueError:
        return
    _clean_everywhere(parsed)


@given(st.integers(min_value=0, max_value=300), st.sampled_from(["[", "{\"k\":"]))
def test_nesting_depth_is_measured_without_parsing(depth: int, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    text = opener * depth + "1" + closer * depth
    assert untrusted.nesting_depth(text) == depth
    assert untrusted.nesting_depth(json.dumps({"s": text})) == 1  # brackets inside strings do not count
