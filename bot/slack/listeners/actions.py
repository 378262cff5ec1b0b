"""Buttons: under an answer (Talk to a person, 👍/👎) and on an escalation thread (Resolve, Claim)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.constants import (
    ACTION_CLAIM,
    ACTION_FEEDBACK_DOWN,
    ACTION_FEEDBACK_UP,
    ACTION_RESOLVE,
    ACTION_TALK_TO_PERSON,
    parse_session_id,
)
from bot.slack.context import SlackServices
from bot.slack.intake import ack_now, bind, first_delivery
from bot.slack.turn import TALK_TO_PERSON_QUESTION, Ask, answer_in_thread, turn_id_for
from escalations.desk import Closing, EscalationDesk
from store.records import EscalationRecord

log = logging.getLogger(__name__)


def clicked(body: dict[str, Any]) -> tuple[str, str, str | None, str | None]:
    """(user id, button value, channel, message ts) of a block_actions payload."""
    action = (body.get("actions") or [{}])[0]
    channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
    ts = (body.get("message") or {}).get("ts") or (body.get("container") or {}).get("message_ts")
    return str(body["user"]["id"]), str(action.get("value") or ""), channel, ts


async def tell_clicker(client: AsyncWebClient, *, channel: str | None, user: str, text: str,
                thread_ts: str | None = None) -> None:
    """A note only the clicker sees."""
    if not channel:
        return
    try:
        await client.chat_postEphemeral(channel=channel, user=user, text=text, thread_ts=thread_ts)
    except SlackApiError as exc:
        log.info("chat.postEphemeral failed: %s", exc)


def failure_reporter(client: AsyncWebClient, body: dict[str, Any]) -> Callable[[], Awaitable[None]]:
    """What a failed button says to the person who pressed it."""
    async def report() -> None:
        user_id, _, channel, _ = clicked(body)
        await tell_clicker(client, channel=channel, user=user_id, text="Sorry, something went wrong on my side; "
                                                                "please try again.")
    return report


async def talk_to_person(services: SlackServices, body: dict[str, Any], client: AsyncWebClient) -> None:
    async with services.work.run("talk_to_person button", failure_reporter(client, body)):
        user_id, session_id, channel, message_ts = clicked(body)
        parts = parse_session_id(session_id)
        if parts is None:
            await tell_clicker(client, channel=channel, user=user_id, text="I can't find that conversation any more.")
            return
        team_id, session_channel, thread_ts = parts
        click_key = f"talk:{session_id}:{message_ts}"
        if not await first_delivery(services.core, click_key):
            await tell_clicker(client, channel=session_channel, user=user_id, thread_ts=thread_ts,
                        text="I've already passed this conversation to a person.")
            return
        await answer_in_thread(services, client, Ask(
            team_id=team_id, channel=session_channel, user_id=user_id,
            user_team=(body.get("user") or {}).get("team_id"), text=TALK_TO_PERSON_QUESTION,
            message_ts=str(message_ts), thread_ts=thread_ts),
            turn_id=turn_id_for(session_channel, f"talk:{message_ts}"))


async def feedback(services: SlackServices, body: dict[str, Any], client: AsyncWebClient) -> None:
    async with services.work.run("feedback button", failure_reporter(client, body)):
        conversations = services.core.conversations
        user_id, turn_id, channel, message_ts = clicked(body)
        value = 1 if body["actions"][0]["action_id"] == ACTION_FEEDBACK_UP else -1
        if await conversations.get_turn(turn_id=turn_id) is None:
            return
        await conversations.record_feedback(turn_id=turn_id, user_id=user_id, value=value)
        thread_ts = (body.get("message") or {}).get("thread_ts") or message_ts
        await tell_clicker(client, channel=channel, user=user_id, thread_ts=thread_ts,
                    text="Thanks, your feedback was recorded." if value > 0
                    else "Thanks, your feedback was recorded. Press *Talk to a person* if you still need help.")


async def _press(services: SlackServices, body: dict[str, Any], client: AsyncWebClient, verb: str,
                 close: Callable[[EscalationDesk, str, str], Awaitable[Closing]],
                 closed_as: Callable[[EscalationRecord], str]) -> None:
    """Resolve and Claim on an escalation thread: for those who may handle it, and a second press says
    who was first."""
    async with services.work.run(f"{verb} button", failure_reporter(client, body)):
        user_id, escalation_id, channel, _ = clicked(body)
        escalation = await services.desk.get(escalation_id)
        if escalation is None:
            return
        scope = await services.identity.resolve(user_id, event_team_id=(body.get("user") or {}).get("team_id"))
        if not services.desk.may_handle(scope, escalation):
            await tell_clicker(client, channel=channel, user=user_id, text=f"Only Cairn admins can {verb} escalations.")
            return
        closing = await close(services.desk, escalation_id, user_id)
        if closing.result == "already" and closing.escalation is not None:
            await tell_clicker(client, channel=channel, user=user_id,
                        text=f"{escalation_id} is already {closed_as(closing.escalation)}.")


async def resolve(services: SlackServices, body: dict[str, Any], client: AsyncWebClient) -> None:
    await _press(services, body, client, "resolve",
                 lambda desk, escalation_id, admin: desk.resolve(escalation_id, admin_id=admin),
                 lambda e: e.status + (f" by <@{e.resolved_by}>" if e.resolved_by else ""))


async def claim(services: SlackServices, body: dict[str, Any], client: AsyncWebClient) -> None:
    await _press(services, body, client, "claim",
                 lambda desk, escalation_id, admin: desk.claim(escalation_id, admin_id=admin),
                 lambda e: f"claimed by <@{e.claimed_by}>" if e.claimed_by else e.status)


def register(app: AsyncApp, services: SlackServices) -> None:
    app.action(ACTION_TALK_TO_PERSON)(ack=ack_now, lazy=[bind(talk_to_person, services)])
    app.action(ACTION_FEEDBACK_UP)(ack=ack_now, lazy=[bind(feedback, services)])
    app.action(ACTION_FEEDBACK_DOWN)(ack=ack_now, lazy=[bind(feedback, services)])
    app.action(ACTION_RESOLVE)(ack=ack_now, lazy=[bind(resolve, services)])
    app.action(ACTION_CLAIM)(ack=ack_now, lazy=[bind(claim, services)])
