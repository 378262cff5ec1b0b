"""The escalation use cases every surface shares: reply, resolve, claim, and who may do them.

Slack (a reply in the escalation thread, the Resolve and Claim buttons, `/cairn resolve`) and the CLI
(`cairn reply`, `cairn resolve`, the console's `/reply`) call the same methods, so an admin's answer
reaches the asker the same way from anywhere: the conversation is resumed through the runner (which
delivers each message key once), then the asker is told through the notifier, then the reply is
marked as relayed where it was written. Reminders and expiry are in escalations/expiry.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from escalations.notifier import Notifier, NotifyError, ThreadNote
from graph.messages import attributed_answer, user_language
from graph.runner import ConversationRunner, EscalationError, TurnOutcome
from graph.state import AdminReply
from store.access import AccessPolicy
from store.conversations import ACTIVE_STATUSES, ConversationStore
from store.records import EscalationRecord, Scope
from store.relays import RelayRecord, Relays

log = logging.getLogger(__name__)

CloseResult = Literal["done", "already", "not_found"]
ReplyResult = Literal["relayed", "recorded", "not_relayed", "already"]
RELAY_GRACE = timedelta(seconds=30)  # a relay younger than this may still be on its way
RELAY_ATTEMPTS = 10


@dataclass(frozen=True)
class Closing:
    """`done`: this call changed it; `already`: it was closed (or claimed) before; `not_found`."""

    result: CloseResult
    escalation: EscalationRecord | None
    told: str | None = None  # what the asker was told (an unanswered escalation's closing message)


@dataclass(frozen=True)
class Reply:
    """`relayed`: the asker was shown it; `recorded`: the conversation has it but no surface showed it
    (a CLI session); `not_relayed`: the surface refused it (`error`); `already`: this key was delivered."""

    result: ReplyResult
    outcome: TurnOutcome | None
    error: str | None = None


class EscalationDesk:
    def __init__(self, *, runner: ConversationRunner, conversations: ConversationStore, relays: Relays,
                 access: AccessPolicy, notifier: Notifier, escalation_channel: str | None = None) -> None:
        self._runner = runner
        self._conversations = conversations
        self._relays = relays
        self._access = access
        self.notifier = notifier
        self._escalation_channel = escalation_channel
        self._locks: dict[str, asyncio.Lock] = {}

    def _lock(self, escalation_id: str) -> asyncio.Lock:
        return self._locks.setdefault(escalation_id, asyncio.Lock())

    async def get(self, escalation_id: str) -> EscalationRecord | None:
        return await self._conversations.get_escalation(escalation_id=escalation_id)

    def may_handle(self, scope: Scope, escalation: EscalationRecord | None = None) -> bool:
        """The access policy's one rule, for this escalation (or, without one, for listing them)."""
        if escalation is None:
            return self._access.can_handle_escalations(scope)
        in_owner_channel = escalation.channel not in (None, self._escalation_channel)
        return self._access.can_handle_escalations(scope, tenant_id=escalation.tenant_id,
                                                   in_owner_channel=in_owner_channel)

    async def reply(self, escalation_id: str, *, admin_id: str, admin_name: str, text: str, message_key: str,
                    written_elsewhere: bool = False) -> Reply:
        """Resume the conversation with this reply and tell the asker, once per message key.

        `written_elsewhere`: the reply was not written where the escalation is handled (the CLI), so a
        copy is noted there for the others handling it. Raises EscalationError when it is closed. The
        relay row is written first and closed only once the asker was shown the reply; until then
        `relay_pending` retries it, and only then does the admin's message get its ✅.
        """
        await self._relays.expect(escalation_id=escalation_id, message_key=message_key, admin_id=admin_id,
                                  admin_name=admin_name, text=text)
        reply = AdminReply(type="admin_reply", admin_id=admin_id, admin_name=admin_name, text=text,
                           message_key=message_key)
        outcome = await self._runner.resume(escalation_id=escalation_id, reply=reply)
        if outcome is None:
            return Reply("already", None)
        if written_elsewhere:
            escalation = outcome.escalation or await self.get(escalation_id)
            if escalation is not None:
                await self._best_effort(self.notifier.note_in_thread(
                    escalation, ThreadNote("reply_copy", by=admin_name, text=text)), "copy of the reply")
        result, error = await self._show(escalation_id, message_key, outcome.answer, outcome.turn_id)
        return Reply(result, outcome, error=error)

    async def _show(self, escalation_id: str, message_key: str, answer: str,
                    turn_id: str) -> tuple[ReplyResult, str | None]:
        """Tell the asker, then close the relay and mark the admin's message."""
        await self._relays.answered(escalation_id=escalation_id, message_key=message_key, answer=answer,
                                    turn_id=turn_id)
        escalation = await self.get(escalation_id)
        if escalation is None:
            return "recorded", None
        try:
            shown = await self.notifier.tell_asker(escalation, answer, turn_id=turn_id, kind="admin_answer")
        except NotifyError as exc:
            log.error("escalation %s: reply %s not relayed: %s", escalation_id, message_key, exc.reason)
            await self._relays.attempted(escalation_id=escalation_id, message_key=message_key)
            await self._best_effort(self.notifier.note_in_thread(
                escalation, ThreadNote("relay_failed", text=exc.reason)), "failure note")
            return "not_relayed", exc.reason
        await self._relays.relayed(escalation_id=escalation_id, message_key=message_key)
        if shown:
            await self._best_effort(self.notifier.mark_relayed(escalation, message_key), "relayed mark")
        return ("relayed" if shown else "recorded"), None

    async def relay_pending(self, *, now: datetime) -> list[str]:
        """Replies the asker was never shown (the surface refused, or the process stopped in between):
        shown now, once. Returns their message keys."""
        done = []
        for relay in await self._relays.pending(created_before=now - RELAY_GRACE, max_attempts=RELAY_ATTEMPTS):
            key = (relay.escalation_id, relay.message_key)
            answer, turn_id = relay.answer, relay.turn_id
            if answer is None or turn_id is None:
                answer, turn_id = await self._answer_of(relay)
            if answer is None or turn_id is None:
                await self._relays.attempted(escalation_id=key[0], message_key=key[1])
                continue
            result, _ = await self._show(*key, answer, turn_id)
            if result != "not_relayed":
                done.append(relay.message_key)
        return done

    async def _answer_of(self, relay: RelayRecord) -> tuple[str | None, str | None]:
        """What a reply cut short before its answer was recorded says: resume again (the runner delivers
        a message key once, so a delivered one changes nothing) or, if it was delivered, as attributed."""
        reply = AdminReply(type="admin_reply", admin_id=relay.admin_id, admin_name=relay.admin_name,
                           text=relay.text, message_key=relay.message_key)
        try:
            outcome = await self._runner.resume(escalation_id=relay.escalation_id, reply=reply)
        except EscalationError:
            outcome = None
        if outcome is not None:
            return outcome.answer, outcome.turn_id
        escalation = await self.get(relay.escalation_id)
        delivered = await self._conversations.get_admin_reply(escalation_id=relay.escalation_id,
                                                              message_key=relay.message_key)
        if escalation is None or delivered is None or not delivered.delivered_at:
            return None, None
        session = await self._conversations.get_session(session_id=escalation.session_id)
        language = user_language(escalation.question, session.lang if session else None)
        return attributed_answer(admin=relay.admin_name, text=relay.text, language=language), escalation.turn_id

    async def resolve(self, escalation_id: str, *, admin_id: str) -> Closing:
        """Close exactly once: the second call changes nothing. An unanswered escalation's asker is told."""
        async with self._lock(escalation_id):
            before = await self.get(escalation_id)
            if before is None:
                return Closing("not_found", None)
            if before.status not in ACTIVE_STATUSES:
                return Closing("already", before)
            try:
                outcome = await self._runner.resolve(escalation_id=escalation_id, resolved_by=admin_id)
            except EscalationError:
                return Closing("already", await self.get(escalation_id))
            after = await self.get(escalation_id)
            if after is None or after.status != "resolved" or after.resolved_by != admin_id:
                return Closing("already", after)
            if outcome is not None:
                await self._best_effort(self.notifier.tell_asker(after, outcome.answer, turn_id=outcome.turn_id,
                                                                 kind="notice"), "closing note")
            await self._best_effort(self.notifier.refresh_thread(after), "root update")
            await self._best_effort(self.notifier.note_in_thread(after, ThreadNote("resolved", by=admin_id)), "note")
            return Closing("done", after, told=outcome.answer if outcome is not None else None)

    async def claim(self, escalation_id: str, *, admin_id: str) -> Closing:
        if not await self._conversations.claim(escalation_id=escalation_id, admin_id=admin_id):
            return Closing("already", await self.get(escalation_id))
        escalation = await self.get(escalation_id)
        if escalation is not None:
            await self._best_effort(self.notifier.refresh_thread(escalation), "root update")
            await self._best_effort(self.notifier.note_in_thread(escalation, ThreadNote("claimed", by=admin_id)),
                                    "note")
        return Closing("done", escalation)

    @staticmethod
    async def _best_effort(call: Awaitable[object], what: str) -> None:
        try:
            await call
        except NotifyError as exc:
            log.warning("escalation %s failed: %s", what, exc.reason)
