"""Budgets, the kill switch, health, readiness, metrics, the Slack mount, and structured logs."""

from __future__ import annotations

import io
import json
import logging
import re

import httpx
import pytest

from bot.http.app import create_http_app
from bot.http.budgets import Budgets
from bot.logging_setup import JsonFormatter, RedactFilter
from bot.metrics import Metrics
from bot.services import Services
from store.controls import Controls
from store.db import iso
from tests.bot.http.conftest import Api, make_api

# -- budgets ---------------------------------------------------------------------------------------------


async def test_the_user_budget_answers_429_with_retry_after(handbook: Services) -> None:
    api = make_api(handbook, budgets=Budgets(user_rpm=2, service_rpm=1000))()
    async with api.client:
        assert [(await api.retrieve(user="bob")).status_code for _ in range(2)] == [200, 200]
        r = await api.retrieve(user="bob")
        assert r.status_code == 429 and r.json()["error"] == "budget_exceeded"
        assert 1 <= int(r.headers["Retry-After"]) <= 30
        assert (await api.retrieve(user="alice")).status_code == 200  # another user's budget is untouched
        metrics = (await api.client.get("/metrics")).text
        assert 'cairn_budget_rejections_total{scope="user"} 1.0' in metrics


async def test_the_service_budget_covers_all_its_users(handbook: Services) -> None:
    api = make_api(handbook, budgets=Budgets(user_rpm=1000, service_rpm=2))()
    async with api.client:
        assert (await api.retrieve(user="bob")).status_code == 200
        assert (await api.retrieve(user="alice")).status_code == 200
        r = await api.retrieve(user="erin")
        assert r.status_code == 429 and "service" in r.json()["message"] and "Retry-After" in r.headers
        assert (await api.retrieve(user="erin", service="kiosk")).status_code == 200


def test_token_buckets_refill_at_the_configured_rate() -> None:
    clock = [1000.0]
    budgets = Budgets(user_rpm=6, service_rpm=0, clock=lambda: clock[0])  # 6/min = one every 10 s
    assert all(budgets.acquire(user="u", service="s").allowed for _ in range(6))
    refused = budgets.acquire(user="u", service="s")
    assert not refused.allowed and refused.scope == "user" and refused.retry_after_s == 10
    clock[0] += 10
    assert budgets.acquire(user="u").allowed
    assert not budgets.acquire(user="u").allowed


def test_a_refusal_takes_nothing_from_the_other_budget() -> None:
    budgets = Budgets(user_rpm=1, service_rpm=2, clock=lambda: 0.0)
    assert budgets.acquire(user="a", service="s").allowed
    assert not budgets.acquire(user="a", service="s").allowed  # user refused: service keeps its token
    assert budgets.acquire(user="b", service="s").allowed
    assert budgets.acquire(user="c", service="s").scope == "service"


# -- kill switch -----------------------------------------------------------------------------------------


async def test_pausing_tools_answers_503_paused_and_resuming_restores_service(api: Api) -> None:
    controls = api.services.controls
    await controls.set_paused("tools", True, by="test", reason="index maintenance")
    r = await api.retrieve()
    assert r.status_code == 503 and r.json()["error"] == "paused" and r.headers["Retry-After"] == "60"
    ready = (await api.client.get("/readyz")).json()
    assert ready["paused"] == ["tools"] and ready["status"] == "ready"  # paused, yet alive and ready
    assert 'cairn_paused{kind="tools"} 1.0' in (await api.client.get("/metrics")).text
    await controls.set_paused("tools", False, by="test")
    assert (await api.retrieve()).status_code == 200


async def test_pausing_the_llm_leaves_retrieval_alone(api: Api) -> None:
    await api.services.controls.set_paused("llm", True)
    assert (await api.retrieve()).status_code == 200
    assert await api.services.controls.is_paused("llm")


async def test_another_process_switch_is_seen_after_the_cache(handbook: Services) -> None:
    clock = [0.0]
    server = Controls(handbook.db, cache_s=2.0, clock=lambda: clock[0])
    admin = Controls(handbook.db, cache_s=0)  # e.g. `cairn pause tools` in another process
    assert not await server.is_paused("tools")
    await admin.set_paused("tools", True)
    assert not await server.is_paused("tools")  # still cached
    clock[0] += 2.5
    assert await server.is_paused("tools")


async def test_the_environment_pause_cannot_be_lifted_by_the_table(handbook: Services) -> None:
    controls = Controls(handbook.db, env_paused=frozenset({"llm"}))
    await controls.set_paused("llm", False)
    assert await controls.is_paused("llm")
    assert [s.source for s in await controls.state()] == ["env", None]
    with pytest.raises(ValueError):
        Controls(handbook.db, env_paused=frozenset({"everything"}))
    with pytest.raises(ValueError):
        await controls.is_paused("database")


# -- health, readiness, metrics ------------------------------------------------------------------------


async def test_healthz_and_readyz(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    assert (await api.client.get("/healthz")).json() == {"status": "ok"}
    r = await api.client.get("/readyz")
    assert r.status_code == 200
    assert r.json()["checks"] == {"store": "ok", "index": "ok", "model": "ok", "disk": "ok"}

    def down() -> int:
        raise OSError("shard gone")

    monkeypatch.setattr(api.services.index, "count", down)
    r = await api.client.get("/readyz")
    assert r.status_code == 503 and r.json()["checks"]["index"] == "error: OSError"
    assert (await api.client.get("/healthz")).status_code == 200  # liveness does not depend on it


async def test_readyz_reports_low_disk_before_the_index_can_crash_on_it(
        api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api.services.settings, "min_free_disk_mb", 10**12)
    r = await api.client.get("/readyz")
    assert r.status_code == 503
    assert re.fullmatch(r"low: \d+ MB free under .+, at least 1000000000000 MB needed", r.json()["checks"]["disk"])


async def test_metrics_expose_turns_legs_rerank_latency_and_open_escalations(api: Api) -> None:
    metrics = api.services.metrics
    metrics.turn("escalate", "below_score_floor")
    metrics.turn("answer", None)
    metrics.count("leg_timeout", "sparse_en")
    metrics.count("rerank_fail_open", "sentence-minilm+coverage")
    metrics.observe_latency("turn", 0.7)
    for n, status in enumerate(("open", "open", "answered", "resolved")):
        await api.services.db.execute(
            "INSERT INTO escalations (escalation_id, session_id, turn_id, tenant_id, user_id, question, reason,"
            " status, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (f"e{n}", "s", f"t{n}", "larkspur", "U0BOB", "q", "below_score_floor", status, iso()))
    await api.retrieve()
    r = await api.client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    for line in ('cairn_turns_total{reason="below_score_floor",route="escalate"} 1.0',
                 'cairn_turns_total{reason="none",route="answer"} 1.0',
                 'cairn_retrieval_leg_timeouts_total{leg="sparse_en"} 1.0',
                 'cairn_rerank_fail_open_total{reranker="sentence-minilm+coverage"} 1.0',
                 'cairn_escalations_open{status="open"} 2.0',
                 'cairn_escalations_open{status="answered"} 1.0',
                 'cairn_latency_seconds_count{kind="turn"} 1.0',
                 'cairn_latency_seconds_count{kind="api_retrieve"} 1.0'):
        assert line in text, line


def test_each_metrics_object_has_its_own_registry() -> None:
    one, two = Metrics(), Metrics()  # a global registry would refuse the second set of names
    one.turn("escalate", "retrieval_unavailable")
    assert b'reason="retrieval_unavailable"' in one.render()
    assert b'reason="retrieval_unavailable"' not in two.render()


# -- the Slack mount -------------------------------------------------------------------------------------


async def test_slack_events_are_delegated_to_the_bolt_handler(handbook: Services) -> None:
    seen: list[bytes] = []

    class FakeHandler:
        async def handle(self, request):
            from fastapi.responses import JSONResponse
            seen.append(await request.body())
            return JSONResponse({"ok": True})

    app = create_http_app(handbook, slack_handler=FakeHandler(), warm_up=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        r = await client.post("/slack/events", content=b'{"type":"url_verification"}')
        assert r.json() == {"ok": True} and seen == [b'{"type":"url_verification"}']
        assert "/slack/events" not in (await client.get("/openapi.json")).json()["paths"]
    bare = create_http_app(handbook, warm_up=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=bare), base_url="http://t") as client:
        assert (await client.post("/slack/events", content=b"{}")).status_code == 404


# -- structured logs -------------------------------------------------------------------------------------


def _capture(log_content: bool) -> tuple[logging.Handler, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RedactFilter(log_content=log_content))
    return handler, stream


def test_json_lines_drop_content_and_pseudonymise_users() -> None:
    handler, stream = _capture(log_content=False)
    log = logging.getLogger("tests.bot.http.logs")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        log.info("turn.finished", extra={"turn_id": "t1", "user": "U0BOB", "question": "my salary?",
                                         "text": "secret", "route": "answer"})
    finally:
        log.removeHandler(handler)
    line = json.loads(stream.getvalue())
    assert line["event"] == "turn.finished" and line["level"] == "INFO" and line["logger"] == "tests.bot.http.logs"
    assert line["turn_id"] == "t1" and line["route"] == "answer"
    assert "question" not in line and "text" not in line
    assert line["user"].startswith("u:") and "U0BOB" not in stream.getvalue()


def test_content_is_logged_only_when_asked() -> None:
    handler, stream = _capture(log_content=True)
    log = logging.getLogger("tests.bot.http.logs.content")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        log.info("turn.finished", extra={"user": "U0BOB", "question": "my salary?"})
    finally:
        log.removeHandler(handler)
    line = json.loads(stream.getvalue())
    assert line["question"] == "my salary?" and line["user"] == "U0BOB"


async def test_an_api_request_logs_ids_but_not_the_question(api: Api) -> None:
    handler, stream = _capture(log_content=False)
    log = logging.getLogger("bot.http.retrieve")
    log.addHandler(handler)
    old = log.level
    log.setLevel(logging.INFO)
    try:
        r = await api.retrieve("Where is the Boston hotel limit written down?", user="alice")
    finally:
        log.removeHandler(handler)
        log.setLevel(old)
    lines = [json.loads(x) for x in stream.getvalue().splitlines()]
    line = next(x for x in lines if x["event"] == "api.retrieve")
    assert line["request_id"] == r.json()["requestId"] and line["service"] == "helpdesk"
    assert "Boston hotel" not in stream.getvalue() and "U0ALICE" not in stream.getvalue()


async def test_api_request_metrics_are_labelled_by_route_template_not_raw_path(api: Api) -> None:
    for path in ("/v1/nope", "/v1/x1", "/v1/x2"):
        assert (await api.client.post(path, json={})).status_code == 404
    text = (await api.client.get("/metrics")).text
    assert 'cairn_api_requests_total{route="unmatched",status="404"} 3.0' in text
    assert "/v1/x1" not in text


async def test_a_turn_through_the_runner_is_counted_by_route_and_reason(api: Api) -> None:
    scope = api.services.access.resolve_cli("bob")
    await api.services.runner.ask(session_id="s-metrics", scope=scope, question="I want to talk to a person")
    text = (await api.client.get("/metrics")).text
    assert 'cairn_turns_total{reason="user_requested_human",route="escalate"} 1.0' in text
    assert 'cairn_latency_seconds_count{kind="turn"} 1.0' in text
