"""Who may call `/v1/retrieve`, and on whose behalf.

Two proofs per request:

1. The calling service: `Authorization: Bearer <credential>`. `cairn credentials add NAME` prints a
   new credential once (`csk_` + 256 random bits); only its SHA-256 is kept, in
   `$CAIRN_HOME/services.json` (or CAIRN_SERVICES_FILE), written with mode 0600:

       {"version": 1, "services": {"helpdesk": {
           "audiences": ["cairn"],
           "credentials": [{"id": "k-3f9a0c1d", "sha256": "…", "created_at": "…"}]}}}

   A slow password hash would buy nothing for a 256-bit random secret, and SHA-256 keeps the check
   off the latency budget. The file is re-read when it changes: `add` / `revoke` apply to the next
   request without a restart. A service may hold several credentials (rotation).

2. The user it acts for: `X-User-Context: <JWT, HS256>` with claims
   `sub` (user: access-file name or Slack id), `tenant`, `aud`, `svc` (the calling service),
   `iat`, `exp` (at most CAIRN_CONTEXT_MAX_TTL seconds after `iat`, default 900).
   The signing key is derived from the service's own credential,
   `HMAC-SHA256(key=credential, msg="cairn/user-context/v1")`, so Cairn stores nothing from which a
   context could be forged, and a context verifies only next to the credential of the service
   that signed it: binding to the caller is cryptographic, and `svc` makes a mismatch explicit.
   `aud` must be this server's audience (CAIRN_API_AUDIENCE, default "cairn") and one the service
   is allowed (its `audiences`).

Errors: a missing or unknown credential is 401; every problem with the user context (missing,
malformed, bad signature, expired, not yet valid, too long-lived, other service, other audience,
unknown user, tenant the user does not belong to) is 403. 401 = "who are you, service?",
403 = "you may not act for this user here".
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt

from store import untrusted
from store.access import AccessPolicy
from store.db import iso
from store.records import Scope
from store.untrusted import clean_text, number_in_range

CREDENTIAL_PREFIX = "csk_"
CONTEXT_KEY_LABEL = b"cairn/user-context/v1"
CONTEXT_ALG = "HS256"
CLOCK_LEEWAY_S = 30
_SERVICE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
REQUIRED_CLAIMS = ("sub", "tenant", "aud", "svc", "iat", "exp")


class CredentialFileError(ValueError):
    pass


class ContextError(Exception):
    """The user context is refused (HTTP 403); `code` is the machine-readable reason."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ServicePrincipal:
    name: str
    audiences: tuple[str, ...]
    key_id: str


@dataclass(frozen=True)
class UserContext:
    user: str
    tenant: str
    audience: str
    service: str
    expires_at: int


def hash_credential(credential: str) -> str:
    return hashlib.sha256(credential.encode("utf-8")).hexdigest()


def context_signing_key(credential: str) -> bytes:
    return hmac.new(credential.encode("utf-8"), CONTEXT_KEY_LABEL, hashlib.sha256).digest()


def validate_service_name(name: str) -> str:
    if not _SERVICE_NAME.match(name):
        raise CredentialFileError(f"service name {name!r} is not valid: lowercase letters, digits, '.', '_', '-'")
    return name


# -- the credentials file ----------------------------------------------------------------------------


class CredentialStore:
    """`services.json`: service name → allowed audiences and credential hashes."""

    def __init__(self, path: Path, *, default_audience: str = "cairn") -> None:
        self.path = path
        self.default_audience = default_audience
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._by_hash: dict[str, ServicePrincipal] = {}

    # reading

    def authenticate(self, credential: str | None) -> ServicePrincipal | None:
        if not credential or not credential.startswith(CREDENTIAL_PREFIX) or len(credential) > 256:
            return None
        self._refresh()
        return self._by_hash.get(hash_credential(credential))

    def services(self) -> dict[str, dict[str, Any]]:
        return self._read().get("services", {})

    def _refresh(self) -> None:
        try:
            st = self.path.stat()
            stamp: tuple[int, int, int] | None = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp == self._stamp and (stamp is not None or not self._by_hash):
            return
        with self._lock:
            by_hash: dict[str, ServicePrincipal] = {}
            for name, spec in self._read().get("services", {}).items():
                audiences = tuple(map(str, spec.get("audiences") or [self.default_audience]))
                for cred in spec.get("credentials") or []:
                    by_hash[str(cred["sha256"])] = ServicePrincipal(name=name, audiences=audiences,
                                                                    key_id=str(cred.get("id", "")))
            self._by_hash, self._stamp = by_hash, stamp

    def _read(self) -> dict[str, Any]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"version": 1, "services": {}}
        except (OSError, ValueError) as exc:
            raise CredentialFileError(f"cannot read {self.path}: {exc}") from exc
        if not isinstance(raw, dict) or not isinstance(raw.get("services", {}), dict):
            raise CredentialFileError(f"{self.path}: expected {{\"services\": {{…}}}}")
        return raw

    # writing (the CLI)

    def add(self, name: str, *, audiences: Iterable[str] = ()) -> tuple[str, str]:
        """A new credential for `name` (created if new). Returns (key id, credential) — shown once."""
        validate_service_name(name)
        credential = CREDENTIAL_PREFIX + secrets.token_urlsafe(32)
        key_id = "k-" + secrets.token_hex(4)
        data = self._read()
        spec = data.setdefault("services", {}).setdefault(name, {"audiences": [], "credentials": []})
        wanted = list(dict.fromkeys([*spec.get("audiences", []), *audiences])) or [self.default_audience]
        spec["audiences"] = wanted
        spec.setdefault("credentials", []).append(
            {"id": key_id, "sha256": hash_credential(credential), "created_at": iso()})
        self._write(data)
        return key_id, credential

    def revoke(self, name: str, *, key_id: str | None = None) -> int:
        """Remove one credential (by id) or all of a service's; returns how many were removed."""
        data = self._read()
        spec = data.get("services", {}).get(name)
        if spec is None:
            return 0
        creds = spec.get("credentials") or []
        kept = [c for c in creds if key_id is not None and c.get("id") != key_id]
        removed = len(creds) - len(kept)
        if kept:
            spec["credentials"] = kept
        else:
            del data["services"][name]
        self._write(data)
        return removed

    def _write(self, data: dict[str, Any]) -> None:
        data["version"] = 1
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".services.", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=2, sort_keys=True)
                fh.write("\n")
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._stamp = None


# -- the user context ----------------------------------------------------------------------------------


def sign_user_context(*, credential: str, service: str, user: str, tenant: str, audience: str,
                      ttl_s: int = 300, now: float | None = None) -> str:
    issued = int(now if now is not None else time.time())
    claims = {"sub": user, "tenant": tenant, "aud": audience, "svc": service, "iat": issued,
              "exp": issued + int(ttl_s), "jti": secrets.token_hex(8)}
    return jwt.encode(claims, context_signing_key(credential), algorithm=CONTEXT_ALG)


def verify_user_context(token: str | None, *, credential: str, principal: ServicePrincipal, audience: str,
                        max_ttl_s: int, now: float | None = None) -> UserContext:
    """Signature, expiry, audience and binding to the calling service; raises ContextError."""
    if not token:
        raise ContextError("context_missing", "X-User-Context header is required")
    if len(token) > 4096:
        raise ContextError("context_malformed", "user context is too large")
    problem = _claims_problem(token)
    if problem:
        raise ContextError("context_malformed", f"user context claims are not valid: {problem}")
    try:
        header = jwt.get_unverified_header(token)
        unverified = jwt.decode(token, options={"verify_signature": False})
    except (jwt.PyJWTError, RecursionError):
        raise ContextError("context_malformed", "user context is not a JWT") from None
    if header.get("alg") != CONTEXT_ALG or not isinstance(unverified, dict):
        raise ContextError("context_malformed", f"user context must be signed with {CONTEXT_ALG}")
    if unverified.get("svc") != principal.name:
        raise ContextError("context_wrong_service", "user context was issued for another service")
    moment = time.time() if now is None else now
    try:
        claims = jwt.decode(
            token, context_signing_key(credential), algorithms=[CONTEXT_ALG], audience=audience,
            leeway=CLOCK_LEEWAY_S, options={"require": list(REQUIRED_CLAIMS), "verify_exp": False,
                                            "verify_iat": False, "verify_nbf": False})
    except jwt.InvalidSignatureError:
        raise ContextError("context_bad_signature", "user context signature does not verify") from None
    except jwt.InvalidAudienceError:
        raise ContextError("context_wrong_audience", "user context was issued for another audience") from None
    except jwt.MissingRequiredClaimError as exc:
        raise ContextError("context_malformed", f"user context lacks the {exc.claim!r} claim") from None
    except jwt.PyJWTError:
        raise ContextError("context_malformed", "user context claims are not valid") from None
    # Time claims checked here (not by PyJWT) so that each failure has its own code.
    iat, exp, nbf = claims["iat"], claims["exp"], claims.get("nbf", claims["iat"])
    # Finite numbers in range only: every comparison with NaN is false, so a NaN date would pass every
    # check, and 10^400 cannot become a float or a date.
    if not all(number_in_range(v) for v in (iat, exp, nbf)):
        raise ContextError("context_malformed", "iat, exp and nbf must be numeric dates")
    if exp <= moment - CLOCK_LEEWAY_S:
        raise ContextError("context_expired", "user context has expired")
    if iat > moment + CLOCK_LEEWAY_S:
        raise ContextError("context_not_yet_valid", "user context is issued in the future")
    if nbf > moment + CLOCK_LEEWAY_S:
        raise ContextError("context_not_yet_valid", "user context is not valid yet (nbf)")
    if exp - iat > max_ttl_s:
        raise ContextError("context_ttl_too_long", f"user context may live at most {max_ttl_s}s")
    if audience not in principal.audiences:
        raise ContextError("context_wrong_audience", "this service may not issue contexts for that audience")
    user, tenant = claims["sub"], claims["tenant"]
    if not (isinstance(user, str) and user and isinstance(tenant, str) and tenant):
        raise ContextError("context_malformed", "sub and tenant must be non-empty strings")
    return UserContext(user=clean_text(user), tenant=clean_text(tenant), audience=clean_text(str(claims["aud"])),
                       service=principal.name, expires_at=int(exp))


def _claims_problem(token: str) -> str | None:
    """Why the token's claims cannot be read safely (nesting, numbers out of range), before PyJWT
    parses them; None when they can, or when the token is no JWT at all (PyJWT says so next)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        untrusted.loads(payload)
    except untrusted.UntrustedInput as exc:
        return str(exc)
    except (ValueError, binascii.Error):
        return None
    return None


def scope_for_context(access: AccessPolicy, context: UserContext) -> Scope:
    """The scope comes from the access file alone; the context only names the user and tenant."""
    entry = access.find_user(context.user)
    if entry is None:
        raise ContextError("context_unknown_user", "the user is not in the access file")
    if entry.tenant != context.tenant:
        raise ContextError("context_tenant_mismatch", "the user does not belong to that tenant")
    return access.resolve_cli(entry.name)
