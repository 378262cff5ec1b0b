"""The digest lists the admins' answers waiting for an owner's approval, and only those."""

from __future__ import annotations

from bot.slack.digest_view import render_slack
from escalations.digest import build_digest, render_markdown
from store.proposals import ProposedAnswers
from tests.escalations.conftest import WEEK, Store
from tests.escalations.seeded_week import seed_week


async def test_the_digest_lists_proposed_answers_awaiting_approval(store: Store) -> None:
    await seed_week(store)
    empty = await build_digest(store.queries, week=WEEK)
    assert empty.proposals == [] and "awaiting approval" not in render_markdown(empty)

    proposals = ProposedAnswers(store.db)
    await proposals.setup()
    waiting, _ = await proposals.propose(escalation_id="e-wifi", tenant_id="larkspur", question="Guest wifi in Lisbon?",
                                         answer="LarkspurGuest, on the desk card.", admin_id="U0ADMIN",
                                         admin_name="adam", groups=("everyone",), owner="#it-security")
    decided, _ = await proposals.propose(escalation_id="e-parking", tenant_id="larkspur", question="Parking?",
                                         answer="Level 2.", admin_id="U0ADMIN", admin_name="adam",
                                         groups=("everyone",), owner=None)
    assert await proposals.decide(proposal_id=decided.proposal_id, status="rejected", decided_by="U0OLIVIA")
    await proposals.propose(escalation_id="e-other", tenant_id="harbor", question="Harbor hours?", answer="9-5.",
                            admin_id="U0ADMIN", admin_name="adam", groups=("everyone",), owner=None)

    digest = await build_digest(store.queries, week=WEEK, tenant_id="larkspur")
    assert [p.proposal_id for p in digest.proposals] == [waiting.proposal_id]
    md = render_markdown(digest)
    assert "## Proposed answers awaiting approval (1)" in md
    assert f"**Guest wifi in Lisbon?** — answered by adam, for #it-security: `cairn proposals approve " \
           f"{waiting.proposal_id}`" in md and "Parking?" not in md and "Harbor hours?" not in md
    _, blocks = render_slack(digest)
    assert any("Proposed answers awaiting approval (1)" in str(b) and waiting.proposal_id in str(b) for b in blocks)
