"""The Arabic → English workplace glossary (retrieval/glossary.py): pure, no model."""

from __future__ import annotations

import pytest

from retrieval.glossary import english_groups, english_terms, forms, known_share, normalise


@pytest.mark.parametrize(("written", "normal"), [
    ("إِجَازَة", "اجازه"),  # diacritics, hamza on alef, ta marbuta
    ("الإجـــازة", "الاجازه"),  # tatweel
    ("آخر", "اخر"),
    ("مستشفى", "مستشفي"),  # alef maqsura
])
def test_arabic_is_normalised_before_lookup(written: str, normal: str) -> None:
    assert normalise(written) == normal


@pytest.mark.parametrize(("word", "english"), [
    ("الإجازة", "leave"),  # the article
    ("والإجازة", "leave"), ("بالفندق", "hotel"), ("للموظفين", "employee"),  # particles, with the article
    ("إجازتي", "leave"),  # a possessive after ta marbuta
    ("إجازات", "leave"),  # the feminine plural
    ("راتبك", "salary"), ("مديري", "manager"),
    ("ساعتين", "hour"),  # the dual
    ("يومًا", "day"),  # tanween
    ("أيام", "day"), ("فنادق", "hotel"),  # broken plurals are listed
])
def test_prefixes_and_suffixes_are_stripped(word: str, english: str) -> None:
    assert english in english_terms(word, min_share=0.0)


def test_short_words_do_not_collapse_into_others() -> None:
    assert forms(normalise("لكم")) == ("لكم",)  # neither "ل" + "كم" nor "ل" + "كم"
    assert forms(normalise("وقت")) == ("وقت",)
    assert english_terms("بدل", min_share=0.0) == ["allowance"]  # the word as written comes first
    assert english_terms("كم لكم", min_share=0.0) == []


@pytest.mark.parametrize(("text", "english", "not_there"), [
    ("ما هي كلمة المرور؟", ["password"], "traffic"),
    ("كم كلمات المرور", ["password"], None),
    ("ما البدل اليومي؟", ["per", "diem"], None),
    ("هل يمكنني العمل عن بعد؟", ["remote"], None),
    ("كم يوما من الإجازة المرضية؟", ["sick", "leave", "day"], None),
])
def test_phrases_are_read_before_their_words(text: str, english: list[str], not_there: str | None) -> None:
    got = english_terms(text)
    assert set(english) <= set(got)
    assert not_there is None or not_there not in got


def test_a_word_s_alternatives_stay_together_and_each_group_is_counted_once() -> None:
    groups = english_groups("إجازة الإجازة فندق")
    assert groups == [("leave", "vacation"), ("hotel",)]


@pytest.mark.parametrize("text", [
    "How many days of sick leave do I get?", "per diem in Riyadh", "", "12 / 2026", "Beyoncé",
])
def test_english_text_gets_nothing(text: str) -> None:
    assert english_terms(text) == [] and english_groups(text) == [] and known_share(text) == 0.0


def test_a_question_the_table_barely_knows_gets_no_english() -> None:
    workplace = "كم يومًا من الإجازة المرضية المدفوعة؟"
    elsewhere = "متى كانت تجربة ماركوني الإذاعية الأولى في المحيط؟"
    assert known_share(workplace) >= 0.5 and english_terms(workplace)
    assert known_share(elsewhere) < 0.5 and english_terms(elsewhere) == []
    assert english_terms(elsewhere, min_share=0.0)  # the words it knows are still there when asked for


def test_a_verb_with_another_everyday_sense_is_not_translated() -> None:
    assert "report" not in english_terms("كم يبلغ الحد الأقصى لتكلفة الفندق؟")  # "amounts to", not "reports"
    assert "report" in english_terms("كيف يتم الإبلاغ عن رسالة تصيد احتيالي؟")


def test_results_are_deterministic_and_in_question_order() -> None:
    text = "ما الحد الأقصى لتكلفة الفندق في الليلة؟"
    assert english_terms(text) == english_terms(text)
    got = english_terms(text)
    assert got.index("hotel") < got.index("night")
