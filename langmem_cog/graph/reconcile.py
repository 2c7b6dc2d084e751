"""Claim reconciliation: which opinions are current, superseded or in conflict.

Claims are grouped by ``(source, target, predicate)``: the Person holding the
opinion, the node it is about and the kind of opinion. Claims of different
sources are never in the same group. Within a group, claims are ordered by
``timestamp`` (ties: natural order of the claim id, so ``D1:2`` before ``D1:10``).

The rule ("the newest day wins"):

* The **current bucket** is every claim of the group said on the same calendar day
  as the newest one (the day in the newest claim's time zone).
* If the current bucket holds both a positive (+1) and a negative (-1) claim, its
  non-neutral claims are ``CONFLICTING``, with a ``CONFLICTS_WITH`` edge both ways
  between every positive/negative pair. Otherwise (and for neutral claims, which
  never conflict) its claims are ``CURRENT``.
* Every older claim is ``SUPERSEDED``, also when it agrees with the current opinion
  (the newest restatement replaces it). Each older claim gets one ``SUPERSEDES``
  edge from the claim right after it in the group's order, so the history is a chain
  newest -> oldest. The edge's ``changed`` attribute is ``True`` when the polarity
  changed ("changed their mind"), ``False`` for a restatement.

A change of mind also retires the holder's other kind of stance on the same target that it
contradicts: the stance predicates (:data:`STANCE_PREDICATES`: ``preference`` and ``opinion``) of
one source and target are weighed together, and every CURRENT non-neutral stance claim said on an
earlier day than a CURRENT stance claim of the other predicate with the opposite polarity becomes
``SUPERSEDED``, with a ``SUPERSEDES`` edge (``changed=True``) from the newest such claim.
So "I hate running. It's boring." (a ``preference`` and an ``opinion``) followed months later by
"I love running now!" leaves both January claims SUPERSEDED, while an older claim that agrees
with the new one stays as its group left it.

Originals are never removed: only ``status`` and the ``SUPERSEDES`` /
``CONFLICTS_WITH`` edges among the group's claims are rewritten. A group is always
recomputed from scratch, so the result depends only on the claims present, not on
the order they arrived in, and reconciling twice changes nothing.

Derived edges get ``provenance`` = the union of both claims' provenance and
``timestamp`` = when the relation arose: the time of the latest turn of that
provenance (from the graph's ``turns`` map when present, else the newer claim's
timestamp).

Example:
    >>> import networkx as nx
    >>> from datetime import datetime, timezone
    >>> G = nx.MultiDiGraph()
    >>> for cid, day, pol in [("claim:a#0", 1, 1), ("claim:b#0", 9, -1)]:
    ...     G.add_node(cid, type="Claim", source="person:maya", target="concept:running",
    ...                predicate="opinion", polarity=pol, provenance={cid[6]},
    ...                timestamp=datetime(2023, 5, day, tzinfo=timezone.utc), status="CURRENT")
    >>> reconcile_claims(G)
    {'CURRENT': 1, 'SUPERSEDED': 1, 'CONFLICTING': 0}
    >>> G.nodes["claim:a#0"]["status"], G.has_edge("claim:b#0", "claim:a#0", key="SUPERSEDES")
    ('SUPERSEDED', True)
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any

import networkx as nx

from langmem_cog.graph.schema import ClaimStatus, EdgeType, NodeType

__all__ = ["reconcile_claims", "reconcile_facts", "fact_slot", "derived_state", "claim_group_key", "claim_group",
           "natural_key", "ClaimKey", "STANCE_PREDICATES", "FUNCTIONAL_PREDICATES",
           "STATE_PREDICATES", "state_predicate"]

logger = logging.getLogger(__name__)

#: ``(source node id, target node id, predicate)``.
ClaimKey = tuple[str, str, str]

#: Predicates that state where the holder stands on the target (a later one of either can retire the other).
STANCE_PREDICATES = frozenset({"preference", "opinion"})

_DERIVED = (EdgeType.SUPERSEDES.value, EdgeType.CONFLICTS_WITH.value)
_NUM = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key that orders digit runs by value: ``"D1:2"`` before ``"D1:10"``.

    Example:
        >>> sorted(["D1:10", "D1:2", "D2:1"], key=natural_key)
        ['D1:2', 'D1:10', 'D2:1']
    """
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in _NUM.split(text) if p)


def claim_group_key(G: nx.MultiDiGraph, node: str) -> ClaimKey:
    """The group of a Claim node: ``(source, target, predicate)``.

    Example:
        >>> G = nx.MultiDiGraph()
        >>> G.add_node("claim:t1#0", type="Claim", source="person:a", target="concept:x", predicate="opinion")
        >>> claim_group_key(G, "claim:t1#0")
        ('person:a', 'concept:x', 'opinion')
    """
    data = G.nodes[node]
    return (data["source"], data["target"], data["predicate"])


def claim_group(G: nx.MultiDiGraph, key: ClaimKey, *, scan: bool = True) -> list[str]:
    """The Claim nodes of a group, oldest first.

    Follows the source's ``CLAIMS`` edges; when that finds nothing and ``scan`` is
    true, scans every node (for hand-built graphs without ``CLAIMS`` edges).
    """
    source = key[0]
    members: set[str] = set()
    if source in G:
        cands = (v for _, v, k in G.out_edges(source, keys=True) if k == EdgeType.CLAIMS.value)
        members = {c for c in cands if _is_claim(G, c) and claim_group_key(G, c) == key}
    if not members and scan:
        members = {n for n in G.nodes if _is_claim(G, n) and claim_group_key(G, n) == key}
    return sorted(members, key=lambda c: _order(G, c))


def _claim_groups(G: nx.MultiDiGraph, keys: set[ClaimKey]) -> dict[ClaimKey, list[str]]:
    """:func:`claim_group` of many keys, walking each source's ``CLAIMS`` edges once (not once per key)."""
    found: dict[ClaimKey, set[str]] = {k: set() for k in keys}
    for source in {k[0] for k in keys}:
        if source not in G:
            continue
        for _, c, k in G.out_edges(source, keys=True):
            if k == EdgeType.CLAIMS.value and _is_claim(G, c):
                key = claim_group_key(G, c)
                if key in found:
                    found[key].add(c)
    return {k: sorted(m, key=lambda c: _order(G, c)) if m else claim_group(G, k) for k, m in found.items()}


def _is_claim(G: nx.MultiDiGraph, node: str) -> bool:
    return G.nodes[node].get("type") == NodeType.CLAIM.value


def _order(G: nx.MultiDiGraph, node: str) -> tuple[Any, ...]:
    return (G.nodes[node]["timestamp"], natural_key(node))


def _latest_time(G: nx.MultiDiGraph, provenance: set[str], default: datetime | None) -> datetime | None:
    times = G.graph.get("turns") or {}
    found = [times[t] for t in provenance if t in times]
    return max(found) if found else default


def _set_edge(G: nx.MultiDiGraph, u: str, v: str, kind: EdgeType, *, default: datetime | None = None,
              **attrs: Any) -> None:
    """A derived edge ``u -> v``: both nodes' provenance, timestamped by its latest turn (``default``,
    else the later of the nodes' ``timestamp``, when the graph's ``turns`` map has none of them)."""
    prov = set(G.nodes[u].get("provenance", ())) | set(G.nodes[v].get("provenance", ()))
    if default is None:
        default = max(G.nodes[u]["timestamp"], G.nodes[v]["timestamp"])
    G.add_edge(
        u, v, key=kind.value, type=kind.value, provenance=prov, timestamp=_latest_time(G, prov, default), **attrs
    )


def _newest_day_split(members: list[str], when: Callable[[str], datetime]) -> int:
    """How many of ``members`` (oldest first) were said before the newest one's calendar day (in the
    newest one's time zone): ``members[:split]`` are older, ``members[split:]`` are of that day."""
    newest = when(members[-1])
    day, tz = newest.date(), newest.tzinfo

    def same_day(ts: datetime) -> bool:
        return (ts.astimezone(tz) if tz is not None and ts.tzinfo is not None else ts).date() == day

    split = len(members)
    while split > 0 and same_day(when(members[split - 1])):
        split -= 1
    return split


def _reconcile_group(G: nx.MultiDiGraph, members: list[str], counts: dict[str, int]) -> None:
    member_set = set(members)
    for u in members:
        stale = [(u, v, k) for _, v, k in G.out_edges(u, keys=True) if k in _DERIVED and v in member_set]
        G.remove_edges_from(stale)
    split = _newest_day_split(members, lambda c: G.nodes[c]["timestamp"])
    older, bucket = members[:split], members[split:]
    pos = [c for c in bucket if G.nodes[c]["polarity"] > 0]
    neg = [c for c in bucket if G.nodes[c]["polarity"] < 0]
    conflict = bool(pos and neg)
    for c in bucket:
        status = ClaimStatus.CONFLICTING if conflict and G.nodes[c]["polarity"] != 0 else ClaimStatus.CURRENT
        G.nodes[c]["status"] = status.value
        counts[status.value] += 1
    if conflict:
        for a in pos:
            for b in neg:
                _set_edge(G, a, b, EdgeType.CONFLICTS_WITH)
                _set_edge(G, b, a, EdgeType.CONFLICTS_WITH)
    for i, c in enumerate(older):
        G.nodes[c]["status"] = ClaimStatus.SUPERSEDED.value
        counts[ClaimStatus.SUPERSEDED.value] += 1
        nxt = members[i + 1]
        _set_edge(G, nxt, c, EdgeType.SUPERSEDES, changed=G.nodes[nxt]["polarity"] != G.nodes[c]["polarity"])


def _retire_contradicted(G: nx.MultiDiGraph, groups: list[list[str]], counts: dict[str, int]) -> None:
    """The cross-group rule (see the module docs) over the groups of one ``(source, target)``."""
    current = [c for members in groups for c in members
               if G.nodes[c]["status"] == ClaimStatus.CURRENT.value and G.nodes[c]["polarity"] != 0
               and G.nodes[c]["predicate"] in STANCE_PREDICATES]
    for c in current:
        ts, pol = G.nodes[c]["timestamp"], G.nodes[c]["polarity"]
        newer = [d for d in current if G.nodes[d]["polarity"] == -pol and G.nodes[d]["timestamp"] > ts
                 and claim_group_key(G, d) != claim_group_key(G, c)
                 and G.nodes[d]["timestamp"].date() != ts.date()]
        if not newer:
            continue
        by = max(newer, key=lambda d: _order(G, d))
        G.nodes[c]["status"] = ClaimStatus.SUPERSEDED.value
        counts[ClaimStatus.CURRENT.value] -= 1
        counts[ClaimStatus.SUPERSEDED.value] += 1
        _set_edge(G, by, c, EdgeType.SUPERSEDES, changed=True)


def _pair_groups(G: nx.MultiDiGraph, keys: set[ClaimKey]) -> set[ClaimKey]:
    """``keys`` and every other group of the same source and target."""
    pairs = {(k[0], k[1]) for k in keys if k[2] in STANCE_PREDICATES}
    out = set(keys)
    for source in {p[0] for p in pairs}:
        if source not in G:
            continue
        for _, c, k in G.out_edges(source, keys=True):
            if (k == EdgeType.CLAIMS.value and _is_claim(G, c) and G.nodes[c]["predicate"] in STANCE_PREDICATES
                    and (source, G.nodes[c]["target"]) in pairs):
                out.add(claim_group_key(G, c))
    return out


#: The states a person holds one value of at a time, by the Fact predicate that states them (a new home
#: retires the old one): what the rule extractor reads and what ``LLMExtractor``'s prompt asks for.
STATE_PREDICATES: Mapping[str, str] = MappingProxyType({
    "lives_in": "residence", "works_at": "employer", "works_as": "role", "studies": "school", "drives": "vehicle",
    "diet": "diet", "relationship": "relationship",
})
#: Fact predicates a subject holds one value of at a time (the keys of :data:`STATE_PREDICATES`).
FUNCTIONAL_PREDICATES = frozenset(STATE_PREDICATES)
# Other names a chat model gives those predicates (snake_case).
_STATE_ALIASES = {
    "lives_at": "lives_in", "resides_in": "lives_in", "residence": "lives_in", "home": "lives_in", "moved_to": "lives_in",
    "lives": "lives_in", "employer": "works_at", "employed_at": "works_at", "employed_by": "works_at",
    "works_for": "works_at", "job": "works_as", "role": "works_as", "occupation": "works_as", "profession": "works_as",
    "studies_at": "studies", "studies_in": "studies", "study": "studies", "school": "studies", "attends": "studies",
    "enrolled_in": "studies", "enrolled_at": "studies", "education": "studies", "drive": "drives", "vehicle": "drives",
    "car": "drives", "owns_car": "drives", "eats": "diet", "diet_is": "diet", "follows_diet": "diet",
    "relationship_status": "relationship", "dating": "relationship", "partner": "relationship",
    "in_relationship_with": "relationship", "married_to": "relationship", "engaged_to": "relationship",
}


def state_predicate(predicate: str) -> str:
    """The state predicate (:data:`STATE_PREDICATES`) a chat model's fact predicate names, else the predicate.

    Example:
        >>> state_predicate("resides_in"), state_predicate("vehicle"), state_predicate("allergic_to")
        ('lives_in', 'drives', 'allergic_to')
    """
    return _STATE_ALIASES.get(predicate, predicate)


#: Fact predicates that are a stance on their object (liking it retires disliking it, and back).
_STANCE_FACTS = frozenset({"likes", "dislikes"})


def fact_slot(data: dict[str, Any]) -> tuple[str, str] | None:
    """The state a Fact node is a value of, ``(subject, slot)``, or ``None`` for a fact that is no state.

    A functional predicate (:data:`FUNCTIONAL_PREDICATES`) is its own slot; ``likes`` / ``dislikes`` of
    one object share the slot ``stance:<object>``. Consolidated facts (repeated events) are no state.

    Example:
        >>> fact_slot({"subject": "person:tom", "predicate": "lives_in", "object": "Leeds"})
        ('person:tom', 'lives_in')
        >>> fact_slot({"subject": "person:tom", "predicate": "dislikes", "object": "running"})
        ('person:tom', 'stance:running')
        >>> fact_slot({"subject": "person:tom", "predicate": "has", "object": "a dog"}) is None
        True
    """
    subject, predicate = data.get("subject"), data.get("predicate")
    if not subject or data.get("consolidated"):
        return None
    if predicate in FUNCTIONAL_PREDICATES:
        return (str(subject), str(predicate))
    if predicate in _STANCE_FACTS:
        return (str(subject), f"stance:{data.get('object')}")
    return None


def _fact_time(G: nx.MultiDiGraph, node: str) -> datetime | None:
    data = G.nodes[node]
    return _latest_time(G, set(data.get("provenance", ())), data.get("last_seen"))


_VALUE_SKIP = frozenset({"a", "an", "the", "my", "our", "his", "her", "their", "new", "old", "little", "with"})


def _value(G: nx.MultiDiGraph, node: str) -> tuple[str, frozenset[str]]:
    """A state fact's predicate and the words of its object (less determiners and words of age)."""
    d = G.nodes[node]
    words = re.findall(r"[\w'-]+", str(d.get("object") or "").casefold())
    return str(d.get("predicate")), frozenset(w for w in words if w not in _VALUE_SKIP)


def _same_value(a: tuple[str, frozenset[str]], b: tuple[str, frozenset[str]]) -> bool:
    """Whether two state facts give the same value: one predicate, and the words of one object hold the
    other's ("green subaru" and "green subaru forester"; "york" and "a terrace in york")."""
    return a[0] == b[0] and bool(a[1]) and bool(b[1]) and (a[1] <= b[1] or b[1] <= a[1])


def reconcile_facts(G: nx.MultiDiGraph, subjects: Iterable[str] | None = None) -> dict[str, int]:
    """Recompute the status of state facts (:func:`fact_slot`) and their ``SUPERSEDES`` edges, in place.

    The facts of one subject and slot are ordered by the time of their latest source turn: those said
    on the newest one's calendar day are ``CURRENT``, every older one ``SUPERSEDED``, with a
    ``SUPERSEDES`` edge (``changed=True``) from the fact right after it. "I live in Leeds" (March),
    then "I live in York now" (September): Leeds is SUPERSEDED. The current value said earlier in other
    words right before it ("a little green Subaru Forester" in March, "the green Subaru" in May: the words
    of one hold the other's) is CURRENT from that first telling on, so the turn that told the change stays
    current. Facts that are no state get no status.

    Args:
        G: The graph.
        subjects: Recompute only the slots of these subjects (``None``: every slot).

    Returns:
        How many state facts ended up CURRENT and SUPERSEDED.

    Example:
        >>> from datetime import datetime, timezone
        >>> G = nx.MultiDiGraph(turns={"t1": datetime(2023, 3, 1, tzinfo=timezone.utc),
        ...                            "t2": datetime(2023, 9, 1, tzinfo=timezone.utc)})
        >>> for fid, obj, t in [("fact:a", "Leeds", "t1"), ("fact:b", "York", "t2")]:
        ...     G.add_node(fid, type="Fact", subject="person:tom", predicate="lives_in", object=obj, provenance={t})
        >>> reconcile_facts(G), G.nodes["fact:a"]["status"], G.has_edge("fact:b", "fact:a", key="SUPERSEDES")
        ({'CURRENT': 1, 'SUPERSEDED': 1}, 'SUPERSEDED', True)
    """
    wanted = None if subjects is None else set(subjects)
    groups: dict[tuple[str, str], list[str]] = {}
    for n, d in G.nodes(data=True):
        if d.get("type") != NodeType.FACT.value:
            continue
        slot = fact_slot(d)
        if slot is not None and (wanted is None or slot[0] in wanted):
            groups.setdefault(slot, []).append(n)
    counts = {ClaimStatus.CURRENT.value: 0, ClaimStatus.SUPERSEDED.value: 0}
    for members in groups.values():
        member_set = set(members)
        G.remove_edges_from([(u, v, k) for u in members for _, v, k in G.out_edges(u, keys=True)
                             if k == EdgeType.SUPERSEDES.value and v in member_set])
        found = {m: _fact_time(G, m) for m in members}
        times = {m: t for m, t in found.items() if t is not None}
        if len(times) < len(members):
            continue
        members.sort(key=lambda m: (times[m], natural_key(m)))
        split = _newest_day_split(members, times.__getitem__)
        newest = [_value(G, m) for m in members[split:]]
        while split > 0 and any(_same_value(_value(G, members[split - 1]), v) for v in newest):
            split -= 1  # the current value told before in other words ("a green Subaru Forester", "the green Subaru")
        for i, m in enumerate(members):
            status = ClaimStatus.SUPERSEDED if i < split else ClaimStatus.CURRENT
            G.nodes[m]["status"] = status.value
            counts[status.value] += 1
            if i < split:
                nxt = members[i + 1]
                _set_edge(G, nxt, m, EdgeType.SUPERSEDES, default=times[nxt], changed=True)
    return counts


def derived_state(G: nx.MultiDiGraph) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str, str, str], ...]]:
    """What :func:`reconcile_claims` and :func:`reconcile_facts` write, as a comparable value: every
    claim's and state fact's status and every ``SUPERSEDES`` / ``CONFLICTS_WITH`` edge with its
    attributes (sorted).

    Example:
        >>> derived_state(nx.MultiDiGraph())
        ((), ())
    """
    statuses = tuple(sorted((str(n), str(G.nodes[n].get("status"))) for n in G.nodes
                            if _is_claim(G, n) or (G.nodes[n].get("type") == NodeType.FACT.value
                                                   and "status" in G.nodes[n])))
    edges = tuple(sorted(
        (str(u), str(v), str(k), repr(sorted((a, sorted(x) if isinstance(x, set) else x) for a, x in d.items())))
        for u, v, k, d in G.edges(keys=True, data=True) if k in _DERIVED
    ))
    return statuses, edges


def reconcile_claims(G: nx.MultiDiGraph, nodes: Iterable[str] | None = None) -> dict[str, int]:
    """Recompute claim statuses and ``SUPERSEDES`` / ``CONFLICTS_WITH`` edges, in place.

    Follows the networkx convention for maintenance functions: ``G`` is modified
    in place and a summary is returned. See the module docstring for the rule.

    Args:
        G: A graph whose Claim nodes carry ``source``, ``target``, ``predicate``,
            ``polarity``, ``timestamp`` (aware) and ``provenance``.
        nodes: Claim ids whose groups to recompute (ids that are missing or not claims
            are ignored); ``None`` recomputes every group.

    Returns:
        How many claims of the recomputed groups ended up in each status
        (``{"CURRENT": n, "SUPERSEDED": n, "CONFLICTING": n}``).

    Example:
        >>> reconcile_claims(nx.MultiDiGraph())
        {'CURRENT': 0, 'SUPERSEDED': 0, 'CONFLICTING': 0}
    """
    counts = {s.value: 0 for s in ClaimStatus}
    if nodes is None:
        groups: dict[ClaimKey, list[str]] = {}
        for n in G.nodes:
            if _is_claim(G, n):
                groups.setdefault(claim_group_key(G, n), []).append(n)
        ordered = {k: sorted(v, key=lambda c: _order(G, c)) for k, v in groups.items()}
    else:
        keys = {claim_group_key(G, n) for n in nodes if n in G and _is_claim(G, n)}
        ordered = _claim_groups(G, _pair_groups(G, keys))
    by_pair: dict[tuple[str, str], list[list[str]]] = {}
    for key in sorted(ordered):
        by_pair.setdefault((key[0], key[1]), []).append(ordered[key])
    for pair_groups in by_pair.values():
        members = {c for g in pair_groups for c in g}
        G.remove_edges_from([(u, v, k) for u in members for _, v, k in G.out_edges(u, keys=True)
                             if k in _DERIVED and v in members])
        for group in pair_groups:
            if group:
                _reconcile_group(G, group, counts)
        if len(pair_groups) > 1:
            _retire_contradicted(G, pair_groups, counts)
    logger.debug("reconciled %d claim groups: %s", len(ordered), counts)
    return counts
