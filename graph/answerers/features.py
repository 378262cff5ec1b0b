"""What a candidate sentence offers a question, beyond embedding similarity.

Cosine similarity alone prefers the sentence that *restates* the question ("If you fall ill during
annual leave and have a medical certificate …" for "from which day do I need a medical
certificate?"). These cheap, deterministic features push the choice towards the sentence that
*answers* it (what kind of sentence answers a question, and which tier of a table fits the amount or
span it states, is the answer judge's reading, models/judge, not a pattern of this module's):

- **term weight**: question terms a sentence contains, each weighted by how rare it is among the
  candidate sentences (a word every sentence shares tells them apart least; "Finance" in "MFA for
  people in Finance" tells them apart most). Place names count through their aliases ("Riyadh" is
  "Saudi Arabia", "UK" is "United Kingdom"), and the passage heading counts for half ("Sick Leave").
  The words the keyword index's analyser leaves out (Qdrant's English and Arabic stop words) are no
  terms.
- **history**: a sentence that describes a superseded or not-yet-effective value ("which set a
  rate of USD 0.58 from 1 January 2025", "From 1 July 2027 …") is never the current answer.
"""

from __future__ import annotations

import calendar
import functools
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from datetime import date

from graph.facts import ARABIC_DIGITS
from models.places import gazetteer
from retrieval.embed import is_stopword

_TOKEN = re.compile(r"\w+")
_COMPOUND = re.compile(r"\b[^\W\d_]+(?:-[^\W\d_]+)+\b")
_ARABIC_DIACRITICS = re.compile(r"[\u064B-\u0652\u0670\u0640]")
_MONTHS = [m.lower() for m in calendar.month_name[1:]]  # the standard library's English names
# A sentence that tells the history of a value rather than the value in force.
_HISTORY = re.compile(r"\b(?:supersedes?|superseded|replaces|replaced the|previous(?:ly)?|formerly|old rate|"
                      r"no longer|used to be|which set|was set|had been|prior rate|former)\b|"
                      r"يلغي|السابق|سابقًا|سابقا", re.IGNORECASE)
_FROM_DATE = re.compile(r"\b(?:from|starting|effective|as of|with effect from|beginning)\s+(?:on\s+)?"
                        r"(\d{1,2})\s+(" + "|".join(_MONTHS) + r")\s+(\d{4})", re.IGNORECASE)

HISTORY_PENALTY = 0.25


def tokens(text: str) -> set[str]:
    """Content words, lower-cased, without accents ("Beyoncé" = "beyonce") or Arabic diacritics,
    the Arabic article dropped and English lightly stemmed. A hyphenated word also counts written
    as one ("co-working" is "coworking" too, "e-bike" "ebike")."""
    return set(_tokens(text))


# A turn reads the same passages in the tools node's gate, the conflict check and the answerer.
@functools.lru_cache(maxsize=8192)
def _tokens(text: str) -> frozenset[str]:
    out = set()
    folded = _fold(text)
    for token in [*_TOKEN.findall(folded), *(m.replace("-", "") for m in _COMPOUND.findall(folded))]:
        if is_stopword(token):
            continue
        if token.startswith("ال") and len(token) > 4:
            token = token[2:]
        token = stem(token)
        if len(token) > 2 or token.isdigit():
            out.add(token)
    return frozenset(out)


def question_terms(question: str) -> set[str]:
    """The terms a question is compared with candidate sentences on (see `tokens`): its own words and
    its Arabic-Indic digits as the pages write them (no word list translates an Arabic question's words:
    the multilingual reading compares it)."""
    return set(_question_terms(question))


@functools.lru_cache(maxsize=4096)
def _question_terms(question: str) -> frozenset[str]:
    if question.isascii():
        return _tokens(question)
    # Arabic-Indic digits as the English pages write them ("٢٥ يومًا" asks about "25 days").
    return _tokens(question.translate(ARABIC_DIGITS)) | _tokens(question)


def _fold(text: str) -> str:
    text = _ARABIC_DIACRITICS.sub("", text.lower())
    if text.isascii():
        return text
    # Latin letters only: decomposing Arabic would split a hamza from its alef.
    return _LATIN_NON_ASCII.sub(_without_accents, text)


_LATIN_NON_ASCII = re.compile(r"[\u0080-\u036f]+")


def _without_accents(m: re.Match[str]) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", m.group()) if not unicodedata.combining(c))


# "Yearly" is what "per year" says: a rate read by its unit.
_PER_UNIT = {"hourly": "hour", "daily": "day", "nightly": "night", "weekly": "week", "monthly": "month",
             "quarterly": "quarter", "yearly": "year"}


@functools.lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """Just enough English stemming for overlap: units/unit, days/day, taxes/tax, executives/executive,
    booking/book."""
    if not token.isascii():
        return token
    if token in _PER_UNIT:
        return _PER_UNIT[token]
    for suffix in ("'s", "ies", "es", "s", "ing", "ed"):
        if not token.endswith(suffix) or len(token) - len(suffix) < 3:
            continue
        if suffix == "es" and not token[:-2].endswith(("s", "x", "z", "ch", "sh")):
            continue  # "executives" is "executive" + s, "taxes" is "tax" + es
        if suffix == "s" and token.endswith("ss"):
            return token  # "business", "access"
        return token[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return token


def places(text: str, *, widen: bool = False) -> set[str]:
    """The places a text names (models/places, a gazetteer built from public geographic data): a
    country by any of its names ("UK", "GBR", "Canadian"), a region or city by its own ("city:texas",
    "city:riyadh"). With `widen`, a region or city also stands for its country: a question about
    Riyadh is answered by the sentence about Saudi Arabia, but a sentence about Boston says nothing
    about Denver."""
    return set(_places(text, widen)[0])


@functools.lru_cache(maxsize=8192)
def _places(text: str, widen: bool) -> tuple[frozenset[str], frozenset[str]]:
    """(place labels, the overlap tokens of the names found)."""
    if not text.isascii():  # "والرياض", "بالرياض": and, in + the article + the name
        text = _ARABIC_PROCLITIC.sub(r"\1 ", text)
    as_written = " " + _NOT_NAME.sub(" ", text) + " "
    low = as_written.lower()
    # Names found only with their capital ("UAE", "Turkey") are not read in a text in capitals.
    cased_ok = any(c.islower() for c in text)
    # Only the names whose first word the text has can stand in it between spaces.
    words = set(low.split(" "))
    words |= {w[:-1] for w in words if w.endswith(".")}
    out: set[str] = set()
    found: set[str] = set()
    # Longest names first, each taken out of the text once found: "New Mexico" is not Mexico too.
    for place in gazetteer().candidates(words):
        name, haystack = (place.name.lower(), low) if place.any_case else (place.name, as_written)
        if not (place.any_case or cased_ok) or (f" {name} " not in haystack and f" {name}. " not in haystack):
            continue
        cut = " " * (len(name) + 2)
        low = low.replace(f" {place.name.lower()} ", cut).replace(f" {place.name.lower()}. ", cut)
        as_written = as_written.replace(f" {place.name} ", cut).replace(f" {place.name}. ", cut)
        found |= _tokens(place.name)
        if place.kind == "country":
            out.add(f"country:{place.place.lower()}")
            continue
        out.add(f"city:{place.place.lower()}")
        if widen:
            out.add(f"country:{place.country.lower()}")
    return frozenset(out), frozenset(found)


_NOT_NAME = re.compile(r"[^\w. ]")
_ARABIC_PROCLITIC = re.compile(r"(?<!\w)([وفبك])(?=ال)")


_INNER_CAPITAL = re.compile(r"(?<=[\w,] )[A-Z][\w-]+")


def capitalised(question: str) -> list[str]:
    """Capitalised words inside the question, not its first word (places, teams, products)."""
    return _INNER_CAPITAL.findall(question)


def names(question: str) -> set[str]:
    """The question's capitalised words as overlap tokens."""
    return {t for w in capitalised(question) for t in tokens(w)}


def is_history(sentence: str, *, today: date | None = None) -> bool:
    """A superseded value, or one that takes effect only after `today`."""
    if _HISTORY.search(sentence):
        return True
    today = today or date.today()
    for day, month, year in _FROM_DATE.findall(sentence):
        try:
            starts = date(int(year), _MONTHS.index(month.lower()) + 1, int(day))
        except ValueError:
            continue
        if starts > today:
            return True
    return False


def term_weights(question_terms: set[str], texts: Sequence[set[str]]) -> dict[str, float]:
    """Inverse sentence frequency of each question term among the candidates (terms no candidate
    has are left out: they cannot tell candidates apart)."""
    n = len(texts)
    out: dict[str, float] = {}
    for term in question_terms:
        df = sum(term in t for t in texts)
        if df:
            out[term] = math.log((n + 1) / (df + 0.5))
    return out


def coverage(weights: dict[str, float], sentence_terms: set[str], heading_terms: set[str]) -> float:
    """Weighted share of the question's terms the sentence has (its heading counts for half)."""
    total = sum(weights.values())
    if not total:
        return 0.0
    got = sum(w if t in sentence_terms else w / 2 if t in heading_terms else 0.0 for t, w in weights.items())
    return got / total


def with_places(terms: Iterable[str], text: str, *, widen: bool = False) -> set[str]:
    """Terms with each place name replaced by the place it stands for (so "UK" and "United
    Kingdom" are one term, counted once); see `places` for `widen`."""
    found, words = _places(text, widen)
    return ({t for t in terms if t not in words} | found) if found else set(terms)
