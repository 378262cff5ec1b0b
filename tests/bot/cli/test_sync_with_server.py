"""`cairn sync` while `cairn serve` holds the index (both in this process, as test_serve does it): the
CLI queues the jobs for the server's worker and follows them; a withdrawal revokes eligibility at once
and the worker's cleanup removes the text."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import httpx
import pytest

from bot.cli.main import build_parser
from bot.services import running_server
from retrieval.embed import Embedder
from store.catalog import Catalog
from store.db import open_db
from tests.bot.cli.test_serve import free_port, wait_healthy
from tests.bot.conftest import SIGNING_SECRET
from tests.conftest import copy_home, make_settings
from tests.fake_slack import FakeSlack


async def test_sync_hands_its_jobs_to_the_running_server(tmp_path: Path, handbook_template: Path,
                                                         embedder: Embedder, fake_slack: FakeSlack,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    copy_home(handbook_template, home)
    settings = make_settings(home, SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SIGNING_SECRET,
                             SLACK_API_URL=fake_slack.url)
    folder = tmp_path / "share"
    folder.mkdir()
    (folder / "pets.md").write_text("# Pets at work\n\nDogs are welcome in the Tokyo office on Fridays.\n")
    (folder / "plants.md").write_text("# Plants\n\nEach desk may have one plant.\n")
    port = free_port()
    serve = build_parser().parse_args(["serve", "--http", "--port", str(port)])
    server = asyncio.create_task(serve.handler(serve, settings))

    async def sync() -> dict:
        args = build_parser().parse_args(["sync", str(folder), "--json"])
        capsys.readouterr()
        await asyncio.wait_for(args.handler(args, settings), 120)
        out, err = capsys.readouterr()
        assert "cairn serve holds the index" in err
        return json.loads(out.splitlines()[-1])

    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            await wait_healthy(client, server)
        assert running_server(settings) is not None
        first = await sync()
        assert first["status"] == "ok" and first["counts"] == {"new": 2}, first
        (folder / "plants.md").unlink()
        second = await sync()
        assert second["counts"] == {"not_modified": 1, "withdrawn": 1}, second
        db = await open_db(settings.database)
        try:
            doc = await Catalog(db).get_document(tenant_id="larkspur", doc_id="plants")
            assert doc is not None and doc.status == "withdrawn"
            for _ in range(200):  # the worker's next pass cleans up
                async with db.execute("SELECT COUNT(*) FROM chunks WHERE doc_id='plants'") as cur:
                    if (await cur.fetchone())[0] == 0:
                        break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the server's worker never removed the withdrawn text")
        finally:
            await db.close()
    finally:
        os.kill(os.getpid(), signal.SIGTERM)  # serve's handler turns it into a clean stop
        await asyncio.wait_for(server, 60)
