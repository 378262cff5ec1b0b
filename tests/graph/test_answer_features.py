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


def test_an_arabic_question_s_terms_are_its_own_words() -> None:
    """No word list translates an Arabic question, its places included: its terms are its own words;
    whether an English sentence answers it is the judge's multilingual reading."""
    terms = features.question_terms("كم يومًا من الإجازة المرضية المدفوعة يحق لي؟")
    assert terms and all(not t.isascii() for t in terms)


def test_arabic_indic_digits_count_as_the_english_page_writes_them() -> None:
    assert "25" in features.question_terms("هل ٢٥ يومًا من الإجازة المرضية مدفوعة؟")


def test_an_english_question_s_terms_are_its_tokens_and_so_are_an_arabic_one_s() -> None:
    question = "How many paid sick days do I get?"
    assert features.question_terms(question) == features.tokens(question)
    elsewhere = "متى كانت تجربة ماركوني الإذاعية الأولى؟"
    assert features.question_terms(elsewhere) == features.tokens(elsewhere)


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
    assert features.places("staff in Mexico City", widen=True) == {"city:mexico city", "country:mexico"}


def test_the_gazetteer_knows_cities_no_one_listed_and_keeps_ordinary_words_out() -> None:
    # Cities of every country, by their other names too, and in Arabic script.
    assert features.places("hotel cap in Bangalore?", widen=True) == {"city:bengaluru", "country:india"}
    assert features.places("per diem for Winnipeg", widen=True) == {"city:winnipeg", "country:canada"}
    assert features.places("كم بدل الوجبات في الرياض", widen=True) == {"city:riyadh", "country:saudi arabia"}
    # Lower case where running English writes the name capitalised; never a town named like a word.
    assert features.places("what is the hotel limit in riyadh") == {"city:riyadh"}
    assert features.places("Reading the policy on a Nice day, the Chief Security Officer") == set()
    # A code in capitals is a country in prose, not in a heading written in capitals.
    assert features.places("US staff and UAE staff") == {"country:united states", "country:united arab emirates"}
    assert features.places("TERMS AND CONDITIONS FOR US STAFF") == set()


def test_a_rate_in_one_word_reads_as_its_unit() -> None:
    assert features.tokens("the yearly budget") <= features.tokens("the budget per year")
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


def test_the_words_the_keyword_index_leaves_out_are_no_terms() -> None:
    assert features.tokens("What is the limit for the hotel?") == {"limit", "hotel"}
    assert features.is_stopword("التي") and not features.is_stopword("الإجازة")
    assert features.tokens("الإجازة التي") == {"إجازة"}
