"""Every route of the graph on the real sample handbook (real SQLite, Qdrant Edge, MiniLM/USE)."""

from __future__ import annotations

import time

import pytest

from graph.messages import abstention
from graph.validate import citations_in, validate_answer
from retrieval.index import Hit
from tests.graph.conftest import LONDON, bob


async def test_answer_route_is_cited_recorded_and_traced(open_home) -> None:
    async with open_home() as svc:
        out = await svc.runner.ask(session_id="s-answer", scope=bob(svc), question=LONDON)
        turn = await svc.conversations.get_turn(turn_id=out.turn_id)
    assert out.route == "answer" and out.reason is None
    assert "GBP 210" in out.answer
    sent = [p.chunk_id for p in out.passages]
    assert citations_in(out.answer) and set(citations_in(out.answer)) <= set(sent)
    assert validate_answer(out.answer, sent).ok
    assert out.citations and out.citations[0]["title"] == "Travel and Expenses Policy"
    assert {"chunk_id", "title", "version", "page", "heading", "source_path"} <= set(out.citations[0])
    assert turn is not None and turn.route == "answer" and turn.answer == out.answer
    assert turn.trace["path"] == ["agent", "tools", "agent", "validate"]
    assert turn.trace["route_fired"] == "validate→END"
    assert turn.answerer == "extractive" and turn.prompt_version == "extractive-v1"
    assert turn.trace["searches"][0]["chunks"] and turn.passages[0]["chunk_id"] == sent[0]
    assert turn.timings["total_ms"] > 0 and "answer_ms" in turn.timings
    assert out.as_json(qid="q-1")["route"] == "answer"


async def test_below_score_floor_escalates_with_an_interrupt(open_home) -> None:
    async with open_home() as svc:
        out = await svc.runner.ask(session_id="s-floor", scope=bob(svc),
                                   question="What is the policy on bringing dogs to the office?")
    assert (out.route, out.reason) == ("escalate", "below_score_floor")
    assert out.answer == abstention("below_score_floor", "en")
    assert out.escalation is not None and out.escalation.status == "open"
    assert out.interrupt is not None and out.interrupt["type"] == "escalation"
    assert out.interrupt["escalation_id"] == out.escalation.escalation_id
    assert out.interrupt["turn_id"] == out.turn_id and out.interrupt["user_id"] == bob(svc).user_id
    assert out.interrupt["passages"] and "score" in out.interrupt["passages"][0]
    assert out.passages, "the passages that would have entered the prompt are reported even when gated"
    assert out.as_json()["route"] == "escalate"


@pytest.mark.parametrize("question", ["what is the wholesale returns policy?",
                                      "What is the returns policy for our wholesale customers?"])
async def test_wholesale_returns_is_below_the_floor(open_home, question: str) -> None:
    """Sample fact 5: there is no wholesale returns policy; the retail one, which the search finds, must
    not pass for it: the answer judge reads none of its sentences as answering."""
    async with open_home() as svc:
        out = await svc.runner.ask(session_id="s-wholesale", scope=bob(svc), question=question)
    assert (out.route, out.reason) == ("escalate", "below_score_floor")


@pytest.mark.parametrize("question", ["I want to talk to a person", "أريد التحدث إلى شخص"])
async def test_user_requested_human_skips_retrieval(open_home, question: str) -> None:
    async with open_home() as svc:
        out = await svc.runner.ask(session_id="s-human", scope=bob(svc), question=question)
    assert (out.route, out.reason) == ("escalate", "user_requested_human")
    assert out.answer == abstention("user_requested_human", "ar" if "أ" in question else "en")
    assert out.trace["path"] == ["agent", "tools", "force_escalate"]
    assert out.escalation is not None and out.escalation.reason == "user_requested_human"


class BrokenIndex:
    """Stands in for the vector index: every search fails (or hangs past the leg timeout)."""

    def __init__(self, inner: object, *, hang_s: float = 0.0) -> None:
        self.inner = inner
        self.hang_s = hang_s

    def search(self, **kwargs: object) -> list[Hit]:
        if self.hang_s:
            time.sleep(self.hang_s)
            return []
        raise ConnectionError("index is down")

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


@pytest.mark.parametrize("hang_s", [0.0, 0.6])
async def test_retrieval_unavailable_when_the_index_fails(open_home, hang_s: float) -> None:
    async with open_home(CAIRN_LEG_TIMEOUT=0.2) as svc:
        svc.searcher.index = BrokenIndex(svc.searcher.index, hang_s=hang_s)  # type: ignore[assignment]
        out = await svc.runner.ask(session_id="s-down", scope=bob(svc), question=LONDON)
        turn = await svc.conversations.get_turn(turn_id=out.turn_id)
    assert (out.route, out.reason) == ("escalate", "retrieval_unavailable")
    assert out.answer == abstention("retrieval_unavailable", "en")
    assert turn is not None and turn.trace["route_fired"] == "tools→set_retrieval_unavailable→force_escalate"


async def test_retrieval_unavailable_when_the_searcher_raises(open_home) -> None:
    async with open_home() as svc:
        async def explode(*args: object, **kwargs: object) -> None:
            raise RuntimeError("searcher crashed")

        svc.searcher.search = explode  # type: ignore[method-assign]
        out = await svc.runner.ask(session_id="s-crash", scope=bob(svc), question=LONDON)
    assert (out.route, out.reason) == ("escalate", "retrieval_unavailable")


async def test_arabic_question_gets_a_cited_answer_or_the_arabic_abstention(open_home) -> None:
    async with open_home() as svc:
        answered = await svc.runner.ask(session_id="s-ar1", scope=bob(svc),
                                        question="كم يومًا في الأسبوع يمكنني العمل من المنزل؟")
        unknown = await svc.runner.ask(session_id="s-ar2", scope=bob(svc),
                                       question="ما هي سياسة إحضار الكلاب إلى المكتب؟")
    for out in (answered, unknown):
        assert out.language == "ar"
        if out.route == "answer":
            assert out.answer.startswith("وفقًا لـ") and validate_answer(
                out.answer, [p.chunk_id for p in out.passages]).ok
        else:
            assert out.answer == abstention(str(out.reason), "ar")
    assert answered.route == "answer" and "3" in answered.answer


async def test_arabic_abstention_when_retrieval_is_down(open_home) -> None:
    async with open_home() as svc:
        svc.searcher.index = BrokenIndex(svc.searcher.index)  # type: ignore[assignment]
        out = await svc.runner.ask(session_id="s-ar3", scope=bob(svc), question="ما هو حد الفندق في لندن؟")
    assert (out.route, out.reason, out.language) == ("escalate", "retrieval_unavailable", "ar")
    assert out.answer == abstention("retrieval_unavailable", "ar")


async def test_an_exception_inside_a_turn_becomes_a_visible_error_and_an_escalation(open_home) -> None:
    async with open_home() as svc:
        async def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("graph exploded")

        svc.runner.graph.ainvoke = broken  # type: ignore[method-assign]
        out = await svc.runner.ask(session_id="s-err", scope=bob(svc), question=LONDON)
        turn = await svc.conversations.get_turn(turn_id=out.turn_id)
    assert (out.route, out.reason) == ("error", "internal_error")
    assert out.answer == "Something went wrong while answering; your question has been passed to a person."
    assert out.escalation is not None and out.escalation.reason == "internal_error"
    assert turn is not None and turn.route == "error"
