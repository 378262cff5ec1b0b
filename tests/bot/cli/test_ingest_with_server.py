"""`cairn ingest` while `cairn serve` holds the index: the hand-over reports the passage count the catalog
holds (never "(0 chunks)"); a Word bomb queued in front of a small file is refused within seconds and
the small file flows; `cairn jobs cancel` stops a long job within seconds and the worker takes the next."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from bot.cli.main import build_parser
from retrieval.embed import Embedder
from store.db import open_db
from store.jobs import Jobs
from tests.bombs import docx_paragraph_bomb
from tests.bot.cli.test_serve import free_port, wait_healthy
from tests.bot.conftest import SIGNING_SECRET
from tests.conftest import copy_home, make_settings
from tests.fake_slack import FakeSlack
from tests.retrieval.test_poison import long_markdown


async def test_hand_over_counts_bombs_and_cancel(tmp_path: Path, handbook_template: Path, embedder: Embedder,
                                                 fake_slack: FakeSlack, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    copy_home(handbook_template, home)
    settings = make_settings(home, SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SIGNING_SECRET,
                             SLACK_API_URL=fake_slack.url)
    files = tmp_path / "files"
    files.mkdir()
    (files / "bomb.docx").write_bytes(docx_paragraph_bomb())
    (files / "pets.md").write_text("# Pets at work\n\nDogs are welcome in the Tokyo office on Fridays.\n")
    (files / "manual.md").write_bytes(long_markdown(400))
    (files / "plants.md").write_text("# Plants\n\nEach desk may have one plant.\n")
    port = free_port()
    serve = build_parser().parse_args(["serve", "--http", "--port", str(port)])
    server = asyncio.create_task(serve.handler(serve, settings))

    async def cairn(*argv: str) -> tuple[int, str]:
        args = build_parser().parse_args(list(argv))
        capsys.readouterr()
        code = await asyncio.wait_for(args.handler(args, settings), 300)
        return code, capsys.readouterr().out

    try:
        latencies: list[float] = []
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            await wait_healthy(client, server)

            async def probe() -> None:  # /healthz stays quick while the bomb is read
                while True:
                    began = time.monotonic()
                    assert (await client.get("/healthz")).status_code == 200
                    latencies.append(time.monotonic() - began)
                    await asyncio.sleep(0.05)

            prober = asyncio.create_task(probe())
            started = time.monotonic()
            try:
                code, out = await cairn("ingest", str(files / "bomb.docx"), str(files / "pets.md"))
            finally:
                prober.cancel()
        assert time.monotonic() - started < 60
        latencies.sort()
        assert len(latencies) > 5 and latencies[int(len(latencies) * 0.95)] < 0.1, latencies[-5:]
        lines = {line.split()[1]: line for line in out.splitlines() if line.strip()}
        assert lines["bomb"].startswith(("failed", "dead")) and "more than 100,000 paragraphs" in lines["bomb"]
        assert lines["pets"].startswith("published") and "v1 (1 chunks)" in lines["pets"], lines["pets"]
        assert code == 1

        db = await open_db(settings.database)
        jobs = Jobs(db)
        try:
            long_run = asyncio.create_task(cairn("ingest", str(files / "manual.md")))
            for _ in range(1200):
                running = [j for j in await jobs.list(limit=10) if j.doc_id == "manual" and j.state == "embedding"]
                if running:
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the long job never started embedding")
            code, out = await cairn("jobs", "cancel", running[0].job_id)
            cancelled_at = time.monotonic()
            assert code == 0 and "cancelled" in out
            code, out = await cairn("ingest", str(files / "plants.md"))
            assert code == 0 and "published" in out and "(1 chunks)" in out
            assert time.monotonic() - cancelled_at < 30  # the worker let go of the cancelled job at once
            code, out = await long_run
            assert "cancelled" in out
        finally:
            await db.close()
    finally:
        os.kill(os.getpid(), signal.SIGTERM)  # serve's handler turns it into a clean stop
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server, 60)
