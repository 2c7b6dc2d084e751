"""A local cross-encoder (``BaseCrossEncoder``) and the pair format the compressor feeds it.

:class:`LocalCrossEncoder` loads a sequence-classification checkpoint (one logit per pair)
from a directory, never from a hub. :func:`default_reranker_path` is the checkpoint shipped in
the package (fine-tuned by ``langmem-cog train-reranker`` from the packaged MiniLM on
LongMemEval-S dev only; see ``training.json`` beside it). :func:`format_pair` writes the
ConvMemory v2 pair: ``("QUERY_TIME: {max_pos}. {query}", "MEMORY_TIME: {pos}. {text}")``.

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

from langmem_cog.errors import InvalidInputError, ModelNotFoundError

__all__ = ["LocalCrossEncoder", "default_reranker_path", "format_pair"]

logger = logging.getLogger(__name__)


def format_pair(query: str, text: str, *, pos: int | None, max_pos: int | None) -> tuple[str, str]:
    """The (query, memory) pair with chronological positions, as the reranker was trained."""
    q = f"QUERY_TIME: {max_pos}. {query}" if max_pos is not None else query
    m = f"MEMORY_TIME: {pos}. {text}" if pos is not None else text
    return q, m


def default_reranker_path() -> Path:
    """The shipped reranker checkpoint (``langmem_cog/models/reranker``).

    Raises:
        ModelNotFoundError: If the package was installed without it.
    """
    path = Path(str(resources.files("langmem_cog") / "models" / "reranker"))
    if not (path / "config.json").exists():
        raise ModelNotFoundError(
            f"no reranker checkpoint at {path}: reinstall langmem-cog, or train one with "
            "`langmem-cog train-reranker --out DIR` and pass its directory"
        )
    return path


class LocalCrossEncoder(BaseCrossEncoder):
    """Score (query, memory) pairs with a local sequence-classification checkpoint.

    Args:
        path: A checkpoint directory (``config.json``, weights, tokenizer files).
        max_length: Token limit of a pair (the longer side is truncated).
        batch_size: Pairs per forward pass.
        threads: torch intra-op threads while scoring (``None``: leave torch's setting).

    Raises:
        ModelNotFoundError: If ``path`` holds no checkpoint.
    """

    def __init__(self, path: str | Path, *, max_length: int = 128, batch_size: int = 32, threads: int | None = None) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.path = Path(path)
        if not (self.path / "config.json").exists():
            raise ModelNotFoundError(f"no cross-encoder checkpoint (config.json) in {self.path}: pass a checkpoint directory")
        if max_length < 8:
            raise InvalidInputError(f"max_length={max_length} is too small: use at least 8 tokens")
        self.max_length = max_length
        self.batch_size = batch_size
        self.threads = threads
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(
            str(self.path), local_files_only=True, num_labels=1, dtype=torch.float32
        )
        model.eval()
        self.model = model
        self._lock = threading.Lock()

    def score(self, text_pairs: list[tuple[str, str]]) -> list[float]:
        """One relevance logit per (query, memory) pair (higher is more relevant)."""
        import torch

        pairs = list(text_pairs)
        for p in pairs:
            if not (isinstance(p, Sequence) and len(p) == 2 and all(isinstance(x, str) for x in p)):
                raise InvalidInputError(f"cross-encoder input {p!r} is not a (query, text) pair of strings")
        if not pairs:
            return []
        out: list[float] = []
        with self._lock:
            prev = torch.get_num_threads()
            if self.threads:
                torch.set_num_threads(self.threads)
            try:
                with torch.inference_mode():
                    for i in range(0, len(pairs), self.batch_size):
                        chunk = pairs[i : i + self.batch_size]
                        enc = self.tokenizer([a for a, _ in chunk], [b for _, b in chunk], padding=True,
                                             truncation="longest_first", max_length=self.max_length, return_tensors="pt")
                        logits = self.model(**enc).logits.reshape(-1)
                        out.extend(float(x) for x in logits)
            finally:
                if self.threads:
                    torch.set_num_threads(prev)
        return out

    def __repr__(self) -> str:
        return f"LocalCrossEncoder({str(self.path)!r}, max_length={self.max_length})"


def load_backbone(path: str | Path) -> Any:
    """A fresh one-logit sequence-classification model on a (bi-encoder) backbone, and its tokenizer."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    p = Path(path)
    if not (p / "config.json").exists():
        raise ModelNotFoundError(f"no transformer checkpoint in {p}: pass a model directory")
    tok = AutoTokenizer.from_pretrained(str(p), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(
        str(p), local_files_only=True, num_labels=1, dtype=torch.float32, ignore_mismatched_sizes=True
    )
    return model, tok
