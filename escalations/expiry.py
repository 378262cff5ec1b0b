"""Reminders and expiry of escalations nobody answered.

At half the time to its deadline an open escalation gets one reminder in its thread; at the deadline
it expires through the runner (the graph's interrupt is resumed with "expired", so the conversation
is closed and the user's next message starts a fresh turn). The user is told honestly that no one
answered; nothing is executed or granted by the timeout. An escalation a person already answered
never expires (the store only expires status `open`).

People are told through the notifier (escalations/notifier.py). Without one (CLI-only deployments)
reminders are only marked and expiry still closes the conversation; the user sees the closing message
in the conversation's history.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from escalations.notifier import Notifier, ThreadNote
from graph.runner import ConversationRunner
from store.reports import EscalationReports

log = logging.getLogger(__name__)


@dataclass
class ExpiryReport:
    reminded: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


async def send_reminders(*, queries: EscalationReports, notifier: Notifier | None,
                         now: datetime) -> ExpiryReport:
    report = ExpiryReport()
    for esc in await queries.due_for_reminder(now=now):
        if notifier is not None and esc.channel and esc.thread_ts:
            try:  # post, then mark: a crash in between repeats a reminder, never loses one
                await notifier.note_in_thread(esc, ThreadNote("reminder"))
            except Exception as exc:
                log.warning("reminder for %s not posted: %s", esc.escalation_id, exc)
                report.errors.append(f"{esc.escalation_id}: {exc}")
                continue
        await queries.conversations.mark_reminded(escalation_id=esc.escalation_id)
        report.reminded.append(esc.escalation_id)
    return report


async def expire_due(*, queries: EscalationReports, runner: ConversationRunner, notifier: Notifier | None,
                     now: datetime, deadline_hours: float, report: ExpiryReport | None = None) -> ExpiryReport:
    report = report or ExpiryReport()
    conversations = queries.conversations
    for esc in await conversations.due_for_expiry(now=now):
        try:
            outcome = await runner.expire(escalation_id=esc.escalation_id)
        except Exception as exc:
            log.exception("could not expire %s", esc.escalation_id)
            report.errors.append(f"{esc.escalation_id}: {exc}")
            continue
        if outcome is None:  # answered or closed in the meantime
            continue
        report.expired.append(esc.escalation_id)
        if notifier is None:
            continue
        after = await conversations.get_escalation(escalation_id=esc.escalation_id) or esc
        for what, call in (("user notice", notifier.tell_asker(after, outcome.answer, turn_id=outcome.turn_id,
                                                               kind="notice")),
                           ("root update", notifier.refresh_thread(after)),
                           ("thread note", notifier.note_in_thread(
                               after, ThreadNote("expired", deadline_hours=deadline_hours)))):
            try:
                await call
            except Exception as exc:
                log.warning("expiry of %s: %s failed: %s", esc.escalation_id, what, exc)
                report.errors.append(f"{esc.escalation_id}: {what}: {exc}")
    return report
