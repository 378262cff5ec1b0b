"""Slack and the new kinds of source: App Home shows a policy owner the sources (synced folders, websites)
their documents come from; a Word file dropped into the DM is ingested like any upload."""

from __future__ import annotations

import json
from pathlib import Path

from bot.server import ingestion_pass
from retrieval.sync import SyncRunner
from tests.bot.conftest import Cairn
from tests.bot.slack.test_documents import notifier, status_updates, upload
from tests.retrieval.test_docx import EXCEPTION, build_policy

OLIVIA, EVAN = "U0OLIVIA", "U0EVAN"


async def home_of(cairn: Cairn, user: str) -> str:
    before = len(cairn.fake.calls_to("views.publish", lambda c: c.params["user_id"] == user))
    await cairn.event({"type": "app_home_opened", "user": user, "channel": "D" + user[1:], "tab": "home"})
    await cairn.settle()
    calls = cairn.fake.calls_to("views.publish", lambda c: c.params["user_id"] == user)
    assert len(calls) > before
    return json.dumps(calls[-1].params["view"])


async def test_owners_see_the_sources_of_their_documents(cairn: Cairn, tmp_path: Path) -> None:
    folder = tmp_path / "finance-share"
    folder.mkdir()
    (folder / "mileage.md").write_text("# Mileage\n\nPrivate cars are reimbursed at USD 0.50 per mile.\n")
    services = cairn.services
    sources = services.store.sources
    source = await sources.save(tenant_id="larkspur", kind="directory", location=str(folder), groups=["finance"],
                                owner=None, every_s=6 * 3600)
    runner = SyncRunner(sources=sources, submitter=services.ingestor.submitter, catalog=services.catalog,
                        jobs=services.jobs, ingestor=services.ingestor)
    assert (await runner.run(source)).counts == {"new": 1}

    home = await home_of(cairn, OLIVIA)  # she administers finance: the document is hers
    assert "Kept in sync (1)" in home and str(folder) in home and "every 6 hours" in home and "1 new" in home
    assert "Kept in sync" not in await home_of(cairn, EVAN)  # events owner: none of his documents are synced


async def test_a_word_file_uploaded_in_slack_is_ingested_with_its_footnote(cairn: Cairn) -> None:
    await upload(cairn, "F0WORD", build_policy(), name="Travel Policy.docx", doc_id="finance/travel-word")
    await ingestion_pass(cairn.services, notifier(cairn))
    assert "is published" in status_updates(cairn)[-1]
    async with cairn.services.db.execute("SELECT text FROM chunks WHERE doc_id='finance/travel-word'") as cur:
        assert EXCEPTION in " ".join(r[0] for r in await cur.fetchall())
