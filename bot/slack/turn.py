"""One turn in Slack, from placeholder to answer.

Resolve the asker's scope (bot/slack/identity.py), post a placeholder in the thread, run
the turn through the runner, then replace the placeholder with what the outcome says: an answer
with readable sources, an abstention plus an escalation thread, a "a person is on it" note, or an
error. Anything that goes wrong ends as a visible message in the thread, never as silence.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.constants import session_id_for
from bot.slack.context import SlackServices
from bot.slack.text import encode
from bot.slack.views import build_answer, build_error, build_notice, build_placeholder
from graph.runner import TurnOutcome
from store.records import Scope

log = logging.getLogger(__name__)

# Only the asker sees it, under a channel answer computed from what every member may read.
PRIVATE_ANSWER = ("This answer uses only what everyone in this channel may read. You may read more on this, so "
                  "I've sent you an answer from everything you have access to in our direct messages.")
# Said instead of "a person will answer" when no channel and no admin could be reached in Slack.
UNREACHABLE = ("I couldn't reach anyone on the Cairn team in Slack just now, so nobody has seen your question yet. "
               "It is saved as {escalation_id} and the Cairn admins can find it with `cairn escalations`; if it is "
               "urgent, please contact them directly.")

TALK_TO_PERSON_QUESTION = "I want to talk to a person."


def turn_id_for(channel: str, message_ts: str) -> str:
    """One turn per Slack message: a re-delivered message maps to the same turn and escalation."""
    return "t-" + hashlib.sha256(f"{channel}:{message_ts}".encode()).hexdigest()[:16]


# -- one turn --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ask:
    team_id: str
    channel: str
    user_id: str
    user_team: str | None
    text: str
    message_ts: str  # the user's message (or, for `/cairn ask`, the root Cairn posted)
    thread_ts: str  # the conversation's root

    @classmethod
    def from_event(cls, body: Mapping[str, Any], event: Mapping[str, Any], context: AsyncBoltContext, *,
                   text: str, thread_ts: str) -> Ask:
        """The question a person's message (or mention) asks, answered in `thread_ts`."""
        return cls(team_id=str(body.get("team_id") or context.team_id or ""), channel=str(event.get("channel")),
                   user_id=str(event["user"]), user_team=event.get("user_team") or event.get("team"), text=text,
                   message_ts=str(event.get("ts")), thread_ts=thread_ts)

    @property
    def session_id(self) -> str:
        return session_id_for(team_id=self.team_id, channel=self.channel, thread_ts=self.thread_ts)


async def answer_in_thread(services: SlackServices, client: AsyncWebClient, ask: Ask, *,
                           turn_id: str | None = None) -> TurnOutcome | None:
    """Placeholder, turn, update. Returns the outcome (None when the turn could not run)."""
    placeholder_ts: str | None = None
    try:
        asker = await services.identity.resolve(ask.user_id, event_team_id=ask.user_team)
        # Everyone in the conversation reads the answer: it may use only what all of them may read.
        scope = await services.audience.scope_for(channel=ask.channel, asker=asker)
        placeholder = await client.chat_postMessage(channel=ask.channel, thread_ts=ask.thread_ts,
                                                    **build_placeholder())
        placeholder_ts = str(placeholder["ts"])
        async with services.turn_slots:
            outcome = await services.core.runner.ask(
                session_id=ask.session_id, scope=scope, question=ask.text, surface="slack", channel=ask.channel,
                thread_ts=ask.thread_ts, turn_id=turn_id or turn_id_for(ask.channel, ask.message_ts))
        await show_outcome(services, client, ask, outcome, placeholder_ts=placeholder_ts)
        if not asker.groups <= scope.groups and outcome.route != "conversation":  # "hi" asks nothing
            await _offer_a_private_answer(services, client, ask, asker, outcome)
        return outcome
    except Exception:
        log.exception("turn in %s/%s failed", ask.channel, ask.thread_ts)
        await show_error(client, channel=ask.channel, thread_ts=ask.thread_ts, placeholder_ts=placeholder_ts)
        return None


async def _offer_a_private_answer(services: SlackServices, client: AsyncWebClient, ask: Ask, asker: Scope,
                                  outcome: TurnOutcome) -> None:
    """The channel got the answer everyone there may read; when the asker may read a better one, it goes
    to them alone: a conversation in their DM (the question quoted as its root, like `/cairn ask`), and a
    note only they see in the channel thread."""
    try:
        mine = await services.core.searcher.search(ask.text, asker)
    except Exception:
        log.exception("private search for %s failed", ask.user_id)
        return
    shown = {p.chunk_id for p in outcome.passages}
    if mine.gate is not None or not mine.passages or mine.passages[0].chunk_id in shown:
        return
    try:
        dm = str((await client.conversations_open(users=ask.user_id))["channel"]["id"])
        root = await client.chat_postMessage(channel=dm, text=f"You asked in <#{ask.channel}>: {encode(ask.text)}")
        await client.chat_postEphemeral(channel=ask.channel, user=ask.user_id, thread_ts=ask.thread_ts,
                                        **build_notice(PRIVATE_ANSWER))
    except SlackApiError as exc:
        log.info("the private answer could not be offered: %s", exc)
        return
    root_ts = str(root["ts"])
    await answer_in_thread(services, client, Ask(
        team_id=ask.team_id, channel=dm, user_id=ask.user_id, user_team=ask.user_team, text=ask.text,
        message_ts=root_ts, thread_ts=root_ts))


async def show_outcome(services: SlackServices, client: AsyncWebClient, ask: Ask, outcome: TurnOutcome, *,
                       placeholder_ts: str) -> None:
    if outcome.route == "answer":
        message = build_answer(answer=outcome.answer, citations=outcome.citations, turn_id=outcome.turn_id,
                               session_id=outcome.session_id)
    else:
        message = build_notice(outcome.answer, turn_id=outcome.turn_id)
    try:
        await client.chat_update(channel=ask.channel, ts=placeholder_ts, **message)
    except Exception:
        # The asker sees an error instead (answer_in_thread), but a question for a person must still reach one.
        if outcome.escalation is not None:
            await _hand_to_a_person(services, client, ask, outcome)
        raise
    if outcome.escalation is not None:
        await _hand_to_a_person(services, client, ask, outcome)


async def _hand_to_a_person(services: SlackServices, client: AsyncWebClient, ask: Ask, outcome: TurnOutcome) -> None:
    """Open (or add to) the escalation's thread; if nobody at all could be reached, tell the asker so."""
    escalation = outcome.escalation
    if escalation is None or outcome.route not in ("escalate", "error", "escalate_pending"):
        return
    try:
        link = await services.threads.conversation_link(channel=ask.channel, message_ts=ask.thread_ts,
                                                        team_id=ask.team_id)
        if outcome.route == "escalate_pending":
            await services.threads.append_to_thread(escalation, user_id=ask.user_id, text=ask.text, link=link)
            return
        opened = await services.threads.open_escalation_thread(escalation, link=link)
    except Exception:
        log.exception("escalation %s: the thread could not be updated", escalation.escalation_id)
        return
    if not opened.thread_ts:
        await client.chat_postMessage(channel=ask.channel, thread_ts=ask.thread_ts,
                                      **build_notice(UNREACHABLE.format(escalation_id=escalation.escalation_id)))


async def show_error(client: AsyncWebClient, *, channel: str, thread_ts: str | None,
                     placeholder_ts: str | None) -> None:
    """The last resort: say something went wrong, in place of the placeholder or as a new reply."""
    try:
        if placeholder_ts:
            await client.chat_update(channel=channel, ts=placeholder_ts, **build_error())
        else:
            await client.chat_postMessage(channel=channel, thread_ts=thread_ts, **build_error())
    except Exception:
        log.exception("could not even report the error in %s/%s", channel, thread_ts)
