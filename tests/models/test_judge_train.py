"""The judge's training recipe: batches of whole questions and the listwise loss (models/judge/train.py)."""

from __future__ import annotations

import math
import random

import torch

from models.judge.pairs import Pair
from models.judge.train import listwise_loss, question_batches


def _pairs(questions: int, per_question: int) -> list[Pair]:
    return [Pair(f"question {q} " + "word " * q, "", f"sentence {i}", float(i == 0), "squad", f"g{q}")
            for q in range(questions) for i in range(per_question)]


def test_each_question_s_pairs_are_in_one_batch_and_every_pair_in_one() -> None:
    pairs = _pairs(40, 5) + [Pair("long", "", f"s{i}", 0.0, "squad", "big") for i in range(45)]
    batches = question_batches(pairs, 32, random.Random(1))
    seen = [i for batch in batches for group in batch for i in group]
    assert sorted(seen) == list(range(len(pairs)))
    for batch in batches:
        for group in batch:
            assert len({pairs[i].group for i in group}) == 1
        assert sum(map(len, batch)) <= 32 or len(batch) == 1  # a question larger than a batch is one alone
    assert {pairs[i].group for batch in batches for group in batch for i in group} == {f"g{q}" for q in range(40)} | {"big"}


def test_the_listwise_loss_rewards_the_answer_read_above_the_rest_and_none_above_all_when_none_answers() -> None:
    labels = torch.tensor([1.0, 0.0, 0.0])
    right = listwise_loss(torch.tensor([4.0, -2.0, -2.0]), labels, [3])
    wrong = listwise_loss(torch.tensor([-2.0, 4.0, -2.0]), labels, [3])
    assert right < 0.05 < 5 < wrong
    unanswerable = torch.zeros(3)
    low = listwise_loss(torch.tensor([-5.0, -5.0, -5.0]), unanswerable, [3])
    high = listwise_loss(torch.tensor([3.0, -5.0, -5.0]), unanswerable, [3])
    assert low < 0.05 < 2 < high
    # two questions in one batch: the mean of each alone
    both = listwise_loss(torch.tensor([4.0, -2.0, -2.0, 3.0, -5.0, -5.0]), torch.cat([labels, unanswerable]), [3, 3])
    assert math.isclose(float(both), (float(right) + float(high)) / 2, rel_tol=1e-6)
