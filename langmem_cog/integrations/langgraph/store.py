"""``CogMemStore``: a LangGraph ``BaseStore`` whose ``search`` runs langmem-cog's retrieval.

Exact-key operations (``get``, ``put``, ``delete``, ``list_namespaces`` and searches without a
query) go to a wrapped store, which stays the store of the items' values: an ``InMemoryStore``
over an ephemeral memory, a ``SqliteStore`` file in the memory's data directory over a persistent
one (so a new process finds what an earlier one put), or any ``BaseStore`` given as ``inner``.
Every indexed ``put`` is also written as a raw turn (at once, or over a persistent memory in
batches that a crash cannot lose: see :class:`CogMemStore`) to a :class:`~langmem_cog.memory.CogMemory`
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
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
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

__all__ = ["CogMemStore", "FLUSH_EVERY", "HASHED_PREFIX", "INNER_STORE_FILE", "default_namespace_mapper", "item_text"]

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
    """The strings and numbers in ``value``, depth first, one a line: no keys, braces or quotes."""
    lines: list[str] = []
    stack = [value]
    while stack:  # a loop, not recursion: nesting depth is the caller's
        v = stack.pop()
        if isinstance(v, Mapping):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list | tuple):
            stack.extend(reversed(v))
        elif v is not None and not isinstance(v, bool):
            text = v if isinstance(v, str) else str(v)
            if text.strip():
                lines.append(text)
    return "\n".join(lines)


def item_text(value: Mapping[str, Any], fields: Iterable[str] | None = None) -> str:
    r"""The text indexed for an item: the values (strings and numbers, never the keys) at the given
    fields (dotted paths; ``$`` is the whole item), else at its ``content`` / ``text`` / ``memory``
    field (the first it has), else of the whole item. ``""`` means nothing to index.

    Example:
        >>> item_text({"food": "pizza", "mood": "happy"})
        'pizza\nhappy'
        >>> item_text({"content": {"name": "Ana", "likes": ["cello", "tea"]}})
        'Ana\ncello\ntea'
        >>> item_text({"content": "", "kind": "fact"}), item_text({"food": "pizza", "n": 2}, ["n"])
        ('', '2')
    """
    if fields:
        return "\n".join(t for t in (_as_text(value if f == "$" else _path(value, f)) for f in fields) if t)
    for f in _TEXT_FIELDS:
        if value.get(f) is not None:
            return _as_text(value[f])
    return _as_text(value)


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


def _connect(path: Path, *, synced: bool = True) -> sqlite3.Connection:
    """A connection to the SQLite file ``path`` in WAL mode (a commit is one append to the log).

    ``synced``: each commit is synced before it returns; else it is synced by the next synced
    commit of any connection to the file (both append to its one WAL, and a synced commit syncs
    the frames before it), or on a checkpoint.
    """
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={'FULL' if synced else 'NORMAL'}")
    return conn


#: The tables, beside the default persistent inner store's, that order its items and list the puts
#: not yet indexed (namespaces are JSON lists; ``idx`` is the put's ``index`` argument as JSON).
_LOG_SCHEMA = """
CREATE TABLE IF NOT EXISTS cogmem_namespace_order (seq INTEGER PRIMARY KEY AUTOINCREMENT, ns TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS cogmem_item_order (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, ns TEXT NOT NULL, key TEXT NOT NULL, UNIQUE (ns, key));
CREATE TABLE IF NOT EXISTS cogmem_pending (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, ns TEXT NOT NULL, key TEXT NOT NULL, idx TEXT NOT NULL, UNIQUE (ns, key));
"""

#: A persistent store indexes its pending puts once this many were put since its last flush.
FLUSH_EVERY = 256


def _ns_text(namespace: Iterable[str]) -> str:
    return json.dumps(list(namespace))


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
    store = SqliteStore(_connect(path))
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
        fields: Default fields indexed, by their values (dotted paths, ``$`` the whole value;
            ``None``: ``content``/``text``/``memory``, else the whole value). A
            ``put(..., index=[...])`` overrides them; ``index=False`` stores the item without
            indexing it.
        speaker: Speaker of the indexed turns (an item's own ``speaker`` field wins).
        mode: The retrieval path that orders the items of a namespace (``hybrid`` by default;
            ``cascade``, ``dense``, ``lexical``; ``None``: the memory's configured one).

    Indexing: an item is indexed by the values (strings and numbers, never its keys) at the
    fields of ``put(..., index=[...])``, else of ``fields``, else of its ``content`` / ``text`` /
    ``memory`` field (the first it has), else of the whole item (:func:`item_text`). An item with
    nothing to index (``{"content": ""}``) is kept and returned by ``get`` and search without a
    query, and has no turn.

    Over a persistent memory with the default inner store, a ``put`` returns once the value and a
    record of the put are committed (WAL, synced) in :data:`INNER_STORE_FILE`; the turns are written
    to the memory in one batch by the next search with a query, :meth:`flush`, :meth:`close`, the
    opening of a store over the directory, or once :data:`FLUSH_EVERY` puts wait. A crash loses no
    acknowledged put: the next store over the directory indexes what it records. Code that reads
    the memory itself (its retriever, tools, middleware) sees the items after a flush. Every other
    store indexes each put before it returns.

    Search without a query (or with a blank one) lists the items in the order LangGraph's
    ``InMemoryStore`` gives: namespaces in the order they were first written, and in each the keys
    in the order they were first put (an update keeps the key's place; a key deleted and put again
    goes last). The default persistent inner store keeps that order in
    :data:`INNER_STORE_FILE`, so it holds across processes; a given ``inner`` lists in its own order.
    ``filter``, ``offset`` and ``limit`` apply to that order.

    Search with a ``query`` ranks the items of every namespace under the prefix with the
    retriever. ``SearchItem.score`` is the cosine similarity of the query's embedding and the
    item's turn's (``"<speaker>: <indexed text>"``, the vector the memory searches), in
    ``[-1, 1]`` like LangGraph's ``InMemoryStore``: it depends on the item and the query only, not on the other items of its namespace, so one
    threshold works for every user. Each namespace keeps the retriever's order; namespaces merge
    by the score of their next item. ``filter``, ``offset`` and ``limit`` apply to that ranking;
    ``limit=0`` finds nothing. An item
    updated by ``put`` is re-indexed; a deleted one leaves the index. The indexed text drops the characters
    no turn can hold (NUL, lone surrogates) and stops at ``MAX_TEXT_CHARS`` characters; the value is kept
    whole. A put the memory cannot index (a namespace or key it rejects) raises before anything is written. ``abatch`` runs ``batch`` in a worker thread.

    Raises:
        ConfigError: If ``inner`` is ``None`` over a persistent memory and
            ``langgraph-checkpoint-sqlite`` is not installed (the message says what to pass).
    """

    __slots__ = ("memory", "inner", "inner_path", "namespace_mapper", "fields", "speaker", "mode",
                 "_log", "_log_lock", "_unflushed")

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
        # The record of item order and pending puts, beside the values of the default persistent store.
        self._log: sqlite3.Connection | None = None
        self._log_lock = threading.Lock()
        self._unflushed = 0
        if self.inner_path is not None:
            # Unsynced: every record is followed by the inner store's synced commit of the value.
            self._log = _connect(self.inner_path, synced=False)
            self._log.executescript(_LOG_SCHEMA)
            self.flush()  # the puts an earlier process acknowledged but did not index

    def close(self) -> None:
        """Index the pending puts (:meth:`flush`), then close the default ``SqliteStore`` this store
        opened (a given ``inner`` is left open)."""
        try:
            self.flush()
        finally:
            if self._log is not None:
                self._log.close()
                self.inner.conn.close()  # type: ignore[attr-defined]
                self._log = None

    def flush(self) -> None:
        """Write the pending puts' turns to the memory, in one batch (a no-op where none wait).

        Raises:
            InvalidInputError: If a recorded put can no longer be indexed (e.g. a new
                ``namespace_mapper`` rejects its namespace); the record stays.
        """
        if self._log is None:
            return
        with self._log_lock:
            if self._log.execute("SELECT 1 FROM cogmem_pending LIMIT 1").fetchone() is None:
                return
        # Under the memory's write lock (threads and processes), so one flush indexes each record.
        with self.memory.store.writing():
            with self._log_lock:
                rows = self._log.execute("SELECT seq, ns, key, idx FROM cogmem_pending ORDER BY seq").fetchall()
            keys = [(tuple(json.loads(ns)), key) for _, ns, key, _ in rows]
            items = cast(list[Item | None], self.inner.batch([GetOp(ns, key, refresh_ttl=False) for ns, key in keys]))
            self._index(self._turns([
                PutOp(ns, key, None if item is None else item.value, index=json.loads(idx))
                for (ns, key), item, (_, _, _, idx) in zip(keys, items, rows, strict=True)]))
            with self._logging() as log:  # a put recorded meanwhile has a new seq and stays
                log.executemany("DELETE FROM cogmem_pending WHERE seq = ?", [(row[0],) for row in rows])
            self._unflushed = 0

    @contextmanager
    def _logging(self) -> Iterator[sqlite3.Connection]:
        """One transaction on the log, committed (and synced) on exit, rolled back on an error."""
        assert self._log is not None
        with self._log_lock:
            self._log.execute("BEGIN IMMEDIATE")
            try:
                yield self._log
            except BaseException:
                self._log.execute("ROLLBACK")
                raise
            self._log.execute("COMMIT")

    def _record(self, puts: list[PutOp]) -> None:
        """Record ``puts`` (the last of each key) in the item order and as pending, before they are written."""
        last = {(_ns_text(op.namespace), op.key): op for op in puts}
        with self._logging() as log:
            log.executemany("INSERT OR IGNORE INTO cogmem_namespace_order (ns) VALUES (?)", [(ns,) for ns, _ in last])
            log.executemany("DELETE FROM cogmem_item_order WHERE ns = ? AND key = ?",
                            [k for k, op in last.items() if op.value is None])
            log.executemany("INSERT OR IGNORE INTO cogmem_item_order (ns, key) VALUES (?, ?)",
                            [k for k, op in last.items() if op.value is not None])
            log.executemany("INSERT OR REPLACE INTO cogmem_pending (ns, key, idx) VALUES (?, ?, ?)",
                            [(*k, json.dumps(op.index)) for k, op in last.items()])
        self._unflushed += len(last)

    # ------------------------------------------------------------------ batch
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order (a search sees the puts before it): searches here, the rest on ``inner``."""
        results: list[Result] = []
        run: list[Op] = []

        def write() -> None:
            if run:
                # The index's turns are built (and checked) before anything is written: a put the
                # memory cannot index fails with nothing changed.
                puts = [op for op in run if isinstance(op, PutOp)]
                indexed = self._turns(puts)
                if self._log is not None and puts:
                    self._record(puts)  # first: a crash after the value's write leaves the record
                results.extend(self.inner.batch(list(run)))
                if self._log is None:
                    self._index(indexed)
                run.clear()

        for op in ops:
            if isinstance(op, SearchOp):
                write()
                results.append(self._search(op) if op.query and op.query.strip() else self._list(op))
            elif isinstance(op, GetOp | PutOp | ListNamespacesOp):
                run.append(op)
            else:
                raise InvalidInputError(f"unknown store operation {type(op).__name__}")
        write()
        if self._unflushed >= FLUSH_EVERY:
            self.flush()
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
    def _list(self, op: SearchOp) -> list[SearchItem]:
        """Search without a query: the inner store's; on the default persistent store, its items in
        the recorded order (see the class docstring), an item written around this store last."""
        if self._log is None:
            return cast(list[SearchItem], self.inner.batch([op])[0])
        if op.limit <= 0:
            return []
        items = self.inner.search(op.namespace_prefix, filter=op.filter, limit=sys.maxsize,
                                  refresh_ttl=op.refresh_ttl)
        with self._log_lock:
            namespaces = dict(self._log.execute("SELECT ns, seq FROM cogmem_namespace_order").fetchall())
            seqs = {ns: dict(self._log.execute("SELECT key, seq FROM cogmem_item_order WHERE ns = ?", (ns,)).fetchall())
                    for ns in {_ns_text(item.namespace) for item in items}}
        last = math.inf

        def place(item: SearchItem) -> tuple[float, float]:
            ns = _ns_text(item.namespace)
            return namespaces.get(ns, last), seqs[ns].get(item.key, last)

        return sorted(items, key=place)[op.offset:op.offset + op.limit]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit <= 0:
            return []
        self.flush()
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
