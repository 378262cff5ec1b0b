"""The extractive answerer encodes only a shortlist when stored sentence vectors are at hand."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from bot.services import Services
from graph.answerers import AnswerRequest
from graph.answerers.extractive import (
    CANDIDATE_SCHEME,
    MAX_SENTENCES,
    NAME_PENALTY,
    SHORTLIST,
    ExtractiveAnswerer,
    _about_the_place_asked,
    _candidates,
    _features,
    prepare_answer_vectors,
)
from models.judge import Judge
from retrieval.embed import Embedder
from retrieval.search import Passage
from retrieval.sentences import body_of, split_sentences

pytestmark = pytest.mark.slow

FILLER = [f"Room {n} on the {n}th floor is booked through the facilities desk each {day}." for n, day in
          zip(range(2, 14), ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"] * 2, strict=True)]
TEXT = ("# Parking\n\n" + " ".join(FILLER[:6]) + " Staff parking costs USD 40 per month at the north garage."
        " Visitors park free for the first two hours. " + " ".join(FILLER[6:]) + "\n")


class CountingEmbedder:
    """The real embedder, counting what each call had to encode."""

    def __init__(self, real: Embedder) -> None:
        self.real, self.encoded = real, []

    def encode_sentences(self, texts):
        self.encoded.append(list(texts))
        return self.real.encode_sentences(texts)

    def encode_multilingual(self, texts):
        self.encoded.append(list(texts))
        return self.real.encode_multilingual(texts)


def _request(question: str) -> AnswerRequest:
    passage = _passage("facilities/parking", "Parking", TEXT, score=0.8)
    return AnswerRequest(question=question, language="en", passages=[passage], min_score=0.3, messages=[])


def _passage(doc: str, title: str, text: str, *, heading: str | None = None, score: float = 0.6) -> Passage:
    return Passage(chunk_id=f"t:{doc}:v1:0000", doc_id=doc, version="v1", title=title, source_path=f"{doc}.md",
                   page=None, heading=heading or title, text=text, score=score, rrf=0.03, owner=None, policy_id=None,
                   lang="en")


async def _shown(embedder: Embedder, question: str, *passages: Passage, max_sentences: int = MAX_SENTENCES,
                 judge: Judge | None = None) -> str:
    """What the extractive answerer shows for an English question over these passages (floor 0.3)."""
    request = AnswerRequest(question=question, language="en", passages=list(passages), min_score=0.3, messages=[])
    answerer = ExtractiveAnswerer(embedder=embedder, max_sentences=max_sentences, judge=judge)
    return (await answerer.respond(request)).message.content


async def test_stored_vectors_shortlist_what_is_encoded_and_the_answer_stays_the_same(embedder: Embedder) -> None:
    sentences = split_sentences(body_of(TEXT))
    stored_vecs = embedder.encode_sentences(sentences).astype(np.float16)
    row = {"sentences": json.dumps(sentences), "sent_dim": 384, "sentence_vecs": stored_vecs.tobytes()}

    async def stored(ids):
        return {i: row for i in ids}

    question = "How much does staff parking cost per month?"
    plain = ExtractiveAnswerer(embedder=CountingEmbedder(embedder))
    short_embedder = CountingEmbedder(embedder)
    short = ExtractiveAnswerer(embedder=short_embedder, stored_vectors=stored)

    expected = (await plain.respond(_request(question))).message.content
    got = (await short.respond(_request(question))).message.content
    assert "USD 40 per month" in got and got == expected
    encoded = sum(len(batch) for batch in short_embedder.encoded)
    assert len(sentences) > SHORTLIST + 3
    assert encoded <= 1 + SHORTLIST + 2  # the question, the shortlist, the best ones' neighbours


async def test_without_stored_vectors_every_sentence_is_scored(embedder: Embedder) -> None:
    counting = CountingEmbedder(embedder)
    answerer = ExtractiveAnswerer(embedder=counting)
    draft = await answerer.respond(_request("How much does staff parking cost per month?"))
    assert "USD 40 per month" in draft.message.content
    assert sum(len(b) for b in counting.encoded) == 1 + len(split_sentences(body_of(TEXT)))


async def test_prepared_answer_vectors_leave_only_the_question_to_encode(handbook: Services) -> None:
    catalog, embedder = handbook.catalog, handbook.embedder
    pending = await catalog.chunks_without_answer_vectors(limit=10_000, scheme=CANDIDATE_SCHEME)
    assert pending
    prepared = 0
    while (batch := await prepare_answer_vectors(catalog, embedder, limit=40)):
        prepared += batch
    assert prepared == len(pending)
    assert await catalog.chunks_without_answer_vectors(limit=10, scheme=CANDIDATE_SCHEME) == []
    # vectors prepared for an older reading of the sentences are prepared again
    assert len(await catalog.chunks_without_answer_vectors(limit=10_000, scheme=CANDIDATE_SCHEME + 1)) == prepared

    question = "What is the nightly hotel limit in London?"
    result = await handbook.searcher.search(question, handbook.access.resolve_cli(None))
    request = AnswerRequest(question=question, language="en", passages=result.passages,
                            min_score=result.min_score, messages=[])
    counting = CountingEmbedder(embedder)
    fast = ExtractiveAnswerer(embedder=counting, prepared_vectors=lambda ids: catalog.load_answer_vectors(
        chunk_ids=ids), stored_vectors=lambda ids: catalog.load_vectors(chunk_ids=ids))
    plain = ExtractiveAnswerer(embedder=CountingEmbedder(embedder))
    got = (await fast.respond(request)).message.content
    assert got == (await plain.respond(request)).message.content and "GBP 210" in got
    assert [len(batch) for batch in counting.encoded if batch] == [1]  # the question, nothing else


async def test_removed_versions_take_their_prepared_vectors_with_them(handbook: Services) -> None:
    catalog = handbook.catalog
    while await prepare_answer_vectors(catalog, handbook.embedder, limit=64):
        pass
    travel = [c for c in await catalog.version_chunks(tenant_id="larkspur", doc_id="finance/travel", version="v1")]
    assert await catalog.load_answer_vectors(chunk_ids=[c.chunk_id for c in travel])
    assert await handbook.ingestor.withdraw(tenant_id="larkspur", doc_id="finance/travel")
    assert await catalog.load_answer_vectors(chunk_ids=[c.chunk_id for c in travel]) == {}


async def test_the_judge_brings_the_answer_next_to_a_sentence_that_only_restates_the_question(
        embedder: Embedder) -> None:
    text = ("# Parental Leave\n\nBirth parents receive paid parental leave after the birth of a child. The leave lasts"
            " 16 weeks at full pay. It can start up to two weeks before the due date.\n")
    passage = _passage("people/parental", "Parental Leave", text, score=0.7)
    question = "How long is paid parental leave?"
    # The scoring alone quotes the sentence that restates the question; the judge reads its neighbour as
    # answering too, and it is quoted beside it.
    assert "16 weeks" not in await _shown(embedder, question, passage, max_sentences=2)
    shown = await _shown(embedder, question, passage, max_sentences=2, judge=Judge())
    assert "16 weeks" in shown and "Birth parents receive paid parental leave" in shown


@pytest.mark.parametrize(("question", "shown", "never"), [
    ("I'm visiting a supplier in Denver. What's the most the company will pay for my hotel per night?",
     "USD 180", ("USD 250", "GBP 210", "AED 900")),
    ("What's the hotel cap in Dubai?", "AED 900", ("USD 250", "GBP 210", "USD 180")),
])
async def test_a_place_s_row_is_quoted_without_the_rows_of_other_places(embedder: Embedder, question: str,
                                                                          shown: str, never: tuple[str, ...]) -> None:
    text = ("Travel > Hotels\nThe company pays up to the following nightly limits, before taxes:\n"
            "City | Nightly limit\nBoston | USD 250\nLondon | GBP 210\nDubai | AED 900\nAny other city | USD 180\n")
    passage = _passage("finance/travel", "Travel", text, heading="Travel > Hotels")
    answer = await _shown(embedder, question, passage)
    assert shown in answer and not any(other in answer for other in never), answer


def _benefits(country: str, text: str, score: float) -> Passage:
    heading = f"Benefits in {country} > Retirement"
    return _passage(f"benefits/{country.lower()}", f"Benefits in {country}", f"{heading}\n{text}", heading=heading,
                    score=score)


async def test_a_question_about_one_country_is_answered_from_its_page_with_the_figure_that_follows(
        embedder: Embedder) -> None:
    """The Ireland page beside the Canada one is set aside for a question about Canadian staff, and
    the Canada page's figure comes with the sentence that introduces the plan."""
    canada = _benefits("Canada", "Build your retirement savings with the Group RRSP through Maple Life. Employer "
                                 "matching up to 3% of base salary, at most CAD 2,500 a year.", 0.41)
    ireland = _benefits("Ireland", "Team members can join the company pension plan and choose how much to save. "
                                   "The company matches up to 5% of base salary.", 0.40)
    question = "Does the company match retirement savings for Canadian team members?"
    answer = await _shown(embedder, question, ireland, canada)
    assert "up to 3%" in answer and "5%" not in answer and "Ireland" not in answer, answer
    # Without a country in the question, both pages stay candidates.
    assert _about_the_place_asked("Does the company match retirement savings?", [ireland, canada]) == [ireland, canada]
    assert _about_the_place_asked(question, [ireland, canada]) == [canada]
    assert _about_the_place_asked("Is there a pension match in Germany?", [ireland, canada]) == [ireland, canada]


def test_a_page_that_names_the_country_only_in_its_text_sets_aside_another_country_s_page() -> None:
    australia = _passage("benefits/pty", "PTY Benefits", "Private health cover through a national insurer, "
                         "designed to complement Australia's Medicare. The company pays up to AUD 500 a year.")
    uk = _benefits("UK", "Full outpatient cover with no excess.", 0.5)
    other = _passage("benefits/all", "Benefits", "Everyone gets a wellbeing allowance.")
    question = "How much does the company put towards private health cover in Australia?"
    assert _about_the_place_asked(question, [uk, australia, other]) == [australia, other]
    assert _about_the_place_asked("Is there private health cover in Japan?", [uk, australia]) == [uk, australia]


async def test_a_sentence_two_chunks_of_one_page_share_is_quoted_once(embedder: Embedder) -> None:
    shared = "Reimbursements are paid out within 7-10 days of approval."
    first = _passage("finance/claims", "Claims", f"Claims\nSubmit claims in the expense tool. {shared}", score=0.7)
    second = Passage(**{**first.__dict__, "chunk_id": "t:finance/claims:v1:0001",
                        "text": f"Claims\n{shared} Late claims are paid in the next cycle."})
    answer = await _shown(embedder, "How long until a reimbursement is paid back?", first, second)
    assert answer.count("7-10 days") == 1, answer


async def test_in_a_passage_of_tiers_the_tier_that_holds_the_asker_s_case_is_quoted(embedder: Embedder) -> None:
    text = ("Severance\nIf your employment or contract with Acme42 is terminated, you may be eligible for a "
            "severance package. In most cases, if you've been with the company for less than 1 year, you'll be "
            "offered a lump sum equivalent to 4 weeks pay. If you've been with the company for over 1 year, you'll "
            "be offered an additional 2 weeks pay for every year of employment.")
    passage = _passage("hr/severance", "Severance", text, score=0.5)
    answer = await _shown(embedder, "If my contract is terminated about 8 months after I joined, what severance "
                                    "would I normally be offered?", passage)
    assert "4 weeks pay" in answer, answer


async def test_the_answer_reuses_the_scoring_of_the_closest_sentence(embedder: Embedder) -> None:
    """The tools node's closest sentence (a chatty or cross-language question's conflict check) and the
    answer score the same sentences once."""
    counting = CountingEmbedder(embedder)
    answerer = ExtractiveAnswerer(embedder=counting)
    question = "hey so quick one, how much does staff parking cost per month at the north garage these days?"
    request = _request(question)
    closest = await answerer.closest_sentence(question, request.passages)
    encoded = len(counting.encoded)
    shown = (await answerer.respond(request)).message.content
    assert closest is not None and "USD 40" in closest and "USD 40" in shown
    assert len(counting.encoded) == encoded  # nothing encoded a second time
    other = ExtractiveAnswerer(embedder=embedder)  # and the answer is the one a fresh answerer gives
    assert (await other.respond(request)).message.content == shown


async def test_an_arabic_question_is_answered_from_an_english_page_by_the_multilingual_reading(
        embedder: Embedder) -> None:
    """An Arabic question shares no word with an English page: its sentences are compared in the
    multilingual space, with no word list between the languages."""
    text = ("# Travel Expenses\n\nYour working day on a trip starts when you leave home. Meals while travelling on"
            " company business are reimbursable up to USD 100 per day. Keep the receipts for every day of travel."
            " Laundry on trips of five nights or more is reimbursable.\n")
    passage = _passage("finance/expenses", "Travel Expenses", text)
    candidates = [s.scored_text for s in _candidates(text)]
    row = {"texts": json.dumps(candidates), "dim": 384, "vecs": embedder.encode_standalone(candidates)
           .astype(np.float16).tobytes(), "ml_dim": 512,
           "ml_vecs": embedder.encode_multilingual(candidates).astype(np.float16).tobytes()}

    async def prepared(ids):
        return {i: row for i in ids}

    question = "كم يمكنني أن أصرف على الطعام في اليوم أثناء سفري للعمل؟"
    answerer = ExtractiveAnswerer(embedder=embedder, prepared_vectors=prepared, judge=Judge())
    draft = await answerer.respond(AnswerRequest(question=question, language="ar", passages=[passage],
                                                 min_score=0.3, messages=[]))
    assert "USD 100 per day" in draft.message.content, draft.message.content


async def test_a_line_break_written_as_html_in_a_table_cell_is_shown_as_a_separator(embedder: Embedder) -> None:
    text = ("Leave > Pay\nLeave | Pay while away\nMedical leave | 100% for 4 weeks<br>Then 60% for 8 weeks<br/>"
            "After 12 weeks: unpaid\n")
    passage = _passage("hr/leave-pay", "Leave", text, heading="Leave > Pay")
    answer = await _shown(embedder, "How am I paid during medical leave?", passage)
    assert "100% for 4 weeks; Then 60% for 8 weeks; After 12 weeks: unpaid" in answer and "<br" not in answer, answer


def test_a_table_s_first_row_names_its_columns_only_when_it_reads_as_names() -> None:
    named = "Limits\nCity | Nightly limit\nBoston | USD 250\n"
    assert [s.text for s in _candidates(named)] == ["City: Boston; Nightly limit: USD 250"]
    # A table written in HTML often starts with data: each row is shown as it is, the first included.
    data = ("Channels\n#announce-company | Critical information that everyone needs to stay on top of.\n"
            "#announce-departures | Stay informed about teammates who are leaving.\n")
    assert [s.text for s in _candidates(data)] == [
        "#announce-company | Critical information that everyone needs to stay on top of.",
        "#announce-departures | Stay informed about teammates who are leaving."]


async def test_a_pointer_to_another_section_is_read_as_answering_nothing(embedder: Embedder) -> None:
    gifts = _passage("people/celebrations", "Celebrations", "Celebrations > Anniversary\nTeam members celebrating "
                     "their one-year anniversary receive a custom cable organiser. Folks celebrating their five-year "
                     "anniversary have the option of a branded computer backpack.", heading="Celebrations > Anniversary")
    bonuses = _passage("total-rewards/incentives", "Incentives", "Incentives > Anniversaries\nA bot posts a shout-out "
                       "for every hire date anniversary. Visit our Anniversary Gift section for more information about "
                       "the gifts.", heading="Incentives > Anniversaries", score=0.55)
    # The scoring picks the pointer; the judge reads it as answering nothing, so it is never shown as
    # the answer (the turn escalates), and it reads the backpack as answering.
    answerer = ExtractiveAnswerer(embedder=embedder, max_sentences=1, judge=Judge())
    reading = await answerer.judged("What is the anniversary gift for five years?", [bonuses, gifts], 0.3)
    assert reading is not None and reading.answerable < reading.threshold
    quoted = [s["text"] for s in reading.sentences if s["quoted"]]
    assert quoted and all("Visit our" in t for t in quoted)
    assert max(s["probability"] for s in reading.sentences if "backpack" in s["text"]) >= reading.threshold

async def test_a_question_naming_no_organisation_gets_each_organisation_s_rule_under_its_name(
        embedder: Embedder) -> None:
    def org(passage: Passage, name: str | None) -> Passage:
        return Passage(**{**passage.__dict__, "organisation": name})

    acme = org(_passage("acme/security/passwords", "Password Standard",
                        "# Password Standard\n\nPasswords must be at least 12 characters long. "
                        "Passwords are stored in the company password manager.\n", score=0.7), "Acme")
    globex = org(_passage("globex/it/passwords", "Passwords",
                          "# Passwords\n\nEvery password must be at least 15 characters long. "
                          "Screens lock after five minutes.\n", score=0.6), "Globex")
    unrelated = org(_passage("globex/it/printers", "Printers",
                             "# Printers\n\nThe printers on each floor are serviced every Tuesday.\n", score=0.32),
                    "Globex")
    answerer = ExtractiveAnswerer(embedder=embedder)
    question = "How many characters must a password have?"
    draft = await answerer.respond(AnswerRequest(question=question, language="en", passages=[acme, globex, unrelated],
                                                 min_score=0.3, messages=[]))
    lines = str(draft.message.content).splitlines()
    assert any(line.startswith("Acme: According to Password Standard") and "12 characters" in line for line in lines)
    assert any(line.startswith("Globex: According to Passwords") and "15 characters" in line for line in lines)
    assert not any("printers" in line for line in lines)
    # One organisation's passages: no names, as before.
    draft = await answerer.respond(AnswerRequest(question=question, language="en", passages=[acme], min_score=0.3,
                                                 messages=[]))
    assert str(draft.message.content).startswith("According to Password Standard")
    # An organisation whose best sentence is far below the best one is left out.
    far = org(globex, "Globex")
    far = Passage(**{**far.__dict__, "text": "# Passwords\n\nThe printers on each floor are serviced every Tuesday.\n"})
    draft = await answerer.respond(AnswerRequest(question=question, language="en", passages=[acme, far],
                                                 min_score=0.3, messages=[]))
    assert not any(line.startswith("Globex") for line in str(draft.message.content).splitlines())
    assert str(draft.message.content).startswith("According to Password Standard")


async def test_an_faq_answer_is_read_with_the_question_it_answers(embedder: Embedder) -> None:
    text = ("Benefits > FAQ\nQ. How do I enrol in the pension plan?\n\n- Enrol in the HR portal within 30 days of "
            "joining.\n\nQ. Does Acme match my pension contributions?\n\n- Not at this time.\n\n"
            "Q. Can I change my pension provider?\n\n- Your pension provider is chosen by the company and applies to "
            "every plan member.\n")
    answerer = ExtractiveAnswerer(embedder=embedder)
    draft = await answerer.respond(AnswerRequest(question="does acme match pension contributions?", language="en",
                                                 passages=[_passage("hr/benefits", "Benefits", text)], min_score=0.3,
                                                 messages=[]))
    first = str(draft.message.content).splitlines()[0]
    # "Not at this time." alone says nothing: it is shown after the question it answers.
    assert "“Does Acme match my pension contributions? Not at this time.”" in first
    sentences = _candidates(text)
    assert [s.text for s in sentences][1] == "Does Acme match my pension contributions? Not at this time."
    assert sentences[2].scored_text.startswith("Can I change my pension provider? Your pension provider")
    assert sentences[2].text.startswith("Your pension provider")  # a longer answer is shown alone
    # "Questions?" asks about nothing in particular.
    assert _candidates("Plans > Questions?\nCall the plan on 0800 123 456.")[0].scored_text.startswith("Call")


def test_a_question_inside_a_paragraph_is_the_text_s_own_not_an_faq_s() -> None:
    text = ("Problems\nConsider this instance of the problem: is there a route of at most 2000 km through the 15 "
            "largest cities? The answer to this instance is of little use for other instances. For this reason the "
            "theory studies problems, not instances.\nHow often do we run it?\nEvery week, on Mondays.")
    sentences = _candidates(text)
    assert sentences[0].scored_text == "The answer to this instance is of little use for other instances."
    assert sentences[2].scored_text == "How often do we run it? Every week, on Mondays."
    # an FAQ's question is a line of its own, whatever word it opens with
    faq = _candidates("Leave\nThe policy in my country differs from this one, which applies?\nYours applies.")
    assert faq[0].scored_text == "The policy in my country differs from this one, which applies? Yours applies."


def test_a_name_the_passage_holds_need_not_be_repeated_in_the_sentence_quoted() -> None:
    question = "Is there a deadline for submitting reimbursements to Maven?"
    maven = _passage("people/family-support", "Family support", "# Family support\n\nMaven is HIPAA compliant. "
                     "You must submit the request within 90 days of the date of service.\n", score=0.7)
    other = _passage("people/wellness", "Wellness", "# Wellness\n\nThe gym is open daily. "
                     "You must submit the request within 90 days of the date of service.\n", score=0.7)
    sentences = [*_candidates(maven.text, 0), *_candidates(other.text, 1)]
    deadline = [i for i, x in enumerate(sentences) if "90 days" in x.text]
    scores = _features(question, sentences, [maven, other])
    # the same sentence: on Maven's page it is about Maven; on another page it is not
    assert scores[deadline[0]] - scores[deadline[1]] == pytest.approx(NAME_PENALTY)


def test_a_section_path_inside_a_chunk_is_the_lead_in_of_the_lines_under_it() -> None:
    text = ("Expense Policy > 4. Procedures\nTravel (Other) > Personal Bookings\n- Personal trips are never added "
            "to the company invoice.\n\n4.1 NON-TRAVEL EXPENSES > Books (Audio/E-Books included)\n"
            "- Books are reimbursable if they are used to do your job better.\n- Limit is set to $60/year.\n")
    candidates = _candidates(text)
    assert not any(" > " in c.text for c in candidates)  # never quoted on its own
    limit = next(c for c in candidates if "$60/year" in c.text)
    assert limit.scored_text.startswith("Books (Audio/E-Books included)")  # read with the section it is under
    # …and a short item is shown after it
    assert limit.text == "Books (Audio/E-Books included): Limit is set to $60/year."
    assert any(c.text == "Books are reimbursable if they are used to do your job better." for c in candidates)


async def test_a_short_faq_answer_is_quoted_with_the_rest_of_it(embedder: Embedder) -> None:
    text = ("# Wellbeing > FAQ\n\nQ: Is the stipend taxable?\n\nA: Yes, like all stipends it is taxed.\n\n"
            "Q: If my therapy costs more than $250 a year, can I claim the full amount?\n\n"
            "A: Unfortunately, not at this time. The maximum annual amount is $250 per teammate.\n\n"
            "Q: Can I use it for a family member?\n\nA: No, the benefit is for teammates only.\n")
    shown = await _shown(embedder, "What's the annual cap on the wellbeing stipend?",
                         _passage("people/wellbeing", "Wellbeing", text, score=0.7), max_sentences=2, judge=Judge())
    if "Unfortunately, not at this time." in shown:  # quoted, the short answer comes with its fact
        assert "The maximum annual amount is $250 per teammate." in shown
    assert "$250 per teammate" in shown
    candidates = _candidates(text)
    short = next(c for c in candidates if c.text.endswith("Unfortunately, not at this time."))
    rest = next(c for c in candidates if c.text.startswith("The maximum annual amount"))
    assert short.faq and short.answers_faq and not rest.answers_faq


async def test_the_judge_s_reading_and_the_answer_choose_the_sentences_once(embedder: Embedder) -> None:
    picked: list[str] = []

    class Counting(ExtractiveAnswerer):
        def _picks(self, question, sentences, scores, cosine, passages):  # type: ignore[no-untyped-def]
            picked.append(question)
            return super()._picks(question, sentences, scores, cosine, passages)

    answerer = Counting(embedder=embedder)
    question = "How much does staff parking cost per month?"
    passage = _passage("facilities/parking", "Parking", TEXT, score=0.8)
    answerer.judge = Judge()
    reading = await answerer.judged(question, [passage], 0.3)
    request = AnswerRequest(question=question, language="en", passages=[passage], min_score=0.3, messages=[])
    shown = (await answerer.respond(request)).message.content
    quoted = [s["text"] for s in reading.sentences if s["quoted"]] if reading else []
    assert quoted and all(sentence[:60] in shown for sentence in quoted) and picked == [question]
    await answerer.judged(question, [replace(passage, score=0.7)], 0.3)  # other passages: chosen anew
    assert len(picked) == 2
