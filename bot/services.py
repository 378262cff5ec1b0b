"""Wiring: the one place services are built from Settings and handed to entry points."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.settings import Settings
from store.access import AccessPolicy
from store.catalog import Catalog
from store.controls import Controls
from store.conversations import ConversationStore
from store.db import open_db
from store.jobs import Jobs
from store.proposals import ProposedAnswers
from store.relays import Relays
from store.reports import EscalationReports
from store.run_claims import RunClaims
from store.sources import Sources

# The models, the graph and the LLM client are imported where they are built, not here: commands
# that only read the database (`cairn docs`, `cairn jobs`, `--help`) never pay for torch or langgraph.
if TYPE_CHECKING:
    import aiosqlite
    from langgraph.graph.state import CompiledStateGraph

    from bot.metrics import Metrics
    from escalations.classifier import TopicClassifier
    from escalations.desk import EscalationDesk
    from escalations.notifier import Notifier
    from escalations.taxonomy import Taxonomy
    from graph.answerers import Answerer
    from graph.runner import ConversationRunner
    from retrieval.embed import Embedder
    from retrieval.index import VectorIndex
    from retrieval.ingest import Ingestor
    from retrieval.search import Searcher

_EMBEDDERS: dict[tuple[bool, str], Embedder] = {}


def shared_embedder(settings: Settings) -> Embedder:
    """One loaded model per process (loading costs seconds; tests share it too)."""
    from retrieval.embed import Embedder

    key = (settings.multilingual_dense, str(settings.rerank_model))
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = Embedder(multilingual=settings.multilingual_dense)
    return _EMBEDDERS[key]


def build_topic_classifier(settings: Settings, *, embedder: Embedder | None, taxonomy: Taxonomy) -> TopicClassifier:
    """The escalation classifier: the chat model when one is configured and not paused, else embeddings."""
    from escalations.classifier import EmbeddingTopicClassifier, LLMTopicClassifier

    if settings.chat_model and "llm" not in settings.paused_kinds:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(base_url=settings.openai_base_url, api_key=settings.openai_api_key or "none",
                             timeout=settings.llm_timeout_s, max_retries=0)
        return LLMTopicClassifier(client=client, model=settings.chat_model, taxonomy=taxonomy)
    if embedder is None:
        raise ValueError("the offline classifier needs the embedding model")
    return EmbeddingTopicClassifier(embedder=embedder, taxonomy=taxonomy)


@dataclass
class Store:
    """The database alone: what read commands and SQLite-only work need (no index, no models), so they
    run while `cairn serve` holds the embedded index."""

    settings: Settings
    db: aiosqlite.Connection
    catalog: Catalog
    jobs: Jobs
    conversations: ConversationStore
    reports: EscalationReports
    runs: RunClaims
    controls: Controls
    sources: Sources
    relays: Relays
    proposals: ProposedAnswers


def _store(settings: Settings, db: aiosqlite.Connection, *, controls_cache_s: float | None = None) -> Store:
    conversations = ConversationStore(db)
    cache_s = settings.controls_cache_s if controls_cache_s is None else controls_cache_s
    return Store(settings=settings, db=db, catalog=Catalog(db), jobs=Jobs(db, max_attempts=settings.job_max_attempts),
                 conversations=conversations, reports=EscalationReports(db, conversations), runs=RunClaims(db),
                 controls=Controls(db, env_paused=settings.paused_kinds, cache_s=cache_s), sources=Sources(db),
                 relays=Relays(db), proposals=ProposedAnswers(db))


@dataclass
class Services:
    settings: Settings
    db: aiosqlite.Connection
    store: Store
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
async def open_services(settings: Settings, *, embedder: Embedder | None = None,
                        warm: bool = True) -> AsyncIterator[Services]:
    """Everything a turn needs. With `warm` (commands that search or answer) the models and index legs
    are loaded before this yields, not by the first question; without it they load on first use."""
    from bot.metrics import Metrics
    from graph.answerers import build_answerer
    from graph.builder import build_graph
    from graph.checkpoint import open_checkpointer
    from graph.followup import embedding_follow_up
    from graph.runner import ConversationRunner
    from models.judge import shared_judge
    from retrieval.conflicts import detect_conflicts
    from retrieval.index import open_index
    from retrieval.ingest import Ingestor
    from retrieval.rerank import build_reranker
    from retrieval.search import Searcher

    settings.cairn_home.mkdir(parents=True, exist_ok=True)
    access = AccessPolicy.load(settings.access_file)
    db = await open_db(settings.database)
    embedder = embedder or shared_embedder(settings)
    try:
        index = open_index(path=settings.index_path, url=settings.qdrant_url, api_key=settings.qdrant_api_key,
                           collection=settings.qdrant_collection, dense_names=embedder.dense_names)
    except Exception:
        await db.close()
        raise
    try:
        store = _store(settings, db)
        catalog, jobs, conversations, controls = store.catalog, store.jobs, store.conversations, store.controls
        await catalog.sync_tenants(tenants={t: sorted(g) for t, g in access.tenants.items()})
        await store.sources.setup()
        await store.relays.setup()
        await store.proposals.setup()
        metrics = Metrics()
        searcher = Searcher(index=index, catalog=catalog, embedder=embedder,
                            reranker=build_reranker(settings.rerank_model), min_score=settings.rerank_min_score,
                            leg_timeout_s=settings.leg_timeout_s, rerank_timeout_s=settings.rerank_timeout_s,
                            metrics=metrics)
        if warm:
            # Models and index legs loaded now, not by the first question (a cold first inference on
            # a busy machine takes seconds and would count against that question's budgets).
            await searcher.warm_up()
        ingestor = Ingestor(catalog=catalog, jobs=jobs, index=index, embedder=embedder,
                            raw_root=settings.raw_path, max_bytes=settings.max_file_bytes,
                            chunk_tokens=settings.chunk_tokens, chunk_overlap=settings.chunk_overlap,
                            allowed_groups=access.groups_of, min_free_mb=settings.min_free_disk_mb,
                            max_chunks=settings.max_chunks, job_timeout_s=settings.job_timeout_s)
        answerer = build_answerer(embedder=embedder, stored_vectors=lambda ids: catalog.load_vectors(chunk_ids=ids),
                                  prepared_vectors=lambda ids: catalog.load_answer_vectors(chunk_ids=ids),
                                  chat_model=settings.chat_model,
                                  base_url=settings.openai_base_url, api_key=settings.openai_api_key,
                                  timeout_s=settings.llm_timeout_s, judge=shared_judge())
        database_url = settings.database_url.get_secret_value() if settings.database_url else None
        async with open_checkpointer(settings.checkpoint_path, database_url=database_url) as checkpointer:
            graph = build_graph(checkpointer, searcher=searcher, answerer=answerer, conversations=conversations,
                                escalation_deadline_hours=settings.escalation_deadline_hours,
                                is_paused=controls.is_paused,
                                conflict_check=lambda q, ps: detect_conflicts(q, ps, terms_of=embedder.terms))
            runner = ConversationRunner(graph=graph, conversations=conversations, on_turn=metrics.record_turn,
                                        follow_up=embedding_follow_up(embedder))
            yield Services(settings=settings, db=db, store=store, access=access, catalog=catalog, jobs=jobs, index=index,
                           embedder=embedder, searcher=searcher, ingestor=ingestor,
                           metrics=metrics, controls=controls,
                           conversations=conversations, answerer=answerer, graph=graph, runner=runner)
    finally:
        index.close()
        await db.close()


@asynccontextmanager
async def open_store(settings: Settings, *, controls_cache_s: float | None = None) -> AsyncIterator[Store]:
    """The stores over one database connection (SQLite, or PostgreSQL with CAIRN_DATABASE_URL), closed on exit."""
    settings.cairn_home.mkdir(parents=True, exist_ok=True)
    db = await open_db(settings.database)
    try:
        store = _store(settings, db, controls_cache_s=controls_cache_s)
        await store.sources.setup()
        await store.relays.setup()
        await store.proposals.setup()
        yield store
    finally:
        await db.close()


def escalation_desk(services: Services, notifier: Notifier | None = None) -> EscalationDesk:
    """The escalation use cases over these services, telling people through `notifier` (none: nobody)."""
    from escalations.desk import EscalationDesk
    from escalations.notifier import SilentNotifier

    return EscalationDesk(runner=services.runner, conversations=services.conversations,
                          relays=services.store.relays, access=services.access,
                          notifier=notifier or SilentNotifier(),
                          escalation_channel=services.settings.escalation_channel)


def slack_notifier(services: Services) -> Notifier | None:
    """Slack's side of the escalation use cases over the Web API, for a process without the Slack app
    (the CLI): with SLACK_BOT_TOKEN a terminal reply still reaches the Slack asker. None without it."""
    if not services.settings.slack_bot_token:
        return None
    from bot.slack.app import build_web_client  # the Slack surface imports this module
    from bot.slack.escalation_posting import EscalationThreads

    return EscalationThreads(client=build_web_client(services.settings), services=services)


async def slack_preflight(settings: Settings, access: AccessPolicy) -> list[Any]:
    """What the Slack app needs (token, scopes, channels) checked over the Web API (bot/slack/preflight.py)."""
    from bot.slack.app import build_web_client
    from bot.slack.preflight import slack_checks

    return await slack_checks(build_web_client(settings), settings, access)


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
