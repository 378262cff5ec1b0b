"""Training pairs for the judge: (question, heading, sentence) → does the sentence answer the question?

Build-time only (the training recipe and its evaluation read it; serving never does). Sources, each
split as models/splits.py says, so that nothing of a tune or report set is trained on:

- SQuAD 2.0 dev, articles 17–29: the sentence holding an answer is positive; the other sentences of
  its paragraph and one of another paragraph of the article are negatives; every sentence of the
  paragraph is a negative for an adversarial (unanswerable) question.
- The handbooks' pages, read as the product reads them (parser, chunker and the answerer's
  candidate sentences: a table row with its column names, a list item with its lead-in): for a
  question of a page in the split, the candidates holding a gold answer of that page are positive;
  the page's other candidates closest to the question (MiniLM cosine) and the closest of other pages
  are the hard negatives. Near-miss and out-of-corpus questions give negatives only (the closest
  candidates of all pages of the split's corpus). Questions: bench/questions (by page split) and the
  team's own training questions in models/judge/data/ (written over training pages only).
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from models import splits

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")
OWN_QUESTIONS = Path(__file__).resolve().parent / "data"
BENCH_QUESTIONS = ROOT / "bench" / "questions"


@dataclass(frozen=True)
class Pair:
    question: str
    heading: str
    sentence: str
    label: float
    source: str  # squad | handbooks
    group: str  # one question: its pairs are ranked against each other in evaluation


@dataclass(frozen=True)
class PageCandidate:
    path: str  # under handbooks/
    heading: str
    text: str  # the sentence as the answerer scores it


def normalise(text: str) -> str:
    """Lower case, accents and Markdown marks out, spaces collapsed: for finding a gold span in a sentence."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"[*_`|]+", " ", text)
    return " ".join(re.findall(r"[\w$%€£.,/-]+", text))


def contains(sentence: str, span: str) -> bool:
    s, g = normalise(sentence), normalise(span)
    return bool(g) and g in s


# -- SQuAD ---------------------------------------------------------------------------------------------


def squad_pairs(articles: Iterable[int], rng: random.Random) -> list[Pair]:
    from retrieval.sentences import split_sentences  # build-time: the product's own splitter

    data = json.loads((DATA / "squad2" / "dev-v2.0.reconstructed.json").read_text(encoding="utf-8"))["data"]
    out: list[Pair] = []
    for ai in articles:
        article = data[ai]
        title = article["title"].replace("_", " ")
        paragraphs = [split_sentences(p["context"]) for p in article["paragraphs"]]
        for pi, p in enumerate(article["paragraphs"]):
            sentences = paragraphs[pi]
            others = [s for pj, ss in enumerate(paragraphs) if pj != pi for s in ss]
            for qa in p["qas"]:
                golds = {a["text"] for a in qa["answers"]} if not qa["is_impossible"] else set()
                positive = [s for s in sentences if any(contains(s, g) for g in golds)]
                if golds and not positive:
                    continue  # the span crosses sentences: no sentence alone answers
                negative = [s for s in sentences if s not in positive]
                group = f"squad:{qa['id']}"
                for s in positive[:2]:
                    out.append(Pair(qa["question"], title, s, 1.0, "squad", group))
                for s in rng.sample(negative, min(len(negative), 4 if not golds else 3)):
                    out.append(Pair(qa["question"], title, s, 0.0, "squad", group))
                if others:
                    out.append(Pair(qa["question"], title, rng.choice(others), 0.0, "squad", group))
    return out


# -- handbooks -----------------------------------------------------------------------------------------


def page_candidates(paths: Sequence[str]) -> list[PageCandidate]:
    """Every candidate sentence of these handbook pages, read as ingestion and the answerer read them."""
    from graph.answerers.extractive import answer_candidates  # build-time: the answerer's own reading
    from models.minilm import bundled_model_dir
    from retrieval.chunk import chunk_document, model_token_counter
    from retrieval.parse import parse_bytes

    count = model_token_counter(bundled_model_dir())
    out: list[PageCandidate] = []
    for path in paths:
        file = DATA / "handbooks" / path
        parsed = parse_bytes(file.read_bytes(), filename=file.name)
        seen: set[str] = set()
        for draft in chunk_document(parsed, count_tokens=count):
            heading = " > ".join(draft.heading_path)
            for text in answer_candidates(draft.text):
                if text not in seen:
                    seen.add(text)
                    out.append(PageCandidate(path, heading, text))
    return out


def _jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def handbook_questions(split: str, *, lang: str = "en") -> list[dict]:
    """Questions of `split` over the handbooks: the bench's (by page split) and, for training, the team's own."""
    suffix = "-ar" if lang == "ar" else ""
    rows = [*_jsonl(BENCH_QUESTIONS / f"handbooks{suffix}.jsonl")]
    if lang == "en":
        rows += _jsonl(BENCH_QUESTIONS / "handbooks-staff.jsonl")
    rows = [r for r in rows if splits.handbook_split(gold_path=r.get("gold_path"), qid=str(r["id"])) == split]
    if split == splits.TRAIN:
        rows += _jsonl(OWN_QUESTIONS / f"handbook-questions{suffix}.jsonl")
    return rows


def gold_spans(row: dict) -> list[str]:
    spans = row.get("answers") or [row.get("answer") or row.get("gold_text")]
    return [str(s) for s in spans if s]


def handbook_pairs(split: str, candidates: Sequence[PageCandidate], vectors, encode, rng: random.Random,
                   *, hard_same_page: int = 4, hard_other: int = 3, hard_unanswerable: int = 6) -> list[Pair]:
    """Pairs for the handbook questions of `split`. `vectors`: MiniLM vectors of `candidates`;
    `encode`: texts → MiniLM vectors (the questions)."""
    import numpy as np

    rows = [r for r in handbook_questions(split) if r.get("question")]
    if not rows:
        return []
    qvecs = encode([str(r["question"]) for r in rows])
    by_path: dict[str, list[int]] = {}
    for i, c in enumerate(candidates):
        by_path.setdefault(c.path, []).append(i)
    out: list[Pair] = []
    for row, q in zip(rows, qvecs, strict=True):
        question, group = str(row["question"]), f"handbooks:{row['id']}"
        sims = vectors @ q
        gold_path = row.get("gold_path")
        corpus = str(row.get("corpus") or (gold_path or "").split("/")[0] or "")
        if gold_path:
            mine = by_path.get(str(gold_path), [])
            spans = gold_spans(row)
            positive = [i for i in mine if any(contains(candidates[i].text, s) for s in spans)]
            gold_text = row.get("gold_text")
            if gold_text and len(positive) > 1:  # the span recurs: the candidates of the gold sentence
                exact = [i for i in positive if contains(candidates[i].text, str(gold_text))
                         or contains(str(gold_text), candidates[i].text)]
                positive = exact or positive
            if not positive:
                continue
            for i in positive[:2]:
                out.append(Pair(question, candidates[i].heading, candidates[i].text, 1.0, "handbooks", group))
            holding = {i for i in mine if any(contains(candidates[i].text, s) for s in spans)}
            same = sorted((i for i in mine if i not in holding), key=lambda i: -sims[i])[:hard_same_page]
            other = [int(i) for i in np.argsort(-sims)
                     if candidates[int(i)].path != gold_path
                     and not any(contains(candidates[int(i)].text, s) for s in spans)][:hard_other]
            for i in [*same, *other]:
                out.append(Pair(question, candidates[i].heading, candidates[i].text, 0.0, "handbooks", group))
        else:  # near-miss or out of corpus: the closest candidates are no answer
            pool = [int(i) for i in np.argsort(-sims) if not corpus or candidates[int(i)].path.startswith(corpus)]
            for i in pool[:hard_unanswerable]:
                out.append(Pair(question, candidates[i].heading, candidates[i].text, 0.0, "handbooks", group))
    return out


def pages_of(split: str) -> list[str]:
    root = DATA / "handbooks"
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md")
                  if p.name not in ("README.md", "SOURCE.md")
                  and splits.page_split(p.relative_to(root).as_posix()) == split)


def mined_pairs(split: str, candidates: Sequence[PageCandidate], vectors, encode, score, *,
                shortlist: int = 40, per_question: int = 3, ceiling: float = 0.95) -> list[Pair]:
    """Negatives a trained reader gets wrong: per handbook question of `split`, the `shortlist`
    candidates of its handbook closest to it (MiniLM cosine) are read by `score` ((question, heading,
    sentence) triples → probabilities), and the `per_question` it reads highest that hold no gold span
    become negatives. Those read above `ceiling` are left out: a sentence the reader is that sure of is
    as likely a second statement of the answer as a mistake (denoised hard negatives)."""
    import numpy as np

    rows = [r for r in handbook_questions(split) if r.get("question")]
    if not rows:
        return []
    qvecs = encode([str(r["question"]) for r in rows])
    triples: list[tuple[str, str, str]] = []
    owners: list[tuple[int, int]] = []  # (row, candidate) of each triple
    for n, (row, q) in enumerate(zip(rows, qvecs, strict=True)):
        gold_path = str(row.get("gold_path") or "")
        corpus = str(row.get("corpus") or gold_path.split("/")[0])
        spans = gold_spans(row) if gold_path else []
        pool = [int(i) for i in np.argsort(-(vectors @ q))
                if candidates[int(i)].path.startswith(corpus)
                and not any(contains(candidates[int(i)].text, s) for s in spans)][:shortlist]
        for i in pool:
            triples.append((str(row["question"]), candidates[i].heading, candidates[i].text))
            owners.append((n, i))
    probabilities = score(triples)
    by_row: dict[int, list[tuple[float, int]]] = {}
    for (n, i), p in zip(owners, probabilities, strict=True):
        if p <= ceiling:
            by_row.setdefault(n, []).append((float(p), i))
    out: list[Pair] = []
    for n, read in by_row.items():
        row = rows[n]
        for _, i in sorted(read, reverse=True)[:per_question]:
            out.append(Pair(str(row["question"]), candidates[i].heading, candidates[i].text, 0.0, "handbooks",
                            f"handbooks:{row['id']}"))
    return out
