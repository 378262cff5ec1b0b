"""Script-based language detection for English/Arabic policy text.

Policies in the collection are English, Arabic, or a mix (Arabic text with English product names,
English text quoting Arabic titles). Counting Arabic-script letters is enough to tell these apart and,
unlike a statistical detector, is deterministic and needs no model.
"""

from __future__ import annotations

import re
from typing import Literal

Language = Literal["en", "ar", "mixed"]

# Arabic, Arabic Supplement, Arabic Extended-A and both presentation-form blocks: PDFs in
# particular often carry presentation forms instead of the base letters.
_ARABIC_RANGES: tuple[tuple[int, int], ...] = (
    (0x0600, 0x06FF),
    (0x0750, 0x077F),
    (0x08A0, 0x08FF),
    (0xFB50, 0xFDFF),
    (0xFE70, 0xFEFF),
)


_ARABIC = re.compile("[" + "".join(f"\\u{start:04x}-\\u{end:04x}" for start, end in _ARABIC_RANGES) + "]")
# Letters: word characters that are not digits or the underscore (str.isalpha, as one regex pass).
_LETTER = re.compile(r"[^\W\d_]")


def arabic_ratio(text: str) -> float:
    """Share of alphabetic characters that are Arabic script; 0.0 when the text has no letters.

    Two regex passes rather than a loop per character: the conflict check and the gate call this
    for every sentence of every passage, on every turn."""
    letters = len(_LETTER.findall(text))
    if not letters:
        return 0.0
    return len([c for c in _ARABIC.findall(text) if c.isalpha()]) / letters


def detect_language(text: str, *, low: float = 0.2, high: float = 0.8) -> Language:
    """"ar" when at least `high` of the letters are Arabic, "en" at or below `low`, else "mixed".

    Text without letters (numbers, punctuation, empty) counts as "en", the collection's default.
    """
    if not 0.0 <= low <= high <= 1.0:
        raise ValueError(f"need 0 <= low <= high <= 1, got low={low}, high={high}")
    ratio = arabic_ratio(text)
    if ratio >= high:
        return "ar"
    if ratio <= low:
        return "en"
    return "mixed"


_DIACRITICS = re.compile(r"[\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0640]")
_ALEF = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ة": "ه", "ى": "ي", "ؤ": "و", "ئ": "ي"})


def normalise_arabic(text: str) -> str:
    """Arabic text in one spelling: no diacritics or tatweel, one alef, ta marbuta as ha, alef
    maqsura as ya (and the hamza seats as their letters)."""
    return _DIACRITICS.sub("", text).translate(_ALEF)
