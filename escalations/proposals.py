"""Admin answers become knowledge: an escalation's answer filed for the document owner, then ingested.

An admin who answered an escalation files that answer as a *proposed answer* (Slack: the button on the
resolved thread; CLI: `cairn reply --propose`, `cairn resolve --propose`). It waits, never shown to
anyone, until an owner approves it (Slack: Approve on the message in the owner's channel; CLI:
`cairn proposals approve ID`). Approval ingests it as a small document of its own (`answers/<proposal
id>`: the question as its title and heading, the admin's answer as its text, the escalation's audience
as its groups, the owner channel as its owner, today as its effective date), versioned, published and
cited like any other; a rejected one is never ingested. The weekly digest lists those awaiting approval.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from retrieval.ingest import DocumentOptions, FileOutcome
from store.access import EVERYONE, AccessPolicy
from store.conversations import ConversationStore
from store.proposals import ProposalRecord, ProposedAnswers
from store.records import EscalationRecord, Scope

ANSWERS_FOLDER = "answers"  # the document ids approved answers get: answers/<proposal id>
# Submit one document for ingestion: (bytes, file name, document id, options) → the submission's outcome.
Submit = Callable[[bytes, str, str, DocumentOptions], Awaitable[FileOutcome]]
FAILED = ("rejected", "failed", "dead", "cancelled")


class ProposalError(Exception):
    """Why a proposal cannot be filed or decided, in words for the person who tried."""


@dataclass(frozen=True)
class Decision:
    proposal: ProposalRecord
    outcome: FileOutcome | None  # the ingestion of an approved answer (None: rejected)


def audience_groups(access: AccessPolicy, escalation: EscalationRecord) -> tuple[str, ...]:
    """Who asked, as groups: the asker's groups in the access file (a guest or Slack Connect user: the
    customer audience); an unlisted member of the workspace reads what `everyone` reads."""
    entry = access.find_user(escalation.user_id)
    if entry is None:
        return (EVERYONE,)
    scope = access.resolve_cli(entry.name)
    return tuple(sorted(scope.groups)) or (EVERYONE,)


def owner_for(access: AccessPolicy, escalation: EscalationRecord, groups: tuple[str, ...]) -> str | None:
    """The owner channel the proposal is for: the one the escalation was handled in, else the channel of an
    owner of its groups; None when the access file names no owner (then the admins decide)."""
    if escalation.channel and escalation.channel in access.owner_channels(escalation.tenant_id):
        return escalation.channel
    return access.owner_channel_for(escalation.tenant_id, groups)


def may_decide(access: AccessPolicy, scope: Scope, proposal: ProposalRecord) -> bool:
    """An admin, or an owner of the proposal's tenant who administers every one of its groups."""
    if scope.audience != "staff":
        return False
    if scope.is_admin or access.is_admin(scope.user_id):
        return True
    owned = access.owned_groups(scope.user_id, proposal.tenant_id)
    return scope.tenant_id == proposal.tenant_id and bool(owned) and set(proposal.groups) <= owned


def answer_document(proposal: ProposalRecord) -> bytes:
    """The approved answer as Markdown: the question is its title and heading, the answer its text."""
    question = " ".join(proposal.question.split())
    return (f"---\ntitle: {json.dumps(question, ensure_ascii=False)}\n---\n\n# {question}\n\n"
            f"{proposal.answer.strip()}\n").encode()


class AnswerBook:
    """The proposal use cases every surface shares. `submit` hands a document to ingestion (in-process,
    or to the running server's worker)."""

    def __init__(self, *, proposals: ProposedAnswers, conversations: ConversationStore, access: AccessPolicy,
                 submit: Submit | None = None) -> None:
        self.proposals = proposals
        self._conversations = conversations
        self._access = access
        self._submit = submit

    async def answer_of(self, escalation_id: str) -> tuple[str, str] | None:
        """(admin id, text) of the last reply delivered into the escalation's conversation, if any."""
        replies = [r for r in await self._conversations.list_admin_replies(escalation_id=escalation_id)
                   if r.delivered_at and r.text.strip()]
        return (replies[-1].admin_id, replies[-1].text) if replies else None

    async def file(self, escalation_id: str, *, admin_id: str, admin_name: str,
                   text: str | None = None) -> tuple[ProposalRecord, bool]:
        """File the escalation's answer (`text`, else the last admin reply delivered) for its owner.
        Returns (proposal, True when this call filed it). The caller checks that the admin may handle the
        escalation."""
        escalation = await self._conversations.get_escalation(escalation_id=escalation_id)
        if escalation is None:
            raise ProposalError(f"no escalation {escalation_id!r}")
        if text is None:
            found = await self.answer_of(escalation_id)
            if found is None:
                raise ProposalError(f"{escalation_id} has no admin answer to file: reply to it first")
            text = found[1]
        if not text.strip():
            raise ProposalError("the answer is empty")
        groups = audience_groups(self._access, escalation)
        return await self.proposals.propose(
            escalation_id=escalation_id, tenant_id=escalation.tenant_id, question=escalation.question,
            answer=text.strip(), admin_id=admin_id, admin_name=admin_name, groups=groups,
            owner=owner_for(self._access, escalation, groups))

    async def _pending(self, proposal_id: str, decider: Scope) -> ProposalRecord:
        proposal = await self.proposals.get(proposal_id=proposal_id)
        if proposal is None:
            raise ProposalError(f"no proposed answer {proposal_id!r}")
        if proposal.status != "proposed":
            raise ProposalError(f"{proposal_id} was already {proposal.status}"
                                + (f" by {proposal.decided_by}" if proposal.decided_by else ""))
        if not may_decide(self._access, decider, proposal):
            who = decider.display_name or decider.user_id
            raise ProposalError(f"{who} may not decide {proposal_id}: an owner of its groups "
                                f"({', '.join(proposal.groups)}) or an admin decides")
        return proposal

    async def approve(self, proposal_id: str, *, approver: Scope, now: datetime | None = None) -> Decision:
        """Ingest the answer as `answers/<proposal id>` and record the approval. Raises ProposalError when it
        cannot be approved (unknown, decided already, not theirs to decide, refused by ingestion)."""
        proposal = await self._pending(proposal_id, approver)
        if self._submit is None:
            raise ProposalError("approving needs ingestion, which this surface does not offer")
        doc_id = f"{ANSWERS_FOLDER}/{proposal.proposal_id}"
        today = (now or datetime.now(UTC)).date().isoformat()
        options = DocumentOptions(tenant_id=proposal.tenant_id, groups=proposal.groups, owner=proposal.owner,
                                  effective=today)
        outcome = await self._submit(answer_document(proposal), f"{doc_id}.md", doc_id, options)
        if outcome.status in FAILED:
            raise ProposalError(f"{proposal_id} could not be ingested: {outcome.message or outcome.status}")
        if not await self.proposals.decide(proposal_id=proposal_id, status="approved",
                                           decided_by=approver.user_id, doc_id=doc_id, now=now):
            raise ProposalError(f"{proposal_id} was decided by someone else meanwhile")
        decided = await self.proposals.get(proposal_id=proposal_id)
        assert decided is not None
        return Decision(decided, outcome)

    async def reject(self, proposal_id: str, *, decider: Scope, now: datetime | None = None) -> Decision:
        await self._pending(proposal_id, decider)
        if not await self.proposals.decide(proposal_id=proposal_id, status="rejected", decided_by=decider.user_id,
                                           now=now):
            raise ProposalError(f"{proposal_id} was decided by someone else meanwhile")
        decided = await self.proposals.get(proposal_id=proposal_id)
        assert decided is not None
        return Decision(decided, None)
