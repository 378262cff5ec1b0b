"""Escalations survive restarts; admin replies reach the user exactly once; follow-ups while a person
is on it are appended (a new question is a turn of its own: tests/graph/test_conversation.py); resolve
and expire close once."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage
from langgraph.types import Command

from bot.services import Services
from graph.messages import abstention, fixed
from graph.runner import EscalationError
from graph.state import AdminReply, author_of
from tests.graph.conftest import LONDON, bob

UNKNOWN = "What is the policy on bringing dogs to the office?"


def admin_reply(text: str, key: str) -> AdminReply:
    return AdminReply(type="admin_reply", admin_id="U0DANA", admin_name="Dana", text=text, message_key=key)


async def admin_messages(svc: Services, session_id: str) -> list[AIMessage]:
    state = await svc.graph.aget_state({"configurable": {"thread_id": session_id}})
    return [m for m in state.values["messages"] if isinstance(m, AIMessage) and author_of(m) == "admin"]


async def test_restart_then_resume_delivers_the_admin_reply_exactly_once(open_home) -> None:
    async with open_home() as svc:
        asked = await svc.runner.ask(session_id="s-restart", scope=bob(svc), question=UNKNOWN)
    assert (asked.route, asked.reason) == ("escalate", "below_score_floor")
    escalation_id = asked.escalation.escalation_id  # type: ignore[union-attr]

    # Everything above is closed: services, catalog connection, checkpointer connection, index.
    async with open_home() as svc:
        payload = await svc.runner.pending_payload(session_id="s-restart")
        assert payload is not None and payload["escalation_id"] == escalation_id
        first = await svc.runner.resume(escalation_id=escalation_id,
                                        reply=admin_reply("Dogs are welcome on Fridays.", "m-1"))
        again = await svc.runner.resume(escalation_id=escalation_id,
                                        reply=admin_reply("Dogs are welcome on Fridays.", "m-1"))
        assert first is not None and again is None
        assert first.route == "admin_answer" and first.turn_id == asked.turn_id
        assert first.answer == "Answer from Dana: Dogs are welcome on Fridays."
        assert first.escalation is not None and first.escalation.status == "answered"
        assert len(await admin_messages(svc, "s-restart")) == 1
        assert await svc.runner.pending_payload(session_id="s-restart") is None

    async with open_home() as svc:  # and once more after another restart
        assert await svc.runner.resume(escalation_id=escalation_id,
                                       reply=admin_reply("Dogs are welcome on Fridays.", "m-1")) is None
        assert len(await admin_messages(svc, "s-restart")) == 1
        reply = await svc.conversations.get_admin_reply(escalation_id=escalation_id, message_key="m-1")
        assert reply is not None and reply.delivered_at is not None
        turn = await svc.conversations.get_turn(turn_id=asked.turn_id)
        assert turn is not None and turn.trace["deliveries"] == [{"message_key": "m-1", "admin_id": "U0DANA"}]
        # The conversation goes on: the next question runs the graph again.
        nxt = await svc.runner.ask(session_id="s-restart", scope=bob(svc), question=LONDON)
        assert nxt.route == "answer" and "GBP 210" in nxt.answer


async def test_follow_ups_join_the_open_escalation_until_a_person_answers(open_home) -> None:
    async with open_home() as svc:
        asked = await svc.runner.ask(session_id="s-pending", scope=bob(svc), question=UNKNOWN)
        escalation_id = asked.escalation.escalation_id  # type: ignore[union-attr]
        more = "Are dogs allowed in the office on Fridays?"
        follow = await svc.runner.ask(session_id="s-pending", scope=bob(svc), question=more)
        assert follow.route == "escalate_pending" and follow.reason == "below_score_floor"
        assert follow.answer == fixed("escalate_pending", "en")
        assert follow.escalation is not None and follow.escalation.escalation_id == escalation_id
        assert follow.escalation.transcript.endswith(f"user: {more}")
        assert (await svc.runner.pending_payload(session_id="s-pending"))["turn_id"] == asked.turn_id  # type: ignore[index]
        turn = await svc.conversations.get_turn(turn_id=follow.turn_id)
        assert turn is not None and turn.route == "escalate_pending"

        delivered = await svc.runner.resume(escalation_id=escalation_id, reply=admin_reply("Only guide dogs.", "m-1"))
        assert delivered is not None and delivered.answer == "Answer from Dana: Only guide dogs."
        # A later reply in the same thread still reaches the user, once.
        later = await svc.runner.resume(escalation_id=escalation_id, reply=admin_reply("Sorry, and Fridays.", "m-2"))
        assert later is not None and later.answer == "Answer from Dana: Sorry, and Fridays."
        assert await svc.runner.resume(escalation_id=escalation_id, reply=admin_reply("x", "m-2")) is None
        assert [m.content for m in await admin_messages(svc, "s-pending")] == [
            "Answer from Dana: Only guide dogs.", "Answer from Dana: Sorry, and Fridays."]
        answered = await svc.runner.ask(session_id="s-pending", scope=bob(svc), question=LONDON)
        assert answered.route == "answer"


async def test_resolve_and_expire_close_once_with_an_honest_message(open_home) -> None:
    async with open_home() as svc:
        a = await svc.runner.ask(session_id="s-res", scope=bob(svc), question=UNKNOWN)
        b = await svc.runner.ask(session_id="s-exp", scope=bob(svc), question=UNKNOWN)
        c = await svc.runner.ask(session_id="s-ans", scope=bob(svc), question=UNKNOWN)
        ids = [o.escalation.escalation_id for o in (a, b, c)]  # type: ignore[union-attr]

        closed = await svc.runner.resolve(escalation_id=ids[0], resolved_by="U0DANA")
        assert closed is not None and closed.route == "closed" and closed.answer == fixed("resolve", "en")
        assert await svc.runner.resolve(escalation_id=ids[0], resolved_by="U0DANA") is None
        assert (await svc.conversations.get_escalation(escalation_id=ids[0])).status == "resolved"  # type: ignore[union-attr]
        with pytest.raises(EscalationError):
            await svc.runner.resume(escalation_id=ids[0], reply=admin_reply("too late", "m-9"))

        expired = await svc.runner.expire(escalation_id=ids[1])
        assert expired is not None and expired.answer == fixed("expired", "en")
        assert await svc.runner.expire(escalation_id=ids[1]) is None

        await svc.runner.resume(escalation_id=ids[2], reply=admin_reply("Answered.", "m-1"))
        assert await svc.runner.expire(escalation_id=ids[2]) is None  # answered ones do not expire
        assert await svc.runner.resolve(escalation_id=ids[2], resolved_by="U0DANA") is None  # nothing to tell
        assert (await svc.conversations.get_escalation(escalation_id=ids[2])).status == "resolved"  # type: ignore[union-attr]
        for session in ("s-res", "s-exp"):
            assert await svc.runner.pending_payload(session_id=session) is None


async def test_unknown_resume_values_raise(open_home) -> None:
    async with open_home() as svc:
        asked = await svc.runner.ask(session_id="s-bad", scope=bob(svc), question=UNKNOWN)
        with pytest.raises(ValueError):
            await svc.runner.resume(escalation_id=asked.escalation.escalation_id,  # type: ignore[union-attr]
                                    reply={"type": "bogus"})  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="unknown resume type"):
            await svc.graph.ainvoke(Command(resume={"type": "bogus"}), {"configurable": {"thread_id": "s-bad"}})
        with pytest.raises(EscalationError):
            await svc.runner.resume(escalation_id="esc-nope", reply=admin_reply("x", "m"))


async def test_an_admin_can_answer_a_turn_that_failed_with_an_error(open_home) -> None:
    async with open_home() as svc:
        real = svc.runner.graph.ainvoke

        async def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("graph exploded")

        svc.runner.graph.ainvoke = broken  # type: ignore[method-assign]
        failed = await svc.runner.ask(session_id="s-err", scope=bob(svc), question=LONDON)
        svc.runner.graph.ainvoke = real  # type: ignore[method-assign]
        assert failed.route == "error" and failed.answer == abstention("internal_error", "en")
        pending = await svc.runner.ask(session_id="s-err", scope=bob(svc), question="hello?")
        assert pending.route == "escalate_pending"
        delivered = await svc.runner.resume(escalation_id=failed.escalation.escalation_id,  # type: ignore[union-attr]
                                            reply=admin_reply("It is GBP 210.", "m-1"))
        assert delivered is not None and delivered.answer == "Answer from Dana: It is GBP 210."
        assert (await svc.runner.ask(session_id="s-err", scope=bob(svc), question=LONDON)).route == "answer"


@pytest.mark.sqlite_only("the SQLite checkpointer's own fast path")
async def test_the_checkpoint_a_turn_starts_from_is_the_one_the_library_reads(open_home) -> None:
    """graph/checkpoint.py reads the latest checkpoint in fewer round trips: the same tuple as the
    library's reader, pending writes (the interrupt a resume needs) included."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async def both(saver: AsyncSqliteSaver) -> tuple[object, object]:
        config = {"configurable": {"thread_id": "s-same"}}
        return await saver.aget_tuple(config), await AsyncSqliteSaver.aget_tuple(saver, config)  # type: ignore[arg-type]

    async with open_home() as svc:
        saver = svc.graph.checkpointer
        assert await both(saver) == (None, None)
        asked = await svc.runner.ask(session_id="s-same", scope=bob(svc), question=UNKNOWN)
        ours, theirs = await both(saver)
        assert ours == theirs and ours is not None
        assert any(channel == "__interrupt__" for _, channel, _ in ours.pending_writes)  # type: ignore[attr-defined]
    async with open_home() as svc:  # after a restart, resumed from it
        await svc.runner.resume(escalation_id=asked.escalation.escalation_id,  # type: ignore[union-attr]
                                reply=admin_reply("Only guide dogs.", "m-1"))
        ours, theirs = await both(svc.graph.checkpointer)
        assert ours == theirs and ours is not None and ours.parent_config is not None  # type: ignore[attr-defined]
