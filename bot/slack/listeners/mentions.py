"""`app_mention`: a question addressed to Cairn in a channel. The answer goes in the message's thread,
and later replies in that thread continue the conversation without another mention."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.context import SlackServices
from bot.slack.intake import event_keys, first_delivery, on_person_message, strip_mentions
from bot.slack.text import decode
from bot.slack.turn import Ask, answer_in_thread
from bot.slack.views import build_help


def register(app: AsyncApp, services: SlackServices) -> None:
    on_person_message(app, services, "app_mention", _on_mention)


async def _on_mention(services: SlackServices, client: AsyncWebClient, body: dict[str, Any],
                      event: dict[str, Any], context: AsyncBoltContext) -> None:
    core = services.core
    channel, ts = str(event.get("channel")), str(event.get("ts"))
    thread_ts = str(event.get("thread_ts") or ts)
    if thread_ts != ts and await core.conversations.find_escalation(channel=channel, thread_ts=thread_ts):
        return  # a reply in an escalation thread: the message listener relays it
    if not await first_delivery(core, *event_keys(body, event)):
        return
    text = decode(strip_mentions(str(event.get("text") or ""), context.bot_user_id)).strip()
    if not text:
        scope = await services.identity.resolve(str(event["user"]), event_team_id=event.get("user_team"))
        await client.chat_postMessage(channel=channel, thread_ts=thread_ts, **build_help(is_admin=scope.is_admin))
        return
    await answer_in_thread(services, client, Ask.from_event(body, event, context, text=text, thread_ts=thread_ts))
