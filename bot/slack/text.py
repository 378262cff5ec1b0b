"""The one place Cairn handles Slack's text format: decode once on the way in, plain text inside, encode
once on the way out (blocks and the top-level `text` alike).

Slack sends message text already encoded: `&amp;`, `&lt;`, `&gt;`, and control sequences in angle
brackets: `<@U123>` (a user), `<!channel>` / `<!here>` / `<!everyone>` (broadcasts), `<#C123|name>`
(a channel), `<https://…|label>` (a link). Inside Cairn text is plain: "R&D", never "R&amp;D".

Two ways out:
- `encode(text)` for anything from outside Cairn's own words: documents, askers' questions and
  follow-ups, an LLM's draft. It can never ping anyone or hide a link: broadcasts and user mentions
  become inert words ("@channel", "@U123"), a link becomes its URL (a label never hides the target),
  and `&`, `<`, `>` are escaped so nothing else can become a control sequence.
- `encode_relayed(text)` for a person handling an escalation, whose reply is relayed: their user
  mentions and links stay live (they wrote them), broadcasts never do.

`decode(text, keep_people=True)` keeps a person's mentions and links in Slack's own form inside the
plain text, so `encode_relayed` can pass them through.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"<([^<>\n]*)>")
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))
_USER = re.compile(r"^@([UW][A-Z0-9]+)(?:\|([^|]*))?$")
_BROADCAST = re.compile(r"^!(channel|here|everyone)(?:\|[^|]*)?$")
_SPECIAL = re.compile(r"^!([a-z]+)(?:\^[^|]*)?(?:\|(.*))?$")  # <!subteam^S123|@team>, <!date^…|fallback>
_CHANNEL = re.compile(r"^#([CG][A-Z0-9]+)(?:\|([^|]*))?$")
_LINK = re.compile(r"^((?:https?|mailto):[^|\s]+)(?:\|(.*))?$", re.IGNORECASE)
# In plain text that came from outside, the forms that would become live once posted.
_LIVE_LINK = re.compile(r"<((?:https?|mailto):[^|<>\s]+)(?:\|([^<>]*))?>", re.IGNORECASE)
_LIVE_MENTION = re.compile(r"<(?:@([UW][A-Z0-9]+)|!(channel|here|everyone)|!subteam\^[A-Z0-9]+)(?:\|([^<>]*))?>")
_MARKDOWN_LINK = re.compile(r"\[([^\[\]\n]+)\]\(((?:https?|mailto):[^()\s]+)\)", re.IGNORECASE)
_KEPT = re.compile(r"<(?:@[UW][A-Z0-9]+(?:\|[^<>|]*)?|(?:https?|mailto):[^<>|\s]+(?:\|[^<>]*)?)>", re.IGNORECASE)


def _unescape(text: str) -> str:
    for entity, char in _ENTITIES:
        text = text.replace(entity, char)
    return text


def escape(text: str) -> str:
    """Only the three characters Slack asks to be escaped; use `encode` for text from outside."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _plain_sequence(inner: str, *, keep_people: bool) -> str:
    """One control sequence as plain text (or, for a kept person's mention or link, as itself)."""
    if m := _USER.match(inner):
        return f"<{inner}>" if keep_people else f"@{m.group(2) or m.group(1)}"
    if m := _BROADCAST.match(inner):
        return f"@{m.group(1)}"
    if m := _CHANNEL.match(inner):
        return f"#{m.group(2) or m.group(1)}"
    if m := _LINK.match(inner):
        url, label = _unescape(m.group(1)), _unescape(m.group(2) or "")
        if keep_people:
            return f"<{url}|{label}>" if label and label != url else f"<{url}>"
        return url if not label or label == url else f"{label} ({url})"
    if m := _SPECIAL.match(inner):
        return _unescape(m.group(2) or f"@{m.group(1)}")
    return _unescape(inner)


def decode(text: str, *, keep_people: bool = False) -> str:
    """Slack's encoded message text → plain text. `keep_people`: an escalation handler's reply, whose
    user mentions and links stay in Slack's form (see `encode_relayed`)."""
    out: list[str] = []
    last = 0
    for m in _CONTROL.finditer(text):
        out.append(_unescape(text[last:m.start()]))
        out.append(_plain_sequence(m.group(1), keep_people=keep_people))
        last = m.end()
    out.append(_unescape(text[last:]))
    return "".join(out)


def _inert(text: str) -> str:
    """Plain text from outside with every would-be control sequence made harmless and visible."""
    text = _MARKDOWN_LINK.sub(lambda m: m.group(2) if m.group(1).strip() == m.group(2) else
                              f"{m.group(1)} ({m.group(2)})", text)
    text = _LIVE_LINK.sub(lambda m: m.group(1) if not m.group(2) or m.group(2) == m.group(1) else
                          f"{m.group(2)} ({m.group(1)})", text)
    return _LIVE_MENTION.sub(lambda m: "@" + (m.group(3) or m.group(1) or m.group(2) or "team").lstrip("@"), text)


def encode(text: str) -> str:
    """Plain text from outside Cairn → Slack text that pings nobody and hides no link."""
    return escape(_inert(text))


def encode_relayed(text: str) -> str:
    """A person's reply → Slack text: their user mentions and links stay live, nothing else does."""
    out: list[str] = []
    last = 0
    for m in _KEPT.finditer(text):
        out.append(encode(text[last:m.start()]))
        out.append(m.group(0).replace("&", "&amp;"))  # decode() un-escaped its URL and label
        last = m.end()
    out.append(encode(text[last:]))
    return "".join(out)
