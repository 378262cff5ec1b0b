"""One sentence splitter for reranking, extractive answers and citation checks, so they agree."""

from __future__ import annotations

import re

# A sentence ends at . ! ? or the Arabic question mark / full stop, followed by space; list items
# and table rows (one per line) are sentences of their own.
_END = re.compile(r"(?<=[.!?؟۔])\s+(?=[\"'(\[]?[A-Z0-9\u0600-\u06FF\-•])")
_ABBREV = re.compile(r"\b(e\.g|i\.e|etc|vs|approx|incl|Mr|Ms|Dr|No|St)\.$", re.IGNORECASE)


def body_of(chunk_text: str) -> str:
    """The chunk text without its leading heading line ("A > B")."""
    first, _, rest = chunk_text.partition("\n")
    return rest if rest.strip() else first


def split_sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        pieces = _END.split(line)
        merged: list[str] = []
        for piece in pieces:
            if merged and _ABBREV.search(merged[-1]):
                merged[-1] = f"{merged[-1]} {piece}"
            else:
                merged.append(piece)
        sentences.extend(p.strip() for p in merged if len(p.strip()) > 1)
    return sentences
