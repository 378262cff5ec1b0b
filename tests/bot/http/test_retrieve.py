"""POST /v1/retrieve against the real app and the ingested sample handbook: every refusal class,
scope from the access file only, revocation on the next call, the topK cap, outages."""

from __future__ import annotations

import asyncio
import time

import jwt
import pytest

from store.credentials import CredentialStore, sign_user_context
from tests.bot.http.conftest import Api

HOTEL = "What is the hotel limit in Boston?"


def _docs(response) -> set[str]:
    return {p["source"]["documentId"] for p in response.json()["passages"]}


# -- the answer shape ---------------------------------------------------------------------------------


async def test_retrieve_returns_cited_passages_in_the_documented_shape(api: Api) -> None:
    r = await api.retrieve(HOTEL, top_k=4)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["requestId"] == r.headers["X-Request-Id"]
    assert body["topK"] == 4 and body["gate"] is None
    assert 1 <= len(body["passages"]) <= 4
    first = body["passages"][0]
    assert set(first) == {"chunkId", "text", "score", "source", "policy"}
    assert {"documentId", "version", "page"} <= set(first["source"])
    assert first["policy"]["revision"] == first["source"]["version"]
    assert "finance/travel" in _docs(r)
    travel = next(p for p in body["passages"] if p["source"]["documentId"] == "finance/travel")
    assert travel["policy"]["id"] == "FIN-TRV" and travel["chunkId"].startswith("larkspur:finance/travel:")


async def test_a_well_formed_request_id_from_the_caller_is_echoed(api: Api) -> None:
    r = await api.client.post("/v1/retrieve", json={"query": HOTEL},
                              headers={**api.headers(), "X-Request-Id": "trace-42"})
    assert r.json()["requestId"] == "trace-42" == r.headers["X-Request-Id"]


async def test_passages_under_the_floor_are_returned_with_the_gate_never_as_an_answer(api: Api) -> None:
    r = await api.retrieve("zxqv blorf quux")
    assert r.status_code == 200
    body = r.json()
    assert body["gate"] == "below_score_floor"
    assert body["passages"] and all(p["score"] < 0.40 for p in body["passages"])


# -- 401: the service credential ------------------------------------------------------------------------


@pytest.mark.parametrize("authorization, error", [
    (None, "missing_credential"),
    ("Basic aGVscGRlc2s6eA==", "missing_credential"),
    ("Bearer ", "missing_credential"),
    ("Bearer csk_not-a-real-credential", "invalid_credential"),
    ("Bearer something-else", "invalid_credential"),
])
async def test_a_missing_or_unknown_credential_is_401(api: Api, authorization: str | None, error: str) -> None:
    headers = {"X-User-Context": api.headers()["X-User-Context"]}
    if authorization is not None:
        headers["Authorization"] = authorization
    r = await api.client.post("/v1/retrieve", json={"query": HOTEL}, headers=headers)
    assert r.status_code == 401 and r.json()["error"] == error
    assert r.headers["WWW-Authenticate"].startswith("Bearer")


async def test_a_revoked_credential_is_refused_on_the_next_call(api: Api) -> None:
    assert (await api.retrieve()).status_code == 200
    assert api.credentials.revoke("helpdesk") == 1
    r = await api.retrieve()
    assert r.status_code == 401 and r.json()["error"] == "invalid_credential"
    assert (await api.retrieve(service="kiosk")).status_code == 200


async def test_only_the_hash_of_a_credential_is_stored(api: Api) -> None:
    stored = api.credentials.path.read_text()
    assert all(secret not in stored for secret in api.secrets.values())
    assert api.credentials.path.stat().st_mode & 0o077 == 0


# -- 403: the user context -----------------------------------------------------------------------------


async def _refusal(api: Api, headers: dict[str, str]) -> tuple[int, str]:
    r = await api.client.post("/v1/retrieve", json={"query": HOTEL}, headers=headers)
    return r.status_code, r.json().get("error", "")


async def test_a_missing_or_malformed_context_is_403(api: Api) -> None:
    bearer = {"Authorization": api.headers()["Authorization"]}
    assert await _refusal(api, bearer) == (403, "context_missing")
    assert await _refusal(api, {**bearer, "X-User-Context": "not-a-jwt"}) == (403, "context_malformed")
    unsigned = jwt.encode({"sub": "bob", "tenant": "larkspur", "aud": "cairn", "svc": "helpdesk",
                           "iat": int(time.time()), "exp": int(time.time()) + 60}, None, algorithm="none")
    assert await _refusal(api, {**bearer, "X-User-Context": unsigned}) == (403, "context_malformed")


async def test_a_tampered_context_fails_its_signature(api: Api) -> None:
    headers = api.headers("bob")
    header, _, signature = headers["X-User-Context"].split(".")
    forged = jwt.utils.base64url_encode(
        b'{"sub":"erin","tenant":"larkspur","aud":"cairn","svc":"helpdesk","iat":%d,"exp":%d}'
        % (int(time.time()), int(time.time()) + 60)).decode()
    headers["X-User-Context"] = f"{header}.{forged}.{signature}"
    assert await _refusal(api, headers) == (403, "context_bad_signature")


async def test_an_expired_or_future_or_long_lived_context_is_refused(api: Api, now: float) -> None:
    assert await _refusal(api, api.headers(issued=now - 1000, ttl=300)) == (403, "context_expired")
    assert await _refusal(api, api.headers(issued=now + 600, ttl=300)) == (403, "context_not_yet_valid")
    assert await _refusal(api, api.headers(ttl=3600)) == (403, "context_ttl_too_long")
    # Within the clock leeway it still passes.
    assert (await api.client.post("/v1/retrieve", json={"query": HOTEL},
                                  headers=api.headers(issued=now - 310, ttl=300))).status_code == 200


async def test_a_context_signed_for_another_audience_is_refused(api: Api) -> None:
    assert await _refusal(api, api.headers(audience="someone-else")) == (403, "context_wrong_audience")


async def test_a_service_may_only_issue_contexts_for_its_own_audiences(api: Api) -> None:
    store = CredentialStore(api.credentials.path, default_audience="cairn")
    _, partner = store.add("partner", audiences=["partner-portal"])
    context = sign_user_context(credential=partner, service="partner", user="bob", tenant="larkspur",
                                audience="cairn")
    headers = {"Authorization": f"Bearer {partner}", "X-User-Context": context}
    assert await _refusal(api, headers) == (403, "context_wrong_audience")


async def test_a_context_bound_to_another_service_is_refused(api: Api) -> None:
    # kiosk's own context, replayed by helpdesk.
    stolen = api.headers(service="helpdesk", signing_service="kiosk")
    assert await _refusal(api, stolen) == (403, "context_wrong_service")
    # A context that claims helpdesk but was signed with kiosk's key.
    claimed = api.headers(service="helpdesk", signing_service="kiosk", claimed_service="helpdesk")
    assert await _refusal(api, claimed) == (403, "context_bad_signature")


async def test_the_user_and_tenant_must_match_the_access_file(api: Api) -> None:
    assert await _refusal(api, api.headers("mallory")) == (403, "context_unknown_user")
    assert await _refusal(api, api.headers("bob", tenant="harbor")) == (403, "context_tenant_mismatch")
    assert await _refusal(api, api.headers("hank", tenant="larkspur")) == (403, "context_tenant_mismatch")
    # Slack ids resolve too.
    assert (await api.retrieve(user="U0BOB")).status_code == 200


# -- 422: the body ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("body", [
    {}, {"query": ""}, {"query": "   \n"}, {"query": 42}, {"query": HOTEL, "topK": 0},
    {"query": HOTEL, "topK": -3}, {"query": HOTEL, "topK": "5"}, {"query": HOTEL, "topK": 2.5},
    {"query": HOTEL, "topK": True}, {"query": HOTEL, "scope": {"groups": ["executives"]}},
    {"query": "x" * 2001}, [HOTEL], None,
])
async def test_a_malformed_body_is_422(api: Api, body: object) -> None:
    r = await api.client.post("/v1/retrieve", json=body, headers=api.headers())
    assert r.status_code == 422 and r.json()["error"] == "invalid_request", r.text


async def test_invalid_json_is_422_and_the_input_is_not_echoed(api: Api) -> None:
    r = await api.client.post("/v1/retrieve", content=b'{"query": "secret question', headers=api.headers())
    assert r.status_code == 422
    assert "secret question" not in r.text


async def test_refusals_come_in_a_fixed_order_credential_context_body(api: Api) -> None:
    bad_body = b"{not json"
    r = await api.client.post("/v1/retrieve", content=bad_body)
    assert r.status_code == 401
    r = await api.client.post("/v1/retrieve", content=bad_body,
                              headers={"Authorization": api.headers()["Authorization"]})
    assert r.status_code == 403


# -- topK ------------------------------------------------------------------------------------------------


async def test_top_k_is_capped_and_the_response_says_so(api: Api) -> None:
    r = await api.retrieve(HOTEL, top_k=500)
    assert r.status_code == 200
    assert r.json()["topK"] == 20 and len(r.json()["passages"]) <= 20
    one = await api.retrieve(HOTEL, top_k=1)
    assert len(one.json()["passages"]) == 1
    default = await api.retrieve(HOTEL)
    assert default.json()["topK"] == 8 and len(default.json()["passages"]) <= 8


# -- scope: from the verified context through the access file, never widened ---------------------------


async def test_scope_comes_from_the_access_file(api: Api) -> None:
    query = "car allowance for executives"
    assert "finance/executive-allowances" not in _docs(await api.retrieve(query, user="bob"))
    assert "finance/executive-allowances" in _docs(await api.retrieve(query, user="erin"))
    assert _docs(await api.retrieve("How do I return an item?", user="carla")) == {"retail/customer-faq"}


async def test_a_tenant_without_documents_gets_an_empty_evidence_set(api: Api) -> None:
    r = await api.retrieve(HOTEL, user="hank", tenant="harbor")
    assert r.status_code == 200
    assert r.json()["passages"] == [] and r.json()["gate"] is None


async def test_revoked_access_disappears_on_the_next_call(api: Api) -> None:
    assert "finance/travel" in _docs(await api.retrieve(HOTEL, user="bob"))
    await api.services.ingestor.set_groups(tenant_id="larkspur", doc_id="finance/travel", groups=["finance"])
    assert "finance/travel" not in _docs(await api.retrieve(HOTEL, user="bob"))
    assert "finance/travel" in _docs(await api.retrieve(HOTEL, user="alice"))


# -- outages: 503 with a reason, never a made-up answer ----------------------------------------------------


async def test_every_leg_failing_is_503_and_counted(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(**_: object) -> list:
        raise ConnectionError("index down")

    monkeypatch.setattr(api.services.index, "search", broken)
    r = await api.retrieve()
    assert r.status_code == 503 and r.json()["error"] == "retrieval_unavailable"
    assert "passages" not in r.json() and int(r.headers["Retry-After"]) > 0
    metrics = (await api.client.get("/metrics")).text
    assert 'cairn_retrieval_leg_errors_total{leg="dense"} 1.0' in metrics
    assert 'cairn_api_requests_total{route="/v1/retrieve",status="503"} 1.0' in metrics


async def test_a_search_exception_or_timeout_is_503(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    async def explode(*_: object, **__: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(api.services.searcher, "search", explode)
    r = await api.retrieve()
    assert r.status_code == 503 and r.json()["error"] == "retrieval_unavailable"

    async def stall(*_: object, **__: object) -> None:
        await asyncio.sleep(5)

    monkeypatch.setattr(api.services.searcher, "search", stall)
    monkeypatch.setattr(api.services.settings, "api_timeout_s", 0.05)
    r = await api.retrieve()
    assert r.status_code == 503 and r.json()["error"] == "retrieval_unavailable"
