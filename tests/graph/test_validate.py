"""The citation validator: what counts as factual, what a citation is, and strictness."""

from __future__ import annotations

import pytest

from graph.validate import citations_in, is_factual, segment, validate_answer

A = "larkspur:finance/travel:v1:0002"
B = "larkspur:hr/leave:v1:0001"
SENT = [A, B]


def test_cited_answer_passes() -> None:
    verdict = validate_answer(f"The nightly hotel limit in London is GBP 210 [{A}].", SENT)
    assert verdict.ok and verdict.cited == [A] and verdict.factual == 1


def test_every_factual_sentence_needs_its_own_citation() -> None:
    verdict = validate_answer(f"The limit in London is GBP 210 [{A}]. Spa visits are always reimbursed.", SENT)
    assert not verdict.ok
    assert verdict.reason == "answer_validation_failed"
    assert {"kind": "uncited_sentence", "sentence": 1} in verdict.problems


def test_citation_of_a_chunk_never_sent_fails_even_with_valid_ones() -> None:
    verdict = validate_answer(f"London is GBP 210 [{A}, larkspur:finance/travel:v9:0001].", SENT)
    assert not verdict.ok
    assert verdict.problems == [{"kind": "unknown_citation", "sentence": 0,
                                 "chunk_id": "larkspur:finance/travel:v9:0001"}]


@pytest.mark.parametrize("text", [
    f"London is GBP 210. [{A}]",          # citation after the full stop
    f"London is GBP 210 [{A}][{B}].",     # two brackets
    f"London is GBP 210 [{A}; {B}].",     # two ids in one bracket
    f"- London is GBP 210 [{A}]\n- Carry over 5 days [{B}]",  # a list
    f"Here is what the policy says:\nLondon is GBP 210 [{A}].",
    f"Hi! London is GBP 210 [{A}]. I hope this helps.",
    f"London is GBP 210 [{A}]. Are you travelling with a colleague?",
])
def test_accepted_shapes(text: str) -> None:
    assert validate_answer(text, SENT).ok, validate_answer(text, SENT).problems


def test_citation_followed_by_a_new_sentence_does_not_cover_it() -> None:
    verdict = validate_answer(f"London is GBP 210. [{A}] Spa visits are always reimbursed.", SENT)
    assert not verdict.ok
    assert [p["kind"] for p in verdict.problems] == ["uncited_sentence"]


@pytest.mark.parametrize("sentence", [
    "Hello!", "Thanks for asking.", "I hope this helps.", "Let me know if you have other questions.",
    "Here is what the policy says:", "The limits are:", "Which city are you travelling to?",
    "مرحبا", "شكرًا", "إليك ما تقوله السياسة:", "---", "",
])
def test_non_factual_sentences(sentence: str) -> None:
    assert not is_factual(sentence)


@pytest.mark.parametrize("sentence", [
    "The limit is high.",                       # a plain statement is a claim
    "Hello, the limit is USD 250!",             # a digit makes anything factual
    "Thanks: refunds over $500 need approval.",
    "Is the hotel limit higher in London?",     # a question about policy is a claim in disguise
    "Employees must not exceed these limits:",  # a connective with a modal states a rule
    "Costs 250 dollars?",
    "Are you travelling next week?",            # a time word (week) counts as policy vocabulary
    "الحد الأقصى للفندق في لندن هو ٢١٠ جنيهات.",  # Arabic-Indic digits
    "يجب تقديم الطلب مسبقًا:",
    "You get twenty days.",                    # number words
])
def test_factual_sentences(sentence: str) -> None:
    assert is_factual(sentence)


def test_a_draft_without_any_citation_fails_even_if_nothing_is_factual() -> None:
    verdict = validate_answer("Which city are you travelling to?", SENT)
    assert not verdict.ok and verdict.problems == [{"kind": "no_citations"}]


def test_empty_draft_fails() -> None:
    assert validate_answer("", SENT).problems == [{"kind": "empty_draft"}]
    assert validate_answer("   \n", SENT).problems == [{"kind": "empty_draft"}]


def test_verdict_never_contains_the_draft_text() -> None:
    draft = "The limit in London is GBP 999 and spa visits are free."
    verdict = validate_answer(draft, SENT)
    assert "999" not in repr(verdict.as_dict()) and "spa" not in repr(verdict.as_dict())


def test_citation_syntax() -> None:
    assert citations_in(f"a [{A}] b [see note] c [x](http://y) [{B}, {A}]") == [A, B, A]
    assert citations_in("[Note: this is prose]") == []
    assert segment(f"One is 1. [{A}]\nTwo is 2 [{B}].") == [f"One is 1. [{A}]", f"Two is 2 [{B}]."]


def test_arabic_answer_with_citation() -> None:
    assert validate_answer(f"وفقًا لـ«سياسة الإجازات»: «يستحق الموظف 25 يومًا.» [{B}]", SENT).ok
    assert not validate_answer("يستحق الموظف 25 يومًا من الإجازة السنوية.", SENT).ok


# -- the fact check: every figure of a sentence must be stated by a passage it cites ---------------------

TEXTS = {
    A: "Travel and Expenses Policy\nHotels\n| City | Nightly limit |\n| --- | --- |\n| London | GBP 210 |\n"
       "| Boston | USD 250 |\nThe limit may be exceeded by up to 15% with VP approval. Claims over $1,500 need a "
       "director. The policy applies from 1 March 2026. Submit claims within thirty (30) days.",
    B: "Leave Policy\nAnnual leave\nEmployees receive 25 days of paid annual leave. Core hours are 10:00 to 15:00.",
}


def test_a_figure_the_cited_passage_does_not_state_fails_without_the_figure_in_the_verdict() -> None:
    verdict = validate_answer(f"The hotel limit in London is GBP 9,999 per night [{A}].", SENT, texts=TEXTS)
    assert not verdict.ok and verdict.reason == "answer_validation_failed"
    assert verdict.problems == [{"kind": "unsupported_number", "sentence": 0, "count": 1}]
    assert "9,999" not in repr(verdict.as_dict()) and "9999" not in repr(verdict.as_dict())


@pytest.mark.parametrize("sentence", [
    "The hotel limit in London is GBP 210 per night",      # as written
    "London: GBP 210",
    "London's nightly limit is 210 GBP",                   # code after the number
    "Boston is $250 a night",                              # $ for USD
    "Boston is 250 US dollars a night",
    "Boston is USD 250",
    "Claims over USD 1500 need a director",                # thousands separator dropped
    "Claims over 1,500 dollars need a director",
    "You may exceed the limit by 15 % with VP approval",   # spaced percent
    "You may exceed the limit by 15 percent",
    "الحد في لندن ٢١٠ جنيه",                                 # Arabic-Indic digits, Arabic currency word
    "The policy applies from March 1, 2026",               # another date shape
    "It applies from 2026-03-01",
    "It applies from 1 March",                             # a partial date of a stated one
    "Submit claims within 30 days",                        # the passage spells thirty (30)
    "Submit claims within thirty days",
])
def test_the_same_figure_in_another_shape_is_supported(sentence: str) -> None:
    verdict = validate_answer(f"{sentence} [{A}].", SENT, texts=TEXTS)
    assert verdict.ok, verdict.problems


@pytest.mark.parametrize("sentence", [
    "The hotel limit in London is USD 210 per night",      # the passage's number, another currency
    "Boston is GBP 250 a night",
    "You may exceed the limit by 25% with VP approval",
    "Claims over $15,000 need a director",
    "Claims over $150 need a director",                    # part of a number is not the number
    "The policy applies from 1 April 2026",
    "The policy applies from 2027-03-01",
    "Submit claims within forty days",                     # number words are numbers
    "الحد في لندن ٩٩٩ جنيه",
])
def test_a_changed_figure_fails(sentence: str) -> None:
    verdict = validate_answer(f"{sentence} [{A}].", SENT, texts=TEXTS)
    assert [p["kind"] for p in verdict.problems] == ["unsupported_number"], sentence


def test_the_figure_must_be_in_a_passage_that_sentence_cites_not_just_any_sent_one() -> None:
    assert not validate_answer(f"You get 25 days of annual leave [{A}].", SENT, texts=TEXTS).ok
    assert validate_answer(f"You get 25 days of annual leave [{B}].", SENT, texts=TEXTS).ok
    # citing both passages, a sentence may combine their figures
    assert validate_answer(f"London is GBP 210 and leave is 25 days [{A}, {B}].", SENT, texts=TEXTS).ok
    # a cited chunk whose text is unknown supports no figure
    assert not validate_answer(f"London is GBP 210 [{A}].", SENT, texts={B: TEXTS[B]}).ok


def test_every_sentence_is_checked_and_times_keep_their_shape() -> None:
    draft = f"Leave is 25 days [{B}]. Core hours are 10:00 to 16:00 [{B}]."
    verdict = validate_answer(draft, SENT, texts=TEXTS)
    assert verdict.problems == [{"kind": "unsupported_number", "sentence": 1, "count": 1}]
    assert validate_answer(f"Core hours are 10:00 to 15:00 [{B}].", SENT, texts=TEXTS).ok


def test_identifiers_and_citation_ids_are_not_figures() -> None:
    # the chunk id carries digits (v1:0002) and a version or standard name is not a figure
    assert validate_answer(f"See the Travel and Expenses Policy, ISO27001 section [{A}].", SENT, texts=TEXTS).ok


def test_without_texts_only_the_citations_are_checked() -> None:
    assert validate_answer(f"The hotel limit in London is GBP 9,999 per night [{A}].", SENT).ok


async def test_the_validate_node_fact_checks_an_extractive_draft_and_removes_it() -> None:
    """Whichever answerer drafted it, the node checks figures against the sent passages' texts."""
    from langchain_core.messages import AIMessage, RemoveMessage

    from graph.nodes.validate import validate

    passages = [{"chunk_id": A, "title": "Travel and Expenses Policy", "heading": "Hotels", "version": "v1",
                 "effective_at": "2025-01-01", "text": TEXTS[A]}]

    def state(draft: str) -> dict:
        message = AIMessage(content=draft, id="m-1", additional_kwargs={"cairn": {"author": "answerer",
                                                                               "answerer": "extractive"}})
        return {"messages": [message], "passages": passages}

    quoted = await validate(state(f"According to Travel and Expenses Policy (Hotels): “London | GBP 210” [{A}]"))
    assert quoted["validation"]["ok"] and quoted["route"] == "answer"
    changed = await validate(state(f"According to Travel and Expenses Policy (Hotels): “London | GBP 9,999” [{A}]"))
    assert changed["reason"] == "answer_validation_failed" and changed["answer"] is None
    assert [p["kind"] for p in changed["validation"]["problems"]] == ["unsupported_number"]
    assert isinstance(changed["messages"][0], RemoveMessage)
    # the title, heading, version and effective date the answerer was shown count as sent text
    dated = await validate(state(f"The travel policy is effective from 1 January 2025 [{A}]."))
    assert dated["validation"]["ok"], dated["validation"]


def test_a_quotation_is_one_sentence_up_to_its_closing_mark() -> None:
    quoted = f"According to the Travel Policy: “The limit is GBP 210. Spa charges are personal.” [{A}]"
    assert segment(quoted) == [quoted]
    assert validate_answer(quoted, SENT, texts=TEXTS).ok
    arabic = f"وفقًا لـ«سياسة الإجازات»: «يستحق الموظف 25 يومًا. تبدأ السنة في يناير.» [{B}]"
    assert validate_answer(arabic, SENT, texts=TEXTS).ok
    # after the quote closes, a new sentence needs its own citation
    assert not validate_answer(f"“London is GBP 210.” [{A}] Spa visits are always reimbursed.", SENT).ok


def test_arabic_number_words_are_figures_too() -> None:
    hajj = "يحق للموظف المسلم إجازة لأداء فريضة الحج مدتها **10 أيام** مدفوعة الأجر، مرة واحدة طوال مدة خدمته."
    texts = {B: hajj}
    assert validate_answer(f"مدة إجازة الحج عشرة أيام مدفوعة الأجر [{B}].", SENT, texts=texts).ok
    assert validate_answer(f"تُمنح إجازة الحج مرة واحدة [{B}].", SENT, texts=texts).ok  # "one" alone is no figure
    changed = validate_answer(f"مدة إجازة الحج عشرون يومًا [{B}].", SENT, texts=texts)
    assert [p["kind"] for p in changed.problems] == ["unsupported_number"]
    teen = validate_answer(f"مدتها خمسة عشر يومًا [{B}].", SENT, texts=texts)
    assert [p["kind"] for p in teen.problems] == ["unsupported_number"]


def test_arabic_month_names_make_dates() -> None:
    notice = "From 1 July 2026, staff are reimbursed at USD 0.62 per mile."
    texts = {A: notice}
    assert validate_answer(f"يسري المعدل الجديد من ١ يوليو ٢٠٢٦ [{A}].", SENT, texts=texts).ok
    moved = validate_answer(f"يسري المعدل الجديد من ١ أغسطس ٢٠٢٦ [{A}].", SENT, texts=texts)
    assert [p["kind"] for p in moved.problems] == ["unsupported_number"]


def test_a_passage_is_read_for_figures_only_when_a_sentence_citing_it_states_one(monkeypatch) -> None:
    import graph.validate as validate

    read: list[str] = []
    real = validate._passage_facts.__wrapped__

    def counting(text: str) -> object:
        read.append(text)
        return real(text)

    monkeypatch.setattr(validate, "_passage_facts", counting)
    words = f"Hotels must be booked through the travel portal [{A}]. Receipts are required [{A}, {B}]."
    assert validate_answer(words, SENT, texts=TEXTS).ok and read == []
    # the verdicts themselves are what they were: a figure still needs a passage that states it
    assert validate_answer(f"{words} London is GBP 210 [{A}].", SENT, texts=TEXTS).ok and read == [TEXTS[A]]
    failed = validate_answer(f"{words} London is GBP 211 [{A}].", SENT, texts=TEXTS)
    assert failed.problems == [{"kind": "unsupported_number", "sentence": 2, "count": 1}]
