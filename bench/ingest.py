"""Ingestion throughput and idempotence (issue 2).

The GitLab handbook goes through the real hand-over and worker (`submit_bytes` → `run_pending`:
parse, chunk, catalog, embed, index, confirm, publish) into a home on disk (the shared bench home
is memory-backed; a real CAIRN_HOME is not). Every encode call the pipeline makes is recorded
(inputs and time); the inputs of a systematic sample of pages are encoded again straight through
the models ("raw") right after the pipeline ingested each of them, and the ratio compares pipeline
and raw on those same pages under the same load.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import datasets as ds
from bench.report import log, table, target
from bench.workspace import Doc, EncodeCall, Workspace, make_settings, record_encodes
from bot.services import Services, open_services, shared_embedder
from retrieval.embed import Embedder

EDIT = b"\n\n## Benchmark edit\n\nThis paragraph was added by the benchmark to make a new version.\n"
RAW_EVERY = int(os.environ.get("CAIRN_BENCH_RAW_EVERY", "3"))  # raw re-encode of every 3rd page's inputs
NO_ML_EVERY = int(os.environ.get("CAIRN_BENCH_NO_ML_EVERY", "4"))  # the multilingual-off run: every 4th page


def raw_encode(embedder: Embedder, calls: Sequence[EncodeCall]) -> dict[str, float]:
    """Re-encode exactly what the pipeline encoded, call by call, straight through the models."""
    took = {"minilm": 0.0, "use": 0.0}
    for call in calls:
        t0 = time.perf_counter()
        if call.model == "minilm":
            embedder.model.encode(call.texts, **call.kwargs)
        else:
            embedder.use.encode(list(call.texts))
        took[call.model] += time.perf_counter() - t0
    return took


def raw_chunks(embedder: Embedder, texts: list[str], batch_size: int) -> float:
    t0 = time.perf_counter()
    embedder.model.encode(texts, batch_size=int(batch_size), normalize_embeddings=True, show_progress_bar=False,
                          convert_to_numpy=True)
    return time.perf_counter() - t0


async def _count(svc: Services, sql: str, args: tuple[object, ...] = ()) -> int:
    async with svc.db.execute(sql, args) as cur:
        row = await cur.fetchone()
    return int(row[0]) if row and row[0] is not None else 0


async def measure(ws: Workspace, svc: Services, docs: list[Doc], label: str, *, raw_every: int) -> list[object]:
    """Page by page: the pipeline ingests a page, and for every `raw_every`-th page the models then
    encode that page's inputs again at once, so both see the same load on the machine."""
    embedder = svc.embedder
    chunks = pipeline_s = encode_s = 0.0
    s_chunks = s_pipeline = s_encode = t_chunks = t_minilm = t_use = 0.0
    n_minilm = n_use = 0
    batch = 32
    for i, doc in enumerate(docs):
        with ws.memo_recording_only(), record_encodes(embedder) as calls:
            run = await ws.ingest([doc], tenant="eval", services=svc)
        assert run.statuses() == {"published": 1}, run.outcomes
        enc = sum(c.seconds for c in calls)
        chunks += run.chunks
        pipeline_s += run.seconds
        encode_s += enc
        n_minilm += sum(len(c.texts) for c in calls if c.model == "minilm")
        n_use += sum(len(c.texts) for c in calls if c.model == "use")
        if i % raw_every:
            continue
        batch = next((c.kwargs.get("batch_size", batch) for c in calls if c.model == "minilm"), batch)
        texts = [r["text"] for r in await _rows(svc, doc.doc_id)]
        assert len(texts) == run.chunks, (len(texts), run.chunks)
        s_chunks += run.chunks
        s_pipeline += run.seconds
        s_encode += enc
        t_chunks += raw_chunks(embedder, texts, batch)
        raw = raw_encode(embedder, calls)
        t_minilm += raw["minilm"]
        t_use += raw["use"]
    log(f"{label}: pipeline {pipeline_s:.1f}s for {len(docs)} pages / {chunks:.0f} chunks "
        f"({encode_s:.1f}s of it inside the encoders)")
    s_rate, t_all = s_chunks / s_pipeline, t_minilm + t_use
    return [label, len(docs), int(chunks), n_minilm - int(chunks), n_use, f"{pipeline_s:.1f}",
            f"{chunks / pipeline_s:.2f}", f"{100 * (1 - encode_s / pipeline_s):.0f}%",
            f"{len(docs[::raw_every])} / {s_chunks:.0f}", f"{s_rate:.2f}",
            f"{s_chunks / t_chunks:.2f}", target(s_rate / (s_chunks / t_chunks), 0.85, digits=2),
            f"{s_chunks / t_all:.2f} ({t_minilm:.0f}s + {t_use:.0f}s)", target(s_rate / (s_chunks / t_all), 0.85, digits=2),
            f"{s_encode / s_pipeline:.2f}"]


async def _rows(svc: Services, doc_id: str | None) -> list[Any]:
    async with svc.db.execute(
        "SELECT c.text FROM chunks c JOIN documents d ON d.tenant_id=c.tenant_id AND d.doc_id=c.doc_id"
        " AND d.current_version=c.version WHERE c.tenant_id='eval' AND c.doc_id=? ORDER BY c.seq", (doc_id,)) as cur:
        return list(await cur.fetchall())


async def section_ingest(ws: Workspace) -> None:
    docs = ds.handbook_docs(("gitlab",))
    disk = Path(tempfile.mkdtemp(prefix="cairn-bench-ingest-", dir=os.environ.get("CAIRN_BENCH_INGEST_TMP")))
    try:
        async with open_services(make_settings(disk / "home", ws.access_file), embedder=ws.embedder) as svc:
            rows = [await measure(ws, svc, docs, "multilingual on (default)", raw_every=RAW_EVERY)]
            checks = await idempotence(ws, svc, docs)
        settings = make_settings(disk / "no-ml-home", ws.access_file, CAIRN_MULTILINGUAL_DENSE=False)
        shared_embedder(settings).warm_up()
        async with open_services(settings) as svc2:
            rows.append(await measure(ws, svc2, docs[::NO_ML_EVERY], f"multilingual off (every {NO_ML_EVERY}th page)",
                                      raw_every=1))
    finally:
        shutil.rmtree(disk, ignore_errors=True)

    table(f"Ingestion throughput — GitLab handbook ({len(docs)} pages) through the real pipeline, home on disk ({disk.parent})",
          ["run", "pages", "chunks", "MiniLM texts beyond the chunks", "USE texts", "pipeline s", "chunks/s",
           "pipeline time outside the encoders", "raw sample: pages / chunks", "pipeline chunks/s on sample",
           "raw MiniLM chunks-only chunks/s", "ratio vs chunks-only", "raw everything chunks/s (MiniLM s + USE s)",
           "ratio vs everything", "encoder share of the same jobs"],
          rows,
          note="Pipeline = submit (hash, raw copy, job row) + worker (parse, chunk, catalog, embed, index upsert + "
               "confirm, publish, cleanup), one page at a time; models loaded and warm beforehand.\n"
               f"Ratios are computed on the sampled pages (every {RAW_EVERY}rd page of the default run, every page of "
               "the second run), each re-encoded raw right after the pipeline ingested it (same load on the "
               "machine for both).\n"
               "Raw chunks-only = `embedder.model.encode(chunk_texts, batch_size=32)` over each sampled page's chunks.\n"
               "Raw everything = every encode call those jobs made (MiniLM chunk passes, which also give the "
               "English sentence vectors, and their windows past MiniLM's 256 tokens; USE chunks and non-English "
               "sentences), replayed with the same inputs and arguments.\n"
               "Encoder share = time inside the encode calls ÷ pipeline time, both measured during the same jobs: "
               "the ratio vs everything the pipeline would reach if raw encoding ran as fast as it did inside the "
               "pipeline (robust to other load on the machine, which the replay is not).")
    table("Re-ingestion and edits (multilingual on, same disk home)", ["check", "result", "expected", "ok"], checks)


async def idempotence(ws: Workspace, svc: Services, docs: list[Doc]) -> list[list[object]]:
    versions = "SELECT COUNT(*) FROM versions WHERE tenant_id='eval'"
    before_v, before_p = await _count(svc, versions), svc.index.count()
    again = await ws.ingest(docs, tenant="eval", services=svc)
    after_v, after_p = await _count(svc, versions), svc.index.count()
    gold = {Path(str(q.get("gold_path"))).with_suffix("").as_posix() for q in ds.handbook_questions()}
    victim = next(d for d in docs if d.doc_id not in gold)
    old_chunks = await _count(svc, "SELECT chunk_count FROM versions WHERE tenant_id='eval' AND doc_id=? "
                                   "AND state='published'", (victim.doc_id,))
    edited = await ws.ingest([Doc(victim.doc_id, victim.filename, victim.data + EDIT)], tenant="eval", services=svc)
    final_v, final_p = await _count(svc, versions), svc.index.count()
    published = await _count(svc, "SELECT COUNT(*) FROM versions WHERE tenant_id='eval' AND doc_id=? "
                                  "AND state='published'", (victim.doc_id,))
    current = await _count(svc, "SELECT CAST(substr(current_version, 2) AS INTEGER) FROM documents "
                                "WHERE tenant_id='eval' AND doc_id=?", (victim.doc_id,))
    unchanged = again.statuses().get("unchanged", 0)
    return [
        ["re-ingest same directory: files unchanged", f"{unchanged}/{len(docs)}", f"{len(docs)}/{len(docs)}",
         unchanged == len(docs)],
        ["versions before → after re-ingest", f"{before_v} → {after_v}", "no change", before_v == after_v],
        ["index points before → after re-ingest", f"{before_p} → {after_p}", "no change", before_p == after_p],
        [f"edit one file ({victim.filename}): new versions", final_v - after_v, 1, final_v - after_v == 1],
        ["edit: job outcome", ",".join(f"{k}={v}" for k, v in edited.statuses().items()), "published=1",
         edited.statuses() == {"published": 1}],
        ["edit: published versions of that document / current version", f"{published} / v{current}", "1 / v2",
         published == 1 and current == 2],
        ["edit: index points after (old version's removed)", f"{after_p} → {final_p}",
         f"{after_p} − {old_chunks} + {edited.chunks}", final_p == after_p - old_chunks + edited.chunks],
    ]
