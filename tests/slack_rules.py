"""What the real Slack enforces, for tests/fake_slack.py: the scopes each Web API method needs (the app
gets the ones manifest.yml asks for), Block Kit's limits (`invalid_blocks`), and how Slack encodes the
text it sends (`&amp;`, `&lt;`, `&gt;`, with mentions and links as control sequences)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

MANIFEST = Path(__file__).resolve().parents[1] / "manifest.yml"

# Any one of these scopes lets the bot call the method (conversation types each have their own).
METHOD_SCOPES: dict[str, tuple[str, ...]] = {
    "chat.postMessage": ("chat:write",), "chat.update": ("chat:write",), "chat.postEphemeral": ("chat:write",),
    "conversations.replies": ("channels:history", "groups:history", "im:history", "mpim:history"),
    "conversations.history": ("channels:history", "groups:history", "im:history", "mpim:history"),
    "conversations.open": ("im:write", "mpim:write"),
    "conversations.info": ("channels:read", "groups:read", "im:read", "mpim:read"),
    "conversations.members": ("channels:read", "groups:read", "im:read", "mpim:read"),
    "users.info": ("users:read",), "usergroups.list": ("usergroups:read",),
    "usergroups.users.list": ("usergroups:read",), "reactions.add": ("reactions:write",),
    "files.info": ("files:read",), "files.getUploadURLExternal": ("files:write",),
    "files.completeUploadExternal": ("files:write",),
    "conversations.join": ("channels:join",),
}


def manifest_scopes() -> frozenset[str]:
    manifest = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    return frozenset(manifest["oauth_config"]["scopes"]["bot"])


def missing_scope(method: str, granted: frozenset[str]) -> dict[str, Any] | None:
    needed = METHOD_SCOPES.get(method)
    if needed is None or set(needed) & granted:
        return None
    return {"ok": False, "error": "missing_scope", "needed": ",".join(needed), "provided": ",".join(sorted(granted))}


# -- Block Kit ------------------------------------------------------------------------------------------

MESSAGE_BLOCKS, SURFACE_BLOCKS = 50, 100
LIMITS = {"section_text": 3000, "field_text": 2000, "fields": 10, "header": 150, "context_elements": 10,
          "button_text": 75, "button_value": 2000, "option_text": 75, "option_value": 150, "actions_elements": 25,
          "block_id": 255, "action_id": 255, "confirm_text": 300, "message_text": 40000}


def _text(obj: Any) -> str:
    return str(obj.get("text") or "") if isinstance(obj, dict) else ""


def _element_problems(element: dict[str, Any], where: str) -> list[str]:
    problems = []
    if element.get("type") == "button":
        if len(_text(element.get("text"))) > LIMITS["button_text"]:
            problems.append(f"{where}: button text over {LIMITS['button_text']}")
        if len(str(element.get("value") or "")) > LIMITS["button_value"]:
            problems.append(f"{where}: button value over {LIMITS['button_value']}")
        if len(_text((element.get("confirm") or {}).get("text"))) > LIMITS["confirm_text"]:
            problems.append(f"{where}: confirm text over {LIMITS['confirm_text']}")
    if len(str(element.get("action_id") or "")) > LIMITS["action_id"]:
        problems.append(f"{where}: action_id over {LIMITS['action_id']}")
    for option in [*(element.get("options") or []), *([element["initial_option"]] if element.get("initial_option") else [])]:
        problems.extend(option_problems(option, where))
    return problems


def option_problems(option: dict[str, Any], where: str = "option") -> list[str]:
    problems = []
    if len(_text(option.get("text"))) > LIMITS["option_text"]:
        problems.append(f"{where}: option text over {LIMITS['option_text']}")
    if len(str(option.get("value") or "")) > LIMITS["option_value"]:
        problems.append(f"{where}: option value over {LIMITS['option_value']}")
    return problems


def block_problems(blocks: list[dict[str, Any]], *, max_blocks: int = MESSAGE_BLOCKS) -> list[str]:
    """Every Block Kit limit these blocks break (empty: Slack would accept them)."""
    problems = [f"{len(blocks)} blocks, over {max_blocks}"] if len(blocks) > max_blocks else []
    for n, block in enumerate(blocks):
        where, kind = f"block {n}", block.get("type")
        if len(str(block.get("block_id") or "")) > LIMITS["block_id"]:
            problems.append(f"{where}: block_id over {LIMITS['block_id']}")
        if kind == "section":
            if len(_text(block.get("text"))) > LIMITS["section_text"]:
                problems.append(f"{where}: section text over {LIMITS['section_text']}")
            fields = block.get("fields") or []
            if len(fields) > LIMITS["fields"] or any(len(_text(f)) > LIMITS["field_text"] for f in fields):
                problems.append(f"{where}: fields over the limits")
            if not block.get("text") and not fields:
                problems.append(f"{where}: a section needs text or fields")
            if block.get("accessory"):
                problems.extend(_element_problems(block["accessory"], where))
        elif kind == "header" and len(_text(block.get("text"))) > LIMITS["header"]:
            problems.append(f"{where}: header over {LIMITS['header']}")
        elif kind == "context" and len(block.get("elements") or []) > LIMITS["context_elements"]:
            problems.append(f"{where}: context over {LIMITS['context_elements']} elements")
        elif kind == "actions":
            elements = block.get("elements") or []
            if len(elements) > LIMITS["actions_elements"]:
                problems.append(f"{where}: actions over {LIMITS['actions_elements']} elements")
            for element in elements:
                problems.extend(_element_problems(element, where))
        elif kind == "input":
            problems.extend(_element_problems(block.get("element") or {}, where))
    return problems


def message_problems(params: dict[str, Any]) -> dict[str, Any] | None:
    """Slack's refusal of a chat.postMessage / chat.update / chat.postEphemeral, or None."""
    blocks = params.get("blocks")
    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
    if len(str(params.get("text") or "")) > LIMITS["message_text"]:
        return {"ok": False, "error": "msg_too_long"}
    if not blocks and not params.get("text"):
        return {"ok": False, "error": "no_text"}
    problems = block_problems(blocks or [])
    return {"ok": False, "error": "invalid_blocks", "errors": problems} if problems else None


def view_problems(view: dict[str, Any]) -> dict[str, Any] | None:
    problems = block_problems(view.get("blocks") or [], max_blocks=SURFACE_BLOCKS)
    return {"ok": False, "error": "invalid_blocks", "errors": problems} if problems else None


# -- text as Slack sends it -------------------------------------------------------------------------------

_SEQUENCE = re.compile(r"<(?:[@#!][^<>\s]+|(?:https?|mailto):[^<>\s]+)>")


def slack_encoded(typed: str) -> str:
    """What Slack delivers for a message: `&`, `<`, `>` escaped, except the control sequences its client
    made from the person's mentions and links (written here in Slack's own syntax)."""
    out, last = [], 0
    for m in _SEQUENCE.finditer(typed):
        out.append(typed[last:m.start()].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
        out.append(m.group(0).replace("&", "&amp;"))
        last = m.end()
    out.append(typed[last:].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
    return "".join(out)
