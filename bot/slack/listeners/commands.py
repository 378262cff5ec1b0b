"""`/cairn`: `ask <question>` (answered in the user's DM with Cairn), `help`, for policy owners
`upload` (the upload modal), and for admins `escalations` and `resolve ID`."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.constants import SLASH_COMMAND
from bot.slack.context import SlackServices
from bot.slack.document_views import OWNER_ONLY_TEXT
from bot.slack.escalation_views import build_escalation_list
from bot.slack.intake import bind, first_delivery
from bot.slack.listeners.documents import open_upload_modal
from bot.slack.text import decode, encode
from bot.slack.turn import Ask, answer_in_thread, turn_id_for
from bot.slack.views import build_help
from store.db import utcnow
from store.records import Scope

log = logging.getLogger(__name__)


def _split(command: dict[str, Any]) -> tuple[str, str]:
    text = decode(str(command.get("text") or "")).strip()  # Slack encodes slash-command text too
    verb, _, rest = text.partition(" ")
    return verb.lower(), rest.strip()


async def acknowledge(ack: Any, command: dict[str, Any]) -> None:
    verb, rest = _split(command)
    if verb == "ask" and rest:
        await ack(text="Looking that up; I'll answer in our direct messages.")
    else:
        await ack()  # the lazy part answers (help for anything unknown)


async def run(services: SlackServices, command: dict[str, Any], client: AsyncWebClient, respond: Any) -> None:
    async def report() -> None:
        await respond(text="Sorry, something went wrong on my side; please try again.", response_type="ephemeral")

    async with services.work.run(f"{SLASH_COMMAND} command", report):
        verb, rest = _split(command)
        user_id = str(command["user_id"])
        scope = await services.identity.resolve(user_id, event_team_id=command.get("team_id"))
        if verb == "ask" and rest:
            await _ask(services, client, command, rest)
        elif verb == "upload":
            async def refuse() -> None:
                await respond(text=OWNER_ONLY_TEXT, response_type="ephemeral")

            await open_upload_modal(services, client, user_id=user_id, trigger_id=str(command.get("trigger_id")),
                                    team_id=command.get("team_id"), refuse=refuse)
        elif verb == "escalations":
            if not services.desk.may_handle(scope):
                await respond(text="Only Cairn admins can list escalations.", response_type="ephemeral")
                return
            open_ = await services.core.conversations.list_escalations(open_only=True, tenant_id=scope.tenant_id)
            await respond(response_type="ephemeral", **build_escalation_list(open_, utcnow()))
        elif verb == "resolve" and rest:
            await respond(text=await _resolve(services, scope, rest.split()[0]), response_type="ephemeral")
        else:
            is_owner = bool(services.core.access.owned_groups(user_id, scope.tenant_id)) and scope.audience == "staff"
            await respond(response_type="ephemeral", **build_help(is_admin=services.desk.may_handle(scope),
                                                                  is_owner=is_owner))


def register(app: AsyncApp, services: SlackServices) -> None:
    app.command(SLASH_COMMAND)(ack=acknowledge, lazy=[bind(run, services)])


async def _ask(services: SlackServices, client: AsyncWebClient, command: dict[str, Any], question: str) -> None:
    """Slash commands have no thread: Cairn opens the user's DM, quotes the question as the root, and
    answers in its thread, where follow-ups continue the conversation."""
    user_id = str(command["user_id"])
    key = f"command:{command.get('trigger_id') or ''}"
    if command.get("trigger_id") and not await first_delivery(services.core, key):
        return
    im = await client.conversations_open(users=user_id)
    channel = str(im["channel"]["id"])
    root = await client.chat_postMessage(channel=channel, text=f"<@{user_id}> asked: {encode(question)}")
    root_ts = str(root["ts"])
    await answer_in_thread(services, client, Ask(
        team_id=str(command.get("team_id") or ""), channel=channel, user_id=user_id,
        user_team=command.get("team_id"), text=question, message_ts=root_ts, thread_ts=root_ts),
        turn_id=turn_id_for(channel, root_ts))


async def _resolve(services: SlackServices, scope: Scope, escalation_id: str) -> str:
    escalation = await services.desk.get(escalation_id)
    if escalation is None:
        return f"There is no escalation {escalation_id}."
    if not services.desk.may_handle(scope, escalation):
        return "Only Cairn admins can resolve escalations."
    closing = await services.desk.resolve(escalation_id, admin_id=scope.user_id)
    if closing.result == "done":
        return f"Resolved {escalation_id}."
    status = closing.escalation.status if closing.escalation else "closed"
    return f"{escalation_id} is already {status}; nothing changed."
