"""Documents from Slack: who may upload, what the upload modal asked for, and the hand-over.

The server decides what an owner may set: ownership comes from the access file (`owners`, per tenant
and group) for the user Slack verified, the document id from the modal (never from the file name), and
every audience group must be one the owner administers. The upload is handed over at once: the file is
fetched with the bot token, stored immutably and queued as an ingestion job (`Submitter.submit_bytes`);
from then on the job row is the truth and the worker (bot/slack/job_status.py) keeps the status message in
the owner's DM in step with it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import httpx
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.services import Services
from bot.settings import Settings
from bot.slack.constants import (
    ACTION_UPLOAD_DOC_ID,
    ACTION_UPLOAD_EFFECTIVE,
    ACTION_UPLOAD_FILE,
    ACTION_UPLOAD_GROUPS,
    ACTION_UPLOAD_POLICY,
    ACTION_UPLOAD_REPLACE,
    ACTION_UPLOAD_SENSITIVITY,
    BLOCK_UPLOAD_DOC_ID,
    BLOCK_UPLOAD_EFFECTIVE,
    BLOCK_UPLOAD_FILE,
    BLOCK_UPLOAD_GROUPS,
    BLOCK_UPLOAD_POLICY,
    BLOCK_UPLOAD_REPLACE,
    BLOCK_UPLOAD_SENSITIVITY,
)
from bot.slack.context import SlackServices
from bot.slack.document_views import LONG_ID_PREFIX, build_upload_status, document_option_value
from bot.slack.intake import first_delivery
from retrieval.ingest import DocumentOptions, IngestError, validate_doc_id
from retrieval.parse import SUPPORTED_SUFFIXES, ParseError, parse_bytes
from store.document_options import SENSITIVITIES, policy_id_problem, sensitivity_problem
from store.records import DocumentRecord

log = logging.getLogger(__name__)

DOWNLOAD_TIMEOUT_S = 60.0
# Slack's `filetype` for a file whose name has no usable extension.
FILETYPE_SUFFIXES = {"pdf": ".pdf", "markdown": ".md", "text": ".txt", "html": ".html", "docx": ".docx"}


# -- who may -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Owner:
    """A policy owner as the server sees them: their tenant, the groups they administer there, their own
    channels, and every channel the tenant's owners are reached at (the access file's `owners`)."""

    user_id: str
    tenant_id: str
    groups: frozenset[str]
    channels: tuple[str, ...] = ()
    owner_channels: frozenset[str] = frozenset()

    @property
    def channel(self) -> str | None:
        return self.channels[0] if self.channels else None

    def manages(self, doc: DocumentRecord) -> bool:
        """Every audience group of the document is one this owner administers, and when the document's
        owner channel belongs to a listed owner, that owner is this one (`everyone` is administered by
        most owners; the channel tells HR's leave policy from Finance's travel policy)."""
        if doc.tenant_id != self.tenant_id or not doc.groups or not set(doc.groups) <= self.groups:
            return False
        return not doc.owner or doc.owner not in self.owner_channels or doc.owner in self.channels


async def owner_of(services: SlackServices, user_id: str, *, team_id: str | None = None) -> Owner | None:
    """None for anyone who administers no group of their tenant (guests and other workspaces never do)."""
    scope = await services.identity.resolve(user_id, event_team_id=team_id)
    if scope.audience != "staff":
        return None
    access = services.core.access
    groups = access.owned_groups(user_id, scope.tenant_id) & access.tenants.get(scope.tenant_id, frozenset())
    if not groups:
        return None
    return Owner(user_id=user_id, tenant_id=scope.tenant_id, groups=frozenset(groups),
                 channels=access.channels_of_owner(user_id, scope.tenant_id),
                 owner_channels=access.owner_channels(scope.tenant_id))


async def managed_documents(core: Services, owner: Owner, query: str = "") -> list[DocumentRecord]:
    """The owner's documents (not withdrawn), optionally those whose id or title contains `query`."""
    needle = query.strip().lower()
    docs = await core.catalog.list_documents(tenant_id=owner.tenant_id, include_withdrawn=False)
    return [d for d in docs if owner.manages(d)
            and (not needle or needle in d.doc_id.lower() or needle in (d.title or "").lower())]


# -- what the modal asked for --------------------------------------------------------------------------


@dataclass(frozen=True)
class UploadForm:
    file_id: str | None
    file_name: str | None
    new_doc_id: str | None
    replace_doc_id: str | None
    groups: tuple[str, ...]
    policy_id: str | None
    sensitivity: str
    effective: str | None
    view_id: str


def parse_upload_form(view: Mapping[str, Any]) -> UploadForm:
    values: Mapping[str, Any] = (view.get("state") or {}).get("values") or {}

    def field_(block: str, action: str) -> Mapping[str, Any]:
        return (values.get(block) or {}).get(action) or {}

    def text(block: str, action: str) -> str | None:
        value = field_(block, action).get("value")
        return str(value).strip() or None if value else None

    def selected(block: str, action: str) -> str | None:
        option = field_(block, action).get("selected_option") or {}
        return str(option.get("value") or "") or None

    try:
        meta = json.loads(view.get("private_metadata") or "{}")
    except ValueError:
        meta = {}
    files = field_(BLOCK_UPLOAD_FILE, ACTION_UPLOAD_FILE).get("files") or []
    meta = meta if isinstance(meta, dict) else {}
    file_id = meta.get("file_id") or (files[0].get("id") if files else None)
    name = meta.get("file_name") or (files[0].get("name") if files else None)
    groups = tuple(sorted({str(o.get("value")) for o in field_(BLOCK_UPLOAD_GROUPS, ACTION_UPLOAD_GROUPS)
                           .get("selected_options") or [] if o.get("value")}))
    return UploadForm(
        file_id=str(file_id) if file_id else None, file_name=str(name) if name else None,
        new_doc_id=text(BLOCK_UPLOAD_DOC_ID, ACTION_UPLOAD_DOC_ID),
        replace_doc_id=selected(BLOCK_UPLOAD_REPLACE, ACTION_UPLOAD_REPLACE),
        groups=groups, policy_id=text(BLOCK_UPLOAD_POLICY, ACTION_UPLOAD_POLICY),
        sensitivity=selected(BLOCK_UPLOAD_SENSITIVITY, ACTION_UPLOAD_SENSITIVITY) or "internal",
        effective=field_(BLOCK_UPLOAD_EFFECTIVE, ACTION_UPLOAD_EFFECTIVE).get("selected_date") or None,
        view_id=str(view.get("id") or ""))


@dataclass(frozen=True)
class CheckedUpload:
    errors: dict[str, str] = field(default_factory=dict)  # block id → message, for response_action "errors"
    doc_id: str | None = None
    existing: DocumentRecord | None = None


async def _replaced_doc_id(core: Services, owner: Owner, value: str) -> str:
    """The document an option of the replace list stands for (a long id was sent as a short key)."""
    if not value.startswith(LONG_ID_PREFIX):
        return value
    matches = [d.doc_id for d in await managed_documents(core, owner) if document_option_value(d.doc_id) == value]
    return matches[0] if matches else value


async def check_upload(core: Services, owner: Owner | None, form: UploadForm) -> CheckedUpload:
    """What the server allows, whatever the modal offered. Errors name the modal block they belong to."""
    if owner is None:
        return CheckedUpload(errors={BLOCK_UPLOAD_GROUPS: "Only policy owners can add documents to Cairn."})
    errors: dict[str, str] = {}
    if not form.file_id:
        errors[BLOCK_UPLOAD_FILE] = "Attach the file to add."
    doc_id, existing = None, None
    if form.new_doc_id and form.replace_doc_id:
        errors[BLOCK_UPLOAD_DOC_ID] = "Enter a new id or choose a document to replace, not both."
    elif form.replace_doc_id:
        replaced = await _replaced_doc_id(core, owner, form.replace_doc_id)
        existing = await core.catalog.get_document(tenant_id=owner.tenant_id, doc_id=replaced)
        if existing is None or existing.status == "withdrawn" or not owner.manages(existing):
            errors[BLOCK_UPLOAD_REPLACE] = "You can only replace a current document whose groups you administer."
        else:
            doc_id = existing.doc_id
    elif form.new_doc_id:
        try:
            doc_id = validate_doc_id(form.new_doc_id)
        except IngestError as exc:
            errors[BLOCK_UPLOAD_DOC_ID] = str(exc)[:150]
        else:
            existing = await core.catalog.get_document(tenant_id=owner.tenant_id, doc_id=doc_id)
            if existing is not None and existing.status != "withdrawn":
                errors[BLOCK_UPLOAD_DOC_ID] = "That document already exists: choose it under “replace” instead."
            elif existing is not None and not owner.manages(existing):
                errors[BLOCK_UPLOAD_DOC_ID] = "That id belonged to a document whose groups you don't administer."
    else:
        errors[BLOCK_UPLOAD_DOC_ID] = "Enter a new document id, or choose a document to replace."
    refused = sorted(set(form.groups) - owner.groups)
    if not form.groups:
        errors[BLOCK_UPLOAD_GROUPS] = "Choose who may read it."
    elif refused:
        errors[BLOCK_UPLOAD_GROUPS] = f"You don't administer {', '.join(refused)}; choose among your groups."
    if sensitivity_problem(form.sensitivity):
        errors[BLOCK_UPLOAD_SENSITIVITY] = f"Choose one of {', '.join(SENSITIVITIES)}."
    problem = policy_id_problem(form.policy_id)
    if problem:
        errors[BLOCK_UPLOAD_POLICY] = problem[0].upper() + problem[1:] + "."
    return CheckedUpload(errors=errors, doc_id=None if errors else doc_id, existing=existing)


# -- fetching the file from Slack -------------------------------------------------------------------


class SlackFileError(Exception):
    """Why a shared file cannot be taken (shown to the owner as-is); no job is created."""


@dataclass(frozen=True)
class SlackFile:
    file_id: str
    name: str
    data: bytes


def _suffix(name: str, filetype: str | None) -> str | None:
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in SUPPORTED_SUFFIXES:
        return suffix
    return FILETYPE_SUFFIXES.get(filetype or "") if not suffix else None


def _may_carry_token(url: str, settings: Settings) -> bool:
    """The bot token goes to Slack only: its file hosts, or the Web API host configured (a proxy, the tests)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host and host == urlsplit(settings.slack_api_url).hostname:
        return True
    return parts.scheme == "https" and (host == "slack.com" or host.endswith(".slack.com"))


def _megabytes(size: int) -> str:
    return f"{size / 1_048_576:.1f} MB"


async def fetch_file(client: AsyncWebClient, settings: Settings, file_id: str) -> SlackFile:
    """files.info (type and size checked before anything is downloaded), then the download with the bot token."""
    try:
        info = (await client.files_info(file=file_id)).get("file") or {}
    except SlackApiError as exc:
        raise SlackFileError(f"I can't open that file in Slack ({exc.response.get('error')}). Share it with me "
                             "in our DM and try again.") from exc
    name = PurePosixPath(str(info.get("name") or info.get("title") or file_id)).name or file_id
    suffix = _suffix(name, info.get("filetype"))
    if suffix is None:
        raise SlackFileError("I can't read this type of file. Upload Markdown, text, HTML, Word (.docx) or a text-based PDF "
                             f"({', '.join(sorted(SUPPORTED_SUFFIXES))}).")
    if not PurePosixPath(name).suffix:
        name += suffix
    limit = settings.max_file_bytes
    size = int(info.get("size") or 0)
    if size > limit:
        raise SlackFileError(f"The file is {_megabytes(size)}, over the {_megabytes(limit)} limit: split it into "
                             "smaller documents and upload them separately.")
    url = str(info.get("url_private_download") or info.get("url_private") or "")
    if not url or not _may_carry_token(url, settings):
        raise SlackFileError("Slack didn't give me a download link for this file; share it again from your "
                             "computer (not as a link) and try again.")
    try:
        async with httpx.AsyncClient(timeout=DOWNLOAD_TIMEOUT_S, follow_redirects=True) as http:
            async with http.stream("GET", url, headers={"Authorization": f"Bearer {settings.slack_bot_token}"}) as resp:
                if resp.status_code != 200:
                    raise SlackFileError(f"I couldn't download the file from Slack (HTTP {resp.status_code}). "
                                         "Nothing was added; share it again in a minute.")
                kind = resp.headers.get("content-type", "")
                if kind.startswith("text/html") and suffix not in (".html", ".htm"):
                    raise SlackFileError("Slack sent a sign-in page instead of the file: the Cairn app needs the "
                                         "files:read permission. Nothing was added; tell the Cairn admins.")
                data = bytearray()
                async for piece in resp.aiter_bytes():
                    data.extend(piece)
                    if len(data) > limit:
                        raise SlackFileError(f"The file is over the {_megabytes(limit)} limit: split it into "
                                             "smaller documents and upload them separately.")
    except httpx.HTTPError as exc:
        raise SlackFileError(f"I couldn't download the file from Slack ({type(exc).__name__}). Nothing was "
                             "added; share it again in a minute.") from exc
    return SlackFile(file_id=file_id, name=name, data=bytes(data))


async def declared_supersedes(data: bytes, name: str) -> str | None:
    """The document a file's own front matter says it supersedes (publishing it would retire that one)."""
    try:
        parsed = await asyncio.to_thread(parse_bytes, data, filename=name)
    except (ParseError, ValueError):
        return None  # the job reports parse problems with the parser's own words
    value = parsed.metadata.get("supersedes")
    return str(value).strip() or None if value else None


# -- the hand-over -----------------------------------------------------------------------------------


async def open_dm(client: AsyncWebClient, user_id: str) -> str:
    return str((await client.conversations_open(users=user_id))["channel"]["id"])


async def hand_over_upload(services: SlackServices, client: AsyncWebClient, *, owner: Owner, form: UploadForm,
                           checked: CheckedUpload) -> str | None:
    """Fetch, store and queue; returns the job id (None when nothing was queued). One status message in
    the owner's DM says what happened; once a job exists only the worker updates it (bot/slack/job_status.py),
    so this never races with it."""
    core = services.core
    assert form.file_id and checked.doc_id
    if not await first_delivery(core, f"upload:{form.view_id or form.file_id}"):
        return None  # the same modal submitted twice
    doc_id = checked.doc_id
    channel = await open_dm(client, owner.user_id)
    label = form.file_name or "your file"
    status = await client.chat_postMessage(channel=channel, **build_upload_status(
        file_name=label, doc_id=doc_id, text="fetching it from Slack…", icon=":hourglass_flowing_sand:"))
    ts = str(status["ts"])

    async def say(text: str, icon: str = ":x:") -> None:
        await client.chat_update(channel=channel, ts=ts, **build_upload_status(
            file_name=label, doc_id=doc_id, text=text, icon=icon))

    try:
        file = await fetch_file(client, services.settings, form.file_id)
        label = file.name
        target = await declared_supersedes(file.data, file.name)
        if target and target != doc_id:
            other = await core.catalog.get_document(tenant_id=owner.tenant_id, doc_id=target)
            if other is not None and not owner.manages(other):
                raise SlackFileError(f"its front matter says it supersedes `{target}`, which you don't administer. "
                                     "Remove the `supersedes` line, or ask that document's owner.")
        await say("received; queued for processing.", icon=":inbox_tray:")
        existing = checked.existing
        options = DocumentOptions(
            tenant_id=owner.tenant_id, groups=tuple(form.groups),
            policy_id=form.policy_id or (existing.policy_id if existing else None),
            # Escalations about the document go to its owner's channel: keep the one it has, else the uploader's.
            owner=(existing.owner if existing and existing.owner else owner.channel),
            sensitivity=form.sensitivity, effective=form.effective)
        outcome = await core.ingestor.submit_bytes(
            file.data, filename=file.name, doc_id=doc_id, options=options, requested_by=owner.user_id,
            notify={"channel": channel, "ts": ts}, dedupe_key=f"slack-file:{form.file_id}:{form.view_id}")
    except SlackFileError as exc:
        await say(f"not added. {exc}")
        return None
    except Exception:
        await say("not added: something went wrong on my side. Please try again; if it keeps happening, tell "
                  "the Cairn admins.", icon=":warning:")
        raise
    if outcome.status == "rejected":
        await say(f"not added. {outcome.message}")
    elif outcome.status == "unchanged":
        await say(f"nothing changed: the current version {outcome.version} already has this content.",
                  icon=":white_check_mark:")
    return outcome.job_id
