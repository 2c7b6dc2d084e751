"""The PEC2F graph memory: one ``networkx.MultiDiGraph`` per namespace, derived from turns.

The graph is a derived index over the raw turns of a namespace. Every node and edge
keeps ``provenance``, the ids of the turns it came from; :meth:`GraphMemory.delete_turns`
trims it and drops what no turn supports any more, and :meth:`GraphMemory.rebuild`
rebuilds the whole graph from raw turns.

Nodes (ids are deterministic, so the same turns always give the same graph):

* ``person:<name>`` and ``concept:<name>`` (normal form of :func:`normalize_name`,
  resolved through :class:`~langmem_cog.graph.resolve.EntityResolver`);
  attributes ``name``, ``aliases``, ``variants`` (surface form -> turn ids), Concepts
  also ``kind``;
* ``event:<turn_id>#<i>``: ``text``, ``start``, ``end``, ``time_text``,
  ``participants`` (person ids, the speaker first), ``verb``;
* ``claim:<turn_id>#<i>``: ``source`` and ``target`` (node ids), ``predicate``,
  ``polarity``, ``sentiment``, ``content`` (also ``text``), ``status``, ``timestamp``;
* ``fact:<subject>|<predicate>|<object>``: ``subject`` (person id), ``predicate``,
  ``object``, ``text``, ``valid_from``, ``valid_to``, ``consolidated``, ``support``
  (turns stating it; events for consolidated facts, see
  :mod:`langmem_cog.graph.consolidate`).

Every node also has ``type``, ``aliases``, ``provenance``, ``first_seen`` and
``last_seen`` (times of its earliest and latest supporting turn). Attributes merged
from several turns are a function of the surviving provenance only: ``name`` (and a
fact's ``text`` / ``object``, a concept's ``kind``) is the form said in the earliest
turn, ``aliases`` the other forms, a fact's ``valid_from`` the earliest one given, so
deleting turns leaves no trace of them.

Edges are keyed by :class:`EdgeType` value: different relations between a pair
coexist, the same relation from another turn merges its provenance. Edge
attributes: ``type``, ``provenance``, ``timestamp`` (when its evidence first existed:
its earliest turn, or its latest one for ``NEXT`` / ``SUPERSEDES`` / ``CONFLICTS_WITH``,
which need both records), ``persons``
on ``NEXT`` edges (whose timelines use it), ``changed`` on ``SUPERSEDES`` edges.

Facts whose predicate is a preference or possession also link the person to a
Concept (:data:`PREFERENCE_EDGES`), e.g. ``likes`` -> ``LIKES``, ``hates`` ->
``DISLIKES``, ``plays`` -> ``USES``.

The graph attribute ``turns`` maps every applied turn id to its timestamp.

This module holds :class:`GraphMemory`: the graphs of many namespaces, their locks and where they are
kept. The operators that apply and delete turns' records are in :mod:`langmem_cog.graph.apply`, the
file and payload formats in :mod:`langmem_cog.graph.persist`, the journals in
:mod:`langmem_cog.graph.journal`.

Example:
    >>> from datetime import datetime, timezone
    >>> from langmem_cog.graph.schema import Extraction, ExtractedEvent
    >>> ts = datetime(2023, 5, 8, tzinfo=timezone.utc)
    >>> ex = Extraction(turn_id="D1:3", speaker="Caroline", timestamp=ts, events=[
    ...     ExtractedEvent(text="went to a support group", participants=("Caroline",),
    ...                    source_turn_id="D1:3", concepts=("support group",), verb="go")])
    >>> mem = GraphMemory()
    >>> mem.apply("alice", [ex]).nodes_added
    3
    >>> sorted(mem.graph("alice").nodes)
    ['concept:support group', 'event:D1:3#0', 'person:caroline']
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import networkx as nx

from langmem_cog.errors import ExtractionError, InvalidInputError, StoreError
from langmem_cog.graph.apply import (
    PREFERENCE_EDGES,
    ApplySettings,
    ApplyStats,
    DeleteStats,
    apply_extractions,
    consolidate_graph,
    delete_records,
    normalize_predicate,
    reconcile_graph,
    relink_timeline,
    validate_extractions,
)
from langmem_cog.graph.consolidate import FactWriter
from langmem_cog.graph.journal import (
    JournalCosts,
    SharedJournal,
    append_file_journal,
    is_rebuild,
    journal_max_seq,
    journal_path,
    remove_graph_files,
    replay_file_journal,
    write_graph_file,
)
from langmem_cog.graph.persist import (
    DATETIME_ATTRS,
    SET_ATTRS,
    empty_graph,
    encode,
    extraction_from_payload,
    extraction_payload,
    graph_filename,
    graph_from_snapshot,
    graph_payload,
    graphs_equal,
    read_graph_file,
)
from langmem_cog.graph.reconcile import (
    derived_state,
    natural_key,
)
from langmem_cog.graph.resolve import EMBEDDING_THRESHOLD, FUZZY_THRESHOLD, EntityResolver
from langmem_cog.graph.schema import SCHEMA_VERSION as SCHEMA_VERSION  # re-exported: callers import it from here
from langmem_cog.graph.schema import Extraction, Extractor
from langmem_cog.loading import gc_paused
from langmem_cog.records import Turn, validate_namespace

__all__ = [
    "GraphMemory",
    "ApplyStats",
    "DeleteStats",
    "graphs_equal",
    "graph_payload",
    "graph_filename",
    "normalize_predicate",
    "PREFERENCE_EDGES",
    "SET_ATTRS",
    "DATETIME_ATTRS",
]

logger = logging.getLogger(__name__)

# Private names that tests and benchmark scripts import from this module.
_encode = encode
_extraction_payload = extraction_payload
_extraction_from_payload = extraction_from_payload

# A test imports this operator from here.
_relink_timeline = relink_timeline

_GRAPH_DIR = "graph"


class GraphMemory:
    """PEC2F graphs of many namespaces, in memory and optionally on disk.

    Args:
        data_dir: Directory holding ``graph/<hash>.json`` files; ``None`` keeps graphs in
            memory only (``save`` and ``load`` then do nothing).
        embeddings: Optional LangChain ``Embeddings`` for embedding-based concept resolution.
        min_events: Consolidation: least events of a (person, concept) pair in one window.
        window_days: Consolidation window in days.
        writer: Consolidation text writer (e.g. :class:`~langmem_cog.graph.consolidate.LLMFactWriter`).
        fuzzy_threshold: Entity resolution ``token_sort_ratio`` threshold.
        embedding_threshold: Entity resolution cosine threshold.
        autosave: Save a namespace after every change (``apply``, ``delete_turns``,
            ``consolidate``, ``rebuild``).
        journal_ratio: :meth:`commit` appends the operations since the last write to a journal
            beside the snapshot (``<hash>.journal``) and rewrites the snapshot only when the journal
            outgrows this fraction of it (and ``journal_min_bytes``): a commit costs what changed,
            not the size of the graph. ``0`` rewrites the snapshot on every commit.
        journal_min_bytes: Journal size below which the snapshot is never rewritten by a commit.
        journal_seconds: :meth:`commit` also rewrites the snapshot when replaying the journal would take
            longer than writing it and than this many seconds (:class:`~langmem_cog.graph.journal.JournalCosts`).
        backend: A :class:`~langmem_cog.graph.backends.GraphStore` holding the graphs instead of
            ``data_dir`` files. With a journaled one (:class:`~langmem_cog.graph.backends.BaseStoreGraphStore`,
            shared by many workers) every commit appends an entry to the namespace's journal in the
            store, every read first catches up with the entries other workers appended (one listing
            of the journal's heads when nothing changed), and the snapshot is rewritten only as a cache
            (by ``journal_ratio`` / ``journal_min_bytes`` as above, or by :meth:`save`): concurrent
            writers never lose each other's updates (see "Several workers" in ``docs/RELIABILITY.md``).

    Example:
        >>> mem = GraphMemory()
        >>> mem.graph("alice").number_of_nodes()
        0
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        embeddings: Any | None = None,
        min_events: int = 3,
        window_days: float = 30,
        writer: FactWriter | None = None,
        fuzzy_threshold: float = FUZZY_THRESHOLD,
        embedding_threshold: float = EMBEDDING_THRESHOLD,
        autosave: bool = False,
        backend: Any | None = None,
        journal_ratio: float = 0.1,
        journal_min_bytes: int = 256 * 1024,
        journal_seconds: float | None = 1.0,
    ) -> None:
        if backend is not None and data_dir is not None:
            raise InvalidInputError("pass data_dir (graph files) or backend (a GraphStore), not both")
        self.data_dir = Path(data_dir).expanduser() if data_dir is not None else None
        #: A :class:`~langmem_cog.graph.backends.GraphStore` holding the snapshots instead of ``data_dir`` files.
        self.backend = backend
        self.embeddings = embeddings
        self.min_events = min_events
        self.window_days = window_days
        self.writer = writer
        self.fuzzy_threshold = fuzzy_threshold
        self.embedding_threshold = embedding_threshold
        self.autosave = autosave
        self._graphs: dict[str, nx.MultiDiGraph] = {}
        self._stamps: dict[str, tuple[int, int, int] | None] = {}
        self._vectors: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._ns_locks: dict[str, threading.RLock] = {}
        if journal_ratio < 0:
            raise InvalidInputError(f"journal_ratio={journal_ratio!r} is invalid: pass 0 or a positive fraction")
        self.journal_ratio = float(journal_ratio)
        self.journal_min_bytes = int(journal_min_bytes)
        self._costs = JournalCosts(journal_seconds)  # graph files: when a commit folds the journal by time
        # Operations applied in memory and not yet written, per namespace (replayed from the journal on load).
        self._pending: dict[str, list[dict[str, Any]]] = {}
        self._needs_snapshot: set[str] = set()  # the next commit must rewrite the snapshot
        self._seq: dict[str, int] = {}  # the last journal sequence number in memory
        self._unreadable: set[str] = set()  # namespaces whose graph on disk failed to load
        self.revisions: dict[str, int] = {}  #: per namespace, bumped by every change made to its graph in memory
        #: This memory's writer id in journaled backends (the keys of the journal entries it appends).
        self.writer_id = uuid.uuid4().hex[:16]
        # Journaled backends: what this memory applied of each namespace's journal in the shared store.
        self._shared = (
            SharedJournal(backend, self.writer_id, ratio=self.journal_ratio, min_bytes=self.journal_min_bytes)
            if self.journaled else None
        )

    @classmethod
    def from_config(cls, config: Any, **kwargs: Any) -> GraphMemory:
        """A graph memory beside a :class:`~langmem_cog.config.CogMemConfig`'s data (in memory
        for ``ephemeral`` configs)."""
        data_dir = None if config.chroma_mode == "ephemeral" else config.resolved_data_dir()
        return cls(data_dir, **kwargs)

    # ------------------------------------------------------------------ access
    def _ns_lock(self, namespace: str) -> threading.RLock:
        with self._lock:
            return self._ns_locks.setdefault(namespace, threading.RLock())

    def path(self, namespace: str) -> Path | None:
        """The file of a namespace's graph (``None`` in in-memory mode)."""
        validate_namespace(namespace)
        if self.data_dir is None:
            return None
        return self.data_dir / _GRAPH_DIR / graph_filename(namespace)

    def graph(self, namespace: str) -> nx.MultiDiGraph:
        """The namespace's graph (loaded from disk on first use, else empty). Mutating it
        directly bypasses provenance bookkeeping: prefer :meth:`apply` and :meth:`delete_turns`.

        Raises:
            InvalidNamespaceError: If the namespace id is malformed.
            StoreError: If the file on disk is corrupt or of another schema version.
        """
        validate_namespace(namespace)
        with self._ns_lock(namespace):
            if self.journaled:
                return self._journal_sync(namespace)
            G = self._graphs.get(namespace)
            persisted = self.data_dir is not None or self.backend is not None
            if G is None or (persisted and self._stamps.get(namespace) != self._stamp(namespace)):
                # Not loaded yet, or the file was rewritten by another process / GraphMemory.
                G = self.load(namespace)
            return G

    @property
    def journaled(self) -> bool:
        """Whether the graphs live in a journaled backend (a store shared by many workers)."""
        return self.backend is not None and bool(getattr(self.backend, "journaled", False))

    def journal_mark(self, namespace: str) -> dict[str, int] | None:
        """Journaled backends: the journal's heads now (writer -> last entry), to pass as ``seen`` to
        :meth:`rebuild` when it is read *before* the raw turns the rebuild uses; ``None`` otherwise."""
        return dict(self.backend.heads(namespace)) if self.backend is not None and self.journaled else None

    def _stamp(self, namespace: str) -> Any:
        if self.backend is not None:
            return self.backend.version(namespace)
        path = self.path(namespace)
        if path is None:
            return None
        stamps: list[tuple[int, int, int] | None] = []
        for p in (path, journal_path(path)):
            try:
                st = p.stat()
            except OSError:
                stamps.append(None)
                continue
            stamps.append((st.st_ino, st.st_mtime_ns, st.st_size))
        return None if stamps == [None, None] else tuple(stamps)

    def _resolver(self, G: nx.MultiDiGraph) -> EntityResolver:
        return EntityResolver(
            G,
            self.embeddings,
            fuzzy_threshold=self.fuzzy_threshold,
            embedding_threshold=self.embedding_threshold,
            vector_cache=self._vectors,
        )

    def _settings(self) -> ApplySettings:
        """This memory's entity resolution and consolidation settings, for the operators of :mod:`~langmem_cog.graph.apply`."""
        return ApplySettings(resolver=self._resolver, min_events=self.min_events, window_days=self.window_days,
                             writer=self.writer)

    def _changed(self, namespace: str) -> None:
        self.revisions[namespace] = self.revisions.get(namespace, 0) + 1
        if self.autosave:
            self.save(namespace)

    # ------------------------------------------------------------------ apply
    def apply(self, namespace: str, extractions: Sequence[Extraction]) -> ApplyStats:
        """Add the records of some turns to a namespace graph.

        Extractions are applied in timestamp order (stable for equal timestamps). A turn
        already in the graph is first deleted, so applying it again replaces its records.
        Claim groups touched are reconciled; timelines of the persons with new events are
        relinked; consolidated facts touched by new events are re-derived (new ones are
        created only by :meth:`consolidate` and :meth:`rebuild`).

        Args:
            namespace: The namespace.
            extractions: One :class:`Extraction` per turn.

        Returns:
            Counts of what changed.

        Raises:
            InvalidInputError: If an extraction is malformed (naive times, records of another
                turn, a turn twice); nothing is applied then.
        """
        validate_namespace(namespace)
        ordered = validate_extractions(extractions)
        with self._ns_lock(namespace):
            G = self.graph(namespace)
            t0 = time.perf_counter()
            stats = apply_extractions(G, ordered, self._settings())
            self._record(namespace, {"op": "apply", "extractions": [extraction_payload(ex) for ex in ordered]}, t0)
        self._changed(namespace)
        return stats

    def _record(self, namespace: str, op: dict[str, Any], started: float | None = None) -> None:
        """Keep an operation for the next commit (with when it started to apply: its replay costs as much)."""
        self._pending.setdefault(namespace, []).append(op)
        if started is not None:
            self._costs.applied(namespace, time.perf_counter() - started)

    # ------------------------------------------------------------------ delete
    def delete_turns(self, namespace: str, turn_ids: Iterable[str]) -> DeleteStats:
        """Remove turns from a namespace graph.

        Each id is removed from every node's and edge's provenance (and from merged
        attributes such as aliases); nodes and edges left without provenance are deleted.
        Then the claim groups touched are reconciled again, the timelines of the persons
        who lost events are relinked, and consolidated facts that lost supporting events
        are re-derived: updated while their pair still qualifies, removed otherwise.

        Args:
            namespace: The namespace.
            turn_ids: Turn ids; ids not in the graph are ignored.

        Returns:
            Counts of what changed.

        Raises:
            InvalidInputError: If ``turn_ids`` is a string or holds non-strings.
        """
        validate_namespace(namespace)
        if isinstance(turn_ids, str):
            raise InvalidInputError("delete_turns takes a list of turn ids, not one string")
        ids = list(turn_ids)
        if not all(isinstance(i, str) for i in ids):
            raise InvalidInputError("delete_turns takes a list of turn id strings")
        with self._ns_lock(namespace):
            G = self.graph(namespace)
            known = set(ids) & set(G.graph.get("turns", {}))
            stats = delete_records(G, known, self._settings())
            stats.unknown = len(set(ids) - known)
            if self.journaled:
                # Every id, known or not: an entry adding one of them, appended by another worker and not
                # seen yet, may be ordered before this one. The commit scrubs their extractions from the journal.
                if ids:
                    self._record(namespace, {"op": "delete", "ids": sorted(set(ids))})
            elif known:  # the journal holds the deleted turns' records: the next write is a fresh snapshot
                self._needs_snapshot.add(namespace)
        if stats.turns_removed:
            self._changed(namespace)
        return stats

    # ------------------------------------------------------------------ derived structure
    def consolidate(self, namespace: str) -> list[str]:
        """Run :func:`~langmem_cog.graph.consolidate.consolidate` on a namespace with this
        memory's settings. Returns the consolidated facts created or changed."""
        validate_namespace(namespace)
        with self._ns_lock(namespace):
            G = self.graph(namespace)
            t0 = time.perf_counter()
            changed = consolidate_graph(G, self._settings())
            if changed:
                self._record(namespace, {"op": "consolidate"}, t0)
        if changed:
            self._changed(namespace)
        return changed

    def reconcile(self, namespace: str) -> dict[str, int]:
        """Reconcile every claim group of a namespace; returns counts by status.

        The journal gets an entry only when a status or a derived edge changed.
        """
        validate_namespace(namespace)
        with self._ns_lock(namespace):
            G = self.graph(namespace)
            t0 = time.perf_counter()
            before = derived_state(G)
            counts = reconcile_graph(G)
            changed = derived_state(G) != before
            if changed:  # journal (and autosave) only what changed the graph
                self._record(namespace, {"op": "reconcile"}, t0)
        if changed:
            self._changed(namespace)
        return counts

    # ------------------------------------------------------------------ rebuild / forget
    def rebuild(self, namespace: str, turns: Sequence[Turn], extractor: Extractor, *,
                seen: dict[str, int] | None = None) -> nx.MultiDiGraph:
        """Rebuild a namespace graph from raw turns: extract, apply, consolidate.

        Turns are extracted in chronological order (timestamp, conversation, position,
        id). The new graph replaces the old one only when everything succeeded; two
        rebuilds from the same turns and a deterministic extractor give equal graphs
        (:func:`graphs_equal`).

        Args:
            namespace: The namespace.
            turns: Its raw turns (e.g. ``TurnStore.get_turns(namespace)``).
            extractor: Any :class:`Extractor`.
            seen: Journaled backends only: the journal entries the rebuild supersedes, as
                :meth:`journal_mark` returned it *before* ``turns`` were read (every entry is written after
                the raw turns it describes, so ``turns`` hold them). The commit appends the rebuild as an
                entry; entries it did not see (appended meanwhile by other workers) are applied on top of
                it. ``None`` supersedes none, which loses nothing (they are all applied again on top) but
                cannot skip damaged entries.

        Returns:
            The new graph.

        Raises:
            InvalidInputError: If a turn belongs to another namespace or is not a Turn.
            ExtractionError: If the extractor returns the wrong number or order of extractions.
        """
        validate_namespace(namespace)
        if not isinstance(extractor, Extractor):
            raise InvalidInputError(f"extractor must have an extract(turns) method, got {type(extractor).__name__}")
        turns = list(turns)
        for t in turns:
            if not isinstance(t, Turn):
                raise InvalidInputError(f"rebuild takes Turn objects, got {type(t).__name__}")
            if t.namespace != namespace:
                raise InvalidInputError(f"turn {t.id!r} belongs to namespace {t.namespace!r}, not {namespace!r}")
        turns.sort(key=lambda t: (t.timestamp, t.conversation_id, t.position, natural_key(t.id)))
        extractions = extractor.extract(turns) if turns else []
        if len(extractions) != len(turns) or any(e.turn_id != t.id for e, t in zip(extractions, turns, strict=False)):
            raise ExtractionError(
                f"extractor {type(extractor).__name__} returned {len(extractions)} extractions for {len(turns)} turns "
                "(or out of order): it must return one Extraction per turn, in order"
            )
        G = empty_graph()
        ordered = validate_extractions(extractions)
        apply_extractions(G, ordered, self._settings())
        consolidate_graph(G, self._settings())
        if self.journaled:
            with self._ns_lock(namespace):
                # Never reads the old graph: committed as one entry, replayed by every reader in its place.
                self._graphs[namespace] = G
                self._pending[namespace] = [{"op": "rebuild", "seen": dict(seen or {}),
                                             "extractions": [extraction_payload(ex) for ex in ordered]}]
                self._unreadable.discard(namespace)
            logger.info("rebuilt the graph of namespace %r: %d nodes, %d edges", namespace, G.number_of_nodes(),
                        G.number_of_edges())
            self._changed(namespace)
            return G
        with self._ns_lock(namespace):
            # The old graph is never read (it may be the damaged file being repaired): the new one
            # replaces it in memory, stamped as current so that save() writes it instead of loading
            # the file, and numbered past every entry of the old journal so that a crash between the
            # snapshot write and the journal's removal cannot replay old entries onto it.
            self._graphs[namespace] = G
            self._stamps[namespace] = self._stamp(namespace)
            path = self.path(namespace)
            old_seq = journal_max_seq(journal_path(path)) if path is not None and self.backend is None else 0
            self._seq[namespace] = max(self._seq.get(namespace, 0), old_seq)
            self._pending.pop(namespace, None)
            self._needs_snapshot.add(namespace)
            damaged = namespace in self._unreadable
            self._unreadable.discard(namespace)
        if damaged:
            logger.warning(
                "replacing the unreadable graph of namespace %r with one rebuilt from %d raw turns "
                "(save() overwrites the damaged files)", namespace, len(turns),
            )
        logger.info(
            "rebuilt the graph of namespace %r: %d nodes, %d edges", namespace, G.number_of_nodes(), G.number_of_edges()
        )
        self._changed(namespace)
        return G

    def forget(self, namespace: str) -> bool:
        """Drop a namespace's graph from memory and delete its files (the node vectors beside it too, see
        :mod:`langmem_cog.graph.vectors`). Returns whether any of them existed."""
        validate_namespace(namespace)
        with self._ns_lock(namespace):
            G = self._graphs.pop(namespace, None)
            existed = G is not None and (G.number_of_nodes() > 0 or bool(G.graph.get("turns")))
            self._stamps.pop(namespace, None)
            self._pending.pop(namespace, None)
            self._costs.forget(namespace)
            self._needs_snapshot.discard(namespace)
            self._seq.pop(namespace, None)
            self._unreadable.discard(namespace)
            if self._shared is not None:
                self._shared.forget(namespace)
            if self.backend is not None:
                return self.backend.delete(namespace) or existed
            path = self.path(namespace)
            return (remove_graph_files(path) or existed) if path is not None else existed

    def release(self, namespaces: Iterable[str]) -> list[str]:
        """Drop from memory the graphs of ``namespaces`` that are written with nothing pending; each is read
        again on its next use. A graph kept in memory only (no ``data_dir`` or backend), one of a journaled
        backend, one with changes not written yet, and one another thread is using stay.

        Returns:
            The namespaces whose graphs were dropped.
        """
        if (self.data_dir is None and self.backend is None) or self.journaled:
            return []
        released = []
        for namespace in namespaces:
            lock = self._ns_lock(namespace)
            if not lock.acquire(blocking=False):
                continue
            try:
                with self._lock:
                    if (namespace not in self._graphs or self._pending.get(namespace)
                            or namespace in self._needs_snapshot):
                        continue
                    del self._graphs[namespace]
                    self._stamps.pop(namespace, None)
                    self._seq.pop(namespace, None)
                    self._costs.forget(namespace)
                released.append(namespace)
            finally:
                lock.release()
        return released

    # ------------------------------------------------------------------ persistence
    def save(self, namespace: str) -> Path | None:
        """Write a namespace's graph atomically (temp file, fsync, ``os.replace``).

        With a journaled backend: commit what is pending (:meth:`commit`), then rewrite the snapshot
        (never losing another worker's entries: they stay in the journal).

        Returns:
            The file written, or ``None`` in in-memory mode.

        Raises:
            StoreError: If the file cannot be written.
        """
        if self.journaled:  # commit, then rewrite the snapshot (a cache of the journal)
            self._journal_commit(namespace, snapshot=True)
            return None
        if self.backend is not None:  # the backend's write is atomic
            with self._ns_lock(namespace):
                self.backend.write(namespace, graph_payload(namespace, self.graph(namespace)))
                self._stamps[namespace] = self._stamp(namespace)
                self._pending.pop(namespace, None)
                self._needs_snapshot.discard(namespace)
            return None
        path = self.path(namespace)
        if path is None:
            self._pending.pop(namespace, None)
            return None
        with self._ns_lock(namespace):
            G = self.graph(namespace)
            t0 = time.perf_counter()
            write_graph_file(path, namespace, G, self._seq.get(namespace, 0))
            self._stamps[namespace] = self._stamp(namespace)
            self._costs.written(namespace, time.perf_counter() - t0)
            self._pending.pop(namespace, None)
            self._needs_snapshot.discard(namespace)
        return path

    def commit(self, namespace: str) -> Path | None:
        """Persist what changed in a namespace since its last write, cheaply.

        With graph files, the operations applied since then (``apply`` with its extractions,
        ``consolidate``, ``reconcile``) are appended to the namespace's journal (one JSON line
        each, fsynced); :meth:`load` replays them over the snapshot. The snapshot is rewritten
        (and the journal removed) when the journal outgrows ``journal_ratio`` of it, after
        ``delete_turns`` or ``rebuild`` (so deleted text leaves the disk), or when there is none
        yet. With a ``backend`` this is :meth:`save`; with a journaled one (a ``BaseStore`` shared by
        many workers) the operations are appended as one entry of the namespace's journal in the store,
        and the snapshot is rewritten by the same rule as the journal file's.

        Returns:
            The snapshot file, or ``None`` in in-memory or backend mode.

        Raises:
            StoreError: If the journal or the snapshot cannot be written.
        """
        if self.journaled:
            self._journal_commit(namespace, snapshot=False)
            return None
        path = self.path(namespace)
        if self.backend is not None or path is None:
            return self.save(namespace)
        with self._ns_lock(namespace):
            ops = self._pending.get(namespace) or []
            if namespace in self._needs_snapshot or not path.exists() or self.journal_ratio == 0:
                return self.save(namespace)
            if not ops:
                return path
            if self._costs.fold(namespace):
                return self.save(namespace)  # replaying the journal would cost more than writing a snapshot
            seq, size, snapshot = append_file_journal(path, namespace, self._seq.get(namespace, 0), ops)
            self._seq[namespace] = seq
            self._pending.pop(namespace, None)
            self._costs.appended(namespace)
            self._stamps[namespace] = self._stamp(namespace)
            if size > max(self.journal_min_bytes, self.journal_ratio * snapshot):
                return self.save(namespace)
        return path

    def load(self, namespace: str) -> nx.MultiDiGraph:
        """Read a namespace's graph from disk into memory (a missing file gives an empty graph).

        Raises:
            StoreError: If the file is unreadable, corrupt, of another namespace or of another
                schema version; the message says how to rebuild it from the raw store
                (:meth:`rebuild` never reads the damaged file).
        """
        try:
            with gc_paused():  # a snapshot and its journal build many objects: see loading.gc_paused
                G = self._load(namespace)
        except StoreError:
            with self._lock:
                self._unreadable.add(namespace)
            raise
        with self._lock:
            self._unreadable.discard(namespace)
        return G

    def _load(self, namespace: str) -> nx.MultiDiGraph:
        if self.journaled:
            with self._ns_lock(namespace):
                return self._journal_load(namespace)
        if self.backend is not None:
            with self._ns_lock(namespace):
                stamp = self._stamp(namespace)
                raw = self.backend.read(namespace)
                G = empty_graph() if raw is None else graph_from_snapshot(raw, self.backend.describe(namespace), namespace)
                self._graphs[namespace] = G
                self._stamps[namespace] = stamp
                return G
        path = self.path(namespace)
        with self._ns_lock(namespace):
            stamp = self._stamp(namespace)
            self._pending.pop(namespace, None)
            self._costs.dropped(namespace)
            self._needs_snapshot.discard(namespace)
            if path is None or stamp is None:
                G, seq = empty_graph(), 0
            elif path.exists():
                t0 = time.perf_counter()
                G, seq = read_graph_file(path, namespace)
                t1 = time.perf_counter()
                seq, torn = replay_file_journal(G, journal_path(path), namespace, seq, self._settings())
                self._costs.read(namespace, t1 - t0, time.perf_counter() - t1)
                if torn:  # the next commit rewrites the snapshot
                    self._needs_snapshot.add(namespace)
            else:  # a journal without its snapshot (forget interrupted) describes nothing: ignore it
                G, seq = empty_graph(), 0
                self._needs_snapshot.add(namespace)
            self._graphs[namespace] = G
            self._stamps[namespace] = stamp
            self._seq[namespace] = seq
            return G

    # ------------------------------------------------------------------ journaled backends (shared stores)
    def _journal_sync(self, namespace: str) -> nx.MultiDiGraph:
        """Bring the cached graph up to date with the journal (the caller holds the namespace lock).

        Operations of this memory not committed yet (applied in memory, in ``_pending``) are never rebased:
        the sync waits for their commit.
        """
        assert self._shared is not None  # called only when self.journaled holds
        G = self._graphs.get(namespace)
        if G is None:
            return self.load(namespace)
        if self._pending.get(namespace):
            return G
        self.revisions[namespace] = self.revisions.get(namespace, 0) + 1  # other writers' entries may change G
        if not self._shared.catch_up(namespace, G, self._settings()):
            return self.load(namespace)
        return G

    def _journal_load(self, namespace: str) -> nx.MultiDiGraph:
        """The graph from the store alone (the caller holds the namespace lock). Drops operations not committed."""
        assert self._shared is not None  # called only when self.journaled holds
        found = self._shared.read(namespace)
        self._pending.pop(namespace, None)
        self._needs_snapshot.discard(namespace)
        G = self._shared.load(namespace, found, self._settings())
        self._graphs[namespace] = G
        return G

    def _journal_commit(self, namespace: str, *, snapshot: bool) -> None:
        """Append the operations not committed yet as one entry; then rewrite the snapshot if ``snapshot``
        or the entries past it outgrew ``journal_ratio`` / ``journal_min_bytes``.

        Raises:
            StoreError: If the store cannot be written (the operations stay pending; ``load`` drops them).
        """
        journal = self._shared
        assert journal is not None  # called only when self.journaled holds
        with self._ns_lock(namespace):
            journal.state(namespace)  # if it never read the journal (a rebuild): from its own last entry
            ops = self._pending.get(namespace) or []
            if ops:
                entry = journal.append(namespace, ops)
                self._pending.pop(namespace, None)
                self._costs.dropped(namespace)
                journal.appended(namespace, entry)
                if is_rebuild(entry):  # what readers hold: the rebuild plus the entries it did not see
                    self._journal_load(namespace)
            if snapshot or journal.compaction_due(namespace):
                G = self._graphs.get(namespace)
                if G is None:
                    G = self._journal_load(namespace)
                journal.compact(namespace, G)
