"""One line of what an installer checks first (`cairn doctor`, `/readyz`, the log at `cairn serve`
start): shared by the surfaces that run checks, owned by none of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail}
