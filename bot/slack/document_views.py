"""Block Kit builders for documents from Slack: the upload modal, the status message that follows an
upload's job, and a policy owner's part of App Home. Pure, like bot/slack/views.py: data in, dicts out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from bot.slack.constants import (
    ACTION_HOME_UPLOAD,
    ACTION_OFFER_UPLOAD,
    ACTION_UPLOAD_DOC_ID,
    ACTION_UPLOAD_EFFECTIVE,
    ACTION_UPLOAD_FILE,
    ACTION_UPLOAD_GROUPS,
    ACTION_UPLOAD_POLICY,
    ACTION_UPLOAD_REPLACE,
    ACTION_UPLOAD_SENSITIVITY,
    ACTION_WITHDRAW,
    BLOCK_HOME_DOCUMENTS,
    BLOCK_HOME_JOBS,
    BLOCK_UPLOAD_DOC_ID,
    BLOCK_UPLOAD_EFFECTIVE,
    BLOCK_UPLOAD_FILE,
    BLOCK_UPLOAD_GROUPS,
    BLOCK_UPLOAD_POLICY,
    BLOCK_UPLOAD_REPLACE,
    BLOCK_UPLOAD_SENSITIVITY,
    CALLBACK_UPLOAD_MODAL,
    SLASH_COMMAND,
)
from bot.slack.text import encode
from bot.slack.views import SECTION_LIMIT, Message, format_age
from retrieval.parse import SUPPORTED_SUFFIXES
from store.document_options import SENSITIVITIES
from store.records import DocumentRecord, JobRecord

OWNER_ONLY_TEXT = ("Only policy owners can add, replace or withdraw documents in Cairn, and you aren't listed as "
                   "one. If a document needs changing, send it to its owner; you can still ask me questions here.")
UPLOAD_SUFFIXES = tuple(sorted(suffix.lstrip(".") for suffix in SUPPORTED_SUFFIXES))  # what the parser reads
STEPS = ("parsing", "embedding", "indexing", "published")
OPTION_TEXT_LIMIT = 75  # Slack's limit for an option's text
OPTION_VALUE_LIMIT = 150  # and for its value
LONG_ID_PREFIX = "doc#"  # never the start of a valid document id


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}


def _section(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_LIMIT]}, **extra}


def _message(text: str) -> Message:
    return {"text": text, "blocks": [_section(text)]}


# -- a file shared in the DM ----------------------------------------------------------------------


def build_file_offer(*, file_name: str, file_id: str) -> Message:
    text = (f"I got *{encode(file_name)}*. Press *Add to Cairn…* to choose its document id (new, or the "
            "document it replaces), who may read it, and when it takes effect.")
    return {"text": text, "blocks": [_section(text), {"type": "actions", "elements": [
        {"type": "button", "text": _plain("Add to Cairn…"), "action_id": ACTION_OFFER_UPLOAD, "style": "primary",
         "value": json.dumps({"id": file_id, "name": file_name[:300]})}]}]}


def build_owner_only() -> Message:
    return _message(OWNER_ONLY_TEXT)


def build_notice_modal(*, title: str, text: str) -> dict[str, Any]:
    """A modal that only says something (for a shortcut pressed by someone who may not use it)."""
    return {"type": "modal", "title": _plain(title[:24]), "close": _plain("Close"), "blocks": [_section(text)]}


# -- the upload modal -------------------------------------------------------------------------------


def _option(text: str, value: str) -> dict[str, Any]:
    return {"text": _plain(text[:OPTION_TEXT_LIMIT]), "value": value}


def document_option_value(doc_id: str) -> str:
    """An option's value may hold 150 characters, and one longer value makes Slack refuse the whole list:
    a long document id is sent as a short key (bot/slack/uploads.py maps it back)."""
    if len(doc_id) <= OPTION_VALUE_LIMIT and not doc_id.startswith(LONG_ID_PREFIX):
        return doc_id
    return LONG_ID_PREFIX + hashlib.sha256(doc_id.encode()).hexdigest()[:32]


def document_option(doc: DocumentRecord) -> dict[str, Any]:
    """One entry of the "replace an existing document" list: its title and id."""
    label = f"{doc.title} ({doc.doc_id})" if doc.title and doc.title != doc.doc_id else doc.doc_id
    return _option(label, document_option_value(doc.doc_id))


def _input(block_id: str, label: str, element: dict[str, Any], *, optional: bool = False,
           hint: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "input", "block_id": block_id, "label": _plain(label), "element": element,
                             "optional": optional}
    if hint:
        block["hint"] = _plain(hint)
    return block


def build_upload_modal(*, groups: Sequence[str], file_name: str | None, private_metadata: Mapping[str, Any]
                       ) -> dict[str, Any]:
    """What the owner decides: identity (a new id, or the document it replaces), audience (only groups they
    administer are offered; the server checks again), policy id, sensitivity and effective date. Without a
    file already shared, the modal asks for one."""
    blocks: list[dict[str, Any]] = []
    if file_name is None:
        blocks.append(_input(BLOCK_UPLOAD_FILE, "File", {
            "type": "file_input", "action_id": ACTION_UPLOAD_FILE, "max_files": 1,
            "filetypes": list(UPLOAD_SUFFIXES)}, hint="Markdown, text, HTML or a text-based PDF"))
    else:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": f"File: *{encode(file_name)}*"}]})
    blocks += [
        _input(BLOCK_UPLOAD_DOC_ID, "New document id", {
            "type": "plain_text_input", "action_id": ACTION_UPLOAD_DOC_ID, "max_length": 200,
            "placeholder": _plain("e.g. finance/travel-2027")}, optional=True,
            hint="Letters, digits, '-', '_', '.' and '/'. Leave empty to replace an existing document."),
        _input(BLOCK_UPLOAD_REPLACE, "…or replace an existing document", {
            "type": "external_select", "action_id": ACTION_UPLOAD_REPLACE, "min_query_length": 0,
            "placeholder": _plain("Search your documents")}, optional=True,
            hint="The current version keeps answering until the new one is published."),
        _input(BLOCK_UPLOAD_GROUPS, "Who may read it", {
            "type": "multi_static_select", "action_id": ACTION_UPLOAD_GROUPS,
            "placeholder": _plain("Audience groups"), "options": [_option(g, g) for g in groups]},
            hint="Only the groups you administer are listed."),
        _input(BLOCK_UPLOAD_POLICY, "Policy id", {
            "type": "plain_text_input", "action_id": ACTION_UPLOAD_POLICY, "max_length": 64,
            "placeholder": _plain("e.g. FIN-TRV")}, optional=True),
        _input(BLOCK_UPLOAD_SENSITIVITY, "Sensitivity", {
            "type": "static_select", "action_id": ACTION_UPLOAD_SENSITIVITY,
            "options": [_option(s, s) for s in SENSITIVITIES], "initial_option": _option("internal", "internal")}),
        _input(BLOCK_UPLOAD_EFFECTIVE, "Effective date", {
            "type": "datepicker", "action_id": ACTION_UPLOAD_EFFECTIVE}, optional=True,
            hint="Empty: as soon as it is processed. A future date publishes it on that day."),
    ]
    return {"type": "modal", "callback_id": CALLBACK_UPLOAD_MODAL, "title": _plain("Add a policy document"),
            "submit": _plain("Upload"), "close": _plain("Cancel"), "blocks": blocks,
            "private_metadata": json.dumps(dict(private_metadata))}


# -- the status message in the owner's DM ------------------------------------------------------------


def build_upload_status(*, file_name: str, doc_id: str | None, text: str, icon: str = ":inbox_tray:") -> Message:
    """Before a job exists (fetching, queued) or when none will (a refused or unreadable file)."""
    target = f" → `{encode(doc_id)}`" if doc_id else ""
    return _message(f"{icon} *{encode(file_name)}*{target}: {text}")


def _progress(state: str) -> str:
    if state not in STEPS:
        return ""
    at = STEPS.index(state)
    marks = [f"✓ {s}" if i < at or state == "published" else f"*{s}…*" if i == at else s
             for i, s in enumerate(STEPS)]
    return " → ".join(marks)


def build_job_status(job: JobRecord, *, max_attempts: int) -> Message:
    """The one status message of an upload, rendered from its job row alone, so whoever renders it (the
    worker at each step, or a catch-up after a restart) shows the same thing for the same state."""
    file_name, doc = encode(job.source_path), f"`{encode(job.doc_id)}`"
    version = f" {encode(job.version)}" if job.version else ""
    head = f"*{file_name}* → {doc}"
    error = encode(job.last_error or "unknown error")
    if job.state == "queued":
        text = f":inbox_tray: {head}: queued; processing starts in a few seconds."
    elif job.state in ("parsing", "embedding", "indexing"):
        text = f":hourglass_flowing_sand: {head}{version}: {_progress(job.state)}"
    elif job.state == "published" and job.outcome == "scheduled":
        effective = str(job.options.get("effective") or "its effective date")
        text = (f":calendar: {head}{version} is indexed and becomes current on {encode(effective)}. "
                "Until then the current version (if any) keeps answering.")
    elif job.state == "published":
        text = (f":white_check_mark: {head}{version} is published: {_progress('published')}. "
                "Questions are answered from it now.")
    elif job.state == "unchanged":
        text = f":white_check_mark: {head}: nothing changed; the current version{version} already has this content."
    elif job.state == "failed":
        text = (f":warning: {head}: attempt {job.attempts} of {max_attempts} failed ({error}). Cairn retries "
                "automatically; nothing is published until it succeeds and the current version (if any) keeps "
                "answering.")
    elif job.state == "cancelled":
        reason = encode(job.last_error or "cancelled")
        text = (f":no_entry_sign: {head}: cancelled: {reason}. Nothing from this upload was published; upload "
                "it again to bring the document back.")
    elif job.state == "dead" and job.attempts < max_attempts:  # a problem with the file: retrying won't help
        text = (f":x: {head} failed: {error}\n*What to do*: fix the file and upload it again. Nothing was "
                "published; the current version (if any) keeps answering.")
    elif job.state == "dead":
        text = (f":x: {head} failed after {job.attempts} attempts ({error}).\n*What to do*: upload it again "
                "later, or tell the Cairn admins. Nothing was published; the current version (if any) keeps "
                "answering.")
    else:
        text = f"{head}: {encode(job.state)}"
    return _message(text)


# -- App Home: a policy owner's documents and uploads ----------------------------------------------


JOB_ICONS = {"queued": ":inbox_tray:", "parsing": ":hourglass_flowing_sand:", "embedding": ":hourglass_flowing_sand:",
             "indexing": ":hourglass_flowing_sand:", "published": ":white_check_mark:",
             "unchanged": ":white_check_mark:", "failed": ":warning:", "dead": ":x:", "withdrawn": ":wastebasket:",
             "cancelled": ":no_entry_sign:"}


def job_line(job: JobRecord, now: datetime) -> str:
    state = job.outcome if job.state == "published" and job.outcome else job.state
    version = f" {encode(job.version)}" if job.version else ""
    error = (f" — {encode(job.last_error)[:200]}" if job.state in ("failed", "dead", "cancelled") and job.last_error
             else "")
    return (f"{JOB_ICONS.get(job.state, '')} `{encode(job.doc_id)}`{version} · {encode(state)} · "
            f"{encode(job.source_path)} · {format_age(job.created_at, now)} ago{error}")


def _withdraw_button(doc: DocumentRecord) -> dict[str, Any]:
    title = encode(doc.title or doc.doc_id)
    return {"type": "button", "text": _plain("Withdraw"), "action_id": ACTION_WITHDRAW, "value": doc.doc_id,
            "style": "danger", "confirm": {
                "title": _plain("Withdraw this document?"),
                "text": {"type": "mrkdwn", "text": (
                    f"Cairn stops answering from *{title}* at once, then removes its text and vectors. "
                    "To bring it back, upload it again.")[:300]},
                "confirm": _plain("Withdraw"), "deny": _plain("Cancel"), "style": "danger"}}


def build_owner_home(*, jobs: Sequence[JobRecord], documents: Sequence[DocumentRecord],
                     now: datetime) -> list[dict[str, Any]]:
    """Home blocks for a policy owner: the documents they administer (each with Withdraw) and their recent
    uploads — a snapshot of the database when the tab was opened."""
    blocks: list[dict[str, Any]] = [
        {"type": "divider"},
        {"type": "header", "text": _plain(f"Your documents ({len(documents)})")},
        {"type": "actions", "elements": [{"type": "button", "text": _plain("Add a document…"),
                                          "action_id": ACTION_HOME_UPLOAD, "value": "home", "style": "primary"}]},
    ]
    if not documents:
        blocks.append(_section("No documents you administer yet.", block_id=BLOCK_HOME_DOCUMENTS))
    for doc in documents[:30]:
        version = f" · {encode(doc.current_version)}" if doc.current_version else ""
        pending = f" · {encode(doc.pending_version)} pending" if doc.pending_version else ""
        line = (f"*{encode(doc.title or doc.doc_id)}* `{encode(doc.doc_id)}`{version}{pending} · {encode(doc.status)}"
                f"\nfor {encode(', '.join(doc.groups) or '-')} · {encode(doc.sensitivity)}")
        blocks.append(_section(line, accessory=_withdraw_button(doc)))
    if len(documents) > 30:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn",
                                                        "text": f"…and {len(documents) - 30} more (`cairn docs`)"}]})
    blocks.append({"type": "header", "text": _plain("Your recent uploads")})
    lines = [job_line(j, now) for j in jobs[:10]]
    blocks.append(_section("\n".join(lines) if lines else
                           f"None yet. Send me a file in our DM, or use `{SLASH_COMMAND} upload`.",
                           block_id=BLOCK_HOME_JOBS))
    return blocks
