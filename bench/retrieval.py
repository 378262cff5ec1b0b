"""Retrieval quality sections (issue 3): SQuAD 2.0, XQuAD, ARCD and the labelled handbook questions.

Hybrid, dense-only and BM25-only side by side through `Searcher.search(query, scope, mode=…)`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench import datasets as ds
from bench.evaluate import MODES, Outcome, mode_table, run_questions, separation
from bench.report import auroc, log, percentile, table, target
from bench.workspace import Workspace

# -- corpus builders (each runs once per bench run) ----------------------------------------------------


async def _ingest_logged(ws: Workspace, docs: Sequence[ds.Doc], tenant: str, label: str) -> int:
    have = {r[0] for r in await ws.sql("SELECT doc_id FROM documents WHERE tenant_id=?", (tenant,))}
    todo = [d for d in docs if d.doc_id not in have]
    if todo:
        run = await ws.ingest(todo, tenant=tenant)
        log(f"ingested {label}: {len(todo)} docs, {run.chunks} chunks in {run.seconds:.0f}s → tenant {tenant}")
    return len(docs)


async def build_handbooks(ws: Workspace) -> int:
    return await _ingest_logged(ws, ds.handbook_docs(), "eval", "handbooks (gitlab + sourcegraph + basecamp)")


async def build_squad(ws: Workspace) -> int:
    return await _ingest_logged(ws, ds.squad_docs(), "squad",
                                f"SQuAD 2.0 dev articles 0–{ds.SQUAD_INDEXED_ARTICLES - 1}")


async def build_xq_en(ws: Workspace) -> int:
    return await _ingest_logged(ws, ds.xquad_docs("en"), "xq_en", "XQuAD English paragraphs")


async def build_xq_ar(ws: Workspace) -> int:
    return await _ingest_logged(ws, ds.xquad_docs("ar"), "xq_ar", "XQuAD Arabic paragraphs")


async def build_arcd(ws: Workspace) -> int:
    return await _ingest_logged(ws, ds.arcd_docs(), "arcd", "ARCD test paragraphs")


BUILDERS = {"handbooks": build_handbooks, "squad": build_squad, "xq_en": build_xq_en, "xq_ar": build_xq_ar,
            "arcd": build_arcd}


# -- SQuAD 2.0 -------------------------------------------------------------------------------------------


def _baselines(outcomes: Sequence[Outcome]) -> dict[str, list[float]]:
    """The reference scores the issue quotes, recomputed on the same candidates: max chunk cosine,
    and best sentence cosine within the four chunks closest by chunk cosine (MiniLM)."""
    from retrieval.rerank import unpack_vectors

    chunk_best, sent_best = [], []
    for o in outcomes:
        rp = o.replay
        if not rp or not rp["candidates"] or rp["query_vecs"].get("dense") is None:
            chunk_best.append(-1.0)
            sent_best.append(-1.0)
            continue
        q = np.asarray(rp["query_vecs"]["dense"], dtype=np.float32)
        rows = []
        for c in rp["candidates"]:
            row = c.vectors
            if row is None:
                continue
            cv = unpack_vectors(row["chunk_vec"], row["dim"])
            sv = unpack_vectors(row["sentence_vecs"], row["sent_dim"])
            cos = float(cv[0] @ q) if cv is not None else -1.0
            best = float((sv @ q).max()) if sv is not None and len(sv) and sv.shape[1] == len(q) else cos
            rows.append((cos, best))
        rows.sort(reverse=True)
        chunk_best.append(rows[0][0] if rows else -1.0)
        sent_best.append(max(b for _, b in rows[:4]) if rows else -1.0)
    return {"chunk": chunk_best, "sentence": sent_best}


async def section_squad(ws: Workspace) -> None:
    await ws.ensure("squad")
    floor = ws.services.searcher.min_score
    questions = ds.squad_questions()
    outcomes = await run_questions(ws, questions, "squad", label="SQuAD 2.0")
    ws.results["squad"] = outcomes
    n_docs = len(ds.squad_docs())
    mode_table(
        f"SQuAD 2.0 dev — {n_docs} paragraphs of articles 0–{ds.SQUAD_INDEXED_ARTICLES - 1} indexed; "
        "questions: answerable from indexed articles vs out-of-corpus (articles not indexed)",
        [o for o in outcomes if o.question.kind in ("answerable", "ooc")], floor=floor, kinds_label="out-of-corpus")
    mode_table("SQuAD 2.0 dev — adversarial unanswerable (is_impossible, from indexed articles)",
               [o for o in outcomes if o.question.kind in ("answerable", "adversarial")], floor=floor,
               kinds_label="adversarial")

    hyb = [o for o in outcomes if o.mode == "hybrid"]
    ans = [o for o in hyb if o.question.kind == "answerable"]
    ooc = [o for o in hyb if o.question.kind == "ooc"]
    adv = [o for o in hyb if o.question.kind == "adversarial"]
    base = _baselines(hyb)
    idx = {id(o): i for i, o in enumerate(hyb)}

    def auc_of(scores: list[float], pos: list[Outcome], neg: list[Outcome]) -> float:
        return auroc([scores[idx[id(o)]] for o in pos], [scores[idx[id(o)]] for o in neg])

    rows = [
        ["reranker top score (this build)", separation(ans, ooc), separation(ans, adv)],
        ["max chunk cosine, MiniLM (re-measured)", auc_of(base["chunk"], ans, ooc), auc_of(base["chunk"], ans, adv)],
        ["best sentence in top-4 chunks (re-measured)", auc_of(base["sentence"], ans, ooc),
         auc_of(base["sentence"], ans, adv)],
        ["quoted baseline: chunk cosine", 0.954, 0.66],
        ["quoted baseline: best sentence in top-4", 0.967, None],
    ]
    table("SQuAD 2.0 — AUROC of the top score (hybrid): does the score separate answerable from not?",
          ["score", "answerable vs out-of-corpus", "answerable vs adversarial"], rows,
          note=f"{len(ans)} answerable, {len(ooc)} out-of-corpus, {len(adv)} adversarial questions.")
    answered = sum(not o.abstained for o in ans) / len(ans)
    abstained = sum(o.abstained for o in ooc) / len(ooc)
    adv_abst = sum(o.abstained for o in adv) / len(adv)
    table(f"SQuAD 2.0 — operating point at the configured floor RERANK_MIN_SCORE={floor:.2f} (hybrid)",
          ["measure", "value vs target"],
          [["answered when answerable", target(answered, 0.90)],
           ["abstained when out of corpus", target(abstained, 0.95)],
           ["abstained when adversarial (no target; for information)", f"{adv_abst:.3f}"]])


# -- XQuAD + ARCD (and Arabic questions that must be refused) ---------------------------------------------


async def section_xquad(ws: Workspace) -> None:
    for name in ("xq_en", "xq_ar"):
        await ws.ensure(name)
    floor = ws.services.searcher.min_score
    all_out: list[Outcome] = []
    rows = []
    for direction, tenant in (("en-en", "xq_en"), ("ar-en", "xq_en"), ("ar-ar", "xq_ar")):
        qs = ds.xquad_questions(direction)
        outs = await run_questions(ws, qs, tenant, label=f"XQuAD {direction}")
        all_out += [replace(o, tenant=f"{tenant}:{direction}") for o in outs]
        for mode in MODES:
            mine = [o for o in outs if o.mode == mode]
            r4 = sum(1 for o in mine if o.rank and o.rank <= 4) / len(mine)
            mrr = sum(1 / o.rank for o in mine if o.rank) / len(mine)
            ans = sum(not o.abstained for o in mine) / len(mine)
            ms = [o.ms for o in mine]
            rows.append([f"{direction} (question-context)", mode, len(mine), r4, mrr, ans,
                         percentile(ms, 50), percentile(ms, 95)])
    ws.results["xquad"] = all_out
    table(f"XQuAD — {len(ds.xquad_docs('en'))} paragraphs per language; the same {len(qs)} sampled question ids "
          "in each direction",
          ["direction", "mode", "n", "Recall@4", "MRR@10", f"answered @floor {floor:.2f}", "p50 ms", "p95 ms"],
          rows, note="ar-en: Arabic question over the English paragraphs (cross-lingual, multilingual vector); "
                     "BM25-only cannot cross languages by construction.")


async def section_arcd(ws: Workspace) -> None:
    await ws.ensure("arcd")
    floor = ws.services.searcher.min_score
    qs = ds.arcd_questions()
    outs = await run_questions(ws, qs, "arcd", label="ARCD")
    ws.results["arcd"] = outs
    mode_table(f"ARCD (test split) — {len(ds.arcd_docs())} Arabic paragraphs, {len(qs)} sampled Arabic questions",
               outs, floor=floor, note="Arabic BM25 (sparse_ar, Snowball stemmer + stopwords) is the bm25 row.")
    # Arabic questions that must be refused: asked of collections that do not hold the answer.
    for name in ("xq_en", "xq_ar", "handbooks"):
        await ws.ensure(name)
    ooc_rows, ooc_all = [], []
    for tenant, questions in ds.arabic_ooc_questions().items():
        outs_ooc = await run_questions(ws, questions, tenant, modes=("hybrid",), label=f"Arabic OOC → {tenant}")
        ooc_all += outs_ooc
        ooc_rows.append([tenant, len(outs_ooc), sum(o.abstained for o in outs_ooc) / len(outs_ooc)])
    ws.results["arabic_ooc"] = ooc_all
    table(f"Arabic questions that must be refused (hybrid, floor {floor:.2f})",
          ["asked of tenant", "n", "abstained"], ooc_rows,
          note="xq_en/xq_ar: ARCD questions (Arabic Wikipedia topics) asked of XQuAD; arcd: XQuAD Arabic "
               "questions asked of ARCD; eval: XQuAD Arabic questions asked of the English handbooks.")


# -- handbooks ------------------------------------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split())


async def handbook_gold(ws: Workspace, lines: list[dict[str, object]]) -> tuple[list[ds.Question], dict[str, int]]:
    """Gold passage = a chunk of the gold document that contains gold_text; if the text was split
    across chunks, a chunk holding its first or second half; failing that, any chunk of the doc."""
    by_doc: dict[str, list[tuple[str, str]]] = {}
    for row in await ws.current_chunks("eval"):
        by_doc.setdefault(row["doc_id"], []).append((row["chunk_id"], _norm(row["text"])))
    how = {"whole text": 0, "split text": 0, "doc only": 0, "doc missing": 0, "must abstain": 0}
    questions = []
    for line in lines:
        gold_path = line.get("gold_path")
        corpus = str(line.get("corpus", ""))
        if not gold_path:
            how["must abstain"] += 1
            questions.append(ds.Question(str(line["id"]), str(line["question"]), "null", meta=corpus))
            continue
        doc_id = Path(str(gold_path)).with_suffix("").as_posix()
        chunks = by_doc.get(doc_id, [])
        want = _norm(str(line.get("gold_text") or ""))
        words = want.split()
        whole = {cid for cid, text in chunks if want and want in text}
        if whole:
            gold, kind = whole, "whole text"
        else:
            half = len(words) // 2
            parts = [" ".join(words[:half]), " ".join(words[half:])] if half >= 3 else []
            split = {cid for cid, text in chunks if any(p and p in text for p in parts)}
            gold, kind = (split, "split text") if split else ({cid for cid, _ in chunks}, "doc only")
        if not chunks:
            kind = "doc missing"
        how[kind] += 1
        questions.append(ds.Question(str(line["id"]), str(line["question"]), "answerable",
                                     gold_docs=frozenset({doc_id}), gold_chunks=frozenset(gold), meta=corpus))
    return questions, how


async def section_handbooks(ws: Workspace) -> None:
    lines = ds.handbook_questions()
    if not lines:
        print(f"\n(no labelled handbook questions at {ds.QUESTIONS}: section skipped)")
        return
    await ws.ensure("handbooks")
    floor = ws.services.searcher.min_score
    questions, how = await handbook_gold(ws, lines)
    outs = await run_questions(ws, questions, "eval", label="handbooks")
    ws.results["handbooks"] = outs
    n_chunks = len(await ws.current_chunks("eval"))
    mode_table(f"Handbooks — {len(ds.handbook_docs())} pages ({n_chunks} chunks) of GitLab + Sourcegraph + "
               f"Basecamp in one tenant; {len(lines)} labelled questions", outs, floor=floor,
               kinds_label="gold_path null",
               note="Gold passage = a retrieved chunk of the gold document containing gold_text "
                    f"(matched after lower-casing and dropping punctuation): {how['whole text']} whole, "
                    f"{how['split text']} split across chunks (half matched), {how['doc only']} doc-level only, "
                    f"{how['doc missing']} gold document not ingested.")
    hyb = [o for o in outs if o.mode == "hybrid"]
    rows = []
    for corpus in sorted({o.question.meta for o in hyb}):
        mine = [o for o in hyb if o.question.meta == corpus]
        ans = [o for o in mine if not o.question.must_abstain]
        neg = [o for o in mine if o.question.must_abstain]
        rows.append([corpus, len(ans), sum(1 for o in ans if o.rank and o.rank <= 4) / max(len(ans), 1),
                     sum(not o.abstained for o in ans) / max(len(ans), 1), len(neg),
                     sum(o.abstained for o in neg) / len(neg) if neg else None])
    ans = [o for o in hyb if not o.question.must_abstain]
    neg = [o for o in hyb if o.question.must_abstain]
    rows.append(["all", len(ans), sum(1 for o in ans if o.rank and o.rank <= 4) / len(ans),
                 sum(not o.abstained for o in ans) / len(ans), len(neg),
                 sum(o.abstained for o in neg) / len(neg) if neg else None])
    table(f"Handbooks by corpus (hybrid, floor {floor:.2f}); AUROC answerable vs null = {separation(ans, neg):.3f}",
          ["corpus", "answerable n", "Recall@4", "answered", "null n", "abstained"], rows)
    misses = [o for o in hyb if not o.question.must_abstain and not (o.rank and o.rank <= 4)]
    if misses:
        print("Hybrid misses (gold not in top 4): " + ", ".join(
            f"{o.question.qid}{'' if o.rank is None else f' (rank {o.rank})'}" for o in misses))
    wrong = [o for o in hyb if o.question.must_abstain and not o.abstained]
    if wrong:
        print("Null questions answered anyway: " + ", ".join(
            f"{o.question.qid} ({o.top_score:.3f}, {o.top_doc})"
            for o in wrong))
