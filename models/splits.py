"""Which data trains the judge, which tunes it, which reports on it: fixed, named splits.

Every split is decided by a hash of the unit that must not straddle two sets: a handbook page (a
question is in the split of the page that answers it), a SQuAD or XQuAD article, an ARCD article.
Questions with no answering page (near-miss, out of corpus) fall by their own id. The training
recipe (models/judge/train.py) and the benchmark (bench/answers.py) read the same functions, so no
page or question of a report set is ever trained on.
"""

from __future__ import annotations

import hashlib

TRAIN, TUNE, REPORT = "train", "tune", "report"
# Shares of the hash space: half of the handbook pages train the judge, a quarter tune it, a quarter report.
_HANDBOOK_SHARES = ((TRAIN, 0.5), (TUNE, 0.75), (REPORT, 1.0))
# SQuAD 2.0 dev: the benchmark indexes articles 0–16 (its answerable and adversarial questions) and
# asks the questions of articles 30–34 as out of corpus; the judge trains on articles 17–29 only.
SQUAD_BENCH_ARTICLES = range(0, 17)
SQUAD_TRAIN_ARTICLES = range(17, 30)
SQUAD_OOC_ARTICLES = range(30, 35)
# XQuAD (48 articles) and ARCD: by article title, half train, a quarter tune, a quarter report.
_ARTICLE_SHARES = ((TRAIN, 0.5), (TUNE, 0.75), (REPORT, 1.0))


def _fraction(key: str) -> float:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64


def _pick(key: str, shares: tuple[tuple[str, float], ...]) -> str:
    at = _fraction(key)
    return next(name for name, upto in shares if at < upto)


def handbook_split(*, gold_path: str | None, qid: str) -> str:
    """`train`, `tune` or `report` for a handbook question: by its answering page, else by its id."""
    return _pick(f"page:{gold_path}" if gold_path else f"question:{qid}", _HANDBOOK_SHARES)


def page_split(path: str) -> str:
    """The split of a handbook page (path under handbooks/, e.g. `gitlab/finance/expenses.md`)."""
    return _pick(f"page:{path}", _HANDBOOK_SHARES)


def article_split(dataset: str, title: str) -> str:
    """The split of an XQuAD or ARCD article."""
    return _pick(f"{dataset}:{title}", _ARTICLE_SHARES)
