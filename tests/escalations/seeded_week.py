"""A seeded store for the digest tests, with every number worked out by hand below.

ISO week 2026-W05 is Mon 26 Jan – Sun 1 Feb 2026 (UTC); the previous week 2026-W04 is 19–25 Jan.

W05 escalations (created in the week):
  e1 below_score_floor        Mon 26 10:00  travel          replied +2 h      thread C0ESC/…001
  e2 answer_validation_failed Tue 27 11:00  expenses        replied +30 min   no thread (CLI)
  e3 conflicting_sources      Wed 28 12:00  travel          expired Thu 29    thread C0ESC/…003
  e4 user_requested_human     Thu 29 09:00  leave           replied +4 h
  e5 retrieval_unavailable    Sun  1 23:59:59 (unlabelled)
  e6 internal_error           Fri 30 08:00  it & equipment
  → 6 total: 2 genuine (e4, e5), 3 avoidable (e1, e2, e3), 1 other (e6)
  → median first reply of [2 h, 30 min, 4 h] = 2 h = 7200 s over 3 answered
  → expired in the week (closed_at in W05): e3 and e12 (created in W04) = 2
W04: e8 below_score_floor Sun 25 23:59:59, e9 user_requested_human Tue 20, e10 answer_validation_failed
  Wed 21, e11 below_score_floor Mon 19 (expired Tue 20), e12 retrieval_unavailable Sun 25 20:00 (expired
  Mon 26 20:00) → 5 total: 2 genuine (e9, e12), 3 avoidable (e8, e10, e11)
e7 below_score_floor Mon 2 Feb 00:00:00 is W06: outside.
Trend (2025-W50 … 2026-W05): e13 below_score_floor in W03, e14 user_requested_human in 2025-W50,
  e15 (2025-W49) outside the 8 weeks.
Feedback in W05: 👎 ×2 on f1 (two users), 👍 ×1 on f2; a 👎 on f3 falls in W06.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.escalations.conftest import Store, at, seed, seed_feedback, seed_turn

TREND_WEEKS = ["2025-W50", "2025-W51", "2025-W52", "2026-W01", "2026-W02", "2026-W03", "2026-W04", "2026-W05"]
TREND_GENUINE = [1, 0, 0, 0, 0, 0, 2, 2]
TREND_AVOIDABLE = [0, 0, 0, 0, 0, 1, 3, 3]

E1_PASSAGES = [
    {"chunk_id": "larkspur:finance/travel:v1:0002", "doc_id": "finance/travel", "version": "v1",
     "title": "Travel and Expenses Policy", "heading": "Meals", "source_path": "finance/travel.md",
     "page": None, "score": 0.12},
    {"chunk_id": "larkspur:finance/travel:v1:0003", "doc_id": "finance/travel", "version": "v1",
     "title": "Travel and Expenses Policy", "heading": "Hotels > Boston", "source_path": "finance/travel.md",
     "page": None, "score": 0.31},
]


def dec(day: int, hour: int = 12) -> datetime:
    return datetime(2025, 12, day, hour, tzinfo=UTC)


async def seed_week(store: Store) -> dict[str, str]:
    """Seed the rows above; returns key → escalation id."""
    rows = {
        "e1": await seed(store, "e1", reason="below_score_floor", created_at=at(26, 10), topic="travel",
                         question="What is the nightly hotel limit in London?", passages=E1_PASSAGES,
                         top_score=0.31, first_reply_at=at(26, 12), status="answered", channel="C0ESC",
                         thread_ts="1700000001.000100"),
        "e2": await seed(store, "e2", reason="answer_validation_failed", created_at=at(27, 11), topic="expenses",
                         question="Can I expense a team dinner with a client?", first_reply_at=at(27, 11, 30),
                         status="resolved", closed_at=at(27, 12)),
        "e3": await seed(store, "e3", reason="conflicting_sources", created_at=at(28, 12), topic="travel",
                         question="What is the nightly hotel limit in Boston?", top_score=0.82,
                         passages=[{**E1_PASSAGES[1], "score": 0.82}], status="expired", closed_at=at(29, 12),
                         channel="C0ESC", thread_ts="1700000003.000100"),
        "e4": await seed(store, "e4", reason="user_requested_human", created_at=at(29, 9), topic="leave",
                         first_reply_at=at(29, 13), status="answered"),
        "e5": await seed(store, "e5", reason="retrieval_unavailable", created_at=at(1, 23, 59, month=2, second=59)),
        "e6": await seed(store, "e6", reason="internal_error", created_at=at(30, 8), topic="it & equipment"),
        "e7": await seed(store, "e7", reason="below_score_floor", created_at=at(2, 0, 0, month=2)),
        "e8": await seed(store, "e8", reason="below_score_floor", created_at=at(25, 23, 59, second=59)),
        "e9": await seed(store, "e9", reason="user_requested_human", created_at=at(20)),
        "e10": await seed(store, "e10", reason="answer_validation_failed", created_at=at(21)),
        "e11": await seed(store, "e11", reason="below_score_floor", created_at=at(19), status="expired",
                          closed_at=at(20)),
        "e12": await seed(store, "e12", reason="retrieval_unavailable", created_at=at(25, 20), status="expired",
                          closed_at=at(26, 20)),
        "e13": await seed(store, "e13", reason="below_score_floor", created_at=at(14)),
        "e14": await seed(store, "e14", reason="user_requested_human", created_at=dec(10)),
        "e15": await seed(store, "e15", reason="below_score_floor", created_at=dec(3)),
    }
    await seed_turn(store, "s-f", "f1", "How do I book a hotel in Dubai?", created_at=at(27, 8))
    await seed_turn(store, "s-f", "f2", "What is the mileage rate?", created_at=at(27, 9))
    await seed_turn(store, "s-f", "f3", "Who approves my leave?", created_at=at(2, 8, month=2))
    await seed_feedback(store, "f1", -1, created_at=at(27, 8, 5))
    await seed_feedback(store, "f1", -1, created_at=at(27, 8, 6), user="U0ALICE")
    await seed_feedback(store, "f2", 1, created_at=at(28, 9))
    await seed_feedback(store, "f3", -1, created_at=at(2, 8, month=2) + timedelta(minutes=1))
    return {k: v.escalation_id for k, v in rows.items()}
