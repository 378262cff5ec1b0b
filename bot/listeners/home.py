"""App Home: how to ask, for everyone; the open escalations with age and reason, for admins."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.listeners.flow import SlackServices, ack_now
from bot.views import build_home
from store.db import utcnow

log = logging.getLogger(__name__)


def register(app: AsyncApp, services: SlackServices) -> None:
    core = services.core

    async def publish_home(event: dict[str, Any], client: AsyncWebClient) -> None:
        if event.get("tab", "home") != "home":
            return  # the Messages tab is a DM: the message listener handles what is typed there
        async with services.work.run("app_home_opened listener"):
            user_id = str(event["user"])
            scope = await services.identity.resolve(user_id)
            is_staff = scope.audience == "staff"
            is_admin = scope.is_admin or (is_staff and not core.access.admins_listed)
            escalations = (await core.conversations.list_escalations(open_only=True, tenant_id=scope.tenant_id)
                           if is_admin else [])
            await client.views_publish(user_id=user_id, view=build_home(
                is_staff=is_staff, is_admin=is_admin, escalations=escalations, now=utcnow()))

    app.event("app_home_opened")(ack=ack_now, lazy=[publish_home])
