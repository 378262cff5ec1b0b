"""The HTTP API's wire models (camelCase on the wire) and its one error type."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

MAX_QUERY_CHARS = 2000
DEFAULT_TOP_K = 8


class RetrieveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: StrictStr = Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=r"\S",
                             description="The question, as the user asked it.")
    topK: StrictInt = Field(default=DEFAULT_TOP_K, ge=1,
                            description="How many passages at most; values above the server's cap are capped.")


class Source(BaseModel):
    documentId: str
    version: str
    page: int | None
    title: str
    path: str
    heading: str


class Policy(BaseModel):
    id: str | None
    revision: str


class RetrievedPassage(BaseModel):
    chunkId: str
    text: str
    score: float
    source: Source
    policy: Policy


class RetrieveResponse(BaseModel):
    requestId: str
    topK: int = Field(description="The topK used after capping.")
    gate: Literal["below_score_floor"] | None = Field(
        description="Set when the passages do not clear the answerability floor: do not answer from them.")
    passages: list[RetrievedPassage]


class ErrorBody(BaseModel):
    error: str
    message: str
    requestId: str
    detail: list[dict[str, Any]] | None = None


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: Literal["ready", "not_ready"]
    checks: dict[str, str]
    paused: list[str]
    slack: list[str] = Field(default_factory=list, description="Problems the Slack preflight found at start "
                                                               "(token, scopes, channels); they do not make "
                                                               "the server unready")


class ApiError(Exception):
    def __init__(self, status: int, error: str, message: str, *, headers: dict[str, str] | None = None,
                 detail: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.status, self.error, self.message, self.headers, self.detail = status, error, message, headers, detail


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": ErrorBody} for code in codes}
