"""Fixtures for the HTTP API: the real FastAPI app over the ingested sample handbook, two
registered services, and a helper that signs user contexts."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import httpx
import pytest

from bot.http.app import create_http_app
from bot.http.budgets import Budgets
from bot.services import Services
from store.credentials import CredentialStore, sign_user_context

AUDIENCE = "cairn"


@dataclass
class Api:
    client: httpx.AsyncClient
    services: Services
    credentials: CredentialStore
    budgets: Budgets
    secrets: dict[str, str]

    def headers(self, user: str = "bob", tenant: str = "larkspur", *, service: str = "helpdesk",
                audience: str = AUDIENCE, ttl: int = 300, issued: float | None = None,
                signing_service: str | None = None, claimed_service: str | None = None) -> dict[str, str]:
        """Bearer of `service`, plus a context signed with `signing_service`'s credential (default: the same)."""
        context = sign_user_context(credential=self.secrets[signing_service or service],
                                    service=claimed_service or signing_service or service, user=user,
                                    tenant=tenant, audience=audience, ttl_s=ttl, now=issued)
        return {"Authorization": f"Bearer {self.secrets[service]}", "X-User-Context": context}

    async def retrieve(self, query: str = "What is the hotel limit in Boston?", *, top_k: int | None = None,
                       **kw: object) -> httpx.Response:
        body: dict[str, object] = {"query": query}
        if top_k is not None:
            body["topK"] = top_k
        return await self.client.post("/v1/retrieve", json=body, headers=self.headers(**kw))  # type: ignore[arg-type]


def make_api(services: Services, *, budgets: Budgets | None = None, **app_kw: object) -> Callable[[], Api]:
    credentials = CredentialStore(services.settings.services_path, default_audience=AUDIENCE)
    secrets = {name: credentials.add(name)[1] for name in ("helpdesk", "kiosk")}
    budgets = budgets or Budgets(user_rpm=10_000, service_rpm=100_000)
    app = create_http_app(services, credentials=credentials, budgets=budgets, warm_up=False, **app_kw)

    def build() -> Api:
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://cairn.test")
        return Api(client=client, services=services, credentials=credentials, budgets=budgets, secrets=secrets)

    return build


@pytest.fixture
async def api(handbook: Services) -> AsyncIterator[Api]:
    built = make_api(handbook)()
    async with built.client:
        yield built


@pytest.fixture
def now() -> float:
    return time.time()
