"""Graph journals: the operations applied since a graph's snapshot, so that a commit costs what changed.

An operation is a JSON object: ``{"op": "apply", "extractions": [...]}`` (see
:func:`~langmem_cog.graph.persist.extraction_payload`), ``{"op": "delete", "ids": [...]}``,
``{"op": "consolidate"}``, ``{"op": "reconcile"}`` or ``{"op": "rebuild", "seen": {...}, "extractions": [...]}``.
Two journals hold them:

* a journal file beside a graph file (:func:`journal_path`): one JSON line per operation, numbered by
  ``seq``; :func:`append_file_journal` appends, :func:`replay_file_journal` replays the lines past the
  snapshot's ``journal_seq``;
* a journal in a store shared by several workers (a journaled
  :class:`~langmem_cog.graph.backends.GraphStore`): :class:`SharedJournal`.

The graph of a namespace in a shared store is its snapshot (a cache, folding the entries up to a vector
clock) plus the journal entries past that clock, replayed in a fixed order: (hlc, writer, seq)
(:func:`entry_order`). Entries are never lost to a concurrent write (one key per entry, written once), so
whichever snapshot a race left, it plus the entries past its clock is the whole graph. An entry that
arrives out of that order (another worker's, appended concurrently) makes the reader replay again from
the snapshot, so every worker that read the same items holds the same graph.

Example:
    >>> entry_order({"hlc": 5, "w": "a1", "seq": 2, "ops": []})
    (5, 'a1', 2)
    >>> is_rebuild({"ops": [{"op": "rebuild", "seen": {}, "extractions": []}]})
    True
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from langmem_cog.errors import InvalidInputError, StoreError
from langmem_cog.graph.apply import (
    ApplySettings,
    apply_extractions,
    consolidate_graph,
    delete_records,
    reconcile_graph,
    validate_extractions,
)
from langmem_cog.graph.backends import atomic_write_text, entry_key
from langmem_cog.graph.persist import (
    REBUILD_HINT,
    empty_graph,
    extraction_from_payload,
    graph_from_snapshot,
    graph_payload,
)
from langmem_cog.graph.vectors import remove_chunks
from langmem_cog.loading import gc_paused

__all__ = [
    "JOURNAL_MAX_ENTRIES",
    "journal_path",
    "journal_max_seq",
    "append_file_journal",
    "replay_file_journal",
    "JournalState",
    "StoreRead",
    "SharedJournal",
    "entry_order",
    "is_rebuild",
    "JournalCosts",
    "remove_graph_files",
    "write_graph_file",
]

# The graph memory's own logger: these records are its operations.
logger = logging.getLogger("langmem_cog.graph.store")

#: Journaled backends: entries past the snapshot after which a commit rewrites it whatever their size.
#: A load (and a reload after an entry arrived out of order) replays them, a few ms each on a graph of
#: a few hundred turns: this bounds it.
JOURNAL_MAX_ENTRIES = 32


# ---------------------------------------------------------------------- the journal file beside a graph file
def journal_path(path: Path) -> Path:
    """The journal file of the graph file ``path``.

    Example:
        >>> journal_path(Path("graph/ab12.json")).name
        'ab12.journal'
    """
    return path.with_name(path.stem + ".journal")


def journal_max_seq(journal: Path) -> int:
    """The highest sequence number readable in a (possibly damaged) journal; 0 if none."""
    try:
        data = journal.read_bytes()
    except OSError:
        return 0
    best = 0
    for line in data.splitlines():
        try:
            n = json.loads(line.decode("utf-8"))["seq"]
        except (ValueError, KeyError, TypeError, IndexError, RecursionError):  # UnicodeDecodeError too
            continue
        if isinstance(n, int) and not isinstance(n, bool):
            best = max(best, n)
    return best


def append_file_journal(path: Path, namespace: str, seq: int, ops: list[dict[str, Any]]) -> tuple[int, int, int]:
    """Append ``ops`` to the journal of the graph file ``path``, numbered from ``seq + 1``, and fsync it.

    Returns:
        The last sequence number written, then the sizes in bytes of the journal and of the graph file
        after the append (they decide whether the snapshot is rewritten).

    Raises:
        StoreError: If the journal cannot be written or either file's size read.
    """
    journal = journal_path(path)
    lines = []
    for op in ops:
        seq += 1
        lines.append(json.dumps({"seq": seq, **op}, ensure_ascii=False, separators=(",", ":")))
    try:
        with journal.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        size = journal.stat().st_size
        snapshot = path.stat().st_size
    except OSError as exc:
        raise StoreError(f"cannot append to the graph journal of namespace {namespace!r} ({journal}): {exc}") from exc
    return seq, size, snapshot


def replay_file_journal(
    G: nx.MultiDiGraph, journal: Path, namespace: str, seq: int, settings: ApplySettings
) -> tuple[int, bool]:
    """Apply the journal's operations newer than the snapshot (``seq``) to ``G``.

    A torn last line (a crash mid-append) ends the replay; the next commit should then rewrite the
    snapshot, and ``CogMemory`` repairs any turn it missed from the raw store.

    Returns:
        The last sequence number applied, and whether the journal ended with a torn line.

    Raises:
        StoreError: If the journal cannot be read, or an entry is malformed or of an unknown operation.
    """
    try:
        text = journal.read_text(encoding="utf-8")
    except FileNotFoundError:
        return seq, False
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"cannot read the graph journal {journal} of namespace {namespace!r}: {exc}; "
                         f"{REBUILD_HINT}") from exc
    for line in text.splitlines():
        try:
            op = json.loads(line)
            n = int(op["seq"])
        except (KeyError, TypeError, ValueError, OverflowError, RecursionError):  # JSONDecodeError too
            logger.warning("graph journal %s ends with a torn entry: replayed up to %d", journal, seq)
            return seq, True
        if n <= seq:
            continue
        kind = op.get("op")
        if kind == "apply":
            try:
                extractions = [extraction_from_payload(e) for e in op["extractions"]]
                apply_extractions(G, validate_extractions(extractions), settings)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:  # InvalidInputError too
                raise StoreError(f"graph journal {journal}: entry {n} is malformed ({exc!r}); "
                                 f"{REBUILD_HINT}") from exc
        elif kind == "consolidate":
            consolidate_graph(G, settings)
        elif kind == "reconcile":
            reconcile_graph(G)
        else:
            raise StoreError(f"graph journal {journal}: unknown operation {kind!r}; {REBUILD_HINT}")
        seq = n
    return seq, False


# ---------------------------------------------------------------------- the journal in a shared store
@dataclass
class JournalState:
    """What a graph memory applied of one namespace's journal in a shared store."""

    vc: dict[str, int] = field(default_factory=dict)  # writer -> last seq applied (the snapshot's clock included)
    last: tuple[int, str, int] = (-1, "", 0)  # replay order of the last entry applied past the snapshot
    hlc: int = 0  # the highest hybrid clock seen (the next entry's is above it)
    seq: int = 0  # this memory's last entry in the namespace
    base_vc: dict[str, int] = field(default_factory=dict)  # the clock of the snapshot last read or written
    base_size: int = 0  # its size (bytes of JSON)
    since: dict[str, int] = field(default_factory=dict)  # entries applied past it -> their size
    index: dict[str, set[str]] = field(default_factory=dict)  # turn id -> keys of entries holding its extraction


@dataclass
class StoreRead:
    """What :meth:`SharedJournal.read` found in the store: the journal's heads and the snapshot state.

    Attributes:
        heads: Writer -> its last entry.
        state: The snapshot state (``None``: no snapshot, or a damaged one).
        damaged: The error reading a damaged snapshot (superseded if a rebuild follows in the journal).
        snap_vc: The snapshot's clock (empty without one).
    """

    heads: dict[str, int]
    state: dict[str, Any] | None
    damaged: StoreError | None
    snap_vc: dict[str, int]


def entry_order(entry: dict[str, Any]) -> tuple[int, str, int]:
    """The replay order of journal entries: hybrid clock, then writer and seq (a total order, the same for all)."""
    return (entry["hlc"], entry["w"], entry["seq"])


def is_rebuild(entry: dict[str, Any]) -> bool:
    """Whether a journal entry is a rebuild (which replaces the graph instead of changing it)."""
    ops = entry.get("ops") or []
    return bool(ops) and isinstance(ops[0], dict) and ops[0].get("op") == "rebuild"


class SharedJournal:
    """The journals of one graph memory's namespaces in a store shared by several workers.

    Holds what this memory applied of each namespace's journal (:class:`JournalState`); the graphs and the
    operations not committed yet stay with the caller, which holds the namespace's lock around every call.

    Args:
        backend: A journaled :class:`~langmem_cog.graph.backends.GraphStore` (``heads``, ``entries``,
            ``append``, ``rewrite_entry``, ``read_state``, ``write_state``, ``describe``).
        writer_id: This memory's writer id (the keys of the entries it appends).
        ratio: A commit rewrites the snapshot when the entries past it outgrow this fraction of its size
            and ``min_bytes``, or number :data:`JOURNAL_MAX_ENTRIES` (``0``: on every commit).
        min_bytes: Size of the entries past the snapshot below which only their number rewrites it.
    """

    def __init__(self, backend: Any, writer_id: str, *, ratio: float, min_bytes: int) -> None:
        self.backend = backend
        self.writer_id = writer_id
        self.ratio = ratio
        self.min_bytes = min_bytes
        self.states: dict[str, JournalState] = {}

    def forget(self, namespace: str) -> None:
        """Drop what this memory applied of a namespace's journal."""
        self.states.pop(namespace, None)

    def catch_up(self, namespace: str, G: nx.MultiDiGraph, settings: ApplySettings) -> bool:
        """Bring the cached graph ``G`` up to date with the journal: one listing of the heads when nothing
        changed, the new entries by key otherwise.

        Returns:
            ``False`` if ``G`` cannot be brought up to date in place (an entry arrived out of order, a rebuild,
            or a namespace forgotten by another worker): the caller loads the graph again.
        """
        st = self.states.get(namespace)
        if st is None:  # a graph put in memory directly: as if loaded from an empty journal
            st = self.states[namespace] = JournalState()
        heads = self.backend.heads(namespace)
        st.seq = max(st.seq, heads.get(self.writer_id, 0))
        if any(heads.get(w, 0) < n for w, n in st.vc.items()):  # forgotten (maybe written again) by another worker
            return False
        keys = [entry_key(w, s) for w, top in heads.items() for s in range(st.vc.get(w, 0) + 1, top + 1)]
        if not keys:
            return True
        entries = self._fetch(namespace, keys)
        if any(is_rebuild(e) for e in entries) or (entries and entry_order(entries[0]) <= st.last):
            return False  # out of order, or a rebuild: replay again from the snapshot
        for e in entries:
            self._replay(namespace, G, e, st, settings)
        for w, top in heads.items():
            st.vc[w] = max(st.vc.get(w, 0), top)
        return True

    def read(self, namespace: str) -> StoreRead:
        """The journal's heads and the snapshot state, the first step of a load (:meth:`load`)."""
        heads = self.backend.heads(namespace)
        damaged: StoreError | None = None
        try:
            state = self.backend.read_state(namespace)
        except StoreError as exc:  # superseded if a rebuild follows in the journal
            state, damaged = None, exc
        snap_vc: dict[str, int] = dict(state["vc"]) if state else {}
        return StoreRead(heads=heads, state=state, damaged=damaged, snap_vc=snap_vc)

    def load(self, namespace: str, found: StoreRead, settings: ApplySettings) -> nx.MultiDiGraph:
        """The graph from the store alone: the snapshot plus the entries past its clock, in replay order; or,
        if one of those is a rebuild, the last rebuild plus every entry it did not see.

        Raises:
            StoreError: If the snapshot is damaged and no rebuild follows it, or an entry replayed is malformed.
        """
        heads, state, damaged, snap_vc = found.heads, found.state, found.damaged, found.snap_vc
        old = self.states.get(namespace)
        st = JournalState(seq=max(old.seq if old else 0, heads.get(self.writer_id, 0)))
        top = {w: max(heads.get(w, 0), snap_vc.get(w, 0)) for w in heads.keys() | snap_vc.keys()}
        entries = self._fetch(
            namespace, [entry_key(w, s) for w, n in heads.items() for s in range(snap_vc.get(w, 0) + 1, n + 1)])
        rebuilds = [e for e in entries if is_rebuild(e)]
        if state:
            st.index = {t: set(keys) for t, keys in state["index"].items()}
            st.hlc = state["hlc"]
        if rebuilds:
            last = rebuilds[-1]
            seen = last["ops"][0].get("seen") or {}
            if not isinstance(seen, dict):
                raise StoreError(f"graph journal of namespace {namespace!r}: a rebuild entry is malformed; "
                                 f"{REBUILD_HINT}")
            fetched = {entry_key(e["w"], e["seq"]) for e in entries}
            more = [k for w, n in top.items() for s in range(int(seen.get(w, 0)) + 1, n + 1)
                    if (k := entry_key(w, s)) not in fetched]
            unseen = [e for e in [*entries, *self._fetch(namespace, more)]
                      if e["seq"] > int(seen.get(e["w"], 0)) and not is_rebuild(e)]
            G = empty_graph()
            for e in [last, *sorted(unseen, key=entry_order)]:
                self._replay(namespace, G, e, st, settings)
        else:
            if damaged is not None:
                raise damaged
            G = (empty_graph() if state is None else
                 graph_from_snapshot(state["snapshot"], self.backend.describe(namespace), namespace))
            st.base_vc, st.base_size = dict(snap_vc), state["size"] if state else 0
            for e in entries:
                self._replay(namespace, G, e, st, settings)
        st.vc = top
        self.states[namespace] = st
        return G

    def state(self, namespace: str) -> JournalState:
        """What this memory applied of the namespace's journal; if it never read it (a rebuild), its own
        last entry only."""
        st = self.states.get(namespace)
        if st is None:
            st = self.states[namespace] = JournalState(seq=self.backend.heads(namespace).get(self.writer_id, 0))
        return st

    def append(self, namespace: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
        """Append ``ops`` as this memory's next entry of the namespace's journal; returns the entry.

        Raises:
            StoreError: If the store cannot be written (nothing is recorded then).
        """
        st = self.state(namespace)
        seq = st.seq + 1
        entry: dict[str, Any] = {"namespace": namespace, "w": self.writer_id, "seq": seq,
                                 "hlc": max(time.time_ns() // 1_000_000, st.hlc + 1), "ops": ops}
        self.backend.append(namespace, self.writer_id, seq, entry)
        return entry

    def appended(self, namespace: str, entry: dict[str, Any]) -> None:
        """Record an entry :meth:`append` wrote, and scrub the extractions of the turns it deletes from the
        entries this memory applied before it."""
        st = self.state(namespace)
        key = entry_key(self.writer_id, entry["seq"])
        st.seq = entry["seq"]
        st.vc[self.writer_id] = entry["seq"]
        st.last = max(st.last, entry_order(entry))
        st.hlc = entry["hlc"]
        st.since[key] = len(json.dumps(entry, separators=(",", ":")))
        ops = entry["ops"]
        deleted = {i for op in ops if op.get("op") == "delete" for i in op["ids"]}
        if deleted:  # every entry this memory applied is ordered before this one
            self._scrub(namespace, st, deleted, keep=key)
        for op in ops:
            for x in op.get("extractions", ()):
                st.index.setdefault(x["turn_id"], set()).add(key)

    def compaction_due(self, namespace: str) -> bool:
        """Whether the entries past the snapshot outgrew ``ratio`` / ``min_bytes`` / :data:`JOURNAL_MAX_ENTRIES`."""
        st = self.state(namespace)
        size = sum(st.since.values())
        return bool(st.since) and (self.ratio == 0 or len(st.since) >= JOURNAL_MAX_ENTRIES
                                   or size > max(self.min_bytes, self.ratio * st.base_size))

    def compact(self, namespace: str, G: nx.MultiDiGraph) -> None:
        """Rewrite the snapshot: ``G``, which folds exactly the entries of the namespace's clock (nothing is
        pending). Entries stay: a concurrent compaction that wins with an older snapshot costs replays only.
        Entries still holding extractions of turns the graph no longer has are scrubbed first."""
        st = self.states[namespace]
        turns = G.graph.get("turns", {})
        gone = {t for t in st.index if t not in turns}
        if gone:
            self._scrub(namespace, st, gone)
        payload = graph_payload(namespace, G)
        size = len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
        self.backend.write_state(namespace, payload, vc=st.vc, hlc=st.hlc, size=size,
                                 index={t: sorted(keys) for t, keys in st.index.items()})
        st.base_vc, st.base_size = dict(st.vc), size
        st.since.clear()

    def _fetch(self, namespace: str, keys: list[str]) -> list[dict[str, Any]]:
        """The entries of ``keys`` in replay order. A missing one (a head whose entries a concurrent forget
        removed) is skipped with a warning: the raw store, not the journal, decides what is stored. A
        malformed one is kept as a stub that fails only if replayed (a rebuild that saw it supersedes it)."""
        got = self.backend.entries(namespace, keys)
        out = []
        for key in keys:
            e = got.get(key)
            if e is None:
                logger.warning("graph journal of namespace %r: entry %s is missing (a concurrent forget?): skipped",
                               namespace, key)
                continue
            if (not isinstance(e, dict) or not isinstance(e.get("ops"), list) or not isinstance(e.get("w"), str)
                    or any(isinstance(e.get(f), bool) or not isinstance(e.get(f), int) for f in ("seq", "hlc"))
                    or entry_key(e["w"], e["seq"]) != key):
                writer, _, seq = key.rpartition(".")
                e = {"w": writer, "seq": int(seq), "hlc": -1, "ops": [], "_bad": True}
            e["_size"] = len(json.dumps(e, separators=(",", ":")))
            out.append(e)
        out.sort(key=entry_order)
        return out

    def _replay(
        self, namespace: str, G: nx.MultiDiGraph, e: dict[str, Any], st: JournalState, settings: ApplySettings
    ) -> None:
        """Apply one entry's operations to ``G`` and record it in ``st``."""
        key = entry_key(e["w"], e["seq"])
        if e.get("_bad"):
            raise StoreError(f"graph journal of namespace {namespace!r}: entry {key} is malformed; {REBUILD_HINT}")
        try:
            for op in e["ops"]:
                kind = op.get("op")
                if kind in ("apply", "rebuild"):
                    extractions = validate_extractions([extraction_from_payload(x) for x in op["extractions"]])
                    if kind == "rebuild":
                        G.clear()
                        G.graph["turns"] = {}
                        apply_extractions(G, extractions, settings)
                        consolidate_graph(G, settings)
                    else:
                        apply_extractions(G, extractions, settings)
                    for ex in extractions:
                        st.index.setdefault(ex.turn_id, set()).add(key)
                elif kind == "delete":
                    delete_records(G, set(op["ids"]) & set(G.graph.get("turns", {})), settings)
                elif kind == "consolidate":
                    consolidate_graph(G, settings)
                elif kind == "reconcile":
                    reconcile_graph(G)
                else:
                    raise StoreError(f"graph journal of namespace {namespace!r}: entry {key} has an unknown "
                                     f"operation {kind!r}; {REBUILD_HINT}")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # InvalidInputError too
            raise StoreError(f"graph journal of namespace {namespace!r}: entry {key} is malformed ({exc!r}); "
                             f"{REBUILD_HINT}") from exc
        st.vc[e["w"]] = max(st.vc.get(e["w"], 0), e["seq"])
        st.last = max(st.last, entry_order(e))
        st.hlc = max(st.hlc, e["hlc"])
        st.since[key] = e.get("_size", 0)

    def _scrub(self, namespace: str, st: JournalState, ids: set[str], keep: str | None = None) -> None:
        """Remove the extractions of deleted turns ``ids`` from the journal entries holding them (so their
        text leaves the store); replaying a scrubbed entry and then the delete gives the same graph."""
        by_key: dict[str, set[str]] = {}
        for t in ids:
            for key in st.index.pop(t, ()):
                if key != keep:
                    by_key.setdefault(key, set()).add(t)
        if not by_key:
            return
        got = self.backend.entries(namespace, sorted(by_key))
        for key, e in got.items():
            if not isinstance(e, dict) or not isinstance(e.get("ops"), list):
                continue
            changed = False
            for op in e["ops"]:
                if isinstance(op, dict) and isinstance(op.get("extractions"), list):
                    kept = [x for x in op["extractions"] if not (isinstance(x, dict) and x.get("turn_id") in by_key[key])]
                    changed |= len(kept) != len(op["extractions"])
                    op["extractions"] = kept
            if changed:
                self.backend.rewrite_entry(namespace, key, e)


class JournalCosts:
    """Per namespace of graph files, the seconds a restart would spend on its journal, so that a commit folds a
    journal slower to replay than a snapshot into a new snapshot (``GraphMemory(journal_seconds=...)``).

    It adds up what the operations pending in memory took to apply (a replay costs as much: entity resolution
    makes an entry of a large graph slow), what replaying the journal on disk took or will take, and keeps what
    writing the snapshot costs (the last write measured, else twice the last read). :meth:`fold` says whether
    the next commit should write a snapshot: the journal with what is pending would take longer to replay than
    both the snapshot and ``limit`` seconds.

    Args:
        limit: Seconds of replay always allowed; ``None`` never folds by time.

    Raises:
        InvalidInputError: If ``limit`` is negative or not a number.

    Example:
        >>> costs = JournalCosts(1.0)
        >>> costs.applied("alice", 0.4); costs.fold("alice")
        False
        >>> costs.appended("alice"); costs.applied("alice", 0.7); costs.fold("alice")
        True
    """

    def __init__(self, limit: float | None) -> None:
        if limit is not None and not limit >= 0:
            raise InvalidInputError(f"journal_seconds={limit!r} is invalid: pass 0 or more seconds, or None")
        self.limit = limit
        self._pending: dict[str, float] = {}
        self._journal: dict[str, float] = {}
        self._snapshot: dict[str, float] = {}

    def applied(self, namespace: str, seconds: float) -> None:
        """An operation pending in memory took ``seconds`` to apply."""
        self._pending[namespace] = self._pending.get(namespace, 0.0) + seconds

    def dropped(self, namespace: str) -> None:
        """The pending operations are gone (reloaded from disk, or written by a backend)."""
        self._pending.pop(namespace, None)

    def read(self, namespace: str, snapshot: float, replay: float) -> None:
        """The graph was loaded: the snapshot read in ``snapshot`` seconds (a write costs about twice that), its
        journal replayed in ``replay``; nothing is pending."""
        self._pending.pop(namespace, None)
        self._snapshot[namespace] = 2 * snapshot
        self._journal[namespace] = replay

    def written(self, namespace: str, seconds: float) -> None:
        """A snapshot was written in ``seconds``: the journal is empty, nothing is pending."""
        self._pending.pop(namespace, None)
        self._snapshot[namespace] = seconds
        self._journal[namespace] = 0.0

    def fold(self, namespace: str) -> bool:
        """Whether the next commit should write a snapshot rather than append to the journal."""
        cost = self._journal.get(namespace, 0.0) + self._pending.get(namespace, 0.0)
        return self.limit is not None and cost > max(self.limit, self._snapshot.get(namespace, 0.0))

    def appended(self, namespace: str) -> None:
        """The pending operations were appended to the journal (its replay costs them too now)."""
        self._journal[namespace] = self._journal.get(namespace, 0.0) + self._pending.pop(namespace, 0.0)

    def forget(self, namespace: str) -> None:
        """Drop what is known of the namespace (forgotten, or released from memory)."""
        for costs in (self._pending, self._journal, self._snapshot):
            costs.pop(namespace, None)


def remove_graph_files(path: Path) -> bool:
    """Delete a namespace's graph files: the journal first (alone it is ignored), the snapshot ``path``, the
    node vectors beside it (:mod:`langmem_cog.graph.vectors`), and the temp files of a save a crash cut short
    (they hold the graph's text too). Returns whether the journal, the snapshot or node vectors existed."""
    existed = False
    for p in (journal_path(path), path):
        if p.exists():
            p.unlink()
            existed = True
    existed = remove_chunks(path) or existed
    if path.parent.exists():
        for tmp in path.parent.glob(f".{path.stem}.*.tmp"):
            tmp.unlink(missing_ok=True)
    return existed


def write_graph_file(path: Path, namespace: str, G: nx.MultiDiGraph, seq: int) -> None:
    """Write a namespace's graph snapshot ``path`` atomically (temp file, fsync, ``os.replace``) with the journal
    sequence number ``seq`` it contains, then delete the journal (a crash in between leaves a journal whose
    entries are all <= ``seq``: a load skips them).

    Raises:
        StoreError: If the file cannot be written.
    """
    with gc_paused():  # the payload is as many objects as the graph
        payload = json.dumps({**graph_payload(namespace, G), "journal_seq": seq}, ensure_ascii=False,
                             separators=(",", ":"))
    try:
        atomic_write_text(path, payload)
        journal_path(path).unlink(missing_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot write the graph of namespace {namespace!r} to {path}: {exc}") from exc
