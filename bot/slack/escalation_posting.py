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
from bot.slack.escalation_views import (
    build_escalation_note,
    build_escalation_root,
    build_thread_followup,
    build_thread_note,
)
from bot.slack.views import Message, build_admin_answer, build_notice
from escalations.notifier import AskerMessage, NotifyError, ThreadNote
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
                log.error("escalation %s: no CAIRN_ESCALATION_CHANNEL configured", escalation.escalation_id)
            for n, channel in enumerate(channels):
                posted = await self._post_root(escalation, channel, link=link)
                if posted is not None:
                    if n:
                        self._count("escalation_fallback", "escalation_channel")
                    return posted
            # No channel took it: tell an admin directly rather than let the question vanish.
            for admin in self._services.access.admin_slack_ids():
                try:
                    dm = str((await self._client.conversations_open(users=admin))["channel"]["id"])
                except SlackApiError as exc:
                    log.warning("escalation %s: cannot open a DM with %s (%s)", escalation.escalation_id, admin,
                                exc.response.get("error"))
                    continue
                posted = await self._post_root(escalation, dm, link=link)
                if posted is not None:
                    self._count("escalation_fallback", "admin_dm")
                    return posted
            log.error("escalation %s: nobody could be reached (channels %s, no admin DM)", escalation.escalation_id,
                      channels)
            self._count("escalation_unposted", "no_channel" if not channels else "refused")
            return escalation

    async def _post_root(self, escalation: EscalationRecord, channel: str, *, link: str) -> EscalationRecord | None:
        """The thread's root in `channel`, stored on the escalation; None when Slack refused it."""
        withheld = await self.withheld_documents(escalation, channel=channel)
        try:
            resp = await self._client.chat_postMessage(channel=channel, **build_escalation_root(
                escalation, link=link, withheld=withheld))
        except SlackApiError as exc:
            log.warning("escalation %s: cannot post in %s (%s)", escalation.escalation_id, channel,
                        exc.response.get("error"))
            return None
        await self._services.conversations.set_thread(
            escalation_id=escalation.escalation_id, channel=str(resp["channel"]), thread_ts=str(resp["ts"]))
        return await self._services.conversations.get_escalation(escalation_id=escalation.escalation_id) or escalation

    def _count(self, event: str, label: str) -> None:
        self._services.metrics.count(event, label)

    async def withheld_documents(self, escalation: EscalationRecord, *, channel: str) -> frozenset[str]:
        """The documents of this conversation whose words the people in `channel` may not all read.

        A document restricted to some groups (not `everyone` or the customers) is shown in full only in
        its owner's channel; elsewhere its passages show as id, version and score, and Cairn's earlier
        answers in the conversation (which may quote it) are left out of the transcript.
        """
        access, catalog = self._services.access, self._services.catalog
        doc_ids = {str(p["doc_id"]) for p in escalation.passages if p.get("doc_id")}
        for turn in await self._services.conversations.list_turns(session_id=escalation.session_id):
            doc_ids |= {d for p in turn.passages if (d := _doc_of(str(p.get("chunk_id") or "")))}
        withheld = set()
        open_to_all = {EVERYONE, access.customer_group}
        for doc_id in sorted(doc_ids):
            doc = await catalog.get_document(tenant_id=escalation.tenant_id, doc_id=doc_id)
            if doc is None or set(doc.groups) <= open_to_all:
                continue
            owner = doc.owner or access.owner_channel_for(doc.tenant_id, set(doc.groups) - open_to_all)
            if owner is None or channel != owner:
                withheld.add(doc_id)
        return frozenset(withheld)

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
        where = escalation.channel
        if where != self._settings.escalation_channel and not where.startswith("D"):
            # An owner's channel: the thread was posted there by name, the first of channels_for.
            where = next(iter(await self.channels_for(escalation)), where)
        withheld = await self.withheld_documents(escalation, channel=where)
        await self._client.chat_update(channel=escalation.channel, ts=escalation.thread_ts,
                                       **build_escalation_root(escalation, link=link, withheld=withheld))

    # -- the notifier port (escalations/notifier.py) -------------------------------------------------

    async def tell_asker(self, escalation: EscalationRecord, text: str, *, turn_id: str,
                         kind: AskerMessage) -> bool:
        message = (build_admin_answer(text=text, turn_id=turn_id) if kind == "admin_answer"
                   else build_notice(text))
        try:
            return await self.post_to_user(escalation, message)
        except SlackApiError as exc:
            raise NotifyError(str(exc.response.get("error") or "slack_error")) from exc

    async def note_in_thread(self, escalation: EscalationRecord, note: ThreadNote) -> None:
        if not (escalation.channel and escalation.thread_ts):
            return
        try:
            await self._client.chat_postMessage(channel=escalation.channel, thread_ts=escalation.thread_ts,
                                                **build_escalation_note(escalation, note))
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


def _doc_of(chunk_id: str) -> str | None:
    """`tenant:doc:version:seq` → doc (a document id may itself contain ':')."""
    parts = chunk_id.split(":")
    return ":".join(parts[1:-2]) if len(parts) >= 4 else None
