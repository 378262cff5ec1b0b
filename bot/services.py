"""Wiring: the one place services are built from Settings and handed to entry points."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiosqlite
from langgraph.graph.state import CompiledStateGraph

from bot.controls import Controls
from bot.metrics import Metrics
from bot.settings import Settings
from graph.answerers import Answerer, build_answerer
from graph.builder import build_graph
from graph.checkpoint import open_checkpointer
from graph.runner import ConversationRunner
from retrieval.conflicts import detect_conflicts
from retrieval.embed import Embedder
from retrieval.index import VectorIndex, open_index
from retrieval.ingest import Ingestor
from retrieval.rerank import build_reranker
from retrieval.search import Searcher
from store.access import AccessPolicy
from store.catalog import Catalog
from store.conversations import ConversationStore
from store.db import open_db
from store.jobs import Jobs

_EMBEDDERS: dict[tuple[bool, str], Embedder] = {}


def shared_embedder(settings: Settings) -> Embedder:
    """One loaded model per process (loading costs seconds; tests share it too)."""
    key = (settings.multilingual_dense, str(settings.rerank_model))
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = Embedder(multilingual=settings.multilingual_dense)
    return _EMBEDDERS[key]


@dataclass
class Services:
    settings: Settings
    db: aiosqlite.Connection
    access: AccessPolicy
    catalog: Catalog
    jobs: Jobs
    index: VectorIndex
    embedder: Embedder
    searcher: Searcher
    ingestor: Ingestor
    metrics: Metrics
    controls: Controls
    conversations: ConversationStore
    answerer: Answerer
    graph: CompiledStateGraph
    runner: ConversationRunner


@asynccontextmanager
async def open_services(settings: Settings, *, embedder: Embedder | None = None) -> AsyncIterator[Services]:
    settings.cairn_home.mkdir(parents=True, exist_ok=True)
    access = AccessPolicy.load(settings.access_file)
    db = await open_db(settings.db_path)
    embedder = embedder or shared_embedder(settings)
    try:
        index = open_index(path=settings.index_path, url=settings.qdrant_url, api_key=settings.qdrant_api_key,
                           collection=settings.qdrant_collection, dense_names=embedder.dense_names)
    except Exception:
        await db.close()
        raise
    try:
        catalog = Catalog(db)
        await catalog.sync_tenants(tenants={t: sorted(g) for t, g in access.tenants.items()})
        jobs = Jobs(db, max_attempts=settings.job_max_attempts)
        metrics = Metrics()
        controls = Controls(db, env_paused=settings.paused_kinds, cache_s=settings.controls_cache_s)
        searcher = Searcher(index=index, catalog=catalog, embedder=embedder,
                            reranker=build_reranker(settings.rerank_model), min_score=settings.rerank_min_score,
                            leg_timeout_s=settings.leg_timeout_s, rerank_timeout_s=settings.rerank_timeout_s,
                            metrics=metrics)
        ingestor = Ingestor(catalog=catalog, jobs=jobs, index=index, embedder=embedder,
                            raw_root=settings.raw_path, max_bytes=settings.max_file_bytes,
                            chunk_tokens=settings.chunk_tokens, chunk_overlap=settings.chunk_overlap,
                            allowed_groups=access.groups_of, min_free_mb=settings.min_free_disk_mb)
        conversations = ConversationStore(db)
        answerer = build_answerer(embedder=embedder, stored_vectors=lambda ids: catalog.load_vectors(chunk_ids=ids),
                                  prepared_vectors=lambda ids: catalog.load_answer_vectors(chunk_ids=ids),
                                  chat_model=settings.chat_model,
                                  base_url=settings.openai_base_url, api_key=settings.openai_api_key,
                                  timeout_s=settings.llm_timeout_s)
        async with open_checkpointer(settings.checkpoint_path) as checkpointer:
            graph = build_graph(checkpointer, searcher=searcher, answerer=answerer, conversations=conversations,
                                escalation_deadline_hours=settings.escalation_deadline_hours,
                                is_paused=controls.is_paused,
                                conflict_check=lambda q, ps: detect_conflicts(q, ps, terms_of=embedder.terms))
            runner = ConversationRunner(graph=graph, conversations=conversations, answerer=answerer,
                                        on_turn=metrics.record_turn)
            yield Services(settings=settings, db=db, access=access, catalog=catalog, jobs=jobs, index=index,
                           embedder=embedder, searcher=searcher, ingestor=ingestor,
                           metrics=metrics, controls=controls,
                           conversations=conversations, answerer=answerer, graph=graph, runner=runner)
    finally:
        index.close()
        await db.close()


# -- the server's presence file: how a CLI learns that `cairn serve` owns the index ----------------


def server_file(settings: Settings) -> Path:
    return settings.cairn_home / "server.json"


def running_server(settings: Settings) -> dict[str, object] | None:
    path = server_file(settings)
    try:
        info = json.loads(path.read_text())
        os.kill(int(info["pid"]), 0)
    except (OSError, ValueError, KeyError):
        return None
    return info
