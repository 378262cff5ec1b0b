"""The notifier port: how the escalation use cases tell people, whatever surface they are on.

The use cases (escalations/desk.py, escalations/expiry.py) decide what happens and what is said; a
notifier decides where it is shown. Slack implements it (bot/slack/escalation_posting.py); without a
surface to reach (a CLI-only install) `SilentNotifier` records nothing and tells no one, and the
conversation history still holds every message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from store.records import EscalationRecord

AskerMessage = Literal["admin_answer", "notice"]
NoteKind = Literal["reminder", "expired", "resolved", "claimed", "relay_failed", "reply_copy"]


@dataclass(frozen=True)
class ThreadNote:
    """Something the people handling an escalation should see; the surface words it.

    reminder: nobody answered yet (the deadline is on the escalation); expired: `deadline_hours` passed;
    resolved / claimed: `by` is the user id who did it; relay_failed: `text` is why the asker did not get
    a reply; reply_copy: `by` (a name) answered from elsewhere, `text` is the reply.
    """

    kind: NoteKind
    by: str | None = None
    text: str | None = None
    deadline_hours: float | None = None


class NotifyError(Exception):
    """The surface refused a message (`reason` is its own word for why, e.g. "not_in_channel")."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Notifier(Protocol):
    async def tell_asker(self, escalation: EscalationRecord, text: str, *, turn_id: str,
                         kind: AskerMessage) -> bool:
        """Show `text` in the asker's conversation. False when that conversation is on no surface this
        notifier reaches (a CLI session); raises NotifyError when the surface refused it."""
        ...

    async def note_in_thread(self, escalation: EscalationRecord, note: ThreadNote) -> None:
        """A line for the people handling the escalation, where they handle it."""
        ...

    async def refresh_thread(self, escalation: EscalationRecord) -> None:
        """Show the escalation's new state (claimed, resolved, expired) where it is handled."""
        ...

    async def mark_relayed(self, escalation: EscalationRecord, message_key: str) -> None:
        """Show the person who replied that their reply reached the asker."""
        ...


class SilentNotifier:
    """No surface: every call succeeds and reaches nobody."""

    async def tell_asker(self, escalation: EscalationRecord, text: str, *, turn_id: str,
                         kind: AskerMessage) -> bool:
        return False

    async def note_in_thread(self, escalation: EscalationRecord, note: ThreadNote) -> None:
        return None

    async def refresh_thread(self, escalation: EscalationRecord) -> None:
        return None

    async def mark_relayed(self, escalation: EscalationRecord, message_key: str) -> None:
        return None
