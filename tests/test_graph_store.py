"""GraphMemory: node and edge bookkeeping, deletion cascade, rebuild, persistence, invariants."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langmem_cog.errors import ExtractionError, InvalidInputError, StoreError
from langmem_cog.graph.consolidate import consolidate
from langmem_cog.graph.reconcile import reconcile_claims
from langmem_cog.graph.schema import (
    SCHEMA_VERSION,
    ExtractedClaim,
    ExtractedConcept,
    ExtractedEvent,
    ExtractedFact,
    Extraction,
)
from langmem_cog.graph.store import (
    GraphMemory,
    _relink_timeline,
    graph_filename,
    graphs_equal,
    normalize_predicate,
)
from langmem_cog.records import Turn, make_turn

NS = "graph-test"


def at(day: int, month: int = 3, hour: int = 12) -> datetime:
    return datetime(2023, month, 1, hour, tzinfo=UTC) + timedelta(days=day - 1)


def ex(turn_id: str, speaker: str, when: datetime, **records: object) -> Extraction:
    return Extraction(turn_id=turn_id, speaker=speaker, timestamp=when, **records)  # type: ignore[arg-type]


def event(
    turn_id: str,
    text: str,
    participants: Sequence[str],
    start: datetime | None = None,
    concepts: Sequence[str] = (),
    verb: str | None = "go",
) -> ExtractedEvent:
    return ExtractedEvent(
        text=text,
        participants=tuple(participants),
        source_turn_id=turn_id,
        start=start,
        concepts=tuple(concepts),
        verb=verb,
    )


def claim(turn_id: str, source: str, target: str, polarity: int, when: datetime | None = None) -> ExtractedClaim:
    return ExtractedClaim(
        source=source,
        target=target,
        predicate="opinion",
        polarity=polarity,
        content=f"{source} on {target}: {polarity}",
        source_turn_id=turn_id,
        timestamp=when,
    )


def fact(turn_id: str, subject: str, predicate: str, obj: str, text: str | None = None) -> ExtractedFact:
    return ExtractedFact(
        subject=subject,
        predicate=predicate,
        object=obj,
        text=text or f"{subject} {predicate} {obj}",
        source_turn_id=turn_id,
    )


class TableExtractor:
    """A fake extractor: each turn id maps to a fixed Extraction."""

    def __init__(self, table: dict[str, Extraction]) -> None:
        self.table = table
        self.calls = 0

    def extract(self, turns: Sequence[Turn]) -> list[Extraction]:
        self.calls += 1
        return [copy.deepcopy(self.table[t.id]) for t in turns]


def turns_for(table: dict[str, Extraction], namespace: str = NS) -> list[Turn]:
    return [
        make_turn(
            id=e.turn_id,
            namespace=namespace,
            speaker=e.speaker,
            text=f"text of {e.turn_id}",
            timestamp=e.timestamp,
            position=i,
        )
        for i, e in enumerate(table.values())
    ]


def story() -> dict[str, Extraction]:
    """Caroline and Mel over a few weeks: events, facts and claims."""
    return {
        "D1:1": ex(
            "D1:1",
            "Caroline",
            at(1),
            persons=["Mel"],
            concepts=[ExtractedConcept("Little Fern", "D1:1", kind="place")],
            events=[event("D1:1", "went to Little Fern with Mel", ["Caroline", "Mel"], at(1), ["Little Fern"])],
            facts=[fact("D1:1", "Caroline", "likes", "pottery", "Caroline likes pottery")],
            claims=[claim("D1:1", "Caroline", "running", 1)],
        ),
        "D1:2": ex(
            "D1:2",
            "Mel",
            at(1, hour=13),
            events=[event("D1:2", "went running", ["Mel"], at(1), ["running"])],
            facts=[fact("D1:2", "I", "works as", "nurse", "Mel works as a nurse")],
            claims=[claim("D1:2", "Mel", "running", -1)],
        ),
        "D2:1": ex(
            "D2:1",
            "caroline",
            at(10),
            events=[event("D2:1", "went back to the Little Fern", ["Caroline"], at(9), ["Little Fern"])],
            facts=[fact("D2:1", "Caroline", "loves", "Pottery", "Caroline loves pottery")],
            claims=[claim("D2:1", "Caroline", "running", -1)],
        ),
        "D3:1": ex(
            "D3:1",
            "Caroline",
            at(20),
            events=[event("D3:1", "visited Little Fern again", ["Caroline"], at(19), ["little fern"])],
        ),
    }


def fresh(table: dict[str, Extraction] | None = None) -> tuple[GraphMemory, nx.MultiDiGraph]:
    mem = GraphMemory()
    mem.apply(NS, list((table or story()).values()))
    return mem, mem.graph(NS)


def edge_keys(G: nx.MultiDiGraph, u: str, v: str) -> set[str]:
    return set(G.get_edge_data(u, v, default={}))


# ---------------------------------------------------------------------- apply
def test_apply_builds_typed_nodes_with_deterministic_ids() -> None:
    mem, G = fresh()
    assert G.nodes["person:caroline"]["type"] == "Person"
    assert G.nodes["person:caroline"]["name"] == "Caroline"
    assert G.nodes["person:caroline"]["aliases"] == {"caroline"}  # the lower-case form said in D2:1
    assert G.nodes["concept:little fern"]["kind"] == "place"
    ev = G.nodes["event:D1:1#0"]
    assert ev["participants"] == ["person:caroline", "person:mel"]
    assert ev["start"] == at(1) and ev["verb"] == "go" and ev["provenance"] == {"D1:1"}
    assert G.nodes["claim:D1:2#0"]["source"] == "person:mel"
    assert G.nodes["claim:D1:2#0"]["target"] == "concept:running"
    f = G.nodes["fact:mel|works_as|nurse"]  # "I" is the speaker
    assert f["subject"] == "person:mel" and f["consolidated"] is False and f["support"] == 1
    for n, d in G.nodes(data=True):
        assert d["provenance"], n
        assert d["first_seen"].tzinfo is not None and d["first_seen"] <= d["last_seen"]
    assert G.graph["turns"] == {k: e.timestamp for k, e in story().items()}


def test_first_and_last_seen_follow_provenance() -> None:
    _, G = fresh()
    lf = G.nodes["concept:little fern"]
    assert lf["provenance"] == {"D1:1", "D2:1", "D3:1"}
    assert (lf["first_seen"], lf["last_seen"]) == (at(1), at(20))


def test_edge_keys_let_relations_coexist_and_merge_provenance() -> None:
    table = {
        "t1": ex(
            "t1", "Leo", at(1), facts=[fact("t1", "Leo", "likes", "guitar"), fact("t1", "Leo", "plays", "guitar")]
        ),
        "t2": ex("t2", "Leo", at(2), facts=[fact("t2", "Leo", "loves", "the guitar")]),
    }
    _, G = fresh(table)
    assert edge_keys(G, "person:leo", "concept:guitar") == {"LIKES", "USES"}
    likes = G.edges["person:leo", "concept:guitar", "LIKES"]
    assert likes["type"] == "LIKES" and likes["provenance"] == {"t1", "t2"} and likes["timestamp"] == at(1)
    assert G.edges["person:leo", "concept:guitar", "USES"]["provenance"] == {"t1"}
    assert G.has_edge("person:leo", "fact:leo|likes|guitar", key="HAS_ATTR")
    assert G.has_edge("fact:leo|likes|guitar", "concept:guitar", key="MENTIONS")


def test_fact_merges_across_turns_and_non_preference_predicates_add_no_concept() -> None:
    _, G = fresh()
    assert normalize_predicate("Works as") == "works_as"
    likes, loves = G.nodes["fact:caroline|likes|pottery"], G.nodes["fact:caroline|loves|pottery"]
    assert likes["text"] == "Caroline likes pottery" and loves["support"] == 1
    assert edge_keys(G, "person:caroline", "concept:pottery") == {"LIKES"}
    assert G.edges["person:caroline", "concept:pottery", "LIKES"]["provenance"] == {"D1:1", "D2:1"}
    assert "concept:nurse" not in G


def test_claim_target_that_is_a_known_person_is_a_person() -> None:
    table = {"t1": ex("t1", "Ann", at(1), persons=["Bob"], claims=[claim("t1", "Ann", "Bob", 1)])}
    _, G = fresh(table)
    assert G.has_edge("claim:t1#0", "person:bob", key="ABOUT")
    assert G.has_edge("person:ann", "claim:t1#0", key="CLAIMS")
    assert "concept:bob" not in G


def test_first_name_resolves_to_the_only_full_name() -> None:
    table = {
        "t1": ex("t1", "Caroline Smith", at(1)),
        "t2": ex("t2", "Mel", at(2), events=[event("t2", "met Caroline", ["Mel", "Caroline"], at(2))]),
    }
    _, G = fresh(table)
    assert "person:caroline" not in G
    assert G.nodes["person:caroline smith"]["aliases"] == {"Caroline"}
    assert G.nodes["event:t2#0"]["participants"] == ["person:mel", "person:caroline smith"]


def test_timeline_is_ordered_by_event_time_whatever_the_apply_order() -> None:
    table = story()
    mem = GraphMemory()
    for key in ["D3:1", "D1:1", "D2:1", "D1:2"]:  # out of order
        mem.apply(NS, [table[key]])
    G = mem.graph(NS)
    nxt = {(u, v) for u, v, k in G.edges(keys=True) if k == "NEXT"}
    assert nxt == {
        ("event:D1:1#0", "event:D2:1#0"),
        ("event:D2:1#0", "event:D3:1#0"),
        ("event:D1:1#0", "event:D1:2#0"),
    }  # Caroline's chain and Mel's
    assert G.edges["event:D1:1#0", "event:D2:1#0", "NEXT"]["persons"] == {"person:caroline"}
    assert G.edges["event:D1:1#0", "event:D2:1#0", "NEXT"]["provenance"] == {"D1:1", "D2:1"}
    assert G.edges["event:D1:1#0", "event:D2:1#0", "NEXT"]["timestamp"] == at(10)
    _, H = fresh()
    assert graphs_equal(G, H)


def test_shared_next_edge_survives_while_one_timeline_uses_it() -> None:
    table = {
        "t1": ex("t1", "Ann", at(1), events=[event("t1", "hike", ["Ann", "Bob"], at(1))]),
        "t2": ex("t2", "Ann", at(2), events=[event("t2", "swim", ["Ann", "Bob"], at(2))]),
        "t3": ex("t3", "Bob", at(3), events=[event("t3", "chess", ["Bob"], at(1, hour=18))]),
    }
    mem = GraphMemory()
    mem.apply(NS, [table["t1"], table["t2"]])
    G = mem.graph(NS)
    assert G.edges["event:t1#0", "event:t2#0", "NEXT"]["persons"] == {"person:ann", "person:bob"}
    mem.apply(NS, [table["t3"]])  # Bob's chess game falls between the two
    assert G.edges["event:t1#0", "event:t2#0", "NEXT"]["persons"] == {"person:ann"}
    assert G.has_edge("event:t1#0", "event:t3#0", key="NEXT") and G.has_edge("event:t3#0", "event:t2#0", key="NEXT")
    mem.delete_turns(NS, ["t3"])
    assert G.edges["event:t1#0", "event:t2#0", "NEXT"]["persons"] == {"person:ann", "person:bob"}


def test_reapplying_a_turn_is_idempotent_and_a_new_version_replaces_it() -> None:
    mem, G = fresh()
    before = copy.deepcopy(G)
    stats = mem.apply(NS, [story()["D2:1"]])
    assert stats.replaced == 1 and graphs_equal(before, G)
    new = ex("D2:1", "Caroline", at(10), concepts=[ExtractedConcept("Knitting", "D2:1")])
    mem.apply(NS, [new])
    assert "event:D2:1#0" not in G and "claim:D2:1#0" not in G and "concept:knitting" in G
    assert G.nodes["person:caroline"]["aliases"] == set()  # "caroline" was only said in the old D2:1


def test_a_speaker_without_letters_gets_a_code_point_person() -> None:
    mem = GraphMemory()
    mem.apply(NS, [ex("x", "...", at(1)), ex("y", "🙂", at(2))])
    G = mem.graph(NS)
    assert G.nodes["person:u002e-002e-002e"]["provenance"] == {"x"} and G.nodes["person:u1f642"]["name"] == "🙂"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (ex("x", "Ann", datetime(2023, 1, 1)), "timezone-aware"),
        (ex("x", "Ann", at(1), events=[event("y", "hike", ["Ann"])]), "source_turn_id"),
        (ex("x", "  ", at(1)), "speaker"),
        (ex("x", "Ann", at(1), events=[event("x", "hike", ["Ann"], datetime(2023, 1, 1))]), "event start"),
        (ex("x", "Ann", at(1), claims=[claim("x", "Ann", "tea", "yes")]), "polarity"),  # type: ignore[arg-type]
    ],
)
def test_invalid_extractions_are_rejected_before_anything_is_applied(bad: Extraction, message: str) -> None:
    mem = GraphMemory()
    good = ex("ok", "Ann", at(1), concepts=[ExtractedConcept("tea", "ok")])
    with pytest.raises(InvalidInputError, match=message):
        mem.apply(NS, [good, bad])
    assert mem.graph(NS).number_of_nodes() == 0


def test_duplicate_turn_in_one_batch_is_rejected() -> None:
    with pytest.raises(InvalidInputError, match="twice"):
        GraphMemory().apply(NS, [ex("a", "Ann", at(1)), ex("a", "Ann", at(2))])


def test_invalid_namespace_is_rejected() -> None:
    with pytest.raises(InvalidInputError):
        GraphMemory().graph("../etc")


# ---------------------------------------------------------------------- delete
def test_delete_cascade_trims_and_removes() -> None:
    mem, G = fresh()
    stats = mem.delete_turns(NS, ["D1:2", "nope"])
    assert stats.turns_removed == 1 and stats.unknown == 1 and stats.nodes_removed > 0
    # single-provenance nodes and their edges are gone
    assert "event:D1:2#0" not in G and "claim:D1:2#0" not in G and "fact:mel|works_as|nurse" not in G
    assert not G.has_edge("event:D1:1#0", "event:D1:2#0", key="NEXT")
    # multi-provenance nodes survive with trimmed provenance
    assert G.nodes["person:mel"]["provenance"] == {"D1:1"}
    assert G.nodes["concept:running"]["provenance"] == {"D1:1", "D2:1"}
    assert G.nodes["person:mel"]["last_seen"] == at(1)
    mem.delete_turns(NS, ["D1:1"])
    assert G.edges["person:caroline", "concept:pottery", "LIKES"]["provenance"] == {"D2:1"}
    assert G.edges["person:caroline", "concept:pottery", "LIKES"]["timestamp"] == at(10)
    assert "person:mel" not in G
    # the D1:1 spelling and kind are gone with their turn
    assert G.nodes["concept:little fern"]["name"] == "Little Fern"
    assert G.nodes["concept:little fern"]["kind"] == "thing"


def test_delete_all_turns_empties_the_graph() -> None:
    mem, G = fresh()
    mem.delete_turns(NS, list(story()))
    assert G.number_of_nodes() == 0 and G.number_of_edges() == 0 and G.graph["turns"] == {}


def test_delete_relinks_the_timeline() -> None:
    mem, G = fresh()
    mem.delete_turns(NS, ["D2:1"])
    assert G.has_edge("event:D1:1#0", "event:D3:1#0", key="NEXT")
    assert G.edges["event:D1:1#0", "event:D3:1#0", "NEXT"]["provenance"] == {"D1:1", "D3:1"}


def test_delete_equals_rebuild_without_the_turns() -> None:
    table = story()
    mem, G = fresh(table)
    mem.consolidate(NS)
    mem.delete_turns(NS, ["D1:2", "D2:1"])
    rest = {k: v for k, v in table.items() if k not in ("D1:2", "D2:1")}
    other = GraphMemory()
    H = other.rebuild(NS, turns_for(rest), TableExtractor(rest))
    assert graphs_equal(G, H)


def test_delete_rejects_a_single_string() -> None:
    with pytest.raises(InvalidInputError):
        GraphMemory().delete_turns(NS, "D1:1")


# ---------------------------------------------------------------------- rebuild
def test_rebuild_twice_gives_equal_graphs() -> None:
    table = story()
    turns = turns_for(table)
    mem = GraphMemory()
    G1 = copy.deepcopy(mem.rebuild(NS, turns, TableExtractor(table)))
    G2 = mem.rebuild(NS, list(reversed(turns)), TableExtractor(table))
    assert G1.number_of_nodes() > 5 and graphs_equal(G1, G2)
    assert mem.graph(NS) is G2
    _, incremental = fresh(table)
    consolidate(incremental)
    assert graphs_equal(G1, incremental)


def test_graphs_equal_notices_attribute_and_key_differences() -> None:
    _, G = fresh()
    H = copy.deepcopy(G)
    assert graphs_equal(G, H)
    H.nodes["person:caroline"]["provenance"].add("zzz")
    assert not graphs_equal(G, H)
    H = copy.deepcopy(G)
    H.edges["person:caroline", "concept:pottery", "LIKES"]["timestamp"] = at(2)
    assert not graphs_equal(G, H)
    H = copy.deepcopy(G)
    H.add_edge("person:caroline", "concept:pottery", key="USES", type="USES", provenance={"D1:1"})
    assert not graphs_equal(G, H)
    H = copy.deepcopy(G)
    H.graph["turns"]["extra"] = at(1)
    assert not graphs_equal(G, H)
    assert not graphs_equal(G, nx.DiGraph(G))


def test_rebuild_rejects_bad_extractors_and_keeps_the_old_graph() -> None:
    table = story()
    mem, G = fresh(table)

    class Short:
        def extract(self, turns: Sequence[Turn]) -> list[Extraction]:
            return []

    with pytest.raises(ExtractionError, match="one Extraction per turn"):
        mem.rebuild(NS, turns_for(table), Short())
    assert mem.graph(NS) is G
    with pytest.raises(InvalidInputError, match="namespace"):
        mem.rebuild(NS, turns_for(table, namespace="other"), TableExtractor(table))
    with pytest.raises(InvalidInputError, match="extract"):
        mem.rebuild(NS, [], object())  # type: ignore[arg-type]
    assert mem.rebuild(NS, [], TableExtractor({})).number_of_nodes() == 0


# ---------------------------------------------------------------------- persistence
def test_save_load_round_trip(tmp_path) -> None:
    mem = GraphMemory(tmp_path)
    mem.apply(NS, list(story().values()))
    mem.consolidate(NS)
    G = mem.graph(NS)
    path = mem.save(NS)
    assert path == tmp_path / "graph" / graph_filename(NS)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left
    payload = json.loads(path.read_text())
    assert payload["schema_version"] == SCHEMA_VERSION and payload["namespace"] == NS
    node = next(n for n in payload["graph"]["nodes"] if n["id"] == "person:caroline")
    assert node["provenance"] == ["D1:1", "D2:1", "D3:1"] and isinstance(node["first_seen"], str)
    loaded = GraphMemory(tmp_path).graph(NS)
    assert graphs_equal(G, loaded)
    # and saving the loaded graph writes the same bytes
    text = path.read_text()
    other = GraphMemory(tmp_path)
    other.graph(NS)
    other.save(NS)
    assert path.read_text() == text


def test_load_missing_file_gives_an_empty_graph(tmp_path) -> None:
    G = GraphMemory(tmp_path).load(NS)
    assert G.number_of_nodes() == 0 and G.graph["turns"] == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "corrupt"),
        ('{"schema_version": 999, "namespace": "graph-test", "graph": {}}', "schema version 999"),
        ('{"schema_version": 1, "namespace": "someone-else", "graph": {}}', "someone-else"),
        (
            '{"schema_version": 1, "namespace": "graph-test", "graph": {"nodes": [{"id": "a", "first_seen": "x"}], '
            '"edges": []}}',
            "corrupt",
        ),
        ("[1, 2]", "not a graph snapshot"),
    ],
)
def test_bad_files_raise_store_error_with_a_rebuild_hint(tmp_path, content: str, message: str) -> None:
    mem = GraphMemory(tmp_path)
    path = mem.path(NS)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(StoreError, match=message) as info:
        mem.graph(NS)
    assert "rebuild" in str(info.value)


def test_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch) -> None:
    mem = GraphMemory(tmp_path)
    mem.apply(NS, [story()["D1:1"]])
    path = mem.save(NS)
    old = path.read_text()
    mem.apply(NS, [story()["D1:2"]])

    def boom(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("langmem_cog.graph.store.os.replace", boom)
    with pytest.raises(StoreError, match="disk full"):
        mem.save(NS)
    assert path.read_text() == old
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_in_memory_mode_forget_and_autosave(tmp_path) -> None:
    mem = GraphMemory()
    mem.apply(NS, [story()["D1:1"]])
    assert mem.save(NS) is None and mem.path(NS) is None
    assert mem.forget(NS) and mem.graph(NS).number_of_nodes() == 0
    auto = GraphMemory(tmp_path, autosave=True)
    auto.apply(NS, [story()["D1:1"]])
    assert auto.path(NS).exists()
    assert GraphMemory(tmp_path).graph(NS).number_of_nodes() == auto.graph(NS).number_of_nodes()
    assert auto.forget(NS) and not auto.path(NS).exists()
    assert not auto.forget(NS)


def test_from_config_and_embedding_resolution(tmp_path) -> None:
    from langmem_cog.config import CogMemConfig

    assert GraphMemory.from_config(CogMemConfig.preset("ephemeral")).data_dir is None
    assert GraphMemory.from_config(CogMemConfig.preset("default", data_dir=tmp_path)).data_dir == tmp_path

    class Emb:
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0] if t in ("running shoes", "sneakers") else [0.0, 1.0] for t in texts]

    mem = GraphMemory(embeddings=Emb())
    mem.apply(NS, [ex("t1", "Ann", at(1), facts=[fact("t1", "Ann", "owns", "running shoes")])])
    mem.apply(NS, [ex("t2", "Ann", at(2), facts=[fact("t2", "Ann", "likes", "Sneakers")])])
    G = mem.graph(NS)
    assert "concept:sneakers" not in G
    assert G.nodes["concept:running shoes"]["aliases"] == {"Sneakers"}
    assert edge_keys(G, "person:ann", "concept:running shoes") == {"USES", "LIKES"}


# ---------------------------------------------------------------------- invariants (property test)
_DAYS = [1, 1, 3, 5, 8, 10, 12, 40]


def _pool_extraction(i: int) -> Extraction:
    tid = f"T{i}"
    when = at(_DAYS[i], hour=9 + i)
    if i % 3 == 2:
        return ex(
            tid,
            "Bob",
            when,
            persons=["Ann"],
            events=[event(tid, "climbed with Ann", ["Bob", "ann"], when, ["climbing"])],
            claims=[claim(tid, "Bob", "Ann", 1 if i % 2 else -1), claim(tid, "Bob", "climbing", 1)],
        )
    return ex(
        tid,
        "Ann" if i % 2 else "ann",
        when,
        concepts=[ExtractedConcept("Climbing", tid, kind="activity" if i % 2 else "topic")],
        events=[event(tid, f"climb {i}", ["Ann"], when - timedelta(hours=1), ["climbing", "gym"])],
        facts=[fact(tid, "Ann", "likes", "climbing", f"Ann likes climbing ({i})")],
        claims=[claim(tid, "Ann", "climbing", 1 if i in (0, 4, 6) else -1)],
    )


_POOL = {f"T{i}": _pool_extraction(i) for i in range(len(_DAYS))}
_ops = st.lists(
    st.tuples(
        st.sampled_from(["apply", "delete", "consolidate"]),
        st.sets(st.sampled_from(sorted(_POOL)), min_size=1, max_size=4),
    ),
    min_size=1,
    max_size=10,
)


def _check_invariants(G: nx.MultiDiGraph, live: set[str]) -> None:
    assert set(G.graph["turns"]) == live
    for n, d in G.nodes(data=True):
        assert d["provenance"] and d["provenance"] <= live, n
    for u, v, k, d in G.edges(keys=True, data=True):
        assert d["provenance"] and d["provenance"] <= live, (u, v, k)
        assert k == d["type"]
    # incremental maintenance equals recomputing from scratch
    full = copy.deepcopy(G)
    reconcile_claims(full)
    for p in [n for n, d in full.nodes(data=True) if d["type"] == "Person"]:
        _relink_timeline(full, p)
    pairs = [
        (d["subject"], c)
        for n, d in full.nodes(data=True)
        if d.get("consolidated")
        for _, c, k in full.out_edges(n, keys=True)
        if k == "MENTIONS"
    ]
    assert consolidate(full, pairs=pairs) == []
    assert graphs_equal(full, G)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_ops)
def test_random_apply_delete_sequences_keep_provenance_sound(ops: list[tuple[str, set[str]]]) -> None:
    mem = GraphMemory()
    live: set[str] = set()
    for op, ids in ops:
        if op == "apply":
            mem.apply(NS, [copy.deepcopy(_POOL[i]) for i in sorted(ids)])
            live |= ids
        elif op == "delete":
            mem.delete_turns(NS, sorted(ids))
            live -= ids
        else:
            mem.consolidate(NS)
        _check_invariants(mem.graph(NS), live)
    mem.consolidate(NS)
    rest = {k: v for k, v in _POOL.items() if k in live}
    rebuilt = GraphMemory().rebuild(NS, turns_for(rest), TableExtractor(rest))
    assert graphs_equal(mem.graph(NS), rebuilt)
