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
from typing import Literal

from escalations.notifier import Notifier, NotifyError, ThreadNote
from graph.runner import ConversationRunner, EscalationError, TurnOutcome
from graph.state import AdminReply
from store.access import AccessPolicy
from store.conversations import ACTIVE_STATUSES, ConversationStore
from store.records import EscalationRecord, Scope

log = logging.getLogger(__name__)

CloseResult = Literal["done", "already", "not_found"]
ReplyResult = Literal["relayed", "recorded", "not_relayed", "already"]


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
    def __init__(self, *, runner: ConversationRunner, conversations: ConversationStore, access: AccessPolicy,
                 notifier: Notifier, escalation_channel: str | None = None) -> None:
        self._runner = runner
        self._conversations = conversations
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
        copy is noted there for the others handling it. Raises EscalationError when it is closed.
        """
        reply = AdminReply(type="admin_reply", admin_id=admin_id, admin_name=admin_name, text=text,
                           message_key=message_key)
        outcome = await self._runner.resume(escalation_id=escalation_id, reply=reply)
        if outcome is None:
            return Reply("already", None)
        escalation = outcome.escalation or await self.get(escalation_id)
        assert escalation is not None  # resume raised EscalationError otherwise
        try:
            shown = await self.notifier.tell_asker(escalation, outcome.answer, turn_id=outcome.turn_id,
                                                   kind="admin_answer")
        except NotifyError as exc:
            log.error("escalation %s: reply %s not relayed: %s", escalation_id, message_key, exc.reason)
            await self._best_effort(self.notifier.note_in_thread(
                escalation, ThreadNote("relay_failed", text=exc.reason)), "failure note")
            return Reply("not_relayed", outcome, error=exc.reason)
        if written_elsewhere:
            await self._best_effort(self.notifier.note_in_thread(
                escalation, ThreadNote("reply_copy", by=admin_name, text=text)), "copy of the reply")
        if shown:
            await self._best_effort(self.notifier.mark_relayed(escalation, message_key), "relayed mark")
        return Reply("relayed" if shown else "recorded", outcome)

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
