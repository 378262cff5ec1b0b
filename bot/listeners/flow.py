"""What every asking surface shares: who may be heard, dedupe, and one turn from placeholder to answer.

A turn in Slack: resolve the asker's scope (bot/identity.py), post a placeholder in the thread, run
the turn through the runner, then replace the placeholder with what the outcome says: an answer
with readable sources, an abstention plus an escalation thread, a "a person is on it" note, or an
error. Anything that goes wrong ends as a visible message in the thread, never as silence.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.constants import session_id_for
from bot.escalation_threads import EscalationThreads
from bot.identity import IdentityResolver
from bot.services import Services
from bot.settings import Settings
from bot.views import build_answer, build_error, build_notice, build_placeholder
from graph.runner import TurnOutcome

log = logging.getLogger(__name__)

# Message subtypes that carry a person's words; everything else (edits, deletions, joins, bot posts…)
# is not a question.
USER_SUBTYPES = frozenset({None, "thread_broadcast", "file_share"})
TALK_TO_PERSON_QUESTION = "I want to talk to a person."
# Turns running at once. Retrieval and answering run in worker threads that compete with the event
# loop for the GIL; bounding them keeps acks (and placeholders) fast under a burst of questions.
TURN_CONCURRENCY = 4


class WorkTracker:
    """Holds the lazy listeners' tasks (asyncio keeps only weak references) and lets shutdown and
    tests wait until every turn in flight has finished."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    @asynccontextmanager
    async def track(self) -> AsyncIterator[None]:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            self._idle.clear()
        try:
            yield
        finally:
            if task is not None:
                self._tasks.discard(task)
                if not self._tasks:
                    self._idle.set()

    @property
    def busy(self) -> int:
        return len(self._tasks)

    async def wait_idle(self) -> None:
        """Returns once no turn is in flight (wrap in `asyncio.timeout`)."""
        await self._idle.wait()

    @asynccontextmanager
    async def run(self, what: str, on_error: Callable[[], Awaitable[Any]] | None = None) -> AsyncIterator[None]:
        """The body of a lazy listener: tracked, and a failure is logged and, where the listener can
        say so (`on_error`), shown to the person rather than swallowed."""
        async with self.track():
            try:
                yield
            except Exception:
                log.exception("%s failed", what)
                if on_error is not None:
                    try:
                        await on_error()
                    except Exception:
                        log.exception("%s: could not report the failure", what)


@dataclass
class SlackServices:
    """What Slack listeners are given: the core services and the per-app Slack helpers."""

    settings: Settings
    core: Services
    identity: IdentityResolver
    threads: EscalationThreads
    work: WorkTracker = field(default_factory=WorkTracker)
    turn_slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(TURN_CONCURRENCY))


async def ack_now(ack: Any) -> None:
    """Acknowledge at once (Slack wants it within 3 seconds); the work runs in a lazy listener."""
    await ack()


EventHandler = Callable[[SlackServices, AsyncWebClient, dict[str, Any], dict[str, Any], AsyncBoltContext],
                        Awaitable[None]]


def on_person_message(app: AsyncApp, services: SlackServices, event_type: str, handle: EventHandler, *,
                      report_if: Callable[[Mapping[str, Any]], bool] = lambda event: True) -> None:
    """Register `handle(services, client, body, event, context)` for a person's message in `event_type`
    events (bots, edits and joins never reach it): acked at once, run lazily and tracked; a failure is
    shown in the message's thread where `report_if(event)` says it was for Cairn (elsewhere, silence is
    kinder than an error nobody asked for)."""
    async def lazy(body: dict[str, Any], event: dict[str, Any], client: AsyncWebClient,
                   context: AsyncBoltContext) -> None:
        if not is_person_message(event, bot_user_id=context.bot_user_id, bot_id=context.bot_id):
            return

        async def report() -> None:
            if report_if(event):
                await show_error(client, channel=str(event.get("channel")),
                                 thread_ts=event.get("thread_ts") or event.get("ts"), placeholder_ts=None)

        async with services.work.run(f"{event_type} listener", report):
            await handle(services, client, body, event, context)

    lazy.__name__ = lazy.__qualname__ = f"handle_{event_type}"  # what Bolt's logs call it
    app.event(event_type)(ack=ack_now, lazy=[lazy])


# -- who is speaking -----------------------------------------------------------------------------


def is_person_message(event: Mapping[str, Any], *, bot_user_id: str | None, bot_id: str | None) -> bool:
    """A person's message: not a bot (ours or another), not an edit, deletion, join or other subtype."""
    if event.get("subtype") not in USER_SUBTYPES or event.get("bot_id") or event.get("bot_profile"):
        return False
    user = event.get("user")
    return bool(user) and user != bot_user_id and (bot_id is None or event.get("bot_id") != bot_id)


def mentions(text: str, user_id: str | None) -> bool:
    return bool(user_id) and f"<@{user_id}" in text


def strip_mentions(text: str, user_id: str | None) -> str:
    if user_id:
        text = re.sub(rf"<@{re.escape(user_id)}(?:\|[^>]*)?>", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def turn_id_for(channel: str, message_ts: str) -> str:
    """One turn per Slack message: a re-delivered message maps to the same turn and escalation."""
    return "t-" + hashlib.sha256(f"{channel}:{message_ts}".encode()).hexdigest()[:16]


async def first_delivery(services: Services, *keys: str | None) -> bool:
    """True only when none of the keys was seen before (all are recorded either way): Slack retries
    and duplicate event ids, and the app_mention + message pair Slack sends for one mention."""
    fresh = True
    for key in keys:
        if key and not await services.conversations.seen_event(key=key):
            fresh = False
    return fresh


def event_keys(body: Mapping[str, Any], event: Mapping[str, Any]) -> tuple[str | None, str | None]:
    event_id = body.get("event_id")
    channel, ts = event.get("channel"), event.get("ts")
    return (f"event:{event_id}" if event_id else None, f"message:{channel}:{ts}" if channel and ts else None)


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
        scope = await services.identity.resolve(ask.user_id, event_team_id=ask.user_team)
        placeholder = await client.chat_postMessage(channel=ask.channel, thread_ts=ask.thread_ts,
                                                    **build_placeholder())
        placeholder_ts = str(placeholder["ts"])
        async with services.turn_slots:
            outcome = await services.core.runner.ask(
                session_id=ask.session_id, scope=scope, question=ask.text, surface="slack", channel=ask.channel,
                thread_ts=ask.thread_ts, turn_id=turn_id or turn_id_for(ask.channel, ask.message_ts))
        await show_outcome(services, client, ask, outcome, placeholder_ts=placeholder_ts)
        return outcome
    except Exception:
        log.exception("turn in %s/%s failed", ask.channel, ask.thread_ts)
        await show_error(client, channel=ask.channel, thread_ts=ask.thread_ts, placeholder_ts=placeholder_ts)
        return None


async def show_outcome(services: SlackServices, client: AsyncWebClient, ask: Ask, outcome: TurnOutcome, *,
                       placeholder_ts: str) -> None:
    if outcome.route == "answer":
        message = build_answer(answer=outcome.answer, citations=outcome.citations, turn_id=outcome.turn_id,
                               session_id=outcome.session_id)
    else:
        message = build_notice(outcome.answer, turn_id=outcome.turn_id)
    await client.chat_update(channel=ask.channel, ts=placeholder_ts, **message)
    if outcome.escalation is None or outcome.route not in ("escalate", "error", "escalate_pending"):
        return
    try:  # the user already has their answer; a failure here is for the logs and `cairn escalations`
        link = await services.threads.conversation_link(channel=ask.channel, message_ts=ask.thread_ts,
                                                        team_id=ask.team_id)
        if outcome.route == "escalate_pending":
            await services.threads.append_to_thread(outcome.escalation, user_id=ask.user_id, text=ask.text,
                                                    link=link)
        else:
            await services.threads.open_escalation_thread(outcome.escalation, link=link)
    except Exception:
        log.exception("escalation %s: the thread could not be updated", outcome.escalation.escalation_id)


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
