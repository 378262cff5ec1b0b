"""The LLM answerer with the shipped answer judge, through the real `openai` client against a local
fake of the chat-completions API: passages the judge does not read as evidence are not sent, and a
draft sentence its cited chunk does not support never reaches the user."""

from __future__ import annotations

import pytest

from graph.messages import abstention
from models.judge import Judge
from tests.graph import fake_openai as llm
from tests.graph.conftest import LONDON, bob
from tests.graph.test_llm import assert_nothing_unvalidated_stored, cites_passage_with, llm_settings

pytestmark = pytest.mark.slow


async def test_passages_the_judge_does_not_read_as_evidence_are_not_sent(open_home) -> None:
    with llm.FakeOpenAI([cites_passage_with("GBP 210", "The nightly hotel limit in London is GBP 210 [{id}].")]) as fake:
        async with open_home(**llm_settings(fake)) as svc:
            out = await svc.runner.ask(session_id="s-screen", scope=bob(svc), question=LONDON)
    assert out.route == "answer", out.trace.get("validation")
    evidence = out.trace["searches"][0]["evidence"]
    assert evidence["floor"] == svc.answerer.judge.scope_floor  # type: ignore[attr-defined]
    assert evidence["dropped"], evidence  # the search found passages about other things too
    sent = llm.sent_ids(fake.requests[0])
    assert sent == [p["chunk_id"] for p in evidence["kept"]]
    assert not {p["chunk_id"] for p in evidence["dropped"]} & set(sent)
    assert all(p["best"] < evidence["floor"] for p in evidence["dropped"])
    assert all(p["best"] >= evidence["floor"] for p in evidence["kept"])
    assert {p.chunk_id for p in out.passages} == set(sent)  # what a citation may name: what was sent


async def test_a_search_that_leaves_no_evidence_escalates_without_calling_the_model(open_home) -> None:
    with llm.FakeOpenAI([llm.cited_answer()]) as fake:
        async with open_home(**llm_settings(fake)) as svc:
            strict = Judge()
            strict.scope_floor = 0.999  # nothing the shipped judge reads reaches it
            svc.answerer.judge = strict  # type: ignore[attr-defined]
            out = await svc.runner.ask(session_id="s-screen-none", scope=bob(svc), question=LONDON)
    assert (out.route, out.reason) == ("escalate", "below_score_floor")
    assert out.trace["route_fired"] == "tools→set_below_score_floor→force_escalate"
    assert fake.requests == []
    evidence = out.trace["searches"][0]["evidence"]
    assert evidence["kept"] == [] and evidence["dropped"]
    assert out.trace["searches"][0]["judge"]["answerable"] >= svc.answerer.judge.answerable_at  # type: ignore[attr-defined]


async def test_a_draft_citing_a_real_chunk_for_a_rule_it_does_not_state_is_never_shown(open_home) -> None:
    invented = cites_passage_with("GBP 210", "Employees may bring their dogs to the office on Fridays [{id}].")
    with llm.FakeOpenAI([invented]) as fake:
        async with open_home(**llm_settings(fake)) as svc:
            out = await svc.runner.ask(session_id="s-unsupported", scope=bob(svc), question=LONDON)
            assert (out.route, out.reason) == ("escalate", "answer_validation_failed")
            assert out.answer == abstention("answer_validation_failed", "en")
            problems = out.trace["validation"]["problems"]
            assert [(p["kind"], p["sentence"]) for p in problems] == [("unsupported_sentence", 0)]
            assert out.trace["route_fired"] == "validate→force_escalate"
            await assert_nothing_unvalidated_stored(svc, out, ["dogs", "Fridays"])


async def test_a_faithful_answer_passes_the_support_check(open_home) -> None:
    faithful = cites_passage_with("GBP 210", "In London, the most you can spend on a hotel is GBP 210 a night [{id}].")
    with llm.FakeOpenAI([faithful]) as fake:
        async with open_home(**llm_settings(fake)) as svc:
            out = await svc.runner.ask(session_id="s-faithful", scope=bob(svc), question=LONDON)
    assert out.route == "answer", out.trace.get("validation")
    assert out.trace["validation"]["factual"] == 1 and out.trace["validation"]["problems"] == []
