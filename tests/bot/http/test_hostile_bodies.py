"""`/v1/retrieve` takes odd text and refuses what cannot be read, never with a 5xx: a lone surrogate or
an invalid UTF-8 byte in the query is replaced and searched; a body nested thousands deep or a number
of 400 digits is a 422; a signed user context whose exp, iat or nbf is 10^400, or whose claims nest
deeper than any context needs, is a 403."""

from __future__ import annotations

import time

import jwt
import pytest

from store.credentials import CONTEXT_ALG, context_signing_key
from tests.bombs import nested_json
from tests.bot.http.conftest import AUDIENCE, Api


async def post_raw(api: Api, body: bytes, headers: dict[str, str] | None = None) -> int:
    response = await api.client.post("/v1/retrieve", content=body,
                                     headers={**(headers or api.headers()), "Content-Type": "application/json"})
    return response.status_code


async def test_odd_text_is_searched_and_unreadable_bodies_are_422(api: Api) -> None:
    assert await post_raw(api, b'{"query": "hotel limit in Boston \\ud800"}') == 200
    assert await post_raw(api, b'{"query": "hotel limit in Boston \xff\xfe"}') == 200
    assert await post_raw(api, nested_json(100_000).encode()) == 422
    assert await post_raw(api, b'{"query": "hotel", "topK": 1' + b"0" * 400 + b"}") == 422
    assert await post_raw(api, b'{"query": "hotel", "topK": 1e400}') == 422
    response = await api.client.post("/v1/retrieve", content=nested_json(100_000).encode(),
                                      headers={**api.headers(), "Content-Type": "application/json"})
    assert response.json()["error"] == "invalid_request" and "nested" in str(response.json()["detail"])


DEEP: list[object] = []
for _ in range(900):
    DEEP = [DEEP]


def hostile_context(api: Api, **claims: object) -> str:
    now = int(time.time())
    base: dict[str, object] = {"sub": "bob", "tenant": "larkspur", "aud": AUDIENCE, "svc": "helpdesk",
                               "iat": now, "exp": now + 300}
    base.update(claims)
    return jwt.encode(base, context_signing_key(api.secrets["helpdesk"]), algorithm=CONTEXT_ALG)


@pytest.mark.parametrize("claims", [{"exp": 10**400}, {"iat": 10**400}, {"nbf": 10**400}, {"exp": -(10**400)},
                                    {"extra": DEEP},
                                    {"sub": "bob\ud800"}],
                         ids=["exp", "iat", "nbf", "negative", "nested", "surrogate"])
async def test_a_context_with_claims_out_of_range_is_403(api: Api, claims: dict[str, object]) -> None:
    token = hostile_context(api, **claims)
    headers = {"Authorization": f"Bearer {api.secrets['helpdesk']}", "X-User-Context": token}
    response = await api.client.post("/v1/retrieve", json={"query": "hotel limit"}, headers=headers)
    assert response.status_code == 403, response.text
