"""Block Kit for proposed answers (escalations/proposals.py): what the document owner is asked, and what the
message says once they decided. Pure builders; ids from bot/slack/constants.py."""

from __future__ import annotations

from bot.slack.constants import ACTION_APPROVE_ANSWER, ACTION_REJECT_ANSWER, BLOCK_PROPOSAL_ACTIONS
from bot.slack.text import encode
from bot.slack.views import SECTION_LIMIT, Message, button, context_block
from store.proposals import ProposalRecord


def _quoted(p: ProposalRecord) -> str:
    return (f"*Question*\n>{encode(' '.join(p.question.split()))}\n*Answer from {encode(p.admin_name)}*\n"
            + "\n".join(f">{encode(line)}" for line in p.answer.splitlines() or [""]))[:SECTION_LIMIT]


def build_proposal_request(p: ProposalRecord) -> Message:
    """To the document owner: an admin's answer to file as knowledge, with Approve and Reject."""
    head = (f":books: *Proposed answer {p.proposal_id}*, from escalation {p.escalation_id}: approve it and "
            f"Cairn answers the next person who asks from it, citing it (readable by: {', '.join(p.groups)}). "
            "Until then nobody is shown it.")
    return {"text": f"Proposed answer {p.proposal_id} awaiting approval: {encode(p.question)}",
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": head}},
                       {"type": "section", "text": {"type": "mrkdwn", "text": _quoted(p)}},
                       {"type": "actions", "block_id": BLOCK_PROPOSAL_ACTIONS, "elements": [
                           button("Approve", ACTION_APPROVE_ANSWER, p.proposal_id, style="primary"),
                           button("Reject", ACTION_REJECT_ANSWER, p.proposal_id)]}]}


def build_proposal_decided(p: ProposalRecord, *, by: str, status_note: str = "") -> Message:
    """The same message once decided: no buttons, who decided and what became of it."""
    if p.status == "approved":
        line = f":white_check_mark: Approved by <@{by}>: filed as `{p.doc_id}`{status_note}."
    else:
        line = f":no_entry_sign: Rejected by <@{by}>: it will not be filed."
    return {"text": f"Proposed answer {p.proposal_id}: {p.status}",
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": _quoted(p)}}, context_block([line])]}
