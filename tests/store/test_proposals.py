"""Proposed answers: one per escalation, decided once, listed by status and tenant."""

from __future__ import annotations

import aiosqlite

from store.proposals import ProposedAnswers


async def test_one_proposal_per_escalation_decided_once(conn: aiosqlite.Connection) -> None:
    proposals = ProposedAnswers(conn)
    await proposals.setup()
    await proposals.setup()  # idempotent
    kw = {"tenant_id": "larkspur", "question": "Q?", "admin_id": "U0ADMIN", "admin_name": "adam",
          "groups": ("hr", "everyone"), "owner": "#people-team"}
    first, created = await proposals.propose(escalation_id="e1", answer="A.", **kw)  # type: ignore[arg-type]
    again, created_again = await proposals.propose(escalation_id="e1", answer="Other.", **kw)  # type: ignore[arg-type]
    assert created and not created_again and again == first and again.answer == "A."
    assert first.groups == ("everyone", "hr") and first.status == "proposed" and first.doc_id is None
    other, _ = await proposals.propose(escalation_id="e2", answer="B.", **{**kw, "tenant_id": "harbor"})  # type: ignore[arg-type]

    assert [p.escalation_id for p in await proposals.list()] == ["e1", "e2"]
    assert [p.escalation_id for p in await proposals.list(tenant_id="harbor")] == ["e2"]
    assert await proposals.decide(proposal_id=first.proposal_id, status="approved", decided_by="U0HANA",
                                  doc_id=f"answers/{first.proposal_id}")
    assert not await proposals.decide(proposal_id=first.proposal_id, status="rejected", decided_by="U0ADMIN")
    decided = await proposals.get(proposal_id=first.proposal_id)
    assert decided is not None and (decided.status, decided.decided_by, decided.doc_id) == (
        "approved", "U0HANA", f"answers/{first.proposal_id}")
    assert [p.proposal_id for p in await proposals.list()] == [other.proposal_id]
    assert len(await proposals.list(status=None)) == 2
    assert await proposals.get(proposal_id="pa-none") is None
