"""A local cross-encoder (``BaseCrossEncoder``) and the pair format the compressor feeds it.

:class:`LocalCrossEncoder` loads a sequence-classification checkpoint (one logit per pair)
from a directory, never from a hub. :func:`default_reranker_path` is the checkpoint shipped in
the package (fine-tuned by ``langmem-cog train-models`` from the packaged MiniLM on LoCoMo and
LongMemEval-S dev; see ``training.json`` beside it). :func:`format_pair` writes the
ConvMemory v2 pair: ``("QUERY_TIME: {max_pos}. {query}", "MEMORY_TIME: {pos}. {text}")`` (the shipped
checkpoint is trained on plain ``(query, text)`` pairs instead; its ``cascade.json`` says which).

Example:
    >>> format_pair("Where does Leo work?", "Leo: I started at the bakery.", pos=41, max_pos=104)
    ('QUERY_TIME: 104. Where does Leo work?', 'MEMORY_TIME: 41. Leo: I started at the bakery.')
    >>> ce = LocalCrossEncoder(default_reranker_path())  # doctest: +SKIP
    >>> ce.score([("QUERY_TIME: 3. Who is allergic?", "MEMORY_TIME: 1. Leo: I am allergic to shellfish.")])  # doctest: +SKIP
    [2.71]
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from langchain_core.cross_encoders import BaseCrossEncoder

from langmem_cog.embeddings import torch_threads
from langmem_cog.errors import InvalidInputError, ModelNotFoundError
from langmem_cog.loading import loading

__all__ = ["POOLINGS", "LocalCrossEncoder", "check_threads", "default_reranker_path", "format_pair", "length_batches", "pair_logits"]

logger = logging.getLogger(__name__)


def format_pair(query: str, text: str, *, pos: int | None, max_pos: int | None) -> tuple[str, str]:
    """The (query, memory) pair with chronological positions, as the reranker was trained."""
    q = f"QUERY_TIME: {max_pos}. {query}" if max_pos is not None else query
    m = f"MEMORY_TIME: {pos}. {text}" if pos is not None else text
    return q, m


def check_threads(threads: Any, name: str = "threads") -> None:
    """Raise ``InvalidInputError`` unless ``threads`` is ``None`` or a thread count of at least 1.

    Example:
        >>> check_threads(2)
        >>> check_threads(0, "score_threads")
        Traceback (most recent call last):
        ...
        langmem_cog.errors.InvalidInputError: score_threads=0 is invalid: pass a thread count of at least 1, or None
    """
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise InvalidInputError(f"{name}={threads!r} is invalid: pass a thread count of at least 1, or None")


def default_reranker_path() -> Path:
    """The shipped reranker checkpoint (``langmem_cog/models/reranker``).

    Raises:
        ModelNotFoundError: If the package was installed without it.
    """
    path = Path(str(resources.files("langmem_cog") / "models" / "reranker"))
    if not (path / "config.json").exists():
        raise ModelNotFoundError(
            f"no reranker checkpoint at {path}: reinstall langmem-cog, or train one with "
            "`langmem-cog train-models --out DIR` and pass its directory"
        )
    return path


class LocalCrossEncoder(BaseCrossEncoder):
    """Score (query, memory) pairs with a local sequence-classification checkpoint.

    Pairs are tokenized once, sorted by length and cut into the batches that waste the least
    padding (:func:`length_batches`), so a few long memories do not make every pair pay for them.
    The forward pass runs in ONNX Runtime by default (about a fifth faster on ten pairs, 2 cores).

    Args:
        path: A checkpoint directory (``config.json``, weights, tokenizer files).
        max_length: Token limit of a pair (the longer side is truncated).
        batch_size: At most this many pairs per forward pass.
        threads: Intra-op threads while scoring (``None``: torch's setting).
        quantize: Run the linear layers in int8: faster on CPU, scores shift slightly. On ``onnx``,
            ONNX Runtime's per-channel dynamic quantisation of the exported graph
            (:func:`langmem_cog.runtime.quantize_int8`); on ``torch``, torch's dynamic quantisation.
        backend: ``auto`` (``onnx`` when ONNX Runtime is installed), ``onnx`` or ``torch``
            (:mod:`langmem_cog.runtime`). The ``onnx`` backend runs the same fp32 weights, exported
            once by :func:`langmem_cog.runtime.onnx_session`: logits agree with torch's to ~1e-5.
        cache_dir: The cache directory (``CogMemConfig.cache_dir``): the ``onnx`` backend keeps the
            graphs it exports in its ``onnx/`` folder (:func:`~langmem_cog.runtime.onnx_cache_dir`);
            ``None``: :func:`~langmem_cog.config.default_cache_dir`.

    Raises:
        ModelNotFoundError: If ``path`` holds no checkpoint.
    """

    def __init__(self, path: str | Path, *, max_length: int = 128, batch_size: int = 32, threads: int | None = None,
                 quantize: bool = False, backend: str = "auto", cache_dir: str | Path | None = None) -> None:
        from langmem_cog.runtime import resolve_backend

        self.path = Path(path)
        if not (self.path / "config.json").exists():
            raise ModelNotFoundError(f"no cross-encoder checkpoint (config.json) in {self.path}: pass a checkpoint directory")
        if max_length < 8:
            raise InvalidInputError(f"max_length={max_length} is too small: use at least 8 tokens")
        check_threads(threads)
        self.max_length = max_length
        self.batch_size = batch_size
        self.threads = threads
        self.quantize = quantize
        self.backend = resolve_backend(backend)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._model: Any = None
        self._session: Any = None
        self._lock = threading.Lock()
        with loading():
            if self.backend == "onnx" and (self.path / "tokenizer.json").is_file():
                from langmem_cog.runtime import FileTokenizer  # transformers' tokens, without importing it (and torch)

                self.tokenizer: Any = FileTokenizer(self.path)
            else:
                from transformers import AutoTokenizer

                self.tokenizer = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
            if self.backend == "onnx":
                from langmem_cog.runtime import onnx_cache_dir, onnx_session

                self._session = onnx_session(self.path, kind="pair_logit", threads=threads, int8=quantize,
                                             build=lambda: _pair_logit_module(self._fp32()),
                                             cache_dir=onnx_cache_dir(self.cache_dir))
            else:
                _ = self.model

    @property
    def model(self) -> Any:
        """The torch checkpoint (loaded on first use: the ``onnx`` backend needs it only to export)."""
        if self._model is None:
            model = self._fp32()
            self._model = _quantize_int8(model) if self.quantize and self.backend == "torch" else model
        return self._model

    def _fp32(self) -> Any:
        with loading(models=True):
            import torch
            from transformers import AutoModelForSequenceClassification

            model = AutoModelForSequenceClassification.from_pretrained(
                str(self.path), local_files_only=True, num_labels=1, dtype=torch.float32
            )
        return model.eval()

    def score(self, text_pairs: list[tuple[str, str]]) -> list[float]:
        """One relevance logit per (query, memory) pair (higher is more relevant)."""
        pairs = list(text_pairs)
        for p in pairs:
            if not (isinstance(p, Sequence) and len(p) == 2 and all(isinstance(x, str) for x in p)):
                raise InvalidInputError(f"cross-encoder input {p!r} is not a (query, text) pair of strings")
        if not pairs:
            return []
        scores = [0.0] * len(pairs)
        enc = self.tokenizer([a for a, _ in pairs], [self._clip(b) for _, b in pairs], truncation="longest_first",
                             max_length=self.max_length)
        batches = length_batches([len(x) for x in enc["input_ids"]], self.batch_size)
        if self._session is not None:
            from langmem_cog.runtime import run_session

            for batch in batches:
                padded = self.tokenizer.pad({k: [v[i] for i in batch] for k, v in enc.items()}, return_tensors="np")
                for i, x in zip(batch, run_session(self._session, padded).reshape(-1).tolist(), strict=True):
                    scores[i] = float(x)
            return scores
        import torch

        with self._lock, torch_threads(self.threads or None), torch.inference_mode():
            for batch in batches:
                padded = self.tokenizer.pad({k: [v[i] for i in batch] for k, v in enc.items()}, return_tensors="pt")
                for i, x in zip(batch, pair_logits(self.model, padded).tolist(), strict=True):
                    scores[i] = float(x)
        return scores

    def _clip(self, text: str) -> str:
        """``text`` cut at a space after enough words that truncation keeps the same tokens.

        A pair keeps at most ``max_length`` tokens, so a long memory's tail never reaches the model,
        yet tokenizing it costs more than scoring on long turns. The cut is made only when the kept
        words give ``max_length`` tokens or more for sure (that many of them hold a letter or digit,
        each at least one token); then ``longest_first`` truncation ends with the same tokens as on
        the whole text (``test_clipping_long_memories_keeps_the_tokens``).
        """
        words = 2 * self.max_length
        if len(text) <= 8 * words:
            return text
        cut = -1
        for _ in range(words):
            cut = text.find(" ", cut + 1)
            if cut < 0:
                return text
        head = text[:cut]
        if sum(1 for w in head.split() if any(c.isalnum() for c in w)) < self.max_length:
            return text
        return head

    def __repr__(self) -> str:
        return (f"LocalCrossEncoder({str(self.path)!r}, max_length={self.max_length}, quantize={self.quantize}, "
                f"backend={self.backend!r})")


#: The fixed cost of one forward pass, in padded tokens, used by :func:`length_batches`. Timing ten
#: pairs one pass each against one padded pass on MiniLM-L6 (2 CPU cores) put it at 50-80 tokens.
PASS_COST_TOKENS = 64


def length_batches(lengths: Sequence[int], max_batch: int, pass_cost: int = PASS_COST_TOKENS) -> list[list[int]]:
    """Indices of sequences grouped into batches of similar length, minimising padded tokens + passes.

    The sequences are sorted by length and cut into contiguous runs (dynamic programming over the
    cut points); a batch costs ``its longest length x its size + pass_cost``.

    Args:
        lengths: Token count of each sequence.
        max_batch: At most this many sequences per batch.
        pass_cost: The fixed cost of one forward pass, in tokens.

    Returns:
        Lists of indices into ``lengths``; every index appears exactly once.

    Example:
        >>> length_batches([60, 12, 11, 58, 10], max_batch=8)
        [[4, 2, 1], [3, 0]]
        >>> length_batches([5, 5, 5], max_batch=2)
        [[0], [1, 2]]
    """
    if max_batch < 1:
        raise InvalidInputError(f"max_batch={max_batch!r} must be at least 1")
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    n = len(order)
    best = [0.0] + [float("inf")] * n  # best[j]: cheapest cost of the first j sorted sequences
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(max(0, j - max_batch), j):
            cost = best[i] + lengths[order[j - 1]] * (j - i) + pass_cost
            if cost < best[j]:
                best[j], cut[j] = cost, i
    batches: list[list[int]] = []
    j = n
    while j > 0:
        batches.append(order[cut[j] : j])
        j = cut[j]
    return batches[::-1]


def _quantize_int8(model: Any) -> Any:
    """The model with its linear layers in dynamic int8 (CPU inference only)."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao's deprecation notice; the API is still the supported CPU path
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


#: Pooling of a pair's token states before the one-logit head: ``cls`` (the model's own pooler over the
#: first token, as Hugging Face models do) or ``mean`` (the mean over the pair's tokens). Recorded in the
#: checkpoint's ``config.json`` as ``lmc_pooling``.
POOLINGS = ("cls", "mean")


def pair_logits(model: Any, enc: Any) -> Any:
    """One relevance logit per encoded pair, pooled as the checkpoint was trained (``lmc_pooling``).

    A sentence-transformers backbone cut to its first layers keeps a first-token state that hardly
    depends on the input (it was trained with mean pooling), so a ``cls`` head on it learns next to
    nothing; ``mean`` pooling reads every token.
    """
    if getattr(model.config, "lmc_pooling", "cls") != "mean":
        return model(**enc).logits.reshape(-1)
    base = getattr(model, model.base_model_prefix)
    hidden = base(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
    return model.classifier(model.dropout(pooled)).reshape(-1)


def _pair_logit_module(model: Any) -> Any:
    """The torch module exported for the ``onnx`` backend: :func:`pair_logits` over token ids."""
    import torch

    class PairLogit(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return pair_logits(self.model, {"input_ids": input_ids, "attention_mask": attention_mask,
                                            "token_type_ids": token_type_ids})

    return PairLogit()


def load_backbone(path: str | Path, *, num_layers: int | None = None, pooling: str | None = None) -> Any:
    """A one-logit sequence-classification model on a backbone, and its tokenizer.

    Args:
        path: A transformer directory (a bi-encoder: the head starts random; a cross-encoder: kept).
        num_layers: Keep only the first N transformer layers (``None``: all of them).
        pooling: One of :data:`POOLINGS` (``None``: the checkpoint's own, ``cls`` if it has none).

    Raises:
        ModelNotFoundError: If ``path`` holds no checkpoint.
        InvalidInputError: If ``num_layers`` is not between 1 and the backbone's depth, or ``pooling``
            is unknown or ``mean`` on a model without a BERT-style classifier.
    """
    p = Path(path)
    if not (p / "config.json").exists():
        raise ModelNotFoundError(f"no transformer checkpoint in {p}: pass a model directory")
    with loading(models=True):
        return _load_backbone(p, num_layers, pooling)


def _load_backbone(p: Path, num_layers: int | None, pooling: str | None) -> Any:
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(p), local_files_only=True)
    config = AutoConfig.from_pretrained(str(p), local_files_only=True, num_labels=1)
    if num_layers is not None:
        depth = int(getattr(config, "num_hidden_layers", 0))
        if isinstance(num_layers, bool) or not 1 <= num_layers <= depth:
            raise InvalidInputError(f"num_layers={num_layers!r} is invalid for {p} ({depth} layers): pass 1..{depth} or None")
        config.num_hidden_layers = num_layers  # the first N layers' weights load; the rest are not built
    if pooling is not None:
        if pooling not in POOLINGS:
            raise InvalidInputError(f"pooling={pooling!r} is unknown: use one of {POOLINGS}")
        config.lmc_pooling = pooling
    model = AutoModelForSequenceClassification.from_pretrained(
        str(p), config=config, local_files_only=True, dtype=torch.float32, ignore_mismatched_sizes=True
    )
    if getattr(model.config, "lmc_pooling", "cls") == "mean" and not (
        hasattr(model, "classifier") and hasattr(model, "dropout")
    ):
        raise InvalidInputError(f"pooling='mean' needs a BERT-style classifier head; {p} has none: use 'cls'")
    return model, tok
