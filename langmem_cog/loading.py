"""Loading models and heavy third-party modules: once per process, from any thread, quietly.

``transformers`` builds its namespace lazily, and importing it, sentence-transformers, ONNX Runtime
or a model from several threads at once can fail in one of them (``cannot import name
'AutoTokenizer' from 'transformers'``). Every load of this package therefore runs under one
process-wide lock (:func:`loading`), and :func:`load_once` keeps what a load returns: when threads
ask for the same model together (two users' first requests after a restart), one loads it and the
others wait and share it; if that load fails, every thread that waited for it gets its exception,
and a later call loads again.

A library leaves logging and the terminal to the application. While the lock is held:

* the root logger keeps its handlers: third-party code that logs through the root-level functions
  (ONNX Runtime's ``quantize_dynamic`` calls ``logging.warning``) would otherwise run
  ``logging.basicConfig()``, after which the application's own ``basicConfig(...)`` does nothing.
  When root has no handler, a temporary one stands in for it and does what logging does without
  one (records no other handler saw go to :data:`logging.lastResort`: warnings to stderr), and it
  is removed after. A ``basicConfig(...)`` called by another thread while a model loads finds it
  and does nothing: configure logging before the first load;
* with ``loading(models=True)`` (where a transformers model loads), the progress bars of
  ``transformers`` and ``huggingface_hub`` ("Loading weights") are off, and their earlier state
  is restored after, so an application's own choice stands outside the library's loads.

Example:
    >>> load_once("doc-answer", lambda: 42), load_once("doc-answer", lambda: 0)
    (42, 42)
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable, Hashable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["gc_paused", "load_once", "loading"]

T = TypeVar("T")

_LOCK = threading.RLock()  # re-entered: a load may need another (an int8 graph is built from the fp32 one)
_depth = 0  # how deeply the lock is held (read and written only while holding it)
_LOADED: dict[Hashable, Any] = {}
#: Per key: how many loads have failed, and the last one's exception.
_FAILED: dict[Hashable, tuple[int, BaseException]] = {}


class _UnconfiguredRoot(logging.Handler):
    """What logging does with a record that no handler sees: :data:`logging.lastResort` (warnings
    and above, to stderr). A record that another handler saw is left to it."""

    def emit(self, record: logging.LogRecord) -> None:
        logger: logging.Logger | None = logging.root if record.name == "root" else logging.getLogger(record.name)
        while logger is not None:
            if any(h is not self for h in logger.handlers):
                return
            logger = logger.parent if logger.propagate else None
        last = logging.lastResort
        if last is not None and record.levelno >= last.level:
            last.handle(record)


@contextmanager
def loading(*, models: bool = False) -> Iterator[None]:
    """Hold the process-wide load lock for the block (re-entrant), keeping the root logger unconfigured.

    Args:
        models: Also turn off the progress bars of ``transformers`` and ``huggingface_hub`` for the
            block (imports ``transformers``; for blocks that load a transformers model).
    """
    global _depth
    with _LOCK:
        root = logging.getLogger()
        guard = _UnconfiguredRoot() if _depth == 0 and not root.handlers else None
        if guard is not None:
            root.addHandler(guard)
        _depth += 1
        try:
            if models:
                with _progress_bars_off():
                    yield
            else:
                yield
        finally:
            _depth -= 1
            if guard is not None:
                root.removeHandler(guard)


@contextmanager
def _progress_bars_off() -> Iterator[None]:
    """``transformers``' and ``huggingface_hub``'s progress bars off for the block; their state restored after."""
    from huggingface_hub import utils as hub
    from transformers.utils import logging as hf_logging

    bars, hub_off = hf_logging.is_progress_bar_enabled(), hub.are_progress_bars_disabled()
    hf_logging.disable_progress_bar()  # turns huggingface_hub's off too
    try:
        yield
    finally:
        if bars:
            hf_logging.enable_progress_bar()  # turns huggingface_hub's on too
        if hub.are_progress_bars_disabled() != hub_off:
            (hub.disable_progress_bars if hub_off else hub.enable_progress_bars)()


def load_once(key: Hashable, load: Callable[[], T], *, store: MutableMapping[Any, Any] | None = None) -> T:
    """What ``load()`` returns, loaded once per process per ``key`` under :func:`loading`.

    Threads that ask for a key while it loads wait and get the same object. If the load raises, each
    of them raises its exception (none loads again); a call made after the failure loads again.

    Args:
        key: Names what is loaded (e.g. a model's path and settings).
        load: Loads it (called under the load lock; it may call :func:`load_once` for another key).
        store: Where loaded values are kept (default: this module's); a caller with its own cache passes it.

    Example:
        >>> calls = []
        >>> def flaky():
        ...     calls.append(1)
        ...     if len(calls) == 1:
        ...         raise OSError("disk busy")
        ...     return "model"
        >>> load_once("doc-flaky", flaky)
        Traceback (most recent call last):
        ...
        OSError: disk busy
        >>> load_once("doc-flaky", flaky), len(calls)
        ('model', 2)
    """
    store = _LOADED if store is None else store
    if key in store:
        return store[key]
    seen = _FAILED.get(key, (0, None))[0]  # failures before this call: a later one happened while it waited
    with loading():
        if key in store:
            return store[key]
        failures, error = _FAILED.get(key, (0, None))
        if failures > seen and error is not None:
            raise error
        try:
            value = load()
        except Exception as exc:
            _FAILED[key] = (failures + 1, exc)
            raise
        store[key] = value
        _FAILED.pop(key, None)
        return value


_GC_LOCK = threading.Lock()
#: How many objects (net, since the collector last ran) a pause must have built for :func:`gc_paused` to move
#: them to the oldest generation at once.
SPLICE_OBJECTS = 50_000
_gc_pauses = 0  # threads inside gc_paused() (read and written only while holding _GC_LOCK)
_gc_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a large structure is built (a graph snapshot, a
    namespace's turns read from Chroma).

    Building millions of small objects starts the collector again and again, and each full pass scans every
    object built so far: a 10,000-turn namespace's graph snapshot (9,867 nodes) loads in 237 ms instead of
    405 ms with it on. Reference counting still frees what is dropped meanwhile. Threads pausing together share one pause;
    the collector runs again when the last one leaves, if it ran when the first one came (an application
    that turned it off keeps it off).

    When the last one leaves having built a large structure (:data:`SPLICE_OBJECTS` objects or more), what was
    built goes straight to the collector's oldest generation (``gc.freeze()`` then ``gc.unfreeze()``: two list
    splices), as it would after surviving two young collections, without those two scans of every object: for
    a 30,000-turn namespace (440,000 objects), about 0.4 s of young collections that its first query paid.
    Smaller loads (a tenant's few turns) leave the collector's counts alone: spliced objects never count
    towards the next full collection, so splicing every small load would put off the collection of released
    namespaces' cycles. It is skipped when the application keeps objects frozen itself
    (``gc.get_freeze_count()``: unfreezing would undo that).

    Example:
        >>> import gc
        >>> with gc_paused():
        ...     paused = not gc.isenabled()
        >>> paused, gc.isenabled()
        (True, True)
    """
    global _gc_pauses, _gc_was_enabled
    with _GC_LOCK:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                if gc.get_count()[0] >= SPLICE_OBJECTS and gc.get_freeze_count() == 0:
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()
