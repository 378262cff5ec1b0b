"""`cairn proposals [approve ID | reject ID]`: admin answers filed for the document owner, and their decision.

`cairn reply ID "text" --propose` and `cairn resolve ID --propose` file an escalation's answer (see
escalations/proposals.py). An approved answer is ingested like `cairn ingest` does it: in this process, or
handed to the running server's worker (which owns the embedded index) and followed to its end.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from bot.cli.common import CommandError, emit_json, local_services
from bot.cli.parsers import add_command
from bot.services import open_store, running_server
from bot.settings import Settings
from store.access import AccessFileError, AccessPolicy

if TYPE_CHECKING:
    from bot.services import Services
    from escalations.proposals import AnswerBook
    from retrieval.ingest import DocumentOptions, FileOutcome
    from store.jobs import Jobs
    from store.proposals import ProposalRecord
    from store.records import Scope


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "proposals", list_proposals,
                    help="admin answers proposed as knowledge: list, approve or reject them",
                    description="Answers admins filed from escalations (`cairn reply --propose`, `cairn resolve "
                                "--propose`, or the button in Slack), waiting for a document owner. Until "
                                "approved they are never shown to anyone; an approved one is ingested as the "
                                "document answers/ID and cited like any other.")
    p.add_argument("--all", action="store_true", help="also those approved or rejected")
    p.add_argument("--tenant", help="one tenant's only")
    actions = p.add_subparsers(dest="action", metavar="[approve ID | reject ID]")
    for name, handler, what in (("approve", approve, "ingest it as a document (an owner of its groups or an "
                                                       "admin)"),
                                ("reject", reject, "never ingest it")):
        a = add_command(actions, name, handler, help=what)
        a.add_argument("proposal_id", metavar="ID")
        a.add_argument("--as", dest="as_user", metavar="USER", help="decide as this owner or admin (default: local)")


def _access(settings: Settings) -> AccessPolicy:
    try:
        return AccessPolicy.load(settings.access_file)
    except AccessFileError as exc:
        raise CommandError(str(exc)) from exc


def _as(access: AccessPolicy, as_user: str | None) -> Scope:
    try:
        return access.resolve_cli(as_user)
    except AccessFileError as exc:
        raise CommandError(str(exc)) from exc


def proposal_line(p: ProposalRecord) -> str:
    decided = f" by {p.decided_by}" if p.decided_by else ""
    doc = f" → {p.doc_id}" if p.doc_id else ""
    return (f"{p.proposal_id}  {p.status}{decided}{doc}  {p.created_at[:16]}  for {p.owner or 'the admins'} "
            f"[{','.join(p.groups)}]  from {p.escalation_id} by {p.admin_name}\n"
            f"    Q: {p.question[:100]}\n    A: {p.answer[:200]}")


async def list_proposals(args: argparse.Namespace, settings: Settings) -> int:
    async with open_store(settings) as store:
        found = await store.proposals.list(tenant_id=args.tenant, status=None if args.all else "proposed")
    if args.json:
        emit_json([p.as_json() for p in found])
        return 0
    if not found:
        print("no proposed answers" + ("" if args.all else " awaiting approval"))
    for p in found:
        print(proposal_line(p))
    return 0


async def _follow(jobs: Jobs, outcome: FileOutcome) -> FileOutcome:
    """The server's worker runs the job: its final state."""
    from retrieval.ingest import FileOutcome
    from store.jobs import FINAL_STATES

    while outcome.job_id:
        job = await jobs.get(job_id=outcome.job_id)
        if job is None:
            break
        if job.state in (*FINAL_STATES, "failed"):
            return FileOutcome(path=outcome.path, doc_id=job.doc_id, status=job.outcome or job.state,
                               version=job.version, message=job.last_error, job_id=job.job_id)
        await asyncio.sleep(0.5)
    return outcome


@asynccontextmanager
async def answer_book(settings: Settings, access: AccessPolicy, requested_by: str) -> AsyncIterator[AnswerBook]:
    """The proposal use cases with ingestion: in this process, or through the running server's worker."""
    from escalations.proposals import AnswerBook
    from retrieval.ingest import Submitter

    if running_server(settings) and not settings.qdrant_url:
        async with open_store(settings) as store:
            submitter = Submitter(catalog=store.catalog, jobs=store.jobs, raw_root=settings.raw_path,
                                  max_bytes=settings.max_file_bytes, allowed_groups=access.groups_of)

            async def hand_over(data: bytes, filename: str, doc_id: str, options: DocumentOptions) -> FileOutcome:
                outcome = await submitter.submit_bytes(data, filename=filename, doc_id=doc_id, options=options,
                                                       requested_by=requested_by)
                return await _follow(store.jobs, outcome)

            yield AnswerBook(proposals=store.proposals, conversations=store.conversations, access=access,
                             submit=hand_over)
        return
    async with local_services(settings, warm=False) as services:
        async def ingest_here(data: bytes, filename: str, doc_id: str, options: DocumentOptions) -> FileOutcome:
            return await services.ingestor.ingest_now(data, filename=filename, doc_id=doc_id, options=options,
                                                      requested_by=requested_by)

        yield AnswerBook(proposals=services.store.proposals, conversations=services.store.conversations,
                         access=services.access, submit=ingest_here)


async def approve(args: argparse.Namespace, settings: Settings) -> int:
    from escalations.proposals import ProposalError

    access = _access(settings)
    approver = _as(access, args.as_user)
    async with answer_book(settings, access, approver.user_id) as book:
        try:
            decision = await book.approve(args.proposal_id, approver=approver)
        except ProposalError as exc:
            raise CommandError(str(exc)) from exc
    outcome = decision.outcome
    if args.json:
        emit_json({**decision.proposal.as_json(), "ingest": outcome.as_dict() if outcome else None})
        return 0
    assert outcome is not None
    print(f"approved {args.proposal_id}: ingested as {decision.proposal.doc_id} ({outcome.status}"
          + (f" {outcome.version}" if outcome.version else "") + "); the next question like it is answered "
          "from it, with a citation")
    return 0


async def reject(args: argparse.Namespace, settings: Settings) -> int:
    from escalations.proposals import AnswerBook, ProposalError

    access = _access(settings)
    decider = _as(access, args.as_user)
    async with open_store(settings) as store:
        book = AnswerBook(proposals=store.proposals, conversations=store.conversations, access=access)
        try:
            decision = await book.reject(args.proposal_id, decider=decider)
        except ProposalError as exc:
            raise CommandError(str(exc)) from exc
    if args.json:
        emit_json(decision.proposal.as_json())
    else:
        print(f"rejected {args.proposal_id}: it will not be ingested")
    return 0


async def file_answer(services: Services, *, escalation_id: str, admin: Scope, text: str | None) -> ProposalRecord:
    """`--propose` on `cairn reply` / `cairn resolve`: file the escalation's answer (`text`, else the last one
    delivered) for its owner."""
    from escalations.proposals import AnswerBook, ProposalError

    book = AnswerBook(proposals=services.store.proposals, conversations=services.store.conversations,
                      access=services.access)
    try:
        proposal, _ = await book.file(escalation_id, admin_id=admin.user_id,
                                      admin_name=admin.display_name or admin.user_id, text=text)
    except ProposalError as exc:
        raise CommandError(str(exc)) from exc
    return proposal


def filed_line(p: ProposalRecord) -> str:
    return (f"filed as proposed answer {p.proposal_id} for {p.owner or 'the admins'}: not shown to anyone until "
            f"approved (`cairn proposals approve {p.proposal_id}`)")
