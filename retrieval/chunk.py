"""Split a parsed document into embedding-sized chunks that keep their heading context.

Each chunk's text starts with its heading line ("Policy > Hotels") because the embedding model and the
reader both need to know which section a number belongs to; that line counts against the budget.

Packing, in order of preference:

1. A section that fits is one chunk (so a limit and its exceptions in one section stay together).
   Consecutive sections under the same level-2 heading are merged while they fit, under their
   deepest common heading path, each keeping its own relative heading as a line ("Boston" stays
   next to its number). Sections under different level-2 headings are never merged.
2. A section that does not fit is split at paragraph boundaries, then sentence boundaries
   (. ! ? ؟ ۔ or a newline), then whitespace, then characters. A paragraph that starts with
   "except"/"unless"/"exception" (or the Arabic equivalents) is glued to the paragraph before it and the
   pair is only separated when it cannot fit in one chunk. Each piece after the first repeats the
   trailing sentences (or, if a sentence is too long, words) of the previous piece, up to `overlap`.

Token counts are always measured on the exact final text, never summed, because subword tokenizers
are not additive across joins.
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval.parse import ParsedDocument

TokenCounter = Callable[[str], int]

_GLUE, _PARAGRAPH, _SENTENCE, _WORD, _CHARS = range(5)
_SENTENCE_BREAK = re.compile(r"((?<=[.!?؟۔])\s+|\s*\n\s*)")
_WORD_BREAK = re.compile(r"(\s+)")
_EXCEPTION_START = re.compile(r"^(?:[-*•]\s*)?(?:except|unless|exception|باستثناء|استثناء|ما لم|إلا)",
                              re.IGNORECASE)


@dataclass(frozen=True)
class ChunkDraft:
    seq: int
    text: str
    heading_path: tuple[str, ...]
    page: int | None
    token_count: int


@dataclass(frozen=True)
class _Unit:
    """Body text packed whole when it fits; `level` says how it is split when it does not."""

    text: str
    joiner: str  # what separates it from the unit before it
    page: int | None
    level: int


@dataclass(frozen=True)
class _Block:
    """Consecutive sections with one heading path (the parser splits a section at page breaks)."""

    path: tuple[str, ...]
    paras: tuple[tuple[str, int | None], ...]


@dataclass(frozen=True)
class _Budget:
    count: TokenCounter
    max_tokens: int

    def fits(self, text: str) -> bool:
        return self.count(text) <= self.max_tokens


def chunk_document(doc: ParsedDocument, *, count_tokens: Callable[[str], int], max_tokens: int = 400,
                   overlap: int = 50) -> list[ChunkDraft]:
    """Chunks in document order; every chunk's `count_tokens(text)` is at most `max_tokens`."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be positive, got {max_tokens}")
    if overlap < 0:
        raise ValueError(f"overlap must not be negative, got {overlap}")
    overlap = min(overlap, max_tokens // 2)  # so every piece is mostly new text, whatever the budget
    budget = _Budget(count_tokens, max_tokens)
    pieces: list[tuple[tuple[str, ...], str, int | None]] = []
    group: list[_Block] = []
    for block in _blocks(doc):
        if group and _topic(group[0].path) == _topic(block.path):
            if budget.fits(_render_group([*group, block], budget)[1]):
                group.append(block)
                continue
        if group:
            pieces.append(_group_piece(group, budget))
        group = []
        if budget.fits(_render_group([block], budget)[1]):
            group = [block]
        else:
            pieces.extend(_split_block(block, budget, overlap))
    if group:
        pieces.append(_group_piece(group, budget))
    return [ChunkDraft(seq=seq, text=text, heading_path=path, page=page, token_count=count_tokens(text))
            for seq, (path, text, page) in enumerate(pieces)]


def model_token_counter(model_dir: Path) -> Callable[[str], int]:
    """Token counter of the embedding model's tokenizer (no special tokens), loaded once per directory."""
    tokenizer = _load_tokenizer(str(Path(model_dir).resolve()))

    def count(text: str) -> int:
        # verbose=False: texts longer than the model's 512 positions are expected here (we are
        # measuring them to split them), so the tokenizer's warning would only be noise.
        return len(tokenizer(text, add_special_tokens=False, truncation=False, verbose=False)["input_ids"])

    return count


@functools.lru_cache(maxsize=4)
def _load_tokenizer(model_dir: str) -> Any:
    from transformers import AutoTokenizer  # imported lazily: it takes seconds and most callers never need it

    return AutoTokenizer.from_pretrained(model_dir, local_files_only=True)


# --------------------------------------------------------------------------------------------- groups


def _blocks(doc: ParsedDocument) -> list[_Block]:
    blocks: list[_Block] = []
    for section in doc.sections:
        paras = tuple((para.strip(), section.page) for para in re.split(r"\n\s*\n", section.text)
                      if para.strip())
        if not paras:
            continue
        if blocks and blocks[-1].path == section.heading_path:
            blocks[-1] = _Block(section.heading_path, blocks[-1].paras + paras)
        else:
            blocks.append(_Block(section.heading_path, paras))
    return blocks


def _topic(path: tuple[str, ...]) -> tuple[str, ...]:
    # The level-2 heading (under the document root) is the unit of topic: merging stops at its border.
    return path[:2]


def _common_path(paths: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    common = paths[0]
    for path in paths[1:]:
        size = 0
        while size < min(len(common), len(path)) and common[size] == path[size]:
            size += 1
        common = common[:size]
    return common


def _render_group(group: Sequence[_Block], budget: _Budget) -> tuple[tuple[str, ...], str]:
    common = _common_path([block.path for block in group])
    parts = []
    for block in group:
        body = "\n\n".join(text for text, _ in block.paras)
        relative = block.path[len(common):]
        parts.append(f"{' > '.join(relative)}\n{body}" if relative else body)
    return common, _compose(_heading_line(common, budget), "\n\n".join(parts))


def _group_piece(group: Sequence[_Block], budget: _Budget) -> tuple[tuple[str, ...], str, int | None]:
    path, text = _render_group(group, budget)
    return path, text, group[0].paras[0][1]


def _compose(head: str, body: str) -> str:
    return f"{head}\n{body}" if head else body


def _heading_line(path: tuple[str, ...], budget: _Budget) -> str:
    """ "A > B > C", shortened from the left ("… > C") when it would take over half the budget."""
    limit = budget.max_tokens // 2
    line = " > ".join(path)
    if budget.count(line) <= limit:
        return line
    for start in range(1, len(path)):
        line = "… > " + " > ".join(path[start:])
        if budget.count(line) <= limit:
            return line
    return line[:_longest_prefix(line, lambda text: budget.count(text) <= limit)]


def _longest_prefix(text: str, fits: Callable[[str], bool]) -> int:
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(text[:middle]):
            low = middle
        else:
            high = middle - 1
    return low


# ---------------------------------------------------------------------------------------- splitting


def _split_block(block: _Block, budget: _Budget, overlap: int) -> list[tuple[tuple[str, ...], str, int | None]]:
    head = _heading_line(block.path, budget)
    pieces: list[tuple[tuple[str, ...], str, int | None]] = []
    queue = deque(_paragraph_units(block))
    current: list[_Unit] = []
    fresh = False  # whether `current` holds text not already in the previous piece
    while queue:
        unit = queue.popleft()
        if budget.fits(_compose(head, _render([*current, unit]))):
            current.append(unit)
            fresh = True
        elif not budget.fits(_compose(head, unit.text)):
            # Too big even alone: its parts may still fill the rest of the current piece.
            queue.extendleft(reversed(_finer(unit, head, budget)))
        elif fresh:
            pieces.append((block.path, _compose(head, _render(current)), current[0].page))
            current, fresh = _tail(current, overlap, budget.count), False
            queue.appendleft(unit)
        else:
            current = []  # the overlap and this unit do not fit together: the unit matters more
            queue.appendleft(unit)
    if fresh:
        pieces.append((block.path, _compose(head, _render(current)), current[0].page))
    return pieces


def _paragraph_units(block: _Block) -> list[_Unit]:
    units: list[_Unit] = []
    for text, page in block.paras:
        if units and _EXCEPTION_START.match(text):
            # A rule's exceptions are glued to the rule so retrieval never returns the limit alone.
            previous = units[-1]
            units[-1] = _Unit(f"{previous.text}\n\n{text}", previous.joiner, previous.page, _GLUE)
        else:
            units.append(_Unit(text, "\n\n", page, _PARAGRAPH))
    return units


def _render(units: Sequence[_Unit]) -> str:
    if not units:
        return ""
    return units[0].text + "".join(unit.joiner + unit.text for unit in units[1:])


def _finer(unit: _Unit, head: str, budget: _Budget) -> list[_Unit]:
    """The unit split at the next level that actually divides it; characters as the last resort."""
    level = unit.level
    while level < _WORD:
        level += 1
        parts = _split_at(unit, level)
        if len(parts) > 1:
            return parts
    size = _longest_prefix(unit.text, lambda text: budget.fits(_compose(head, text)))
    if size == 0:
        raise ValueError(f"max_tokens={budget.max_tokens} cannot fit even one character after the heading")
    rest = unit.text[size:]
    first = _Unit(unit.text[:size], unit.joiner, unit.page, _CHARS)
    return [first, _Unit(rest, "", unit.page, _WORD)] if rest else [first]


def _split_at(unit: _Unit, level: int) -> list[_Unit]:
    if level == _PARAGRAPH:
        pieces = re.split(r"(\n\n)", unit.text)
    else:
        pieces = (_SENTENCE_BREAK if level == _SENTENCE else _WORD_BREAK).split(unit.text)
    units: list[_Unit] = []
    joiner = unit.joiner
    for index, piece in enumerate(pieces):
        if index % 2:  # odd positions are the captured separators
            joiner += piece
        elif piece:
            units.append(_Unit(piece, joiner, unit.page, level))
            joiner = ""
    return units


def _tail(units: Sequence[_Unit], overlap: int, count: TokenCounter) -> list[_Unit]:
    """Trailing sentences of `units` (words if a sentence is too long) within `overlap` tokens."""
    tail: list[_Unit] = []
    pending = list(units)
    while pending and overlap > 0:
        unit = pending.pop()
        if count(_render([unit, *tail])) <= overlap:
            tail.insert(0, unit)
            continue
        parts = [unit]
        level = unit.level
        while len(parts) == 1 and level < _WORD:
            level += 1
            parts = _split_at(unit, level)
        if len(parts) == 1:
            break
        pending.extend(parts)
    return tail
