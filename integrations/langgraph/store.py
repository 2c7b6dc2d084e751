"""``CogMemStore``: a LangGraph ``BaseStore`` whose ``search`` runs langmem-cog's retrieval.

Exact-key operations (``get``, ``put``, ``delete``, ``list_namespaces`` and searches without a
query) go to a wrapped store (an ``InMemoryStore`` by default, or any ``BaseStore``), which stays
the store of the items' values. Every indexed ``put`` is also written as a raw turn to a
:class:`~langmem_cog.memory.CogMemory` namespace (``("memories", "alice")`` -> ``memories.alice``),
and searches *with* a query rank the items there through :class:`~langmem_cog.CogMemRetriever` (the
plain hybrid search by default, ``mode="cascade"`` for the cascade). So existing
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
    >>> [it.key for it in store.search(user[:1], query="peanut allergy", limit=1)]
    ['m1']
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import operator
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
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
from langmem_cog.errors import InvalidInputError
from langmem_cog.records import NAMESPACE_PATTERN, make_turn, storable_speaker
from langmem_cog.retriever import CogMemRetriever

if TYPE_CHECKING:
    from langmem_cog.memory import CogMemory

__all__ = ["CogMemStore", "default_namespace_mapper", "item_text"]

logger = logging.getLogger(__name__)

_TEXT_FIELDS = ("content", "text", "memory")
_ID_OK = NAMESPACE_PATTERN  # conservative: keys that are valid namespaces are valid turn ids


def default_namespace_mapper(namespace: tuple[str, ...]) -> str:
    """The CogMem namespace of a store namespace: labels joined by ``.`` when that is a valid id,
    else ``store-`` plus a hash (store labels never contain ``.``, so the join is unambiguous).

    Example:
        >>> default_namespace_mapper(("memories", "alice"))
        'memories.alice'
        >>> default_namespace_mapper(("notes", "bob smith"))[:6]
        'store-'
    """
    joined = ".".join(namespace)
    if NAMESPACE_PATTERN.fullmatch(joined):
        return joined
    return "store-" + hashlib.sha256(json.dumps(list(namespace)).encode()).hexdigest()[:32]


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


class CogMemStore(BaseStore):
    """A ``BaseStore`` that delegates exact-key operations to ``inner`` and ranks searches with
    :class:`~langmem_cog.CogMemRetriever`.

    Args:
        memory: Where indexed items are written as raw turns and searched.
        inner: The store holding the values (default: a new ``InMemoryStore``).
        namespace_mapper: Store namespace tuple -> CogMem namespace id
            (default :func:`default_namespace_mapper`).
        fields: Default fields indexed (dotted paths; ``None``: ``content``/``text``/``memory``,
            else the whole value). A ``put(..., index=[...])`` overrides them; ``index=False``
            stores the item without indexing it.
        speaker: Speaker of the indexed turns (an item's own ``speaker`` field wins).

    Search with a ``query`` ranks the items of every namespace under the prefix, each scored
    within its namespace (z-score fusion), merged by score; ``filter``, ``offset`` and ``limit``
    apply to that ranking and ``SearchItem.score`` is the fused score. Without a query, search is
    the inner store's. An item updated by ``put`` is re-indexed; a deleted one leaves the index.
    ``abatch`` runs ``batch`` in a worker thread.
    """

    __slots__ = ("memory", "inner", "namespace_mapper", "fields", "speaker", "mode")

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
        self.inner = inner if inner is not None else InMemoryStore()
        self.namespace_mapper = namespace_mapper
        self.fields = fields
        self.speaker = speaker

    # ------------------------------------------------------------------ batch
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order: searches with a query here, everything else on ``inner``."""
        results: list[Result] = []
        run: list[Op] = []

        def flush() -> None:
            if run:
                results.extend(self.inner.batch(list(run)))
                self._index([op for op in run if isinstance(op, PutOp)])
                run.clear()

        for op in ops:
            if isinstance(op, SearchOp) and op.query:
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

    def _index(self, puts: list[PutOp]) -> None:
        """Mirror puts into CogMem: the last put of each key wins; deletes and re-puts drop the old turn."""
        last: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in puts:
            last[(tuple(op.namespace), op.key)] = op
        by_ns: dict[str, list[PutOp]] = {}
        for (ns, _), op in last.items():
            by_ns.setdefault(self.namespace_mapper(ns), []).append(op)
        for cns, group in by_ns.items():
            ids = [self._turn_id(op.key) for op in group]
            if self.memory.store.has_namespace(cns):
                old = [t.id for t in self.memory.store.get_turns(cns, ids)]
                if old:
                    self.memory.delete_turns(cns, old)
            turns = []
            position = self.memory.store.count(cns)
            now = datetime.now(UTC)
            for op, tid in zip(group, ids, strict=True):
                if op.value is None or op.index is False:
                    continue
                fields = op.index if isinstance(op.index, list) else self.fields
                text = item_text(op.value, fields)
                if not text.strip():
                    continue
                spk = op.value.get("speaker")
                turns.append(make_turn(
                    id=tid, namespace=cns, conversation_id="store", session_id=tid,  # items are independent: no neighbours
                    speaker=storable_speaker(spk, default=self.speaker) if isinstance(spk, str) else self.speaker,
                    text=text, timestamp=now, position=position + len(turns),
                    metadata={"store_key": op.key, "store_namespace": json.dumps(list(op.namespace))},
                ))
            if turns:
                self.memory.add_turns(turns)

    # ------------------------------------------------------------------ search
    def _search(self, op: SearchOp) -> list[SearchItem]:
        namespaces = self.inner.list_namespaces(prefix=op.namespace_prefix or None, limit=100_000)
        want = op.offset + op.limit
        scored: list[tuple[int, float, str, tuple[str, ...], str]] = []
        for ns in namespaces:
            cns = self.namespace_mapper(tuple(ns))
            if not self.memory.store.has_namespace(cns):
                continue
            n = self.memory.store.count(cns)
            if n == 0:
                continue
            k = n if op.filter else min(n, want)
            docs = CogMemRetriever(memory=self.memory, namespace=cns, k=k, mode=self.mode).invoke(op.query or "")
            for doc in docs:
                key = doc.metadata.get("turn_store_key", doc.metadata["turn_id"])
                scored.append((int(doc.metadata["rank"]), float(doc.metadata["dense_score"]), cns, tuple(ns), str(key)))
        # Each namespace keeps the retriever's order; namespaces interleave by rank, then by cosine similarity.
        scored.sort(key=lambda s: (s[0], -s[1], s[2], s[4]))
        out: list[SearchItem] = []
        skipped = 0
        for _, score, _, ns, key in scored:
            item = self.inner.get(ns, key, refresh_ttl=op.refresh_ttl)
            if item is None or not _matches(item.value, op.filter):
                continue
            if skipped < op.offset:
                skipped += 1
                continue
            out.append(SearchItem(namespace=item.namespace, key=item.key, value=item.value,
                                  created_at=item.created_at, updated_at=item.updated_at, score=score))
            if len(out) >= op.limit:
                break
        return out
