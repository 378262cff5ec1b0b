"""User contexts whose dates cannot be trusted are refused as such (403 at /v1/retrieve), never let
through to fail later: a date not valid yet, or a date that is not a finite number."""

from __future__ import annotations

import time

import jwt
import pytest

from store.credentials import (
    CONTEXT_ALG,
    ContextError,
    ServicePrincipal,
    context_signing_key,
    sign_user_context,
    verify_user_context,
)

CREDENTIAL = "csk_test-credential"
PRINCIPAL = ServicePrincipal(name="helpdesk", audiences=("cairn",), key_id="k1")


def signed(**claims: object) -> str:
    now = int(time.time())
    base: dict[str, object] = {"sub": "bob", "tenant": "larkspur", "aud": "cairn", "svc": "helpdesk",
                               "iat": now, "exp": now + 300}
    base.update(claims)
    return jwt.encode(base, context_signing_key(CREDENTIAL), algorithm=CONTEXT_ALG)


def refusal(token: str) -> str:
    with pytest.raises(ContextError) as caught:
        verify_user_context(token, credential=CREDENTIAL, principal=PRINCIPAL, audience="cairn", max_ttl_s=900)
    return caught.value.code


def test_a_context_valid_now_passes() -> None:
    token = sign_user_context(credential=CREDENTIAL, service="helpdesk", user="bob", tenant="larkspur",
                              audience="cairn")
    context = verify_user_context(token, credential=CREDENTIAL, principal=PRINCIPAL, audience="cairn",
                                  max_ttl_s=900)
    assert (context.user, context.tenant) == ("bob", "larkspur")
    assert verify_user_context(signed(nbf=int(time.time()) - 5), credential=CREDENTIAL, principal=PRINCIPAL,
                               audience="cairn", max_ttl_s=900).user == "bob"


def test_a_context_not_valid_for_another_hour_is_refused() -> None:
    assert refusal(signed(nbf=int(time.time()) + 3600)) == "context_not_yet_valid"


@pytest.mark.parametrize("claim", ["exp", "iat", "nbf"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_date_that_is_not_a_finite_number_is_refused_as_malformed(claim: str, value: float) -> None:
    token = signed(**{claim: value})
    payload = jwt.utils.base64url_decode(token.split(".")[1]).decode()
    assert f'"{claim}":{"NaN" if value != value else "Infinity" if value > 0 else "-Infinity"}' in payload.replace(" ", "")
    assert refusal(token) == "context_malformed"
