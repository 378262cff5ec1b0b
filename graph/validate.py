"""The citation validator: a draft reaches the user only if every factual sentence cites a passage
that was actually sent for this turn.

A citation is a chunk id in square brackets, `[larkspur:finance/travel:v3:0007]`; several may share
a bracket (`[a, b]`) or follow each other (`[a][b]`). A bracketed token that looks like a chunk id
(it has a colon and no spaces) but was not sent this turn is an `unknown_citation`, wherever it is.

Sentences come from `retrieval.sentences.split_sentences`, line by line, with two adjustments: a
segment made only of citations belongs to the sentence before it (`… USD 250. [id]`), and a
citation followed by a new capitalised sentence closes the sentence it follows.

What is *not* factual (decided here, deliberately narrow; everything else is factual):

- a greeting or courtesy phrase from a fixed list ("Hi", "Thanks for asking", "I hope this helps",
  "Let me know if you have other questions", "Here is what the policy says", Arabic equivalents);
- a question back to the user ("Which city are you travelling to?") that has no digit, currency
  and no policy noun (limit, leave, hotel, refund, …);
- a connective lead-in that ends with a colon ("Here is what the policy says:", "The limits are:"),
  at most 12 words, with no digit, currency, modal or negation (must, may, not, only, …);
- a line with no letters or digits (a divider, a lone bullet).

Any sentence with a digit (Western or Arabic-Indic), a currency symbol or code, is factual, even
if it also looks like a greeting or a question. A draft with no valid citation at all fails
(`no_citations`): a clarifying question alone is not an answer, and deciding that the documents
do not answer is never the model's call. Admin replies and Cairn's own fixed texts are not drafts
and are not validated here (see graph/nodes/validate.py).

The fact check (when the sent passages' texts are given): every number, amount, percentage and
date of a factual sentence must be stated by a passage that sentence cites, compared in one normal
form ("USD 250" = "$250" = "250 USD", "1,500" = "1500", "15 %" = "15%", Arabic-Indic digits,
"1 March 2026" = "2026-03-01"; see graph/facts.py). Otherwise the sentence is an
`unsupported_number`: a model that cites a real chunk for a figure it made up fails like an
uncited claim. Quoting the passage's own figure always passes.

The support check (when a `support` check is given; the graph gives one for a model's drafts): a
factual sentence whose figures pass must also be supported by a sentence of a chunk it cites, as
`support` reads them (graph/answerers/judging.py `ClaimSupport`: the answer judge reads the
sentence, without its citations, against the cited chunks' sentences). Otherwise the sentence is an
`unsupported_sentence`: a model that cites a real chunk for a rule it does not state fails too. The
check is injected, so this module loads no model.

The verdict records problems by kind and sentence position, never the draft text (not even the
unsupported figure), so a failed draft leaves no user-visible trace.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from graph.facts import Facts, facts_in, unsupported_figures
from retrieval.currencies import CURRENCY
from retrieval.sentences import split_sentences

# The citation pattern, exported once: a bracket that may hold chunk ids (see citations_in).
CITATION_BRACKET = re.compile(r"\[([^\[\]\n]+)\]")
_ID_TOKEN = re.compile(r"^[^\s\[\],;]+:[^\s\[\],;]+$")
_CITATION_THEN_SENTENCE = re.compile(r"(?<=\])\s+(?=[\"'(]?[A-Z\u0600-\u06FF])")
_DIGIT = re.compile(r"\d")
_NUMBER_WORDS = re.compile(
    r"\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
    r"forty|fifty|hundred|thousand|million|half|twice|double|percent)\b", re.IGNORECASE)
_POLICY_NOUNS = re.compile(
    r"\b(?:polic(?:y|ies)|limits?|allowances?|rates?|leave|days?|weeks?|months?|years?|hours?|per|"
    r"receipts?|refunds?|returns?|hotels?|flights?|expenses?|claims?|approvals?|approve[sd]?|budget|"
    r"entitle(?:d|ment)|eligible|reimburse\w*|pay|paid|salary|costs?|prices?|fees?|maximum|minimum|"
    r"deadlines?|discounts?|stipend|mileage|per\s*diem|passwords?|security|benefits?|rules?)\b|"
    r"سياس|حد|بدل|إجاز|اجاز|يوم|أيام|ايام|أسبوع|شهر|سنة|ساع|فندق|رحل|مصروف|موافق|استرداد|إرجاع|راتب",
    re.IGNORECASE)
_MODALS = re.compile(
    r"\b(?:must|may|might|can|cannot|can't|could|should|shall|will|won't|would|not|no|never|only|always|"
    r"required?|requires|allowed|permitted|prohibited|forbidden|entitled|eligible|needs?|unless|except)\b|"
    r"يجب|يجوز|يحق|لا|لن|ليس|فقط|مسموح|ممنوع|يشترط|يُشترط|يستحق|إلا",
    re.IGNORECASE)
_COURTESY = re.compile(
    r"^(?:hi|hello|hey|good (?:morning|afternoon|evening)|thanks|thank you|thanks for (?:asking|your question)|"
    r"(?:a )?good question|sure|of course|certainly|happy to help|i hope (?:this|that) helps|hope (?:this|that) helps|"
    r"let me know if you have (?:any )?(?:other|more|further) questions|"
    r"(?:here is|here's) what (?:i found|the polic(?:y|ies) says?|our polic(?:y|ies) says?)|"
    r"مرحبا|مرحبًا|أهلا|أهلًا|السلام عليكم|شكرا|شكرًا|بكل سرور|إليك ما (?:وجدته|تقوله السياسة|تنص عليه السياسة)|"
    r"آمل أن يساعدك هذا)$",
    re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*•>]+|\d{1,2}[.)])\s+")
_EMPHASIS = re.compile(r"[*_`#]+")
MAX_CONNECTIVE_WORDS = 12
_SPACE_BEFORE_STOP = re.compile(r"\s+(?=[.,;:!?؟،])")  # where a citation was taken out: "GBP 210 [id]." → "GBP 210 ."

# (a factual sentence of a draft as `plain_sentence` gives it, the sent chunk ids it cites) →
# (whether a sentence of one of those chunks supports it, the best support read, 0–1).
SupportCheck = Callable[[str, Sequence[str]], tuple[bool, float]]


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str | None  # None, or "answer_validation_failed"
    problems: list[dict[str, object]] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)
    sentences: int = 0
    factual: int = 0

    def as_dict(self) -> dict[str, object]:
        return {"ok": self.ok, "reason": self.reason, "problems": self.problems, "cited": self.cited,
                "sentences": self.sentences, "factual": self.factual}


def citations_in(text: str) -> list[str]:
    """Every chunk-id-looking token inside square brackets, in order (duplicates kept)."""
    found: list[str] = []
    for group in CITATION_BRACKET.findall(text):
        for token in re.split(r"[,;]", group):
            token = token.strip()
            if _ID_TOKEN.match(token):
                found.append(token)
    return found


def strip_citations(text: str) -> str:
    return CITATION_BRACKET.sub(lambda m: "" if citations_in(m.group(0)) else m.group(0), text)


def segment(text: str) -> list[str]:
    """The answer's sentences, with citations attached to the sentence they follow. A quotation
    (“…” or «…») is one sentence up to its closing mark, whatever full stops it holds: the citation
    after it covers the whole quote ("“The edict was revoked in 1685. Many fled.” [id]")."""
    out: list[str] = []
    for line in text.splitlines():
        open_quote = False
        balanced = line.count("“") == line.count("”") and line.count("«") == line.count("»")
        for piece in _CITATION_THEN_SENTENCE.split(line):
            for sentence in split_sentences(piece):
                if out and (open_quote or (not _has_words(strip_citations(sentence)) and citations_in(sentence))):
                    out[-1] = f"{out[-1]} {sentence}"
                else:
                    out.append(sentence)
                open_quote = balanced and _inside_quote(out[-1])  # an unclosed quote joins nothing
    return out


def _inside_quote(sentence: str) -> bool:
    return sentence.count("“") > sentence.count("”") or sentence.count("«") > sentence.count("»")


def is_factual(sentence: str) -> bool:
    """See the module docstring: strict by default; only a few fixed shapes are non-factual."""
    s = plain_sentence(sentence)
    if not _has_words(s):
        return False
    if _DIGIT.search(s) or CURRENCY.search(s) or _NUMBER_WORDS.search(s):
        return True
    bare = s.rstrip(" .!,;:?؟،").strip()
    if _COURTESY.match(bare):
        return False
    if s.endswith(("?", "؟")):
        return bool(_POLICY_NOUNS.search(s))
    if s.endswith(":"):
        return len(s.split()) > MAX_CONNECTIVE_WORDS or bool(_MODALS.search(s))
    return True


def validate_answer(text: str | None, allowed_ids: Iterable[str], *,
                    texts: Mapping[str, str] | None = None, effective: Mapping[str, str] | None = None,
                    support: SupportCheck | None = None) -> Verdict:
    """`allowed_ids`: the chunk ids sent this turn. `texts` (chunk id → the text that was sent: its
    title, heading and body) turns on the fact check; a cited chunk missing from it supports no figure.
    `effective` (chunk id → its version's effective date, as sent): the date itself, and nothing else,
    is a figure the chunk states ("from 1 January 2025"); its day and year are no amounts or counts
    ("GBP 1 per night", "within 15 days" are not supported by an effective date of 2025-01-15).
    `support` turns on the support check of each factual, cited sentence whose figures pass; it is
    called once per such sentence (a model's reading: it may block)."""
    allowed = set(allowed_ids)
    if not text or not text.strip():
        return Verdict(ok=False, reason="answer_validation_failed", problems=[{"kind": "empty_draft"}])
    problems: list[dict[str, object]] = []
    cited: list[str] = []
    evidence: dict[str, Facts] = {}  # chunk id → its figures, read once per draft
    sentences = segment(text)
    factual = 0
    for i, sentence in enumerate(sentences):
        ids = citations_in(sentence)
        unknown = [c for c in ids if c not in allowed]
        for c in unknown:
            problems.append({"kind": "unknown_citation", "sentence": i, "chunk_id": c})
        valid = [c for c in ids if c in allowed]
        cited.extend(c for c in valid if c not in cited)
        if is_factual(sentence):
            factual += 1
            if not valid:
                problems.append({"kind": "uncited_sentence", "sentence": i})
            else:
                plain = plain_sentence(sentence)
                missing = None
                if texts is not None:
                    # The cited passages' figures are read only for a sentence that states a figure: one
                    # without any has nothing to look up (unsupported() of it is empty whatever they state).
                    stated = facts_in(plain).figures
                    missing = stated and unsupported_figures(stated, _evidence(valid, texts, evidence, effective or {}))
                if missing:
                    problems.append({"kind": "unsupported_number", "sentence": i, "count": len(missing)})
                elif support is not None:
                    supported, best = support(_SPACE_BEFORE_STOP.sub("", plain), valid)
                    if not supported:
                        problems.append({"kind": "unsupported_sentence", "sentence": i, "support": round(best, 3)})
    if not cited:
        problems.append({"kind": "no_citations"})
    ok = not problems
    return Verdict(ok=ok, reason=None if ok else "answer_validation_failed", problems=problems, cited=cited,
                   sentences=len(sentences), factual=factual)


@functools.lru_cache(maxsize=4096)
def _passage_facts(text: str) -> Facts:
    """A passage's figures, read once per text (the same passages are cited turn after turn); read only."""
    return facts_in(text, partial_dates=True)


def _evidence(chunk_ids: list[str], texts: Mapping[str, str], cache: dict[str, Facts],
              effective: Mapping[str, str]) -> Facts:
    """The figures of the cited chunks together (a sentence citing two passages may combine them)."""
    merged = Facts()
    for chunk_id in chunk_ids:
        if chunk_id not in cache:
            cache[chunk_id] = _passage_facts(texts.get(chunk_id) or "")
        merged.add(cache[chunk_id])
        if effective.get(chunk_id):
            merged.figures |= {f for f in _passage_facts(effective[chunk_id]).figures if f[0] == "date"}
    return merged


def plain_sentence(sentence: str) -> str:
    """A draft's sentence as its figures are read: no citations, list bullet or emphasis marks."""
    return " ".join(_EMPHASIS.sub("", _BULLET.sub("", strip_citations(sentence))).split())


def _has_words(text: str) -> bool:
    return any(ch.isalnum() for ch in text)
