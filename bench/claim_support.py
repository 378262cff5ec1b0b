"""Does the answer judge tell a drafted sentence its cited chunk supports from one it does not?

    python -m bench.claim_support [--tune-only] [--sample N]

The judge (models/judge) was trained on (question, "section | sentence") pairs; the validator reads a
draft's factual sentence, without its citations, as the question against the sentences of the chunks
it cites (graph/answerers/judging.py `ClaimSupport`), exactly as done here: the best of SUPPORT_READS
sentences of a chunk shortlisted by the same cheap prior. Each pair below is one (claim, chunk):

- SciFact (shared/data/beir_scifact, the BEIR copy): a claim against an abstract it cites (title as
  the section) is *cited*; against the abstract closest to it by TF-IDF that it does not cite,
  *unsupported*. The BEIR copy has no rationale labels: SciFact's cited abstracts include ones that
  contradict the claim or give no evidence for it (about half), so "cited" is not "supported", and
  its accept rate is what the check does on a claim's own sources, not a rate of supported claims.
  Tune: the claims of qrels/train.tsv (a fixed sample); report: the claims of qrels/test.tsv.
- Handbooks: the sentence holding a bench question's gold answer (bench/questions/handbooks*.jsonl),
  as a draft that quotes it, against its own chunk (*supported*) and against the closest chunk (TF-IDF)
  of another section of the same handbook that does not hold the answer (*unsupported*: a real,
  on-topic chunk that does not say it). Pages by models/splits.py: tune pages tune, report pages
  report; train pages are left out (the judge was trained on them).

The parts were fixed by source before any score was read. The threshold is chosen on the tune part
only (`choose`); the report part is printed with the threshold in weights/calibration.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

OUT = Path(__file__).resolve().parent / "out"
SEED = 20261206
SCIFACT_TUNE_CLAIMS = 250  # of qrels/train.tsv's 809 (a fixed sample: the judge reads ~9 pairs a claim)
GRID = tuple(round(0.01 * i, 2) for i in range(1, 100))
# The threshold keeps at least this share of the tune part's supported handbook quotes, and of
# SciFact's cited pairs (claims a model would paraphrase; some of those abstracts do not support the
# claim, so this keeps nearly all that do): a rejected sentence escalates its whole answer, and an
# answer has one to four factual sentences.
KEEP_QUOTES = 0.95
KEEP_CITED = 0.80
USEFUL_AUROC = 0.7
SHOWN = (0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1, 0.2, 0.3, 0.5)  # thresholds whose rates are printed
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Chunk:
    heading: str
    text: str  # as the product stores a chunk: its heading line, then its body
    lang: str = "en"


@dataclass(frozen=True)
class Pair:
    source: str  # scifact | handbooks
    part: str  # tune | report
    claim: str
    chunk: Chunk
    supported: bool  # scifact: the claim cites the abstract


# -- data -----------------------------------------------------------------------------------------------


def _idf_index(docs: Sequence[str]) -> tuple[list[Counter[str]], dict[str, float], dict[str, list[int]]]:
    terms = [Counter(_WORD.findall(d.lower())) for d in docs]
    df = Counter(t for c in terms for t in c)
    idf = {t: math.log((len(docs) + 1) / (n + 0.5)) for t, n in df.items()}
    postings: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(terms):
        for t in c:
            postings[t].append(i)
    return terms, idf, postings


def _closest(query: str, terms: list[Counter[str]], idf: dict[str, float], postings: dict[str, list[int]],
             norms: np.ndarray) -> list[int]:
    """Documents by TF-IDF cosine with the query, best first (only those sharing a word)."""
    q = Counter(_WORD.findall(query.lower()))
    score: dict[int, float] = defaultdict(float)
    for t, n in q.items():
        w = idf.get(t)
        if w is None:
            continue
        for i in postings[t]:
            score[i] += n * terms[i][t] * w * w
    return sorted(score, key=lambda i: -score[i] / norms[i])


def _norms(terms: list[Counter[str]], idf: dict[str, float]) -> np.ndarray:
    return np.array([math.sqrt(sum((n * idf[t]) ** 2 for t, n in c.items())) or 1.0 for c in terms])


def scifact_pairs(sample: int = SCIFACT_TUNE_CLAIMS) -> list[Pair]:
    from bench.datasets import DATA

    root = DATA / "beir_scifact"
    corpus = [json.loads(x) for x in (root / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    claims = {str(q["_id"]): q["text"] for q in map(json.loads, (root / "queries.jsonl").read_text(
        encoding="utf-8").splitlines()) if q}
    ids = [str(d["_id"]) for d in corpus]
    at = {d: i for i, d in enumerate(ids)}
    docs = [f"{d['title']}\n{d['text']}" for d in corpus]
    terms, idf, postings = _idf_index(docs)
    norms = _norms(terms, idf)
    out: list[Pair] = []
    for part, file in (("tune", "train.tsv"), ("report", "test.tsv")):
        cited: dict[str, list[str]] = defaultdict(list)
        for line in (root / "qrels" / file).read_text(encoding="utf-8").splitlines()[1:]:
            qid, doc, *_ = line.strip().split("\t")
            if doc in at:
                cited[qid].append(doc)
        chosen = sorted(cited, key=int)
        if part == "tune":
            chosen = sorted(random.Random(SEED).sample(chosen, min(sample, len(chosen))), key=int)
        for qid in chosen:
            claim = claims[qid]
            for doc in cited[qid]:
                out.append(Pair("scifact", part, claim, _abstract(corpus[at[doc]]), True))
            other = next(i for i in _closest(claim, terms, idf, postings, norms) if ids[i] not in cited[qid])
            out.append(Pair("scifact", part, claim, _abstract(corpus[other]), False))
    return out


def _abstract(doc: dict) -> Chunk:
    title = " ".join(str(doc["title"]).split())
    return Chunk(heading=title, text=f"{title}\n{doc['text']}")


def handbook_pairs() -> list[Pair]:
    from models import splits
    from models.judge.pairs import BENCH_QUESTIONS, _jsonl, contains, gold_spans
    from retrieval.sentences import split_sentences

    rows = [*_jsonl(BENCH_QUESTIONS / "handbooks.jsonl"), *_jsonl(BENCH_QUESTIONS / "handbooks-staff.jsonl")]
    rows = [r for r in rows if r.get("gold_path")
            and splits.page_split(str(r["gold_path"])) in (splits.TUNE, splits.REPORT)]
    corpora = sorted({str(r["gold_path"]).split("/")[0] for r in rows})
    chunks: list[tuple[str, Chunk, list[str]]] = []  # (page, chunk, its candidate sentences)
    for corpus in corpora:
        chunks += _handbook_chunks(corpus)
    terms, idf, postings = _idf_index([c.text for _, c, _ in chunks])
    norms = _norms(terms, idf)
    out: list[Pair] = []
    seen: set[str] = set()
    for row in rows:
        path, spans = str(row["gold_path"]), gold_spans(row)
        gold = str(row.get("gold_text") or "")
        holding = [(i, s) for i, (page, _, sentences) in enumerate(chunks) if page == path
                   for s in sentences if any(contains(s, span) for span in spans)]
        if gold and len(holding) > 1:  # the span recurs: the sentence of the gold text
            holding = [h for h in holding if contains(h[1], gold) or contains(gold, h[1])] or holding
        if not holding:
            continue
        i, sentence = holding[0]
        # what a draft quoting it would say: the sentence as written, one sentence, no Markdown
        claim = " ".join(split_sentences(re.sub(r"[*_`#|]+", " ", sentence)))
        if not claim or claim in seen:
            continue
        seen.add(claim)
        part = "tune" if splits.page_split(path) == splits.TUNE else "report"
        page, chunk, _ = chunks[i]
        corpus = page.split("/")[0]
        other = next((j for j in _closest(claim, terms, idf, postings, norms)
                      if chunks[j][0].split("/")[0] == corpus and chunks[j][1].heading != chunk.heading
                      and not any(contains(chunks[j][1].text, span) for span in spans)
                      and not contains(chunks[j][1].text, claim)), None)
        out.append(Pair("handbooks", part, claim, chunk, True))
        if other is not None:
            out.append(Pair("handbooks", part, claim, chunks[other][1], False))
    return out


def _handbook_chunks(corpus: str) -> list[tuple[str, Chunk, list[str]]]:
    """Every chunk of a handbook, read as ingestion and the answerer read it."""
    from bench.datasets import HANDBOOKS
    from graph.answerers.extractive import answer_candidates
    from models.minilm import bundled_model_dir
    from retrieval.chunk import chunk_document, model_token_counter
    from retrieval.parse import parse_bytes

    count = model_token_counter(bundled_model_dir())
    out = []
    for file in sorted((HANDBOOKS / corpus).rglob("*.md")):
        if file.name in ("README.md", "SOURCE.md"):
            continue
        page = file.relative_to(HANDBOOKS).as_posix()
        parsed = parse_bytes(file.read_bytes(), filename=file.name)
        for draft in chunk_document(parsed, count_tokens=count):
            heading = " > ".join(draft.heading_path)
            text = f"{heading}\n{draft.text}" if heading and not draft.text.startswith(heading) else draft.text
            out.append((page, Chunk(heading=heading, text=text), answer_candidates(text)))
    return out


# -- scoring --------------------------------------------------------------------------------------------


def support_scores(pairs: Sequence[Pair]) -> np.ndarray:
    """The validator's reading of each pair: the best of the chunk's shortlisted sentences. Scores are
    kept in bench/out/ per judge version, so a second run (the report after the tune part) reads
    each pair once."""
    from graph.answerers.extractive import answer_candidates
    from graph.answerers.judging import SUPPORT_READS, read_sentences, shortlist
    from models.judge import shared_judge

    judge = shared_judge()
    kept_file = OUT / f"claim-support-{judge.version}.json"
    kept: dict[str, float] = json.loads(kept_file.read_text()) if kept_file.exists() else {}
    out = np.zeros(len(pairs))
    for k, pair in enumerate(pairs):
        key = hashlib.sha256(json.dumps([pair.claim, pair.chunk.heading, pair.chunk.text, SUPPORT_READS]).encode()
                             ).hexdigest()[:24]
        if key not in kept:
            picked = shortlist(pair.claim, [pair.chunk], [answer_candidates(pair.chunk.text)], SUPPORT_READS)
            p = read_sentences(judge, None, pair.claim, "en", [pair.chunk], picked)
            kept[key] = float(np.max(p)) if len(p) else 0.0
        out[k] = kept[key]
    OUT.mkdir(exist_ok=True)
    kept_file.write_text(json.dumps(kept))
    return out


def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Probability that a supported pair outscores an unsupported one (ties count half)."""
    pos, neg = scores[labels], scores[~labels]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def rates(scores: np.ndarray, labels: np.ndarray, threshold: float) -> tuple[float, float]:
    """(accepted share of the supported pairs, rejected share of the unsupported ones)."""
    accept = scores >= threshold
    return float(accept[labels].mean()), float((~accept[~labels]).mean())


def choose(scores: np.ndarray, labels: np.ndarray, sources: np.ndarray) -> float:
    """The tune part's threshold: the highest on GRID that still accepts KEEP_QUOTES of the supported
    handbook quotes and KEEP_CITED of SciFact's cited pairs."""
    quotes = scores[labels & (sources == "handbooks")]
    cited = scores[labels & (sources == "scifact")]
    ok = [t for t in GRID if (quotes >= t).mean() >= KEEP_QUOTES and (cited >= t).mean() >= KEEP_CITED]
    return max(ok) if ok else GRID[0]


def report(pairs: Sequence[Pair], scores: np.ndarray, threshold: float, parts: Sequence[str]) -> None:
    labels = np.array([p.supported for p in pairs])
    sources = np.array([p.source for p in pairs])
    part_of = np.array([p.part for p in pairs])
    print(f"{'part':<7} {'set':<10} {'pairs (+/-)':>12} {'AUROC':>6} {'accept +':>9} {'reject -':>9}"
          f"   (threshold {threshold:.2f})")
    for part in parts:
        for source in ("scifact", "handbooks", "both"):
            mask = (part_of == part) & ((sources == source) if source != "both" else True)
            s, lab = scores[mask], labels[mask]
            if not len(s):
                continue
            accepted, rejected = rates(s, lab, threshold)
            print(f"{part:<7} {source:<10} {f'{int(lab.sum())}/{int((~lab).sum())}':>12} {auroc(s, lab):6.3f}"
                  f" {accepted:9.3f} {rejected:9.3f}")


def grid(pairs: Sequence[Pair], scores: np.ndarray, part: str, thresholds: Sequence[float] = SHOWN) -> None:
    """Accept rates per threshold on one part: how the choice trades one error for the other."""
    mask = np.array([p.part == part for p in pairs])
    groups = [(f"{source} {'+' if supported else '-'}", mask & np.array(
        [p.source == source and p.supported == supported for p in pairs]))
        for source in ("scifact", "handbooks") for supported in (True, False)]
    print(f"accepted share, {part} part: " + "  ".join(f"{name}" for name, _ in groups))
    for t in thresholds:
        print(f"  {t:4.2f}  " + "  ".join(f"{(scores[m] >= t).mean():.3f}".rjust(len(name))
                                          for name, m in groups if m.any()))


def main(argv: Sequence[str] | None = None) -> None:
    from models.judge import shared_judge

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tune-only", action="store_true", help="read and print the tune part only")
    parser.add_argument("--sample", type=int, default=SCIFACT_TUNE_CLAIMS, help="SciFact tune claims")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    pairs = [*scifact_pairs(args.sample), *handbook_pairs()]
    if args.tune_only:
        pairs = [p for p in pairs if p.part == "tune"]
    scores = support_scores(pairs)
    tune = np.array([p.part == "tune" for p in pairs])
    labels = np.array([p.supported for p in pairs])
    sources = np.array([p.source for p in pairs])
    chosen = choose(scores[tune], labels[tune], sources[tune])
    shipped = shared_judge().support_at
    tune_auroc = auroc(scores[tune], labels[tune])
    print(f"tune part: threshold by the rule {chosen:.2f} (keeps {KEEP_QUOTES:.0%} of the quotes, {KEEP_CITED:.0%}"
          " of SciFact's cited pairs);"
          f" AUROC {tune_auroc:.3f} ({'useful' if tune_auroc >= USEFUL_AUROC else 'under'} {USEFUL_AUROC})")
    print(f"shipped support_at (weights/calibration.json): {shipped:.2f}")
    report(pairs, scores, shipped, ["tune"] if args.tune_only else ["tune", "report"])
    if chosen != shipped:
        print()
        report(pairs, scores, chosen, ["tune"])
    print()
    grid(pairs, scores, "tune")
    print(f"\n{len(pairs)} pairs in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
