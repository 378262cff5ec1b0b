"""Message shortcut "Why this answer?": on one of Cairn's answers, show the person who asked it (or an
admin) the turn's trace — route, reason, the chunks and their scores — as an ephemeral message."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.constants import CALLBACK_WHY_THIS_ANSWER
from bot.slack.context import SlackServices
from bot.slack.intake import ack_now, bind
from bot.slack.views import Message, answer_turn_id, build_notice, build_turn_explanation

log = logging.getLogger(__name__)

NOT_AN_ANSWER = "That message isn't one of my answers; use *Why this answer?* on a message where I answered."
NOT_YOURS = ("Sorry, only the person who asked, or a Cairn admin, can see why I answered that way. "
             "If something in the answer looks wrong, press 👎 or *Talk to a person* under it.")


async def why_this_answer(services: SlackServices, body: dict[str, Any], client: AsyncWebClient, respond: Any,
                          context: AsyncBoltContext) -> None:
    user_id = str((body.get("user") or {}).get("id"))
    channel = str((body.get("channel") or {}).get("id") or "")
    message = body.get("message") or {}

    async def show(reply: Message) -> None:
        try:
            await client.chat_postEphemeral(channel=channel, user=user_id, thread_ts=message.get("thread_ts"), **reply)
        except SlackApiError as exc:  # e.g. a channel Cairn is not in: the shortcut's response URL works
            log.info("chat.postEphemeral failed (%s); answering through the response URL", exc)
            await respond(response_type="ephemeral", replace_original=False, **reply)

    async with services.work.run("why-this-answer shortcut",
                                 lambda: show(build_notice("Sorry, something went wrong on my side."))):
        from_cairn = (message.get("bot_id") and message.get("bot_id") == context.bot_id) or (
            message.get("user") and message.get("user") == context.bot_user_id)
        turn_id = answer_turn_id(message) if from_cairn else None
        turn = await services.core.conversations.get_turn(turn_id=turn_id) if turn_id else None
        if turn is None:
            await show(build_notice(NOT_AN_ANSWER))
        elif user_id != turn.user_id and not services.core.access.is_admin(user_id):
            await show(build_notice(NOT_YOURS))
        else:
            await show(build_turn_explanation(turn))


def register(app: AsyncApp, services: SlackServices) -> None:
    app.shortcut(CALLBACK_WHY_THIS_ANSWER)(ack=ack_now, lazy=[bind(why_this_answer, services)])
