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

# App Home
BLOCK_HOME_ESCALATIONS = "cairn_home_escalations"

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
