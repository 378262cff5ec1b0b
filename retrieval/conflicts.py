"""Conflicting sources: two eligible documents that give different values for the quantity asked.

Deterministic, over the sentences of the passages that would enter the prompt:

1. Extract quantities: an amount with a currency (USD 250, $250, 900 AED), a count of days,
   weeks, months, hours or minutes, a percentage, a rate per mile/km.
2. Keep the ones whose sentence (plus its heading path) shares the question's subject terms:
   at least half of the question's content terms, BM25-analysed (stopwords out, stemmed).
3. Two such quantities from *different documents*, same unit, different value, sharing the
   same subject terms, conflict — unless a rule orders them:
   - the documents carry different effective dates (the later one applies);
   - either passage says it supersedes/replaces/overrides another, or the catalog says so;
   - either sentence is an exception that names its scope ("during …", "except …", "unless …",
     "… approval", "only when …", "older than …");
   - the two documents also state a common value for that unit (they agree; the other value is
     about something else).
An explicit "supersedes" needs only one shared subject term to order a pair (the notice that
replaces a rate rarely repeats every word of the old policy); a later effective date needs the
same overlap as a conflict.
An ordered pair is not a conflict; the passage that loses is reported as `overridden` so the
answer quotes only the one that applies.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import ceil
from typing import Protocol

from retrieval.sentences import body_of, split_sentences

_CURRENCY = {"usd": "USD", "$": "USD", "dollars": "USD", "dollar": "USD", "gbp": "GBP", "£": "GBP",
             "pounds": "GBP", "eur": "EUR", "€": "EUR", "euros": "EUR", "aed": "AED", "dirhams": "AED",
             "sar": "SAR", "riyals": "SAR", "درهم": "AED", "ريال": "SAR", "دولار": "USD"}
_UNITS = {"day": "day", "days": "day", "working days": "working_day", "business days": "working_day",
          "week": "week", "weeks": "week", "month": "month", "months": "month", "hour": "hour",
          "hours": "hour", "minute": "minute", "minutes": "minute", "%": "percent", "percent": "percent",
          "يوم": "day", "يوما": "day", "يومًا": "day", "أيام": "day", "أسبوع": "week", "أسابيع": "week",
          "أسبوعا": "week", "أسبوعًا": "week", "ساعة": "hour", "ساعات": "hour", "شهر": "month", "أشهر": "month"}
_NUM = r"(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
_CUR_BEFORE = re.compile(r"(USD|GBP|EUR|AED|SAR|\$|£|€)\s?" + _NUM, re.IGNORECASE)
_CUR_AFTER = re.compile(_NUM + r"\s?(USD|GBP|EUR|AED|SAR|dollars?|pounds|euros|dirhams|riyals|درهم|ريال|دولار)",
                        re.IGNORECASE)
_COUNT = re.compile(_NUM + r"\s?(working days|business days|days?|weeks?|months?|hours?|minutes?|%|percent"
                    r"|يومًا|يوما|يوم|أيام|أسبوعًا|أسبوعا|أسبوع|أسابيع|ساعات|ساعة|أشهر|شهر)", re.IGNORECASE)
_PER = re.compile(r"\bper\s+(mile|km|kilometre|kilometer|night|day|month)\b", re.IGNORECASE)
_SCOPED = re.compile(r"\b(during|except|exception|unless|approval|approved|only (?:for|to|when|with|if)"
                     r"|for trips|older than|more than|longer than|at least)\b"
                     r"|باستثناء|إلا إذا|خلال|بموافقة", re.IGNORECASE)
_SUPERSEDES = re.compile(r"\b(supersed\w*|replac(?:es|ed)|overrid\w*|no longer applies)\b|يلغي|يحل محل",
                         re.IGNORECASE)


class PassageLike(Protocol):
    chunk_id: str
    doc_id: str
    version: str
    title: str
    heading: str
    text: str
    effective_at: str | None


@dataclass(frozen=True)
class Quantity:
    unit: str
    value: float
    raw: str
    sentence: str
    chunk_id: str
    doc_id: str
    shared: frozenset[int]
    scoped: bool


@dataclass(frozen=True)
class Conflict:
    unit: str
    first: Quantity
    second: Quantity

    def describe(self) -> str:
        return (f"{self.first.raw} ({self.first.doc_id}) vs {self.second.raw} ({self.second.doc_id})")


@dataclass(frozen=True)
class ConflictReport:
    conflicts: tuple[Conflict, ...] = ()
    overridden: frozenset[str] = field(default_factory=frozenset)  # chunk ids that lost to an ordering rule

    @property
    def found(self) -> bool:
        return bool(self.conflicts)

    def as_json(self) -> list[dict[str, object]]:
        return [{"unit": c.unit, "values": [c.first.raw, c.second.raw],
                 "chunks": [c.first.chunk_id, c.second.chunk_id], "docs": [c.first.doc_id, c.second.doc_id],
                 "sentences": [c.first.sentence, c.second.sentence]} for c in self.conflicts]


def extract_quantities(sentence: str) -> list[tuple[str, float, str]]:
    """(unit, value, raw text) for every quantity in a sentence."""
    found: list[tuple[str, float, str]] = []
    per = _PER.search(sentence)
    suffix = f"/{per.group(1).lower()}" if per else ""
    for m in _CUR_BEFORE.finditer(sentence):
        found.append((_CURRENCY[m.group(1).lower()] + suffix, _value(m.group(2)), m.group(0)))
    for m in _CUR_AFTER.finditer(sentence):
        found.append((_CURRENCY[m.group(2).lower()] + suffix, _value(m.group(1)), m.group(0)))
    for m in _COUNT.finditer(sentence):
        found.append((_UNITS[m.group(2).lower()], _value(m.group(1)), m.group(0)))
    return found


def detect_conflicts(question: str, passages: Sequence[PassageLike], *, terms_of: Callable[[str], set[int]],
                     supersedes: Callable[[str, str], bool] | None = None) -> ConflictReport:
    """`terms_of(text)` gives analysed terms (the BM25 analyser's hashed tokens)."""
    q_terms = terms_of(question)
    if not q_terms or len({p.doc_id for p in passages}) < 2:
        return ConflictReport()
    need = max(1, ceil(len(q_terms) / 2))
    by_chunk = {p.chunk_id: p for p in passages}
    quantities: list[Quantity] = []
    for p in passages:
        heading_terms = terms_of(p.heading.replace(">", " "))
        for sentence in split_sentences(body_of(p.text)):
            shared = (terms_of(sentence) | heading_terms) & q_terms
            if len(shared) < need:
                continue
            for unit, value, raw in extract_quantities(sentence):
                quantities.append(Quantity(unit=unit, value=value, raw=raw, sentence=sentence,
                                           chunk_id=p.chunk_id, doc_id=p.doc_id, shared=frozenset(shared),
                                           scoped=bool(_SCOPED.search(sentence))))
    # Two documents that state the same value for a unit agree on it; their other values for that
    # unit are about something else (a late-claim cut-off beside the claim deadline).
    values: dict[tuple[str, str], set[float]] = {}
    for q in quantities:
        values.setdefault((q.doc_id, q.unit), set()).add(q.value)
    conflicts: list[Conflict] = []
    overridden: set[str] = set()
    for i, a in enumerate(quantities):
        for b in quantities[i + 1:]:
            if a.doc_id == b.doc_id or a.unit != b.unit or a.value == b.value:
                continue
            common = len(a.shared & b.shared)
            if not common:
                continue
            loser = _ordered_loser(by_chunk[a.chunk_id], by_chunk[b.chunk_id], supersedes,
                                   by_date=common >= need)
            if loser is not None:
                overridden.add(loser)
                continue
            if common < need or a.scoped or b.scoped or values[(a.doc_id, a.unit)] & values[(b.doc_id, b.unit)]:
                continue
            conflicts.append(Conflict(unit=a.unit, first=a, second=b))
    unique: dict[tuple[str, str], Conflict] = {}
    for c in conflicts:
        unique.setdefault(tuple(sorted((c.first.doc_id, c.second.doc_id))), c)  # type: ignore[arg-type]
    return ConflictReport(conflicts=tuple(unique.values()), overridden=frozenset(overridden))


def _ordered_loser(a: PassageLike, b: PassageLike, supersedes: Callable[[str, str], bool] | None, *,
                   by_date: bool) -> str | None:
    """The chunk id that an ordering rule sets aside, or None when nothing orders the pair.

    An explicit "supersedes" (catalog or text) orders any pair about the same thing; effective
    dates alone order only pairs that share the question's subject (`by_date`).
    """
    if supersedes is not None:
        if supersedes(a.doc_id, b.doc_id):
            return b.chunk_id
        if supersedes(b.doc_id, a.doc_id):
            return a.chunk_id
    a_says, b_says = bool(_SUPERSEDES.search(a.text)), bool(_SUPERSEDES.search(b.text))
    if a_says != b_says:
        return b.chunk_id if a_says else a.chunk_id
    if by_date and a.effective_at and b.effective_at and a.effective_at[:10] != b.effective_at[:10]:
        return b.chunk_id if a.effective_at > b.effective_at else a.chunk_id
    return None


def _value(text: str) -> float:
    return float(text.replace(",", ""))
