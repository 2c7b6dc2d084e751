"""Scoring and search of a raw-turn store's namespaces, and the cache of recent query vectors.

:class:`TurnSearch` does the reads of :class:`~langmem_cog.store.TurnStore` that score turns against a query:
the dense and BM25 scores of a whole namespace (the exact path), the cosines of a few stored turns, their
stored vectors, and hybrid (or dense-only, or lexical-only) search, exact for namespaces up to
``config.search.exact_search_max`` turns and over the union of Chroma's HNSW and BM25's top candidates for
larger ones. It keeps the vectors of the last :data:`QUERY_VECTOR_CACHE` queries (the raw scores and the
operator loop embed the same query).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import get_args

import numpy as np

from langmem_cog.checks import nonnegative_weight, positive_int
from langmem_cog.config import CogMemConfig, FusionRule
from langmem_cog.errors import InvalidInputError
from langmem_cog.records import Turn
from langmem_cog.storage.cache import Cache
from langmem_cog.storage.chroma import collection_gone
from langmem_cog.storage.inputs import check_query
from langmem_cog.storage.namespaces import Namespaces
from langmem_cog.storage.scoring import fuse
from langmem_cog.storage.server import drift_read
from langmem_cog.storage.types import PoolScores, ScoredTurn, SearchMode

__all__ = ["QUERY_VECTOR_CACHE", "TurnSearch"]

#: How many recent query vectors :meth:`TurnSearch.embed_query` keeps.
QUERY_VECTOR_CACHE = 256


class TurnSearch:
    """The scoring and search of a store's namespaces, with the store's cache of recent query vectors.

    The caller checks the freshness of the namespace first (once per public call) and turns a
    :class:`~langmem_cog.storage.chroma.NamespaceGone` into a plain ``UnknownNamespaceError``.

    Args:
        config: The store's configuration (its ``search`` settings).
        spaces: The store's per-namespace state.
        load: Returns a namespace's in-memory copy, loaded from Chroma on first use (the caller holds the
            namespace lock).
        embed: Embeds texts (L2-normalised float32 rows; the store's embedder).
        require: Raises ``UnknownNamespaceError`` unless the namespace exists.
        get_turns: The stored turns of the given ids of a namespace, in the given order (unknown ids skipped);
            raises ``NamespaceGone`` if the namespace vanishes while being read.

    Example:
        >>> from contextlib import nullcontext
        >>> config = CogMemConfig.preset("ephemeral")
        >>> spaces = Namespaces(config, client=lambda: None, embedding_function=None,
        ...                     embed=lambda texts: np.ones((len(texts), 2)), embedder_name="Fake",
        ...                     dir_lock_unless_writing=lambda: nullcontext(True))
        >>> search = TurnSearch(config, spaces, load=lambda ns: Cache(), embed=lambda texts: np.ones((len(texts), 2)),
        ...                     require=lambda ns: None, get_turns=lambda ns, ids: [])
        >>> search.embed_query("hello") is search.embed_query("hello")
        True
    """

    def __init__(
        self,
        config: CogMemConfig,
        spaces: Namespaces,
        *,
        load: Callable[[str], Cache],
        embed: Callable[[list[str]], np.ndarray],
        require: Callable[[str], None],
        get_turns: Callable[[str, Sequence[str] | None], list[Turn]],
    ) -> None:
        self.config = config
        self._spaces = spaces
        self._load = load
        self._embed = embed
        self._require_namespace = require
        self._get_turns = get_turns
        self._lock = threading.RLock()  # the query vectors
        self._query_vectors: OrderedDict[str, np.ndarray] = OrderedDict()

    def _require(self, namespace: str) -> Cache:
        """The namespace's in-memory copy.

        Raises:
            UnknownNamespaceError: If the namespace does not exist.
        """
        self._require_namespace(namespace)
        return self._load(namespace)

    def embed_query(self, query: str) -> np.ndarray:
        """The normalised query vector (read-only; the last :data:`QUERY_VECTOR_CACHE` queries are cached)."""
        check_query(query)
        with self._lock:
            qv = self._query_vectors.get(query)
            if qv is not None:
                self._query_vectors.move_to_end(query)
                return qv
        return self.cache_query_vector(query, self._embed([query])[0])

    def cache_query_vector(self, query: str, vector: np.ndarray) -> np.ndarray:
        """Keep ``vector`` as the cached embedding of ``query``; returns the cached read-only copy.

        Raises:
            InvalidInputError: If ``vector`` is not one finite 1-D vector.
        """
        check_query(query)
        qv = np.array(vector, dtype=np.float32)
        if qv.ndim != 1 or not qv.size or not np.isfinite(qv).all():
            raise InvalidInputError(
                f"query vector for {query[:40]!r} has shape {qv.shape} or non-finite values: pass one finite 1-D "
                "vector from this store's embedder"
            )
        qv.setflags(write=False)
        with self._lock:
            self._query_vectors[query] = qv
            self._query_vectors.move_to_end(query)
            while len(self._query_vectors) > QUERY_VECTOR_CACHE:
                self._query_vectors.popitem(last=False)
        return qv

    def clear_query_cache(self) -> None:
        """Forget the cached query vectors."""
        with self._lock:
            self._query_vectors.clear()

    def pool_scores(
        self, namespace: str, query: str, query_vector: np.ndarray | None = None, *, context: bool = False
    ) -> PoolScores:
        """Dense and BM25 scores of every turn of the namespace (the exact path); see
        :meth:`TurnStore.pool_scores <langmem_cog.store.TurnStore.pool_scores>`.

        Raises:
            UnknownNamespaceError: If the namespace does not exist.
            ConfigError: If the query vector's dimension is not that of the namespace's stored vectors.
        """
        check_query(query)
        qv = query_vector
        if qv is None and context:  # before the context vectors are built: another embedder is named first
            qv = self.embed_query(query)
        with self._spaces.lock(namespace):
            cache = self._require(namespace)
            ids = list(cache.ids)
            emb = cache.emb
            if qv is not None:
                self._spaces.check_dimension(namespace, emb, np.shape(qv)[-1])
            ctx = self._spaces.context_matrix(namespace, cache) if context and ids else None
            ctx_index = self._spaces.contexts[namespace] if ctx is not None else None
        if qv is None:
            qv = self.embed_query(query)
            self._spaces.check_dimension(namespace, emb, np.shape(qv)[-1])
        dense = emb @ qv if emb is not None and len(ids) else np.zeros(0, dtype=np.float32)
        lexical = self._spaces.lexical_index(namespace).scores_for(query, ids)
        context_dense = context_lexical = None
        if ctx is not None and ctx_index is not None:
            context_dense = np.asarray(ctx @ qv, dtype=np.float64)
            context_lexical = ctx_index.lexical_scores(query, ids).astype(np.float64)
        return PoolScores(ids=ids, dense=np.asarray(dense, dtype=np.float64), lexical=lexical.astype(np.float64),
                          context=context_dense, context_lexical=context_lexical)

    def stored_rows(self, namespace: str, ids: Iterable[str]) -> tuple[list[str], np.ndarray | None, np.ndarray | None]:
        """The ids of ``ids`` the namespace holds (each once, in order), their stored vectors (a copy;
        ``None`` when none is held) and the namespace's whole vector matrix (``None`` when empty).

        Raises:
            UnknownNamespaceError: If the namespace does not exist.
        """
        with self._spaces.lock(namespace):
            cache = self._require(namespace)
            found = [(i, cache.pos[i]) for i in dict.fromkeys(ids) if i in cache.pos]
            emb = cache.emb
            rows = emb[[r for _, r in found]] if emb is not None and found else None
        return [i for i, _ in found], rows, emb

    def dense_scores(self, namespace: str, ids: Iterable[str], query_vector: np.ndarray) -> dict[str, float]:
        """The cosine of ``query_vector`` to each of the turns of ``ids`` the namespace holds.

        Raises:
            UnknownNamespaceError: If the namespace does not exist.
            ConfigError: If the vector's dimension is not that of the namespace's stored vectors.
        """
        found, rows, emb = self.stored_rows(namespace, ids)
        if emb is not None:
            self._spaces.check_dimension(namespace, emb, np.shape(query_vector)[-1])
        if rows is None:
            return {}
        return {i: float(d) for i, d in zip(found, rows @ query_vector, strict=True)}

    def stored_vectors(self, namespace: str, ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored vectors of the turns of ``ids`` the namespace holds, by turn id.

        Raises:
            UnknownNamespaceError: If the namespace does not exist.
        """
        found, rows, _ = self.stored_rows(namespace, ids)
        return {} if rows is None else dict(zip(found, rows, strict=True))

    def search(
        self,
        namespace: str,
        query: str,
        k: int = 10,
        *,
        mode: SearchMode = "hybrid",
        lexical_weight: float | None = None,
        fusion: str | None = None,
    ) -> list[ScoredTurn]:
        """Hybrid (or dense-only, or lexical-only) search over one namespace; see
        :meth:`TurnStore.search <langmem_cog.store.TurnStore.search>`.

        Raises:
            InvalidInputError: If the query, ``k``, ``mode``, ``lexical_weight`` or ``fusion`` is invalid.
            UnknownNamespaceError: If the namespace does not exist.
            ConfigError: If the embedder's vectors have another dimension than the namespace's stored ones.
        """
        check_query(query)
        k = positive_int(k, "k")
        if mode not in get_args(SearchMode):
            raise InvalidInputError(f"mode={mode!r} is invalid: use one of {list(get_args(SearchMode))}")
        weight = self.config.search.lexical_weight if lexical_weight is None else nonnegative_weight(lexical_weight, "lexical_weight")
        rule = fusion or self.config.search.fusion
        if rule not in get_args(FusionRule):
            raise InvalidInputError(f"fusion={rule!r} is invalid: use one of {list(get_args(FusionRule))}")
        with self._spaces.lock(namespace):
            cache = self._require(namespace)
            n = len(cache.ids)
        if n <= self.config.search.exact_search_max:
            pool = self.pool_scores(namespace, query)
        else:
            pool = self.candidate_scores(namespace, query)
        fused = fuse(pool, mode, weight, rule, self.config.search.rrf_k)
        k_eff = min(k, len(pool.ids))
        if k_eff == 0:
            return []
        top = np.argpartition(-fused, k_eff - 1)[:k_eff] if k_eff < len(fused) else np.arange(len(fused))
        top = top[np.lexsort((top, -fused[top]))]
        with self._spaces.lock(namespace):
            turns = self._get_turns(namespace, [pool.ids[i] for i in top])
        by_id = {t.id: t for t in turns}
        return [
            ScoredTurn(
                turn=by_id[pool.ids[i]],
                score=float(fused[i]),
                dense_score=float(pool.dense[i]),
                lexical_score=float(pool.lexical[i]),
                rank=r,
            )
            for r, i in enumerate(top, 1)
            if pool.ids[i] in by_id
        ]

    def candidate_scores(self, namespace: str, query: str) -> PoolScores:
        """The HNSW path: union of Chroma's and BM25's top candidates, both scored."""
        col = self._spaces.collection(namespace, create=False)
        qv = self.embed_query(query)
        n = self.config.search.candidates
        if col is None:
            raise self._spaces.gone(namespace)
        with self._spaces.lock(namespace):
            self._spaces.check_dimension(namespace, self._load(namespace).emb, len(qv))
        try:
            res = drift_read(lambda: col.query(query_embeddings=[qv], n_results=n, include=["distances"]),
                              what=f"namespace {namespace!r}: nearest turns")
        except Exception as exc:  # as in CacheLoader.read (langmem_cog.storage.loading)
            if collection_gone(exc):
                raise self._spaces.gone(namespace) from exc
            raise
        dense_ids = res["ids"][0]
        lex = self._spaces.lexical_index(namespace).search(query, n)
        ids = list(dict.fromkeys([*dense_ids, *(i for i, _ in lex)]))
        cache = self._load(namespace)
        rows = [cache.pos[i] for i in ids if i in cache.pos]
        ids = [cache.ids[r] for r in rows]
        dense = cache.emb[rows] @ qv if rows and cache.emb is not None else np.zeros(0)
        lexical = self._spaces.lexical_index(namespace).scores_for(query, ids)
        return PoolScores(ids=ids, dense=np.asarray(dense, dtype=np.float64), lexical=lexical.astype(np.float64))
