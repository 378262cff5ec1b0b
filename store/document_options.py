"""What a document's options may be, checked in one place for every way a document arrives: the CLI's
flags, the Slack upload modal, and (through the ingestor) a file's own front matter."""

from __future__ import annotations

SENSITIVITIES = ("public", "internal", "confidential")
POLICY_ID_MAX = 64
_POLICY_ID_EXTRA = "-_./"


def sensitivity_problem(value: str | None) -> str | None:
    """None when `value` is a known sensitivity (or unset), else what to do about it."""
    if value is None or value in SENSITIVITIES:
        return None
    return f"sensitivity must be one of {', '.join(SENSITIVITIES)} (got {value!r})"


def policy_id_problem(value: str | None) -> str | None:
    """None when `value` is a usable policy id (or unset), else what to do about it."""
    if not value:
        return None
    if len(value) > POLICY_ID_MAX:
        return f"a policy id has at most {POLICY_ID_MAX} characters"
    if not all(c.isalnum() or c in _POLICY_ID_EXTRA for c in value):
        return "a policy id uses letters, digits, '-', '_', '.' and '/'"
    return None


def option_problems(*, sensitivity: str | None = None, policy_id: str | None = None) -> dict[str, str]:
    """Every problem with these options, by option name (empty: all fine)."""
    problems = {"sensitivity": sensitivity_problem(sensitivity), "policy_id": policy_id_problem(policy_id)}
    return {name: problem for name, problem in problems.items() if problem}
