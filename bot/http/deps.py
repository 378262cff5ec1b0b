"""What the HTTP routers share: the app's state, built once by `create_http_app` and handed to each
route as a FastAPI dependency (no module globals, so several apps can live in one process)."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

from fastapi import Request

from bot.http.budgets import Budgets
from bot.metrics import Metrics
from bot.services import Services
from store.controls import Controls
from store.credentials import CredentialStore


@dataclass
class HttpState:
    services: Services
    metrics: Metrics
    controls: Controls
    credentials: CredentialStore
    budgets: Budgets
    search_slots: asyncio.Semaphore
    load_errors: list[str] = field(default_factory=list)
    slack_problems: list[str] = field(default_factory=list)  # from the preflight `cairn serve` runs at start

    def model_status(self) -> str:
        if self.load_errors:
            return self.load_errors[-1]
        return "ok" if self.services.embedder.loaded else "loading"


def http_state(request: Request) -> HttpState:
    state: HttpState = request.app.state.cairn
    return state


def request_id(request: Request) -> str:
    return getattr(request.state, "request_id", None) or uuid.uuid4().hex
