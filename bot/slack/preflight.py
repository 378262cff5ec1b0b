"""What the Slack app needs before anyone asks: a valid bot token, the manifest's scopes, and membership
of every channel Cairn posts to. `cairn doctor` prints these checks; `cairn serve` logs them at start and
`/readyz` reports them.
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.checks import Check
from bot.settings import Settings
from store.access import AccessPolicy

log = logging.getLogger(__name__)

# The bot scopes manifest.yml asks for, and what each is for (a test keeps the two in step).
REQUIRED_SCOPES = {
    "app_mentions:read": "@mentions", "chat:write": "posting answers and escalations",
    "im:history": "DMs", "im:write": "opening DMs", "mpim:history": "group DMs", "mpim:read": "group DM members",
    "channels:history": "threads in public channels", "channels:join": "joining a public digest channel",
    "channels:read": "who reads a public channel",
    "groups:history": "threads in private channels", "groups:read": "who reads a private channel",
    "users:read": "guests and workspaces", "usergroups:read": "Slack user groups", "files:read": "uploads",
    "files:write": "the digest chart", "reactions:write": "the ✅ on relayed replies", "commands": "/cairn",
}


# What reaching Slack can fail with below the Web API: DNS, a refused or dropped connection, TLS, a
# proxy, a timeout. Each becomes one failed check; none may stop `cairn doctor` or `cairn serve`.
UNREACHABLE = (aiohttp.ClientError, asyncio.TimeoutError, OSError)
SLACK_UNREACHABLE = "slack"  # the check's name when the Web API cannot be reached at all

# What to do about each way auth.test refuses the bot token.
TOKEN_HINTS = {
    "invalid_auth": ": the token is not valid for any workspace. Copy the Bot User OAuth Token (xoxb-…) again "
                    "from OAuth & Permissions into SLACK_BOT_TOKEN, or reinstall the app to the workspace",
    "not_authed": ": no token reached Slack. Set SLACK_BOT_TOKEN to the Bot User OAuth Token (xoxb-…)",
    "token_revoked": ": the token was revoked. Reinstall the app (Install App → Reinstall) and copy the new "
                     "Bot User OAuth Token into SLACK_BOT_TOKEN",
    "account_inactive": ": the app was uninstalled or its workspace deactivated. Reinstall the app and copy the "
                        "new Bot User OAuth Token into SLACK_BOT_TOKEN",
    "token_expired": ": the token expired (token rotation is on). Turn token rotation off in the app settings "
                     "and reinstall it, then copy the Bot User OAuth Token again",
}


def describe_network_error(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def unreachable_check(client: AsyncWebClient, exc: BaseException) -> Check:
    """One failed check for a Web API that did not answer, saying what to look at."""
    return Check(SLACK_UNREACHABLE, "fail",
                 f"cannot reach the Slack Web API at {client.base_url} ({describe_network_error(exc)}). "
                 "Check this machine's network: a proxy (HTTPS_PROXY; SLACK_API_URL if you route Slack through "
                 "one), a firewall that must allow outbound HTTPS to slack.com, DNS; and Slack's own status "
                 "at https://slack-status.com")


def channels_to_check(settings: Settings, access: AccessPolicy) -> dict[str, str]:
    """Every channel Cairn posts to → why."""
    wanted: dict[str, str] = {}
    if settings.escalation_channel:
        wanted[settings.escalation_channel] = "CAIRN_ESCALATION_CHANNEL"
    for tenant in sorted(access.tenants):
        channel = access.digest_channel_for(tenant, fallback=settings.digest_channel)
        if channel:
            wanted.setdefault(channel, f"digest of {tenant}")
    for owner in access.owners:
        if owner.channel:
            wanted.setdefault(owner.channel, f"owner channel of {owner.user}")
    for channel in settings.ask_channels:
        wanted.setdefault(channel, "CAIRN_ASK_CHANNELS")
    return wanted


async def slack_checks(client: AsyncWebClient, settings: Settings, access: AccessPolicy) -> list[Check]:
    """The token, its scopes, and each channel Cairn posts to; never raises."""
    checks: list[Check] = []
    if not settings.escalation_channel:
        checks.append(Check("escalation channel", "warn", "CAIRN_ESCALATION_CHANNEL is not set: escalations go "
                                                           "to the admins' DMs, or wait in `cairn escalations`"))
    try:
        auth = await client.auth_test()
    except SlackApiError as exc:
        error = exc.response.get("error")
        checks.append(Check("bot token", "fail", f"auth.test refused it: {error}{TOKEN_HINTS.get(error, '')}"))
        return checks + _unchecked_channels(settings, access, "the bot token was refused")
    except UNREACHABLE as exc:
        checks.append(unreachable_check(client, exc))
        return checks + _unchecked_channels(settings, access, "Slack did not answer")
    checks.append(Check("bot token", "ok", f"{auth.get('user')} in {auth.get('team')} ({auth.get('team_id')})"))
    granted = {s.strip() for s in str((auth.headers or {}).get("x-oauth-scopes", "")).split(",") if s.strip()}
    missing = sorted(set(REQUIRED_SCOPES) - granted)
    if not granted:
        checks.append(Check("scopes", "warn", "Slack did not say which scopes the token has"))
    elif missing:
        needs = ", ".join(f"{s} ({REQUIRED_SCOPES[s]})" for s in missing)
        checks.append(Check("scopes", "fail", f"missing {needs}: reinstall the app from manifest.yml"))
    else:
        checks.append(Check("scopes", "ok", "every scope manifest.yml asks for"))
    for channel, why in channels_to_check(settings, access).items():
        checks.append(await _channel_check(client, channel, why))
    return checks


def _unchecked_channels(settings: Settings, access: AccessPolicy, why_not: str) -> list[Check]:
    """The channels a failed token check left unchecked, listed so the installer sees them all."""
    return [Check(f"channel {channel}", "warn", f"{why}: not checked ({why_not})")
            for channel, why in channels_to_check(settings, access).items()]


async def _channel_check(client: AsyncWebClient, channel: str, why: str) -> Check:
    name = f"channel {channel}"
    if channel.startswith("#"):
        return Check(name, "warn", f"{why}: named, not an id; Cairn cannot check it. Invite the bot "
                                   "(/invite @Cairn) or write its id (C…) instead")
    try:
        info = (await client.conversations_info(channel=channel)).get("channel") or {}
    except SlackApiError as exc:
        return Check(name, "fail", f"{why}: {exc.response.get('error')} (does it exist? is the bot invited?)")
    except UNREACHABLE as exc:
        return Check(name, "fail", f"{why}: not checked, Slack did not answer ({describe_network_error(exc)})")
    if info.get("is_archived"):
        return Check(name, "fail", f"{why}: archived")
    if not info.get("is_member") and not info.get("is_im"):
        return Check(name, "fail", f"{why}: the bot is not a member; run /invite @Cairn there")
    return Check(name, "ok", why)


def log_checks(checks: list[Check]) -> None:
    for check in checks:
        level = logging.INFO if check.status == "ok" else logging.WARNING
        log.log(level, "slack preflight %s: %s: %s", check.status, check.name, check.detail)
