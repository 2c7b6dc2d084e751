"""The parts of the raw-turn store (:class:`langmem_cog.store.TurnStore`) that are not the class itself.

``TurnStore`` (in :mod:`langmem_cog.store`) holds every public operation; the modules here hold the
per-namespace state it keeps, the records it hands out, the helpers it calls and the collaborators that do
parts of its work (writes, loading, removal, search), grouped by job. Nothing here is
public API: import the public names (``ScoredTurn``, ``PoolScores``, ``SearchMode``, ``StageTimes``)
from :mod:`langmem_cog.store`, which re-exports them.

Modules:
    types: the records the store hands out (``ScoredTurn``, ``PoolScores``, ``StageTimes``,
        ``SearchMode``).
    namespaces: the per-namespace state (``Namespaces``): each namespace's lock, open collection,
        in-memory copy, BM25 and context indexes, the check of a vector dimension, and dropping that state.
    access: who may write and when to reload (``DataDirAccess``: the Chroma client, the write lock, the
        data directory's lock and change counter) and a read's freshness check (``ReadChecks``).
    chroma: Chroma access: collection names, the embedding-function adapter Chroma records and
        rebuilds, private in-memory clients, dropping an embedded system that failed to start, turns to
        and from Chroma records, a collection that is gone (``NamespaceGone``, ``collection_gone``,
        ``public_unknown``), the message of a database that cannot be opened.
    server: ``http`` mode (a shared Chroma server): the freshness-check record, delete-record
        (tombstone) collection names, the once-per-call freshness check (``one_check``), and reads
        retried through Chroma's transient metadata/vector drift (``drift_read``).
    sync: ``http`` mode's freshness across workers: the delete records (``Tombstones``), the server's
        record of a collection, the ids it holds, reading turns by id, and one store's freshness state
        with the catch-up that keeps its view up to date (``ServerSync``).
    files: the embedded database's files kept free of deleted text (``EmbeddedFiles``: a
        collection's segment folders, zeroing unused HNSW slots, purging the write-ahead log, ``VACUUM``).
    journal: the intent journal of deletes and forgets in progress (``Intent``), the atomic write of
        its records, and the running of their steps to completion (``IntentJournal``).
    removal: the store's steps of a delete and of a forget, each safe to repeat (``RemovalSteps``): the
        turns or the namespace out of Chroma, BM25, the context vectors and memory, and their text out of
        the embedded database's files.
    identity: the data directory's manifest (``langmem-cog.json``): its format and the embedder its
        vectors come from, checked when a persistent store opens (``check_data_dir``).
    bm25: adding turns to a namespace's BM25 index and log, and removing the temporary copies of
        the log that crashed compactions left.
    inputs: checking ``add_turns``'s turns and a search's query, grouping turns by namespace,
        comparing them with the stored ones, and the chronological order of turns.
    cache: the in-memory copy of a namespace (turns, vectors, context vectors) in that order.
    writes: the write path below the write lock (``TurnWriter``): one namespace's new turns into Chroma
        (undone when Chroma refuses them), then the BM25 index and context vectors; the turns Chroma already
        holds of a call's ids, and the free-space check before a write.
    loading: loading a namespace's in-memory copy from Chroma on first use, with its BM25 index brought
        in line with it (``CacheLoader``).
    scoring: fusing a pool's dense and BM25 scores (z-score or reciprocal-rank fusion).
    search: scoring and searching a namespace (its pool scores, the cosines and vectors of a few turns,
        hybrid search, exact or over HNSW and BM25 candidates) and the cache of recent query vectors
        (``TurnSearch``).

The helpers log under the ``langmem_cog.store`` logger, like ``TurnStore`` itself. The modules import
only from the rest of the library and from each other, never from :mod:`langmem_cog.store`.
"""
