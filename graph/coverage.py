"""Does the evidence hold what makes the question different?

A near-miss question lands on a neighbouring rule: "can I carry over unused *sick* days?" retrieves
the annual-leave carry-over, "bereavement leave when my *pet* dies" the family bereavement rule,
"opening hours of the *Tokyo* office" the offices that exist. The score floor cannot see this
(the neighbouring passage is a close match); what gives it away is a word of the question that
no passage fit to answer contains. The words that count, *distinguishing terms*, are:

- places and names: a city, a country or another capitalised name in the question ("Tokyo",
  "Sourcegraph"), or a word the passages always write as a name, however the question spells it
  ("at gitlab", "37signals people"); a passage with a catch-all ("any other city", "all staff")
  covers any place or name but the tenant's names (another company's "all employees" are not
  Sourcegraph's);
- qualifiers from a short list of words that change who or what a rule is for (contractor,
  intern, part-time, wholesale, sick, pet, …) or when it applies (summer, winter: "4-day weeks in
  the *summer*" over the weekly-hours rule);
- section words: a word of the question that heads a section of the passages retrieved ("Sick
  Leave", "Carry-Over"): the collection has a section about it, so it is what was asked about;
- years and decades ("the 2024 rate", "in the 1970s"): a passage about another year answers
  another question. (Other numbers in a question are usually the asker's situation — "an 18
  dollar taxi", "a 12-hour flight" — and are not looked for.)
- unknown names: a capitalised word (not a place) that no document of the tenant uses, nor a word
  a typing error away from one ("the Czerniakow river"), or an employer so named in any case
  ("shopify employees", "people at shopify"): no passage can hold it;
- the item of a "will you pay for …?" question, by its head word ("hearing *aids*", "a *book*"; for
  a membership or subscription, what it is for: "a membership at a co-working *space*", "a *gym*
  membership"): evidence that never mentions it says what is paid for, not whether this is;
- the thing whose amount is asked, every word of it ("the pet *insurance* discount", "the annual
  *dental claim* limit"), and the thing whose existence is asked, by its head word ("is there a
  shuttle *bus* …?"), unless policies state it in other words ("is there a deadline …?");
- what a "how many …?" question counts ("how many wrong password *tries* …"), unless it is a unit,
  people or times; and what a policy is asked about, every word of it ("the policy on *smoking or
  vaping* *breaks*").

Staff words count too: a dog or a cat is a pet, a babysitter dependent care; a passage for everyone
"outside the US" covers any other country. Not counted: the asker's circumstances ("if I get *sick*
on a trip, how much does the travel insurance cover?", "spending the *winter* abroad, how long can I
…?"), a month ("3 wks off over *dec*"), the year they joined ("joined in *2022*"), "part-time" of a
course ("a part-time masters course"), "*this summer*", the places of a move when the move is what
is asked about ("relocating from *Germany* to *Portugal*. How far ahead do I start?"), "anything" as
the thing to be paid for, and a name in a sentence that only tells the asker's plans ("… per year?
want to do an *AWS* cert"), unless most documents of a folder use it (a company's name: `wide` in
graph/tenant_names.py). "What's the *dress* code?" asks for a policy on dress. A long word is
covered by one of the same root ("contributions" by "contribute"), except a qualifier ("contractors"
is not "contract").

Places are read in one, two or three words ("Tokyo", "new york", "Abu Dhabi") however they are
capitalised. A place counts only where a passage tells places apart (a page for one country's staff
does, by its path: "…/pty-benefits-australia" is no answer for London), except a site ("the London
office"), which a passage must name (or cover with "all offices", "any other city") in any case.
Once the gate has passed, a question that names one of the tenant's names is answered only from the
passages whose documents use it (`named_passages`).

One passage the answer would quote from (at or above the floor, and within QUOTED_MARGIN of the
best) must contain every distinguishing term (or an alias or a
common equivalent: "holiday" is leave, "doctor's note" a medical certificate); otherwise the
turn escalates as `below_score_floor`, with the missing terms in the trace. Across languages or
in Arabic there are few shared words to count: the tenant's names, which both spell alike ("… في
37signals؟" over another company's page escalates), and, over English evidence, the qualifiers the
glossary (retrieval/glossary.py) gives in English ("… عند نفوق كلبي؟" asks about a pet) and the
places, by their English names ("… في دبي؟" is Dubai); the
reranker's multilingual scores and the floor apply there as before.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from graph.answerers import features
from graph.tenant_names import BRAND, EMPTY, WORD, Lexicon, Names, word_key
from retrieval.glossary import english_groups
from retrieval.language import detect_language
from retrieval.rerank import near_miss
from retrieval.search import Passage
from retrieval.sentences import body_of

# Words that change who or what a rule is for. Missing from the evidence, each one means the
# evidence answers a neighbouring question.
QUALIFIERS = frozenset(features.stem(w) for w in (
    "contractor contractors intern interns internship temp temporary seasonal freelancer freelancers consultant "
    "consultants apprentice apprentices student students volunteer volunteers probation part-time parttime "
    "wholesale corporate b2b franchise reseller resellers distributor distributors sick sickness maternity paternity adoption sabbatical unpaid jury study compassionate pet pets "
    "dog dogs cat cats grandparent cousin cousins niece nephew in-law in-laws friend friends international "
    "domestic overseas executive executives board director directors summer winter autumn wedding weddings "
    "marriage honeymoon birthday military reservist spouse spouses husband wife partner partners").split())
# Everyday words staff use for what policies name otherwise.
EQUIVALENTS: dict[str, frozenset[str]] = {
    features.stem(k): frozenset(features.stem(v) for v in vs.split()) for k, vs in {
        "holiday": "leave vacation annual pto", "vacation": "leave holiday annual pto", "pto": "leave holiday",
        "leave": "pto vacation holiday absence",
        "doctor": "medical physician", "note": "certificate",
        "yr": "year", "wifi": "internet", "laptop": "device computer", "phone": "device mobile",
        "boss": "manager", "roll": "carry rollover", "rollover": "carry roll", "bank": "carry", "cash": "money", "pay": "paid reimburse reimbursed salary", "dies": "death died",
        "die": "death died", "died": "death dies", "kid": "child children", "kids": "child children",
        "dog": "pet", "cat": "pet", "puppy": "pet dog", "kitten": "pet cat",
        "retain": "retention retained kept keep stored", "retention": "retain retained kept keep stored",
        # Pieces of something split up: "how many parts" is answered by "three segments".
        "part": "segment block piece chunk installment instalment increment",
        "piece": "segment block part chunk installment instalment increment",
        "chunk": "segment block part piece installment instalment increment",
        # Whose cover or benefit it is: a policy names them as family or dependants.
        "spouse": "partner husband wife family dependent dependant household",
        "partner": "spouse husband wife family dependent dependant household",
        "husband": "spouse partner wife family dependent dependant household",
        "wife": "spouse partner husband family dependent dependant household",
        "childcare": "child children dependent daycare", "daycare": "childcare child children dependent",
        "babysitter": "childcare child children dependent daycare", "nanny": "childcare child children dependent daycare",
        "babysitting": "childcare child children dependent daycare",
        "wedding": "marriage married", "marriage": "wedding married",
        "trip": "travel traveling travelling", "reimbursement": "reimburse reimbursed expense expenses expensed",
        "overseas": "international abroad foreign", "abroad": "international overseas foreign",
        "international": "overseas abroad foreign", "reservist": "military reserve reserves",
        # Things asked to be paid for, as staff say them and as policies write them.
        "present": "gift", "gift": "present", "glasses": "eyewear spectacles eyeglasses",
        "spectacles": "eyewear glasses eyeglasses", "eyeglasses": "eyewear glasses spectacles",
        "dinner": "meal meals", "dinners": "meal meals", "lunch": "meal meals", "lunches": "meal meals",
        "breakfast": "meal meals",
        # A season is also its months: "over the winter holidays" is answered by "between December 23
        # and January 1".
        "winter": "december january february", "summer": "june july august",
        "autumn": "september october november",
    }.items()}


def _with_equivalents(terms: AbstractSet[str]) -> frozenset[str]:
    """The terms and the everyday words for them, any of which a passage may hold."""
    return frozenset(terms).union(*(EQUIVALENTS.get(t, ()) for t in terms))


# A passage with one of these covers any place or population the question names…
_EVERY_OTHER = r"any other|all other|every other|elsewhere|other cities|other countries"
_CATCH_ALL = re.compile(rf"\b(?:{_EVERY_OTHER}|all (?:staff|employees|offices|countries|locations)|everyone|"
                        r"every employee|outside (?:of )?the (?:us|u\.s\.|united states|uk|united kingdom))\b",
                        re.IGNORECASE)
# …but only these cover a site ("the London office"): a rule for everyone says nothing of how it works.
_ANY_SITE = re.compile(rf"\b(?:{_EVERY_OTHER}|all (?:offices|countries|locations|sites))\b", re.IGNORECASE)
# "I joined in 2022": the asker's situation, not the year a rule is asked for.
_SITUATION_YEAR = re.compile(r"(?:\b(?:I|I've|I'm|we|my)\b[^.?!,;]{0,30}?|\b(?:joined|started|hired|began)\s+)"
                             r"\b(?:in|since|from)\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_YEAR = re.compile(r"(?:1[5-9]|20)\d\d(?:s|'s|’s)?|(?:1[5-9]|20)\d0s")
_SITUATION_QUALIFIER = re.compile(
    r"\bspen(?:d|ds|ding|t)\s+(?:the|this|next|my|our)\s+(winter|summer|autumn)\b|"
    r"\b(?:this|next|last)\s+(winter|summer|autumn)\b|"
    r"\bif\s+(?:i|we|you|my \w+)\s+(?:get|gets|got|am|is|are|become|becomes|fall|falls|feel|feels)\s+(?:really\s+)?"
    r"(sick|ill)\b", re.IGNORECASE)
# A sub-heading kept as a line of the chunk text ("Carry-Over", "Booking Leave").
_SUBHEADING = re.compile(r"[A-Z][\w'’&/ -]{2,50}(?<![.!?:;,])")
_GENERIC_HEADING = frozenset(features.stem(w) for w in (
    "policy policies guide standards overview summary introduction general principles questions faq "
    "related documents contents section other getting help team company staff our your time off day days "
    "week weeks month months year years last first next new old more about work working member members "
    "people process request requests information details notes how what when where who which need needs "
    "before after during start end get make take use using keep find know ask apply check contact choose "
    "go going come see look want like does done long often soon much many far".split()))


# The passages an answer would quote from: the best one and those nearly as good.
QUOTED_MARGIN = 0.10


@dataclass(frozen=True)
class Gap:
    missing: tuple[str, ...]  # the question's words no answering passage holds


def find_gap(question: str, passages: Sequence[Passage], *, min_score: float,
             lexicon: Lexicon = EMPTY) -> Gap | None:
    """The distinguishing terms no single passage at or above the floor holds, or None. `lexicon`:
    the tenant's (graph/tenant_names.py). Its `names`: the tenant's names and the documents that
    use each; a passage covers one of them when its document uses it. Its `words`: every word the
    tenant's documents use; a capitalised word of the question none of them uses, even misspelt, is
    one no passage holds. Its `wide`: the names most documents of a folder use (a company's), which
    count wherever the question writes them, not only in the sentences that ask."""
    top = max((p.score for p in passages), default=0.0)
    fit = [p for p in passages if p.score >= max(min_score, top - QUOTED_MARGIN)]
    if not fit:
        return None
    names, words, wide = lexicon.names, lexicon.words, lexicon.wide
    if detect_language(question) != "en" or any(p.lang != "en" for p in fit):
        wanted = _names_written_in_latin(question, names)
        if all(p.lang == "en" for p in fit):
            wanted |= _qualifiers_read_in_english(question) | features.arabic_places(question)
    else:
        wanted = (_distinguishing(question, passages, names, wide) | _unknown_names(question, words)
                  | _asked_item(question) | _amount_of(question) | _thing_asked_about(question) | _counted(question)
                  | _policy_about(question))
    if not wanted:
        return None
    sited = _sited_places(question)
    best_missing: tuple[str, ...] | None = None
    for p in fit:
        text = _passage_text(p)
        have = features.with_places(features.tokens(text), text) | _document_places(p)
        catch_all, any_site = bool(_CATCH_ALL.search(p.text)), bool(_ANY_SITE.search(p.text))
        # A place is what the question turns on only where the passage distinguishes places: a
        # flight rule that names no country applies to a flight to Dubai; an office list that
        # names four cities says nothing about a fifth. A site is always one ("the London office",
        # "our Dubai warehouse"): a rule for offices in general does not say how that one works.
        other_places = _is_place(have) or bool(_LISTED_PLACES.search(p.text))
        missing = tuple(word for word, terms in wanted.items()
                        if not _covered(terms, have) and p.doc_id not in names.get(word_key(word), ())
                        and not (catch_all and (_is_place(terms) or _is_place_or_name(word))
                                 and (any_site or not terms & sited) and word_key(word) not in names)
                        and (other_places or not _is_place(terms) or terms & sited))
        if not missing:
            return None
        if best_missing is None or len(missing) < len(best_missing):
            best_missing = missing
    return Gap(missing=best_missing or ())


# A passage that introduces a list of places tells places apart, though the list is in another passage
# ("Below are states that have Paid Medical and Family Leave provisions …", "in the following countries").
_LISTED_PLACES = re.compile(r"\b(?:(?:the )?following|below are(?: the)?|listed below|these)\s+(?:\w+\s+)?"
                            r"(?:states|countries|cities|locations|regions|provinces|offices|entities|jurisdictions)\b|"
                            r"\b(?:states|countries|cities|locations|provinces|offices|entities)\s+(?:listed\s+)?below\b",
                            re.IGNORECASE)
_SITE = re.compile(r"\b((?:[\w'-]+ ){0,2}[\w'-]+)\s+(?:office|offices|site|warehouse|store|shop|branch|campus|hq|"
                   r"headquarters|building|factory|plant|depot|lab)\b", re.IGNORECASE)


# The same in Arabic, where the site comes first: "مكتب دنفر" (the Denver office), "فرع دبي".
_AR_SITE = re.compile(r"(?:مكتب|مكاتب|فرع|مستودع|متجر|مقر)\s+((?:ال)?[\u0621-\u064A]+(?:\s+[\u0621-\u064A]+)?)")


def _sited_places(question: str) -> frozenset[str]:
    """The city terms of the places a question names as a site ("the London office", "our New York
    store", "مكتب دنفر"), which a passage must name whether or not it names places."""
    english = (t for m in _SITE.finditer(question) for t in features.places(m.group(1)))
    arabic = (t for m in _AR_SITE.finditer(question) for terms in features.arabic_places(m.group(1)).values()
              for t in terms)
    return frozenset(t for t in (*english, *arabic) if t.startswith("city:"))


def named_passages(question: str, passages: Sequence[Passage], lexicon: Lexicon = EMPTY) -> list[Passage]:
    """The passages whose documents use every tenant name the question asks with ("… at Sourcegraph"):
    what an answer may quote once the gate has passed. Another company's page is not evidence for
    a question about this one, however close its wording. The names are those of the tenant's
    `lexicon` (its `names`, graph/tenant_names.py) the gate looks for: in the sentences that ask, or
    anywhere for a company's (its `wide`); "got a quote from an apple authorized shop. what's the
    repair cutoff?" keeps the laptop-repair page that never says Apple. Without such a name, or when
    no passage's document uses them all, the passages as they are."""
    names, wide = lexicon.names, lexicon.wide
    asking = _asked_words(question)
    asked = {word_key(w) for w in WORD.findall(question) if word_key(w) in names
             and (word_key(w) in wide or word_key(w) in asking)}
    if not asked:
        return list(passages)
    kept = [p for p in passages if all(p.doc_id in names[w] or features.tokens(w) <= features.tokens(_passage_text(p))
                                       for w in asked)]
    return kept or list(passages)


def _document_places(p: Passage) -> frozenset[str]:
    """The places a document's path names ("…/pty-benefits-australia"): a page for one country's staff
    tells places apart though its text never names the country."""
    return frozenset(features.places(re.sub(r"[/_.-]+", " ", p.doc_id), widen=True))


def _passage_text(p: Passage) -> str:
    """What of a passage can hold a question's term: its title, heading path and text."""
    return f"{p.title}\n{p.heading}\n{p.text}"


# "Does the plan pay for hearing aids?", "Can I expense a book?", "Is hotel wifi reimbursed?", "Can I
# get my dry cleaning paid for?": what the asker wants paid. Evidence that never mentions it is a
# neighbouring rule (what the plan does cover), not the answer.
_ITEM = r"(?P<item>(?:[\w'-]+ ){0,3}?[\w'-]+(?: or (?:[\w'-]+ ){0,2}[\w'-]+)?)"
_PAID_ITEM = [
    re.compile(r"\b(?:do|does|did|will|would|can|could|may|might)\b[^?.!]*?\b(?:pay|pays|cover|covers|reimburse|"
               r"reimburses|refund|refunds)(?: (?:out|back))?(?: for)? (?:(?:a|an|the|my|our|any|some|me|us) )*"
               r"(?!(?:out|back)\b)" + _ITEM +  # "will they pay out …": the item comes after the particle
               r"(?= (?:for|at|in|on|when|while|if|during|after|before|from|with|to|as|of)\b|[?.!,]|$)", re.IGNORECASE),
    re.compile(r"\b(?:can|could|may) (?:i|we) (?:expense|claim|claim for|get reimbursed for) (?:(?:a|an|the|my|our|any|"
               r"some) )*" + _ITEM + r"(?= (?:for|at|in|on|when|while|if|during|after|before|from|with|to|as|that|"
               r"which|of)\b|[?.!,]|$)", re.IGNORECASE),
    re.compile(r"\b(?:is|are|will|would|can|could) (?:(?:i|we) get )?(?:(?:a|an|the|my|our|any|some) )*" + _ITEM +
               r" (?:be )?(?:covered|reimbursed|reimbursable|refunded|expensable|paid for)\b", re.IGNORECASE),
]
_ASKER_PAYS = re.compile(r"\b(?:i|we)\s+(?:have|need|got)\s+to\s+pay\b|\b(?:i|we)\s+(?:must|should)\s+pay\b|"
                         r"\b(?:i|we)\s+(?:get|am|are)\s+charged\b", re.IGNORECASE)
_PRONOUNS = frozenset("one ones it them this that these those mine ours anything something everything".split())
_PREPOSITIONS = frozenset("for at in on when while if during after before from with to as of by".split())
_NOT_AN_ITEM = frozenset(features.stem(w) for w in (
    "it this that these those them cost costs expense expenses fee fees thing things stuff bill bills "
    "company business work team member members staff employee employees people you i we").split())
# "Pay" as a noun ("the pay gap", "pay bands"): what follows is no item.
_PAY_NOUNS = frozenset("gap gaps rise rises raise raises grade grades period periods slip slips day cut cuts scale "
                       "scales band bands range ranges review reviews structure transparency equity".split())
# What one pays for access to something else: "a membership at a co-working space" asks about the
# space, "a gym membership" about the gym.
_CONTAINERS = frozenset(features.stem(w) for w in "membership memberships subscription subscriptions".split())
# Where the item stops: a rate ("my hotel per night"), or the asker's own clause ("glasses I need for
# screen work").
_ITEM_END = re.compile(r"\s+(?:per|each|every|a|an)\s+(?:day|night|week|month|year|trip)\b.*|"
                       r"\s+(?:i|we|you|they)\b.*", re.IGNORECASE)
# A time, not a thing: "how much can I expense each month for a coworking space?".
_TIME_ITEM = re.compile(r"(?:each|every|per|a|an|this|next|last)\s+(?:day|night|week|month|quarter|year|trip)",
                        re.IGNORECASE)
# What the item is for or at ("… at a co-working space", "… for a coworking space").
_COMPLEMENT = re.compile(r"\s+(?:at|for|to|of|in)\s+(?:(?:a|an|the|my|our|some) )*" + _ITEM +
                         r"(?= (?:for|at|in|on|when|while|if|during|after|before|from|with|to|as|that|which|of)\b|"
                         r"[?.!,]|$)", re.IGNORECASE)


# A share of the thing ("part of my electricity bill"): the thing follows "of".
_SHARE_OF = frozenset("part some half portion share most".split())
_SLASH = re.compile(r"(?<=[^\W\d])\s*/\s*(?=[^\W\d])")


def _asked_item(question: str) -> dict[str, frozenset[str]]:
    """The thing a "will you pay for …?" question asks to have paid ("hearing aids", "a book"), by
    its head word ("professional *movers*"; "wifi or internet *access*", "a *desk* and *chair*": either),
    any of which (or a common equivalent: a present is a gift) a passage must hold. A membership or
    subscription is read by what it is for ("a membership at a co-working *space*", "a *gym*
    membership"); a rate or the asker's own clause is not part of the thing ("my *hotel* per night",
    "*glasses* I need for screen work"), and a time is not a thing ("each month for a coworking
    *space*"). Not when the asker would pay ("do I have to pay for the new one?"), when the thing is
    only a pronoun ("the new one"), nor when pay is a noun ("how do pay bands work?")."""
    if _ASKER_PAYS.search(question):
        return {}
    question = _SLASH.sub(" or ", question)  # "orthodontics / braces": either
    for pattern in _PAID_ITEM:
        m = pattern.search(question)
        if m is None:
            continue
        item, rest = _ITEM_END.sub("", m["item"]), question[m.end("item"):]
        if not item or item.split()[0].lower() in _PREPOSITIONS or features.places(item):
            continue  # "… health cover in Australia": a noun, not the verb; places are checked apart
        if item.split()[0].lower() in _PAY_NOUNS and question[:m.start("item")].lower().endswith(("pay ", "pays ")):
            continue  # "does a gender pay gap …", "how do pay bands work": pay as a noun
        if _TIME_ITEM.fullmatch(item) or item.lower() in _SHARE_OF:
            # "… expense each month for a coworking space": the thing is what the money is for;
            # "… expense part of my heating bill": the thing is the heating.
            found = _COMPLEMENT.match(rest)
            if found is None:
                return {}
            item, rest = _ITEM_END.sub("", found["item"]), rest[found.end("item"):]
        heads: set[str] = set()
        for alternative in re.split(r" (?:or|and) ", item):
            words = alternative.split()
            if not words:
                continue
            if words[-1].lower() in _PRONOUNS:
                return {}  # "the new one": what it is, the question does not say
            while words and features.tokens(words[-1]) <= _NOT_AN_ITEM:
                words.pop()  # "bank fees": the bank
            if len(words) > 1 and features.tokens(words[-1]) <= _CONTAINERS:
                words.pop()  # "a gym membership": the gym
            elif words and features.tokens(words[-1]) <= _CONTAINERS:
                found = _COMPLEMENT.match(rest)  # "a membership at a co-working space": the space
                if found is not None and _ITEM_END.sub("", found["item"]).split():
                    item, words = f"{item}{rest[:found.end('item')]}", _ITEM_END.sub("", found["item"]).split()
            if words:
                heads |= features.tokens(words[-1])
        if heads:
            return {item: _with_equivalents(heads)}
    return {}


# "What's the hotel cap …?", "how much is the pet insurance discount?": the amount of what.
_AMOUNT_OF = re.compile(r"\b(?:what(?:'s|’s| is| are|s)|how (?:much|high|big) (?:is|are))\s+(?:the|a|an|our|my|your)\s+"
                        r"(?P<what>(?:[\w'-]+ ){1,3}?)(?:limit|rate|allowance|amount|max|maximum|minimum|cap|budget|"
                        r"discount|fee|cost|price)s?\b", re.IGNORECASE)
# Words before the amount that say which amount, not of what ("the yearly max", "the total budget").
_AMOUNT_WORDS = frozenset(features.stem(w) for w in (
    "yearly annual monthly weekly daily nightly total overall maximum max minimum current standard usual normal "
    "new typical average exact full base default general rough approximate ballpark estimated").split())


def _amount_of(question: str) -> dict[str, frozenset[str]]:
    """The thing a question asks the amount of, every word of it ("the nightly *hotel* limit", "the
    *pet insurance* discount", "the annual *dental claim* limit", "the annual maximum benefit on the
    *dental* plan"): evidence that never mentions one of them states another amount."""
    m = _AMOUNT_OF.search(question)
    found = _every_word(m["what"].split(), besides=_AMOUNT_WORDS | _NOT_AN_ITEM) if m is not None else {}
    if found:
        return found
    m = _AMOUNT_ON.search(question)
    if m is not None:
        return _every_word([w for w in m["what"].split() if not features.tokens(w) <= _PLAN_WORDS],
                           besides=_AMOUNT_WORDS | _NOT_AN_ITEM)
    return {}


# "What's the annual maximum benefit on the dental plan?": the amount comes first, what it is of after.
_AMOUNT_ON = re.compile(r"\bwhat(?:'s|’s| is|s)? (?:the )?(?:\w+ )?(?:max(?:imum)?|limit|cap)(?: \w+)? (?:on|for) "
                        r"(?:the |my |our |a |an )?(?P<what>(?:[\w'-]+ ){0,3}?[\w'-]+?)(?= plan\b| policy\b|\s*[?.!,]|$)",
                        re.IGNORECASE)
_PLAN_WORDS = frozenset(features.stem(w) for w in "plan plans policy policies program programme scheme".split())


def _every_word(words: Sequence[str], *, besides: frozenset[str]) -> dict[str, frozenset[str]]:
    """Each word that names the thing (not a place, a pronoun, nor only terms of `besides`), with
    the everyday words for it."""
    out: dict[str, frozenset[str]] = {}
    for word in words:
        terms = features.tokens(word)
        if terms and not terms <= besides and not features.places(word) and word_key(word) not in _PRONOUNS:
            out[word] = _with_equivalents(terms)
    return out


# "What's the policy on smoking breaks?", "any rules about pets in the office?": what the policy is about.
# "What's the dress code …?", "what's the travel policy": the words before the code or policy.
_THE_X_POLICY = re.compile(r"\bwhat(?:'s|’s| is|s)? (?:the|our|your) (?P<what>(?:[\w'-]+ ){1,2}?)"
                           r"(?:code|policy|policies|rules|guidelines)\b", re.IGNORECASE)
_POLICY_ON = re.compile(r"\b(?:policy|policies|rules|guidelines|guidance) (?:on|about|around|regarding) "
                        r"(?:(?:a|an|the|my|our|any|some|using|having|taking|bringing|getting) )*"
                        r"(?P<what>(?:[\w'-]+ ){0,3}?[\w'-]+)(?= (?:for|at|in|on|when|while|if|during|after|before|"
                        r"from|with|to|as|of|by|is|are|here|there)\b|\s*[?.!,]|$)", re.IGNORECASE)


def _policy_about(question: str) -> dict[str, frozenset[str]]:
    """What a question asks the policy on, every word of it ("the policy on *smoking or vaping*
    *breaks*", "rules about *pets*"; words joined by "or" are one, either will do): evidence that
    never mentions one of them is another policy."""
    m = _POLICY_ON.search(question) or _THE_X_POLICY.search(question)
    if m is None:
        return {}
    out: dict[str, frozenset[str]] = {}
    for group in re.split(r"\s+(?!or\b)(?<!\bor\s)", m["what"]):
        words = [w for w in group.split() if w.lower() != "or"]
        terms = [features.tokens(w) for w in words if not features.places(w) and word_key(w) not in _PRONOUNS]
        if terms and all(t and not t <= _NOT_AN_ITEM for t in terms):
            out[" or ".join(words)] = _with_equivalents(frozenset().union(*terms))
    return out


# "How many wrong password tries before …?", "how many shares …": what is counted. Units of time,
# measure and money, people and times are how anything is counted ("how many days …").
_HOW_MANY = re.compile(r"\bhow many\s+(?P<what>(?:[\w'-]+\s+){0,2}?[\w'-]+?)(?=\s+(?:do|does|did|are|is|were|was|"
                       r"can|could|will|would|should|must|may|have|has|had|before|after|of|in|at|on|per|for|to|"
                       r"a|an|the|i|we|you|they|it|my|our)\b|\s*[?.,!]|$)", re.IGNORECASE)
_COUNT_UNITS = frozenset(features.stem(w) for w in (
    "day days week weeks month months year years hour hours minute minutes night nights time times people person "
    "employee employees staff member members teammate teammates team teams one ones business working calendar "
    "consecutive paid unpaid total meter meters metre metres kilometer kilometers kilometre kilometres km mile miles "
    "cubic square feet foot inch inches kg kilogram kilograms gram grams ton tons tonne tonnes liter liters litre "
    "litres gallon gallons dollar dollars euro euros pound pounds percent degree degrees").split())


# What a unit counts: "… weeks *of notice*", "… days *of paid marriage leave*".
_UNIT_OF = re.compile(r"\s+of\s+(?:(?:a|an|the|my|our|paid|unpaid) )*(?P<what>(?:[\w'-]+\s+){0,2}?[\w'-]+?)"
                      r"(?=\s+(?:do|does|did|are|is|were|was|can|could|will|would|should|must|may|have|has|had|"
                      r"before|after|in|at|on|per|for|to|when|if|a|an|the|i|we|you|they|it|my|our)\b|\s*[?.,!]|$)",
                      re.IGNORECASE)


def _counted(question: str) -> dict[str, frozenset[str]]:
    """The thing a "how many …?" question counts, by its head word ("how many wrong password *tries*",
    "how many *shares*"): evidence that never mentions it counts something else. Not a unit of time,
    people or times, which is how policies count most things."""
    m = _HOW_MANY.search(question)
    if m is None:
        return {}
    words = m["what"].split()
    while len(words) > 1 and features.tokens(words[-1]) <= _AMOUNT_WORDS:
        words.pop()  # "how many pieces max": pieces
    if any(features.tokens(w) & _COUNT_UNITS for w in words):
        # "how many weeks of notice …": the unit counts the notice, which the evidence must hold
        found = _UNIT_OF.match(question[m.end("what"):])
        if found is None:
            return {}  # "how many people died …", "how many days off …"
        return _every_word(found["what"].split(), besides=_AMOUNT_WORDS | _NOT_AN_ITEM | _COUNT_UNITS)
    head = words[-1]
    terms = features.tokens(head)
    if not terms or terms <= _NOT_AN_ITEM or features.places(head) or word_key(head) in _PRONOUNS:
        return {}
    return {head: _with_equivalents(terms)}


# "Is there a shuttle bus …?", "do we have a Secret Santa gift exchange?": whether a thing exists.
_EXISTS = re.compile(r"\b(?:is there|are there|do (?:we|you) (?:have|offer|run|do|get|organi[sz]e)|are we (?:doing|having|"
                     r"running)|does (?:the company|\w+) (?:have|offer|run|provide|organi[sz]e))\s+"
                     r"(?:(?:a|an|any|the|some|our) )*" + _ITEM +
                     r"(?= (?:for|at|in|on|when|while|if|during|after|before|from|with|to|as|of|over|this|next|that|"
                     r"which|like|or|and|i|we|you|because|since|so|reimbursed|covered|paid|refunded)\b|[?.!,]|$)",
                     re.IGNORECASE)
# What policies state in other words than the question's ("a deadline": "within 90 days").
_GENERIC_THING = frozenset(features.stem(w) for w in (
    "deadline limit limits cap minimum maximum max policy policies rule rules process procedure way option options "
    "requirement requirements budget stipend allowance fee cost charge penalty approval discount benefit benefits "
    "program programme plan scheme difference reason time period amount number chance problem issue need point "
    "stage threshold").split())


# Section words that policies state as a figure rather than by name ("Gift limits" over "under $50 USD").
_STATED_AS_FIGURES = frozenset(features.stem(w) for w in "deadline limit limits cap minimum maximum max".split())
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)?")
# Words that stem to a qualifier without being one ("boarding" for a dog is no board of directors).
_NOT_QUALIFIERS = frozenset({"boarding", "onboarding", "aboard"})
# A move between places: the asker's plan; the relocation rule asked about is the same for any two places.
_RELOCATING = re.compile(r"\b(?:relocat\w*|moving|move)\s+(?:\w+\s+){0,2}?(?:from\s+[\w' -]{2,30}?\s+)?to\s+"
                         r"[\w' -]{2,30}?(?=\s+(?:and|but|so|while|with|for|next|this|in)\b|[?.!,;]|$)", re.IGNORECASE)
_ABOUT_MOVING = re.compile(r"\b(?:relocat\w*|mov(?:e|ing)|eligib\w*|tenure)\b", re.IGNORECASE)
# "Part-time" and "full-time" say whose hours a rule is for, except of a course of study.
_WHOSE_HOURS = frozenset({"part-time", "parttime", "full-time", "fulltime"})
_OF_STUDY = re.compile(r"\s+(?:\w+\s+){0,2}?(?:course|courses|degree|degrees|masters|master's|mba|phd|program|"
                       r"programme|study|studies|class|classes)\b", re.IGNORECASE)
# A month in a question is when the asker plans something ("3 wks off over dec"), not a section asked about.
_MONTHS = frozenset(features.stem(w) for w in (
    "jan january feb february mar march apr april jun june jul july aug august sep sept september oct october "
    "nov november dec december").split())


def _thing_asked_about(question: str) -> dict[str, frozenset[str]]:
    """The thing whose existence a question asks about, by its head word ("a shuttle *bus*", "a Secret
    Santa gift *exchange*"): evidence that never mentions it answers another question. Not a thing
    policies state in other words ("is there a deadline …?": "within 90 days")."""
    m = _EXISTS.search(question)
    if m is None:
        return {}
    words = _ITEM_END.sub("", m["item"]).split()
    while words and features.tokens(words[-1]) <= _NOT_AN_ITEM | _GENERIC_THING:
        words.pop()  # "a pet insurance discount": the insurance
    if not words or word_key(words[-1]) in _PRONOUNS or features.places(words[-1]):
        return {}
    head = features.tokens(words[-1])
    return {words[-1]: _with_equivalents(head)} if head else {}


def _unknown_names(question: str, words: AbstractSet[str]) -> dict[str, frozenset[str]]:
    """Capitalised words of the question (not a place) that no document of the tenant uses, nor a
    word a typing error away ("the Czerniakow river", "a Diwali gift"), nor one that begins a word
    the documents write ("iPad" in "iPadOS"): the collection says nothing about them. Without the
    tenant's words (none given), nothing."""
    if not words:
        return {}
    out: dict[str, frozenset[str]] = {}
    asking = _asking(question)
    for word in [*features.capitalised(asking), *(m.group(1) or m.group(2) for m in _WHOSE_STAFF.finditer(asking))]:
        parts = [word_key(p) for p in re.findall(r"\w+", word)]
        if features.places(word, widen=True) or not features.tokens(word) \
                or any(p in words or near_miss(p, words) or _begins_a_word(p, words) for p in parts):
            continue
        out[word] = frozenset(features.tokens(word))
    return out


# Whose staff the question asks about, however it is spelt ("shopify employees", "people at shopify"): an
# employer the tenant's documents never name is one they say nothing about.
_WHOSE_STAFF = re.compile(r"\b([a-z][\w&-]+)\s+(?:employees|staff|staffers|team members|teammates|workers|"
                          r"engineers)\b|\b(?:employees|staff|people|work|working|workers)\s+at\s+([a-z][\w&-]+)\b")


def _said_once(word: str, question: str) -> bool:
    """Whether the question writes the word only once (in any case): a word of the asker's situation
    written again where they ask is asked about too."""
    return len(re.findall(rf"\b{re.escape(word)}\b", question, re.IGNORECASE)) == 1


def _asked_words(question: str) -> frozenset[str]:
    return frozenset(word_key(w) for w in WORD.findall(_asking(question)))


@functools.lru_cache(maxsize=1024)
def _asking(question: str) -> str:
    """The sentences of a message that ask ("how much G&D money can I get reimbursed per year?"), without
    those that only tell the asker's plans ("want to do an AWS cert + a course"); the whole message
    when none ends with a question mark. (The answerer's `features.asking_part` also keeps a part that
    names a place or a company: there it says what to compare sentences with; here a tool or a vendor named
    in passing must not count as asked.)"""
    parts = [p for p in re.split(r"(?<=[.?!؟])\s+", question.strip()) if p]
    asking = [p for p in parts if p.rstrip().endswith(("?", "؟"))]
    return " ".join(asking) if asking and len(asking) < len(parts) else question


PREFIX_MIN = 4  # letters; a shorter word begins too many others
PREFIX_EXTRA = 3  # letters the longer word may add ("ipad" → "ipados")


def _begins_a_word(part: str, words: AbstractSet[str]) -> bool:
    if len(part) < PREFIX_MIN:
        return False
    ordered = _sorted_words(words if isinstance(words, frozenset) else frozenset(words))
    i = bisect.bisect_right(ordered, part)
    while i < len(ordered) and ordered[i].startswith(part):
        if len(ordered[i]) - len(part) <= PREFIX_EXTRA:
            return True
        i += 1
    return False


@functools.lru_cache(maxsize=8)
def _sorted_words(words: frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted(words))


def _names_written_in_latin(question: str, names: Names) -> dict[str, frozenset[str]]:
    """Across languages the one thing both sides spell alike: a tenant's name ("… في 37signals؟",
    "… in GitLab")."""
    return {word: frozenset(features.tokens(word)) for word in _LATIN_WORD.findall(question)
            if word_key(word) in names and features.tokens(word)}


def _qualifiers_read_in_english(question: str) -> dict[str, frozenset[str]]:
    """The qualifiers an Arabic question names, as the glossary reads them in English ("لعملاء
    الجملة" is wholesale customers, "الإجازة المرضية" sick leave, "نفوق كلبي" a dog's death: a pet):
    English evidence must hold them (or a common equivalent), as it must for the question asked in
    English."""
    out: dict[str, frozenset[str]] = {}
    for group in english_groups(question):
        words = [w for w in group if features.stem(w) in QUALIFIERS]
        if words:
            terms = {features.stem(w) for w in words}
            out[" / ".join(words)] = _with_equivalents(terms)
    return out


def _distinguishing(question: str, passages: Sequence[Passage], names: Names,
                    wide: AbstractSet[str] = frozenset()) -> dict[str, frozenset[str]]:
    """Question word → the terms any of which covers it, for the words that make the question
    different (a city is covered by its own name or its country's)."""
    sections = set()
    for p in passages:
        heading = p.heading[len(p.title) + 3:] if p.heading.startswith(p.title + " > ") else p.heading
        # An FAQ's question heading ("What if I lost my receipt?") is what someone asked, not a topic.
        heading = " > ".join(part for part in heading.split(" > ") if not part.rstrip().endswith(("?", "؟")))
        lines = [heading] if heading and heading != p.title else []
        lines += [line for line in body_of(p.text).splitlines() if _SUBHEADING.fullmatch(line.strip())]
        for line in lines:
            sections |= features.tokens(line.replace(">", " ").replace("-", " "))
    # Not a number or an ordinal ("the 10th"), nor what policies state as a figure ("any limit?": "under $50").
    sections = {t for t in sections - _GENERIC_HEADING - _STATED_AS_FIGURES - _MONTHS if not _ORDINAL.fullmatch(t)}
    # A capitalised word of the question is a name that matters when the passages know it (GitLab in
    # a tenant of several companies); one none of them uses ("MacBook", "BitTorrent") is usually an
    # instance of what a rule covers in general (a laptop, file sharing).
    known = _collection_names(passages)
    vocabulary = set().union(*(features.tokens(p.text) for p in passages))
    named = {w.lower() for w in features.capitalised(_asking(question)) if features.tokens(w) & vocabulary} | known
    named -= _GENERIC_HEADING  # "how long" is no name, though the passages write "Long-Term Disability"
    # …and so is any word the tenant's documents write as a name ("at 37signals" when the passages
    # retrieved are another company's).
    named |= {word_key(w) for w in WORD.findall(question) if word_key(w) in names}
    situational = {m.group(1) for m in _SITUATION_YEAR.finditer(question)}
    # The asker's circumstances, not what the rule is for: "spending the winter working from Portugal,
    # how long can I be away …?", "if I get sick on a business trip, how much does the travel insurance
    # cover?" (unless the word is asked about as well: "if I get sick, do sick days roll over?").
    circumstances = [next(g for g in m.groups() if g).lower() for m in _SITUATION_QUALIFIER.finditer(question)]
    situational |= {w for w in circumstances if _said_once(w, question)}
    # A name in a sentence that only tells the asker's plans ("… per year? want to do an AWS cert") is
    # what they would spend it on, not whose rule they ask about; a name most documents of a folder use
    # (a company's: "I work at GitLab. …") counts anywhere.
    asked = _asked_words(question) | {word_key(w) for w in WORD.findall(question) if word_key(w) in wide}
    # …when the relocation itself is asked about ("… How far ahead do I start the relocation process?"), not
    # what the place offers ("I'm moving to Portugal. What health insurance is there?")
    moving = {w for m in _RELOCATING.finditer(question) for w in re.findall(r"[\w'-]+", m.group(0))
              if _said_once(w, question)} if _ABOUT_MOVING.search(_asking(question)) else set()
    out: dict[str, frozenset[str]] = _multiword_places(question)
    for word in re.findall(r"[\w'-]+", question):
        low = word_key(word)
        qualifier = features.stem(low) in QUALIFIERS and low not in _NOT_QUALIFIERS  # "part-time", "in-laws": one word
        if qualifier and low in _WHOSE_HOURS and _OF_STUDY.match(question[question.lower().find(low) + len(low):]):
            continue  # "a part-time masters course": the course's hours, not the asker's
        for part in low.replace("-", " ").split() if "-" in low and not qualifier else [low]:
            terms = features.tokens(part)
            if not terms:
                continue
            # One term stands for the word: a hyphenated one ("part-time": part, time, parttime) by
            # its joined form, so the same question reads the same in every process.
            joined = features.stem(re.sub(r"['’-]", "", part))
            term = joined if joined in terms else min(terms)
            place = features.places(part, widen=True)
            if place and word in moving:
                continue  # "relocating from Germany to Portugal": where the asker moves, not whose rule
            if place:
                out[word] = frozenset(place)
            elif _YEAR.fullmatch(part) and part not in situational:
                out[word] = frozenset({term})  # "1970s" and "1970" are one term
            elif low in situational or term in _MONTHS:
                continue  # the asker's circumstances; a month is when, not what, they ask about
            elif (low in named and low in asked) or qualifier or (term in QUALIFIERS and low not in _NOT_QUALIFIERS) \
                    or term in sections \
                    or EQUIVALENTS.get(term, set()) & sections:
                out[word] = _with_equivalents({term})
    return out


def _multiword_places(question: str) -> dict[str, frozenset[str]]:
    """Places named in two or three words ("new york", "Abu Dhabi", "the united states"), which the
    word-by-word reading cannot see, however they are capitalised."""
    words = re.findall(r"[\w'-]+", question)
    out: dict[str, frozenset[str]] = {}
    for n in (2, 3):
        for i in range(len(words) - n + 1):
            phrase = " ".join(words[i:i + n])
            if any(found in phrase for found in out) or any(features.places(w) for w in words[i:i + n]):
                continue
            place = features.places(phrase, widen=True)
            if place:
                out[phrase] = frozenset(place)
    return out


_LATIN_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")


def _collection_names(passages: Sequence[Passage]) -> set[str]:
    """Words the passages write as names: a brand spelling (GitLab, 37signals), or a word written
    capitalised at every one of its (at least two) occurrences inside sentences (Sourcegraph)."""
    brands: set[str] = set()
    seen: dict[str, list[int]] = {}  # word → [occurrences inside sentences, of which capitalised]
    for p in passages:
        text_brands, counts = _names_in(p.text)
        brands |= text_brands
        for word, (n, caps) in counts.items():
            total = seen.setdefault(word, [0, 0])
            total[0] += n
            total[1] += caps
    always = {w for w, (n, caps) in seen.items() if n >= 2 and caps == n}
    return {w for w in brands | always if features.tokens(w)}


@functools.lru_cache(maxsize=4096)
def _names_in(text: str) -> tuple[frozenset[str], dict[str, tuple[int, int]]]:
    """One passage's brand spellings, and per word its occurrences inside sentences and how many
    of them are capitalised (cached: the same passages come back turn after turn)."""
    counts: dict[str, list[int]] = {}
    brands: set[str] = set()
    for sentence in re.split(r"(?<=[.!?:;])\s+|\n", body_of(text)):
        for i, word in enumerate(WORD.findall(sentence)):
            if BRAND.fullmatch(word):
                brands.add(word.lower())
            if i and word[:1].isalpha() and word.isascii():
                count = counts.setdefault(word.lower(), [0, 0])
                count[0] += 1
                count[1] += word[:1].isupper()
    return frozenset(brands), {w: (n, caps) for w, (n, caps) in counts.items()}


def _covered(terms: frozenset[str], have: set[str]) -> bool:
    """Whether the passage holds one of the terms, or (for a long word that is no qualifier) a word of
    the same root: "contributions" is covered by "contribute", "probation" by "probationary"."""
    if terms & have:
        return True
    long = [t for t in terms if len(t) >= ROOT_MIN and t.isalpha() and t not in QUALIFIERS]
    return any(_same_root(t, h) for t in long for h in have if len(h) >= ROOT_MIN and h[:ROOT_MIN] == t[:ROOT_MIN])


ROOT_MIN = 7  # letters two words must share to be read as one root, and at most one more letter of the shorter


def _same_root(a: str, b: str) -> bool:
    shared = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return shared >= ROOT_MIN and shared >= min(len(a), len(b)) - 1


def _is_place(terms: AbstractSet[str]) -> bool:
    return any(t.startswith(("city:", "country:")) for t in terms)


def _is_place_or_name(word: str) -> bool:
    return word[:1].isupper()
