"""graph/facts.py tries the amount pattern only near digits: the same matches as scanning everywhere."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from graph.facts import _AMOUNT_LEAD, _near_digits, facts_in, prepare
from retrieval.currencies import AMOUNT as _AMOUNT

PIECES = ["USD", "usd", "Usd", "US$", "us$", "A$", "C$", "S$", "$", "£", "€", "¥", "₹", "﷼", "GBP", "aed", "SAR",
          "eur", " ", "  ", "\n", "1", "25", "1,500", "1,50", "2.5", "10.00", "٣", "०", "x", "s", "dollars", "pounds",
          "euro", "riyal", "درهم", "دولار", "-", "/", ":", "%", "_", "v3", "usd1", "1usd", "USDUSD", "plus", "ıNR"]


def _spans(matches: object) -> list[tuple[tuple[int, int], dict[str, str | None]]]:
    return [(m.span(), m.groupdict()) for m in matches]  # type: ignore[attr-defined]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=16))
def test_amounts_found_near_digits_are_the_amounts_found_everywhere(pieces: list[str]) -> None:
    text = prepare("".join(pieces))
    assert _spans(_near_digits(_AMOUNT, text, _AMOUNT_LEAD)) == _spans(_AMOUNT.finditer(text))


def test_a_passage_with_amounts_among_other_numbers() -> None:
    text = ("Hotels: London GBP 210, Boston US$ 250 (2025 rates). Meals: 3 a day, up to 75 dollars; "
            "claims over $1,500 need a director, within 30 days. Mileage: 0.67 USD per mile.")
    assert _spans(_near_digits(_AMOUNT, text, _AMOUNT_LEAD)) == _spans(_AMOUNT.finditer(text))
    figures = facts_in(text).figures
    assert {("gbp", "210"), ("usd", "250"), ("$", "75"), ("$", "1500"), ("usd", "0.67")} <= figures
