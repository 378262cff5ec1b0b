from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval.language import arabic_ratio, detect_language


def test_ratio_of_pure_scripts() -> None:
    assert arabic_ratio("Travel and expenses") == 0.0
    assert arabic_ratio("سياسة السفر والمصروفات") == 1.0


def test_ratio_ignores_digits_punctuation_and_spaces() -> None:
    # Arabic-Indic digits are not letters either, so they must not count as Arabic.
    assert arabic_ratio("سفر 250 $ ٢٥٠ !!") == 1.0
    assert arabic_ratio("ab سف") == pytest.approx(0.5)


def test_no_letters_is_zero_and_english() -> None:
    assert arabic_ratio("") == 0.0
    assert arabic_ratio("123 - 456 ٤٥٦") == 0.0
    assert detect_language("") == "en"
    assert detect_language("2024-01-01") == "en"


def test_presentation_forms_count_as_arabic() -> None:
    # PDFs often extract Arabic as presentation forms (U+FE70–U+FEFF).
    assert arabic_ratio("ﺍﻟﺴﻔﺮ") == 1.0


def test_detect_language_thresholds() -> None:
    assert detect_language("The hotel cap is $250 per night in Boston.") == "en"
    assert detect_language("الحد الأقصى للفندق هو ٢٥٠ دولارًا في الليلة.") == "ar"
    assert detect_language("Submit the form نموذج السفر before travel") == "mixed"
    # One English product name in Arabic text keeps it Arabic.
    assert detect_language("استخدم نظام Concur لحجز جميع رحلات السفر الخاصة بالعمل") == "ar"


def test_boundaries_are_inclusive() -> None:
    text = "ab" + "سف"  # ratio exactly 0.5
    assert detect_language(text, low=0.5, high=0.9) == "en"
    assert detect_language(text, low=0.1, high=0.5) == "ar"
    assert detect_language(text, low=0.1, high=0.9) == "mixed"


def test_rejects_inverted_thresholds() -> None:
    with pytest.raises(ValueError):
        detect_language("x", low=0.9, high=0.1)


@given(st.text())
def test_ratio_is_a_share(text: str) -> None:
    ratio = arabic_ratio(text)
    assert 0.0 <= ratio <= 1.0
    assert detect_language(text) in {"en", "ar", "mixed"}
