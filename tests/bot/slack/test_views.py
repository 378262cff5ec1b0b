"""Pure view builders: citations as numbered footnotes with readable labels; escalation and home views;
and the manifest that installs the app."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

from bot.slack.constants import (
    ACTION_CLAIM,
    ACTION_RESOLVE,
    CALLBACK_UPLOAD_SHORTCUT,
    CALLBACK_WHY_THIS_ANSWER,
    parse_session_id,
    session_id_for,
)
from bot.slack.escalation_views import build_escalation_root
from bot.slack.views import build_answer, build_home, render_citations, source_label
from store.records import EscalationRecord

ROOT = Path(__file__).resolve().parents[3]
TRAVEL = {"chunk_id": "acme:finance/travel:v3:0007", "title": "Travel and Expenses Policy", "version": "v3",
          "page": None, "heading": "Travel and Expenses Policy > Hotels"}
CODE = {"chunk_id": "acme:hr/code:v1:0002", "title": "Code of Conduct", "version": "v1", "page": 4,
        "heading": "Gifts"}


def test_source_labels_read_like_a_reference() -> None:
    assert source_label(TRAVEL) == "Travel and Expenses Policy · v3 · Hotels"
    assert source_label(CODE) == "Code of Conduct · v1 · p. 4 · Gifts"


def test_chunk_ids_become_numbered_footnotes() -> None:
    answer = ("Hotels in Boston are capped at USD 250 a night [acme:finance/travel:v3:0007]. Gifts over USD 50 "
              "must be declared [acme:hr/code:v1:0002, acme:finance/travel:v3:0007][acme:gone:v1:0001]. "
              "See the [travel desk] for bookings.")
    text, lines = render_citations(answer, [TRAVEL, CODE])
    assert text == ("Hotels in Boston are capped at USD 250 a night [1]. Gifts over USD 50 must be declared [2, 1]. "
                    "See the [travel desk] for bookings.")
    assert lines == ["[1] Travel and Expenses Policy · v3 · Hotels", "[2] Code of Conduct · v1 · p. 4 · Gifts"]


def test_answer_message_escapes_document_text_and_carries_buttons() -> None:
    msg = build_answer(answer="Use <b>form</b> A & B [acme:finance/travel:v3:0007].", citations=[TRAVEL],
                       turn_id="t-1", session_id="slack:T:C:1.2")
    assert "&lt;b&gt;form&lt;/b&gt; A &amp; B [1]." in msg["blocks"][0]["text"]["text"]
    assert msg["blocks"][1]["elements"][0]["text"] == "[1] Travel and Expenses Policy · v3 · Hotels"
    assert [e["value"] for e in msg["blocks"][2]["elements"]] == ["slack:T:C:1.2", "t-1", "t-1"]


def escalation(**over: object) -> EscalationRecord:
    values: dict[str, object] = dict(
        escalation_id="esc-1", session_id="slack:T:D1:1.1", turn_id="t-1", tenant_id="acme", user_id="U1",
        question="Pets?", reason="below_score_floor", transcript="user: Pets?",
        passages=[{**TRAVEL, "score": 0.19}], top_score=0.19, status="open", channel="C0ESC", thread_ts="9.9",
        claimed_by=None, resolved_by=None, kind=None, topic=None, label_attempts=0, first_reply_at=None,
        reminded_at=None, deadline_at=None, created_at=(datetime.now(UTC) - timedelta(hours=3)).isoformat(),
        closed_at=None)
    values.update(over)
    return EscalationRecord(**values)  # type: ignore[arg-type]


def action_ids(msg: dict) -> list[str]:
    return [e["action_id"] for b in msg["blocks"] if b["type"] == "actions" for e in b["elements"]]


def test_escalation_root_buttons_follow_its_status() -> None:
    assert action_ids(build_escalation_root(escalation(), link="https://x")) == [ACTION_RESOLVE, ACTION_CLAIM]
    assert action_ids(build_escalation_root(escalation(claimed_by="U9"), link="https://x")) == [ACTION_RESOLVE]
    resolved = build_escalation_root(escalation(status="resolved", resolved_by="U9"), link="https://x")
    assert action_ids(resolved) == [] and "Resolved" in str(resolved["blocks"])


def test_home_lists_escalations_with_age_and_reason_for_admins() -> None:
    now = datetime.now(UTC)
    opened = escalation(created_at=(now - timedelta(hours=3, minutes=5)).isoformat())
    admin = str(build_home(is_staff=True, is_admin=True, escalations=[opened], now=now))
    assert "3h 5m old" in admin and "No approved passage scored above the floor" in admin
    staff = str(build_home(is_staff=True, is_admin=False, escalations=[], now=now))
    assert "Open escalations" not in staff


def test_session_ids_round_trip() -> None:
    sid = session_id_for(team_id="T1", channel="C1", thread_ts="1700000000.000100")
    assert sid == "slack:T1:C1:1700000000.000100"
    assert parse_session_id(sid) == ("T1", "C1", "1700000000.000100")
    assert parse_session_id("cli:abc") is None


def test_manifest_installs_what_the_listeners_need() -> None:
    manifest = yaml.safe_load((ROOT / "manifest.yml").read_text())
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert {"app_mentions:read", "chat:write", "im:history", "im:write", "mpim:history", "mpim:read",
            "channels:history", "channels:join", "channels:read", "groups:history", "groups:read", "users:read",
            "usergroups:read",
            "files:read", "files:write", "reactions:write", "commands"} == scopes
    settings = manifest["settings"]
    assert set(settings["event_subscriptions"]["bot_events"]) == {
        "app_mention", "message.im", "message.channels", "message.groups", "message.mpim", "app_home_opened",
        "file_shared"}
    shortcuts = {s["callback_id"]: s["type"] for s in manifest["features"]["shortcuts"]}
    assert shortcuts == {CALLBACK_WHY_THIS_ANSWER: "message", CALLBACK_UPLOAD_SHORTCUT: "global"}
    assert "upload" in manifest["features"]["slash_commands"][0]["usage_hint"]
    assert settings["interactivity"]["is_enabled"] and settings["socket_mode_enabled"]
    assert [c["command"] for c in manifest["features"]["slash_commands"]] == ["/cairn"]
    assert manifest["features"]["app_home"]["home_tab_enabled"]
    assert manifest["features"]["app_home"]["messages_tab_enabled"]


def test_conflict_escalation_names_every_owner_and_shows_both_sides() -> None:
    sides = [
        {**TRAVEL, "doc_id": "finance/travel", "score": 0.7, "owner": "#travel-team",
         "effective_at": "2025-01-01T00:00:00+00:00", "conflict": "Boston | USD 250"},
        {"chunk_id": "acme:ops/events:v1:0002", "doc_id": "ops/events", "title": "Events Team Travel Guide",
         "version": "v1", "page": None, "heading": "Booking Hotels", "score": 0.8, "owner": "#events-team",
         "effective_at": "2025-01-01T00:00:00+00:00",
         "conflict": "The nightly hotel limit in Boston is USD 275 for all staff."},
    ]
    msg = build_escalation_root(escalation(reason="conflicting_sources", passages=sides), link="https://x")
    text = str(msg["blocks"])
    assert "#travel-team" in text and "#events-team" in text
    assert "USD 250" in text and "USD 275" in text
    side_by_side = next(b for b in msg["blocks"] if b.get("fields") and "effective 2025-01-01" in str(b))
    assert len(side_by_side["fields"]) == 2
    assert "v3" in side_by_side["fields"][0]["text"] and "v1" in side_by_side["fields"][1]["text"]


def test_job_status_is_rendered_from_the_row_alone() -> None:
    from bot.slack.document_views import build_job_status
    from store.records import JobRecord

    def job(state: str, **kw: object) -> JobRecord:
        base = dict(job_id="j", tenant_id="t", doc_id="ops/parking", source_path="parking.md", raw_path="r",
                    content_hash="h", options={"effective": "2027-01-01"}, state=state, attempts=1, last_error=None,
                    version="v2", outcome=None, requested_by="U", notify=None, created_at="c", updated_at="u")
        return JobRecord(**{**base, **kw})  # type: ignore[arg-type]

    assert "✓ parsing → *embedding…* → indexing → published" in build_job_status(job("embedding"), max_attempts=3)["text"]
    assert "is published" in build_job_status(job("published", outcome="published"), max_attempts=3)["text"]
    assert "2027-01-01" in build_job_status(job("published", outcome="scheduled"), max_attempts=3)["text"]
    assert "retries automatically" in build_job_status(job("failed", last_error="boom"), max_attempts=3)["text"]
    dead = build_job_status(job("dead", last_error="it needs OCR"), max_attempts=3)["text"]
    assert "it needs OCR" in dead and "fix the file" in dead
    exhausted = build_job_status(job("dead", attempts=3, last_error="Timeout"), max_attempts=3)["text"]
    assert "after 3 attempts" in exhausted


def test_an_answer_carries_its_turn_id() -> None:
    from bot.slack.views import answer_turn_id, build_admin_answer

    msg = build_answer(answer="Hotels [acme:finance/travel:v3:0007].", citations=[TRAVEL], turn_id="t-9",
                       session_id="slack:T:C:1.2")
    assert answer_turn_id(msg) == "t-9"
    assert answer_turn_id(build_admin_answer(text="Answer from Adam: yes", turn_id="t-8")) == "t-8"
    assert answer_turn_id({"blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]}) is None


def test_replace_options_stay_within_slacks_option_limits_for_long_document_ids() -> None:
    from bot.slack.document_views import document_option, document_option_value
    from store.records import DocumentRecord
    from tests.slack_rules import option_problems

    def doc(doc_id: str, title: str) -> DocumentRecord:
        return DocumentRecord(tenant_id="larkspur", doc_id=doc_id, title=title, policy_id=None, owner=None,
                              sensitivity="internal", groups=("everyone",), acl_version=1, current_version="v1",
                              status="published", superseded_by=None, supersedes=None)

    long_id = "policies/" + "very-long-section/" * 12 + "travel"
    option = document_option(doc(long_id, "Travel " * 20))
    assert option_problems(option) == [] and option["value"] == document_option_value(long_id) != long_id
    assert document_option(doc("finance/travel", "Travel"))["value"] == "finance/travel"  # short ids as they are
