"""Document embedding: chunk vectors as a plain encode gives them, sentence vectors from the same pass."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import retrieval.embed as embed_module
from retrieval.embed import DENSE, DENSE_SIZES, Embedder, _sentence_spans
from retrieval.rerank import best_sentence

TRAVEL = ("Travel > Hotels\n"
          "The nightly hotel limit in Boston is USD 250. London is GBP 210, e.g. for a  two-night stay. "
          "Meals are paid at a per diem of USD 75 per day.\n"
          "- Book through the travel portal.\n"
          "Receipts are required for every expense over USD 25.")
# Longer than MiniLM's 256-token window: the last sentences are only read by a second pass.
FILLER = " ".join(f"Rule {i} says that staff keep the store tidy and greet every customer." for i in range(30))
LONG = f"Store > Rules\n{FILLER} The forklift speed limit in the warehouse is 8 km/h."


@contextmanager
def counting_encodes(embedder: Embedder) -> Iterator[list[int]]:
    """Counts the texts handed to MiniLM's forward pass, pass by pass."""
    calls: list[int] = []
    real = embedder._token_pass

    def counting(texts: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(len(texts))
        return real(texts, *args, **kwargs)

    embedder.__dict__["_token_pass"] = counting
    try:
        yield calls
    finally:
        del embedder.__dict__["_token_pass"]


def plain(embedder: Embedder, texts: list[str]) -> np.ndarray:
    return embedder.model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)


def test_chunk_vectors_are_what_a_plain_encode_gives(embedder: Embedder) -> None:
    texts = [TRAVEL, LONG]
    assert embedder.count_tokens(LONG) > embedder.model.max_seq_length
    embedded = embedder.embed_documents(texts)
    expected = plain(embedder, texts)
    for e, vec in zip(embedded, expected, strict=True):
        assert e.chunk_vec.shape == (DENSE_SIZES[DENSE],)
        assert float(e.chunk_vec @ vec) == pytest.approx(1.0, abs=1e-5)
        assert e.vectors[DENSE] == pytest.approx(vec.tolist(), abs=1e-5)


def test_sentences_cost_no_encode_of_their_own(embedder: Embedder) -> None:
    """One pass for the chunks that fit the window; a long chunk adds one pass for its rest."""
    with counting_encodes(embedder) as calls:
        embedder.embed_documents([TRAVEL])
    assert calls == [1]
    with counting_encodes(embedder) as calls:
        embedded = embedder.embed_documents([TRAVEL, LONG])
    assert calls == [2, 1]
    long = embedded[1]
    assert len(long.sentences) == 31 and long.sentence_vecs.shape == (31, DENSE_SIZES[DENSE])
    norms = np.linalg.norm(long.sentence_vecs, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-4)  # every sentence has a vector, past the window too


@pytest.mark.parametrize("pooling", [True, False])
def test_best_sentence_finds_the_answer_with_either_kind_of_sentence_vector(
        embedder: Embedder, monkeypatch: pytest.MonkeyPatch, pooling: bool) -> None:
    from retrieval.ingest import vector_row

    monkeypatch.setattr(embed_module, "SENTENCE_POOLING", pooling)
    travel, long = (vector_row(f"c{i}", e) for i, e in enumerate(embedder.embed_documents([TRAVEL, LONG])))
    for row, question, expected in (
            (travel, "How much is the meal per diem?", "per diem"),
            (travel, "What is the nightly hotel limit in Boston?", "USD 250"),
            (travel, "Do I need a receipt for a small expense?", "Receipts"),
            (long, "How fast may forklifts drive in the warehouse?", "forklift")):
        q = embedder.embed_query(question, vectors=(DENSE,))[DENSE]
        found = best_sentence(row, q)
        assert found is not None and expected in found[0], (question, found)


def test_pooled_sentence_vectors_stay_close_to_standalone_ones(embedder: Embedder,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    pooled = embedder.embed_documents([TRAVEL])[0]
    monkeypatch.setattr(embed_module, "SENTENCE_POOLING", False)
    alone = embedder.embed_documents([TRAVEL])[0]
    assert pooled.sentences == alone.sentences
    cos = (pooled.sentence_vecs * alone.sentence_vecs).sum(axis=1)
    assert np.median(cos) > 0.5, cos  # measured on the GitLab handbook: mean 0.65 (see docs/benchmarks.md)


def test_sentence_spans_survive_collapsed_whitespace_and_skip_the_heading() -> None:
    text = "Hotels > Boston\nThe limit is USD 250, e.g.  for one night. Hotels are booked early."
    spans = _sentence_spans(text, ["The limit is USD 250, e.g. for one night.", "Hotels are booked early.",
                                   "Not in the text."])
    assert spans[0] is not None and text[spans[0][0]:spans[0][1]] == "The limit is USD 250, e.g.  for one night."
    assert spans[1] is not None and text[spans[1][0]:spans[1][1]] == "Hotels are booked early."
    assert spans[2] is None


def test_a_sentence_the_pooling_cannot_place_is_encoded_on_its_own(embedder: Embedder,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embed_module, "_sentence_spans", lambda text, sentences: [None] * len(sentences))
    embedded = embedder.embed_documents([TRAVEL])[0]
    expected = plain(embedder, embedded.sentences)
    assert np.allclose(embedded.sentence_vecs, expected, atol=1e-5)


def test_token_counts_are_the_models_tokenizers(embedder: Embedder) -> None:
    """The chunker's budget: the same count the transformers tokenizer gives, past the model's window too."""
    reference = embedder.model.tokenizer
    for text in (TRAVEL, LONG, "سياسة السفر: الحد الأقصى للفندق 250 دولارًا في الليلة.", "", "e-mail: a@b.c"):
        expected = len(reference(text, add_special_tokens=False, truncation=False, verbose=False)["input_ids"])
        assert embedder.count_tokens(text) == expected, text


def test_ingestion_embeds_without_torch() -> None:
    """Serving and ingestion need neither torch nor sentence-transformers (they are the `train` extra)."""
    import subprocess
    import sys

    script = ("import sys; from retrieval.embed import Embedder; e = Embedder(multilingual=False); "
              f"[d] = e.embed_documents([{LONG!r}]); assert e.count_tokens({LONG!r}) > 256; "
              "assert d.sentence_vecs.shape == (31, 384); "
              "heavy = sorted({'torch', 'sentence_transformers', 'transformers'} & set(sys.modules)); "
              "print(heavy)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
