"""Prometheus metrics on a per-app registry (no module globals, so tests and apps never collide).

Callers (duck-typed, so graph/ and retrieval/ need not import this module):
  metrics.turn(route, reason)             one finished turn, e.g. ("escalate", "below_score_floor")
  metrics.count(event, label)             retrieval events: leg_timeout / leg_error / rerank_fail_open
  metrics.observe_latency(kind, seconds)  e.g. ("turn", 1.2), ("retrieve", 0.08), ("llm", 3.4)
  metrics.api_request(route, status)      one HTTP API response
  metrics.budget_rejected(scope)          a request refused by a budget ("user" | "service")
Gauges computed at scrape time (escalations open, paused switches) are refreshed by `refresh()`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import aiosqlite
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from store.conversations import ACTIVE_STATUSES
from store.counts import open_escalations_by_status

log = logging.getLogger(__name__)

CONTENT_TYPE = CONTENT_TYPE_LATEST
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.turns = Counter("cairn_turns", "Finished turns by route and reason.", ["route", "reason"], registry=r)
        self.leg_timeouts = Counter("cairn_retrieval_leg_timeouts", "Retrieval legs that timed out.",
                                    ["leg"], registry=r)
        self.leg_errors = Counter("cairn_retrieval_leg_errors", "Retrieval legs that raised.", ["leg"], registry=r)
        self.rerank_fail_open = Counter("cairn_rerank_fail_open", "Reranker failures answered in RRF order.",
                                        ["reranker"], registry=r)
        self.events = Counter("cairn_events", "Other counted events.", ["event", "label"], registry=r)
        self.latency = Histogram("cairn_latency_seconds", "Latency by kind of work.", ["kind"],
                                 buckets=LATENCY_BUCKETS, registry=r)
        self.api_requests = Counter("cairn_api_requests", "HTTP API responses by route and status.",
                                    ["route", "status"], registry=r)
        self.budget_rejections = Counter("cairn_budget_rejections", "Requests refused by a budget.",
                                         ["scope"], registry=r)
        self.escalations_open = Gauge("cairn_escalations_open", "Escalations not yet closed, by status.",
                                      ["status"], registry=r)
        self.paused = Gauge("cairn_paused", "1 while an operator switch pauses this kind of work.",
                            ["kind"], registry=r)
        for status in ACTIVE_STATUSES:
            self.escalations_open.labels(status=status).set(0)
        # Pre-create the common series so dashboards see zeros rather than gaps.
        self.turns.labels(route="answer", reason="none")

    # -- the calls other layers make -----------------------------------------------------------

    def turn(self, route: str, reason: str | None) -> None:
        self.turns.labels(route=route or "unknown", reason=reason or "none").inc()

    def record_turn(self, route: str, reason: str | None, seconds: float) -> None:
        """The runner's per-turn hook: one count by route and reason, one latency sample."""
        self.turn(route, reason)
        self.observe_latency("turn", seconds)

    def count(self, event: str, label: str) -> None:
        if event == "leg_timeout":
            self.leg_timeouts.labels(leg=label).inc()
        elif event == "leg_error":
            self.leg_errors.labels(leg=label).inc()
        elif event == "rerank_fail_open":
            self.rerank_fail_open.labels(reranker=label).inc()
        else:
            self.events.labels(event=event, label=label).inc()

    def observe_latency(self, kind: str, seconds: float) -> None:
        self.latency.labels(kind=kind).observe(max(0.0, seconds))

    def api_request(self, route: str, status: int) -> None:
        self.api_requests.labels(route=route, status=str(status)).inc()

    def budget_rejected(self, scope: str) -> None:
        self.budget_rejections.labels(scope=scope).inc()

    # -- scrape ----------------------------------------------------------------------------------

    async def refresh(self, db: aiosqlite.Connection | None, *, paused: Iterable[tuple[str, bool]] = ()) -> None:
        """Recompute the gauges that live in the database; a failed read leaves the last value."""
        for kind, is_paused in paused:
            self.paused.labels(kind=kind).set(1 if is_paused else 0)
        if db is None:
            return
        try:
            counts = await open_escalations_by_status(db)
        except Exception as exc:
            log.warning("metrics.refresh_failed", extra={"error": type(exc).__name__})
            return
        for status, count in counts.items():
            self.escalations_open.labels(status=status).set(count)

    def render(self) -> bytes:
        return generate_latest(self.registry)
