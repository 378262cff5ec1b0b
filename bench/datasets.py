"""Evaluation data, read from /work/shared/data at bench time (never copied into the project).

Every sample is drawn with a fixed seed, so two runs see the same questions.
"""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bench.workspace import Doc

DATA = Path(os.environ.get("CAIRN_BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
if not DATA.exists():
    DATA = Path("/work/shared/data")
HANDBOOKS = DATA / "handbooks"
QUESTIONS = Path(__file__).resolve().parent / "questions" / "handbooks.jsonl"
SEED = 20260101
SQUAD_INDEXED_ARTICLES = 17  # articles 0–16 of 35 (547 paragraphs) are indexed; 17–34 are out of corpus
_NOT_PAGES = {"SOURCE.md", "FILES.txt"}  # provenance notes beside the pages, not handbook content
# CAIRN_BENCH_FRACTION=0.1 samples a tenth of the questions (a quick smoke run; numbers get noisy)
FRACTION = float(os.environ.get("CAIRN_BENCH_FRACTION", "1"))


def _n(n: int) -> int:
    return max(10, round(n * FRACTION))


@dataclass(frozen=True)
class Question:
    qid: str
    text: str
    kind: str  # answerable | ooc (out of corpus) | adversarial (unanswerable, on topic) | null (must abstain)
    gold_docs: frozenset[str] = frozenset()
    gold_chunks: frozenset[str] | None = None  # when set, only these chunks count
    split: str = "all"  # tune | heldout
    lang: str = "en"
    meta: str = ""

    @property
    def must_abstain(self) -> bool:
        return self.kind != "answerable"


def slug(text: str) -> str:
    return re.sub(r"[^\w\-.]+", "_", text).strip("_") or "x"


def _split(key: str) -> str:
    """Stable tune/held-out assignment by a key (an article, so no paragraph leaks across)."""
    return "tune" if sum(key.encode()) % 2 == 0 else "heldout"


# -- handbooks ---------------------------------------------------------------------------------------


def handbook_docs(corpora: tuple[str, ...] = ("gitlab", "sourcegraph", "basecamp"), *,
                  every: int = 1) -> list[Doc]:
    """Pages as `cairn ingest handbooks/` would name them: doc id = path under handbooks/ minus
    the extension, source path = path under handbooks/ (so gold paths compare directly)."""
    from bot.cli.knowledge import plan_files

    docs: list[Doc] = []
    for item in plan_files([HANDBOOKS], None):
        rel = item.path.relative_to(HANDBOOKS)
        if rel.parts[0] not in corpora or item.path.name in _NOT_PAGES:
            continue
        if item.problem or not item.doc_id:
            raise RuntimeError(f"{rel}: {item.problem}")
        docs.append(Doc(doc_id=item.doc_id, filename=rel.as_posix(), data=item.path.read_bytes()))
    return docs[::every]


def handbook_questions() -> list[dict[str, object]]:
    if not QUESTIONS.exists():
        return []
    return [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]


# -- SQuAD 2.0 -----------------------------------------------------------------------------------------


@cache
def _squad() -> list[dict]:
    return json.loads((DATA / "squad2" / "dev-v2.0.reconstructed.json").read_text(encoding="utf-8"))["data"]


def squad_doc_id(title: str, i: int) -> str:
    return f"squad/{slug(title)}/{i:03d}"


def squad_docs(articles: range | None = None) -> list[Doc]:
    docs = []
    for a in _squad()[: SQUAD_INDEXED_ARTICLES] if articles is None else [_squad()[i] for i in articles]:
        title = a["title"]
        for i, p in enumerate(a["paragraphs"]):
            text = f"# {title.replace('_', ' ')}\n\n{p['context']}\n"
            docs.append(Doc(doc_id=squad_doc_id(title, i), filename=f"squad/{slug(title)}/{i:03d}.md",
                            data=text.encode()))
    return docs


def squad_questions(*, n_answerable: int = 400, n_ooc: int = 300, n_adversarial: int = 200) -> list[Question]:
    answerable, adversarial, ooc = [], [], []
    for ai, a in enumerate(_squad()):
        for i, p in enumerate(a["paragraphs"]):
            for qa in p["qas"]:
                split = _split(a["title"])
                if ai >= SQUAD_INDEXED_ARTICLES:
                    ooc.append(Question(qa["id"], qa["question"], "ooc", split=split, meta=a["title"]))
                elif qa["is_impossible"]:
                    adversarial.append(Question(qa["id"], qa["question"], "adversarial", split=split,
                                                meta=a["title"]))
                else:
                    answerable.append(Question(qa["id"], qa["question"], "answerable",
                                               gold_docs=frozenset({squad_doc_id(a["title"], i)}),
                                               split=split, meta=a["title"]))
    rng = random.Random(SEED)
    return (rng.sample(answerable, _n(n_answerable)) + rng.sample(ooc, _n(n_ooc))
            + rng.sample(adversarial, _n(n_adversarial)))


# -- XQuAD and ARCD --------------------------------------------------------------------------------------


@cache
def _xquad(name: str) -> list[dict]:
    return json.loads((DATA / "arabic_qa" / "xquad" / name).read_text(encoding="utf-8"))["data"]


def xquad_doc_id(title: str, i: int) -> str:
    return f"xquad/{slug(title)}/{i:03d}"


def xquad_docs(lang: str) -> list[Doc]:
    docs = []
    for a in _xquad(f"xquad.{lang}.json"):
        for i, p in enumerate(a["paragraphs"]):
            heading = a["title"].replace("_", " ") if lang == "en" else None
            text = (f"# {heading}\n\n" if heading else "") + p["context"] + "\n"
            docs.append(Doc(doc_id=xquad_doc_id(a["title"], i),
                            filename=f"xquad-{lang}/{slug(a['title'])}/{i:03d}.md", data=text.encode()))
    return docs


def xquad_questions(direction: str, *, n: int = 300) -> list[Question]:
    """direction: en-en (English question, English context), ar-en, ar-ar. Same question ids in each."""
    qlang = direction.split("-")[0]
    source = {"en-en": "xquad.en.json", "ar-en": "xquad.context-en.question-ar.json",
              "ar-ar": "xquad.ar.json"}[direction]
    out = [Question(qa["id"], qa["question"].strip(), "answerable",
                    gold_docs=frozenset({xquad_doc_id(a["title"], i)}), split=_split(a["title"]), lang=qlang,
                    meta=a["title"])
           for a in _xquad(source) for i, p in enumerate(a["paragraphs"]) for qa in p["qas"]]
    out.sort(key=lambda q: q.qid)
    return random.Random(SEED).sample(out, _n(n) if n <= 300 else n)


@cache
def _arcd() -> list[dict]:
    return json.loads((DATA / "arabic_qa" / "arcd" / "arcd-test.json").read_text(encoding="utf-8"))["data"]


def arcd_docs() -> list[Doc]:
    return [Doc(doc_id=f"arcd/{ai:03d}/{i:02d}", filename=f"arcd/{ai:03d}/{i:02d}.md",
                data=(p["context"].strip() + "\n").encode())
            for ai, a in enumerate(_arcd()) for i, p in enumerate(a["paragraphs"])]


def _all_arcd() -> list[Question]:
    return [Question(qa["id"], qa["question"].strip(" -\u200f\n\t"), "answerable",
                    gold_docs=frozenset({f"arcd/{ai:03d}/{i:02d}"}), split=_split(str(ai)), lang="ar",
                    meta=a["title"])
            for ai, a in enumerate(_arcd()) for i, p in enumerate(a["paragraphs"]) for qa in p["qas"]]


def arcd_questions(*, n: int = 300) -> list[Question]:
    return random.Random(SEED).sample(_all_arcd(), _n(n) if n <= 300 else n)


def arabic_ooc_questions(*, n: int = 100) -> dict[str, list[Question]]:
    """Arabic questions asked of a collection that cannot answer them (tenant → questions):
    ARCD questions (Arabic Wikipedia topics) against XQuAD, XQuAD's Arabic questions against ARCD
    and against the English handbooks."""
    rng = random.Random(SEED + 1)
    asked_arcd = {q.qid for q in arcd_questions()}
    asked_xq = {q.qid for q in xquad_questions("ar-ar")}
    arcd = [Question(f"ooc-{q.qid}", q.text, "ooc", split=q.split, lang="ar", meta=q.meta)
            for q in arcd_questions(n=len(_all_arcd())) if q.qid not in asked_arcd]
    xq = [Question(f"ooc-{q.qid}", q.text, "ooc", split=q.split, lang="ar", meta=q.meta)
          for q in xquad_questions("ar-ar", n=1190) if q.qid not in asked_xq]
    arcd.sort(key=lambda q: q.qid)
    xq.sort(key=lambda q: q.qid)
    return {"xq_en": rng.sample(arcd, _n(n)), "xq_ar": rng.sample(arcd, _n(n)), "arcd": rng.sample(xq, _n(n)),
            "eval": rng.sample(xq, _n(n))}


def squad_english_for_latency(n: int) -> list[str]:
    qs = [qa["question"] for a in _squad() for p in a["paragraphs"] for qa in p["qas"]]
    return random.Random(SEED + 2).sample(qs, n)
