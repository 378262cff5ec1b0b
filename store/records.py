"""Typed records the store hands out. Plain frozen dataclasses: no behaviour, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Scope:
    """Who is asking, as the server resolved it. Never built from message text."""

    user_id: str
    tenant_id: str
    groups: frozenset[str]
    audience: str = "staff"  # "staff" | "customer"
    is_admin: bool = False
    display_name: str | None = None


@dataclass(frozen=True)
class DocumentRecord:
    tenant_id: str
    doc_id: str
    title: str
    policy_id: str | None
    owner: str | None
    sensitivity: str
    groups: tuple[str, ...]
    acl_version: int
    current_version: str | None
    status: str
    superseded_by: str | None
    supersedes: str | None
    chunk_count: int = 0
    effective_at: str | None = None
    expires_at: str | None = None
    pending_version: str | None = None
    updated_at: str | None = None


@dataclass(frozen=True)
class VersionRecord:
    tenant_id: str
    doc_id: str
    version: str
    seq: int
    content_hash: str
    source_path: str
    raw_path: str
    lang: str
    state: str
    chunk_count: int
    effective_at: str | None
    expires_at: str | None
    created_at: str
    published_at: str | None


@dataclass(frozen=True)
class ChunkRecord:
    """An eligible chunk with what a citation needs."""

    chunk_id: str
    point_id: str
    tenant_id: str
    doc_id: str
    version: str
    seq: int
    text: str
    heading: str
    page: int | None
    source_path: str
    lang: str
    title: str
    owner: str | None
    policy_id: str | None
    acl_version: int
    effective_at: str | None = None


@dataclass(frozen=True)
class JobRecord:
    job_id: str
    tenant_id: str
    doc_id: str
    source_path: str
    raw_path: str
    content_hash: str
    options: dict[str, object]
    state: str
    attempts: int
    last_error: str | None
    version: str | None
    outcome: str | None
    requested_by: str | None
    notify: dict[str, object] | None
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class TurnRecord:
    turn_id: str
    session_id: str
    user_id: str
    tenant_id: str
    question: str
    route: str | None
    reason: str | None
    answer: str | None
    top_score: float | None
    passages: list[dict[str, object]]
    trace: dict[str, object]
    answerer: str | None
    model: str | None
    prompt_version: str | None
    validation: str | None
    timings: dict[str, float]
    created_at: str


@dataclass(frozen=True)
class EscalationRecord:
    escalation_id: str
    session_id: str
    turn_id: str
    tenant_id: str
    user_id: str
    question: str
    reason: str
    transcript: str
    passages: list[dict[str, object]]
    top_score: float | None
    status: str
    channel: str | None
    thread_ts: str | None
    claimed_by: str | None
    resolved_by: str | None
    kind: str | None
    topic: str | None
    label_attempts: int
    first_reply_at: str | None
    reminded_at: str | None
    deadline_at: str | None
    created_at: str
    closed_at: str | None
    extra: dict[str, object] = field(default_factory=dict)
