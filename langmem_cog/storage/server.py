"""``http`` mode (a shared Chroma server): delete records, the freshness-checked reads, Chroma's transient drift."""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

logger = logging.getLogger("langmem_cog.store")  # the store's logger, as before the split

#: ``http`` mode: the prefix of the collection of a namespace collection's delete records (one record per
#: delete, its document the JSON list of the deleted ids, never text). Not ``lmc_``: it is no namespace.
_TOMBSTONE_PREFIX = "lmcdel_"

_T = TypeVar("_T")
_DRIFT = "Error finding id"
DRIFT_DELAYS = (0.05, 0.1, 0.2, 0.4)


@dataclass(frozen=True)
class ServerRecord:
    """What the freshness check reads of a collection on a Chroma server: its id and metadata."""

    id: str
    metadata: dict[str, Any] | None


def tombstone_collection_name(collection_id: Any) -> str:
    """``http`` mode: the Chroma collection of the delete records of one namespace collection (by its id, so
    a namespace forgotten and created again starts with none; see :data:`_TOMBSTONE_PREFIX`)."""
    return _TOMBSTONE_PREFIX + uuid.UUID(str(collection_id)).hex


def drift_read(read: Callable[[], _T], *, what: str, sleep: Callable[[float], None] = time.sleep) -> _T:
    """``read()``, tried again while Chroma reports its transient drift between metadata and vectors.

    Chroma applies a write to its metadata and to its vector index one after the other; a read that falls
    between the two (another worker of a shared server adding or deleting meanwhile) fails with
    ``InternalError: ... Error finding id`` (chroma-core/chroma#4460). Such a read is tried again after
    each delay of ``DRIFT_DELAYS``; any other error, or the drift after the last try, is raised.

    Example:
        >>> calls = []
        >>> def read():
        ...     calls.append(1)
        ...     if len(calls) < 3:
        ...         raise RuntimeError("Error executing plan: Internal error: Error finding id")
        ...     return "ok"
        >>> drift_read(read, what="a test read", sleep=lambda s: None), len(calls)
        ('ok', 3)
    """
    for delay in DRIFT_DELAYS:
        try:
            return read()
        except Exception as exc:  # chromadb's InternalError; only its drift message is retried
            if _DRIFT not in str(exc):
                raise
            logger.warning("%s: Chroma's metadata and vectors disagree for a moment (%s); trying again in %.2f s",
                           what, exc, delay)
        sleep(delay)
    return read()


def one_check(method: Callable[..., Any]) -> Callable[..., Any]:
    """http mode: one freshness check of the namespace (the first argument) for the whole call, whatever
    reads it makes (:meth:`TurnStore.reading`); other modes: the method as it is."""

    @functools.wraps(method)
    def wrapper(self: Any, namespace: str, *args: Any, **kwargs: Any) -> Any:
        if not self._shared:
            return method(self, namespace, *args, **kwargs)
        with self.reading(namespace):
            return method(self, namespace, *args, **kwargs)

    return wrapper
