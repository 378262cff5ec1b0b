"""The answer judge: the shipped weights load offline, read known pairs the right way round, and the
numpy forward pass carries the fine-tuned model exactly."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from models import splits
from models.judge import WEIGHTS, Candidate, Judge, shared_judge
from models.judge.crossencoder import MAX_TOKENS, CrossEncoder, pair_text

pytestmark = pytest.mark.slow

BOSTON = "What is the nightly hotel limit in Boston?"
HOTELS = [("Travel > Hotels", "The nightly hotel limit in Boston is USD 250."),
          ("Travel > Hotels", "Book hotels through the travel portal."),
          ("Security > Passwords", "Passwords must be at least 15 characters long.")]


@pytest.fixture(scope="module")
def judge() -> Judge:
    return shared_judge()


def test_the_shipped_weights_are_small_and_load_with_no_network() -> None:
    size = sum(p.stat().st_size for p in WEIGHTS.iterdir() if p.is_file())
    assert size < 30 * 2**20
    code = ("import os; os.environ['HF_HUB_OFFLINE'] = '1'; from models.judge import Judge; "
            f"j = Judge(); print(j.read({BOSTON!r}, [Candidate(0, 'Travel', 'The limit is USD 250.')])[0])"
            ).replace("from models.judge import Judge", "from models.judge import Candidate, Judge")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "NO_PROXY": "*",
                               "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"})
    assert done.returncode == 0, done.stderr
    assert 0.0 < float(done.stdout.strip()) < 1.0


def test_the_answering_sentence_reads_as_the_answer(judge: Judge) -> None:
    p = judge.read(BOSTON, [Candidate(0, h, s) for h, s in HOTELS])
    assert int(np.argmax(p)) == 0 and p[0] > 2 * max(p[1], p[2]), p
    verdict = judge.verdict(BOSTON, [Candidate(0, h, s) for h, s in HOTELS])
    assert verdict.quoted[0] == 0 and 2 not in verdict.quoted


def test_a_question_the_sentences_do_not_answer_is_not_answerable(judge: Judge) -> None:
    verdict = judge.verdict("How many days of parental leave do fathers get?",
                            [Candidate(0, h, s) for h, s in HOTELS])
    assert not verdict.ok and "no sentence reads as an answer" in verdict.reason


def test_the_numpy_forward_pass_gives_the_fine_tuned_model_s_logits() -> None:
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file
    from transformers import AutoTokenizer, BertModel

    from models.minilm import bundled_model_dir

    reader = CrossEncoder()
    state = load_file(str(WEIGHTS / "judge-en.safetensors"))
    head_w, head_b = state.pop("head.weight").float(), state.pop("head.bias").float()
    model = BertModel.from_pretrained(str(bundled_model_dir()), local_files_only=True, add_pooling_layer=False)
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(str(bundled_model_dir()), local_files_only=True)
    enc = tokenizer([BOSTON] * len(HOTELS), [pair_text(h, s) for h, s in HOTELS], truncation="longest_first",
                    max_length=MAX_TOKENS, padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = (model(**enc).last_hidden_state[:, 0] @ head_w.T + head_b).squeeze(-1).numpy()
    np.testing.assert_allclose(reader.logits(BOSTON, HOTELS), expected, atol=1e-3)


def test_an_arabic_question_is_read_across_languages(judge: Judge) -> None:
    from retrieval.embed import Embedder

    embedder = Embedder()
    question = "كم الحد الأقصى لسعر الفندق في الليلة في بوسطن؟"  # the nightly hotel limit in Boston
    texts = [s for _, s in HOTELS]
    vectors = embedder.encode_multilingual(texts)
    q = embedder.encode_multilingual([question])[0]
    p = judge.read(question, [Candidate(0, h, s, english=False, vector=v)
                              for (h, s), v in zip(HOTELS, vectors, strict=True)], question_vector=q)
    assert int(np.argmax(p)) == 0, p


def test_reads_are_kept_and_a_budget_reads_the_best_priors_first(judge: Judge) -> None:
    fresh = Judge()
    candidates = [Candidate(0, h, s, prior=prior) for (h, s), prior in zip(HOTELS, (0.2, 0.9, 0.1), strict=True)]
    p = fresh.read(BOSTON, candidates, budget=1)
    assert np.isnan(p[0]) and not np.isnan(p[1]) and np.isnan(p[2])  # the best prior is read first
    again = fresh.read(BOSTON, candidates, budget=0)
    assert again[1] == p[1] and np.isnan(again[0])  # kept: read again for nothing


def test_no_report_or_tune_page_is_trained_on() -> None:
    from models.judge.pairs import handbook_questions

    for split in (splits.TUNE, splits.REPORT):
        held = {q["gold_path"] for q in handbook_questions(split) if q.get("gold_path")}
        trained = {q["gold_path"] for q in handbook_questions(splits.TRAIN) if q.get("gold_path")}
        assert held and not held & trained
    assert set(splits.SQUAD_TRAIN_ARTICLES).isdisjoint(splits.SQUAD_BENCH_ARTICLES)
    assert set(splits.SQUAD_TRAIN_ARTICLES).isdisjoint(splits.SQUAD_OOC_ARTICLES)


def test_the_card_states_each_reader_s_calibration_and_the_threshold() -> None:
    calibration = json.loads((WEIGHTS / "calibration.json").read_text())
    assert 0.0 < calibration["answerable_at"] < 1.0
    for name in ("en", "ml"):
        card = json.loads((WEIGHTS / f"judge-{name}.json").read_text())
        assert card["platt"]["a"] > 0 and "tune" in card
    assert (WEIGHTS / "README.md").exists()
