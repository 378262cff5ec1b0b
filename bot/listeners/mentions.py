"""`app_mention`: a question addressed to Cairn in a channel. The answer goes in the message's thread,
and later replies in that thread continue the conversation without another mention."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.listeners.flow import (
    Ask,
    SlackServices,
    ack_now,
    answer_in_thread,
    event_keys,
    first_delivery,
    is_person_message,
    show_error,
    strip_mentions,
)
from bot.views import build_help


def register(app: AsyncApp, services: SlackServices) -> None:
    async def handle_mention(body: dict[str, Any], event: dict[str, Any], client: AsyncWebClient,
                             context: AsyncBoltContext) -> None:
        async def report() -> None:
            await show_error(client, channel=str(event.get("channel")),
                             thread_ts=event.get("thread_ts") or event.get("ts"), placeholder_ts=None)

        async with services.work.run("app_mention listener", report):
            await _on_mention(services, client, body, event, context)

    app.event("app_mention")(ack=ack_now, lazy=[handle_mention])


async def _on_mention(services: SlackServices, client: AsyncWebClient, body: dict[str, Any],
                      event: dict[str, Any], context: AsyncBoltContext) -> None:
    if not is_person_message(event, bot_user_id=context.bot_user_id, bot_id=context.bot_id):
        return
    core = services.core
    channel, ts = str(event.get("channel")), str(event.get("ts"))
    thread_ts = str(event.get("thread_ts") or ts)
    if thread_ts != ts and await core.conversations.find_escalation(channel=channel, thread_ts=thread_ts):
        return  # a reply in an escalation thread: the message listener relays it
    if not await first_delivery(core, *event_keys(body, event)):
        return
    text = strip_mentions(str(event.get("text") or ""), context.bot_user_id)
    if not text:
        scope = await services.identity.resolve(str(event["user"]), event_team_id=event.get("user_team"))
        await client.chat_postMessage(channel=channel, thread_ts=thread_ts, **build_help(is_admin=scope.is_admin))
        return
    await answer_in_thread(services, client, Ask(
        team_id=str(body.get("team_id") or context.team_id or ""), channel=channel, user_id=str(event["user"]),
        user_team=event.get("user_team") or event.get("team"), text=text, message_ts=ts, thread_ts=thread_ts))
