"""Claim reconciliation: superseded, conflicting and current opinions."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

import networkx as nx

from langmem_cog.graph.reconcile import claim_group, derived_state, natural_key, reconcile_claims
from langmem_cog.graph.schema import ExtractedClaim, Extraction
from langmem_cog.graph.store import GraphMemory, graphs_equal

NS = "reconcile-test"


def at(day: int, hour: int = 12) -> datetime:
    return datetime(2023, 5, 1, hour, tzinfo=UTC) + timedelta(days=day - 1)


def said(
    turn_id: str, speaker: str, when: datetime, target: str, polarity: int, predicate: str = "opinion"
) -> Extraction:
    c = ExtractedClaim(
        source=speaker,
        target=target,
        predicate=predicate,
        polarity=polarity,
        content=f"{speaker}: {target} {polarity:+d}",
        source_turn_id=turn_id,
        sentiment=0.5 * polarity,
    )
    return Extraction(turn_id=turn_id, speaker=speaker, timestamp=when, claims=[c])


def statuses(G: nx.MultiDiGraph) -> dict[str, str]:
    return {n: d["status"] for n, d in G.nodes(data=True) if d["type"] == "Claim"}


def derived(G: nx.MultiDiGraph) -> set[tuple[str, str, str]]:
    return {(u, v, k) for u, v, k in G.edges(keys=True) if k in ("SUPERSEDES", "CONFLICTS_WITH")}


def build(*extractions: Extraction) -> tuple[GraphMemory, nx.MultiDiGraph]:
    mem = GraphMemory()
    mem.apply(NS, list(extractions))
    return mem, mem.graph(NS)


def test_changed_mind_supersedes_the_old_claim() -> None:
    mem, G = build(said("t1", "Maya", at(1), "running", 1), said("t2", "Maya", at(20), "running", -1))
    assert statuses(G) == {"claim:t1#0": "SUPERSEDED", "claim:t2#0": "CURRENT"}
    assert derived(G) == {("claim:t2#0", "claim:t1#0", "SUPERSEDES")}
    edge = G.edges["claim:t2#0", "claim:t1#0", "SUPERSEDES"]
    assert edge["changed"] is True and edge["provenance"] == {"t1", "t2"} and edge["timestamp"] == at(20)
    assert G.number_of_nodes() == 4  # Maya, running and both claims: the original stays


def test_restatement_supersedes_the_older_agreeing_claim() -> None:
    _, G = build(said("t1", "Maya", at(1), "running", -1), said("t2", "Maya", at(9), "running", -1))
    assert statuses(G) == {"claim:t1#0": "SUPERSEDED", "claim:t2#0": "CURRENT"}
    assert G.edges["claim:t2#0", "claim:t1#0", "SUPERSEDES"]["changed"] is False


def test_history_is_a_chain_newest_to_oldest() -> None:
    _, G = build(*(said(f"t{i}", "Maya", at(i * 3), "running", p) for i, p in enumerate([1, -1, 1], 1)))
    assert derived(G) == {("claim:t3#0", "claim:t2#0", "SUPERSEDES"), ("claim:t2#0", "claim:t1#0", "SUPERSEDES")}
    assert statuses(G)["claim:t3#0"] == "CURRENT"


def test_same_day_opposite_claims_conflict_both_ways() -> None:
    _, G = build(
        said("t0", "Maya", at(1), "running", 1),
        said("t1", "Maya", at(5, hour=9), "running", 1),
        said("t2", "Maya", at(5, hour=18), "running", -1),
        said("t3", "Maya", at(5, hour=19), "running", 0),
    )
    st = statuses(G)
    assert st == {
        "claim:t0#0": "SUPERSEDED",
        "claim:t1#0": "CONFLICTING",
        "claim:t2#0": "CONFLICTING",
        "claim:t3#0": "CURRENT",
    }  # neutral claims never conflict
    assert derived(G) == {
        ("claim:t1#0", "claim:t2#0", "CONFLICTS_WITH"),
        ("claim:t2#0", "claim:t1#0", "CONFLICTS_WITH"),
        ("claim:t1#0", "claim:t0#0", "SUPERSEDES"),
    }


def test_different_speakers_are_never_grouped_or_merged() -> None:
    _, G = build(said("t1", "Maya", at(1), "running", 1), said("t2", "Leo", at(1, hour=13), "running", -1))
    assert statuses(G) == {"claim:t1#0": "CURRENT", "claim:t2#0": "CURRENT"}
    assert derived(G) == set()
    assert G.nodes["claim:t1#0"]["source"] == "person:maya" and G.nodes["claim:t2#0"]["source"] == "person:leo"
    assert claim_group(G, ("person:maya", "concept:running", "opinion")) == ["claim:t1#0"]


def test_different_predicates_and_targets_are_different_groups() -> None:
    _, G = build(
        said("t1", "Maya", at(1), "running", 1),
        said("t2", "Maya", at(3), "running", -1, predicate="belief"),
        said("t3", "Maya", at(4), "swimming", -1),
    )
    assert set(statuses(G).values()) == {"CURRENT"} and derived(G) == set()


def test_reconcile_is_idempotent_and_order_independent() -> None:
    claims = [
        said(f"t{i}", "Maya", at(d, hour=h), "running", p)
        for i, (d, h, p) in enumerate([(1, 9, 1), (3, 9, -1), (3, 10, 1), (8, 9, -1), (8, 20, 1)])
    ]
    _, G = build(*claims)
    counts = reconcile_claims(G)
    assert counts == {"CURRENT": 0, "SUPERSEDED": 3, "CONFLICTING": 2}
    again = copy.deepcopy(G)
    assert reconcile_claims(again) == counts and graphs_equal(again, G)
    mem = GraphMemory()
    for c in reversed(claims):  # one at a time, newest first
        mem.apply(NS, [c])
    assert graphs_equal(mem.graph(NS), G)


def test_only_the_given_groups_are_recomputed() -> None:
    _, G = build(said("t1", "Maya", at(1), "running", 1), said("t2", "Leo", at(1), "tea", 1))
    G.nodes["claim:t2#0"]["status"] = "BOGUS"
    assert reconcile_claims(G, ["claim:t1#0", "not-there"]) == {"CURRENT": 1, "SUPERSEDED": 0, "CONFLICTING": 0}
    assert G.nodes["claim:t2#0"]["status"] == "BOGUS"


def test_deleting_the_newest_claim_restores_the_older_one() -> None:
    mem, G = build(said("t1", "Maya", at(1), "running", 1), said("t2", "Maya", at(20), "running", -1))
    stats = mem.delete_turns(NS, ["t2"])
    assert statuses(G) == {"claim:t1#0": "CURRENT"} and derived(G) == set()
    assert stats.claims["CURRENT"] == 1


def test_deleting_one_side_of_a_conflict_resolves_it() -> None:
    mem, G = build(said("t1", "Maya", at(2, hour=9), "running", 1), said("t2", "Maya", at(2, hour=10), "running", -1))
    assert set(statuses(G).values()) == {"CONFLICTING"}
    mem.delete_turns(NS, ["t1"])
    assert statuses(G) == {"claim:t2#0": "CURRENT"} and derived(G) == set()


def test_hand_built_graph_without_claims_edges() -> None:
    G = nx.MultiDiGraph()
    for cid, hour, pol in [("claim:D1:10#0", 9, 1), ("claim:D1:2#0", 9, 1), ("claim:D2:1#0", 9, -1)]:
        day = 1 if cid.startswith("claim:D1") else 9
        G.add_node(
            cid,
            type="Claim",
            source="person:a",
            target="concept:x",
            predicate="opinion",
            polarity=pol,
            timestamp=at(day, hour),
            provenance={cid},
            status="CURRENT",
        )
    reconcile_claims(G)
    # equal timestamps: natural order of ids, so D1:2 comes before D1:10
    assert ("claim:D1:10#0", "claim:D1:2#0", "SUPERSEDES") in derived(G)
    assert ("claim:D2:1#0", "claim:D1:10#0", "SUPERSEDES") in derived(G)
    assert natural_key("D1:2") < natural_key("D1:10")


def test_a_change_of_mind_retires_the_other_stance_it_contradicts() -> None:
    # "I hate running. It's boring." (January: a preference and an opinion), "I love running now!" (June).
    _, G = build(
        said("t1", "Dana", at(1), "running", -1, predicate="preference"),
        said("t1b", "Dana", at(1), "running", -1),
        said("t2", "Dana", at(20), "running", 1, predicate="preference"),
        said("t3", "Dana", at(2), "running", 1, predicate="belief"),
    )
    assert statuses(G) == {"claim:t1#0": "SUPERSEDED", "claim:t1b#0": "SUPERSEDED", "claim:t2#0": "CURRENT",
                           "claim:t3#0": "CURRENT"}
    assert G.has_edge("claim:t2#0", "claim:t1b#0", key="SUPERSEDES")
    assert G.edges["claim:t2#0", "claim:t1b#0", "SUPERSEDES"]["changed"] is True
    # Recomputing from any of the claims gives the same state (no stale cross edges).
    before = derived_state(G)
    reconcile_claims(G, ["claim:t1b#0"])
    assert derived_state(G) == before


def stated(turn_id: str, when: datetime, predicate: str, obj: str, speaker: str = "Sam") -> Extraction:
    from langmem_cog.graph.schema import ExtractedFact

    f = ExtractedFact(subject=speaker, predicate=predicate, object=obj, text=f"{speaker} {predicate} {obj}",
                      source_turn_id=turn_id)
    return Extraction(turn_id=turn_id, speaker=speaker, timestamp=when, facts=[f])


def fact_statuses(G: nx.MultiDiGraph) -> dict[str, str | None]:
    return {n: d.get("status") for n, d in G.nodes(data=True) if d["type"] == "Fact"}


def test_a_new_state_supersedes_the_old_one_of_the_same_subject_and_slot() -> None:
    mem, G = build(stated("t1", at(1), "lives_in", "Leeds"), stated("t2", at(90), "lives_in", "York"),
                   stated("t3", at(2), "works_as", "nurse"), stated("t4", at(3), "has", "a dog"),
                   stated("t5", at(4), "dislikes", "running"), stated("t6", at(60), "likes", "running"),
                   stated("t7", at(5), "lives_in", "Oslo", speaker="Jo"))
    status = {n.split("|", 1)[1]: s for n, s in fact_statuses(G).items()}
    assert status == {"lives_in|leeds": "SUPERSEDED", "lives_in|york": "CURRENT", "works_as|nurse": "CURRENT",
                      "has|dog": None, "dislikes|running": "SUPERSEDED", "likes|running": "CURRENT",
                      "lives_in|oslo": "CURRENT"}  # another person's home is another slot
    assert G.has_edge("fact:sam|lives_in|york", "fact:sam|lives_in|leeds", key="SUPERSEDES")
    # Deleting the newer turn makes the older state current again, with no edge left behind.
    mem.delete_turns(NS, ["t2"])
    assert G.nodes["fact:sam|lives_in|leeds"]["status"] == "CURRENT"
    assert not [e for e in G.edges(keys=True) if e[2] == "SUPERSEDES" and e[1] == "fact:sam|lives_in|leeds"]


def test_fact_reconciliation_does_not_depend_on_the_order_turns_arrive_in() -> None:
    a = [stated("t1", at(1), "lives_in", "Leeds"), stated("t2", at(90), "lives_in", "York")]
    _, G = build(*a)
    _, H = build(*reversed(a))
    assert fact_statuses(G) == fact_statuses(H) and derived(G) == derived(H)
