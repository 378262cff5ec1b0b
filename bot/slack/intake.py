"""Event intake: which Slack events carry a person's words for Cairn, acked at once, run lazily, and
deduplicated (Slack's retries, duplicate event ids, the app_mention + message pair of one mention)."""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.services import Services
from bot.slack.context import SlackServices
from bot.slack.turn import show_error

# Message subtypes that carry a person's words; everything else (edits, deletions, joins, bot posts…)
# is not a question.
USER_SUBTYPES = frozenset({None, "thread_broadcast", "file_share"})


async def ack_now(ack: Any) -> None:
    """Acknowledge at once (Slack wants it within 3 seconds); the work runs in a lazy listener."""
    await ack()


EventHandler = Callable[[SlackServices, AsyncWebClient, dict[str, Any], dict[str, Any], AsyncBoltContext],
                        Awaitable[None]]


def on_person_message(app: AsyncApp, services: SlackServices, event_type: str, handle: EventHandler, *,
                      report_if: Callable[[Mapping[str, Any]], bool] = lambda event: True) -> None:
    """Register `handle(services, client, body, event, context)` for a person's message in `event_type`
    events (bots, edits and joins never reach it): acked at once, run lazily and tracked; a failure is
    shown in the message's thread where `report_if(event)` says it was for Cairn (elsewhere, silence is
    kinder than an error nobody asked for)."""
    async def lazy(body: dict[str, Any], event: dict[str, Any], client: AsyncWebClient,
                   context: AsyncBoltContext) -> None:
        if not is_person_message(event, bot_user_id=context.bot_user_id, bot_id=context.bot_id):
            return

        async def report() -> None:
            if report_if(event):
                await show_error(client, channel=str(event.get("channel")),
                                 thread_ts=event.get("thread_ts") or event.get("ts"), placeholder_ts=None)

        async with services.work.run(f"{event_type} listener", report):
            await handle(services, client, body, event, context)

    lazy.__name__ = lazy.__qualname__ = f"handle_{event_type}"  # what Bolt's logs call it
    app.event(event_type)(ack=ack_now, lazy=[lazy])


# -- who is speaking -----------------------------------------------------------------------------


def is_person_message(event: Mapping[str, Any], *, bot_user_id: str | None, bot_id: str | None) -> bool:
    """A person's message: not a bot (ours or another), not an edit, deletion, join or other subtype."""
    if event.get("subtype") not in USER_SUBTYPES or event.get("bot_id") or event.get("bot_profile"):
        return False
    user = event.get("user")
    return bool(user) and user != bot_user_id and (bot_id is None or event.get("bot_id") != bot_id)


def mentions(text: str, user_id: str | None) -> bool:
    return bool(user_id) and f"<@{user_id}" in text


def strip_mentions(text: str, user_id: str | None) -> str:
    if user_id:
        text = re.sub(rf"<@{re.escape(user_id)}(?:\|[^>]*)?>", " ", text)
    return re.sub(r"\s+", " ", text).strip()


async def first_delivery(services: Services, *keys: str | None) -> bool:
    """True only when none of the keys was seen before (all are recorded either way, at once): Slack
    retries and duplicate event ids, on this replica or another, and the app_mention + message pair
    Slack sends for one mention."""
    return await services.conversations.first_seen(*(key for key in keys if key))


def event_keys(body: Mapping[str, Any], event: Mapping[str, Any]) -> tuple[str | None, str | None]:
    event_id = body.get("event_id")
    channel, ts = event.get("channel"), event.get("ts")
    return (f"event:{event_id}" if event_id else None, f"message:{channel}:{ts}" if channel and ts else None)


def bind(listener: Callable[..., Awaitable[None]], services: SlackServices) -> Callable[..., Awaitable[None]]:
    """A module-level listener `listener(services, **bolt_kwargs)` as Bolt wants it: Bolt reads the
    remaining parameter names and injects those (body, client, ack, …); its logs keep the name."""
    bound = functools.partial(listener, services)
    bound.__name__ = listener.__name__  # type: ignore[attr-defined]
    return bound
