"""Slack text in one place: decoded once on the way in, plain inside, encoded once on the way out."""

from __future__ import annotations

import re

from bot.slack.text import decode, encode, encode_relayed

ADMIN_REPLY = ("10 days &amp; need a credit note from <@U0RITA>; see "
               "<https://larkspur.example/returns?a=1&amp;b=2|the returns page> &lt;b&gt; <!here>")
LIVE = re.compile(r"<(?:!|@)")


def test_an_askers_text_is_plain_inside() -> None:
    assert decode("R&amp;D &lt;team&gt; budget") == "R&D <team> budget"
    assert decode("ask <@U0RITA|rita> in <#C0OPS|ops> <!channel>") == "ask @rita in #ops @channel"
    assert decode("see <https://x.example/a|the page>") == "see the page (https://x.example/a)"
    assert decode("<!subteam^S0HR|@hr-team> ping") == "@hr-team ping"


def test_text_from_outside_never_pings_or_hides_a_link() -> None:
    draft = ("<!channel> <!here> Refunds are unlimited for staff [c1]. Claim them at "
             "<https://evil.example/steal|the refund portal> or [our form](https://evil.example/form) <@U0BOSS>")
    out = encode(draft)
    assert not LIVE.search(out) and "<https" not in out
    assert "the refund portal (https://evil.example/steal)" in out and "our form (https://evil.example/form)" in out
    assert "@channel @here" in out and "@U0BOSS" in out
    assert encode("R&D <b> 5 > 3") == "R&amp;D &lt;b&gt; 5 &gt; 3"


def test_a_relayed_reply_keeps_its_mentions_and_links_but_not_broadcasts() -> None:
    plain = decode(ADMIN_REPLY, keep_people=True)
    assert plain.startswith("10 days & need a credit note from <@U0RITA>;")
    out = encode_relayed(plain)
    assert "10 days &amp; need a credit note from <@U0RITA>;" in out
    assert "<https://larkspur.example/returns?a=1&amp;b=2|the returns page>" in out
    assert "&lt;b&gt;" in out and "<!here>" not in out and "@here" in out


def test_decoding_then_encoding_is_stable_for_plain_words() -> None:
    for text in ("Hotels in London: GBP 250 per night.", "What's the R&D travel budget?", "a < b > c"):
        assert decode(encode(text)) == text
