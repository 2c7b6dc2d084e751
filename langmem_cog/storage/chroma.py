"""Chroma access for the raw-turn store: clients, collection names, the embedding-function adapter,
turns <-> Chroma records, and the errors of a collection that is gone or a database that cannot open."""

from __future__ import annotations

import functools
import hashlib
import logging
import uuid
import weakref
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langmem_cog.errors import StoreError, UnknownNamespaceError
from langmem_cog.records import Turn

logger = logging.getLogger("langmem_cog.store")  # the store's logger, as before the split

COLLECTION_PREFIX = "lmc_"
_EXTRA_PREFIX = "x_"


class NamespaceGone(UnknownNamespaceError):
    """A namespace's collection vanished while it was being read: another process (or store object)
    forgot it between this store's freshness check and its read of Chroma."""


def collection_gone(exc: BaseException) -> bool:
    """Whether a Chroma error says the collection no longer exists."""
    from chromadb.errors import NotFoundError

    return isinstance(exc, NotFoundError) or (isinstance(exc, ValueError) and "does not exist" in str(exc))


def evicted_index_failed(exc: BaseException) -> bool:
    """Whether a Chroma error is its embedded system failing to load again an HNSW index that its cache
    evicted ("Error creating hnsw segment reader: Nothing found on disk", chromadb 1.5); a new system
    loads the collection (:meth:`~langmem_cog.storage.access.DataDirAccess.restart_embedded`)."""
    return "Error creating hnsw segment reader" in str(exc)


def public_unknown(method: Callable[..., Any]) -> Callable[..., Any]:
    """Readers raise a plain :class:`UnknownNamespaceError` for a namespace forgotten while being read."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except NamespaceGone as exc:
            raise UnknownNamespaceError(str(exc)) from exc.__cause__

    return wrapper


def collection_name(namespace: str) -> str:
    """The Chroma collection of a namespace: a fixed prefix plus a hash (never the raw id)."""
    return COLLECTION_PREFIX + hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:40]


def turn_metadata(turn: Turn) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "namespace": turn.namespace,
        "conversation_id": turn.conversation_id,
        "session_id": turn.session_id,
        "speaker": turn.speaker,
        "timestamp": turn.timestamp.isoformat(),
        "ts": turn.timestamp.timestamp(),
        "position": turn.position,
    }
    for key, value in turn.metadata.items():
        meta[_EXTRA_PREFIX + key] = value
    return meta


def turn_from_chroma(turn_id: str, text: str, meta: dict[str, Any]) -> Turn:
    extra = {k[len(_EXTRA_PREFIX):]: v for k, v in meta.items() if k.startswith(_EXTRA_PREFIX)}
    return Turn.model_construct(
        id=turn_id,
        namespace=meta["namespace"],
        conversation_id=meta["conversation_id"],
        session_id=meta["session_id"],
        speaker=meta["speaker"],
        text=text,
        timestamp=datetime.fromisoformat(meta["timestamp"]),
        position=int(meta["position"]),
        metadata=extra,
    )


class ChromaEmbeddingFunction:
    """Adapter so Chroma never falls back to its default (downloading) embedding function.

    Chroma records the embedding function of every collection (its :meth:`name` and
    :meth:`get_config`) in the collection's schema, and rebuilds it from the registry of known
    embedding functions whenever it reads the schema back (each ``add`` to a collection opened in a
    new process does). The class is registered there under :meth:`name` (see
    :func:`register_chroma_embedding_function`), so that rebuild succeeds instead of warning
    ``Could not reconstruct embedding function langmem_cog``. The rebuilt function has no embedder:
    langmem-cog always embeds turns itself and passes its own adapter to every ``get_collection``,
    so Chroma never needs to call it; if something does, it raises :class:`StoreError` rather than
    embed with another model.

    Args:
        embeddings: The store's embedder; ``None`` for the placeholder Chroma rebuilds from a schema.
    """

    def __init__(self, embeddings: Embeddings | None = None) -> None:
        self._embeddings = embeddings

    def _require(self) -> Embeddings:
        if self._embeddings is None:
            raise StoreError(
                "this Chroma collection was opened without langmem-cog's embedder: open it through "
                "langmem_cog.TurnStore (which embeds turns itself) rather than through chromadb directly"
            )
        return self._embeddings

    def __call__(self, input: list[str]) -> list[np.ndarray]:  # noqa: A002 - Chroma's signature
        return [np.asarray(v, dtype=np.float32) for v in self._require().embed_documents(list(input))]

    def embed_query(self, input: list[str]) -> list[np.ndarray]:  # noqa: A002
        embeddings = self._require()
        return [np.asarray(embeddings.embed_query(t), dtype=np.float32) for t in input]

    @staticmethod
    def name() -> str:
        return _CHROMA_EF_NAME

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine"]

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ChromaEmbeddingFunction:
        # What Chroma rebuilds from a stored schema: never its downloading default, never a model.
        return ChromaEmbeddingFunction(None)

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        return None

    def validate_config_update(self, old_config: dict[str, Any], new_config: dict[str, Any]) -> None:
        return None

    def is_legacy(self) -> bool:
        return False


_CHROMA_EF_NAME = "langmem_cog"


def register_chroma_embedding_function() -> None:
    """Register :class:`ChromaEmbeddingFunction` in Chroma's registry of known embedding functions
    (idempotent), so collections written by langmem-cog reopen without a warning."""
    from chromadb.utils.embedding_functions import known_embedding_functions, register_embedding_function

    if known_embedding_functions.get(_CHROMA_EF_NAME) is not ChromaEmbeddingFunction:
        register_embedding_function(ChromaEmbeddingFunction)


def start_embedded_system(path: str, settings: Any, indexes: int) -> None:
    """Start Chroma's embedded system for the database folder ``path``, keeping at most ``indexes`` HNSW
    indexes loaded; a ``chromadb.PersistentClient(path, settings)`` made next uses it.

    Chroma sizes its cache of loaded HNSW indexes (each holds four files open) from the process's
    open-files limit (``RLIMIT_NOFILE // 5``), so a process that touches many collections keeps hundreds
    of indexes, and their files, open. Here the size comes from ``CogMemConfig.open_namespaces``. The
    system is registered as Chroma registers the one a client starts, once it has started.

    Raises:
        Exception: Whatever Chroma raises when the database cannot be opened (nothing is registered).
    """
    from chromadb.api import ServerAPI
    from chromadb.api.shared_system_client import SharedSystemClient
    from chromadb.config import System
    from chromadb.telemetry.product import ProductTelemetryClient

    settings.persist_directory = path  # what PersistentClient sets: its settings then equal the system's
    settings.is_persistent = True
    system = System(settings)
    system.instance(ProductTelemetryClient)  # type: ignore[type-abstract]  # Chroma's own start order
    api: Any = system.instance(ServerAPI)  # type: ignore[type-abstract]  # the embedded (Rust) API
    api.hnsw_cache_size = int(indexes)  # read when the system starts
    system.start()
    SharedSystemClient._identifier_to_system[path] = system


def ephemeral_client(settings: Any) -> Any:
    """An in-memory Chroma client over a database of its own, dropped when the client is collected.

    Chroma runs one in-memory system per process for every ``EphemeralClient`` (its identifier is
    the constant ``"ephemeral"`` whatever the settings), so two ephemeral clients of the default
    database see each other's collections. Each ephemeral store therefore gets a fresh database
    (``lmc_<uuid>``) in that system: its namespaces, counts and forgets are its own.
    """
    import chromadb

    admin = chromadb.AdminClient(settings)
    database = f"{COLLECTION_PREFIX}{uuid.uuid4().hex}"
    try:
        admin.create_database(database)
        client = chromadb.EphemeralClient(settings=settings, database=database)
    except Exception as exc:  # chromadb's errors share no base class worth naming
        raise StoreError(f"cannot create an in-memory Chroma database: {exc}") from exc
    finalizer = weakref.finalize(client, _drop_ephemeral_database, admin, database)
    finalizer.atexit = False  # the process's memory goes anyway
    return client


def _drop_ephemeral_database(admin: Any, database: str) -> None:
    """Free the collections of an ephemeral store's database once nothing uses its client."""
    try:
        admin.delete_database(database)
    except Exception as exc:  # a stopped system (interpreter shutdown), or already gone
        logger.debug("could not drop the in-memory Chroma database %s: %s", database, exc)


def drop_chroma_system(identifier: str) -> None:
    """Forget the embedded Chroma system of ``identifier`` (a path) that failed to start, so the next
    open builds a new one instead of reusing it."""
    from chromadb.api.shared_system_client import SharedSystemClient

    system = SharedSystemClient._identifier_to_system.pop(identifier, None)
    SharedSystemClient._identifier_to_refcount.pop(identifier, None)
    if system is not None:
        try:
            system.stop()
        except Exception as exc:  # it never started: nothing to stop
            logger.debug("stopping the Chroma system of %s that failed to start: %s", identifier, exc)


def open_failure(db: Path, exc: BaseException) -> str:
    """The message of an embedded Chroma database that cannot be opened: which file, why, what to do."""
    text = f"{type(exc).__name__}: {exc}"
    low = text.lower()
    if "readonly" in low or "read-only" in low or "permission denied" in low or isinstance(exc, PermissionError):
        return (
            f"cannot open the Chroma database {db} for writing ({text}): langmem-cog opens it read-write even "
            f"to read. Make {db} and its folder writable (e.g. chmod -R u+w {db.parent.parent}), or copy the data "
            "directory to a writable place and open the copy. Nothing was written"
        )
    if "not a database" in low or "malformed" in low or "corrupt" in low or "file is encrypted" in low:
        return (
            f"the Chroma database {db} is damaged ({text}): it is not a readable SQLite file. Restore it (the whole "
            f"folder {db.parent}) from a backup, or move the data directory aside and re-ingest the turns into a "
            "new one. Nothing was written"
        )
    return (
        f"cannot open the Chroma database {db} ({text}): check that it is a langmem-cog data directory written by "
        "a compatible chromadb version, that the disk is not full and the files are readable and writable; "
        "restore it from a backup or re-ingest the turns into a new data directory if it is damaged"
    )
