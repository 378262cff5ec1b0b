"""Every Slack id Cairn's views and listeners share: action ids, block ids, the slash command.

Listeners match on these and views emit them; neither spells an id inline.
"""

from __future__ import annotations

SLASH_COMMAND = "/cairn"

# Buttons under an answer (value: the turn id, or the session id for "talk to a person").
ACTION_TALK_TO_PERSON = "cairn_talk_to_person"
ACTION_FEEDBACK_UP = "cairn_feedback_up"
ACTION_FEEDBACK_DOWN = "cairn_feedback_down"
BLOCK_ANSWER_ACTIONS = "cairn_answer_actions"
BLOCK_ANSWER_SOURCES = "cairn_answer_sources"

# Buttons on an escalation thread's root message (value: the escalation id).
ACTION_RESOLVE = "cairn_escalation_resolve"
ACTION_CLAIM = "cairn_escalation_claim"
BLOCK_ESCALATION_ACTIONS = "cairn_escalation_actions"
# Admin answers as knowledge: "File this answer" on a resolved escalation's thread (value: the escalation
# id), then Approve / Reject on the message the owner gets (value: the proposal id).
ACTION_PROPOSE_ANSWER = "cairn_answer_propose"
ACTION_APPROVE_ANSWER = "cairn_answer_approve"
ACTION_REJECT_ANSWER = "cairn_answer_reject"
BLOCK_PROPOSAL_ACTIONS = "cairn_proposal_actions"

# App Home
BLOCK_HOME_ESCALATIONS = "cairn_home_escalations"
BLOCK_HOME_DOCUMENTS = "cairn_home_documents"
BLOCK_HOME_JOBS = "cairn_home_jobs"

# An answer's first block carries its turn id (`cairn_turn:<turn id>`): "Why this answer?" reads it back.
BLOCK_ANSWER_TURN_PREFIX = "cairn_turn:"
# Message shortcut on an answer: route, reason, chunks and scores of its turn (admins and the asker).
CALLBACK_WHY_THIS_ANSWER = "cairn_why_this_answer"

# Documents from Slack (policy owners): the upload modal, how it opens, and withdrawing.
CALLBACK_UPLOAD_SHORTCUT = "cairn_upload_document"  # global shortcut
CALLBACK_UPLOAD_MODAL = "cairn_upload_modal"
ACTION_OFFER_UPLOAD = "cairn_offer_upload"  # button under a file shared in the DM (value: JSON id + name)
ACTION_HOME_UPLOAD = "cairn_home_upload"  # "Add a document" in App Home
ACTION_WITHDRAW = "cairn_withdraw_document"  # App Home, with a confirm dialog (value: the doc id)
BLOCK_UPLOAD_FILE, ACTION_UPLOAD_FILE = "cairn_upload_file", "cairn_upload_file_input"
BLOCK_UPLOAD_DOC_ID, ACTION_UPLOAD_DOC_ID = "cairn_upload_doc_id", "cairn_upload_doc_id_input"
BLOCK_UPLOAD_REPLACE, ACTION_UPLOAD_REPLACE = "cairn_upload_replace", "cairn_upload_replace_select"
BLOCK_UPLOAD_GROUPS, ACTION_UPLOAD_GROUPS = "cairn_upload_groups", "cairn_upload_groups_select"
BLOCK_UPLOAD_POLICY, ACTION_UPLOAD_POLICY = "cairn_upload_policy", "cairn_upload_policy_input"
BLOCK_UPLOAD_SENSITIVITY, ACTION_UPLOAD_SENSITIVITY = "cairn_upload_sensitivity", "cairn_upload_sensitivity_select"
BLOCK_UPLOAD_EFFECTIVE, ACTION_UPLOAD_EFFECTIVE = "cairn_upload_effective", "cairn_upload_effective_date"

# Session ids of Slack conversations: one per thread.
SESSION_PREFIX = "slack"


def session_id_for(*, team_id: str, channel: str, thread_ts: str) -> str:
    """One conversation per Slack thread: the root message's ts names it."""
    return f"{SESSION_PREFIX}:{team_id}:{channel}:{thread_ts}"


def parse_session_id(session_id: str) -> tuple[str, str, str] | None:
    """(team, channel, thread ts) of a Slack session id; None for other surfaces' sessions."""
    parts = session_id.split(":")
    if len(parts) != 4 or parts[0] != SESSION_PREFIX:
        return None
    return parts[1], parts[2], parts[3]
