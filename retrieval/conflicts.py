"""Conflicting sources: two eligible documents that give different values for the quantity asked.

Deterministic, over the sentences (and table rows) of the passages that would enter the prompt:

1. Extract quantities: an amount with a currency (USD 250, $250, 900 AED, CAD 500: any currency of
   retrieval/currencies.py), a count of days,
   weeks, months, hours or minutes, a percentage, a rate per mile/km. Each keeps its own subject
   (the noun phrase attached to the number: "16 weeks of *parental leave*", "*staff discount*: 20%",
   a table row's label) and whether it is a bound ("over $75", ">2 weeks": a condition, not a value).
2. Keep the ones whose sentence (plus its heading path, plus a table's column header) shares the
   question's subject terms, BM25-analysed (stopwords out, stemmed), unit words ("days", "hours")
   left out — they say what is counted, not what it is about. A conflict needs at least half of
   the question's content terms on both sides. A quantity whose own subject shares nothing with
   the question is about something else the sentence mentions ("a maximum benefit of $500,000"
   for a life-insurance question).
3. Two such quantities from *different documents*, same unit, same kind (value or bound), different
   value, sharing the same subject terms, conflict — unless their subjects differ ("12 weeks of
   medical leave" vs "16 weeks of parental leave": each subject has a word the other side's
   wording lacks), or a rule orders them:
   - the documents carry different effective dates (the later one applies);
   - either passage says it supersedes/replaces/overrides another, or the catalog says so;
   - either sentence is an exception that names its scope ("during …", "except …", "unless …",
     "… approval", "only when …", "older than …");
   - the two documents also state a common value for that unit (they agree; the other value is
     about something else);
   - another sentence states that unit for more of the question ("in Boston *during trade-show
     weeks*"): the question asks about that narrower quantity, not the pair's general one.
An explicit "supersedes" needs only one shared subject term to order a pair (the notice that
replaces a rate rarely repeats every word of the old policy); a later effective date needs the
same overlap as a conflict.
An ordered pair is not a conflict; the passage that loses is reported as `overridden` so the
answer quotes only the one that applies.

Documents of one tenant are taken to apply to the same people: two collections that disagree
about the same quantity (say, two handbooks ingested into one tenant) are a conflict the owners
must settle, or separate with groups or tenants; nothing in a passage says which one applies.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import ceil
from typing import Protocol

from retrieval.currencies import AMOUNT, amount_value, currency_of
from retrieval.sentences import body_of, split_sentences

_UNITS = {"day": "day", "days": "day", "working days": "working_day", "business days": "working_day",
          "week": "week", "weeks": "week", "month": "month", "months": "month", "hour": "hour",
          "hours": "hour", "minute": "minute", "minutes": "minute", "%": "percent", "percent": "percent",
          "يوم": "day", "يوما": "day", "يومًا": "day", "أيام": "day", "أسبوع": "week", "أسابيع": "week",
          "أسبوعا": "week", "أسبوعًا": "week", "ساعة": "hour", "ساعات": "hour", "شهر": "month", "أشهر": "month"}
_NUM = r"(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
_COUNT = re.compile(_NUM + r"\s?(" + "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True)) + ")",
                    re.IGNORECASE)  # the longest unit first: "days" is not "day" + "s"
_PER = re.compile(r"\bper\s+(mile|km|kilometre|kilometer|night|day|month)\b", re.IGNORECASE)
_SCOPED = re.compile(r"\b(during|except|exception|unless|approval|approved|only (?:for|to|when|with|if)"
                     r"|for trips|older than|more than|longer than|at least)\b"
                     r"|باستثناء|إلا إذا|خلال|بموافقة", re.IGNORECASE)
# A comparator right before the number makes the quantity a bound (a condition), not a value.
_BOUND = re.compile(r"(?:(?P<gt>>|≥|\b(?:over|above|more than|greater than|longer than|older than|exceeding|"
                    r"in excess of|at least))|(?P<lt><|≤|\b(?:under|below|less than|fewer than|shorter than)))"
                    r"\s*$", re.IGNORECASE)
# Words that link a number to its subject: "X of N", "X is N", "X for N", "X: N"; "N weeks of X", "$N in X".
_LINK_BEFORE = {"of", "is", "are", "was", "were", "be", "for", ":", "=", "|"}
_LINK_AFTER = {"of", "in"}
_SKIP_BEFORE = re.compile(r"\s*\b(?:up to|at most|only|just|exactly)\s*$", re.IGNORECASE)
_TOKEN = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*|['’]|[:=|,;()\[\]—–]")
# Clause breaks for the words near a number: a bracket, a semicolon, a colon, a comma, a dash.
_BREAK = {"(", ")", "[", "]", ";", ":", ",", "—", "–", "|"}
# Words that name a bound rather than what is bounded ("a maximum of", "the limit is").
_GENERIC = "maximum minimum total limit cap amount sum value"
_NEAR = 6  # words each side of a number that count as its neighbourhood
# The passage that says it supersedes another (active voice: "replaced" is as often a broken laptop).
_SUPERSEDES = re.compile(r"\b(supersedes|superseding|replaces|overrides|overriding|takes precedence over"
                         r"|no longer applies)\b|يلغي|يحل محل",
                         re.IGNORECASE)


class PassageLike(Protocol):
    # read-only, so frozen dataclasses (retrieval.search.Passage) satisfy it
    @property
    def chunk_id(self) -> str: ...
    @property
    def doc_id(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def heading(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def effective_at(self) -> str | None: ...


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
    bound: str = ""  # "" a value; ">" or "<" a condition ("over $75", ">2 weeks")
    subject: frozenset[int] = frozenset()  # terms of the noun phrase attached to the number
    near: frozenset[int] = frozenset()  # terms of the words around the number, same clause


@dataclass(frozen=True)
class Conflict:
    unit: str
    first: Quantity
    second: Quantity


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
    return [(unit, value, raw) for unit, value, raw, _, _ in _located(sentence)]


def detect_conflicts(question: str, passages: Sequence[PassageLike], *, terms_of: Callable[[str], set[int]],
                     supersedes: Callable[[str, str], bool] | None = None) -> ConflictReport:
    """`terms_of(text)` gives analysed terms (the BM25 analyser's hashed tokens)."""
    if len({p.doc_id for p in passages}) < 2:
        return ConflictReport()
    bodies = [body_of(p.text) for p in passages]
    if not any(_superseding_sentences(body) or any(_located(s) for s, _ in _statements(body)) for body in bodies):
        # Nothing states a quantity and nothing supersedes anything: no conflict and nothing set
        # aside, whatever the question's terms (so they and the passages' are not looked up).
        return ConflictReport()
    lexicon = _Lexicon(terms_of)
    vocabulary = frozenset().union(*(lexicon.content(f"{p.heading.replace('>', ' ')} {body}")
                                     for p, body in zip(passages, bodies, strict=True)))
    excluded = frozenset().union(*(lexicon.content(scope) for scope in negated_scopes(question)))
    # Only the question's words the passages know count: a chatty question ("hey, quick one, I'm
    # heading to …") must not dilute the half-the-terms rule with words no policy uses. A
    # question that shares no word with them was asked in another language: the best passage's
    # section names what it is about.
    q_terms = (lexicon.content(question) & vocabulary) - excluded
    if not q_terms:
        q_terms = lexicon.content(" ".join(passages[0].heading.split(">")[1:]) or passages[0].heading) - excluded
    if not q_terms:
        return ConflictReport()
    need = max(1, ceil(len(q_terms) / 2))
    by_chunk = {p.chunk_id: p for p in passages}
    overridden: set[str] = set(_superseded_by_text(passages, q_terms, lexicon))
    quantities: list[Quantity] = []
    for p, body in zip(passages, bodies, strict=True):
        if p.chunk_id in overridden:
            continue
        heading = p.heading.replace(">", " ")
        heading_terms: frozenset[int] | None = None  # looked up for the passage's first quantity
        for statement, header in _statements(body):
            located = _located(statement)
            if not located:
                continue  # no quantity in it, so nothing of it can conflict (its terms are not needed)
            if heading_terms is None:
                heading_terms = lexicon.content(heading)
            shared = (lexicon.content(statement) | lexicon.content(" ".join(header or ())) | heading_terms) & q_terms
            if not shared:
                continue  # a conflict needs `need` shared terms on both sides; "supersedes" only one
            if excluded and excluded <= lexicon.content(statement) and _SCOPED.search(statement):
                continue  # "outside trade-show weeks": the question sets this exception aside
            for unit, value, raw, start, end in located:
                subject, near = (_row_subject(statement, start, header, heading, lexicon) if header is not None
                                 else _sentence_subject(statement, start, end, lexicon))
                about = subject or near  # its own subject when it has one, else the words around it
                if not about & q_terms:
                    continue  # the number is about something else the sentence mentions
                quantities.append(Quantity(unit=unit, value=value, raw=raw, sentence=statement,
                                           chunk_id=p.chunk_id, doc_id=p.doc_id, shared=frozenset(shared),
                                           scoped=bool(_SCOPED.search(statement)), bound=_bound(statement[:start]),
                                           subject=subject, near=near))
    # Two documents that state the same value for a unit agree on it; their other values for that
    # unit are about something else (a late-claim cut-off beside the claim deadline).
    values: dict[tuple[str, str], set[float]] = {}
    for q in quantities:
        values.setdefault((q.doc_id, q.unit), set()).add(q.value)
    conflicts: list[Conflict] = []
    for i, a in enumerate(quantities):
        for b in quantities[i + 1:]:
            if a.doc_id == b.doc_id or a.unit != b.unit or a.value == b.value or a.bound != b.bound:
                continue
            common = len(a.shared & b.shared)
            if not common or _different_subjects(a, b):
                continue
            loser = _ordered_loser(by_chunk[a.chunk_id], by_chunk[b.chunk_id], supersedes,
                                   by_date=common >= need)
            if loser is not None:
                overridden.add(loser)
                continue
            if common < need or a.scoped or b.scoped or values[(a.doc_id, a.unit)] & values[(b.doc_id, b.unit)]:
                continue
            if any(q.unit == a.unit and q.shared > a.shared | b.shared for q in quantities):
                continue  # the question asks about something narrower that another sentence states
            conflicts.append(Conflict(unit=a.unit, first=a, second=b))
    unique: dict[tuple[str, str], Conflict] = {}
    for c in conflicts:
        unique.setdefault(tuple(sorted((c.first.doc_id, c.second.doc_id))), c)  # type: ignore[arg-type]
    return ConflictReport(conflicts=tuple(unique.values()), overridden=frozenset(overridden))


_NEGATED_SCOPE = re.compile(
    r"\b(?:outside(?: of)?|except(?: during| for| in)?|other than|apart from|excluding|not during|not in|besides)"
    r"\s+(?:the\s+|a\s+|an\s+)?(?P<scope>[\w'’ -]{3,40}?)(?=[,;?.!]|\s+(?:what|how|which|can|do|is|are)\b|$)|"
    r"(?:خارج|باستثناء|غير)\s+(?P<ar>[\w ]{3,30}?)(?=[،,؟?]|$)", re.IGNORECASE)


def negated_scopes(question: str) -> list[str]:
    """The scopes a question sets aside ("outside trade-show weeks", "except during the sale")."""
    return [m.group("scope") or m.group("ar") for m in _NEGATED_SCOPE.finditer(question)]


def _superseded_by_text(passages: Sequence[PassageLike], q_terms: frozenset[int], lexicon: _Lexicon) -> set[str]:
    """Chunks of a document that another passage says it supersedes, by that document's title
    ("This notice supersedes the mileage rate in the Travel and Expenses Policy"), when the
    superseded thing is what the question asks about. The whole notice wins for every question
    about that value, whether or not the old passage's number shares a word with the question."""
    out: set[str] = set()
    for p in passages:
        for sentence, verb_end in _superseding_sentences(body_of(p.text)):
            low = sentence.lower()
            for other in passages:
                at = low.find(other.title.lower(), verb_end) if other.title else -1
                if other.doc_id == p.doc_id or at < 0:
                    continue
                # what is superseded: the words between the verb and the title ("the mileage rate in")
                about = lexicon.content(sentence[verb_end:at]) & q_terms
                if about and lexicon.content(f"{other.heading.replace('>', ' ')} {other.text}") & about:
                    out.add(other.chunk_id)
    return out


# The readings below are pure functions of a passage's (or a sentence's) text, kept per text: the
# same policies come back turn after turn, and each is read several times a turn.


@functools.lru_cache(maxsize=4096)
def _superseding_sentences(body: str) -> tuple[tuple[str, int], ...]:
    """(sentence, end of its "supersedes" verb) for each sentence of a body that says it supersedes."""
    out = []
    for sentence in split_sentences(body):
        verb = _SUPERSEDES.search(sentence)
        if verb:
            out.append((sentence, verb.end()))
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _says_supersedes(text: str) -> bool:
    return bool(_SUPERSEDES.search(text))


def _different_subjects(a: Quantity, b: Quantity) -> bool:
    """Each number's own subject has a word the other side's wording lacks ("medical leave" vs
    "parental leave", "life insurance coverage" vs "maximum benefit"): two different quantities
    that happen to share the question's words. One subject inside the other is the same thing. A
    number without a subject of its own ("pays at the top 10% for our industry") is about something
    else than one whose subject none of its neighbouring words names ("up to 6% of your salary")."""
    if a.subject and b.subject:
        return bool(a.subject - b.near and b.subject - a.near)
    one, other = (a, b) if a.subject else (b, a)
    return bool(one.subject) and not one.subject & other.near


class _Lexicon:
    """Analysed terms with the unit words left out (they say what is counted, not what about)."""

    def __init__(self, terms_of: Callable[[str], set[int]]) -> None:
        self.terms_of = terms_of
        self.units = frozenset(terms_of(" ".join(u for u in _UNITS if u.isascii() and u.isalpha())))
        self.generic = frozenset(terms_of(_GENERIC))
        self._stop: dict[str, bool] = {}

    def content(self, text: str) -> frozenset[int]:
        return frozenset(self.terms_of(text)) - self.units if text.strip() else frozenset()

    def is_stopword(self, word: str) -> bool:
        key = word.lower()
        if key not in self._stop:
            self._stop[key] = not self.terms_of(key)
        return self._stop[key]

    def subject(self, words: Sequence[str]) -> frozenset[int]:
        return self.content(" ".join(words)) - self.generic


def _located(sentence: str) -> tuple[tuple[str, float, str, int, int], ...]:
    """(unit, value, raw text, start, end) for every quantity in a sentence.

    Kept per sentence (a pure function of its text): the same policy sentences come back turn after
    turn, and each is read several times a turn (as a statement, a table row, a row's cells)."""
    return _located_cached(sentence)


@functools.lru_cache(maxsize=16_384)
def _located_cached(sentence: str) -> tuple[tuple[str, float, str, int, int], ...]:
    found: list[tuple[str, float, str, int, int]] = []
    per = _PER.search(sentence)
    suffix = f"/{per.group(1).lower()}" if per else ""
    for m in AMOUNT.finditer(sentence):  # a bare "$" is read as USD here: one dollar figure against another
        currency = currency_of(m)
        found.append((("USD" if currency == "$" else currency.upper()) + suffix, _value(amount_value(m)),
                      m.group(0), m.start(), m.end()))
    for m in _COUNT.finditer(sentence):
        found.append((_UNITS[m.group(2).lower()], _value(m.group(1)), m.group(0), m.start(), m.end()))
    return tuple(found)


@functools.lru_cache(maxsize=4096)
def _statements(body: str) -> tuple[tuple[str, tuple[str, ...] | None], ...]:
    """Sentences, and table rows with their table's header cells (a row's numbers are about its
    label under that column)."""
    out: list[tuple[str, tuple[str, ...] | None]] = []
    header: tuple[str, ...] | None = None
    for line in body.splitlines():
        line = line.strip()
        if "|" not in line:
            header = None
            out.extend((sentence, None) for sentence in split_sentences(line))
        elif not re.fullmatch(r"[\s|:\-]+", line):  # a markdown separator row is no statement
            if header is None and not _located(line):  # a table's first line without numbers heads it
                header = tuple(_cells(line))
            else:
                header = header if header is not None else ()
                out.append((line, header))
    return tuple(out)


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _row_subject(row: str, start: int, header: Sequence[str], heading: str,
                 lexicon: _Lexicon) -> tuple[frozenset[int], frozenset[int]]:
    """A table row: its subject is the label cells (those without a number), read under the
    column header of the number's cell and the section heading."""
    cells = _cells(row)
    column = row[:start].strip().lstrip("|").count("|")
    label = [c for c in cells if not _located(c)]
    subject = lexicon.subject(label)
    near = lexicon.content(" ".join([*label, header[column] if column < len(header) else "", heading]))
    return subject, near | subject


def _sentence_subject(sentence: str, start: int, end: int, lexicon: _Lexicon) -> tuple[frozenset[int], frozenset[int]]:
    """The noun phrase attached to the number ("X of/is/: N", "N unit of/in X", "N weeks' X") and
    the words around it in the same clause."""
    before = _TOKEN.findall(_SKIP_BEFORE.sub("", sentence[:start]))
    tail = sentence[end:]
    tail = tail[len(m.group(0)):] if (m := re.match(r"\s?(?:–|-|to)\s?[$£€]?\d[\d,.]*", tail)) else tail
    after = _TOKEN.findall(tail)
    phrase: list[str] = []
    if before and before[-1].lower() in _LINK_BEFORE:
        for word in reversed(before[:-1]):
            if word in _BREAK or lexicon.is_stopword(word) or len(phrase) == 4:
                break
            phrase.insert(0, word)
    if after and (after[0] in ("'", "’") or after[0].lower() in _LINK_AFTER):
        rest = after[1:]
        while rest and rest[0] not in _BREAK and lexicon.is_stopword(rest[0]) and rest[0].lower() != "of":
            rest = rest[1:]  # "of the …", "in your …"
        taken: list[str] = []
        for i, word in enumerate(rest):
            if word.lower() == "of" and taken and i + 1 < len(rest) and not lexicon.is_stopword(rest[i + 1]):
                continue  # "leave of absence"
            if word in _BREAK or lexicon.is_stopword(word) or len(taken) == 3:
                break
            taken.append(word)
        phrase += taken
    window: list[str] = []
    for word in reversed(before[-_NEAR:]):
        if word in _BREAK:
            break
        window.insert(0, word)
    for word in after[:_NEAR]:
        if word in _BREAK:
            break
        window.append(word)
    subject = lexicon.subject(phrase)
    return subject, lexicon.content(" ".join(window)) | subject


def _bound(prefix: str) -> str:
    m = _BOUND.search(prefix)
    return "" if m is None else (">" if m.group("gt") else "<")


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
    a_says, b_says = _says_supersedes(a.text), _says_supersedes(b.text)
    if a_says != b_says:
        return b.chunk_id if a_says else a.chunk_id
    if by_date and a.effective_at and b.effective_at and a.effective_at[:10] != b.effective_at[:10]:
        return b.chunk_id if a.effective_at > b.effective_at else a.chunk_id
    return None


def _value(text: str) -> float:
    return float(text.replace(",", ""))
