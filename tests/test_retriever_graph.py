"""The graph changes what the default retriever returns: reconciled claims, provenance metadata."""

from __future__ import annotations

from datetime import UTC

import pytest
from conftest import SAMPLE_CONVERSATION

from langmem_cog import CogMemConfig, CogMemRetriever, load_locomo
from langmem_cog.memory import CogMemory


@pytest.fixture(scope="module")
def sample():
    conv = load_locomo(SAMPLE_CONVERSATION)[0]
    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    memory.add_turns(conv.turns)
    memory.consolidate(conv.sample_id)
    yield memory, conv.sample_id, max(t.timestamp for t in conv.turns)
    memory.forget(conv.sample_id)


def _ids(docs):
    return [d.metadata["turn_id"] for d in docs]


def test_a_present_belief_question_gets_the_current_claim_before_the_superseded_one(sample) -> None:
    memory, ns, now = sample
    G = memory.graph(ns)
    assert G.nodes["claim:D1:15#0"]["status"] == "SUPERSEDED" and G.nodes["claim:D5:5#0"]["status"] == "CURRENT"
    docs = CogMemRetriever(memory=memory, namespace=ns, k=10, now=now).invoke("Does Maya like running now?")
    ids = _ids(docs)
    assert "D5:5" in ids and "D1:15" in ids
    assert ids[0] == "D5:5"  # the CURRENT claim "I love running now" first, above "I hate running"
    assert ids.index("D5:5") < ids.index("D1:15")
    by_id = {d.metadata["turn_id"]: d.metadata for d in docs}
    hate = next(c for c in by_id["D1:15"]["claims"] if c["claim_id"] == "claim:D1:15#0")
    assert hate == {"claim_id": "claim:D1:15#0", "status": "SUPERSEDED", "polarity": -1, "superseded_by_turn": "D5:5",
                    "target": "running"}
    assert by_id["D5:5"]["claim_status"] == "CURRENT"
    # Plain hybrid search, which has no graph, ranks the superseded claim first on the same question.
    hybrid = _ids(CogMemRetriever(memory=memory, namespace=ns, k=10, mode="hybrid").invoke("Does Maya like running now?"))
    assert hybrid.index("D1:15") < hybrid.index("D5:5")


def test_flipping_a_claim_status_in_the_graph_changes_the_ranking(sample) -> None:
    memory, ns, now = sample
    G = memory.graph(ns)
    r = CogMemRetriever(memory=memory, namespace=ns, k=10, now=now)
    # No "now" in the question: the order of the two states is the graph's alone (not the tense rule's).
    before = _ids(r.invoke("Does Maya like running?"))
    old, new = G.nodes["claim:D1:15#0"]["status"], G.nodes["claim:D5:5#0"]["status"]
    revisions = memory.graphs.revisions
    try:
        G.nodes["claim:D1:15#0"]["status"] = "CURRENT"  # nothing superseded any more: the rule does not apply
        unseen = _ids(r.invoke("Does Maya like running?"))
        # A change made outside GraphMemory's methods is seen once the namespace's revision moves.
        revisions[ns] = revisions.get(ns, 0) + 1
        after = _ids(r.invoke("Does Maya like running?"))
    finally:
        G.nodes["claim:D1:15#0"]["status"], G.nodes["claim:D5:5#0"]["status"] = old, new
        revisions[ns] = revisions.get(ns, 0) + 1
    assert unseen == before
    assert before != after and after.index("D1:15") < after.index("D5:5")


def test_the_records_of_each_turn_are_computed_again_only_after_the_graph_changed() -> None:
    from langmem_cog import Turn

    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    memory.add_turns([Turn(id="jan", namespace="dana", speaker="Dana", text="Honestly I hate running. It's boring.",
                           timestamp="2024-01-10T08:00:00Z")])
    first = memory.turn_records("dana")
    assert memory.turn_records("dana") is first and first["jan"].claims
    assert all(c.status == "CURRENT" for c in first["jan"].claims)
    memory.add_turns([Turn(id="jun", namespace="dana", speaker="Dana", text="I love running now!",
                           timestamp="2024-06-03T07:15:00Z")])
    second = memory.turn_records("dana")
    assert second is not first and second["jun"].claims
    assert any(c.status == "SUPERSEDED" and c.superseded_by_turn == "jun" for c in second["jan"].claims)
    docs = CogMemRetriever(memory=memory, namespace="dana").invoke("Does Dana like running now?")
    assert [d.metadata["turn_id"] for d in docs][0] == "jun"
    for before in ("Did Dana like running before?", "What did Dana think of running at first?"):
        docs = CogMemRetriever(memory=memory, namespace="dana").invoke(before)  # the superseded view first
        assert [d.metadata["turn_id"] for d in docs] == ["jan", "jun"]
        assert docs[0].metadata["claim_status"] == "SUPERSEDED"
    memory.delete_turns("dana", ["jun"])
    assert all(c.status == "CURRENT" for c in memory.turn_records("dana")["jan"].claims)


def test_a_turns_status_and_a_change_of_mind_count_only_for_the_target_the_question_names() -> None:
    from langmem_cog import Turn

    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    memory.add_turns([Turn(id="jan", namespace="dana", speaker="Dana", text="Honestly I hate running but I love swimming.",
                           timestamp="2024-01-10T08:00:00Z"),
                      Turn(id="jun", namespace="dana", speaker="Dana", text="I love running now!",
                           timestamp="2024-06-03T07:15:00Z")])
    retriever = CogMemRetriever(memory=memory, namespace="dana")

    def ranked(question: str) -> list[tuple[str, str]]:
        return [(d.metadata["turn_id"], d.metadata["claim_status"]) for d in retriever.invoke(question)]

    # January's claim about running was superseded: for a question about running the turn is SUPERSEDED
    assert ranked("Does Dana like running now?") == [("jun", "CURRENT"), ("jan", "SUPERSEDED")]
    assert ranked("Did Dana like running before?") == [("jan", "SUPERSEDED"), ("jun", "CURRENT")]
    # its claim about swimming holds: for swimming it is CURRENT, and the change about running moves nothing
    assert ranked("Does Dana like swimming?")[0] == ("jan", "CURRENT")
    targets = {c["target"] for d in retriever.invoke("Does Dana like swimming?") for c in d.metadata["claims"]}
    assert targets == {"running", "swimming"}


def test_documents_carry_the_events_resolved_dates(sample) -> None:
    memory, ns, now = sample
    docs = CogMemRetriever(memory=memory, namespace=ns, k=10, now=now).invoke("When did Maya run her first 10k?")
    dated = [d for d in docs if d.metadata.get("event_dates")]
    assert dated
    for d in dated:
        for start, end in d.metadata["event_dates"]:
            assert start is None or start[:4].isdigit()
            assert end is None or start is None or start <= end
    assert all("claims" not in d.metadata or d.metadata["claims"] for d in docs)


def test_the_attribution_probe_runs_through_the_default_retriever(tmp_path) -> None:
    import json

    from langmem_cog.bench.probe import load_probe, run_retriever_probe

    pairs = load_probe()
    assert all(p["belief_query"].startswith(f"What does {p['opinion']['speaker']} think about ") for p in pairs)
    path = tmp_path / "probe.json"
    path.write_text(json.dumps({"pairs": pairs[:3]}))
    res = run_retriever_probe(path=path)
    assert res["mode"] == "cascade" and res["pairs"] == 3 and len(res["details"]) == 3
    assert 0.0 <= res["record_h1"] <= 1.0 and 0.0 <= res["belief_h1"] <= 1.0
    assert {d["record_query_first"] for d in res["details"]} <= {"record", "opinion"}
    assert run_retriever_probe(path=path, mode="hybrid")["mode"] == "hybrid"


def test_prefer_records_moves_only_other_speakers_opinions_and_keeps_the_set() -> None:
    from langmem_cog.graph.provenance import TurnClaim, TurnEvent, TurnRecords, prefer_records
    from langmem_cog.rank.features import first_name, name_tokens

    opinion = TurnRecords(claims=(TurnClaim("claim:o", "CURRENT", -1),))
    event_too = TurnRecords(claims=(TurnClaim("claim:e", "CURRENT", 1),), events=(TurnEvent("ev:e", None, None),))
    recs = {"o1": opinion, "o2": opinion, "e1": event_too, "m1": opinion}
    turns = [("o1", "Leo"), ("e1", "Ivan"), ("m1", "Maya K."), ("x", "Maya"), ("o2", "Ivan")]
    ids = [t for t, _ in turns]

    def by_named(question: str) -> set[str]:
        words = name_tokens(question)
        return {t for t, speaker in turns if first_name(speaker) in words}

    named = by_named("What is Maya's job?")
    assert named == {"m1", "x"}
    out = prefer_records(ids, recs, named)
    assert sorted(out) == sorted(ids)
    # Leo's opinion goes just after Maya's first turn; Maya's own opinion and a turn with an event stay put;
    # the last opinion has no turn of Maya's below it.
    assert out == ["e1", "m1", "o1", "x", "o2"]
    assert prefer_records(ids, recs, by_named("What is the capital of France?")) == ids
    assert prefer_records(ids, {}, named) == ids


def test_a_record_question_gets_the_named_persons_turn_before_anothers_opinion_about_them() -> None:
    from datetime import datetime

    from langmem_cog import make_turn

    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    ns = "record-vs-opinion"
    ts = datetime(2023, 4, 10, 12, tzinfo=UTC)
    texts = [("Omar", "Nora, honestly I believe a PhD in anything is useless outside academia."),
             ("Nora", "I did my doctorate in marine biology at Dalhousie.")]
    memory.add_turns([make_turn(id=f"t{i}", namespace=ns, speaker=s, text=x, position=i, session_id="1", timestamp=ts)
                      for i, (s, x) in enumerate(texts)])
    try:
        assert memory.graph(ns).nodes  # the opinion became a Claim attributed to Omar
        r = CogMemRetriever(memory=memory, namespace=ns, k=2, now=ts)
        record = r.invoke("What is Nora's PhD in?")
        assert _ids(record)[0] == "t1" and record[0].metadata["speaker"] == "Nora"
        assert record[1].metadata["claim_status"] == "CURRENT"
        assert _ids(r.invoke("What does Omar think about a PhD?"))[0] == "t0"  # a belief question: the opinion
    finally:
        memory.forget(ns)


def test_the_node_vectors_are_embedded_at_ingest_for_the_cascade_only() -> None:
    from datetime import datetime

    from langmem_cog import make_turn
    from langmem_cog.graph.operators import node_text

    ts = datetime(2023, 4, 10, 12, tzinfo=UTC)
    for retrieval, warmed in (("cascade", True), ("hybrid", False)):
        memory = CogMemory(CogMemConfig.preset("ephemeral", retriever={"mode": retrieval}))
        ns = f"warm-{retrieval}"
        memory.add_turns([make_turn(id="t0", namespace=ns, speaker="Nora", text="I adopted a beagle named Pickle.",
                                    position=0, session_id="1", timestamp=ts)])
        try:
            G = memory.graph(ns)
            assert G.nodes
            assert memory.node_vectors.warm(node_text(G, n) for n in G.nodes) == (0 if warmed else len(
                {node_text(G, n) for n in G.nodes}))
        finally:
            memory.forget(ns)


def _chain_records() -> dict:
    """Claims a1 -> a2 -> a3 (each superseded by the next), a conflicting c1, and b1 superseded by a turn b9."""
    from langmem_cog.graph.provenance import TurnClaim, TurnRecords

    return {
        "a1": TurnRecords(claims=(TurnClaim("claim:a1", "SUPERSEDED", -1, "a2"),)),
        "a2": TurnRecords(claims=(TurnClaim("claim:a2", "SUPERSEDED", 1, "a3"),)),
        "a3": TurnRecords(claims=(TurnClaim("claim:a3", "CURRENT", -1),)),
        "c1": TurnRecords(claims=(TurnClaim("claim:c1", "CONFLICTING", 1),)),
        "b1": TurnRecords(claims=(TurnClaim("claim:b1", "SUPERSEDED", -1, "b9"),)),
    }


def test_prefer_current_is_a_permutation_that_leads_with_the_newer_side_of_each_change() -> None:
    from langmem_cog.graph.provenance import prefer_current

    recs = _chain_records()  # b9 is not in the list
    ids = ["x", "a1", "c1", "b1", "a2", "y", "a3"]
    out = prefer_current(ids, recs)
    assert sorted(out) == sorted(ids)
    assert out[:2] == ["a3", "a2"]  # the current end of the chain first, then the claim it superseded
    assert out.index("a2") < out.index("a1")
    assert [t for t in out if t in {"x", "c1", "b1", "y"}] == ["x", "c1", "b1", "y"]  # the rest keep their order
    assert prefer_current(["x", "b1", "y"], recs) == ["x", "b1", "y"]  # one side only: nothing moves


def test_prefer_earlier_is_a_permutation_that_leads_with_the_older_side_of_each_change() -> None:
    from langmem_cog.graph.provenance import TurnFact, TurnRecords, prefer_earlier

    recs = {
        **_chain_records(),  # b9 is not in the list
        "f1": TurnRecords(facts=(TurnFact("fact:f1", "SUPERSEDED", "f2", predicate="lives_in"),)),
        "f2": TurnRecords(facts=(TurnFact("fact:f2", "CURRENT", None, predicate="lives_in"),)),
    }
    ids = ["x", "a3", "c1", "a2", "f2", "b1", "a1", "y", "f1"]
    out = prefer_earlier(ids, recs)
    assert sorted(out) == sorted(ids)
    assert out.index("a1") < out.index("a2") < out.index("a3")  # the chain reads oldest first
    assert [t for t in out if t in {"x", "c1", "b1", "y"}] == ["x", "c1", "b1", "y"]  # the rest keep their order
    assert out.index("f2") < out.index("f1")  # state facts only with facts=True
    assert prefer_earlier(ids, recs, facts=True).index("f1") < prefer_earlier(ids, recs, facts=True).index("f2")
    assert prefer_earlier(["x", "b1", "y"], recs) == ["x", "b1", "y"]  # one side only: nothing moves


def test_the_operator_loop_is_built_with_the_retriever_not_in_its_first_query(sample) -> None:
    from langmem_cog.graph.loop import GraphRetrieval

    fresh = CogMemory(CogMemConfig.preset("ephemeral"))
    assert fresh._retrieval is None
    CogMemRetriever(memory=fresh, namespace="nobody-yet")
    assert isinstance(fresh._retrieval, GraphRetrieval)  # built by the constructor
    assert fresh.retrieval is fresh._retrieval is fresh.retrieval
    plain = CogMemory(CogMemConfig.preset("ephemeral", retriever={"mode": "hybrid"}))
    CogMemRetriever(memory=plain, namespace="nobody-yet")
    assert plain._retrieval is None  # plain hybrid search builds no loop
    memory, ns, _ = sample
    retriever = CogMemRetriever(memory=memory, namespace=ns)
    built = memory.retrieval
    retriever.invoke("Does Maya like running now?")
    assert memory.retrieval is built  # the query reused it


def test_a_changed_preference_puts_the_new_one_first_and_labels_the_old_turn_superseded() -> None:
    from datetime import datetime

    from langmem_cog.records import make_turn

    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    rows = [(datetime(2024, 1, 10, 9, tzinfo=UTC), "Dana", "Honestly I hate running. It's boring."),
            (datetime(2024, 1, 10, 9, 1, tzinfo=UTC), "Sam", "Fair enough, running isn't for everyone."),
            (datetime(2024, 3, 2, 9, tzinfo=UTC), "Sam", "I ran a half marathon last weekend."),
            (datetime(2024, 6, 3, 9, tzinfo=UTC), "Dana", "I love running now!"),
            (datetime(2024, 6, 3, 9, 1, tzinfo=UTC), "Sam", "No way, what changed?")]
    memory.add_turns([make_turn(id=f"t{i}", namespace="dana", speaker=who, text=text, timestamp=ts, position=i)
                      for i, (ts, who, text) in enumerate(rows)])
    docs = CogMemRetriever(memory=memory, namespace="dana", k=5).invoke("Does Dana like running now?")
    status = {d.metadata["turn_id"]: d.metadata.get("claim_status") for d in docs}
    assert docs[0].page_content == "Dana: I love running now!" and status["t3"] == "CURRENT"
    assert status["t0"] == "SUPERSEDED"  # its preference and its opinion ("It's boring.") were both retired


def test_the_records_map_lists_every_provenance_turn_and_makes_records_on_lookup(sample) -> None:
    """``turn_records`` makes a turn's records when it is looked up: the map holds exactly the turns some
    Claim, Event or state Fact names, and each turn's records are those nodes, sorted by id."""
    from langmem_cog.graph.provenance import turn_records
    from langmem_cog.graph.schema import NodeType

    memory, ns, _ = sample
    G = memory.graph(ns)
    named: dict[str, set[str]] = {}
    for node, d in G.nodes(data=True):
        if d.get("type") in (NodeType.CLAIM, NodeType.EVENT) or (d.get("type") == NodeType.FACT and d.get("status")):
            for t in d.get("provenance") or ():
                named.setdefault(str(t), set()).add(str(node))
    records = turn_records(G)
    assert set(records) == set(named) and len(records) == len(named)
    assert "no such turn" not in records and records.get("no such turn") is None
    for t, nodes in named.items():
        rec = records[t]
        ids = [c.claim_id for c in rec.claims] + [e.event_id for e in rec.events] + [f.fact_id for f in rec.facts]
        assert set(ids) == nodes
        assert [c.claim_id for c in rec.claims] == sorted(c.claim_id for c in rec.claims)
        assert records[t] is rec  # made once
    assert dict(records.items()) == dict(turn_records(G).items())  # the same records whatever the lookup order
    import pickle

    assert pickle.loads(pickle.dumps(turn_records(G))) == dict(records.items())  # a plain dict, not the graph
