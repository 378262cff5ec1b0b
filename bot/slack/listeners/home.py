"""App Home: how to ask, for everyone; the open escalations with age and reason, for admins; and for
policy owners, their documents (each with Withdraw) and their recent uploads, read from the database
when the tab opens (a snapshot, not a replay)."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.context import SlackServices
from bot.slack.document_views import build_owner_home
from bot.slack.intake import ack_now, bind
from bot.slack.source_views import build_source_blocks
from bot.slack.uploads import managed_documents, owner_of
from bot.slack.views import build_home
from store.db import utcnow

log = logging.getLogger(__name__)

HOME_JOBS = 10


async def refresh_home(services: SlackServices, client: AsyncWebClient, user_id: str) -> None:
    core = services.core
    scope = await services.identity.resolve(user_id)
    is_staff = scope.audience == "staff"
    is_admin = services.desk.may_handle(scope)
    escalations = (await core.conversations.list_escalations(open_only=True, tenant_id=scope.tenant_id)
                   if is_admin else [])
    owner = await owner_of(services, user_id)
    owner_blocks: list[dict[str, Any]] = []
    if owner:
        documents = await managed_documents(core, owner)
        owner_blocks = build_owner_home(jobs=await core.jobs.list(requested_by=user_id, limit=HOME_JOBS),
                                        documents=documents, now=utcnow())
        owner_blocks += build_source_blocks(await core.store.sources.sources_of_documents(
            tenant_id=owner.tenant_id, doc_ids=[d.doc_id for d in documents]))
    await client.views_publish(user_id=user_id, view=build_home(
        is_staff=is_staff, is_admin=is_admin, escalations=escalations, now=utcnow(), owner_blocks=owner_blocks))


async def publish_home(services: SlackServices, event: dict[str, Any], client: AsyncWebClient) -> None:
    if event.get("tab", "home") != "home":
        return  # the Messages tab is a DM: the message listener handles what is typed there
    async with services.work.run("app_home_opened listener"):
        await refresh_home(services, client, str(event["user"]))


def register(app: AsyncApp, services: SlackServices) -> None:
    app.event("app_home_opened")(ack=ack_now, lazy=[bind(publish_home, services)])
