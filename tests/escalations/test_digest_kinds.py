"""The digest's kinds beyond genuine and avoidable, every count worked out by hand:

W05 (Mon 26 Jan – Sun 1 Feb 2026):
  a1 below_score_floor      Mon 26 10:00  topic leave          its own passage only           → avoidable
  r1 below_score_floor      Tue 27 10:00  Executive Allowances a restricted passage recorded  → restricted
  r2 no_eligible_source     Wed 28 10:00  Executive Allowances a restricted passage recorded  → restricted
  n1 no_eligible_source     Thu 29 10:00  other                no passage at all              → no documents
  g1 user_requested_human   Fri 30 10:00  leave                                               → genuine
  → 5 total: 1 genuine, 1 avoidable, 2 restricted, 1 no documents, 0 other
W04: n2 no_eligible_source Tue 20, r3 restricted Wed 21 → 2 total: 1 restricted, 1 no documents.
The week so far at Wed 28 09:00: a1 and r1 only.
"""

from __future__ import annotations

from bot.slack.digest_view import render_slack
from escalations.digest import FOOTNOTE, KindCounts, TopicCount, build_digest, render_markdown
from escalations.taxonomy import AVOIDABLE, NO_DOCUMENTS, RESTRICTED, kind_of
from tests.escalations.conftest import WEEK, Store, at, seed

OWN = {"chunk_id": "larkspur:hr/leave:v1:0001", "doc_id": "hr/leave", "version": "v1", "title": "Leave Policy",
       "heading": "Leave Policy > Annual Leave", "source_path": "hr/leave.md", "page": None, "score": 0.21}
HIDDEN = {"chunk_id": "larkspur:finance/executive-allowances:v1:0001", "doc_id": "finance/executive-allowances",
          "version": "v1", "title": "Executive Allowances", "heading": "Executive Allowances > Car Allowance",
          "source_path": "finance/executive-allowances.md", "page": None, "score": 0.74, "restricted": True}


async def seed_kinds(store: Store) -> dict[str, str]:
    """Seed the rows above; returns key → escalation id."""
    rows = {
        "a1": await seed(store, "a1", reason="below_score_floor", created_at=at(26, 10), topic="leave",
                         question="Can I take leave in half days?", passages=[OWN], top_score=0.21),
        "r1": await seed(store, "r1", reason="below_score_floor", created_at=at(27, 10),
                         topic="Executive Allowances", question="What is the car allowance?",
                         passages=[OWN, HIDDEN], top_score=0.21, channel="C0ESC", thread_ts="1700000002.000100"),
        "r2": await seed(store, "r2", reason="no_eligible_source", created_at=at(28, 10),
                         topic="Executive Allowances", question="How much is the executive health screening?",
                         passages=[HIDDEN]),
        "n1": await seed(store, "n1", reason="no_eligible_source", created_at=at(29, 10), topic="other",
                         question="Where do I park?"),
        "g1": await seed(store, "g1", reason="user_requested_human", created_at=at(30, 10), topic="leave",
                         question="I want to talk to a person about my leave"),
        "n2": await seed(store, "n2", reason="no_eligible_source", created_at=at(20, 10), question="Parking?"),
        "r3": await seed(store, "r3", reason="below_score_floor", created_at=at(21, 10), passages=[HIDDEN],
                         question="Car allowance?"),
    }
    return {key: esc.escalation_id for key, esc in rows.items()}


async def test_each_kind_is_counted_on_its_own(store: Store) -> None:
    ids = await seed_kinds(store)
    d = await build_digest(store.queries, week=WEEK, timezone="UTC")
    assert d.counts == KindCounts(genuine=1, avoidable=1, other=0, restricted=2, no_documents=1)
    assert d.counts.total == 5
    assert d.previous == KindCounts(restricted=1, no_documents=1) and d.previous.total == 2
    # the backlog is the knowledge base's: neither a restricted answer nor an empty collection
    assert [b.escalation_id for b in d.backlog] == [ids["a1"]]
    assert [(r.escalation_id, r.documents) for r in d.restricted] == [
        (ids["r1"], ["Executive Allowances (finance/executive-allowances)"]),
        (ids["r2"], ["Executive Allowances (finance/executive-allowances)"])]
    assert d.restricted[0].link == "slack://channel?id=C0ESC&message=1700000002.000100"
    assert d.top_topics == [TopicCount("Executive Allowances", 2, 0), TopicCount("leave", 2, 1),
                            TopicCount("other", 1, 0)]
    # the chart's bars: genuine and avoidable only, a restricted one never among the avoidable
    assert (d.trend.weeks[-2:], d.trend.genuine[-2:], d.trend.avoidable[-2:]) == (
        ["2026-W04", WEEK], [0, 1], [0, 1])


async def test_the_best_passage_of_a_gap_is_the_askers_own(store: Store) -> None:
    ids = await seed_kinds(store)
    esc = await store.conversations.get_escalation(escalation_id=ids["r1"])
    assert esc is not None and kind_of(esc) == RESTRICTED
    n1 = await store.conversations.get_escalation(escalation_id=ids["n1"])
    a1 = await store.conversations.get_escalation(escalation_id=ids["a1"])
    assert n1 is not None and kind_of(n1) == NO_DOCUMENTS
    assert a1 is not None and kind_of(a1) == AVOIDABLE


async def test_markdown_and_slack_show_every_kind_and_an_honest_footnote(store: Store) -> None:
    await seed_kinds(store)
    d = await build_digest(store.queries, week=WEEK, timezone="UTC")
    md = render_markdown(d)
    assert "| escalations | 5 | 2 | ▲3 from 2 |" in md
    assert "| genuine (no answer existed) | 1 (20%) | 0 | ▲1 from 0 |" in md
    assert "| **avoidable** (knowledge base to fix) | **1** (20%) | 0 | ▲1 from 0 |" in md
    assert "| restricted (in a document the asker may not read) | 2 (40%) | 1 | ▲1 from 1 |" in md
    assert "| no documents (nothing published the asker may read) | 1 (20%) | 1 | no change |" in md
    assert "## Knowledge-base backlog (1 avoidable)" in md
    assert "## In a document the asker may not read (2)" in md
    assert "1. **What is the car allowance?** — would have been answered by Executive Allowances" in md
    assert "Where do I park?" not in md  # no documents: counted, not a backlog item
    assert "had material" not in md and FOOTNOTE in md
    assert "best passage it had: Leave Policy › Annual Leave" in md  # never the restricted one

    fallback, blocks = render_slack(d)
    assert fallback.startswith(f"Cairn escalation digest {WEEK}: 5 escalations")
    shown = "\n".join(b["text"]["text"] for b in blocks if b.get("type") == "section")
    assert "*2* in a document the asker may not read" in shown and "*1* with no document the asker may read" in shown
    assert "*In a document the asker may not read (2)*" in shown and "What is the car allowance?" in shown
    assert any(FOOTNOTE in e["text"] for b in blocks if b["type"] == "context" for e in b["elements"])


async def test_the_week_so_far_counts_up_to_now_and_says_so(store: Store) -> None:
    ids = await seed_kinds(store)
    d = await build_digest(store.queries, week=WEEK, timezone="UTC", until=at(28, 9))
    assert d.counts == KindCounts(avoidable=1, restricted=1) and d.until == at(28, 9)
    assert [b.escalation_id for b in d.backlog] == [ids["a1"]]
    md = render_markdown(d)
    assert md.startswith(f"# Cairn escalation digest — {WEEK} (week so far)")
    assert "_the week so far: Mon 26 Jan – Wed 28 Jan 2026 09:00 (UTC); the week is not over_" in md
    assert render_slack(d)[1][0]["text"]["text"].endswith("(week so far)")
