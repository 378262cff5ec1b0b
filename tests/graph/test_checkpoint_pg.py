"""Conversations on PostgreSQL: with CAIRN_DATABASE_URL the graph's checkpoints live in that database,
so a conversation interrupted for a person on one replica is resumed on another, exactly once, and
nothing is written under CAIRN_HOME's SQLite files."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.services import open_services
from graph.checkpoint import open_checkpointer
from graph.state import AdminReply
from retrieval.embed import Embedder
from tests.conftest import make_settings

QUESTION = "What is the policy on bringing dogs to the office?"


def reply(text: str, key: str) -> AdminReply:
    return AdminReply(type="admin_reply", admin_id="U0DANA", admin_name="Dana", text=text, message_key=key)


async def test_an_escalation_asked_on_one_replica_is_answered_on_another_once(
        tmp_path: Path, pg_database_url: str, embedder: Embedder) -> None:
    one, two = tmp_path / "replica-1", tmp_path / "replica-2"  # two replicas' homes: nothing shared but the database
    async with open_services(make_settings(one, CAIRN_DATABASE_URL=pg_database_url, CAIRN_CHAT_MODEL=None),
                             embedder=embedder) as svc:
        asked = await svc.runner.ask(session_id="s-pg", scope=svc.access.resolve_cli("bob"), question=QUESTION)
    assert asked.route == "escalate" and asked.escalation is not None
    escalation_id = asked.escalation.escalation_id

    async with open_services(make_settings(two, CAIRN_DATABASE_URL=pg_database_url, CAIRN_CHAT_MODEL=None),
                             embedder=embedder) as svc:
        assert (await svc.runner.pending_payload(session_id="s-pg") or {}).get("escalation_id") == escalation_id
        first, again = await asyncio.gather(
            svc.runner.resume(escalation_id=escalation_id, reply=reply("Only guide dogs.", "m-1")),
            svc.runner.resume(escalation_id=escalation_id, reply=reply("Only guide dogs.", "m-1")))
        delivered = [r for r in (first, again) if r is not None]
        assert len(delivered) == 1 and delivered[0].answer == "Answer from Dana: Only guide dogs."
        assert await svc.runner.pending_payload(session_id="s-pg") is None
    for home in (one, two):
        assert not (home / "checkpoints.db").exists() and not (home / "cairn.db").exists()


async def test_replicas_starting_together_create_the_checkpoint_tables_once(
        tmp_path: Path, pg_database_url: str) -> None:
    async def start() -> None:
        async with open_checkpointer(tmp_path / "unused.db", database_url=pg_database_url) as saver:
            assert await saver.aget_tuple({"configurable": {"thread_id": "none", "checkpoint_ns": ""}}) is None

    await asyncio.gather(*(start() for _ in range(3)))
    assert not (tmp_path / "unused.db").exists()
