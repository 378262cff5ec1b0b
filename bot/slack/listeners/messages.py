"""`message` events: direct messages, ask channels, follow-ups in a conversation's thread, and
people's replies in escalation threads.

Which messages Cairn answers:
- every person's message in its DM (`message.im`);
- top-level messages and thread replies in `CAIRN_ASK_CHANNELS`;
- replies in a thread where Cairn already has a conversation (no need to mention it again).
A file shared in Cairn's DM by a policy owner is an upload, not a question (bot/slack/listeners/documents.py).
A message that mentions Cairn in a channel is left to the `app_mention` listener (Slack sends both).
A reply in an escalation thread goes to the user as the person's answer.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.constants import session_id_for
from bot.slack.context import SlackServices
from bot.slack.intake import event_keys, first_delivery, mentions, on_person_message, strip_mentions
from bot.slack.listeners.documents import offer_files
from bot.slack.text import decode
from bot.slack.turn import Ask, answer_in_thread
from graph.runner import EscalationError
from store.records import EscalationRecord

log = logging.getLogger(__name__)

# A reply under one of Cairn's own thread roots that names no escalation yet is looked up again after these
# pauses (seconds): the replica that posted the root stores its ts only once Slack has answered the post.
ROOT_SETTLING = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


def register(app: AsyncApp, services: SlackServices) -> None:
    # Only a DM is surely addressed to Cairn; elsewhere the message may not have been for it.
    on_person_message(app, services, "message", _on_message,
                     report_if=lambda event: event.get("channel_type") == "im")


async def _on_message(services: SlackServices, client: AsyncWebClient, body: dict[str, Any],
                      event: dict[str, Any], context: AsyncBoltContext) -> None:
    core = services.core
    channel, ts = str(event.get("channel")), str(event.get("ts"))
    thread_ts = event.get("thread_ts")
    raw_text = str(event.get("text") or "")
    team_id = str(body.get("team_id") or context.team_id or "")

    if event.get("subtype") == "file_share" and event.get("channel_type") == "im" and event.get("files"):
        if await offer_files(services, client, user_id=str(event["user"]), channel=channel, files=event["files"],
                             team_id=event.get("user_team") or event.get("team"), refuse=not raw_text.strip()):
            return  # an owner's upload (or a bare file from someone else): not a question

    if thread_ts and thread_ts != ts:
        escalation = await _escalation_of_thread(services, event, channel=channel, thread_ts=str(thread_ts),
                                                 bot_user_id=context.bot_user_id)
        if escalation is not None:
            await _on_escalation_reply(services, client, body, event, escalation)
            return

    if event.get("channel_type") != "im":
        if mentions(raw_text, context.bot_user_id):
            return  # the app_mention listener answers it
        if channel not in services.settings.ask_channels:
            if not thread_ts:
                return
            session_id = session_id_for(team_id=team_id, channel=channel, thread_ts=str(thread_ts))
            if await core.conversations.get_session(session_id=session_id) is None:
                return  # a thread Cairn is not part of

    text = decode(strip_mentions(raw_text, context.bot_user_id)).strip()
    if not text or not await first_delivery(core, *event_keys(body, event)):
        return
    await answer_in_thread(services, client, Ask.from_event(body, event, context, text=text,
                                                            thread_ts=str(thread_ts or ts)))


async def _escalation_of_thread(services: SlackServices, event: dict[str, Any], *, channel: str, thread_ts: str,
                                bot_user_id: str | None) -> EscalationRecord | None:
    """The escalation whose thread `thread_ts` is, if any. Under a root Cairn posted itself (Slack's
    `parent_user_id`), a thread not known yet may be one whose root was just posted by another replica, or
    by this one, that has not stored the root's ts yet: it is looked up again for a few seconds."""
    find = services.core.conversations.find_escalation
    escalation = await find(channel=channel, thread_ts=thread_ts)
    if escalation is not None or not bot_user_id or event.get("parent_user_id") != bot_user_id:
        return escalation
    for pause in ROOT_SETTLING:
        await asyncio.sleep(pause)
        if (escalation := await find(channel=channel, thread_ts=thread_ts)) is not None:
            return escalation
    return None


async def _on_escalation_reply(services: SlackServices, client: AsyncWebClient, body: dict[str, Any],
                               event: dict[str, Any], escalation: EscalationRecord) -> None:
    """A person answered in the escalation thread: relay it to the user, once."""
    user_id, ts = str(event["user"]), str(event["ts"])
    # A person handling the escalation: their mentions and links stay live when relayed (bot/slack/text.py).
    text = decode(str(event.get("text") or ""), keep_people=True).strip()
    if not text or not await first_delivery(services.core, *event_keys(body, event)):
        return
    scope = await services.identity.resolve(user_id, event_team_id=event.get("user_team") or event.get("team"))
    if not services.desk.may_handle(scope, escalation):
        log.info("escalation %s: %s may not answer (not an admin)", escalation.escalation_id, user_id)
        try:
            await client.chat_postEphemeral(channel=str(event["channel"]), thread_ts=escalation.thread_ts,
                                            user=user_id, text="Only Cairn admins can answer escalations; "
                                                               "your message was not sent to the user.")
        except Exception:
            log.exception("could not tell %s", user_id)
        return
    try:
        await services.desk.reply(escalation.escalation_id, admin_id=user_id,
                                  admin_name=await services.identity.display_name(user_id), text=text,
                                  message_key=ts)
    except EscalationError:
        await services.threads.note(escalation, "This escalation is closed; replies here are no longer sent to "
                                                "the user.")
    except Exception:
        log.exception("escalation %s: reply %s failed", escalation.escalation_id, ts)
        await services.threads.note(escalation, ":warning: Something went wrong relaying that reply; please try "
                                                "again.")
