"""Rerankers: the offline sentence reranker on real MiniLM vectors, and the CrossEncoder loading path.

The CrossEncoder is a tiny randomly initialised BERT built here from the bundled MiniLM tokenizer
(no download): the test is about loading, calibration and wiring, not about ranking quality.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from bot.services import open_services
from retrieval.embed import DENSE, DENSE_ML, SPARSE_AR, SPARSE_EN, Embedder, bundled_model_dir
from retrieval.ingest import vector_row
from retrieval.rerank import (
    COVERAGE_FLOOR,
    Candidate,
    CrossEncoderReranker,
    SentenceReranker,
    best_sentence,
    build_reranker,
)
from tests.conftest import copy_home, make_settings

TEXTS = [
    "Hotels. The nightly hotel limit in Boston is USD 250. London is GBP 210.",
    "Forklifts. The forklift speed limit in the warehouse is 8 km/h. Wear a helmet.",
    "Returns. Retail returns are accepted within 30 days with a receipt.",
]


def candidates(embedder: Embedder, texts: list[str]) -> list[Candidate]:
    embedded = embedder.embed_documents(texts)
    return [Candidate(point_id=f"p{i}", chunk_id=f"c{i}", text=t, lang="en", vectors=vector_row(f"c{i}", e))
            for i, (t, e) in enumerate(zip(texts, embedded, strict=True))]


def query(embedder: Embedder, text: str, *, sparse: bool = True) -> dict[str, object]:
    names = (DENSE, DENSE_ML, SPARSE_EN, SPARSE_AR) if sparse else (DENSE, DENSE_ML)
    return embedder.embed_query(text, vectors=names)


# -- SentenceReranker --------------------------------------------------------------------------


def test_sentence_reranker_prefers_the_chunk_that_answers(embedder: Embedder) -> None:
    cands = candidates(embedder, TEXTS)
    reranker = SentenceReranker()
    for question, best in (("What is the hotel limit in Boston?", 0), ("How fast may forklifts drive?", 1),
                           ("How many days do I have to return an item?", 2)):
        scores = reranker.score(query=question, query_vecs=query(embedder, question), language="en",
                                candidates=cands)
        assert len(scores) == 3 and all(s <= 1.0 for s in scores)
        assert int(np.argmax(scores)) == best, (question, scores)


def test_coverage_penalises_chunks_missing_the_question_terms(embedder: Embedder) -> None:
    """Scored with and without the question's terms, only the chunk lacking them loses."""
    cands = candidates(embedder, ["Wholesale returns are accepted within 60 days.",
                                  "Retail returns are accepted within 30 days."])
    question = "wholesale returns"
    reranker = SentenceReranker()
    with_terms = reranker.score(query=question, query_vecs=query(embedder, question), language="en",
                                candidates=cands)
    without = reranker.score(query=question, query_vecs=query(embedder, question, sparse=False), language="en",
                             candidates=cands)
    assert with_terms[0] == pytest.approx(without[0], abs=1e-6)  # covers every term: no penalty
    assert with_terms[1] < without[1]
    assert with_terms[1] >= without[1] * COVERAGE_FLOOR - 1e-6
    assert with_terms[0] > with_terms[1]


def test_missing_vectors_or_no_comparable_vector_score_zero(embedder: Embedder) -> None:
    cand = candidates(embedder, TEXTS[:1])[0]
    bare = Candidate(point_id="x", chunk_id="x", text="t", lang="en", vectors=None)
    reranker = SentenceReranker()
    q = query(embedder, "hotel limit")
    assert reranker.score(query="hotel limit", query_vecs=q, language="en", candidates=[bare]) == [0.0]
    # An Arabic question with the multilingual model off has nothing to compare with.
    assert reranker.score(query="فندق", query_vecs={DENSE: q[DENSE]}, language="ar", candidates=[cand]) == [0.0]


def test_arabic_question_is_scored_across_languages_with_the_multilingual_vector(embedder: Embedder) -> None:
    cands = candidates(embedder, TEXTS)
    question = "ما هو الحد الأقصى لسعر الفندق في بوسطن؟"
    scores = SentenceReranker().score(query=question, query_vecs=query(embedder, question), language="ar",
                                      candidates=cands)
    assert int(np.argmax(scores)) == 0 and scores[0] > 0


def test_best_sentence_picks_the_answering_sentence(embedder: Embedder) -> None:
    cand = candidates(embedder, ["Travel. The nightly hotel limit in Boston is USD 250. Meals are paid at a "
                                 "per diem of USD 75 per day. Wear a helmet in the warehouse."])[0]
    q = embedder.embed_query("How much is the meal per diem?", vectors=(DENSE,))[DENSE]
    sentence, score = best_sentence(cand.vectors, q)
    assert "per diem" in sentence and 0 < score <= 1.0001
    assert best_sentence(cand.vectors, [0.0] * 10) is None  # wrong dimension: no comparison


def test_default_reranker_is_the_sentence_reranker() -> None:
    assert isinstance(build_reranker(None), SentenceReranker)


# -- CrossEncoder from a local directory ---------------------------------------------------------


def build_tiny_cross_encoder(target: Path, *, labels: int, identity: bool = False) -> Path:
    from sentence_transformers import CrossEncoder
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, BertConfig

    tokenizer = AutoTokenizer.from_pretrained(str(bundled_model_dir()))
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=512,
                        num_labels=labels)
    torch.manual_seed(labels)
    model = AutoModelForSequenceClassification.from_config(config)
    with torch.no_grad():  # spread the logits so calibration mistakes show
        model.classifier.bias.add_(torch.linspace(-3.0, 3.0, labels) if labels > 1 else torch.tensor([0.5]))
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    if identity:  # a model that declares raw-logit output
        CrossEncoder(str(target), device="cpu", activation_fn=torch.nn.Identity()).save_pretrained(str(target))
    return target


def expected_probabilities(model_dir: Path, question: str, texts: list[str], *, labels: int) -> list[float]:
    """P(relevant) straight from transformers, independent of the reranker's code path."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    with torch.no_grad():
        enc = tokenizer([question] * len(texts), texts, return_tensors="pt", padding=True, truncation=True)
        logits = model(**enc).logits
    probs = torch.softmax(logits, dim=-1)[:, -1] if labels > 1 else torch.sigmoid(logits[:, 0])
    return probs.tolist()


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cross-encoders")
    return {
        "one-logit": build_tiny_cross_encoder(root / "one-logit", labels=1),
        "one-logit-identity": build_tiny_cross_encoder(root / "one-logit-identity", labels=1, identity=True),
        "two-class": build_tiny_cross_encoder(root / "two-class", labels=2),
    }


@pytest.mark.parametrize(("kind", "labels"), [("one-logit", 1), ("one-logit-identity", 1), ("two-class", 2)])
def test_cross_encoder_scores_are_probabilities_per_candidate(model_dirs: dict[str, Path], kind: str,
                                                              labels: int) -> None:
    reranker = CrossEncoderReranker(model_dirs[kind])
    assert reranker.name == f"cross-encoder:{kind}"
    question = "What is the hotel limit in Boston?"
    cands = [Candidate(point_id=f"p{i}", chunk_id=f"c{i}", text=t, lang="en", vectors=None)
             for i, t in enumerate(TEXTS)]
    scores = reranker.score(query=question, query_vecs={}, language="en", candidates=cands)
    assert len(scores) == len(cands)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == pytest.approx(expected_probabilities(model_dirs[kind], question, TEXTS, labels=labels),
                                   abs=1e-4)
    # A candidate's score does not depend on which other candidates share the batch.
    alone = reranker.score(query=question, query_vecs={}, language="en", candidates=cands[1:2])
    assert alone[0] == pytest.approx(scores[1], abs=1e-4)
    assert reranker.score(query=question, query_vecs={}, language="en", candidates=[]) == []


async def test_rerank_model_setting_wires_the_cross_encoder_into_search(
        model_dirs: dict[str, Path], handbook_template: Path, embedder: Embedder, tmp_path: Path) -> None:
    home = tmp_path / "home"
    copy_home(handbook_template, home)
    settings = make_settings(home, CAIRN_RERANK_MODEL=model_dirs["two-class"])
    assert settings.rerank_model == model_dirs["two-class"]
    assert isinstance(build_reranker(settings.rerank_model), CrossEncoderReranker)
    async with open_services(settings, embedder=embedder) as svc:
        assert isinstance(svc.searcher.reranker, CrossEncoderReranker)
        result = await svc.searcher.search("What is the nightly hotel limit in Boston?",
                                           svc.access.resolve_cli("bob"))
    assert result.reranker == "cross-encoder:two-class" and not result.rerank_fail_open
    assert result.passages and all(0.0 <= p.score <= 1.0 for p in result.passages)
    scores = [p.score for p in result.passages]
    assert scores == sorted(scores, reverse=True)
