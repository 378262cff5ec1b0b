"""Documents from Slack, for policy owners: a file shared in the DM (`message` file_share or
`file_shared`), the upload modal (from that file's button, `/cairn upload`, the global shortcut or App
Home), its replace-list options, its submission, and Withdraw in App Home.

Every path acks at once. The modal's submission is checked while acking (a group the owner does not
administer comes back as a field error), then the upload is handed over lazily (bot/slack/uploads.py).
Duplicates are harmless: a file is offered once per DM (seen_event), a modal submitted twice queues one
job, and a second Withdraw of the same document says nothing new.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.constants import (
    ACTION_HOME_UPLOAD,
    ACTION_OFFER_UPLOAD,
    ACTION_UPLOAD_REPLACE,
    ACTION_WITHDRAW,
    CALLBACK_UPLOAD_MODAL,
    CALLBACK_UPLOAD_SHORTCUT,
)
from bot.slack.context import SlackServices
from bot.slack.document_views import (
    OWNER_ONLY_TEXT,
    build_file_offer,
    build_notice_modal,
    build_owner_only,
    build_upload_modal,
    document_option,
)
from bot.slack.intake import ack_now, bind, first_delivery
from bot.slack.job_status import JobStatusNotifier
from bot.slack.listeners.home import refresh_home
from bot.slack.uploads import (
    check_upload,
    hand_over_upload,
    managed_documents,
    open_dm,
    owner_of,
    parse_upload_form,
)
from bot.slack.views import build_notice

log = logging.getLogger(__name__)

MAX_FILES_OFFERED = 5
MAX_OPTIONS = 100  # Slack's limit for an options list


# -- a file shared in the DM --------------------------------------------------------------------------


async def offer_files(services: SlackServices, client: AsyncWebClient, *, user_id: str, channel: str,
                      files: Sequence[Mapping[str, Any]], team_id: str | None = None, refuse: bool = True) -> bool:
    """Each file shared in the owner's DM gets one "Add to Cairn…" button (the modal needs a click: an
    event carries no trigger id). Anyone else is told, once, that only policy owners add documents —
    unless `refuse` is off (their message also has words: a question, answered as one). True when the
    files were dealt with here."""
    is_owner = await owner_of(services, user_id, team_id=team_id) is not None
    if not is_owner and not refuse:
        return False
    fresh = [f for f in files[:MAX_FILES_OFFERED]
             if f.get("id") and await first_delivery(services.core, f"file-offer:{channel}:{f['id']}")]
    if not fresh:
        return True
    if not is_owner:
        await client.chat_postMessage(channel=channel, **build_owner_only())
        return True
    for f in fresh:
        name = str(f.get("name") or "")
        if not name:
            try:
                info = (await client.files_info(file=str(f["id"]))).get("file") or {}
                name = str(info.get("name") or info.get("title") or "")
            except SlackApiError as exc:
                log.info("files.info %s failed: %s", f["id"], exc)
        await client.chat_postMessage(channel=channel, **build_file_offer(file_name=name or "your file",
                                                                          file_id=str(f["id"])))
    return True


# -- the modal ----------------------------------------------------------------------------------------


async def open_upload_modal(services: SlackServices, client: AsyncWebClient, *, user_id: str, trigger_id: str,
                            team_id: str | None = None, file_id: str | None = None, file_name: str | None = None,
                            refuse: Callable[[], Awaitable[Any]] | None = None) -> bool:
    """Open the upload modal for an owner; anyone else gets `refuse()` (or a modal saying why)."""
    owner = await owner_of(services, user_id, team_id=team_id)
    if owner is None:
        if refuse is not None:
            await refuse()
        else:
            await client.views_open(trigger_id=trigger_id, view=build_notice_modal(
                title="Add a document", text=OWNER_ONLY_TEXT))
        return False
    meta = {"file_id": file_id, "file_name": file_name} if file_id else {}
    await client.views_open(trigger_id=trigger_id, view=build_upload_modal(
        groups=sorted(owner.groups), file_name=file_name if file_id else None, private_metadata=meta))
    return True


def _user(body: Mapping[str, Any]) -> tuple[str, str | None]:
    user = body.get("user") or {}
    return str(user.get("id")), user.get("team_id") or (body.get("team") or {}).get("id")


async def file_shared(services: SlackServices, event: dict[str, Any], body: dict[str, Any], client: AsyncWebClient,
                      context: AsyncBoltContext) -> None:
    async with services.work.run("file_shared listener"):
        channel, user_id = str(event.get("channel_id") or ""), str(event.get("user_id") or "")
        file_id = str(event.get("file_id") or (event.get("file") or {}).get("id") or "")
        # Only files shared in Cairn's DM are offers; Cairn's own uploads (the digest chart) are not.
        if not (channel.startswith("D") and user_id and file_id) or user_id == context.bot_user_id:
            return
        await offer_files(services, client, user_id=user_id, channel=channel, files=[{"id": file_id}],
                          team_id=body.get("team_id"))


async def offer_clicked(services: SlackServices, body: dict[str, Any], client: AsyncWebClient) -> None:
    async with services.work.run("add-to-Cairn button"):
        user_id, team_id = _user(body)
        action = (body.get("actions") or [{}])[0]
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
        try:
            offered = json.loads(str(action.get("value") or "{}"))
        except ValueError:
            offered = {}
        file_id = str(offered.get("id") or "") if isinstance(offered, dict) else ""

        async def refuse() -> None:
            if channel:
                await client.chat_postEphemeral(channel=channel, user=user_id, text=OWNER_ONLY_TEXT)

        if not file_id:
            return
        await open_upload_modal(services, client, user_id=user_id, trigger_id=str(body.get("trigger_id")),
                                team_id=team_id, file_id=file_id, file_name=offered.get("name"), refuse=refuse)


async def open_blank(services: SlackServices, body: dict[str, Any], client: AsyncWebClient) -> None:
    async with services.work.run("upload shortcut"):
        user_id, team_id = _user(body)
        await open_upload_modal(services, client, user_id=user_id, trigger_id=str(body.get("trigger_id")),
                                team_id=team_id)


async def replace_options(services: SlackServices, ack: Any, body: dict[str, Any]) -> None:
    user_id, team_id = _user(body)
    owner = await owner_of(services, user_id, team_id=team_id)
    docs = await managed_documents(services.core, owner, str(body.get("value") or "")) if owner else []
    await ack(options=[document_option(d) for d in docs[:MAX_OPTIONS]])


async def check_submission(services: SlackServices, ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
    user_id, team_id = _user(body)
    checked = await check_upload(services.core, await owner_of(services, user_id, team_id=team_id), parse_upload_form(view))
    if checked.errors:
        await ack(response_action="errors", errors=checked.errors)
    else:
        await ack()  # the modal closes; the status message in the DM takes over


async def submitted(services: SlackServices, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient) -> None:
    user_id, team_id = _user(body)

    async def report() -> None:
        await client.chat_postMessage(channel=await open_dm(client, user_id), **build_notice(
            "Sorry, something went wrong on my side with that upload; please try again."))

    async with services.work.run("upload submission", report):
        owner = await owner_of(services, user_id, team_id=team_id)
        form = parse_upload_form(view)
        checked = await check_upload(services.core, owner, form)
        if owner is None or checked.errors:
            return  # refused while acking: the modal showed why
        await hand_over_upload(services, client, owner=owner, form=form, checked=checked)


async def withdraw(services: SlackServices, body: dict[str, Any], client: AsyncWebClient) -> None:
    user_id, team_id = _user(body)

    async def report() -> None:
        await client.chat_postMessage(channel=await open_dm(client, user_id), **build_notice(
            "Sorry, something went wrong on my side while withdrawing; please try again."))

    async with services.work.run("withdraw button", report):
        doc_id = str(((body.get("actions") or [{}])[0]).get("value") or "")
        owner = await owner_of(services, user_id, team_id=team_id)
        doc = await services.core.catalog.get_document(tenant_id=owner.tenant_id, doc_id=doc_id) if owner else None
        if owner is None or doc is None or not owner.manages(doc):
            await client.chat_postMessage(channel=await open_dm(client, user_id), **build_notice(
                f"You can't withdraw {doc_id}: only a policy owner who administers all of its audience "
                "groups can. Nothing changed."))
            return
        # Its unfinished uploads are cancelled (their status messages say so), eligibility is revoked
        # (one statement), then vectors and text are removed.
        statuses = JobStatusNotifier(client=client, jobs=services.core.jobs)
        if await services.core.ingestor.withdraw(tenant_id=owner.tenant_id, doc_id=doc_id, on_progress=statuses):
            await client.chat_postMessage(channel=await open_dm(client, user_id), **build_notice(
                f"Withdrew {doc.title or doc_id} ({doc_id}): it no longer appears in answers, and its text "
                "and vectors have been removed. Upload it again to bring it back."))
        await refresh_home(services, client, user_id)


def register(app: AsyncApp, services: SlackServices) -> None:
    app.event("file_shared")(ack=ack_now, lazy=[bind(file_shared, services)])
    app.action(ACTION_OFFER_UPLOAD)(ack=ack_now, lazy=[bind(offer_clicked, services)])
    app.action(ACTION_HOME_UPLOAD)(ack=ack_now, lazy=[bind(open_blank, services)])
    app.shortcut(CALLBACK_UPLOAD_SHORTCUT)(ack=ack_now, lazy=[bind(open_blank, services)])
    app.options(ACTION_UPLOAD_REPLACE)(bind(replace_options, services))
    app.view(CALLBACK_UPLOAD_MODAL)(ack=bind(check_submission, services), lazy=[bind(submitted, services)])
    app.action(ACTION_WITHDRAW)(ack=ack_now, lazy=[bind(withdraw, services)])
