"""What is posted is exactly what people should see: Slack's encoding decoded once and encoded once, no
ping from a document, a question or a draft, and an admin's reply relayed intact."""

from __future__ import annotations

import json
import re

from bot.slack.views import build_answer
from retrieval.ingest import DocumentOptions
from tests.bot.conftest import ADMIN, ESCALATION_CHANNEL, Cairn
from tests.bot.slack.test_escalations import ask_and_escalate
from tests.fake_slack import Call

LIVE = re.compile(r"<!(?:channel|here|everyone)|<@U0BOSS")
DRILLS = (b"---\ntitle: Fire Drills\n---\n# Fire Drills\n\n<!channel> Fire drills happen on the first Monday of "
          b"each month at 10:00, and the R&D lab joins them <!here>. Questions go to <@U0BOSS> <!everyone>.\n")


def everything_posted(call: Call) -> str:
    """The `text` and the raw blocks, as Slack receives them."""
    blocks = call.params.get("blocks")
    return str(call.params.get("text") or "") + "\n" + (blocks if isinstance(blocks, str) else json.dumps(blocks))


async def test_a_document_that_pings_everyone_pings_no_one(cairn: Cairn) -> None:
    await cairn.services.ingestor.submit_bytes(DRILLS, filename="ops/drills.md", doc_id="ops/drills",
                                               options=DocumentOptions(tenant_id="larkspur"), requested_by="test")
    await cairn.services.ingestor.run_pending()
    await cairn.event(cairn.message("When do fire drills happen?"))
    answer = await cairn.fake.wait_for("chat.update", lambda c: "Fire drills" in c.text)
    posted = everything_posted(answer)
    assert not LIVE.search(posted), posted
    assert "R&amp;D" in posted and "&amp;amp;" not in posted
    assert "@channel" in answer.params["text"]  # shown as the words, not the broadcast


async def test_an_askers_question_reaches_the_escalation_channel_as_written_and_pings_no_one(cairn: Cairn) -> None:
    question = "Can the R&D team bring pets <!channel> to the Tokyo office? cc <@U0BOSS> a<b"
    _, root = await ask_and_escalate(cairn, question)
    posted = everything_posted(root)
    assert not LIVE.search(posted), posted
    assert "R&amp;D team" in posted and "a&lt;b" in posted and "&amp;amp;" not in posted and "&amp;lt;" not in posted


async def test_an_admin_reply_with_an_ampersand_a_link_and_a_mention_arrives_intact(cairn: Cairn) -> None:
    await ask_and_escalate(cairn)
    thread = next(iter(cairn.fake.messages[ESCALATION_CHANNEL]))
    typed = ("10 days & need a credit note from <@U0RITA>; see <https://larkspur.example/returns?a=1&b=2|the returns "
             "page> if 3 < 4 <!here>")
    await cairn.event(cairn.message(typed, user=ADMIN, channel=ESCALATION_CHANNEL, channel_type="channel",
                                    thread_ts=thread))
    relayed = await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == "D0BOB" and "credit note" in c.text)
    text = relayed.params["text"]
    assert "10 days &amp; need a credit note from <@U0RITA>;" in text
    assert "<https://larkspur.example/returns?a=1&amp;b=2|the returns page>" in text
    assert "3 &lt; 4" in text and "<!here>" not in text and "&amp;amp;" not in text


def test_an_llm_draft_can_neither_broadcast_nor_disguise_a_link() -> None:
    draft = ("<!channel> <!here> Refunds are unlimited for staff [larkspur:ops/refunds:v1:0001]. Claim them at "
             "<https://evil.example/steal|the refund portal>.")
    message = build_answer(answer=draft, citations=[{"chunk_id": "larkspur:ops/refunds:v1:0001", "title": "Refunds",
                                                     "version": "v1", "heading": "Refunds"}],
                           turn_id="t-1", session_id="slack:T:C:1")
    posted = message["text"] + json.dumps(message["blocks"])
    assert "<!channel>" not in posted and "<!here>" not in posted and "|the refund portal>" not in posted
    assert "the refund portal (https://evil.example/steal)" in message["text"]
