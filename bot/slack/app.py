"""The Slack app: `create_app(settings, services)` builds the Bolt AsyncApp and wires the listeners.

The same app serves Socket Mode and the HTTP Events API (`/slack/events`); in HTTP mode Bolt
verifies every request's signature and rejects ones older than five minutes (replays).
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot.services import Services, escalation_desk
from bot.settings import Settings
from bot.slack.audience import ChannelAudience
from bot.slack.context import SlackServices, WorkTracker
from bot.slack.escalation_posting import EscalationThreads
from bot.slack.http_events import clean_event_text
from bot.slack.identity import IdentityResolver
from bot.slack.listeners import register_listeners

log = logging.getLogger(__name__)

# Slack answers 429 with Retry-After; connection resets happen. Server errors are not retried: a
# chat.postMessage that failed with a 5xx may still have posted.
RATE_LIMIT_RETRIES = 3
CONNECTION_RETRIES = 2


def build_web_client(settings: Settings) -> AsyncWebClient:
    base_url = settings.slack_api_url if settings.slack_api_url.endswith("/") else settings.slack_api_url + "/"
    return AsyncWebClient(token=settings.slack_bot_token, base_url=base_url, retry_handlers=[
        AsyncConnectionErrorRetryHandler(max_retry_count=CONNECTION_RETRIES),
        AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
    ])


def create_app(settings: Settings, services: Services, *, work: WorkTracker | None = None) -> AsyncApp:
    """The Bolt app over `services`. Pass `work` to wait for the turns in flight (shutdown, tests)."""
    if not settings.slack_bot_token:
        raise ValueError("SLACK_BOT_TOKEN is not set")
    client = build_web_client(settings)
    # Without a signing secret no HTTP request can be verified: use a secret nobody knows, so every
    # HTTP request is rejected (Socket Mode does not use it).
    signing_secret = settings.slack_signing_secret or secrets.token_hex(32)
    app = AsyncApp(name="cairn", client=client, signing_secret=signing_secret,
                   process_before_response=False, request_verification_enabled=True,
                   ignoring_self_events_enabled=True)
    app.use(clean_event_text)  # text from Slack is made safe once, before any listener sees it
    identity = IdentityResolver(access=services.access, client=client)
    threads = EscalationThreads(client=client, services=services, settings=settings)
    register_listeners(app, SlackServices(
        settings=settings, core=services, identity=identity, work=work or WorkTracker(), threads=threads,
        desk=escalation_desk(services, threads),
        audience=ChannelAudience(client=client, identity=identity, access=services.access)))

    @app.error
    async def log_errors(error: Exception, body: dict[str, Any]) -> None:
        log.error("unhandled error for %s: %s", body.get("type"), error, exc_info=error)

    return app
