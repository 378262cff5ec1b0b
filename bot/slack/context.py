"""What Slack listeners are given: the core services and the per-app Slack helpers, and the tracker
that holds lazy listeners' tasks so shutdown and tests can wait for the work in flight."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from bot.services import Services
from bot.settings import Settings
from bot.slack.audience import ChannelAudience
from bot.slack.escalation_posting import EscalationThreads
from bot.slack.identity import IdentityResolver
from escalations.desk import EscalationDesk

log = logging.getLogger(__name__)

# Turns running at once. Retrieval and answering run in worker threads that compete with the event
# loop for the GIL; bounding them keeps acks (and placeholders) fast under a burst of questions.
TURN_CONCURRENCY = 4


class WorkTracker:
    """Holds the lazy listeners' tasks (asyncio keeps only weak references) and lets shutdown and
    tests wait until every turn in flight has finished."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    @asynccontextmanager
    async def track(self) -> AsyncIterator[None]:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            self._idle.clear()
        try:
            yield
        finally:
            if task is not None:
                self._tasks.discard(task)
                if not self._tasks:
                    self._idle.set()

    @property
    def busy(self) -> int:
        return len(self._tasks)

    async def wait_idle(self) -> None:
        """Returns once no turn is in flight (wrap in `asyncio.timeout`)."""
        await self._idle.wait()

    @asynccontextmanager
    async def run(self, what: str, on_error: Callable[[], Awaitable[Any]] | None = None) -> AsyncIterator[None]:
        """The body of a lazy listener: tracked, and a failure is logged and, where the listener can
        say so (`on_error`), shown to the person rather than swallowed."""
        async with self.track():
            try:
                yield
            except Exception:
                log.exception("%s failed", what)
                if on_error is not None:
                    try:
                        await on_error()
                    except Exception:
                        log.exception("%s: could not report the failure", what)


@dataclass
class SlackServices:
    """What Slack listeners are given: the core services and the per-app Slack helpers."""

    settings: Settings
    core: Services
    identity: IdentityResolver
    threads: EscalationThreads
    desk: EscalationDesk
    audience: ChannelAudience
    work: WorkTracker = field(default_factory=WorkTracker)
    turn_slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(TURN_CONCURRENCY))
