"""The classifier: kind from the reason, topic from the whole conversation, failures → `unclassified`."""

from __future__ import annotations

import pytest

from bot.services import build_topic_classifier
from escalations.classifier import (
    EmbeddingTopicClassifier,
    LLMTopicClassifier,
    classify_pending,
    conversation_lines,
    parse_topic,
)
from escalations.taxonomy import DEFAULT_TAXONOMY, UNCLASSIFIED
from retrieval.embed import Embedder
from tests.conftest import make_settings
from tests.escalations.conftest import Store, at, seed, seed_turn
from tests.graph.fake_openai import FakeOpenAI, http_error, text

REASONS = {"retrieval_unavailable": "genuine", "user_requested_human": "genuine",
           "below_score_floor": "avoidable", "answer_validation_failed": "avoidable",
           "conflicting_sources": "avoidable", "internal_error": "system"}


class FixedTopic:
    name = "fixed"

    def __init__(self, topic: str = "travel") -> None:
        self.topic_name = topic
        self.seen: list[list[str]] = []

    async def topic(self, lines: list[str], *, language: str | None) -> str:
        self.seen.append(lines)
        return self.topic_name


class Exploding:
    name = "exploding"

    async def topic(self, lines: list[str], *, language: str | None) -> str:
        raise RuntimeError("model fell over")


def llm(fake: FakeOpenAI) -> LLMTopicClassifier:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=fake.base_url, api_key="test", max_retries=0, timeout=5)
    return LLMTopicClassifier(client=client, model="fake-model", taxonomy=DEFAULT_TAXONOMY)


async def label_of(store: Store, escalation_id: str) -> tuple[str | None, str | None, int]:
    esc = await store.conversations.get_escalation(escalation_id=escalation_id)
    assert esc is not None
    return esc.kind, esc.topic, esc.label_attempts


async def test_each_reason_gets_its_kind(store: Store) -> None:
    ids = {reason: (await seed(store, reason, reason=reason, created_at=at(27))).escalation_id for reason in REASONS}
    report = await classify_pending(queries=store.queries, classifier=FixedTopic(), max_attempts=3)
    assert report.labelled == len(REASONS) and report.unclassified == 0
    for reason, kind in REASONS.items():
        assert await label_of(store, ids[reason]) == (kind, "travel", 1)
    assert dict(report.kinds) == {"genuine": 2, "avoidable": 3, "system": 1}
    # labelled rows are not labelled again
    again = await classify_pending(queries=store.queries, classifier=FixedTopic("leave"), max_attempts=3)
    assert again.labelled == 0


async def test_topic_comes_from_the_transcript_not_the_connect_me_turn(store: Store) -> None:
    session = "s-leave"
    await seed_turn(store, session, "t-1", "How many vacation days can I carry over into next year?",
                    created_at=at(27, 10))
    await seed_turn(store, session, "t-2", "And can I take them all in December?", created_at=at(27, 10, 1))
    await seed_turn(store, session, "t-esc", "yes, connect me", created_at=at(27, 10, 2), route="escalate")
    await seed_turn(store, session, "t-later", "What is the hotel limit in Boston?", created_at=at(28, 10))
    esc = await seed(store, "esc", reason="user_requested_human", created_at=at(27, 10, 2),
                     question="yes, connect me", session_id=session,
                     transcript="user: yes, connect me\ncairn: Sure. I've passed your question to a person.\n"
                                "user: it's about the carry-over limit")
    # the escalation's own turn id is t-esc (seed derives it from the key)
    fixed = FixedTopic("leave")
    await classify_pending(queries=store.queries, classifier=fixed, max_attempts=3)
    assert fixed.seen == [["How many vacation days can I carry over into next year?",
                           "And can I take them all in December?", "it's about the carry-over limit"]]
    assert (await label_of(store, esc.escalation_id))[1] == "leave"


def test_conversation_lines_keep_a_request_that_carries_content() -> None:
    from store.records import EscalationRecord

    esc = EscalationRecord(
        escalation_id="e", session_id="s", turn_id="t", tenant_id="larkspur", user_id="U", reason="x",
        question="I want to talk to a person about my refund for the tent I returned in Boston", transcript="",
        passages=[], top_score=None, status="open", channel=None, thread_ts=None, claimed_by=None,
        resolved_by=None, kind=None, topic=None, label_attempts=0, first_reply_at=None, reminded_at=None,
        deadline_at=None, created_at="2026-01-27T10:00:00+00:00", closed_at=None)
    assert conversation_lines(esc, ["ok", "human please"]) == [esc.question]
    only_request = EscalationRecord(**{**esc.__dict__, "question": "connect me"})
    assert conversation_lines(only_request, []) == ["connect me"]  # nothing else: classify what there is


async def test_embedding_classifier_reads_the_whole_conversation(store: Store, embedder: Embedder) -> None:
    session = "s-emb"
    await seed_turn(store, session, "t-a", "How many days of annual leave do I get in my first year?",
                    created_at=at(27, 9))
    esc = await seed(store, "emb", reason="user_requested_human", created_at=at(27, 9, 5),
                     question="I want to talk to a person, please.", session_id=session)
    ar = await seed(store, "ar", reason="below_score_floor", created_at=at(27, 9, 6),
                    question="ما هي سياسة الإرجاع لعملاء الجملة؟", lang="ar")
    bare = await seed(store, "bare", reason="user_requested_human", created_at=at(27, 9, 7),
                      question="أريد التحدث مع شخص من فريق الموارد البشرية.", lang="ar")
    classifier = EmbeddingTopicClassifier(embedder=embedder, taxonomy=DEFAULT_TAXONOMY)
    report = await classify_pending(queries=store.queries, classifier=classifier, max_attempts=3)
    assert report.errors == []
    assert (await label_of(store, esc.escalation_id))[:2] == ("genuine", "leave")
    assert (await label_of(store, ar.escalation_id))[:2] == ("avoidable", "returns")
    assert (await label_of(store, bare.escalation_id))[:2] == ("genuine", "other")  # resembles no topic


async def test_llm_topic_from_the_configured_taxonomy(store: Store, fake_openai: FakeOpenAI) -> None:
    fake_openai.script = [text("Topic: Travel")]
    await seed_turn(store, "s-llm", "t-q", "What is the nightly hotel limit in London?", created_at=at(27, 9))
    esc = await seed(store, "llm", reason="user_requested_human", created_at=at(27, 9, 1),
                     question="yes please, connect me to someone", session_id="s-llm")
    report = await classify_pending(queries=store.queries, classifier=llm(fake_openai), max_attempts=3)
    assert (report.labelled, report.unclassified) == (1, 0)
    assert (await label_of(store, esc.escalation_id)) == ("genuine", "travel", 1)
    sent = fake_openai.requests[0]
    prompt = sent["messages"][-1]["content"]
    assert sent["model"] == "fake-model" and sent["temperature"] == 0
    assert "- it & equipment:" in prompt and "user: What is the nightly hotel limit in London?" in prompt
    assert "connect me" not in prompt


async def test_garbage_from_the_llm_is_unclassified_then_retried_until_the_limit(
        store: Store, fake_openai: FakeOpenAI) -> None:
    fake_openai.script = [text("Well, it could be about several things, honestly."), http_error(500),
                          text("{not json"), text("leave")]
    esc = await seed(store, "g", reason="below_score_floor", created_at=at(27),
                     question="How many days of annual leave do I get?")
    classifier = llm(fake_openai)
    first = await classify_pending(queries=store.queries, classifier=classifier, max_attempts=3)
    assert (first.labelled, first.unclassified) == (1, 1) and "UnparseableLabel" in first.errors[0]
    assert await label_of(store, esc.escalation_id) == ("avoidable", UNCLASSIFIED, 1)  # kept, not dropped
    second = await classify_pending(queries=store.queries, classifier=classifier, max_attempts=3)
    assert second.unclassified == 1 and "InternalServerError" in second.errors[0]
    third = await classify_pending(queries=store.queries, classifier=classifier, max_attempts=3)
    assert third.unclassified == 1
    assert await label_of(store, esc.escalation_id) == ("avoidable", UNCLASSIFIED, 3)
    # attempts exhausted: the good answer waiting in the fake is never asked for
    fourth = await classify_pending(queries=store.queries, classifier=classifier, max_attempts=3)
    assert fourth.labelled == 0 and len(fake_openai.requests) == 3


async def test_a_retry_that_succeeds_replaces_unclassified(store: Store, fake_openai: FakeOpenAI) -> None:
    fake_openai.script = [text("bananas"), text("leave")]
    esc = await seed(store, "r", reason="below_score_floor", created_at=at(27))
    classifier = llm(fake_openai)
    await classify_pending(queries=store.queries, classifier=classifier, max_attempts=3)
    await classify_pending(queries=store.queries, classifier=classifier, max_attempts=3)
    assert await label_of(store, esc.escalation_id) == ("avoidable", "leave", 2)


async def test_unreachable_llm_and_exceptions_never_drop_rows(store: Store) -> None:
    from openai import AsyncOpenAI

    dead = LLMTopicClassifier(client=AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="x", max_retries=0,
                                                 timeout=2), model="m", taxonomy=DEFAULT_TAXONOMY)
    a = await seed(store, "a", reason="retrieval_unavailable", created_at=at(27))
    report = await classify_pending(queries=store.queries, classifier=dead, max_attempts=2)
    assert report.unclassified == 1 and "APIConnectionError" in report.errors[0]
    b = await seed(store, "b", reason="conflicting_sources", created_at=at(28))
    report = await classify_pending(queries=store.queries, classifier=Exploding(), max_attempts=2)
    assert report.labelled == 2 and report.unclassified == 2
    assert await label_of(store, a.escalation_id) == ("genuine", UNCLASSIFIED, 2)
    assert await label_of(store, b.escalation_id) == ("avoidable", UNCLASSIFIED, 1)


async def test_a_slow_classifier_times_out_into_unclassified(store: Store) -> None:
    import asyncio

    class Slow:
        name = "slow"

        async def topic(self, lines: list[str], *, language: str | None) -> str:
            await asyncio.sleep(5)
            return "travel"

    esc = await seed(store, "slow", reason="below_score_floor", created_at=at(27))
    report = await classify_pending(queries=store.queries, classifier=Slow(), max_attempts=3, timeout_s=0.05)
    assert report.unclassified == 1 and "TimeoutError" in report.errors[0]
    assert (await label_of(store, esc.escalation_id))[1] == UNCLASSIFIED


@pytest.mark.parametrize(("reply", "topic"), [
    ("travel", "travel"), ("Leave\n", "leave"), ("Topic: remote work", "remote work"),
    ('{"topic": "IT & equipment"}', "it & equipment"), ("- conduct", "conduct"),
    ("returns\nBecause the user asks about refunds.", "returns"),
    ("I'd say travel", None), ("", None), (None, None), ('{"label": "travel"}', None), ("unclassified", None),
])
def test_parse_topic(reply: str | None, topic: str | None) -> None:
    assert parse_topic(reply, DEFAULT_TAXONOMY) == topic


def test_which_classifier(tmp_path, embedder: Embedder) -> None:  # type: ignore[no-untyped-def]
    offline = make_settings(tmp_path)
    assert build_topic_classifier(offline, embedder=embedder, taxonomy=DEFAULT_TAXONOMY).name == "embedding"
    online = make_settings(tmp_path, CAIRN_CHAT_MODEL="m", OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    assert build_topic_classifier(online, embedder=embedder, taxonomy=DEFAULT_TAXONOMY).name == "llm"
    paused = make_settings(tmp_path, CAIRN_CHAT_MODEL="m", CAIRN_PAUSE="llm")
    assert build_topic_classifier(paused, embedder=embedder, taxonomy=DEFAULT_TAXONOMY).name == "embedding"
