"""``CogMemStore``: a LangGraph ``BaseStore`` whose ``search`` runs langmem-cog's retrieval.

Exact-key operations (``get``, ``put``, ``delete``, ``list_namespaces`` and searches without a
query) go to a wrapped store, which stays the store of the items' values: an ``InMemoryStore``
over an ephemeral memory, a ``SqliteStore`` file in the memory's data directory over a persistent
one (so a new process finds what an earlier one put), or any ``BaseStore`` given as ``inner``.
Every indexed ``put`` is also written as a raw turn to a :class:`~langmem_cog.memory.CogMemory`
namespace (``("memories", "alice")`` -> ``memories.alice``, see :func:`default_namespace_mapper`),
and searches *with* a query rank the items there through :class:`~langmem_cog.CogMemRetriever`
(the plain hybrid search by default, ``mode="cascade"`` for the cascade). ``SearchItem.score`` is
the cosine similarity of the query and the item's turn, as with LangGraph's ``InMemoryStore``:
bounded (``[-1, 1]``) and comparable across namespaces and users. So existing
store-based LangGraph code and langmem-style memory tools work unchanged, with better search.

Example:
    >>> import uuid
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langmem_cog import CogMemConfig
    >>> from langmem_cog.memory import CogMemory
    >>> mem = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=DeterministicFakeEmbedding(size=32))
    >>> store = CogMemStore(mem)
    >>> user = ("memories", "doc-" + uuid.uuid4().hex[:8])
    >>> store.put(user, "m1", {"content": "Ana is allergic to peanuts"})
    >>> store.put(user, "m2", {"content": "Ana plays the cello"})
    >>> store.get(user, "m1").value
    {'content': 'Ana is allergic to peanuts'}
    >>> hit = store.search(user[:1], query="peanut allergy", limit=1)[0]
    >>> hit.key, -1.0 <= hit.score <= 1.0
    ('m1', True)
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import json
import logging
import math
import operator
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from langmem_cog.config import RetrievalMode
from langmem_cog.errors import ConfigError, InvalidInputError
from langmem_cog.records import NAMESPACE_PATTERN, Turn, make_turn, split_text, storable_speaker, storable_text
from langmem_cog.retriever import CogMemRetriever

if TYPE_CHECKING:
    from langmem_cog.memory import CogMemory

__all__ = ["CogMemStore", "HASHED_PREFIX", "INNER_STORE_FILE", "default_namespace_mapper", "item_text"]

logger = logging.getLogger(__name__)

_TEXT_FIELDS = ("content", "text", "memory")
_ID_OK = NAMESPACE_PATTERN  # conservative: keys that are valid namespaces are valid turn ids

#: Prefix of the hashed CogMem namespace ids :func:`default_namespace_mapper` gives; a readable id
#: never starts with it.
HASHED_PREFIX = "store-"

#: The file, in the memory's data directory, of the default inner store over a persistent memory.
INNER_STORE_FILE = "langgraph_store.sqlite"

_LABEL = re.compile(r"[A-Za-z0-9_:@-]+")  # a readable label: a namespace id's characters, no "."


def default_namespace_mapper(namespace: tuple[str, ...]) -> str:
    """The CogMem namespace id of a store namespace tuple; distinct tuples get distinct ids.

    The labels joined by ``.`` when every label is non-empty, made of ``A-Z a-z 0-9 _ : @ -``
    only (no ``.``), and the join is a valid namespace id (at most 128 characters, starting with a
    letter or digit) that does not start with :data:`HASHED_PREFIX`; every other tuple maps to
    ``store-`` plus the first 32 hex digits of the SHA-256 of its JSON encoding. Readable ids split
    back into their labels at the dots and never start with ``store-``, and hashed ids differ
    unless SHA-256 collides, so the mapping is injective.

    Example:
        >>> default_namespace_mapper(("memories", "alice"))
        'memories.alice'
        >>> default_namespace_mapper(("notes", "bob smith"))
        'store-f466aefb3aedd9f19cbbf406c016611e'
        >>> default_namespace_mapper(("store-f466aefb3aedd9f19cbbf406c016611e",))
        'store-ae14acbbf7d5fbfb5fe278eff8b08856'
    """
    labels = list(namespace)
    joined = ".".join(x if isinstance(x, str) else "" for x in labels)
    if (
        labels
        and all(isinstance(x, str) and _LABEL.fullmatch(x) for x in labels)
        and NAMESPACE_PATTERN.fullmatch(joined)
        and not joined.startswith(HASHED_PREFIX)
    ):
        return joined
    return HASHED_PREFIX + hashlib.sha256(json.dumps(list(namespace), default=str).encode()).hexdigest()[:32]


def _path(value: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def item_text(value: Mapping[str, Any], fields: Iterable[str] | None = None) -> str:
    """The text indexed for an item: the given fields (dotted paths), else its ``content`` /
    ``text`` / ``memory`` field, else the whole value as JSON.

    Example:
        >>> item_text({"content": {"name": "Ana", "likes": "cello"}})
        '{"likes": "cello", "name": "Ana"}'
    """
    if fields:
        return "\n".join(t for t in (_as_text(_path(value, f)) for f in fields if f != "$") if t.strip()) or (
            _as_text(value) if "$" in fields else ""
        )
    for f in _TEXT_FIELDS:
        if f in value and _as_text(value[f]).strip():
            return _as_text(value[f])
    return _as_text(dict(value))


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq, "$ne": operator.ne, "$gt": operator.gt,
    "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le,
}


def _matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Exact-match and ``$eq/$ne/$gt/$gte/$lt/$lte`` filters on top-level fields.

    Example:
        >>> _matches({"n": 3, "kind": "fact"}, {"kind": "fact", "n": {"$gte": 2}})
        True
    """
    for key, cond in (flt or {}).items():
        have = value.get(key)
        if isinstance(cond, Mapping) and cond and all(str(o).startswith("$") for o in cond):
            for op, want in cond.items():
                if op not in _OPS:
                    raise InvalidInputError(f"unknown filter operator {op!r}: use one of {sorted(_OPS)}")
                if op not in ("$eq", "$ne") and have is None:
                    return False
                try:
                    ok = bool(_OPS[op](have, want))
                except TypeError:
                    ok = False
                if not ok:
                    return False
        elif have != cond:
            return False
    return True


def _cosine(value: Any) -> float | None:
    """A retriever's ``dense_score`` as a cosine similarity in ``[-1, 1]`` (``None`` if missing)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(x):
        return None
    return min(1.0, max(-1.0, x))  # float32 vectors: a unit dot product may round past 1


def _sqlite_store(path: Path) -> BaseStore:
    """A set-up LangGraph ``SqliteStore`` over the file ``path`` (created with its directory)."""
    try:
        from langgraph.store.sqlite import SqliteStore
    except ImportError as exc:
        raise ConfigError(
            f"CogMemStore over a persistent memory keeps item values in {path}, which needs the "
            "langgraph-checkpoint-sqlite package: pip install langgraph-checkpoint-sqlite, or pass "
            "inner= a persistent BaseStore (e.g. langgraph's PostgresStore)"
        ) from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30.0)
    store = SqliteStore(conn)
    store.setup()
    return store


class CogMemStore(BaseStore):
    """A ``BaseStore`` that delegates exact-key operations to ``inner`` and ranks searches with
    :class:`~langmem_cog.CogMemRetriever`.

    Args:
        memory: Where indexed items are written as raw turns and searched.
        inner: The store holding the values. ``None``: over a persistent memory (any preset but
            ``ephemeral``), a LangGraph ``SqliteStore`` in the file :data:`INNER_STORE_FILE` of the
            memory's data directory, so a new process over the same directory finds the items
            (``get``, ``search``) whose turns the memory kept; over an ephemeral memory, a new
            ``InMemoryStore``. An ``InMemoryStore`` passed over a persistent memory is used, with a
            logged warning: its values (and so the indexed items) are lost when the process ends.
        namespace_mapper: Store namespace tuple -> CogMem namespace id
            (default :func:`default_namespace_mapper`, injective). A custom one must be injective
            too, or the items of two store namespaces share one CogMem namespace.
        fields: Default fields indexed (dotted paths; ``None``: ``content``/``text``/``memory``,
            else the whole value). A ``put(..., index=[...])`` overrides them; ``index=False``
            stores the item without indexing it.
        speaker: Speaker of the indexed turns (an item's own ``speaker`` field wins).
        mode: The retrieval path that orders the items of a namespace (``hybrid`` by default;
            ``cascade``, ``dense``, ``lexical``; ``None``: the memory's configured one).

    Search with a ``query`` ranks the items of every namespace under the prefix with the
    retriever. ``SearchItem.score`` is the cosine similarity of the query's embedding and the
    item's turn's (``"<speaker>: <indexed text>"``, the vector the memory searches), in
    ``[-1, 1]`` like LangGraph's ``InMemoryStore``: it depends on the item and the query only, not on the other items of its namespace, so one
    threshold works for every user. Each namespace keeps the retriever's order; namespaces merge
    by the score of their next item. ``filter``, ``offset`` and ``limit`` apply to that ranking.
    Without a query (or with a blank one), search is the inner store's; ``limit=0`` finds nothing. An item
    updated by ``put`` is re-indexed; a deleted one leaves the index. The indexed text drops the characters
    no turn can hold (NUL, lone surrogates) and stops at ``MAX_TEXT_CHARS`` characters; the value is kept
    whole. A put the memory cannot index (a namespace or key it rejects) raises before anything is written. ``abatch`` runs ``batch`` in a worker thread.

    Raises:
        ConfigError: If ``inner`` is ``None`` over a persistent memory and
            ``langgraph-checkpoint-sqlite`` is not installed (the message says what to pass).
    """

    __slots__ = ("memory", "inner", "inner_path", "namespace_mapper", "fields", "speaker", "mode")

    def __init__(
        self,
        memory: CogMemory,
        inner: BaseStore | None = None,
        *,
        namespace_mapper: Callable[[tuple[str, ...]], str] = default_namespace_mapper,
        fields: list[str] | None = None,
        speaker: str = "memory",
        mode: RetrievalMode | None = "hybrid",
    ) -> None:
        self.memory = memory
        self.mode = mode
        persistent = bool(getattr(memory.store, "persistent", False))
        #: The file of the default persistent inner store (``None`` when ``inner`` was given or is in memory).
        self.inner_path: Path | None = None
        if inner is not None:
            if persistent and isinstance(inner, InMemoryStore):
                logger.warning(
                    "CogMemStore over the persistent memory in %s with an InMemoryStore as inner: item values "
                    "are lost when the process ends and their indexed turns are orphaned; pass inner=None for "
                    "a SqliteStore in the data directory", memory.store.data_dir)
            self.inner = inner
        elif persistent:
            self.inner_path = Path(memory.store.data_dir) / INNER_STORE_FILE
            self.inner = _sqlite_store(self.inner_path)
            logger.debug("CogMemStore keeps item values in %s", self.inner_path)
        else:
            self.inner = InMemoryStore()
        self.namespace_mapper = namespace_mapper
        self.fields = fields
        self.speaker = speaker

    def close(self) -> None:
        """Close the default ``SqliteStore`` this store opened (a given ``inner`` is left open)."""
        conn = getattr(self.inner, "conn", None) if self.inner_path is not None else None
        if conn is not None:
            conn.close()

    # ------------------------------------------------------------------ batch
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order: searches with a query here, everything else on ``inner``."""
        results: list[Result] = []
        run: list[Op] = []

        def flush() -> None:
            if run:
                # The index's turns are built (and checked) before anything is written: a put the
                # memory cannot index fails with nothing changed.
                indexed = self._turns([op for op in run if isinstance(op, PutOp)])
                results.extend(self.inner.batch(list(run)))
                self._index(indexed)
                run.clear()

        for op in ops:
            if isinstance(op, SearchOp) and op.query and op.query.strip():
                flush()
                results.append(self._search(op))
            elif isinstance(op, GetOp | PutOp | SearchOp | ListNamespacesOp):
                run.append(op)
            else:
                raise InvalidInputError(f"unknown store operation {type(op).__name__}")
        flush()
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread."""
        return await asyncio.to_thread(self.batch, list(ops))

    # ------------------------------------------------------------------ index
    def _turn_id(self, key: str) -> str:
        return key if _ID_OK.fullmatch(key) else "k-" + hashlib.sha256(key.encode()).hexdigest()[:40]

    def _turns(self, puts: list[PutOp]) -> dict[str, tuple[list[str], list[Turn]]]:
        """The turns that index ``puts``, by CogMem namespace: ``(ids of the keys put, turns)``.

        The last put of each key wins; a deleted or unindexed item has an id but no turn. The text
        loses the characters no turn can hold, and only its first ``MAX_TEXT_CHARS`` characters are
        indexed (the value is kept whole in ``inner``). Positions are set by :meth:`_index`.

        Raises:
            InvalidInputError: If a namespace or key cannot be stored (nothing is written).
        """
        last: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in puts:
            last[(tuple(op.namespace), op.key)] = op
        by_ns: dict[str, list[PutOp]] = {}
        for (ns, _), op in last.items():
            by_ns.setdefault(self.namespace_mapper(ns), []).append(op)
        out: dict[str, tuple[list[str], list[Turn]]] = {}
        now = datetime.now(UTC)
        for cns, group in by_ns.items():
            ids = [self._turn_id(op.key) for op in group]
            turns: list[Turn] = []
            for op, tid in zip(group, ids, strict=True):
                if op.value is None or op.index is False:
                    continue
                fields = op.index if isinstance(op.index, list) else self.fields
                text = storable_text(item_text(op.value, fields)).strip()
                if not text:
                    continue
                spk = op.value.get("speaker")
                turns.append(make_turn(
                    id=tid, namespace=cns, conversation_id="store", session_id=tid,  # items are independent: no neighbours
                    speaker=storable_speaker(spk, default=self.speaker) if isinstance(spk, str) else self.speaker,
                    text=split_text(text)[0], timestamp=now, position=0,
                    metadata={"store_key": op.key, "store_namespace": json.dumps(list(op.namespace))},
                ))
            out[cns] = (ids, turns)
        return out

    def _index(self, indexed: dict[str, tuple[list[str], list[Turn]]]) -> None:
        """Mirror puts into CogMem: deletes and re-puts drop the old turn, then the new turns are added."""
        for cns, (ids, turns) in indexed.items():
            if self.memory.store.has_namespace(cns):
                old = [t.id for t in self.memory.store.get_turns(cns, ids)]
                if old:
                    self.memory.delete_turns(cns, old)
            position = self.memory.store.count(cns)
            if turns:
                self.memory.add_turns([t.model_copy(update={"position": position + i}) for i, t in enumerate(turns)])

    # ------------------------------------------------------------------ search
    def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit <= 0:
            return []
        namespaces = self.inner.list_namespaces(prefix=op.namespace_prefix or None, limit=100_000)
        want = op.offset + op.limit
        # Per namespace, the retriever's order: (score, cns, ns, key) of each hit.
        ranked: list[list[tuple[float, str, tuple[str, ...], str]]] = []
        for ns in namespaces:
            cns = self.namespace_mapper(tuple(ns))
            if not self.memory.store.has_namespace(cns):
                continue
            n = self.memory.store.count(cns)
            if n == 0:
                continue
            k = n if op.filter else min(n, want)
            docs = CogMemRetriever(memory=self.memory, namespace=cns, k=k, mode=self.mode).invoke(op.query or "")
            scores = [_cosine(doc.metadata.get("dense_score")) for doc in docs]
            if any(x is None for x in scores):  # a stage without dense scores: score the namespace exactly
                pool = self.memory.store.pool_scores(cns, op.query or "")
                dense = dict(zip(pool.ids, pool.dense.tolist(), strict=True))
                scores = [_cosine(dense.get(doc.metadata["turn_id"])) if x is None else x
                          for x, doc in zip(scores, docs, strict=True)]
            hits = []
            for score, doc in zip(scores, docs, strict=True):
                key = doc.metadata.get("turn_store_key", doc.metadata["turn_id"])
                hits.append((-1.0 if score is None else score, cns, tuple(ns), str(key)))
            if hits:
                ranked.append(hits)
        # Merge: each namespace keeps its order; the next item overall is the best-scored head.
        heads = [(-hits[0][0], hits[0][1], hits[0][3], i, 0) for i, hits in enumerate(ranked)]
        heapq.heapify(heads)
        out: list[SearchItem] = []
        seen: set[tuple[tuple[str, ...], str]] = set()
        skipped = 0
        while heads and len(out) < op.limit:
            _, _, _, i, j = heapq.heappop(heads)
            score, _, ns, key = ranked[i][j]
            if j + 1 < len(ranked[i]):
                nxt = ranked[i][j + 1]
                heapq.heappush(heads, (-nxt[0], nxt[1], nxt[3], i, j + 1))
            if (ns, key) in seen:
                continue
            seen.add((ns, key))
            item = self.inner.get(ns, key, refresh_ttl=op.refresh_ttl)
            if item is None or not _matches(item.value, op.filter):
                continue
            if skipped < op.offset:
                skipped += 1
                continue
            out.append(SearchItem(namespace=item.namespace, key=item.key, value=item.value,
                                  created_at=item.created_at, updated_at=item.updated_at, score=score))
        return out
