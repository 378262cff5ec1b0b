"""Buttons that make an admin's answer knowledge: *File the answer* on a resolved escalation's thread, then
*Approve* / *Reject* on the message the document owner gets (escalations/proposals.py does the work)."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.constants import ACTION_APPROVE_ANSWER, ACTION_PROPOSE_ANSWER, ACTION_REJECT_ANSWER
from bot.slack.context import SlackServices
from bot.slack.intake import ack_now, bind
from bot.slack.listeners.actions import clicked, failure_reporter, tell_clicker
from bot.slack.proposal_views import build_proposal_decided, build_proposal_request
from escalations.proposals import AnswerBook, ProposalError
from retrieval.ingest import DocumentOptions, FileOutcome

log = logging.getLogger(__name__)


def _book(services: SlackServices, requested_by: str) -> AnswerBook:
    core = services.core

    async def ingest(data: bytes, filename: str, doc_id: str, options: DocumentOptions) -> FileOutcome:
        """Queued for the ingestion worker, and run now so the message can say how it went (the job's
        lease keeps the worker from running it twice)."""
        return await core.ingestor.ingest_now(data, filename=filename, doc_id=doc_id, options=options,
                                              requested_by=requested_by)

    return AnswerBook(proposals=core.store.proposals, conversations=core.conversations, access=core.access,
                      submit=ingest)


async def propose(services: SlackServices, body: dict[str, Any], client: AsyncWebClient) -> None:
    async with services.work.run("file answer button", failure_reporter(client, body)):
        user_id, escalation_id, channel, message_ts = clicked(body)
        thread_ts = (body.get("message") or {}).get("thread_ts") or message_ts
        escalation = await services.desk.get(escalation_id)
        if escalation is None:
            return
        scope = await services.identity.resolve(user_id, event_team_id=(body.get("user") or {}).get("team_id"))
        if not services.desk.may_handle(scope, escalation):
            await tell_clicker(client, channel=channel, user=user_id, thread_ts=thread_ts,
                        text="Only Cairn admins can file an escalation's answer.")
            return
        try:
            proposal, created = await _book(services, user_id).file(
                escalation_id, admin_id=user_id, admin_name=scope.display_name or user_id)
        except ProposalError as exc:
            await tell_clicker(client, channel=channel, user=user_id, thread_ts=thread_ts, text=str(exc))
            return
        if not created:
            await tell_clicker(client, channel=channel, user=user_id, thread_ts=thread_ts,
                        text=f"This answer was already filed ({proposal.proposal_id}, {proposal.status}).")
            return
        where = await _ask_owner(client, proposal, fallback=(escalation.channel, escalation.thread_ts))
        await tell_clicker(client, channel=channel, user=user_id, thread_ts=thread_ts,
                    text=f"Filed as proposed answer {proposal.proposal_id}"
                         + (f" for {where}" if where else "") + ": nobody is shown it until it is approved.")


async def _ask_owner(client: AsyncWebClient, proposal: Any, *, fallback: tuple[str | None, str | None]) -> str | None:
    """Post the approval request in the owner's channel; where the bot cannot, in the escalation's thread."""
    message = build_proposal_request(proposal)
    if proposal.owner:
        try:
            await client.chat_postMessage(channel=proposal.owner, **message)
            return str(proposal.owner)
        except SlackApiError as exc:
            log.warning("proposal %s: cannot post to %s (%s); asking in the escalation thread", proposal.proposal_id,
                        proposal.owner, exc.response.get("error"))
    channel, thread_ts = fallback
    if channel:
        try:
            await client.chat_postMessage(channel=channel, thread_ts=thread_ts, **message)
            return "this thread"
        except SlackApiError as exc:
            log.warning("proposal %s: cannot post the approval request (%s); `cairn proposals` lists it",
                        proposal.proposal_id, exc.response.get("error"))
    return None


async def decide(services: SlackServices, body: dict[str, Any], client: AsyncWebClient) -> None:
    async with services.work.run("proposal decision button", failure_reporter(client, body)):
        user_id, proposal_id, channel, message_ts = clicked(body)
        approving = body["actions"][0]["action_id"] == ACTION_APPROVE_ANSWER
        scope = await services.identity.resolve(user_id, event_team_id=(body.get("user") or {}).get("team_id"))
        book = _book(services, user_id)
        try:
            decision = (await book.approve(proposal_id, approver=scope) if approving
                        else await book.reject(proposal_id, decider=scope))
        except ProposalError as exc:
            await tell_clicker(client, channel=channel, user=user_id, text=str(exc))
            return
        outcome = decision.outcome
        note = "" if outcome is None or outcome.status == "published" else f" ({outcome.status})"
        if channel and message_ts:
            try:
                await client.chat_update(channel=channel, ts=message_ts,
                                         **build_proposal_decided(decision.proposal, by=user_id, status_note=note))
            except SlackApiError as exc:
                log.info("chat.update of proposal %s failed: %s", proposal_id, exc.response.get("error"))


def register(app: AsyncApp, services: SlackServices) -> None:
    app.action(ACTION_PROPOSE_ANSWER)(ack=ack_now, lazy=[bind(propose, services)])
    app.action(ACTION_APPROVE_ANSWER)(ack=ack_now, lazy=[bind(decide, services)])
    app.action(ACTION_REJECT_ANSWER)(ack=ack_now, lazy=[bind(decide, services)])
