"""Analytics fixtures: a bare store (the state store alone, on the suite's engine), seeding with known timestamps, fake Slack and OpenAI."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from store.conversations import ConversationStore
from store.db import iso, open_db
from store.records import EscalationRecord
from store.reports import EscalationReports
from store.run_claims import RunClaims
from tests.conftest import make_settings, serving
from tests.escalations.slack_files import FakeSlackWithFiles
from tests.graph.fake_openai import FakeOpenAI

# Monday 2 February 2026, 09:00 UTC: the default digest moment of ISO week 2026-W06, which posts 2026-W05.
NOW = datetime(2026, 2, 2, 9, 0, tzinfo=UTC)
WEEK = "2026-W05"  # Mon 26 Jan – Sun 1 Feb 2026
PREVIOUS_WEEK = "2026-W04"


def at(day: int, hour: int = 12, minute: int = 0, month: int = 1, second: int = 0) -> datetime:
    return datetime(2026, month, day, hour, minute, second, tzinfo=UTC)


class Clock:
    """A settable clock for jobs: `clock.now = …`; call it like utcnow()."""

    def __init__(self, now: datetime = NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Store:
    db: aiosqlite.Connection
    conversations: ConversationStore
    queries: EscalationReports
    home: Path

    @property
    def runs(self) -> RunClaims:
        return RunClaims(self.db)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    home = tmp_path / "home"
    db = await open_db(make_settings(home).database)
    conversations = ConversationStore(db)
    try:
        yield Store(db, conversations, EscalationReports(db, conversations), home)
    finally:
        await db.close()


async def seed(store: Store, key: str, *, reason: str, created_at: datetime, question: str | None = None,
               transcript: str = "", passages: list[dict[str, object]] | None = None, top_score: float | None = None,
               topic: str | None = None, first_reply_at: datetime | None = None, status: str = "open",
               closed_at: datetime | None = None, channel: str | None = None, thread_ts: str | None = None,
               deadline_at: datetime | None = None, session_id: str | None = None,
               lang: str | None = None) -> EscalationRecord:
    """An escalation row as the graph writes it, then its timestamps and state set to known values."""
    session_id = session_id or f"s-{key}"
    await store.conversations.get_or_create_session(session_id=session_id, user_id="U0BOB", tenant_id="larkspur",
                                                    lang=lang)
    esc = await store.conversations.open_escalation(
        turn_id=f"t-{key}", session_id=session_id, tenant_id="larkspur", user_id="U0BOB",
        question=question or f"question {key}", reason=reason, transcript=transcript, passages=passages,
        top_score=top_score)
    await store.db.execute(
        "UPDATE escalations SET created_at=?, first_reply_at=?, status=?, closed_at=?, channel=?, thread_ts=?,"
        " deadline_at=?, topic=?, labelled_at=? WHERE escalation_id=?",
        (iso(created_at), iso(first_reply_at) if first_reply_at else None, status,
         iso(closed_at) if closed_at else None, channel, thread_ts, iso(deadline_at) if deadline_at else None,
         topic, iso(created_at) if topic else None, esc.escalation_id))
    fresh = await store.conversations.get_escalation(escalation_id=esc.escalation_id)
    assert fresh is not None
    return fresh


async def seed_turn(store: Store, session_id: str, turn_id: str, question: str, *, created_at: datetime,
                    route: str = "answer") -> None:
    await store.conversations.get_or_create_session(session_id=session_id, user_id="U0BOB", tenant_id="larkspur")
    await store.conversations.write_turn(turn_id=turn_id, session_id=session_id, user_id="U0BOB",
                                          tenant_id="larkspur", question=question, route=route, reason=None,
                                          answer=None, top_score=None, passages=[], trace={})
    await store.db.execute("UPDATE turns SET created_at=? WHERE turn_id=?", (iso(created_at), turn_id))


async def seed_feedback(store: Store, turn_id: str, value: int, *, created_at: datetime, user: str = "U0BOB") -> None:
    await store.conversations.record_feedback(turn_id=turn_id, user_id=user, value=value)
    await store.db.execute("UPDATE feedback SET created_at=? WHERE turn_id=? AND user_id=?",
                           (iso(created_at), turn_id, user))


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlackWithFiles]:
    fake = FakeSlackWithFiles()
    async with serving(fake):
        yield fake


@pytest.fixture
def slack_client(fake_slack: FakeSlackWithFiles) -> AsyncWebClient:
    return AsyncWebClient(token="xoxb-test", base_url=fake_slack.url)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """The graph tests' OpenAI stand-in (tests/graph/fake_openai.py); set `.script` per test."""
    with FakeOpenAI() as fake:
        yield fake
