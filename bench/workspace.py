"""One temporary Cairn home for a whole bench run: services opened once, corpora ingested once.

Sections ask for what they need (`await ws.ensure("squad")`) and get it built on first use, so
`python -m bench latency` works alone and `python -m bench` never ingests a corpus twice. Each
corpus lives in its own tenant; a bench user per tenant comes from the access file, so every search
goes through the real access resolution (the default tenant `eval` is searched as the CLI's local
member, `access.resolve_cli(None)`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.report import log
from bench.slack_ack import TEAM as ACK_TEAM
from bot.services import Services, open_services, shared_embedder
from bot.settings import Settings
from retrieval.embed import Embedder
from retrieval.ingest import DocumentOptions, FileOutcome
from retrieval.search import SearchResult
from store.records import Scope

# The shared home goes to memory-backed /dev/shm when there is one: per-document fsyncs dominate
# ingestion on disk and nothing but the ingest section measures ingestion (it uses a disk home).
BASE = os.environ.get("CAIRN_BENCH_TMP") or ("/dev/shm" if Path("/dev/shm").is_dir() else None)
DEFAULT_TENANT = "eval"
ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample" / "handbook"
SAMPLE_ACCESS = ROOT / "sample" / "access.yml"
# tenant → bench user that reads it (the default tenant is read as the CLI's local member)
TENANTS = {"eval": None, "squad": "squad_reader", "xq_en": "xq_en_reader", "xq_ar": "xq_ar_reader",
           "arcd": "arcd_reader", "scale": "scale_reader", "acks": None}
# The Slack sections' own tenant (their fake workspace maps to it): what they ingest to have something
# to answer never lands in a corpus another section scores (the handbooks are "eval").
ACK_TENANT = "acks"


@dataclass(frozen=True)
class Doc:
    doc_id: str
    filename: str  # becomes source.path
    data: bytes


@dataclass
class IngestRun:
    outcomes: list[FileOutcome]
    seconds: float
    submit_seconds: float

    @property
    def chunks(self) -> int:
        return sum(o.chunks for o in self.outcomes if o.status in ("published", "scheduled"))

    def statuses(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for o in self.outcomes:
            counts[o.status] = counts.get(o.status, 0) + 1
        return counts


def write_access_file(path: Path) -> Path:
    path.write_text(yaml.safe_dump({
        "default_tenant": DEFAULT_TENANT,
        "workspaces": {ACK_TEAM: ACK_TENANT},
        "tenants": {t: {"groups": ["everyone"]} for t in TENANTS},
        "users": {user: {"tenant": t, "groups": ["everyone"]} for t, user in TENANTS.items() if user},
    }, sort_keys=False))
    return path


def make_settings(home: Path, access_file: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {"CAIRN_HOME": home, "CAIRN_ACCESS_FILE": access_file}
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg, arg-type]


class RecordingReranker:
    """Passes through to the real reranker and keeps the last call, so calibration can replay
    the exact candidates with other constants without searching again."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.last: dict[str, Any] | None = None

    def score(self, **kwargs: Any) -> list[float]:
        self.last = kwargs
        return self.inner.score(**kwargs)


class EmbedMemo:
    """A text-keyed cache in front of `Embedder.embed_documents`.

    It saves time only where the bench ingests text it has embedded before (the copies that make
    the 10k-chunk latency index); while ingestion throughput is measured it only remembers.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.original = embedder.embed_documents
        self.cache: dict[str, Any] = {}
        self.hits = 0
        self.misses = 0
        self.lookup = True  # False: embed everything, only remember (while throughput is measured)

    def __call__(self, texts: Sequence[str], **kwargs: Any) -> list[Any]:
        if not self.lookup:
            out = self.original(texts, **kwargs)
            self.cache.update(zip(texts, out, strict=True))
            return out
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            for t, e in zip(missing, self.original(missing, **kwargs), strict=True):
                self.cache[t] = e
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        return [self.cache[t] for t in texts]


class RecordingModel:
    """Stands in for the SentenceTransformer: records each encode call's inputs, then delegates."""

    def __init__(self, model: Any, calls: list[EncodeCall]) -> None:
        self._model = model
        self._calls = calls

    def encode(self, sentences: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        out = self._model.encode(sentences, *args, **kwargs)
        self._calls.append(EncodeCall("minilm", list(sentences), dict(kwargs), time.perf_counter() - t0))
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


@dataclass(frozen=True)
class EncodeCall:
    model: str  # minilm | use
    texts: list[str]
    kwargs: dict[str, Any]
    seconds: float


@contextmanager
def record_encodes(embedder: Embedder) -> Iterator[list[EncodeCall]]:
    """Every text the pipeline hands to MiniLM or to the multilingual encoder, call by call."""
    calls: list[EncodeCall] = []
    model = embedder.model
    original_use = embedder._encode_use

    def use(texts: Sequence[str]) -> Any:
        t0 = time.perf_counter()
        out = original_use(texts)
        calls.append(EncodeCall("use", list(texts), {}, time.perf_counter() - t0))
        return out

    embedder.__dict__["model"] = RecordingModel(model, calls)
    embedder.__dict__["_encode_use"] = use
    try:
        yield calls
    finally:
        embedder.__dict__["model"] = model
        embedder.__dict__.pop("_encode_use", None)


@dataclass
class Workspace:
    root: Path
    access_file: Path
    settings: Settings
    services: Services
    stack: AsyncExitStack
    recorder: RecordingReranker
    memo: EmbedMemo
    built: dict[str, Any] = field(default_factory=dict)  # corpus name → what its builder returned
    results: dict[str, Any] = field(default_factory=dict)  # section outputs other sections reuse
    builders: dict[str, Callable[[Workspace], Awaitable[Any]]] = field(default_factory=dict)

    @classmethod
    async def open(cls, *, keep: bool = False, home: Path | None = None) -> Workspace:
        """A fresh temporary workspace, or (`home`) one kept by an earlier `--keep` run: corpora
        already ingested there are not ingested again, so only the searches run."""
        if home is not None:
            root, keep = home, True
            root.mkdir(parents=True, exist_ok=True)
        else:
            root = Path(tempfile.mkdtemp(prefix="cairn-bench-", dir=BASE))
        access = write_access_file(root / "access.yml")
        settings = make_settings(root / "home", access)
        embedder = shared_embedder(settings)
        embedder.warm_up()
        stack = AsyncExitStack()
        if not keep:
            stack.callback(shutil.rmtree, root, True)
        services = await stack.enter_async_context(open_services(settings, embedder=embedder))
        recorder = RecordingReranker(services.searcher.reranker)
        services.searcher.reranker = recorder  # type: ignore[assignment]
        memo = EmbedMemo(embedder)
        embedder.__dict__["embed_documents"] = memo
        stack.callback(embedder.__dict__.pop, "embed_documents", None)
        return cls(root=root, access_file=access, settings=settings, services=services, stack=stack,
                   recorder=recorder, memo=memo)

    async def close(self) -> None:
        await self.stack.aclose()

    @property
    def embedder(self) -> Embedder:
        return self.services.embedder

    def scope(self, tenant: str) -> Scope:
        return self.services.access.resolve_cli(TENANTS[tenant])

    async def ensure(self, name: str) -> Any:
        if name not in self.built:
            self.built[name] = await self.builders[name](self)
        return self.built[name]

    @contextmanager
    def memo_recording_only(self) -> Iterator[EmbedMemo]:
        self.memo.lookup = False
        try:
            yield self.memo
        finally:
            self.memo.lookup = True

    async def ingest(self, docs: Sequence[Doc], *, tenant: str, services: Services | None = None,
                     on_progress: Any = None) -> IngestRun:
        """The real hand-over and worker: submit every file, then run the queue to the end."""
        svc = services or self.services
        options = DocumentOptions(tenant_id=tenant)
        started = time.perf_counter()
        queued: list[FileOutcome] = []
        for doc in docs:
            outcome = await svc.ingestor.submit_bytes(doc.data, filename=doc.filename, doc_id=doc.doc_id,
                                                      options=options)
            queued.append(outcome)
        submitted = time.perf_counter()
        ran = await svc.ingestor.run_pending(on_progress=on_progress)
        ended = time.perf_counter()
        by_job = {o.job_id: o for o in ran}
        outcomes = [by_job.get(o.job_id, o) if o.status == "queued" else o for o in queued]
        bad = [o for o in outcomes if o.status not in ("published", "scheduled", "unchanged")]
        if bad:
            raise RuntimeError(f"{len(bad)} file(s) failed to ingest, first: {bad[0]}")
        return IngestRun(outcomes=outcomes, seconds=ended - started, submit_seconds=submitted - started)

    @asynccontextmanager
    async def sample_home(self, name: str) -> AsyncIterator[Services]:
        """Services over the bundled sample handbook in a home of its own under the workspace (the
        sample's access file and tenant, offline answerer), ingested on first use."""
        from bot.cli.knowledge import plan_files

        settings = make_settings(self.root / name, SAMPLE_ACCESS, CAIRN_CHAT_MODEL=None)
        async with open_services(settings, embedder=self.embedder) as svc:
            async with svc.db.execute("SELECT doc_id FROM documents WHERE tenant_id='larkspur'") as cur:
                have = {r[0] for r in await cur.fetchall()}
            docs = [Doc(item.doc_id or "", item.path.relative_to(SAMPLE).as_posix(), item.path.read_bytes())
                    for item in plan_files([SAMPLE], None) if item.doc_id and item.doc_id not in have]
            if docs:
                ran = await self.ingest(docs, tenant="larkspur", services=svc)
                log(f"ingested the sample handbook: {len(docs)} docs, {ran.chunks} chunks → tenant larkspur")
            yield svc

    async def search(self, query: str, tenant: str, *, mode: str = "hybrid",
                     top_k: int = 10) -> tuple[SearchResult, float, dict[str, Any] | None]:
        """One search as the tenant's reader: the result, wall milliseconds, the reranker's inputs."""
        self.recorder.last = None
        t0 = time.perf_counter()
        result = await self.services.searcher.search(query, self.scope(tenant), mode=mode,  # type: ignore[arg-type]
                                                     top_k=top_k)
        ms = (time.perf_counter() - t0) * 1000
        return result, ms, self.recorder.last

    async def sql(self, query: str, args: Sequence[object] = ()) -> list[Any]:
        async with self.services.db.execute(query, tuple(args)) as cur:
            return list(await cur.fetchall())

    async def current_chunks(self, tenant: str) -> list[Any]:
        """chunk_id, doc_id, text of every chunk of every current version in a tenant."""
        return await self.sql(
            "SELECT c.chunk_id, c.doc_id, c.text FROM chunks c JOIN documents d ON d.tenant_id=c.tenant_id"
            " AND d.doc_id=c.doc_id AND d.current_version=c.version WHERE c.tenant_id=? AND d.status='active'"
            " ORDER BY c.doc_id, c.seq", (tenant,))
