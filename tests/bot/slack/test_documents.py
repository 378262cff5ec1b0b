"""Documents from Slack: an owner shares a file, fills the modal, and the job's status message follows
the job to published; replace keeps one version visible throughout; non-owners, duplicates, crashes,
scanned PDFs and failed downloads each end in a clear message and nothing half-published.

The worker is the server's own pass (bot/server.py:ingestion_pass) with the real progress
callback; Slack is the fake Web API, which also serves the shared files' bytes."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from pypdf import PdfWriter

from bot.server import ingestion_pass
from bot.slack.app import build_web_client
from bot.slack.constants import (
    ACTION_FEEDBACK_UP,
    ACTION_HOME_UPLOAD,
    ACTION_OFFER_UPLOAD,
    ACTION_TALK_TO_PERSON,
    ACTION_UPLOAD_DOC_ID,
    ACTION_UPLOAD_EFFECTIVE,
    ACTION_UPLOAD_GROUPS,
    ACTION_UPLOAD_POLICY,
    ACTION_UPLOAD_REPLACE,
    ACTION_UPLOAD_SENSITIVITY,
    ACTION_WITHDRAW,
    BLOCK_UPLOAD_DOC_ID,
    BLOCK_UPLOAD_EFFECTIVE,
    BLOCK_UPLOAD_FILE,
    BLOCK_UPLOAD_GROUPS,
    BLOCK_UPLOAD_POLICY,
    BLOCK_UPLOAD_REPLACE,
    BLOCK_UPLOAD_SENSITIVITY,
    CALLBACK_UPLOAD_SHORTCUT,
    CALLBACK_WHY_THIS_ANSWER,
)
from bot.slack.job_status import JobStatusNotifier
from tests.bot.conftest import ADMIN, BOB, TEAM, Cairn
from tests.fake_slack import Call
from tests.retrieval.test_ingest import fail_once

OLIVIA, HANA, ALICE = "U0OLIVIA", "U0HANA", "U0ALICE"
PARKING_V1 = (b"---\ntitle: Staff Parking Rules\n---\n# Staff Parking Rules\n\n## Permits\n\n"
              b"Staff park in the north lot with a parking permit. A monthly staff parking permit costs USD 15, "
              b"deducted from salary.\n")
PARKING_V2 = (b"---\ntitle: Staff Parking Rules\n---\n# Staff Parking Rules\n\n## Permits\n\n"
              b"Staff park in the south garage with a parking permit. A monthly staff parking permit costs USD 22, "
              b"deducted from salary.\n")
PARKING_QUESTION = "How much does a monthly staff parking permit cost?"
_views = iter(range(1, 10_000))


@pytest.fixture
def slack_settings() -> dict[str, object]:
    """A busy machine must not turn a slow retrieval leg into "no passage" here: these tests are about
    versions and messages, not latency budgets."""
    return {"CAIRN_LEG_TIMEOUT": 15.0, "CAIRN_RERANK_TIMEOUT": 15.0}


def dm(user: str) -> str:
    return "D" + user.removeprefix("U")


def notifier(cairn: Cairn) -> JobStatusNotifier:
    return JobStatusNotifier(client=build_web_client(cairn.settings), jobs=cairn.services.jobs)


def offer_value(call: Call) -> str:
    return next(e["value"] for b in call.params["blocks"] if b["type"] == "actions" for e in b["elements"]
                if e["action_id"] == ACTION_OFFER_UPLOAD)


async def share(cairn: Cairn, file_id: str, name: str, data: bytes, *, user: str = OLIVIA,
                **file: Any) -> dict[str, Any]:
    """The owner drops a file into Cairn's DM (a `message` event, subtype file_share)."""
    cairn.fake.add_file(file_id, name, data, user=user, **file)
    event = cairn.message("", user=user, channel=dm(user), subtype="file_share",
                          files=[{"id": file_id, "name": name}])
    await cairn.event(event)
    return event


async def open_modal(cairn: Cairn, file_id: str, *, user: str = OLIVIA) -> dict[str, Any]:
    """Press the "Add to Cairn…" button under the offer; returns the modal Cairn opened."""
    offer = await cairn.fake.wait_for("chat.postMessage", lambda c: ACTION_OFFER_UPLOAD in c.action_ids()
                                      and json.loads(offer_value(c))["id"] == file_id)
    opened = len(cairn.fake.calls_to("views.open"))
    await cairn.click(ACTION_OFFER_UPLOAD, offer_value(offer), user=user, channel=dm(user),
                      message_ts=offer.params.get("ts") or "1")
    return (await cairn.fake.wait_for("views.open", count=opened + 1)).params["view"]


def filled(view: dict[str, Any], *, doc_id: str | None = None, replace: str | None = None,
           groups: tuple[str, ...] = ("everyone",), policy: str | None = None, sensitivity: str = "internal",
           effective: str | None = None, view_id: str | None = None) -> dict[str, Any]:
    values = {
        BLOCK_UPLOAD_DOC_ID: {ACTION_UPLOAD_DOC_ID: {"type": "plain_text_input", "value": doc_id}},
        BLOCK_UPLOAD_REPLACE: {ACTION_UPLOAD_REPLACE: {
            "type": "external_select", "selected_option": {"text": {"type": "plain_text", "text": replace},
                                                           "value": replace} if replace else None}},
        BLOCK_UPLOAD_GROUPS: {ACTION_UPLOAD_GROUPS: {"type": "multi_static_select", "selected_options": [
            {"text": {"type": "plain_text", "text": g}, "value": g} for g in groups]}},
        BLOCK_UPLOAD_POLICY: {ACTION_UPLOAD_POLICY: {"type": "plain_text_input", "value": policy}},
        BLOCK_UPLOAD_SENSITIVITY: {ACTION_UPLOAD_SENSITIVITY: {
            "type": "static_select", "selected_option": {"text": {"type": "plain_text", "text": sensitivity},
                                                         "value": sensitivity}}},
        BLOCK_UPLOAD_EFFECTIVE: {ACTION_UPLOAD_EFFECTIVE: {"type": "datepicker", "selected_date": effective}},
    }
    return {**view, "id": view_id or f"V-upload-{next(_views)}", "team_id": TEAM, "hash": "h",
            "state": {"values": values}}


async def submit(cairn: Cairn, view: dict[str, Any], *, user: str = OLIVIA) -> dict[str, Any]:
    resp = await cairn.interact({"type": "view_submission", "trigger_id": "trig", "view": view,
                                 "response_urls": []}, user=user)
    assert resp.status_code == 200
    return resp.json() if resp.content else {}


def status_updates(cairn: Cairn, user: str = OLIVIA) -> list[str]:
    """What the status message in the owner's DM said, update after update."""
    return [c.text for c in cairn.fake.calls_to("chat.update", lambda c: c.channel == dm(user))]


async def upload(cairn: Cairn, file_id: str, data: bytes, *, name: str = "parking.md", **form: Any) -> None:
    await share(cairn, file_id, name, data)
    response = await submit(cairn, filled(await open_modal(cairn, file_id), **form))
    assert response == {}, response  # accepted: the modal closes
    await cairn.settle()


async def test_owner_upload_follows_the_job_to_published_and_answers_the_next_question(cairn: Cairn) -> None:
    await share(cairn, "F0PARK", "parking.md", PARKING_V1)
    view = await open_modal(cairn, "F0PARK")
    groups = next(b for b in view["blocks"] if b.get("block_id") == BLOCK_UPLOAD_GROUPS)
    assert [o["value"] for o in groups["element"]["options"]] == ["everyone", "executives", "finance"]
    assert not any(b.get("block_id") == BLOCK_UPLOAD_FILE for b in view["blocks"])  # the file is known

    assert await submit(cairn, filled(view, doc_id="ops/parking", policy="OPS-PARK")) == {}
    await cairn.settle()
    download = cairn.fake.calls_to("file.download")
    assert [(d.params["file"], d.token) for d in download] == [("F0PARK", "xoxb-test")]
    [job] = await cairn.services.jobs.list(requested_by=OLIVIA)
    assert (job.state, job.doc_id, job.source_path) == ("queued", "ops/parking", "parking.md")
    status_ts = job.notify["ts"]
    assert job.notify["channel"] == dm(OLIVIA)
    assert "queued" in status_updates(cairn)[-1]

    await ingestion_pass(cairn.services, notifier(cairn))
    said = status_updates(cairn)
    progress = [s for s in said if "Staff Parking" not in s]
    assert any("*parsing…*" in s for s in progress) and any("*embedding…*" in s for s in progress)
    assert any("*indexing…*" in s for s in progress) and "is published" in said[-1]
    assert {c.params["ts"] for c in cairn.fake.calls_to("chat.update", lambda c: c.channel == dm(OLIVIA))} == {
        status_ts}  # one message, updated in place
    doc = await cairn.services.catalog.get_document(tenant_id="larkspur", doc_id="ops/parking")
    assert (doc.current_version, doc.groups, doc.policy_id, doc.owner) == ("v1", ("everyone",), "OPS-PARK",
                                                                           "#finance-policy")
    await ingestion_pass(cairn.services, notifier(cairn))  # nothing changed: nothing said
    assert len(status_updates(cairn)) == len(said)

    question = cairn.message(PARKING_QUESTION, user=BOB)
    await cairn.event(question)
    answer = await cairn.fake.wait_for("chat.update", lambda c: ACTION_TALK_TO_PERSON in c.action_ids())
    assert "USD 15" in answer.text and "Staff Parking Rules · v1" in answer.text

    await cairn.event({"type": "app_home_opened", "user": OLIVIA, "channel": dm(OLIVIA), "tab": "home"})
    home = await cairn.fake.wait_for("views.publish", lambda c: c.params["user_id"] == OLIVIA)
    assert "ops/parking" in home.text and "parking.md" in home.text and "published" in home.text


async def test_replace_never_shows_zero_or_two_versions_to_a_question_asked_meanwhile(cairn: Cairn) -> None:
    await upload(cairn, "F0V1", PARKING_V1, doc_id="ops/parking")
    await ingestion_pass(cairn.services, notifier(cairn))

    await share(cairn, "F0V2", "parking-2027.md", PARKING_V2)
    view = await open_modal(cairn, "F0V2")
    options = await cairn.interact({"type": "block_suggestion", "action_id": ACTION_UPLOAD_REPLACE,
                                    "block_id": BLOCK_UPLOAD_REPLACE, "value": "park", "view": view}, user=OLIVIA)
    assert [o["value"] for o in options.json()["options"]] == ["ops/parking"]
    assert await submit(cairn, filled(view, replace="ops/parking")) == {}
    await cairn.settle()

    bob = cairn.services.access.resolve_slack(user_id=BOB, team_id=TEAM)
    seen: list[set[str]] = []
    worker = asyncio.create_task(ingestion_pass(cairn.services, notifier(cairn)))
    while True:
        done = worker.done()
        result = await cairn.services.searcher.search(PARKING_QUESTION, bob)
        seen.append({p.version for p in result.passages if p.doc_id == "ops/parking"})
        if done:
            break
    await worker
    assert all(len(versions) == 1 for versions in seen), seen  # never zero, never two
    assert seen[0] == {"v1"} and seen[-1] == {"v2"}
    doc = await cairn.services.catalog.get_document(tenant_id="larkspur", doc_id="ops/parking")
    assert (doc.current_version, doc.owner) == ("v2", "#finance-policy")  # the identity and its owner kept
    assert "is published" in status_updates(cairn)[-1] and "v2" in status_updates(cairn)[-1]


async def test_non_owners_and_groups_an_owner_does_not_administer_are_refused(cairn: Cairn) -> None:
    fake = cairn.fake
    await share(cairn, "F0BOB", "mine.md", PARKING_V1, user=BOB)
    refusal = await fake.wait_for("chat.postMessage", lambda c: c.channel == dm(BOB))
    assert "Only policy owners" in refusal.text and refusal.action_ids() == []
    # A file with words from someone who isn't an owner is a question with an attachment: answered as one.
    fake.add_file("F0SHOT", "screenshot.png", b"png")
    await cairn.event(cairn.message("What is the per diem for meals?", user=BOB, subtype="file_share",
                                    files=[{"id": "F0SHOT", "name": "screenshot.png"}]))
    await fake.wait_for("chat.update", lambda c: c.channel == dm(BOB) and ACTION_TALK_TO_PERSON in c.action_ids())

    await cairn.command("upload", user=BOB)
    assert "Only policy owners" in (await fake.wait_for("response_url")).text
    await cairn.interact({"type": "shortcut", "callback_id": CALLBACK_UPLOAD_SHORTCUT, "trigger_id": "t1"}, user=BOB)
    assert "Only policy owners" in (await fake.wait_for("views.open")).text

    # A forged submission gets field errors, never a job: the server decides, not the modal.
    view = {"type": "modal", "callback_id": "cairn_upload_modal", "blocks": [],
            "private_metadata": json.dumps({"file_id": "F0BOB", "file_name": "mine.md"})}
    response = await submit(cairn, filled(view, doc_id="ops/parking"), user=BOB)
    assert response["response_action"] == "errors" and BLOCK_UPLOAD_GROUPS in response["errors"]
    response = await submit(cairn, filled(view, doc_id="hr/new", groups=("hr", "finance")), user=HANA)
    assert response["response_action"] == "errors"
    assert "finance" in response["errors"][BLOCK_UPLOAD_GROUPS]
    response = await submit(cairn, filled(view, replace="finance/executive-allowances", groups=("hr",)), user=HANA)
    assert BLOCK_UPLOAD_REPLACE in response["errors"]
    response = await submit(cairn, filled(view, doc_id="../etc/passwd"), user=HANA)
    assert "not valid" in response["errors"][BLOCK_UPLOAD_DOC_ID]
    response = await submit(cairn, filled(view, doc_id="hr/leave"), user=HANA)  # exists: replace it instead
    assert "already exists" in response["errors"][BLOCK_UPLOAD_DOC_ID]
    options = await cairn.interact({"type": "block_suggestion", "action_id": ACTION_UPLOAD_REPLACE,
                                    "block_id": BLOCK_UPLOAD_REPLACE, "value": "", "view": view}, user=HANA)
    hana_docs = [o["value"] for o in options.json()["options"]]
    assert "hr/leave" in hana_docs and "finance/executive-allowances" not in hana_docs

    # Withdraw is checked again on the server: Bob's click changes nothing.
    await withdraw_click(cairn, "finance/travel", user=BOB)
    note = await fake.wait_for("chat.postMessage", lambda c: "can't withdraw" in c.text)
    assert note.channel == dm(BOB)
    await cairn.settle()
    assert (await cairn.services.catalog.get_document(tenant_id="larkspur", doc_id="finance/travel")).status == "active"
    assert await cairn.services.jobs.list(requested_by=BOB) == []
    assert fake.calls_to("file.download") == []


async def test_duplicate_events_and_a_double_submit_make_one_offer_one_job_one_version(cairn: Cairn) -> None:
    fake = cairn.fake
    event = await share(cairn, "F0DUP", "parking.md", PARKING_V1)
    await cairn.event(event, retry_num=1)  # Slack's retry of the same message
    await cairn.event({"type": "file_shared", "file_id": "F0DUP", "user_id": OLIVIA, "file": {"id": "F0DUP"},
                       "channel_id": dm(OLIVIA), "event_ts": event["ts"]})
    await cairn.settle()
    assert len(fake.calls_to("chat.postMessage", lambda c: ACTION_OFFER_UPLOAD in c.action_ids())) == 1

    view = filled(await open_modal(cairn, "F0DUP"), doc_id="ops/parking", view_id="V-double")
    first, second = await asyncio.gather(submit(cairn, view), submit(cairn, view))
    assert first == second == {}
    await cairn.settle()
    assert len(await cairn.services.jobs.list(requested_by=OLIVIA)) == 1
    status_posts = fake.calls_to("chat.postMessage", lambda c: c.channel == dm(OLIVIA) and "fetching" in c.text)
    assert len(status_posts) == 1
    await ingestion_pass(cairn.services, notifier(cairn))
    await ingestion_pass(cairn.services, notifier(cairn))
    async with cairn.services.db.execute("SELECT version FROM versions WHERE doc_id='ops/parking'") as cur:
        assert [r[0] for r in await cur.fetchall()] == ["v1"]
    assert sum("is published" in s for s in status_updates(cairn)) == 1


async def test_a_crash_mid_job_resumes_after_a_restart_and_the_status_message_reaches_published(
        cairn: Cairn) -> None:
    await upload(cairn, "F0CRASH", PARKING_V1, doc_id="ops/parking")
    cairn.services.jobs.backoff_s = 0  # the retry is due at once
    fail_once(cairn.services.index, "upsert", ConnectionError("index went away"))
    [crashed] = await ingestion_pass(cairn.services, notifier(cairn))
    assert crashed.status == "failed"
    assert "attempt 1 of 3 failed" in status_updates(cairn)[-1]
    assert any("*embedding…*" in s for s in status_updates(cairn))

    await cairn.restart()  # a new process: only SQLite and the index survive
    [resumed] = await ingestion_pass(cairn.services, notifier(cairn))
    assert (resumed.status, resumed.version) == ("published", "v1")
    assert "is published" in status_updates(cairn)[-1]


async def test_a_scanned_pdf_fails_with_needs_ocr_even_when_the_worker_could_not_notify(cairn: Cairn) -> None:
    pdf = io.BytesIO()
    writer = PdfWriter()
    writer.add_blank_page(width=595, height=842)
    writer.write(pdf)
    await upload(cairn, "F0SCAN", pdf.getvalue(), name="scan.pdf", doc_id="ops/scanned")
    # The worker ran without reaching Slack (it died before notifying); the next pass catches up.
    [outcome] = await cairn.services.ingestor.run_pending()
    assert outcome.status == "failed"
    assert "queued" in status_updates(cairn)[-1]
    await ingestion_pass(cairn.services, notifier(cairn))
    final = status_updates(cairn)[-1]
    assert "needs OCR" in final and "What to do" in final
    assert await cairn.services.catalog.get_document(tenant_id="larkspur", doc_id="ops/scanned") is None


async def test_files_that_cannot_be_taken_get_a_clear_message_and_no_job(cairn: Cairn) -> None:
    fake = cairn.fake
    cases: list[tuple[str, str, dict[str, Any], Callable[[str], bool]]] = [
        ("F0HTTP", "rules.md", {"download_status": 500}, lambda s: "couldn't download" in s and "HTTP 500" in s),
        ("F0BIG", "huge.md", {"size": 50 * 1024 * 1024}, lambda s: "over the 20.0 MB limit" in s),
        ("F0XLSX", "rules.xlsx", {}, lambda s: "can't read this type of file" in s),
    ]
    for file_id, name, extra, says in cases:
        await share(cairn, file_id, name, PARKING_V1, **extra)
        assert await submit(cairn, filled(await open_modal(cairn, file_id), doc_id=f"ops/{file_id.lower()}")) == {}
        await cairn.settle()
        assert says(status_updates(cairn)[-1]), status_updates(cairn)[-1]
    assert [d.params["file"] for d in fake.calls_to("file.download")] == ["F0HTTP"]  # sizes and types checked first
    assert await cairn.services.jobs.list(requested_by=OLIVIA) == []


async def withdraw_click(cairn: Cairn, doc_id: str, *, user: str) -> None:
    await cairn.interact({"type": "block_actions", "trigger_id": "t-w", "container": {"type": "view", "view_id": "VH"},
                          "view": {"id": "VH", "type": "home"}, "actions": [
                              {"action_id": ACTION_WITHDRAW, "block_id": "b", "type": "button", "value": doc_id,
                               "action_ts": "1"}]}, user=user)


async def test_withdraw_from_app_home_asks_first_then_revokes_once(cairn: Cairn) -> None:
    fake = cairn.fake
    await cairn.event({"type": "app_home_opened", "user": OLIVIA, "channel": dm(OLIVIA), "tab": "home"})
    home = (await fake.wait_for("views.publish")).params["view"]
    buttons = [b["accessory"] for b in home["blocks"] if (b.get("accessory") or {}).get("action_id") == ACTION_WITHDRAW]
    travel = next(b for b in buttons if b["value"] == "finance/travel")
    assert travel["confirm"]["confirm"]["text"] == "Withdraw" and "Travel and Expenses Policy" in travel["confirm"]["text"]["text"]
    assert "hr/leave" not in {b["value"] for b in buttons}  # HR's document is not Olivia's
    assert any(e.get("action_id") == ACTION_HOME_UPLOAD for b in home["blocks"] for e in b.get("elements", []))

    await asyncio.gather(withdraw_click(cairn, "finance/travel", user=OLIVIA),
                         withdraw_click(cairn, "finance/travel", user=OLIVIA))  # a double click
    await cairn.settle()
    assert len(fake.calls_to("chat.postMessage", lambda c: "Withdrew" in c.text)) == 1
    doc = await cairn.services.catalog.get_document(tenant_id="larkspur", doc_id="finance/travel")
    assert (doc.status, doc.current_version) == ("withdrawn", None)
    refreshed = fake.calls_to("views.publish")[-1].params["view"]
    assert "finance/travel" not in json.dumps(refreshed)


async def test_withdraw_cancels_a_queued_upload_and_its_status_message_says_so(cairn: Cairn) -> None:
    await upload(cairn, "F0NEWTRAVEL", PARKING_V1, name="travel-2027.md", replace="finance/travel")
    [job] = await cairn.services.jobs.list(requested_by=OLIVIA)
    assert job.state == "queued" and "queued" in status_updates(cairn)[-1]

    await withdraw_click(cairn, "finance/travel", user=OLIVIA)
    await cairn.settle()
    said = status_updates(cairn)[-1]
    assert "cancelled: document withdrawn" in said and "travel-2027.md" in said, said
    assert {c.params["ts"] for c in cairn.fake.calls_to("chat.update", lambda c: c.channel == dm(OLIVIA))} == {
        job.notify["ts"]}  # the upload's own status message, updated in place
    home = cairn.fake.calls_to("views.publish", lambda c: c.params["user_id"] == OLIVIA)[-1]
    assert "cancelled" in home.text and "document withdrawn" in home.text

    # The worker finds nothing to run: the withdrawn document does not come back.
    assert await ingestion_pass(cairn.services, notifier(cairn)) == []
    doc = await cairn.services.catalog.get_document(tenant_id="larkspur", doc_id="finance/travel")
    assert (doc.status, doc.current_version) == ("withdrawn", None)
    assert (await cairn.services.jobs.get(job_id=job.job_id)).state == "cancelled"
    assert status_updates(cairn)[-1] == said  # nothing more to say


async def test_upload_command_opens_the_modal_with_a_file_field(cairn: Cairn) -> None:
    await cairn.command("upload", user=HANA)
    view = (await cairn.fake.wait_for("views.open")).params["view"]
    assert any(b.get("block_id") == BLOCK_UPLOAD_FILE for b in view["blocks"])
    groups = next(b for b in view["blocks"] if b.get("block_id") == BLOCK_UPLOAD_GROUPS)
    assert [o["value"] for o in groups["element"]["options"]] == ["everyone", "hr"]


async def test_why_this_answer_shows_the_trace_to_the_asker_and_admins_only(cairn: Cairn) -> None:
    fake = cairn.fake
    await cairn.event(cairn.message("What is the per diem for meals?", user=BOB))
    answer = await fake.wait_for("chat.update", lambda c: ACTION_TALK_TO_PERSON in c.action_ids())
    turn_id = next(e["value"] for b in answer.params["blocks"] if b["type"] == "actions" for e in b["elements"]
                   if e["action_id"] == ACTION_FEEDBACK_UP)
    assert answer.params["blocks"][0]["block_id"] == f"cairn_turn:{turn_id}"
    await cairn.settle()
    message = {"type": "message", "ts": answer.params["ts"], "text": answer.params["text"], "bot_id": fake.bot_id,
               "user": fake.bot_user_id, "blocks": answer.params["blocks"]}

    async def shortcut(user: str) -> Call:
        before = len(fake.calls_to("chat.postEphemeral"))
        await cairn.interact({"type": "message_action", "callback_id": CALLBACK_WHY_THIS_ANSWER, "trigger_id": "t",
                              "channel": {"id": dm(BOB), "name": "directmessage"}, "message": message,
                              "message_ts": message["ts"], "response_url": fake.response_url()}, user=user)
        return await fake.wait_for("chat.postEphemeral", count=before + 1)

    for user in (BOB, ADMIN):
        shown = await shortcut(user)
        assert shown.params["user"] == user
        assert "Route" in shown.text and "answer" in shown.text and "larkspur:finance/travel" in shown.text
        assert "score" in shown.text
    refused = await shortcut(ALICE)
    assert "only the person who asked" in refused.text and "larkspur:" not in refused.text
