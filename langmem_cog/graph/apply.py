"""Applying turns' records to a PEC2F graph, and removing them: pure functions over a ``MultiDiGraph``.

:func:`apply_extractions` adds the records of some turns (replacing those of turns applied before),
:func:`delete_records` trims turns from every node's and edge's provenance and drops what no turn
supports any more; both then recompute what depends on the records touched (merged attributes,
timelines, claim statuses, consolidated facts). Node ids are deterministic and merged attributes are a
function of the surviving provenance only, so the same turns always give the same graph. The layout
of the graph is described in :mod:`langmem_cog.graph.store`.

Example:
    >>> from datetime import datetime, timezone
    >>> from langmem_cog.graph.persist import empty_graph
    >>> from langmem_cog.graph.schema import Extraction, ExtractedFact
    >>> ts = datetime(2023, 5, 8, tzinfo=timezone.utc)
    >>> ex = Extraction(turn_id="t1", speaker="Ann", timestamp=ts, facts=[
    ...     ExtractedFact(subject="Ann", predicate="likes", object="green tea", text="Ann likes green tea",
    ...                   source_turn_id="t1")])
    >>> G, settings = empty_graph(), ApplySettings()
    >>> apply_extractions(G, validate_extractions([ex]), settings).nodes_added
    3
    >>> sorted(G.successors("person:ann"))
    ['concept:green tea', 'fact:ann|likes|green tea']
    >>> delete_records(G, {"t1"}, settings).nodes_removed, G.number_of_nodes()
    (3, 0)
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import networkx as nx

from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.consolidate import FactWriter, consolidate, consolidated_fact_id
from langmem_cog.graph.reconcile import (
    ClaimKey,
    claim_group,
    claim_group_key,
    natural_key,
    reconcile_claims,
    reconcile_facts,
)
from langmem_cog.graph.resolve import (
    EntityResolver,
    canonical_concept_id,
    canonical_person_id,
    normalize_name,
    symbol_person_id,
)
from langmem_cog.graph.schema import ClaimStatus, EdgeType, Extraction, NodeType

__all__ = [
    "ApplySettings",
    "ApplyStats",
    "DeleteStats",
    "PREFERENCE_EDGES",
    "normalize_predicate",
    "validate_extractions",
    "apply_extractions",
    "delete_records",
    "consolidate_graph",
    "reconcile_graph",
    "relink_timeline",
]

# The graph memory's own logger: these records are its operations.
logger = logging.getLogger("langmem_cog.graph.store")


# fmt: off
_LIKES = (
    "likes", "like", "loves", "love", "enjoys", "enjoy", "favorite", "favourite", "prefers", "prefer",
    "fan_of", "is_fan_of", "interested_in", "into", "passionate_about",
)
_DISLIKES = (
    "dislikes", "dislike", "hates", "hate", "detests", "detest", "avoids", "avoid", "not_fond_of",
    "does_not_like", "doesnt_like",
)
_USES = (
    "uses", "use", "owns", "own", "has", "have", "plays", "play", "drives", "drive", "rides", "ride",
    "wears", "wear", "has_pet", "owns_pet",
)
# fmt: on

#: Fact predicate (after :func:`normalize_predicate`) -> the Person -> Concept edge it also adds.
#: Other predicates (``is``, ``works_as``, ``lives_in``, ``allergic_to``, ``habit``, ...) only
#: give the Fact node and its ``HAS_ATTR`` edge.
PREFERENCE_EDGES: dict[str, EdgeType] = {
    **dict.fromkeys(_LIKES, EdgeType.LIKES),
    **dict.fromkeys(_DISLIKES, EdgeType.DISLIKES),
    **dict.fromkeys(_USES, EdgeType.USES),
}


_SELF = frozenset({"i", "me", "myself", "my", "mine"})
_P, _E, _C, _CL, _F = (
    t.value for t in (NodeType.PERSON, NodeType.EVENT, NodeType.CONCEPT, NodeType.CLAIM, NodeType.FACT)
)
_PA, _MEN, _NEXT = EdgeType.PARTICIPATED_IN.value, EdgeType.MENTIONS.value, EdgeType.NEXT.value
_PAIR_DERIVED = frozenset({_NEXT, EdgeType.SUPERSEDES.value, EdgeType.CONFLICTS_WITH.value})


def normalize_predicate(predicate: str) -> str:
    """Case-fold a predicate and join its words with ``_``.

    Example:
        >>> normalize_predicate("Works as")
        'works_as'
    """
    return "_".join(normalize_name(predicate.replace("_", " ")).split())


@dataclass
class ApplyStats:
    """What :func:`apply_extractions` (:meth:`~langmem_cog.graph.store.GraphMemory.apply`) did.

    Attributes:
        turns: Extractions applied.
        replaced: Turns already in the graph whose old records were replaced.
        nodes_added: New nodes.
        edges_added: New extracted edges (derived ``NEXT`` / claim / consolidation edges not counted).
        claims: Statuses of the claims in the groups recomputed (see :func:`reconcile_claims`).
        facts_updated: Consolidated facts re-derived because new events touched them.
    """

    turns: int = 0
    replaced: int = 0
    nodes_added: int = 0
    edges_added: int = 0
    claims: dict[str, int] = field(default_factory=lambda: {s.value: 0 for s in ClaimStatus})
    facts_updated: list[str] = field(default_factory=list)


@dataclass
class DeleteStats:
    """What :func:`delete_records` (:meth:`~langmem_cog.graph.store.GraphMemory.delete_turns`) did.

    Attributes:
        turns_removed: Turn ids that were in the graph and are gone.
        unknown: Turn ids that were not in the graph (ignored).
        nodes_removed: Nodes no turn supports any more.
        nodes_updated: Surviving nodes whose provenance was trimmed.
        edges_removed: Net decrease of the edge count (edges of removed nodes included; timelines
            relinked around removed events add a few back).
        claims: Statuses of the claims in the groups recomputed.
        facts_rederived: Consolidated facts updated after losing supporting events.
    """

    turns_removed: int = 0
    unknown: int = 0
    nodes_removed: int = 0
    nodes_updated: int = 0
    edges_removed: int = 0
    claims: dict[str, int] = field(default_factory=lambda: {s.value: 0 for s in ClaimStatus})
    facts_rederived: list[str] = field(default_factory=list)


@dataclass
class _Batch:
    """What one :func:`apply_extractions` touched, to recompute once at its end."""

    stats: ApplyStats
    resolver: EntityResolver
    dirty_nodes: set[str] = field(default_factory=set)
    dirty_edges: set[tuple[str, str, str]] = field(default_factory=set)
    persons: set[str] = field(default_factory=set)  # whose timelines changed
    claims: set[str] = field(default_factory=set)
    pairs: set[tuple[str, str]] = field(default_factory=set)  # (person, concept) linked by new events


@dataclass(frozen=True)
class ApplySettings:
    """What applying and deleting records needs besides the graph.

    Attributes:
        resolver: Makes the :class:`~langmem_cog.graph.resolve.EntityResolver` of a graph; called once per
            :func:`apply_extractions`, after the records of turns applied again were removed.
        min_events: Consolidation: least events of a (person, concept) pair in one window.
        window_days: Consolidation window in days.
        writer: Consolidation text writer (``None``: the template sentence).

    Example:
        >>> ApplySettings(min_events=2).window_days
        30
    """

    resolver: Callable[[nx.MultiDiGraph], EntityResolver] = EntityResolver
    min_events: int = 3
    window_days: float = 30
    writer: FactWriter | None = None


# ---------------------------------------------------------------------- validation
def _check_time(value: Any, what: str, turn_id: str, required: bool = False) -> None:
    if value is None and not required:
        return
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(
            f"turn {turn_id!r}: {what} must be a timezone-aware datetime, got {value!r}; "
            "give extractor times a tzinfo (e.g. the turn's)"
        )


def validate_extractions(extractions: Sequence[Extraction]) -> list[Extraction]:
    """Check extractions before anything is applied; return them in timestamp order (stable for ties).

    Raises:
        InvalidInputError: If an extraction is malformed: naive times, records of another turn, a turn
            twice, an empty speaker, a polarity or sentiment that is not a number.
    """
    if isinstance(extractions, Extraction):
        extractions = [extractions]
    if not isinstance(extractions, Sequence) or isinstance(extractions, str | bytes):
        raise InvalidInputError(f"apply takes a list of Extraction, got {type(extractions).__name__}")
    seen: set[str] = set()
    for i, ex in enumerate(extractions):
        if not isinstance(ex, Extraction):
            raise InvalidInputError(f"item {i} is a {type(ex).__name__}, not an Extraction")
        if not isinstance(ex.turn_id, str) or not ex.turn_id:
            raise InvalidInputError(f"item {i}: turn_id must be a non-empty string, got {ex.turn_id!r}")
        if ex.turn_id in seen:
            raise InvalidInputError(
                f"turn {ex.turn_id!r} appears twice in one apply call: pass one Extraction per turn"
            )
        seen.add(ex.turn_id)
        _check_time(ex.timestamp, "timestamp", ex.turn_id, required=True)
        if not isinstance(ex.speaker, str) or not ex.speaker.strip():
            raise InvalidInputError(f"turn {ex.turn_id!r}: speaker must be a non-empty string, got {ex.speaker!r}")
        records: list[Any] = [*ex.concepts, *ex.events, *ex.facts, *ex.claims]
        for rec in records:
            if rec.source_turn_id != ex.turn_id:
                raise InvalidInputError(
                    f"turn {ex.turn_id!r}: a {type(rec).__name__} has source_turn_id {rec.source_turn_id!r}; "
                    "an Extraction holds only records of its own turn"
                )
        for ev in ex.events:
            _check_time(ev.start, "event start", ex.turn_id)
            _check_time(ev.end, "event end", ex.turn_id)
        for fact in ex.facts:
            _check_time(fact.valid_from, "fact valid_from", ex.turn_id)
        for cl in ex.claims:
            _check_time(cl.timestamp, "claim timestamp", ex.turn_id)
            if isinstance(cl.polarity, bool) or not isinstance(cl.polarity, int | float) or math.isnan(cl.polarity):
                raise InvalidInputError(f"turn {ex.turn_id!r}: claim polarity must be -1, 0 or 1, got {cl.polarity!r}")
            if not isinstance(cl.sentiment, int | float) or math.isnan(cl.sentiment):
                raise InvalidInputError(f"turn {ex.turn_id!r}: claim sentiment must be a number, got {cl.sentiment!r}")
    # Chronological order; stable, so turns sharing a timestamp keep the caller's order.
    return sorted(extractions, key=lambda e: e.timestamp)


# ---------------------------------------------------------------------- apply
def apply_extractions(G: nx.MultiDiGraph, ordered: list[Extraction], settings: ApplySettings) -> ApplyStats:
    """Add the records of some turns to ``G``, in the order given (see :func:`validate_extractions`).

    A turn already in ``G`` is first deleted, so applying it again replaces its records. Claim groups
    touched are reconciled, timelines of the persons with new events relinked, and consolidated facts
    touched by new events re-derived (new ones are created only by a full consolidation).

    Returns:
        Counts of what changed.
    """
    stats = ApplyStats(turns=len(ordered))
    turns = G.graph.setdefault("turns", {})
    again = [ex.turn_id for ex in ordered if ex.turn_id in turns]
    if again:
        logger.debug("replacing the records of %d turns applied before", len(again))
        delete_records(G, set(again), settings)
        stats.replaced = len(again)
    batch = _Batch(stats=stats, resolver=settings.resolver(G))
    for ex in ordered:
        turns[ex.turn_id] = ex.timestamp
        _apply_one(G, ex, batch)
    for n in batch.dirty_nodes:
        _refresh_node(G, n)
    for u, v, k in batch.dirty_edges:
        _refresh_edge(G, u, v, k)
    for p in sorted(batch.persons):
        relink_timeline(G, p)
    if batch.claims:
        stats.claims = reconcile_claims(G, batch.claims)
    subjects = {G.nodes[n].get("subject") for n in batch.dirty_nodes if n in G and G.nodes[n].get("type") == _F}
    if subjects:
        reconcile_facts(G, {s for s in subjects if s})
    pairs = {pc for pc in batch.pairs if consolidated_fact_id(*pc) in G}
    if pairs:
        stats.facts_updated = consolidate_graph(G, settings, pairs)
    return stats


def _apply_one(G: nx.MultiDiGraph, ex: Extraction, b: _Batch) -> None:
    t = ex.turn_id
    # A speaker whose name has no letters or digits ("🙂") gets a node keyed by its code points:
    # every speaker can be stored, so no namespace becomes unwritable (turns made by
    # make_turn refuse such names, but a store written by an older version may hold them).
    speaker: str = _entity(G, ex.speaker, _P, t, b) or _symbol_speaker(G, ex.speaker, t, b)

    def person(name: str) -> str | None:
        if normalize_name(name) in _SELF:
            return speaker
        return _entity(G, name, _P, t, b)

    for name in ex.persons:
        person(name)
    for concept in ex.concepts:
        _entity(G, concept.name, _C, t, b, kind=concept.kind)
    for i, ev in enumerate(ex.events):
        eid = f"event:{t}#{i}"
        parts = list(dict.fromkeys(p for p in (person(n) for n in ev.participants) if p)) or [speaker]
        concepts: list[str] = list(
            dict.fromkeys(c for c in (_entity(G, n, _C, t, b) for n in ev.concepts) if c)
        )
        _single(
            G,
            eid,
            _E,
            t,
            ex.timestamp,
            b,
            text=ev.text,
            start=ev.start,
            end=ev.end,
            time_text=ev.time_text,
            participants=parts,
            verb=ev.verb,
        )
        for p in parts:
            _edge(G, p, eid, EdgeType.PARTICIPATED_IN, t, b)
            b.persons.add(p)
        for c in concepts:
            _edge(G, eid, c, EdgeType.MENTIONS, t, b)
            b.pairs.update((p, c) for p in parts)
    for fact in ex.facts:
        _fact(G, ex, fact, person, b)
    for i, cl in enumerate(ex.claims):
        src = person(cl.source)
        if src is None:
            logger.warning("turn %r: skipping a claim whose source %r has no letters", t, cl.source)
            continue
        target: str | None
        if normalize_name(cl.target) in _SELF:
            target = speaker
        elif b.resolver.resolve(cl.target, _P) is not None:
            target = _entity(G, cl.target, _P, t, b)
        else:
            target = _entity(G, cl.target, _C, t, b)
        if target is None:
            logger.warning("turn %r: skipping a claim whose target %r has no letters", t, cl.target)
            continue
        cid = f"claim:{t}#{i}"
        polarity = int(cl.polarity > 0) - int(cl.polarity < 0)
        _single(
            G,
            cid,
            _CL,
            t,
            ex.timestamp,
            b,
            text=cl.content,
            content=cl.content,
            source=src,
            target=target,
            predicate=normalize_predicate(cl.predicate) or "opinion",
            polarity=polarity,
            sentiment=max(-1.0, min(1.0, float(cl.sentiment))),
            status=ClaimStatus.CURRENT.value,
            timestamp=cl.timestamp or ex.timestamp,
        )
        _edge(G, src, cid, EdgeType.CLAIMS, t, b)
        _edge(G, cid, target, EdgeType.ABOUT, t, b)
        b.claims.add(cid)


def _fact(G: nx.MultiDiGraph, ex: Extraction, fact: Any, person: Any, b: _Batch) -> None:
    t = ex.turn_id
    subj = person(fact.subject)
    pred = normalize_predicate(fact.predicate)
    edge = PREFERENCE_EDGES.get(pred)
    concept = _entity(G, fact.object, _C, t, b) if edge is not None else None
    obj = concept.split(":", 1)[1] if concept else normalize_name(fact.object)
    if subj is None or not pred or not obj:
        logger.warning("turn %r: skipping fact %r with an empty subject, predicate or object", t, fact.text)
        return
    fid = f"fact:{subj.split(':', 1)[1]}|{pred}|{obj}"
    if fid not in G:
        G.add_node(
            fid,
            type=_F,
            subject=subj,
            predicate=pred,
            object=fact.object,
            text=fact.text,
            valid_from=None,
            valid_to=None,
            consolidated=False,
            support=0,
            aliases=set(),
            provenance=set(),
            variants={},
        )
        b.stats.nodes_added += 1
    data = G.nodes[fid]
    data["provenance"].add(t)
    variants = data["variants"]
    variants.setdefault("text", {}).setdefault(fact.text, set()).add(t)
    variants.setdefault("object", {}).setdefault(fact.object, set()).add(t)
    if fact.valid_from is not None:
        variants.setdefault("valid_from", {}).setdefault(fact.valid_from.isoformat(), set()).add(t)
    b.dirty_nodes.add(fid)
    _edge(G, subj, fid, EdgeType.HAS_ATTR, t, b)
    if concept is not None and edge is not None:
        _edge(G, subj, concept, edge, t, b)
        _edge(G, fid, concept, EdgeType.MENTIONS, t, b)


def _entity(
    G: nx.MultiDiGraph, name: str, node_type: str, t: str, b: _Batch, kind: str | None = None
) -> str | None:
    """Resolve or create a Person / Concept node and record that turn ``t`` names it."""
    if not isinstance(name, str) or not normalize_name(name):
        logger.debug("turn %r: ignoring %s name %r without letters or digits", t, node_type, name)
        return None
    surface = " ".join(name.split())
    nid = b.resolver.resolve(surface, node_type)
    if nid is None:
        nid = canonical_person_id(surface) if node_type == _P else canonical_concept_id(surface)
    if nid not in G:
        G.add_node(nid, type=node_type, name=surface, aliases=set(), provenance=set(), variants={})
        if node_type == _C:
            G.nodes[nid]["kind"] = "thing"
        b.stats.nodes_added += 1
    data = G.nodes[nid]
    data["provenance"].add(t)
    data["variants"].setdefault("name", {}).setdefault(surface, set()).add(t)
    if kind:
        data["variants"].setdefault("kind", {}).setdefault(kind, set()).add(t)
    b.dirty_nodes.add(nid)
    b.resolver.register(nid, surface)
    return nid


def _symbol_speaker(G: nx.MultiDiGraph, name: str, t: str, b: _Batch) -> str:
    """The Person node of a speaker without letters or digits (:func:`symbol_person_id`)."""
    surface = " ".join(name.split())
    nid = symbol_person_id(surface)
    if nid not in G:
        G.add_node(nid, type=_P, name=surface, aliases=set(), provenance=set(), variants={})
        b.stats.nodes_added += 1
    data = G.nodes[nid]
    data["provenance"].add(t)
    data["variants"].setdefault("name", {}).setdefault(surface, set()).add(t)
    b.dirty_nodes.add(nid)
    return nid


def _single(
    G: nx.MultiDiGraph, nid: str, node_type: str, t: str, ts: datetime, b: _Batch, **attrs: Any
) -> None:
    """Add a node that only one turn can produce (events, claims)."""
    G.add_node(nid, type=node_type, aliases=set(), provenance={t}, first_seen=ts, last_seen=ts, **attrs)
    b.stats.nodes_added += 1


def _edge(G: nx.MultiDiGraph, u: str, v: str, kind: EdgeType, t: str, b: _Batch) -> None:
    key = kind.value
    if G.has_edge(u, v, key=key):
        G.edges[u, v, key]["provenance"].add(t)
    else:
        G.add_edge(u, v, key=key, type=key, provenance={t}, timestamp=None)
        b.stats.edges_added += 1
    b.dirty_edges.add((u, v, key))


# ---------------------------------------------------------------------- delete
def delete_records(G: nx.MultiDiGraph, ids: set[str], settings: ApplySettings) -> DeleteStats:
    """Remove turns ``ids`` (all in ``G``) from every node's and edge's provenance and merged attributes.

    Nodes and edges left without provenance are deleted; then the claim groups touched are reconciled,
    the timelines of the persons who lost events relinked, and consolidated facts that lost supporting
    events re-derived (updated while their pair still qualifies, removed otherwise).

    Returns:
        Counts of what changed (``unknown`` is left to the caller).
    """
    stats = DeleteStats(turns_removed=len(ids))
    if not ids:
        return stats
    edges_before = G.number_of_edges()
    persons: set[str] = set()
    claim_keys: set[ClaimKey] = set()
    fact_pairs: set[tuple[str, str]] = set()
    fact_subjects: set[str] = set()
    trimmed: list[str] = []
    for n, data in G.nodes(data=True):
        prov = data.get("provenance")
        if not prov or prov.isdisjoint(ids):
            continue
        prov -= ids
        trimmed.append(n)
        for vals in (data.get("variants") or {}).values():
            for value in list(vals):
                vals[value] -= ids
                if not vals[value]:
                    del vals[value]
        kind = data.get("type")
        if kind == _E:
            persons.update(data.get("participants", ()))
            persons.update(u for u, _, k in G.in_edges(n, keys=True) if k == _PA)
        elif kind == _CL:
            claim_keys.add(claim_group_key(G, n))
        elif kind == _F and data.get("consolidated"):
            fact_pairs.update((data["subject"], c) for _, c, k in G.out_edges(n, keys=True) if k == _MEN)
        elif kind == _F and data.get("subject"):
            fact_subjects.add(data["subject"])
    dead_edges: list[tuple[str, str, str]] = []
    live_edges: list[tuple[str, str, str]] = []
    for u, v, k, data in G.edges(keys=True, data=True):
        prov = data.get("provenance")
        if prov and not prov.isdisjoint(ids):
            prov -= ids
            (live_edges if prov else dead_edges).append((u, v, k))
    G.remove_edges_from(dead_edges)
    dead_nodes = [n for n in trimmed if not G.nodes[n]["provenance"]]
    G.remove_nodes_from(dead_nodes)
    turns = G.graph.setdefault("turns", {})
    for t in ids:
        turns.pop(t, None)
    for n in trimmed:
        if n in G:
            _refresh_node(G, n)
    for u, v, k in live_edges:
        if G.has_edge(u, v, key=k):
            _refresh_edge(G, u, v, k)
    for p in sorted(persons):
        if p in G:
            relink_timeline(G, p)
    members = [c for key in claim_keys for c in claim_group(G, key, scan=False)]
    if members:
        stats.claims = reconcile_claims(G, members)
    if fact_subjects:
        reconcile_facts(G, fact_subjects)
    if fact_pairs:
        stats.facts_rederived = consolidate_graph(G, settings, fact_pairs)
    stats.nodes_removed = len(dead_nodes)
    stats.nodes_updated = len(trimmed) - len(dead_nodes)
    stats.edges_removed = max(0, edges_before - G.number_of_edges())
    logger.debug(
        "deleted %d turns: %d nodes removed, %d trimmed", len(ids), stats.nodes_removed, stats.nodes_updated
    )
    return stats


def consolidate_graph(
    G: nx.MultiDiGraph, settings: ApplySettings, pairs: Iterable[tuple[str, str]] | None = None
) -> list[str]:
    """:func:`~langmem_cog.graph.consolidate.consolidate` with the settings' window, threshold and writer."""
    return consolidate(G, min_events=settings.min_events, window_days=settings.window_days,
                       writer=settings.writer, pairs=pairs)


def reconcile_graph(G: nx.MultiDiGraph) -> dict[str, int]:
    """Recompute the status of every claim group and then of every state fact of ``G``, in place (what
    :meth:`~langmem_cog.graph.store.GraphMemory.reconcile` does and a journal's ``reconcile`` entry
    replays). Returns the claims' counts by status (:func:`~langmem_cog.graph.reconcile.reconcile_claims`)."""
    counts = reconcile_claims(G)
    reconcile_facts(G)
    return counts


# ---------------------------------------------------------------------- derived attributes
_NEVER = datetime.max.replace(tzinfo=UTC)


def _first_turn_key(turn_ids: set[str], times: dict[str, datetime]) -> tuple[Any, ...]:
    """``min(_turn_key(times, t) for t in turn_ids)``, computing ``natural_key`` for the earliest turns only."""
    first = min((times.get(t, _NEVER) for t in turn_ids), default=_NEVER)
    return (first, min(natural_key(t) for t in turn_ids if times.get(t, _NEVER) == first))


def _earliest(values: dict[str, set[str]], times: dict[str, datetime]) -> str:
    return min(values, key=lambda v: (_first_turn_key(values[v], times), v))


def _refresh_node(G: nx.MultiDiGraph, n: str) -> None:
    """Recompute merged attributes of a node from its surviving provenance."""
    data = G.nodes[n]
    times = G.graph.get("turns") or {}
    known = [times[t] for t in data.get("provenance", ()) if t in times]
    if known:
        data["first_seen"], data["last_seen"] = min(known), max(known)
    variants = data.get("variants")
    if variants is None:
        return
    for fld in [f for f, vals in variants.items() if not vals]:
        del variants[fld]
    names = variants.get("name")
    if names:
        data["name"] = _earliest(names, times)
        data["aliases"] = set(names) - {data["name"]}
    if data.get("type") == _C:
        data["kind"] = _earliest(variants["kind"], times) if variants.get("kind") else "thing"
    if data.get("type") == _F and not data.get("consolidated"):
        for fld in ("text", "object"):
            if variants.get(fld):
                data[fld] = _earliest(variants[fld], times)
        vf = variants.get("valid_from")
        data["valid_from"] = min(datetime.fromisoformat(v) for v in vf) if vf else None
        data["support"] = len(data["provenance"])


def _refresh_edge(G: nx.MultiDiGraph, u: str, v: str, k: str) -> None:
    """An edge's ``timestamp``: when its evidence first existed (its earliest turn; the latest
    one for relations derived from two records: ``NEXT``, ``SUPERSEDES``, ``CONFLICTS_WITH``)."""
    data = G.edges[u, v, k]
    times = G.graph.get("turns") or {}
    known = [times[t] for t in data.get("provenance", ()) if t in times]
    if known:
        data["timestamp"] = max(known) if k in _PAIR_DERIVED else min(known)


def _event_key(G: nx.MultiDiGraph, e: str) -> tuple[Any, ...]:
    d = G.nodes[e]
    return (d.get("start") or d["first_seen"], d["first_seen"], natural_key(e))


def relink_timeline(G: nx.MultiDiGraph, person: str) -> None:
    """Make the ``NEXT`` edges tagged with ``person`` chain its events in time order.

    ``NEXT`` edges are shared by persons with consecutive events in common; each edge's
    ``persons`` set says whose timelines use it, and an edge no timeline uses is removed.
    Only the differences are written.
    """
    events = sorted(
        {v for _, v, k in G.out_edges(person, keys=True) if k == _PA and G.nodes[v].get("type") == _E},
        key=lambda e: _event_key(G, e),
    )
    desired = set(zip(events, events[1:], strict=False))
    current = {
        (u, v)
        for u in events
        for _, v, k, d in G.out_edges(u, keys=True, data=True)
        if k == _NEXT and person in d.get("persons", ())
    }
    for u, v in current - desired:
        d = G.edges[u, v, _NEXT]
        d["persons"].discard(person)
        if not d["persons"]:
            G.remove_edge(u, v, key=_NEXT)
    for u, v in desired:
        prov = set(G.nodes[u]["provenance"]) | set(G.nodes[v]["provenance"])
        if G.has_edge(u, v, key=_NEXT):
            d = G.edges[u, v, _NEXT]
            d["persons"].add(person)
            d["provenance"] = prov
        else:
            G.add_edge(u, v, key=_NEXT, type=_NEXT, persons={person}, provenance=prov, timestamp=None)
        _refresh_edge(G, u, v, _NEXT)
