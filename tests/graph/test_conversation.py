"""Conversation before retrieval, and one conversation holding several questions: greetings and thanks
get a fixed reply (no search, no escalation, nothing for the digest); while a person looks at one
question, a new question is answered or escalated on its own and a follow-up joins the open one."""

from __future__ import annotations

from datetime import UTC

import pytest

from escalations.digest import build_digest
from escalations.weeks import week_label
from graph.followup import follows_up, open_question_texts
from graph.intent import ACKNOWLEDGEMENT, CAPABILITIES, CHASE, GREETING, THANKS, conversation_intent
from graph.messages import abstention, fixed
from graph.state import AdminReply
from store.db import utcnow
from store.records import EscalationRecord, Scope
from tests.graph.conftest import LONDON, bob

UNKNOWN = "Can I expense a gym membership?"

CONVERSATION = [
    ("hi", GREETING), ("Hi!", GREETING), ("hello there", GREETING), ("Hiii cairn", GREETING),
    ("good morning team", GREETING), ("how are you?", GREETING), ("bye", GREETING),
    ("thanks", THANKS), ("thanks!", THANKS), ("Thank you so much!", THANKS), ("great, thanks", THANKS),
    ("thx", THANKS), ("cheers", THANKS), ("ok", ACKNOWLEDGEMENT), ("ok cool", ACKNOWLEDGEMENT),
    ("got it", ACKNOWLEDGEMENT), ("👍", ACKNOWLEDGEMENT), ("sounds good", ACKNOWLEDGEMENT),
    ("what can you do?", CAPABILITIES), ("What do you do", CAPABILITIES), ("help", CAPABILITIES),
    ("who are you?", CAPABILITIES), ("any update?", CHASE), ("still waiting", CHASE), ("hello?", CHASE),
    ("?", CHASE), ("is anyone there?", CHASE),
    ("مرحبا", GREETING), ("السلام عليكم", GREETING), ("صباح الخير", GREETING), ("شكراً", THANKS),
    ("شكرا جزيلا", THANKS), ("تمام", ACKNOWLEDGEMENT), ("ماذا تستطيع أن تفعل؟", CAPABILITIES),
    ("هل من جديد؟", CHASE),
]

QUESTIONS = [
    "hi, how many vacation days do I get?", "Hi! What is the nightly hotel limit in London?",
    "thanks, and for contractors?", "ok so how many sick days?", "Is it ok to fly business class?",
    "What can you do about a lost badge?", "help me book a hotel in Boston", "Thanks to my manager I have "
    "extra leave, can I carry it over?", "good morning, can I expense a taxi?", "What's the update policy for "
    "laptops?", "I want to talk to a person", "cairn", "مرحبا، كم يوم إجازة سنوية أحصل عليها؟", "شكرا، وماذا عن المتعاقدين؟",
]


@pytest.mark.parametrize(("text", "intent"), CONVERSATION)
def test_conversation_is_recognised_whole(text: str, intent: str) -> None:
    assert conversation_intent(text) == intent


@pytest.mark.parametrize("text", QUESTIONS)
def test_a_question_that_starts_like_conversation_stays_a_question(text: str) -> None:
    assert conversation_intent(text) is None


@pytest.mark.parametrize(("text", "intent", "language"), [
    ("hi", GREETING, "en"), ("thanks!", THANKS, "en"), ("ok cool", ACKNOWLEDGEMENT, "en"),
    ("what can you do?", CAPABILITIES, "en"), ("مرحبا", GREETING, "ar"), ("شكراً", THANKS, "ar")])
async def test_conversation_gets_its_reply_without_a_search_or_an_escalation(
        open_home, text: str, intent: str, language: str) -> None:
    async with open_home() as svc:
        out = await svc.runner.ask(session_id="s-talk", scope=bob(svc), question=text)
        turn = await svc.conversations.get_turn(turn_id=out.turn_id)
        escalations = await svc.conversations.list_escalations(open_only=False)
        digest = await build_digest(svc.store.reports, week=week_label(utcnow(), UTC), tenant_id="larkspur")
    assert (out.route, out.reason, out.escalation) == ("conversation", None, None)
    assert out.answer == fixed(intent, language) and out.language == language
    assert out.trace["path"] == ["agent", "validate"] and out.trace["searches"] == []
    assert out.as_json()["route"] == "answer" and out.as_json()["outcome"] == "conversation"
    assert turn is not None and turn.route == "conversation"
    assert escalations == [] and digest.counts.total == 0 and digest.backlog == []


async def test_a_question_that_opens_with_hi_is_answered(open_home) -> None:
    async with open_home() as svc:
        out = await svc.runner.ask(session_id="s-hi", scope=bob(svc), question=f"hi, {LONDON.lower()}")
    assert out.route == "answer" and "GBP 210" in out.answer


def admin_reply(text: str, key: str) -> AdminReply:
    return AdminReply(type="admin_reply", admin_id="U0DANA", admin_name="Dana", text=text, message_key=key)


async def test_a_new_question_during_an_open_escalation_is_answered_on_its_own(open_home) -> None:
    async with open_home() as svc:
        first = await svc.runner.ask(session_id="s-two", scope=bob(svc), question=UNKNOWN)
        assert (first.route, first.reason) == ("escalate", "below_score_floor")
        open_id = first.escalation.escalation_id  # type: ignore[union-attr]

        other = await svc.runner.ask(session_id="s-two", scope=bob(svc), question=LONDON)
        assert other.route == "answer" and "GBP 210" in other.answer
        assert other.answer.endswith(fixed("aside_answer", "en")), "the reply says it was answered on its own"
        assert other.citations and other.trace["open_escalation"] == open_id

        chase = await svc.runner.ask(session_id="s-two", scope=bob(svc), question="any update?")
        related = await svc.runner.ask(session_id="s-two", scope=bob(svc),
                                       question="I really need to know about the gym thing by friday")
        for follow in (chase, related):
            assert follow.route == "escalate_pending" and follow.answer == fixed("escalate_pending", "en")
            assert follow.escalation is not None and follow.escalation.escalation_id == open_id

        thanks = await svc.runner.ask(session_id="s-two", scope=bob(svc), question="thanks!")
        assert thanks.route == "conversation" and thanks.escalation is None
        assert thanks.answer == f"{fixed('thanks', 'en')} {fixed('aside_conversation', 'en')}"

        unrelated = await svc.runner.ask(session_id="s-two", scope=bob(svc),
                                         question="What is the policy on bringing dogs to the office?")
        assert (unrelated.route, unrelated.reason) == ("escalate", "below_score_floor")
        assert unrelated.answer == f"{abstention('below_score_floor', 'en')} {fixed('aside_escalate', 'en')}"
        assert unrelated.escalation is not None and unrelated.escalation.escalation_id != open_id

        held = await svc.conversations.get_escalation(escalation_id=open_id)
        assert held is not None and held.status == "open"
        assert [line for line in held.transcript.splitlines() if line.startswith("user: ")][-2:] == [
            "user: any update?", "user: I really need to know about the gym thing by friday"]
        assert {e.escalation_id for e in await svc.conversations.list_escalations(open_only=True)} == {
            open_id, unrelated.escalation.escalation_id}

        # The person's answer to the first question still reaches the user, exactly once.
        delivered = await svc.runner.resume(escalation_id=open_id, reply=admin_reply("Up to 30 a month.", "m-1"))
        assert delivered is not None and delivered.answer == "Answer from Dana: Up to 30 a month."
        assert await svc.runner.resume(escalation_id=open_id, reply=admin_reply("Up to 30 a month.", "m-1")) is None
        # ... and the second one's is delivered through its own interrupt.
        second = await svc.runner.resume(escalation_id=unrelated.escalation.escalation_id,
                                         reply=admin_reply("Only guide dogs.", "m-2"))
        assert second is not None and second.answer == "Answer from Dana: Only guide dogs."
        assert second.turn_id == unrelated.turn_id


async def test_chasing_with_nothing_open_says_so(open_home) -> None:
    async with open_home() as svc:
        out = await svc.runner.ask(session_id="s-chase", scope=bob(svc), question="any update?")
    assert out.route == "conversation" and out.answer == fixed("chase", "en") and out.escalation is None


@pytest.mark.parametrize("scope", [
    Scope(user_id="U0HANK", tenant_id="harbor", groups=frozenset({"everyone"})),  # a tenant with no documents
    Scope(user_id="U0NOBODY", tenant_id="larkspur", groups=frozenset()),  # no group at all
    Scope(user_id="U0X", tenant_id="larkspur", groups=frozenset({"nobody-publishes-here"})),
], ids=["empty-tenant", "no-groups", "group-without-documents"])
async def test_no_published_document_for_the_asker_is_no_eligible_source(open_home, scope: Scope) -> None:
    async with open_home() as svc:
        out = await svc.runner.ask(session_id="s-none", scope=scope, question=LONDON)
    assert (out.route, out.reason) == ("escalate", "no_eligible_source")
    assert out.answer == abstention("no_eligible_source", "en")
    assert out.answer.startswith("I don't have any approved documents to answer from yet")
    assert out.trace["route_fired"] == "tools→set_no_eligible_source→force_escalate"
    assert out.escalation is not None and out.escalation.reason == "no_eligible_source"


OPEN = EscalationRecord(escalation_id="esc-1", session_id="s", turn_id="t", tenant_id="larkspur", user_id="U",
                        question="What is our policy on bringing pets to the Tokyo office?",
                        reason="below_score_floor", transcript="", passages=[], top_score=None, status="open",
                        channel=None, thread_ts=None, claimed_by=None, resolved_by=None, kind=None, topic=None,
                        label_attempts=0, first_reply_at=None, reminded_at=None, deadline_at=None, created_at="",
                        closed_at=None)


@pytest.mark.parametrize(("message", "joins"), [
    ("It is a very small dog.", True), ("My manager already approved it", True), ("any update?", True),
    ("I want to talk to a person", True), ("and for contractors?", True), ("what about Boston?", True),
    ("وهل يشمل القطط؟", True),
    ("What is the nightly hotel limit in London?", False), ("how many vacation days do I get", False),
    ("And how many sick days do I get this year at the Boston store?", False), ("thanks!", False),
    ("hi", False), ("كم يوم إجازة سنوية أحصل عليها؟", False),
])
async def test_what_joins_the_open_question_without_closeness(message: str, joins: bool) -> None:
    assert await follows_up(message, OPEN, None) is joins


async def test_closeness_decides_a_question_that_neither_leans_nor_chases() -> None:
    async def close(message: str, texts: object) -> bool:
        return True

    assert await follows_up("Can I bring my cat to the Tokyo office?", OPEN, close)
    assert not await follows_up("Can I bring my cat to the Tokyo office?", OPEN, None)


def test_only_what_was_added_to_the_open_question_counts_as_its_subject() -> None:
    transcript = ("user: How many vacation days do I get?\ncairn: According to …\nuser: What is the mileage rate?\n"
                  "cairn: I couldn't find this …\nuser: for a van?")
    esc = EscalationRecord(escalation_id="esc-1", session_id="s", turn_id="t", tenant_id="larkspur", user_id="U",
                           question="What is the mileage rate?", reason="below_score_floor", transcript=transcript,
                           passages=[], top_score=None, status="open", channel=None, thread_ts=None,
                           claimed_by=None, resolved_by=None, kind=None, topic=None, label_attempts=0,
                           first_reply_at=None,
                           reminded_at=None, deadline_at=None, created_at="", closed_at=None)
    assert open_question_texts(esc) == ["What is the mileage rate?", "for a van?"]
