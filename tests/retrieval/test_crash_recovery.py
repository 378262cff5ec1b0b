"""kill -9 during `cairn ingest` of edited real handbook pages, at random moments, several times:
one normal rerun then publishes every edit and says so truthfully in its exit status, and every
document has exactly one eligible version the whole time."""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bot.services import open_services
from bot.settings import Settings
from retrieval.embed import Embedder
from tests.conftest import ROOT, SAMPLE_ACCESS, SHARED_DATA, ingest_sample, make_settings

HANDBOOK = SHARED_DATA / "handbooks" / "basecamp"
TENANT = "larkspur"
CYCLES = (4, 3, 3)  # edits per killed run: ten edits, each file edited once
ELIGIBLE_VERSIONS = (
    "SELECT c.doc_id, COUNT(DISTINCT c.version) FROM chunks c"
    " JOIN documents d ON d.tenant_id=c.tenant_id AND d.doc_id=c.doc_id AND d.current_version=c.version"
    " JOIN versions v ON v.tenant_id=c.tenant_id AND v.doc_id=c.doc_id AND v.version=c.version"
    " WHERE c.tenant_id=? AND d.status='active' AND v.state='published' GROUP BY c.doc_id")


def cairn_ingest(home: Path, folder: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "CAIRN_HOME": str(home), "CAIRN_ACCESS_FILE": str(SAMPLE_ACCESS)}
    env.pop("QDRANT_URL", None)
    return subprocess.Popen(
        [sys.executable, "-c", "import sys; from bot.cli.main import main; sys.exit(main())", "ingest",
         str(folder), "--tenant", TENANT, "--json"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def eligible_versions(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return dict(conn.execute(ELIGIBLE_VERSIONS, (TENANT,)).fetchall())
    finally:
        conn.close()


@contextmanager
def watching(db: Path, documents: set[str]) -> Iterator[list[str]]:
    """Reads the catalog as a question would, over and over, and records every moment a document
    had no eligible version or several."""
    problems: list[str] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen = eligible_versions(db)
            problems.extend(f"{doc}: {seen.get(doc, 0)} versions" for doc in documents if seen.get(doc) != 1)
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield problems
    finally:
        stop.set()
        watcher.join()


def job_in_progress(db: Path) -> bool:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute("SELECT COUNT(*) FROM ingest_jobs WHERE state IN ('parsing','embedding','indexing')"
                            " OR (state='queued' AND attempts>0)").fetchone()[0] > 0
    finally:
        conn.close()


def current_text(db: Path, doc_id: str) -> str:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute("SELECT c.text FROM chunks c JOIN documents d ON d.tenant_id=c.tenant_id AND"
                            " d.doc_id=c.doc_id AND d.current_version=c.version WHERE c.doc_id=?", (doc_id,))
        return "\n".join(r[0] for r in rows)
    finally:
        conn.close()


def crash_then_rerun(home: Path, folder: Path, documents: set[str], rng: random.Random,
                     ) -> tuple[dict[str, str], subprocess.Popen[str], str, str, list[str]]:
    """Edit files and kill -9 a `cairn ingest` of the folder in each cycle; then one normal rerun."""
    db = home / "cairn.db"
    files = sorted(folder.rglob("*.md"))
    rng.shuffle(files)
    edits: dict[str, str] = {}
    with watching(db, documents) as problems:
        for count in CYCLES:
            for path in files[len(edits):len(edits) + count]:
                doc_id = path.relative_to(folder).with_suffix("").as_posix()
                marker = f"Edit {len(edits) + 1}: the review of this page is due in month {rng.randint(1, 12)}."
                path.write_text(path.read_text() + f"\n\n{marker}\n")
                edits[doc_id] = marker
            run = cairn_ingest(home, folder)
            deadline = time.monotonic() + 300
            while not job_in_progress(db) and run.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 1.5))  # somewhere in parsing, embedding, indexing or publishing
            run.send_signal(signal.SIGKILL)
            run.communicate()

        rerun = cairn_ingest(home, folder)
        out, err = rerun.communicate(timeout=600)
    return edits, rerun, out, err, problems


@pytest.mark.sqlite_only("watches the SQLite file between kills")
async def test_kill_9_during_ingest_then_one_rerun_publishes_every_edit(tmp_path: Path, embedder: Embedder) -> None:
    seed = int.from_bytes(os.urandom(4))
    print(f"random moments from seed {seed}")  # shown with a failure, to replay it
    rng = random.Random(seed)
    folder = tmp_path / "handbook"
    shutil.copytree(HANDBOOK, folder)
    home = tmp_path / "home"
    settings: Settings = make_settings(home)
    async with open_services(settings, embedder=embedder) as svc:
        await ingest_sample(svc, folder, tenant=TENANT)
    db = settings.db_path
    documents = set(eligible_versions(db))
    assert len(documents) >= 20

    edits, rerun, out, err, problems = await asyncio.to_thread(crash_then_rerun, home, folder, documents, rng)
    assert problems == [], problems[:10]

    lines = [json.loads(line) for line in out.splitlines()]
    published = {line["doc_id"]: line["status"] for line in lines}
    assert rerun.returncode == 0, (err[-3000:], [line for line in lines if line["status"] not in
                                                 ("published", "unchanged")])
    assert set(published.values()) <= {"published", "unchanged"}
    missing = [doc for doc, marker in edits.items() if marker not in current_text(db, doc)]
    assert missing == [], missing
    assert all(n == 1 for n in eligible_versions(db).values())
