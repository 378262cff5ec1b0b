"""Document metadata: YAML front matter (Markdown) and the cleaning shared with HTML <meta> tags.

`groups` drives access control, so anything that might carry it and cannot be read stops ingestion
rather than being ingested as body text or dropped (which would make a restricted policy public).
"""

from __future__ import annotations

from datetime import date

import yaml

from retrieval.parse.model import AGAIN, ParseError

METADATA_KEYS = ("title", "policy_id", "owner", "effective", "expires", "supersedes", "groups",
                 "sensitivity", "lang")
LANGS = ("en", "ar", "mixed")


def clean_metadata(raw: dict[object, object]) -> dict[str, object]:
    """Keep the known keys, as strings (dates ISO) and `groups` as a list of names."""
    out: dict[str, object] = {}
    for key in METADATA_KEYS:
        value = raw.get(key)
        if value is None or value == "" or value == []:
            continue
        if key == "groups":
            out[key] = _groups(value)
        elif isinstance(value, list):
            out[key] = ", ".join(_scalar(item) for item in value)
        else:
            out[key] = _scalar(value)
    lang = out.get("lang")
    if lang is not None:
        lang = str(lang).lower()
        if lang not in LANGS:
            raise ParseError(f"The metadata field 'lang' is '{out['lang']}', but it must be one of "
                             f"{', '.join(LANGS)}: correct it {AGAIN}")
        out["lang"] = lang
    return out


def _scalar(value: object) -> str:
    return value.isoformat() if isinstance(value, date) else str(value).strip()


def _groups(value: object) -> list[str]:
    # Groups drive access control, so an unreadable value must stop ingestion, never widen access.
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list) and all(isinstance(item, str | int) for item in value):
        return [str(item).strip() for item in value if str(item).strip()]
    raise ParseError("The metadata field 'groups' must be a list of group names (for example "
                     f"'groups: [hr, finance]'): correct it {AGAIN}")


def split_front_matter(text: str) -> tuple[dict[str, object], str]:
    """(cleaned metadata, the body after the block); no leading '---' line means no front matter."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    # An unterminated or unparsable block may hold `groups`; ingesting it as body would make a
    # restricted policy public, so these are errors rather than "not front matter".
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() in {"---", "..."}), None)
    if end is None:
        raise ParseError("The front matter is not valid YAML: it has no closing '---' line. Add one after "
                         f"the metadata {AGAIN}")
    try:
        raw = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "cannot be parsed"
        raise ParseError(f"The front matter is not valid YAML: {problem}{where}. Fix the metadata between "
                         f"the '---' lines {AGAIN}") from exc
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ParseError("The front matter is not valid YAML: it must be 'key: value' lines. Fix the "
                         f"metadata between the '---' lines {AGAIN}")
    return clean_metadata(raw), "\n".join(lines[end + 1:])
