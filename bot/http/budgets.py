"""Request budgets: token buckets per user and per calling service, in process memory.

Each key has a bucket of `rpm` tokens that refills continuously at `rpm` per minute, so a client
may burst up to one minute's allowance and then proceeds at the steady rate. A request takes one
token from its service's bucket and one from its user's bucket, both or neither. Budgets are per
process (a restart forgets them; several replicas each allow the full rate). `rpm <= 0` disables
that budget. Configured with CAIRN_BUDGET_USER_RPM (default 30) and CAIRN_BUDGET_SERVICE_RPM
(default 600).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

MAX_KEYS = 10_000


@dataclass(frozen=True)
class Decision:
    allowed: bool
    scope: str | None = None  # which budget refused: "user" | "service"
    retry_after_s: int = 0


class TokenBuckets:
    def __init__(self, rpm: float, *, burst: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.rpm = rpm
        self.capacity = burst if burst is not None else rpm
        self._rate = rpm / 60.0
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key → (tokens, at)

    @property
    def enabled(self) -> bool:
        return self.rpm > 0

    def available(self, key: str) -> float:
        """Tokens the key has now (refilled); does not take any."""
        if not self.enabled:
            return math.inf
        tokens, at = self._buckets.get(key, (self.capacity, self._clock()))
        return min(self.capacity, tokens + (self._clock() - at) * self._rate)

    def wait_s(self, key: str) -> float:
        missing = 1.0 - self.available(key)
        return 0.0 if missing <= 0 else missing / self._rate

    def take(self, key: str) -> None:
        if not self.enabled:
            return
        self._buckets[key] = (self.available(key) - 1.0, self._clock())
        if len(self._buckets) > MAX_KEYS:
            self._prune()

    def _prune(self) -> None:
        # A full bucket carries no information: forgetting it changes nothing.
        for key in [k for k in self._buckets if self.available(k) >= self.capacity]:
            del self._buckets[key]


class Budgets:
    def __init__(self, *, user_rpm: float, service_rpm: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.users = TokenBuckets(user_rpm, clock=clock)
        self.services = TokenBuckets(service_rpm, clock=clock)
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: object) -> Budgets:
        return cls(user_rpm=float(settings.budget_user_rpm),  # type: ignore[attr-defined]
                   service_rpm=float(settings.budget_service_rpm))  # type: ignore[attr-defined]

    def acquire(self, *, user: str | None = None, service: str | None = None) -> Decision:
        """Take one request from each named budget, or from none and say which refused and for how long."""
        with self._lock:
            checks = [("service", self.services, service), ("user", self.users, user)]
            for scope, buckets, key in checks:
                if key is not None and buckets.available(key) < 1.0:
                    return Decision(False, scope, max(1, math.ceil(buckets.wait_s(key))))
            for _, buckets, key in checks:
                if key is not None:
                    buckets.take(key)
        return Decision(True)
