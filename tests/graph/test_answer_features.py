"""The cheap readings of a question and a sentence that steer answer selection and the gate on
what was asked (graph/answerers/features.py, graph/tenant_names.py): pure functions, no model."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import date

import pytest
from qdrant_edge import Bm25, Bm25Config

from graph.answerers import features
from graph.nodes.tools import _screen
from graph.tenant_names import Lexicon, Names, TenantNames, build_lexicon, named_passages
from retrieval.conflicts import ConflictReport, detect_conflicts
from retrieval.search import Passage, SearchResult


def passage(text: str, *, heading: str = "Leave Policy > Annual Leave", title: str = "Leave Policy",
            score: float = 0.6, doc: str = "hr/leave", lang: str = "en") -> Passage:
    return Passage(chunk_id=f"t:{doc}:v1:0000", doc_id=doc, version="v1", title=title, source_path=f"{doc}.md",
                   page=None, heading=heading, text=f"{heading}\n{text}", score=score, rrf=0.03, owner=None,
                   policy_id=None, lang=lang)


def named(names: Names, wide: frozenset[str] = frozenset()) -> Lexicon:
    """A tenant's lexicon with these names (and company names, `wide`) and no words."""
    return Lexicon(names=names, words=frozenset(), wide=wide)


@pytest.mark.parametrize(("question", "kind"), [
    ("How many days of annual leave do I get?", "quantity"),
    ("What is the nightly hotel limit in London?", "quantity"),
    ("whats the hotel cap in dubai per night", "quantity"),
    ("whats the yearly max gitlab reimburses for courses?", "quantity"),
    ("how old does my laptop have to be before a refresh?", "quantity"),
    ("What’s the mileage rate?", "quantity"),
    ("From which day of sick leave do I need a certificate?", "quantity"),
    ("By when must I use carried-over leave?", "when"),
    ("What are our core hours?", "when"),
    ("Who has to approve a refund over $500?", "who"),
    ("Can I book premium economy?", "rule"),
    ("when do i get paid back?", "when"),
    # "when" opening a clause asks nothing about time.
    ("What's the anniversary gift when you hit 5 years?", None),
    ("كم يومًا إجازة الحج؟", "quantity"),
    ("Tell me about the parking rules", None),
    ("I tutor on weekends. At what point do I need to get that approved?", "quantity"),  # a threshold
    ("above what amount do I need a receipt?", "quantity"),
    ("ما الحد الأقصى لتكلفة الفندق في الليلة؟", "quantity"),
    ("ما مقدار البدل اليومي في دبي؟", "quantity"),
    ("بكم يمكنني شراء الشاشة؟", "quantity"),
    ("من أي يوم أحتاج إلى شهادة طبية؟", "quantity"),
    ("ما هي قواعد المحكمة؟", None),  # "كم" inside "المحكمة" asks for no quantity
    ("كل كم سنة يحق لي إجازة تفرغ؟", "frequency"),
    ("كم مرة في السنة يجب تغيير كلمة المرور؟", "frequency"),
    ("متى يجب أن أقدم الإيصالات؟", "when"),
    ("ما هو الموعد النهائي لتقديم المصاريف؟", "when"),
    ("في أي عام بدأت السياسة؟", "when"),
    ("من يوافق على رحلات العمل؟", "who"),
    ("من هو المسؤول عن الأجهزة؟", "who"),
    ("أي فريق يعتمد طلبات الانتقال؟", "who"),
    ("من الممكن أن أعمل من المنزل؟", None),  # "من الممكن" is "it is possible", not "who"
    ("هل يمكنني حجز الدرجة السياحية الممتازة؟", "rule"),
    ("وهل يحق لي إجازة أبوة؟", "rule"),
])
def test_the_kind_of_answer_a_question_wants(question: str, kind: str | None) -> None:
    assert features.answer_kind(question) == kind


def test_an_arabic_question_s_terms_are_its_own_words_and_the_places_it_names() -> None:
    """No word list translates an Arabic question: its terms are its own words (and the places it
    names, below); whether an English sentence answers it is the judge's multilingual reading."""
    terms = features.question_terms("كم يومًا من الإجازة المرضية المدفوعة يحق لي؟")
    assert terms and all(not t.isascii() for t in terms)


def test_an_arabic_question_s_places_count_as_the_english_page_names_them() -> None:
    terms = features.question_terms("كم الحد الأقصى لتكلفة الفندق بلندن لليلة الواحدة؟")
    assert {"city:london", "country:united kingdom"} <= terms
    london, boston = "City: London; Nightly limit: GBP 210", "The nightly hotel limit in Boston is USD 275."
    sentences = [features.with_places(features.tokens(s), s) for s in (london, boston)]
    weights = features.term_weights(features.with_places(terms, "", widen=True), sentences)
    hotels = features.tokens("Travel Policy > Hotels")  # both under the same heading
    assert features.coverage(weights, sentences[0], hotels) > features.coverage(weights, sentences[1], hotels)
    assert "city:dubai" in features.question_terms("ما البدل اليومي في دبي للموظفين؟")
    assert not features.places("لندن")  # places() reads English names only


def test_arabic_indic_digits_count_as_the_english_page_writes_them() -> None:
    assert "25" in features.question_terms("هل ٢٥ يومًا من الإجازة المرضية مدفوعة؟")


def test_an_english_question_s_terms_are_its_tokens_and_so_are_an_arabic_one_s() -> None:
    question = "How many paid sick days do I get?"
    assert features.question_terms(question) == features.tokens(question)
    elsewhere = "متى كانت تجربة ماركوني الإذاعية الأولى؟"
    assert features.question_terms(elsewhere) == features.tokens(elsewhere)


def test_a_sentence_of_the_wrong_kind_loses_and_one_of_the_right_kind_gains() -> None:
    assert features.kind_score("quantity", "From the 4th day you need a medical certificate.") > 0
    assert features.kind_score("quantity", "Sick leave is never deducted from annual leave.") < 0
    assert features.kind_score("quantity", "Finance reviews the rate in our four office locations.") < 0
    assert features.kind_score("when", "Carried-over days must be used by 31 March.") > 0
    # A date says when, not how much: "how much is the health cover?"
    for dated in ("Who is covered: all Australian staff (effective July 27, 2023)", "The plan changed on 1 March 2026.",
                  "The new plan starts in 2027.", "Updated 2025-01-01."):
        assert features.kind_score("quantity", dated) < 0, dated
    assert features.kind_score("quantity", "From 1 March 2026 the company pays AUD 500 a year.") > 0
    assert features.kind_score("quantity", "In May, 3 days may be carried over.") > 0
    # …and an amount of money or a share says how much, not when.
    for amount in ("If you have submitted $10,000 worth of reimbursements, your wallet shows the rest.",
                   "The company pays 80% of the premium."):
        assert features.kind_score("when", amount) < 0, amount
    assert features.kind_score("when", "Submit a claim of up to $500 within 90 days of the service.") > 0


def test_a_figure_the_question_gives_or_a_phone_number_is_no_answer() -> None:
    asked = "How many paid sick days can I use in a rolling 12-month period?"
    assert features.kind_score("quantity", "Eligibility is calculated on a rolling 12-month period.", question=asked) < 0
    assert features.kind_score("quantity", "You can use 25 paid sick days in a rolling 12-month period.",
                               question=asked) > 0
    # a whole number only: the question's 12 is not the 120 of a sentence
    assert features.kind_score("quantity", "You get 120 hours a year.", question=asked) > 0
    assert features.kind_score("quantity", "Sourcegraph pays at least 16 weeks.", question="if I don't take the 16 wks "
                               "in one go, what size blocks?") < 0
    for phone in ("Canada Life: 1-800-724-3402", "Call +44 20 7946 0958 for claims.", "Benefits desk: (555) 123-4567"):
        assert features.kind_score("quantity", phone) < 0, phone
        assert features.kind_score("when", phone) < 0, phone
    for amount in ("The company matches up to 3% of base salary.", "It costs 1 500 000 USD.", "Up to $1,500 per year."):
        assert features.kind_score("quantity", amount) > 0, amount


def test_a_frequency_is_a_count_of_times_not_any_time() -> None:
    assert features.kind_score("frequency", "Emails are delivered at random times.") < 0
    assert features.kind_score("frequency", "Change it two times a year.") > 0
    assert features.kind_score("frequency", "One campaign takes place each fiscal quarter.") > 0


def test_a_question_s_amount_prefers_the_tier_whose_range_holds_it() -> None:
    amount = features.asked_amount("Who needs to approve a $3,000 training request?")
    assert amount == 3000
    assert features.range_fit(amount, "Manager and VP approval: $1,000.01 - $5,000") > 0
    assert features.range_fit(amount, "Manager and director approval for any spend $5,000.01 - $10,000") < 0
    # A threshold answers either side of it: "over $10,000" says what a $3,000 request does not need.
    assert features.range_fit(amount, "Your manager approves anything up to USD 1,000.") == 0
    assert features.range_fit(amount, "Spend over $10,000 needs the finance director.") == 0
    assert features.range_fit(amount, "Spend over $1,000 needs the finance director.") > 0
    assert features.range_fit(amount, "Requests between 2,000 and 4,000 EUR go to the budget owner.") > 0
    # No amount, or numbers that are not money: nothing to prefer.
    assert features.range_fit(amount, "Call the helpdesk on 1-800-724-3402 within 3 days.") == 0
    assert features.range_fit(amount, "Book up to 3 days ahead.") == 0
    assert features.range_fit(None, "Manager and VP approval: $1,000.01 - $5,000") == 0
    assert features.asked_amount("What is the hotel limit?") is None
    assert features.asked_amount("I paid $20 and then $30, who approves?") is None  # two amounts: which one?
    assert features.asked_amount("is a 3k EUR course ok?") == 3000


def test_a_question_s_span_of_time_prefers_the_threshold_that_holds_it() -> None:
    short = features.asked_span("If I'm let go after less than a year, what severance would I be offered?")
    assert short is not None and 300 < short[0] < 365
    assert features.span_fit(short, "If you have been with the company for less than 1 year, you get 4 weeks of pay.") > 0
    assert features.span_fit(short, "If you have been with the company for over 1 year, you get 2 weeks per year.") == 0
    holiday = features.asked_span("Do I need extra approval for a three-week holiday?")
    assert holiday == (21.0, False)
    assert features.span_fit(holiday, "Any time off that exceeds 10 business days needs your director's approval.") > 0
    # Hours and days are not compared: a year is not "6 hours or more".
    assert features.span_fit(short, "Flights of 6 hours or more may be booked in premium economy.") == 0
    assert features.span_fit(features.asked_span("premium economy on a 12-hour flight?"),
                             "Flights of 6 hours or more may be booked in premium economy.") > 0
    # As staff write it: "before my 1 year mark", "3 wks off", "after ~8 months", "a 12-hr flight"; and
    # a threshold with words between its number and its unit ("25 consecutive calendar days").
    assert features.asked_span("planning a month-long trip. is there a point where i need sign-off?") == (30.0, False)
    assert features.asked_span("joined 7 months ago. if i got let go what severance would i get?") == (210.0, False)
    early = features.asked_span("if i get let go before my 1 year mark, how much severance would i get?")
    assert early is not None and 360 < early[0] < 365
    assert features.span_fit(features.asked_span("planning 5 weeks off in a row"),
                             "Time off exceeding 25 consecutive calendar days needs approval.") > 0
    assert features.asked_span("taking 3 wks off over dec, do i need approval beyond my manager?") == (21.0, False)
    assert features.asked_span("if they let me go after ~8 months, what severance?") == (240.0, False)
    assert features.asked_span("premium economy on a 12-hr flight?") == (0.5, True)
    # A span counted from an event: "about 8 months after I joined" is 240 days.
    joined = features.asked_span("If my contract is terminated about 8 months after I joined, what severance?")
    assert joined == (240.0, False)
    # In a passage of tiers, the tier that excludes the span loses; a lone threshold does not.
    over = "If you have been with the company for over 1 year, you get 2 weeks per year."
    assert features.span_fit(joined, over, tiered=True) < 0 == features.span_fit(joined, over)
    assert features.span_fit(joined, "Staff parking costs USD 40 per month.", tiered=True) == 0
    # A rate is not a case: "days a year" states no span.
    assert features.asked_span("How many days a year can I work abroad?") is None


def test_a_sentence_that_sends_the_reader_elsewhere_is_a_pointer() -> None:
    assert features.is_pointer("Visit our Anniversary Gift section for more information about the gifts.")
    assert features.is_pointer("See the travel page for details.")
    assert not features.is_pointer("Visit the office at 9am to collect your badge.")
    assert not features.is_pointer("Five-year anniversaries come with a backpack.")


@pytest.mark.parametrize(("sentence", "old"), [
    ("This notice supersedes the mileage rate in the Travel Policy, which set a rate of USD 0.58.", True),
    ("A journey driven in June is still paid at the previous rate.", True),
    ("From 1 July 2099, staff are reimbursed at USD 0.70 per mile.", True),
    ("From 1 July 2026, staff are reimbursed at USD 0.62 per mile.", False),
    ("Staff are reimbursed at USD 0.62 per mile.", False),
])
def test_a_superseded_or_future_value_is_history(sentence: str, old: bool) -> None:
    assert features.is_history(sentence, today=date(2026, 12, 1)) is old


def test_places_match_by_country_but_one_city_never_stands_for_another() -> None:
    assert features.places("What is the per diem in Riyadh?", widen=True) >= {"country:saudi arabia"}
    assert "country:saudi arabia" in features.places("SAR 280 in Saudi Arabia")
    assert features.places("UK customers") == features.places("customers in the United Kingdom")
    assert not features.places("Boston | USD 250") & features.places("a trip to Denver", widen=True)
    # Every country by its name; a US state is a place in the United States; the longest name wins.
    assert features.places("I'm moving to Portugal") == {"country:portugal"}
    assert features.places("I'm based in Texas", widen=True) == {"city:texas", "country:united states"}
    assert features.places("our New Mexico office") == {"city:new mexico"}
    assert features.places("staff in Mexico City") == {"country:mexico"}


def test_a_rate_in_one_word_reads_as_its_unit() -> None:
    assert features.tokens("the yearly budget") == features.tokens("the budget per year")
    assert {"day", "month"} <= features.tokens("a daily limit and a monthly stipend")


def test_rare_question_words_weigh_more_than_shared_ones() -> None:
    sentences = [features.tokens(s) for s in (
        "MFA is required on every account.", "Use the authenticator app for MFA.",
        "Everyone in Finance must use a hardware key for MFA.")]
    weights = features.term_weights(features.tokens("Which MFA must people in Finance use?"), sentences)
    assert weights["finance"] > weights["mfa"]


CARRY = passage("Carry-Over\nYou may carry over up to 5 days of unused annual leave into the next leave year.")
SICK = passage("You may take up to 10 days of paid sick leave per leave year.", heading="Leave Policy > Sick Leave",
               score=0.42, doc="hr/leave-sick")
OFFICES = passage("Offices are open 07:00 to 20:00 in Boston, London, Dubai and Riyadh.",
                  heading="Facilities > Opening Hours", title="Facilities", doc="ops/facilities")
HOTELS = passage("City | Nightly limit\nBoston | USD 250\nAny other city | USD 180", heading="Travel > Hotels",
                 title="Travel", doc="finance/travel")
FLIGHTS = passage("For flights of 6 hours or more, you may book premium economy.", heading="Travel > Flights",
                  title="Travel", doc="finance/travel")


def test_the_tenant_s_names_are_read_from_every_document_not_only_the_passages_found() -> None:
    names = build_lexicon([
        ("acme/travel", "Acme Travel", ["Acme staff book hotels through Navan. Navan sends Acme the invoice.",
                                        "Questions: travel@acme.example or #acme-travel."]),
        ("globex/security", "Globex Security", ["At Globex, passwords have 15 characters. Globex rotates keys.",
                                                "Managers approve access. The manager is told.",
                                                "Our European offices follow European rules."]),
    ]).names
    assert names["navan"] == {"acme/travel"}
    assert names["globex"] == {"globex/security"}
    assert names["acme"] == {"acme/travel"}  # in prose, the title and the id; "@acme" and "#acme-…" are not prose
    assert "managers" not in names and "manager" not in names  # written in lower case too
    assert "european" not in names  # a region is where, not who
    days = build_lexicon([("acme/pay", "Pay", ["Salaries are paid on the 25th. Expenses are paid on the 10th.",
                                               "If the 25th is a holiday, on the 24th. Claims close on the 10th."])])
    assert "25th" not in days.names and "10th" not in days.names  # a date's day names nothing
    # A capital where every word has one (a sentence, a line, a list item) is no name's
    openers = build_lexicon([("acme/pay", "Pay", ["- Hitting sales target or quota", "Hitting a snag? Ask Finance.",
                                                  "| Hitting | 10% |"])]).names
    assert "hitting" not in openers
    acme_passwords = passage("Passwords have at least 12 characters.", heading="Access > Passwords",
                             title="Access Standard", doc="acme/access")
    globex_passwords = passage("Passwords are rotated yearly.", heading="Security", title="Security",
                               doc="globex/security")
    names = {**names, "acme": frozenset({"acme/travel", "acme/access"})}
    # The passage's document uses the name even where the passage does not: it is the one kept.
    assert named_passages("min password length at acme?", [acme_passwords, globex_passwords],
                          named(names)) == [acme_passwords]


def test_a_folder_s_organisation_is_the_name_most_of_its_documents_use_and_few_others_do() -> None:
    docs = [
        ("acme/travel", "Travel", ["Acme staff book hotels through Navan. Post in Slack."]),
        ("acme/leave", "Leave", ["At Acme, leave is booked in the HR tool. Ask in Slack."]),
        ("acme/meetups", "Meetups", ["Company meetups last one week. The Slack channel has the dates."]),
        ("globex/security", "Security", ["At Globex, passwords have 15 characters. Report in Slack."]),
        ("globex/travel", "Travel", ["Globex's staff book trains through Navan. Slack the team."]),
        ("globex/leave", "Leave", ["Globex staff book leave in Slack."]),
    ]
    lexicon = build_lexicon(docs)
    # Slack is in every folder (nobody's organisation); Navan in half of each folder's documents at most.
    assert lexicon.organisations == {"acme/travel": "Acme", "acme/leave": "Acme", "acme/meetups": "Acme",
                                     "globex/security": "Globex", "globex/travel": "Globex",
                                     "globex/leave": "Globex"}
    # One organisation, or folders named after what they hold: none, though a month or a team most
    # of a folder's pages name is written as a name.
    assert build_lexicon(docs[:3]).organisations == {}
    assert build_lexicon([(f"{d.split('/')[1]}/x", t, texts) for d, t, texts in docs]).organisations == {}
    departments = build_lexicon([
        ("finance/travel", "Travel", ["From January, the Finance team pays hotels. Finance approves."]),
        ("finance/mileage", "Mileage", ["The rate changes in January. Ask Finance on Friday."]),
        ("hr/leave", "Leave", ["Ask HR about leave. HR replies in a day, except on Friday."]),
        ("hr/remote", "Remote work", ["HR keeps the list of countries. Tell HR before you move."]),
    ])
    assert departments.organisations == {}
    # Days and months are when, not who: "my last day is Friday" names no one a page must name.
    assert "january" not in departments.names and "friday" not in departments.names


def test_a_name_most_of_a_folder_s_documents_use_is_every_one_of_them_s() -> None:
    names = build_lexicon([
        ("acme/travel", "Travel", ["Acme staff book hotels through Navan. Navan sends Acme the invoice."]),
        ("acme/leave", "Leave", ["At Acme, leave is booked in the HR tool. Acme approves it in a day."]),
        ("acme/meetups", "Meetups", ["Company meetups last one week, twice a year."]),
        ("globex/security", "Security", ["At Globex, passwords have 15 characters. Globex rotates keys."]),
        ("globex/travel", "Travel", ["Globex staff book trains through Navan."]),
    ]).names
    assert names["acme"] == {"acme/travel", "acme/leave", "acme/meetups"}  # two of three use it
    assert names["globex"] == {"globex/security", "globex/travel"}
    assert names["navan"] == {"acme/travel", "globex/travel"}  # one of two in each folder: not theirs all
    meetups = passage("Company meetups last one week, twice a year.", heading="Meetups", title="Meetups",
                      doc="acme/meetups")
    trains = passage("Globex staff book trains through Navan.", heading="Travel", title="Travel", doc="globex/travel")
    assert named_passages("How long do the Acme meetups last?", [meetups, trains], named(names)) == [meetups]



def test_only_a_company_s_name_counts_in_a_sentence_that_does_not_ask() -> None:
    lexicon = build_lexicon([
        ("acme/travel", "Travel", ["Acme staff book hotels through Navan. Navan sends Acme the invoice."]),
        ("acme/leave", "Leave", ["At Acme, leave is booked in the HR tool. Acme approves it in a day."]),
        ("acme/meetups", "Meetups", ["Company meetups last one week, twice a year."]),
        ("globex/security", "Security", ["At Globex, passwords have 15 characters. Globex rotates keys."]),
        ("globex/travel", "Travel", ["Globex staff book trains through Navan."]),
    ])
    assert lexicon.wide == {"acme", "globex"}  # Navan: a tool half of each folder's pages name
    meetups = passage("Company meetups last one week, twice a year.", heading="Meetups", title="Meetups",
                      doc="acme/meetups")
    trains = passage("Globex staff book trains through Navan.", heading="Travel", title="Travel", doc="globex/travel")
    # A tool named while telling the situation narrows nothing; a company does.
    known = named(lexicon.names, lexicon.wide)  # the tenant's names, not its words
    assert named_passages("booked it all in Navan already. how long do the meetups last?", [meetups, trains],
                          known) == [meetups, trains]
    assert named_passages("I work at Globex. how long do the meetups last?", [meetups, trains], known) == [trains]


def test_a_vendor_named_while_telling_the_situation_does_not_narrow_the_evidence() -> None:
    repairs = passage("If a repair quote is over $1,000 USD the laptop is replaced instead.", heading="IT > Repairs",
                      title="Laptop Repairs", doc="acme/it-repairs", score=0.45)
    vendors = passage("Apple devices are bought through the reseller.", heading="IT > Vendors", title="Vendors",
                      doc="acme/it-vendors", score=0.2)
    names = {"apple": frozenset({"acme/it-vendors"}), "acme": frozenset({"acme/it-repairs", "acme/it-vendors"})}
    question = "got a quote from an apple authorized shop. what's the cutoff where IT replaces it instead?"
    assert named_passages(question, [repairs, vendors], named(names, frozenset({"acme"}))) == [repairs, vendors]
    # Asked with, the vendor's name narrows them; a company's narrows them wherever it is written.
    assert named_passages("what's the repair cutoff for apple laptops?", [repairs, vendors], named(names)) == [vendors]
    assert named_passages("I'm at acme. what's the repair cutoff?", [repairs, vendors],
                          named({**names, "acme": frozenset({"acme/it-repairs"})}, frozenset({"acme"}))) \
        == [repairs]


def test_a_question_that_names_a_company_is_answered_only_from_that_company_s_documents() -> None:
    acme = passage("Passwords have at least 12 characters.", heading="Access > Passwords", title="Access Standard",
                   doc="acme/access", score=0.62)
    globex = passage("At Globex, passwords have 15 characters.", heading="Security > Passwords",
                     title="Globex Security", doc="globex/security", score=0.55)
    names = {"acme": frozenset({"acme/access"}), "globex": frozenset({"globex/security"})}
    known = named(names)
    # Both are fit to quote; the closer Acme page is not evidence.
    assert named_passages("min password length at globex?", [acme, globex], known) == [globex]
    assert named_passages("min password length at ACME?", [acme, globex], known) == [acme]
    # A name ending in s takes a bare apostrophe ("37signals' policy").
    assert named_passages("what's widgets' password policy?", [acme, globex],
                          named({**names, "widgets": frozenset({"globex/security"})})) == [globex]
    # A page that writes the name counts, whatever the tenant's names say about its document.
    assert named_passages("min password length at globex?", [acme, globex], named({"globex": frozenset()})) == [globex]
    # No name asked, or none any passage's document uses: the passages as they are.
    assert named_passages("min password length?", [acme, globex], known) == [acme, globex]
    assert named_passages("min password length at initech?", [acme, globex],
                          named({**names, "initech": frozenset()})) \
        == [acme, globex]
    # The tools node hands the answerer only Globex's page.
    result = SearchResult(query="", language="en", mode="hybrid", passages=[acme, globex], gate=None, top_score=0.62,
                          legs={}, reranker="test", rerank_fail_open=False, min_score=0.3)

    async def lexicon() -> Lexicon:
        return Lexicon(names=names, words=frozenset())

    found, gate, _, _ = asyncio.run(_screen("min password length at globex?", result, None, None, lexicon=lexicon))
    assert (found, gate) == ([globex], None)
    # Acme's different figure is no conflict for a question about Globex; for one naming no company it is.
    analyser = Bm25(Bm25Config(language="english"))

    def conflicts(question: str, passages: Sequence[Passage]) -> ConflictReport:
        return detect_conflicts(question, passages, terms_of=lambda text: set(analyser.embed_query(text).indices))

    acme_hotel = passage("The nightly hotel limit in Boston is USD 250.", heading="Travel > Hotels",
                         title="Acme Travel", doc="acme/travel", score=0.62)
    globex_hotel = passage("At Globex, the nightly hotel limit in Boston is USD 300.", heading="Travel > Hotels",
                           title="Globex Travel", doc="globex/travel", score=0.55)
    hotels = SearchResult(query="", language="en", mode="hybrid", passages=[acme_hotel, globex_hotel], gate=None,
                          top_score=0.62, legs={}, reranker="test", rerank_fail_open=False, min_score=0.3)
    names = {"acme": frozenset({"acme/travel"}), "globex": frozenset({"globex/travel"})}
    found, gate, found_conflicts, _ = asyncio.run(_screen("What is the nightly hotel limit in Boston at Globex?",
                                                          hotels, conflicts, None, lexicon=lexicon))
    assert (found, gate, found_conflicts) == ([globex_hotel], None, [])
    _, gate, found_conflicts, _ = asyncio.run(_screen("What is the nightly hotel limit in Boston?", hotels, conflicts,
                                                      None, lexicon=lexicon))
    assert found_conflicts and gate is None
    # Where the tenant tells its organisations apart, two companies' figures are two answers, each
    # passage marked with its organisation; a conflict is one within an organisation's documents.
    acme_memo = passage("From 1 May the nightly hotel limit in Boston is USD 275.", heading="Travel > Hotels",
                        title="Acme Travel Notice", doc="acme/travel-notice", score=0.5)

    async def organised() -> Lexicon:
        return Lexicon(names=names, words=frozenset(), organisations={
            "acme/travel": "Acme", "acme/travel-notice": "Acme", "globex/travel": "Globex"})

    found, gate, found_conflicts, _ = asyncio.run(_screen("What is the nightly hotel limit in Boston?", hotels,
                                                          conflicts, None, lexicon=organised))
    assert (gate, found_conflicts) == (None, [])
    assert [(p.doc_id, p.organisation) for p in found] == [("acme/travel", "Acme"), ("globex/travel", "Globex")]
    three = SearchResult(query="", language="en", mode="hybrid", passages=[acme_hotel, globex_hotel, acme_memo],
                         gate=None, top_score=0.62, legs={}, reranker="test", rerank_fail_open=False, min_score=0.3)
    _, _, found_conflicts, _ = asyncio.run(_screen("What is the nightly hotel limit in Boston?", three, conflicts,
                                                   None, lexicon=organised))
    assert [c["docs"] for c in found_conflicts] == [["acme/travel", "acme/travel-notice"]]


async def test_tenant_names_are_built_once_and_rebuilt_in_the_background_when_old() -> None:
    class Catalog:
        def __init__(self) -> None:
            self.docs = {"acme/travel": "Acme staff book hotels through Navan. Navan sends the invoice."}
            self.reads = 0

        async def documents_signature(self, *, tenant_id: str) -> tuple[int, str | None]:
            return len(self.docs), max(self.docs)

        async def published_texts(self, *, tenant_id: str) -> list[tuple[str, str, str]]:
            self.reads += 1
            return [(doc_id, "", text) for doc_id, text in self.docs.items()]

    catalog = Catalog()
    names = TenantNames(catalog, refresh_s=0.0)
    first, second = await asyncio.gather(names.lexicon("t"), names.lexicon("t"))
    assert "navan" in first.names and first is second and catalog.reads == 1  # two first turns, one build
    await asyncio.sleep(0)
    await names.lexicon("t")  # old, but nothing was published since: not read again
    for _ in range(100):
        await asyncio.sleep(0.01)
        if not names._rebuilding:
            break
    assert catalog.reads == 1
    catalog.docs["acme/cards"] = "Pay with the Ramp card. Ramp limits apply."
    stale = (await names.lexicon("t")).names  # old: rebuilt in the background, the last names meanwhile
    assert "ramp" not in stale
    for _ in range(100):
        await asyncio.sleep(0.01)
        if "ramp" in (await names.lexicon("t")).names:
            break
    assert "ramp" in (await names.lexicon("t")).names


def test_the_tenant_s_words_are_every_word_its_documents_use() -> None:
    lexicon = build_lexicon([("acme/travel", "Acme Travel", ["Book hotels through Navan."])])
    assert {"book", "hotels", "navan", "acme", "travel"} <= lexicon.words


def test_words_for_the_staff_a_policy_is_for_weigh_less_than_what_is_asked() -> None:
    question = features.question_terms("Does the company match retirement savings for team members?")
    sentences = [features.tokens("All full-time team members are eligible."),
                 features.tokens("Employer matching up to 3% of base salary."),
                 features.tokens("Enrol through the provider's website.")]
    weights = features.term_weights(question, sentences)
    assert weights["member"] < weights["match"] / 2
    eligible, matching = (features.coverage(weights, t, set()) for t in sentences[:2])
    assert matching > eligible


def test_who_to_email_asks_for_an_address() -> None:
    question = "my laptop got stolen at the airport an hour ago. who do I email right now?"
    assert features.answer_kind(question) == "address"
    assert features.answer_kind("where do i forward it?") == "address"
    assert features.answer_kind("who approves my expenses?") == "who"
    assert features.kind_score("address", "If your laptop is stolen, email panic@acme42.example at once.",
                               question=question) > 0
    assert features.kind_score("address", "Ask in #it-help on Slack.", question=question) > 0
    assert features.kind_score("address", "Acme may ask for the police report of a stolen laptop.",
                               question=question) < 0


def test_a_sentence_that_ends_by_sending_the_reader_elsewhere_is_a_pointer() -> None:
    assert features.is_pointer("Please the 401(k) Company Match and Administration Guide for more details.")
    assert features.is_pointer("Visit the benefits section for more information.")
    # …unless it states the amount on its way there
    assert not features.is_pointer("You may expense up to $50 a day; see the travel policy for more details.")
    assert features.answer_kind("gitlab inc 401k - what's the company match?") == "quantity"


@pytest.mark.parametrize(("question", "asking"), [
    ("single parent here and the offsite is in sept. does acme help pay for childcare while im away?",
     "does acme help pay for childcare while im away?"),
    ("my laptop is being upgraded - can I buy the old one, and how is the price worked out?",
     "can I buy the old one, and how is the price worked out?"),
    # a part that names a place, a company or a plan stays: it says which rule applies
    ("just joined Acme Ltd in manchester. thinking about retirement. how much goes into my pension?",
     "just joined Acme Ltd in manchester. how much goes into my pension?"),
    ("canada based - does the company match RRSP contributions? and how much", None),  # every part kept
    ("a vendor wants to send me a gift card. can i accept it?", None),  # "it" is the gift card
    ("leaving next month. do i ship back the monitor and desk chair i expensed or can i keep them?",
     "do i ship back the monitor and desk chair i expensed or can i keep them?"),  # "them": the monitor and chair
    ("how much is the home office stipend?", None),  # one part
    ("leaving at the end of the month. shipping back my monitor.", None),  # nothing asks
])
def test_the_parts_of_a_message_that_ask(question: str, asking: str | None) -> None:
    assert features.asking_part(question) == asking
