"""``CogMemory``: the raw-turn store and the PEC2F graph kept in step.

Raw turns are the source of truth; the graph is a derived index. ``add_turns``
writes the turns to Chroma and BM25 first, then extracts records and applies
them to the namespace's graph; ``delete_turns`` and ``forget`` remove from both;
``rebuild_graph`` recreates a graph from the raw store alone.

Example:
    >>> from langmem_cog import CogMemConfig, load_locomo
    >>> mem = CogMemory(CogMemConfig.preset("ephemeral"))  # doctest: +SKIP
    >>> conv = load_locomo("langmem_cog/data/sample_conversation.json")[0]  # doctest: +SKIP
    >>> mem.add_turns(conv.turns)  # doctest: +SKIP
    >>> G = mem.graph(conv.sample_id)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import networkx as nx
from langchain_core.embeddings import Embeddings

from langmem_cog.checks import turn_id_list
from langmem_cog.config import CogMemConfig
from langmem_cog.errors import ExtractionError, InvalidInputError, LangMemCogError, StoreError
from langmem_cog.graph import pending
from langmem_cog.graph.operators import NodeVectors, node_text
from langmem_cog.graph.provenance import TurnRecords, turn_records
from langmem_cog.graph.reconcile import natural_key
from langmem_cog.graph.revisions import RevisionCache
from langmem_cog.graph.schema import Extractor
from langmem_cog.graph.store import GraphMemory
from langmem_cog.graph.vectors import NodeVectorFiles
from langmem_cog.records import Turn, validate_namespace
from langmem_cog.storage.identity import embedder_digest
from langmem_cog.storage.inputs import turn_list
from langmem_cog.store import TurnStore

if TYPE_CHECKING:
    from langmem_cog.graph.loop import GraphRetrieval

__all__ = ["CogMemory"]

logger = logging.getLogger(__name__)


class CogMemory:
    """Raw turns (Chroma + BM25) plus a PEC2F graph per namespace.

    Args:
        config: The configuration.
        embeddings: The embedder (built from the config when ``None``).
        extractor: Turns raw turns into records (default: the offline ``RuleExtractor``).
        client: An existing Chroma client.
        graph: An existing :class:`GraphMemory` (default: beside the store's data).

    Attributes:
        node_vectors: The vectors of the graph's node texts that the operator loop's ``anchor``
            scores queries against. With ``CogMemConfig.retriever.mode`` at ``cascade`` (the default),
            ``add_turns`` and ``consolidate`` embed the texts of new nodes right away, so the first query
            after an ingest does not pay for them; otherwise they are embedded on the first graph query
            that needs them. With graph files (a persistent memory) they are also kept on disk beside
            each namespace's graph file (:mod:`langmem_cog.graph.vectors`) and read on the namespace's
            first use in a process, so a restart embeds only the texts the files lack.
    """

    def __init__(
        self,
        config: CogMemConfig | None = None,
        *,
        embeddings: Embeddings | None = None,
        extractor: Extractor | None = None,
        client: Any | None = None,
        graph: GraphMemory | None = None,
    ) -> None:
        self.store = TurnStore(config, embeddings=embeddings, client=client)
        self.config = self.store.config
        if extractor is None:
            from langmem_cog.graph.rules import RuleExtractor

            extractor = RuleExtractor()
        if not isinstance(extractor, Extractor):
            raise InvalidInputError(f"extractor must have an extract(turns) method, got {type(extractor).__name__}")
        self.extractor = extractor
        self.graphs = graph if graph is not None else GraphMemory.from_config(self.config)
        # A namespace the raw store closes (config.open_namespaces) lets its written graph go too, with the
        # vectors of its node texts.
        self.store.on_namespaces_closed(self._release_namespaces)
        self._lock = threading.RLock()
        self._checked: set[str] = set()  # namespaces whose graph was checked against the raw store
        self.node_vectors = NodeVectors(self.store.embed_texts, files=self._node_vector_files())
        self._vectors_ready: set[str] = set()  # namespaces whose stored node vectors were read in this process
        # the claims, events and facts of each turn, per graph revision (dropped with the namespace)
        self._records: RevisionCache[Mapping[str, TurnRecords]] = RevisionCache()
        self._retrieval: GraphRetrieval | None = None
        # Deletes and forgets cut short by a crash end with the graph's step: finish them now.
        self.store.intent_finisher = self._finish_intent
        try:
            self.store.replay_intents()
        except StoreError as exc:  # reads still work; the next write retries and raises
            logger.warning("%s", exc)

    def _node_vector_files(self) -> NodeVectorFiles | None:
        """Node-vector files beside the graph files (none for graphs kept in memory or in a backend)."""
        if self.graphs.data_dir is None or self.graphs.backend is not None:
            return None
        return NodeVectorFiles(self.graphs.path, embedder=lambda: embedder_digest(self.store.embeddings))

    def _release_namespaces(self, namespaces: list[str]) -> None:
        """The store closed ``namespaces``: drop their written graphs and the vectors of their node texts from
        memory (read again on their next use). Runs under the store's locks, so it waits for none."""
        for namespace in namespaces:
            self._records.drop(namespace)
        for namespace in self.graphs.release(namespaces):
            self._vectors_ready.discard(namespace)
            self.node_vectors.release(namespace)

    def _warm_node_vectors(self, namespace: str) -> None:
        """Embed the node texts of a namespace's graph not embedded yet, after reading the stored ones, and
        store the new ones (cascade retrieval; otherwise the texts of a namespace in use are only recorded as
        its own, embedded on first use)."""
        if self.config.retriever.mode != "cascade":
            if namespace in self._vectors_ready:
                self.node_vectors.claim(namespace, self._node_texts(namespace))
            return
        texts = self._node_texts(namespace)
        self.node_vectors.load_or_embed(namespace)
        self.node_vectors.warm(texts, namespace=namespace)
        self._save_node_vectors(namespace, texts)
        self._vectors_ready.add(namespace)

    def _prepare_node_vectors(self, namespace: str) -> None:
        """A namespace's first graph use in this process (or since it was released): read its stored node
        vectors and, with graph files in cascade mode, embed and store those the files lack (an older data
        directory, a damaged file), so the next restart reads them all. Its node texts are recorded as its own
        (:meth:`NodeVectors.release <langmem_cog.graph.operators.NodeVectors.release>`)."""
        if self.node_vectors.files is not None and self.config.retriever.mode == "cascade":
            self._warm_node_vectors(namespace)
        else:
            self.node_vectors.load_or_embed(namespace)
            self.node_vectors.claim(namespace, self._node_texts(namespace))
        self._vectors_ready.add(namespace)

    def _node_texts(self, namespace: str) -> list[str]:
        """The texts of the nodes of the namespace's graph, in the graph's order."""
        G = self.graphs.graph(namespace)
        return [node_text(G, n) for n in G.nodes]

    def _save_node_vectors(self, namespace: str, texts: list[str]) -> None:
        """Store the vectors of the namespace's node texts (``texts``, as read before) that its files lack, under
        the data directory lock.

        The graph is read again under the lock, so the vector of a text another process deleted meanwhile is
        never written. Skipped (the next save writes them) when a writer thread of this process holds the store's
        write lock; a file error costs only embedding again after a restart.
        """
        if self.node_vectors.files is None:
            return
        try:
            if not self.node_vectors.unsaved(namespace, texts):
                return
            with self._lock, self.store.derived_files() as held:
                if not held:
                    return
                texts = self._node_texts(namespace)
                if self.node_vectors.unsaved(namespace, texts):
                    self.node_vectors.save(namespace, texts)
        except (OSError, StoreError) as exc:
            logger.warning("namespace %r: cannot store the node vectors (%s): they are embedded again after a "
                           "restart", namespace, exc)

    def _purge_node_vectors(self, namespace: str) -> None:
        """Drop the vectors of texts the namespace's graph no longer holds (after turns left it) from memory and
        from its node-vector files, so a deleted text's vector leaves the process and the disk. The caller holds
        the store's write lock.

        Raises:
            StoreError: If the files cannot be rewritten (the deletion stays recorded and is retried).
        """
        try:
            self.node_vectors.purge(namespace, self._node_texts(namespace))
        except OSError as exc:
            raise StoreError(f"cannot rewrite the node vectors of namespace {namespace!r} ({exc}): free disk "
                             "space or make the data directory writable, then retry") from exc

    def _forget_graph(self, namespace: str) -> bool:
        """Delete a namespace's graph and its node vectors (files and what this process read of them)."""
        self._vectors_ready.discard(namespace)
        self._records.drop(namespace)
        self.node_vectors.forget(namespace)
        return self.graphs.forget(namespace)

    @property
    def retrieval(self) -> GraphRetrieval:
        """The memory's operator loop (:class:`~langmem_cog.graph.loop.GraphRetrieval`), built on first use.

        Every retriever of this memory shares it: one compiled loop and one node-vector cache, so a
        node's text is embedded once per memory rather than once per retriever.
        """
        with self._lock:
            if self._retrieval is None:
                from langmem_cog.graph.loop import GraphRetrieval  # langgraph loads on first use, not at import

                self._retrieval = GraphRetrieval(self)
            return self._retrieval

    @property
    def embeddings(self) -> Embeddings:
        """The embedder shared by the store and the graph operators."""
        return self.store.embeddings

    def add_turns(self, turns: Sequence[Turn]) -> list[str]:
        """Store turns, then extract and apply their records to each namespace's graph.

        All or nothing from the caller's view: if this raises, either nothing was stored, or
        retrying the same call (identical turns) completes it, leaving one copy of each turn.
        The raw write happens first; the graph is derived from it. If extraction or the graph
        write fails (or the process dies), the turns stay stored: a retry applies to the graph
        the turns it lacks, and the next use of the namespace in a new process repairs the graph
        from the raw store (see :meth:`sync_graph`). A retry of a call that completed changes nothing.

        Raises:
            InvalidInputError: If ``turns`` is not a list of :class:`Turn` (nothing is written).
            DuplicateTurnError: If an id repeats, or is already stored with other content (nothing is written).
            StoreError: If the raw store, the BM25 log or the graph cannot be written; the message
                says what is stored and what to fix.
            ExtractionError: If the extractor fails (the turns are stored; retry the call).
        """
        if isinstance(turns, Turn):
            turns = [turns]
        if isinstance(turns, Sequence) and not isinstance(turns, str | bytes):
            for ns in dict.fromkeys(t.namespace for t in turns if isinstance(t, Turn)):
                self._check_graph(ns)
        turns = turn_list(turns)  # checked before a marker is written
        by_ns: dict[str, list[Turn]] = {}
        for t in turns:
            by_ns.setdefault(t.namespace, []).append(t)
        markers = self._mark_pending(by_ns)
        try:
            ids = self.store.add_turns(turns)
            for ns, group in by_ns.items():
                self._add_to_graph(ns, group)
        finally:
            for marker in markers:
                pending.done(marker)
        return ids

    def _mark_pending(self, by_ns: dict[str, list[Turn]]) -> list[Path]:
        """Record that this process is adding these turns, until their graph step ends (graph files only):
        other processes leave the graph alone meanwhile (:mod:`langmem_cog.graph.pending`).

        Raises:
            StoreError: If a marker cannot be written (nothing is stored).
        """
        root = self.graphs.data_dir
        if root is None or self.graphs.backend is not None:
            return []
        markers: list[Path] = []
        try:
            for ns, group in by_ns.items():
                markers.append(pending.record(root, ns, [t.id for t in group]))
        except OSError as exc:
            for marker in markers:
                pending.done(marker)
            raise StoreError(f"cannot write a pending-add marker under {root} ({exc}): nothing was stored; "
                             "make the data directory writable, then retry") from exc
        return markers

    def _add_to_graph(self, namespace: str, group: list[Turn]) -> None:
        """Extract and apply to the namespace's graph the turns of ``group`` it lacks, then commit.

        Raises:
            LangMemCogError: A :class:`StoreError` (graph files) or :class:`ExtractionError` (anything
                else) whose message says the turns are stored and how to complete the call; the graph
                in memory is reloaded from its files first, so memory and disk agree.
        """
        try:
            applied = self.graphs.graph(namespace).graph.get("turns", {})
            todo = [t for t in group if t.id not in applied]
            if not todo:
                return  # a retry of a call whose graph write completed
            extractions = _extract(self.extractor, todo)
            with self._lock, self.store.writing():
                # A delete (or forget) that ran while the turns were being extracted: what it deleted
                # must not come back into the graph.
                ids = [e.turn_id for e in extractions]
                stored = ({t.id for t in self.store.get_turns(namespace, ids)}
                          if self.store.has_namespace(namespace) else set())
                if len(stored) < len(set(ids)):
                    logger.info("namespace %r: %d turns were deleted while being extracted; their records are "
                                "dropped", namespace, len(set(ids) - stored))
                    extractions = [e for e in extractions if e.turn_id in stored]
                self.graphs.apply(namespace, extractions)
                self.graphs.commit(namespace)
        except Exception as exc:  # an extractor may raise anything; every failure leaves as a LangMemCogError
            self._reload_graph(namespace)
            raise _graph_failure(namespace, len(group), exc) from exc
        self._warm_node_vectors(namespace)

    def _reload_graph(self, namespace: str) -> None:
        """After a failed graph update, drop what memory holds beyond the graph files; if they cannot be
        read, the namespace is checked against the raw store again on its next use."""
        if self.graphs.data_dir is None and self.graphs.backend is None:
            return  # an in-memory graph has no files to reload from (and a failed apply changes nothing)
        try:
            with self._lock:
                self.graphs.load(namespace)
        except LangMemCogError as exc:
            logger.warning("graph of namespace %r cannot be reloaded (%s): it is repaired on next use", namespace, exc)
            self._checked.discard(namespace)

    def _check_graph(self, namespace: str) -> None:
        """On the first use of a namespace, repair its graph if it is out of step with the raw
        store (a crash between the raw write and the graph save, or an older graph file)."""
        if namespace in self._checked:
            return
        with self._lock:
            if namespace not in self._checked:
                try:
                    synced = self._sync_graph(namespace)
                except ExtractionError as exc:
                    # The extractor is down (an LLM provider): the raw turns still serve deletes, adds and
                    # searches, and the graph keeps what it had; the repair is tried again on next use.
                    logger.warning("graph of namespace %r could not be repaired now, retried on its next use: %s",
                                   namespace, exc)
                    return
                if synced is not None:  # None: another add is writing it; checked again on the next use
                    self._checked.add(namespace)

    def delete_turns(self, namespace: str, ids: Sequence[str]) -> int:
        """Delete turns from the raw store and everything derived only from them (graph nodes
        included), then purge their text from the files on disk.

        The deletion is recorded before its first step and the record removed after its last (the graph's):
        a call cut short by a crash or an error is finished by the next open of the data directory, the next
        write, or a retry of the call (see :meth:`TurnStore.delete_turns`).

        Returns:
            How many of ``ids`` were stored when the call ran (0 for a retry of a call that had deleted them
            before it was cut short; the retry still purges what is left of them).

        Raises:
            InvalidNamespaceError: If the namespace id is malformed.
            InvalidInputError: If ``ids`` is not a list of strings.
            StoreError: If a step fails (the deletion stays recorded; retry the call).
        """
        validate_namespace(namespace)
        ids = turn_id_list(ids, "delete_turns")
        self._check_graph(namespace)
        with self._lock, self.store.writing():
            return self.store.delete_turns(namespace, ids, finisher=self._finish_intent)

    def forget(self, namespace: str, turn_ids: Sequence[str] | None = None) -> bool:
        """Forget a whole namespace (raw turns, BM25 index, graph, files), or only ``turn_ids``
        of it (as :meth:`delete_turns`). Returns whether anything was there to forget when the call
        ran (``False`` for a retry of a forget that was cut short, which the retry or the open finishes).

        Example:
            >>> mem = CogMemory(CogMemConfig.preset("ephemeral"))  # doctest: +SKIP
            >>> mem.forget("alice", ["t1"])  # doctest: +SKIP
            False
        """
        if turn_ids is not None:
            return self.delete_turns(namespace, turn_ids) > 0
        validate_namespace(namespace)
        graph: list[bool] = []

        def finish(intent: dict[str, Any]) -> None:
            graph.append(self._finish_intent(intent))

        with self._lock, self.store.writing():
            existed = self.store.forget_namespace(namespace, finisher=finish)
        return existed or any(graph)

    def _finish_intent(self, intent: dict[str, Any]) -> bool:
        """The graph's step of a recorded delete or forget (the last one; safe to repeat). Returns whether
        the graph held any of it.

        Runs inside the store's write lock. A graph that cannot be read is deleted (it is derived, and may
        hold the deleted text): the next use of the namespace rebuilds it from the raw store.
        """
        ns = intent["namespace"]
        if intent["op"] == "forget":
            self._checked.discard(ns)
            return self._forget_graph(ns)
        try:
            stats = self.graphs.delete_turns(ns, intent["ids"])
        except StoreError as exc:
            logger.warning("graph of namespace %r cannot be read (%s): deleting it, it is rebuilt on next use", ns, exc)
            self._forget_graph(ns)
            self._checked.discard(ns)
            return False
        path = self.graphs.path(ns)
        journal = None if path is None else path.with_name(path.stem + ".journal")
        # A save cut short may have left the old journal (the deleted turns' extractions) beside a new snapshot.
        if stats.turns_removed or path is None or path.exists() or (journal is not None and journal.exists()):
            self.graphs.save(ns)
        if path is not None and path.parent.is_dir():
            for tmp in path.parent.glob(f".{path.stem}.*.tmp"):  # a save cut short by a crash: the graph's text
                tmp.unlink(missing_ok=True)
        self._purge_node_vectors(ns)  # also when a retry finds the graph done: the purge may be what was cut short
        return stats.turns_removed > 0

    def _repair_graph(self, namespace: str, *, missing: set[str], deleted: set[str]) -> None:
        """Bring a shared graph in step with the fresh raw view by difference (see :meth:`sync_graph`)."""
        logger.warning("graph of namespace %r is out of step with the raw store (%d turns missing, %d deleted): "
                       "repairing it from the raw turns", namespace, len(missing), len(deleted))
        try:
            extractions = _extract(self.extractor, _chronological(self.store.get_turns(namespace, sorted(missing)))) \
                if missing else []
            with self._lock, self.store.writing():
                if deleted:
                    self.graphs.delete_turns(namespace, sorted(deleted))
                if extractions:
                    self.graphs.apply(namespace, extractions)
                self.graphs.commit(namespace)
                if deleted:
                    self._purge_node_vectors(namespace)
        except Exception as exc:
            self._reload_graph(namespace)
            raise _graph_failure(namespace, len(missing), exc) from exc
        self._warm_node_vectors(namespace)

    def graph(self, namespace: str) -> nx.MultiDiGraph:
        """The namespace's PEC2F graph (repaired from the raw store on first use if behind; its stored node
        vectors read then)."""
        self._check_graph(validate_namespace(namespace))
        if namespace not in self._vectors_ready:
            self._prepare_node_vectors(namespace)
        return self.graphs.graph(namespace)

    def turn_records(self, namespace: str) -> Mapping[str, TurnRecords]:
        """Per turn id, the claims, events and state facts of the namespace's graph
        (:func:`~langmem_cog.graph.provenance.turn_records`: each turn's made on its first lookup), made again
        only after the graph changed. The map is shared and read-only."""
        G = self.graph(namespace)
        return self._records.get(namespace, G, self.graph_revision(namespace), lambda: turn_records(G))

    def graph_revision(self, namespace: str) -> int:
        """A number that grows with every change made in memory to the namespace's graph object
        (:attr:`~langmem_cog.graph.store.GraphMemory.revisions`)."""
        return self.graphs.revisions.get(namespace, 0)

    def consolidate(self, namespace: str) -> list[str]:
        """Consolidate repeated events into Facts (idempotent); returns the new or updated fact ids."""
        self._check_graph(validate_namespace(namespace))
        with self._lock, self.store.writing():
            out = self.graphs.consolidate(namespace)
            self.graphs.commit(namespace)
        self._warm_node_vectors(namespace)
        return out

    def rebuild_graph(self, namespace: str) -> nx.MultiDiGraph:
        """Recreate a namespace's graph from its raw turns alone.

        The raw turns are read fresh (in ``http`` mode, after catching up with every worker's writes).
        With a graph store shared by several workers (a journaled backend), the journal's heads are read
        first: the rebuild supersedes the entries they name (their turns are in the raw view read after),
        and entries other workers append meanwhile are applied on top of it, so nothing is lost.
        """
        with self._lock, self.store.writing():
            seen = self.graphs.journal_mark(namespace)  # before the raw read: every entry follows its raw write
            turns = self.store.get_turns(namespace)
            G = self.graphs.rebuild(namespace, turns, self.extractor, seen=seen)
            self.graphs.save(namespace)
            self._purge_node_vectors(namespace)  # texts of turns the raw store no longer holds
        # A shared graph: what every worker reads, the rebuild plus what others appended meanwhile.
        return self.graphs.graph(namespace) if self.graphs.journaled else G

    def sync_graph(self, namespace: str) -> bool:
        """Rebuild the graph if its provenance does not match the raw store (e.g. after a crash).

        Every applied turn is in the provenance of at least its speaker's Person node, so the
        union of node provenance equals the raw turn ids exactly when the graph is in step.

        The graph is brought up to date first (from the shared store, when several workers share one),
        then the raw turns are read fresh (``http`` mode: after catching up with every worker's writes).
        Every graph update is written after the raw turns it comes from, so a raw view read after the
        graph holds every turn the graph knows, unless it was deleted since: a stale view never
        counts another worker's turns as extra. A shared graph that is consistent in itself is repaired
        by difference (the missing turns extracted and applied, the deleted ones removed) rather than
        rebuilt: a turn another worker is adding at that moment is then applied twice, harmlessly.

        A graph that lacks only turns another add (of a live process, or another thread) is still
        extracting is left to that add (:mod:`langmem_cog.graph.pending`): it is behind for now, not out of step.

        Returns:
            Whether a repair (or rebuild) was needed.
        """
        return bool(self._sync_graph(namespace))

    def _sync_graph(self, namespace: str) -> bool | None:
        """:meth:`sync_graph`; ``None`` when the graph lacks only turns that adds in progress will bring."""
        validate_namespace(namespace)
        G = self.graphs.graph(namespace)  # the graph first, then the raw turns (see above)
        raw = {t.id for t in self.store.get_turns(namespace)}
        derived: set[str] = set()
        for _, d in G.nodes(data=True):
            derived |= set(d.get("provenance", ()))
        applied = set(G.graph.get("turns", ()))
        if derived == raw and applied == raw:
            return False
        missing = raw - applied
        if (derived == applied and applied <= raw and self.graphs.data_dir is not None
                and self.graphs.backend is None and missing <= pending.in_flight(self.graphs.data_dir, namespace)):
            logger.debug("graph of namespace %r lacks %d turns that an add in progress is extracting: left to it",
                         namespace, len(missing))
            return None
        # A graph consistent in itself is repaired by difference: a shared one always, a file one when
        # it only lacks turns (an add whose graph step failed): only those turns are extracted again.
        if derived == applied and raw and (self.graphs.journaled or (applied and applied <= raw)):
            self._repair_graph(namespace, missing=raw - applied, deleted=applied - raw)
            return True
        if not raw and not self.store.has_namespace(namespace):
            logger.warning("graph of namespace %r has no raw turns behind it (forgotten): deleting it", namespace)
            with self._lock, self.store.writing():
                self._forget_graph(namespace)
            return True
        if not derived and not applied:  # raw turns written without the graph (ingest --no-graph, TurnStore)
            logger.info("building the graph of namespace %r from its %d raw turns", namespace, len(raw))
        else:
            logger.warning("graph of namespace %r is out of step with the raw store: rebuilding", namespace)
        self.rebuild_graph(namespace)
        return True


def _chronological(turns: Iterable[Turn]) -> list[Turn]:
    return sorted(turns, key=lambda t: (t.timestamp, t.conversation_id, t.position, natural_key(t.id)))


class _ExtractorFailed(Exception):
    """The extractor's own failure (a model call, a network error), told apart from the graph's write."""


def _extract(extractor: Extractor, turns: list[Turn]) -> Any:
    try:
        return extractor.extract(turns)
    except ExtractionError as exc:
        raise _ExtractorFailed(str(exc)) from exc
    except LangMemCogError:
        raise
    except Exception as exc:  # wrapped, so an OSError of a model's HTTP client is not taken for a disk error
        raise _ExtractorFailed(f"{type(exc).__name__}: {exc}") from exc


def _graph_failure(namespace: str, n: int, exc: BaseException) -> LangMemCogError:
    """The error of a graph update that failed after the raw write: the cause, and how to complete the call."""
    if isinstance(exc, _ExtractorFailed):
        return ExtractionError(
            f"the {n} turns of this call are stored in namespace {namespace!r}, but the extractor failed ({exc}): "
            "retry the same add_turns call once it works again, which completes the graph (reads and deletes "
            "work meanwhile)")
    hint = (
        f"the {n} turns of this call are stored in namespace {namespace!r}, but its graph was not updated "
        f"({type(exc).__name__}: {exc}). Fix the cause (for graph files: free disk space, make the data "
        "directory writable), then retry the same add_turns call, which completes the graph; or call "
        f"CogMemory.rebuild_graph({namespace!r})"
    )
    return StoreError(hint) if isinstance(exc, StoreError | OSError) else ExtractionError(hint)
