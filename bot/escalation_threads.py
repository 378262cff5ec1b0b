"""Escalation threads: where a person sees a question Cairn would not answer, and answers it.

One thread per escalation, in the owning team's channel when the evidence belongs to a document with
an owner, else in CAIRN_ESCALATION_CHANNEL. Its channel and ts live on the escalation row, so an
admin's reply finds its escalation after a restart. Replies are delivered through the runner, which
records each (escalation, message ts) once: a retried event never reaches the user twice.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Literal

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.identity import IdentityResolver
from bot.services import Services
from bot.settings import Settings
from bot.views import (
    Message,
    build_admin_answer,
    build_escalation_root,
    build_notice,
    build_thread_followup,
    build_thread_note,
)
from graph.runner import EscalationError, TurnOutcome
from graph.state import AdminReply
from store.access import EVERYONE
from store.conversations import ACTIVE_STATUSES
from store.records import EscalationRecord

log = logging.getLogger(__name__)

RELAYED_REACTION = "white_check_mark"

CloseResult = Literal["done", "already", "not_found"]


@dataclass(frozen=True)
class Closing:
    """`done`: this call changed it; `already`: it was closed (or claimed) before; `not_found`."""

    result: CloseResult
    escalation: EscalationRecord | None


class EscalationThreads:
    def __init__(self, *, client: AsyncWebClient, services: Services, identity: IdentityResolver,
                 settings: Settings | None = None) -> None:
        self._client = client
        self._services = services
        self._settings = settings or services.settings
        self._identity = identity
        self._locks: dict[str, asyncio.Lock] = {}

    def _lock(self, escalation_id: str) -> asyncio.Lock:
        return self._locks.setdefault(escalation_id, asyncio.Lock())

    # -- where the thread goes, and who may answer in it -------------------------------------------

    async def channels_for(self, escalation: EscalationRecord) -> list[str]:
        """The owner's channel when the evidence (passages at or above the floor) has an owner; then
        the escalation channel. A question Cairn found nothing for belongs to no owner."""
        settings, access = self._settings, self._services.access
        channels: list[str] = []
        evidence = [p for p in escalation.passages
                    if float(str(p.get("score") or 0.0)) >= settings.rerank_min_score and p.get("doc_id")]
        if evidence:
            doc = await self._services.catalog.get_document(tenant_id=escalation.tenant_id,
                                                            doc_id=str(evidence[0]["doc_id"]))
            if doc is not None:
                owner = doc.owner or access.owner_channel_for(doc.tenant_id, set(doc.groups) - {EVERYONE})
                if owner:
                    channels.append(owner)
        if settings.escalation_channel and settings.escalation_channel not in channels:
            channels.append(settings.escalation_channel)
        return channels

    def may_answer(self, user_id: str, escalation: EscalationRecord) -> bool:
        """Anyone in the thread's channel, unless the access file names admins; then admins, and the
        owners of the tenant's documents when the thread is in an owner's channel."""
        access = self._services.access
        if not access.admins_listed or access.is_admin(user_id):
            return True
        in_owner_channel = escalation.channel not in (None, self._settings.escalation_channel)
        return in_owner_channel and bool(access.owned_groups(user_id, escalation.tenant_id))

    # -- the user's side ---------------------------------------------------------------------------

    async def conversation_link(self, *, channel: str, message_ts: str, team_id: str | None = None) -> str:
        try:
            resp = await self._client.chat_getPermalink(channel=channel, message_ts=message_ts)
            if resp.get("permalink"):
                return str(resp["permalink"])
        except SlackApiError as exc:
            log.info("chat.getPermalink failed (%s); using a slack:// link", exc)
        team = f"team={team_id}&" if team_id else ""
        return f"slack://channel?{team}id={channel}&message={message_ts}"

    async def _session_link(self, escalation: EscalationRecord) -> str:
        session = await self._services.conversations.get_session(session_id=escalation.session_id)
        if session is None or not session.channel or not session.thread_ts:
            return f"session {escalation.session_id}"
        team = escalation.session_id.split(":")[1] if escalation.session_id.count(":") >= 3 else None
        return await self.conversation_link(channel=session.channel, message_ts=session.thread_ts, team_id=team)

    async def post_to_user(self, escalation: EscalationRecord, message: Message) -> bool:
        """Post into the user's thread (the session's channel and root ts). False for non-Slack sessions."""
        session = await self._services.conversations.get_session(session_id=escalation.session_id)
        if session is None or session.surface != "slack" or not session.channel:
            return False
        await self._client.chat_postMessage(channel=session.channel, thread_ts=session.thread_ts, **message)
        return True

    # -- the escalation thread ---------------------------------------------------------------------

    async def open_escalation_thread(self, escalation: EscalationRecord, *, link: str) -> EscalationRecord:
        """Post the thread's root once (an escalation that has a thread keeps it); store channel and ts."""
        async with self._lock(escalation.escalation_id):
            fresh = await self._services.conversations.get_escalation(escalation_id=escalation.escalation_id)
            escalation = fresh or escalation
            if escalation.thread_ts:
                return escalation
            channels = await self.channels_for(escalation)
            if not channels:
                log.error("escalation %s: no CAIRN_ESCALATION_CHANNEL configured; it waits in "
                          "`cairn escalations`", escalation.escalation_id)
                return escalation
            for channel in channels:
                try:
                    resp = await self._client.chat_postMessage(channel=channel,
                                                               **build_escalation_root(escalation, link=link))
                except SlackApiError as exc:
                    log.warning("escalation %s: cannot post in %s (%s)", escalation.escalation_id, channel,
                                exc.response.get("error"))
                    continue
                await self._services.conversations.set_thread(
                    escalation_id=escalation.escalation_id, channel=str(resp["channel"]), thread_ts=str(resp["ts"]))
                updated = await self._services.conversations.get_escalation(escalation_id=escalation.escalation_id)
                return updated or escalation
            log.error("escalation %s: no channel accepted the thread (%s)", escalation.escalation_id, channels)
            return escalation

    async def append_to_thread(self, escalation: EscalationRecord, *, user_id: str, text: str,
                               link: str) -> None:
        """A user's follow-up while a person is on it: into the same thread (opened now if it failed before)."""
        if not escalation.thread_ts:
            escalation = await self.open_escalation_thread(escalation, link=link)
        if not (escalation.channel and escalation.thread_ts):
            return
        await self._client.chat_postMessage(channel=escalation.channel, thread_ts=escalation.thread_ts,
                                            **build_thread_followup(user_id=user_id, text=text))

    async def note(self, escalation: EscalationRecord, text: str) -> None:
        if escalation.channel and escalation.thread_ts:
            await self._client.chat_postMessage(channel=escalation.channel, thread_ts=escalation.thread_ts,
                                                **build_thread_note(text))

    async def refresh_root(self, escalation: EscalationRecord) -> None:
        """Re-render the root (status, buttons) after a claim or a close."""
        if not (escalation.channel and escalation.thread_ts):
            return
        link = await self._session_link(escalation)
        await self._client.chat_update(channel=escalation.channel, ts=escalation.thread_ts,
                                       **build_escalation_root(escalation, link=link))

    # -- a person's side ---------------------------------------------------------------------------

    async def deliver_admin_reply(self, escalation: EscalationRecord, *, admin_id: str, text: str,
                                  message_ts: str) -> TurnOutcome | None:
        """Resume the conversation with this reply and post it in the user's thread, once per message.

        None when this reply was already delivered. Raises EscalationError when the escalation is closed.
        """
        name = await self._identity.display_name(admin_id)
        reply = AdminReply(type="admin_reply", admin_id=admin_id, admin_name=name, text=text, message_key=message_ts)
        outcome = await self._services.runner.resume(escalation_id=escalation.escalation_id, reply=reply)
        if outcome is None:
            return None
        try:
            delivered = await self.post_to_user(escalation, build_admin_answer(text=outcome.answer,
                                                                               turn_id=outcome.turn_id))
        except SlackApiError as exc:
            log.error("escalation %s: reply %s not delivered: %s", escalation.escalation_id, message_ts, exc)
            await self.note(escalation, f":warning: I couldn't deliver that reply to the user "
                                        f"({exc.response.get('error')}). Please try again.")
            return outcome
        if delivered and escalation.channel:
            try:
                await self._client.reactions_add(channel=escalation.channel, timestamp=message_ts,
                                                 name=RELAYED_REACTION)
            except SlackApiError as exc:  # the reaction is a courtesy; the reply already arrived
                log.info("reactions.add failed: %s", exc)
        return outcome

    async def resolve(self, escalation_id: str, *, admin_id: str) -> Closing:
        """Close exactly once, from a button or `/cairn resolve`: the second call changes nothing."""
        async with self._lock(escalation_id):
            conversations = self._services.conversations
            before = await conversations.get_escalation(escalation_id=escalation_id)
            if before is None:
                return Closing("not_found", None)
            if before.status not in ACTIVE_STATUSES:
                return Closing("already", before)
            try:
                outcome = await self._services.runner.resolve(escalation_id=escalation_id, resolved_by=admin_id)
            except EscalationError:
                return Closing("already", await conversations.get_escalation(escalation_id=escalation_id))
            after = await conversations.get_escalation(escalation_id=escalation_id)
            if after is None or after.status != "resolved" or after.resolved_by != admin_id:
                return Closing("already", after)
            if outcome is not None:  # unanswered: the user hears that it closed
                await self._best_effort(self.post_to_user(after, build_notice(outcome.answer)), "closing note")
            await self._best_effort(self.refresh_root(after), "root update")
            await self._best_effort(self.note(after, f":white_check_mark: Resolved by <@{admin_id}>."), "note")
            return Closing("done", after)

    async def claim(self, escalation_id: str, *, admin_id: str) -> Closing:
        conversations = self._services.conversations
        if not await conversations.claim(escalation_id=escalation_id, admin_id=admin_id):
            return Closing("already", await conversations.get_escalation(escalation_id=escalation_id))
        esc = await conversations.get_escalation(escalation_id=escalation_id)
        if esc is not None:
            await self._best_effort(self.refresh_root(esc), "root update")
            await self._best_effort(self.note(esc, f":raising_hand: <@{admin_id}> is on it."), "note")
        return Closing("done", esc)

    @staticmethod
    async def _best_effort(call, what: str) -> None:  # type: ignore[no-untyped-def]
        try:
            await call
        except SlackApiError as exc:
            log.warning("escalation %s failed: %s", what, exc)
