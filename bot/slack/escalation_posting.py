"""Escalation posting: where a person sees a question Cairn would not answer, and Slack's side of the
escalation use cases (the notifier port of escalations/notifier.py).

One thread per escalation, in the owning team's channel when the evidence belongs to a document with
an owner, else in CAIRN_ESCALATION_CHANNEL. Its channel and ts live on the escalation row, so an
admin's reply finds its escalation after a restart. What the thread and the asker are told is decided
by escalations/desk.py; this module only shows it.
"""

from __future__ import annotations

import asyncio
import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.services import Services
from bot.settings import Settings
from bot.slack.views import (
    Message,
    build_admin_answer,
    build_escalation_root,
    build_notice,
    build_thread_followup,
    build_thread_note,
)
from escalations.notifier import AskerMessage, NotifyError
from store.access import EVERYONE
from store.records import EscalationRecord

log = logging.getLogger(__name__)

RELAYED_REACTION = "white_check_mark"

class EscalationThreads:
    """Escalation threads in Slack; also the escalation use cases' notifier (tell_asker, note_in_thread,
    refresh_thread, mark_relayed), with Slack's refusals turned into NotifyError."""

    def __init__(self, *, client: AsyncWebClient, services: Services, settings: Settings | None = None) -> None:
        self._client = client
        self._services = services
        self._settings = settings or services.settings
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

    # -- the notifier port (escalations/notifier.py) -------------------------------------------------

    async def tell_asker(self, escalation: EscalationRecord, text: str, *, turn_id: str,
                         kind: AskerMessage) -> bool:
        message = (build_admin_answer(text=text, turn_id=turn_id) if kind == "admin_answer"
                   else build_notice(text))
        try:
            return await self.post_to_user(escalation, message)
        except SlackApiError as exc:
            raise NotifyError(str(exc.response.get("error") or "slack_error")) from exc

    async def note_in_thread(self, escalation: EscalationRecord, text: str) -> None:
        try:
            await self.note(escalation, text)
        except SlackApiError as exc:
            raise NotifyError(str(exc.response.get("error") or "slack_error")) from exc

    async def refresh_thread(self, escalation: EscalationRecord) -> None:
        try:
            await self.refresh_root(escalation)
        except SlackApiError as exc:
            raise NotifyError(str(exc.response.get("error") or "slack_error")) from exc

    async def mark_relayed(self, escalation: EscalationRecord, message_key: str) -> None:
        """A ✅ on the admin's message in the thread (replies from elsewhere have no Slack message)."""
        if not escalation.channel or not _is_slack_ts(message_key):
            return
        try:
            await self._client.reactions_add(channel=escalation.channel, timestamp=message_key,
                                             name=RELAYED_REACTION)
        except SlackApiError as exc:  # the reaction is a courtesy; the reply already arrived
            log.info("reactions.add failed: %s", exc)


def _is_slack_ts(key: str) -> bool:
    seconds, _, micros = key.partition(".")
    return seconds.isdigit() and micros.isdigit()
