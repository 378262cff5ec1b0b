"""Operator commands: the kill switch, service credentials, and signing a user context for testing.

These touch only the database and `services.json`, never the index, so they work while
`cairn serve` runs; the server sees a switch change within CAIRN_CONTROLS_CACHE seconds and a
credential change on the next request.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bot.cli.common import CommandError, emit_json
from bot.cli.parsers import add_command
from bot.services import open_store
from bot.settings import Settings
from store.controls import KINDS, Controls
from store.credentials import CredentialFileError, CredentialStore, hash_credential, sign_user_context


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "pause", pause, help="pause the LLM or the tools (retrieval) without stopping the app",
                    description="llm: answers fall back to the extractive answerer. tools: no retrieval; "
                                "questions are escalated to a person and /v1/retrieve answers 503.")
    p.add_argument("kind", choices=KINDS)
    p.add_argument("--reason", help="shown to operators in `cairn controls`")
    p = add_command(sub, "unpause", unpause, help="undo `cairn pause` (a pause set by CAIRN_PAUSE stays)")
    p.add_argument("kind", choices=KINDS)
    add_command(sub, "controls", show_controls, help="show the kill switches and where each comes from")

    creds = sub.add_parser("credentials", help="service credentials for /v1/retrieve")
    csub = creds.add_subparsers(dest="credentials_command", required=True, metavar="ACTION")
    p = add_command(csub, "add", credentials_add,
                    help="create a credential for a service; printed once, only its hash is kept")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--audience", action="append", default=[], metavar="A",
                   help="an audience the service may issue user contexts for (repeatable; default: CAIRN_API_AUDIENCE)")
    add_command(csub, "list", credentials_list, help="services, audiences and credential ids (never secrets)")
    p = add_command(csub, "revoke", credentials_revoke, help="remove a service's credentials (all, or one by --id)")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--id", dest="key_id", metavar="KEY_ID")

    ctx = sub.add_parser("context", help="user contexts for /v1/retrieve")
    xsub = ctx.add_subparsers(dest="context_command", required=True, metavar="ACTION")
    p = add_command(xsub, "sign", context_sign, help="sign a short-lived user context (for testing a client)",
                    description="Signs with the key derived from the service's credential, read from "
                                "CAIRN_SERVICE_CREDENTIAL, or from stdin with --credential-stdin, or prompted.")
    p.add_argument("--service", required=True)
    p.add_argument("--user", required=True, help="access-file user name or Slack id")
    p.add_argument("--tenant", required=True)
    p.add_argument("--audience", help="default: CAIRN_API_AUDIENCE")
    p.add_argument("--ttl", type=int, default=300, help="seconds (default 300, at most CAIRN_CONTEXT_MAX_TTL)")
    p.add_argument("--credential-stdin", action="store_true", help="read the service credential from stdin")


@asynccontextmanager
async def _controls(settings: Settings) -> AsyncIterator[Controls]:
    try:
        async with open_store(settings, controls_cache_s=0) as store:  # a CLI reads the switches fresh
            yield store.controls
    except ValueError as exc:  # an unknown CAIRN_PAUSE kind, or one given on the command line
        raise CommandError(str(exc)) from exc


def _store(settings: Settings) -> CredentialStore:
    return CredentialStore(settings.services_path, default_audience=settings.api_audience)


# -- kill switch ---------------------------------------------------------------------------------------


async def pause(args: argparse.Namespace, settings: Settings) -> int:
    async with _controls(settings) as controls:
        await controls.set_paused(args.kind, True, by=getpass.getuser(), reason=args.reason)
        states = await controls.state()
    return _print_states(states, args.json, note=f"{args.kind} paused")


async def unpause(args: argparse.Namespace, settings: Settings) -> int:
    async with _controls(settings) as controls:
        await controls.set_paused(args.kind, False, by=getpass.getuser())
        states = await controls.state()
    still = next(s for s in states if s.kind == args.kind)
    note = (f"{args.kind} is still paused by CAIRN_PAUSE in this environment (the server's own setting decides "
            "for the server)") if still.paused else f"{args.kind} resumed"
    return _print_states(states, args.json, note=note)


async def show_controls(args: argparse.Namespace, settings: Settings) -> int:
    async with _controls(settings) as controls:
        states = await controls.state()
    return _print_states(states, args.json)


def _print_states(states: list, as_json: bool, *, note: str | None = None) -> int:
    if as_json:
        emit_json({"controls": [s.as_json() for s in states], "note": note})
        return 0
    if note:
        print(note)
    for s in states:
        detail = f" ({s.source}{', by ' + s.by if s.by else ''}{': ' + s.reason if s.reason else ''})" if s.paused else ""
        print(f"  {s.kind:6} {'PAUSED' if s.paused else 'running'}{detail}")
    return 0


# -- credentials ---------------------------------------------------------------------------------------


async def credentials_add(args: argparse.Namespace, settings: Settings) -> int:
    try:
        key_id, credential = _store(settings).add(args.name, audiences=args.audience)
        audiences = _store(settings).services()[args.name]["audiences"]
    except CredentialFileError as exc:
        raise CommandError(str(exc)) from exc
    if args.json:
        emit_json({"service": args.name, "key_id": key_id, "credential": credential, "audiences": audiences})
        return 0
    print(f"service {args.name}: new credential {key_id} (audiences: {', '.join(audiences)})")
    print("Store it now; it is not shown again and only its hash is kept:")
    print(credential)
    return 0


async def credentials_list(args: argparse.Namespace, settings: Settings) -> int:
    try:
        services = _store(settings).services()
    except CredentialFileError as exc:
        raise CommandError(str(exc)) from exc
    rows = [{"service": name, "audiences": spec.get("audiences", []),
             "credentials": [{"id": c.get("id"), "created_at": c.get("created_at")}
                             for c in spec.get("credentials", [])]}
            for name, spec in sorted(services.items())]
    if args.json:
        emit_json({"services": rows})
        return 0
    if not rows:
        print(f"no service credentials in {settings.services_path}")
    for row in rows:
        ids = ", ".join(c["id"] or "?" for c in row["credentials"])
        print(f"{row['service']:20} audiences: {', '.join(row['audiences'])}  credentials: {ids}")
    return 0


async def credentials_revoke(args: argparse.Namespace, settings: Settings) -> int:
    try:
        removed = _store(settings).revoke(args.name, key_id=args.key_id)
    except CredentialFileError as exc:
        raise CommandError(str(exc)) from exc
    if not removed:
        raise CommandError(f"no credential {args.key_id or ''} for service {args.name!r}".replace("  ", " "))
    if args.json:
        emit_json({"service": args.name, "revoked": removed})
    else:
        print(f"revoked {removed} credential(s) of {args.name}")
    return 0


# -- user context --------------------------------------------------------------------------------------


async def context_sign(args: argparse.Namespace, settings: Settings) -> int:
    if not 1 <= args.ttl <= settings.context_max_ttl_s:
        raise CommandError(f"--ttl must be between 1 and {settings.context_max_ttl_s} seconds")
    if args.credential_stdin:
        credential = sys.stdin.readline().strip()
    elif settings.service_credential is not None:
        credential = settings.service_credential.get_secret_value()
    elif sys.stdin.isatty():
        credential = getpass.getpass(f"credential of service {args.service}: ").strip()
    else:
        raise CommandError("no credential: set CAIRN_SERVICE_CREDENTIAL or pass --credential-stdin")
    if not credential:
        raise CommandError("the credential is empty")
    # When this machine holds the credentials file, catch a wrong pairing here rather than as a 403.
    try:
        known = _store(settings).services()
    except CredentialFileError:
        known = {}
    if args.service in known:
        hashes = {c.get("sha256") for c in known[args.service].get("credentials", [])}
        if hash_credential(credential) not in hashes:
            raise CommandError(f"that credential does not belong to service {args.service!r}")
    audience = args.audience or settings.api_audience
    token = sign_user_context(credential=credential, service=args.service, user=args.user, tenant=args.tenant,
                              audience=audience, ttl_s=args.ttl)
    if args.json:
        emit_json({"context": token, "service": args.service, "user": args.user, "tenant": args.tenant,
                   "audience": audience, "ttl": args.ttl})
    else:
        print(token)
    return 0
