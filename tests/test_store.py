"""Behaviour tests of the raw-turn store (Chroma + BM25) over the fake bag-of-words embedder."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from fakes import FakeEmbeddings, make_turns

from langmem_cog.config import CogMemConfig, SearchSettings
from langmem_cog.errors import (
    ConfigError,
    DuplicateTurnError,
    InvalidInputError,
    InvalidNamespaceError,
    StoreError,
    UnknownNamespaceError,
)
from langmem_cog.memory import CogMemory
from langmem_cog.records import Turn, make_turn
from langmem_cog.storage.chroma import ChromaEmbeddingFunction
from langmem_cog.store import TurnStore, collection_name

ROOT = Path(__file__).resolve().parents[1]

TEXTS = [
    "I adopted a puppy called Rex",
    "My sister lives in Lisbon near the river",
    "We painted the kitchen blue last weekend",
    "The marathon in Berlin was exhausting",
    "I am allergic to peanuts and shellfish",
]


def snapshot(store: TurnStore, ns: str, queries=("puppy Rex", "kitchen blue", "Lisbon river")):
    """Everything observable about a namespace: count, turns, search results (ids and scores)."""
    results = {
        (q, mode): [(h.turn.id, round(h.score, 6)) for h in store.search(ns, q, k=10, mode=mode)]
        for q in queries
        for mode in ("hybrid", "dense", "lexical")
    }
    return store.count(ns), store.get_turns(ns), results


@pytest.fixture
def filled(fake_store: TurnStore, ns: str) -> tuple[TurnStore, str]:
    fake_store.add_turns(make_turns(ns, TEXTS))
    return fake_store, ns


# ---------------------------------------------------------------------- add and search
class TestAddAndSearch:
    def test_add_returns_ids_in_order(self, fake_store, ns):
        assert fake_store.add_turns(make_turns(ns, TEXTS)) == [f"t{i}" for i in range(len(TEXTS))]

    def test_add_a_single_turn(self, fake_store, ns):
        turn = make_turns(ns, ["just one"])[0]
        assert fake_store.add_turns(turn) == ["t0"]
        assert fake_store.count(ns) == 1

    def test_add_nothing(self, fake_store, ns):
        assert fake_store.add_turns([]) == []
        assert not fake_store.has_namespace(ns)

    @pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
    @pytest.mark.parametrize(
        ("query", "expected"),
        [("puppy Rex", "t0"), ("Lisbon river", "t1"), ("kitchen painted blue", "t2"), ("peanuts allergic", "t4")],
    )
    def test_search_finds_the_right_turn(self, filled, mode, query, expected):
        store, ns = filled
        hits = store.search(ns, query, k=3, mode=mode)
        assert hits[0].turn.id == expected
        assert hits[0].turn.namespace == ns

    def test_lexical_stems_where_the_fake_dense_side_cannot(self, filled):
        store, ns = filled
        # "adopting puppies" shares no exact word with t0, only stems.
        lex = store.search(ns, "adopting puppies", k=1, mode="lexical")[0]
        assert lex.turn.id == "t0" and lex.lexical_score > 0
        assert store.search(ns, "adopting puppies", k=1, mode="hybrid")[0].turn.id == "t0"

    def test_scores_ranks_and_order(self, filled):
        store, ns = filled
        hits = store.search(ns, "puppy kitchen", k=5)
        assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        top = hits[0]
        assert -1.0 - 1e-6 <= top.dense_score <= 1.0 + 1e-6
        assert top.lexical_score > 0

    def test_dense_score_is_the_cosine(self, filled, fake_embeddings):
        store, ns = filled
        hit = store.search(ns, "puppy Rex", k=1, mode="dense")[0]
        q = fake_embeddings.vector("puppy Rex")
        d = fake_embeddings.vector(hit.turn.memory_text)
        assert hit.dense_score == pytest.approx(float(q @ d), abs=1e-5)
        assert hit.score == pytest.approx(hit.dense_score)

    def test_k_larger_than_namespace(self, filled):
        store, ns = filled
        assert len(store.search(ns, "anything at all", k=50)) == len(TEXTS)

    @pytest.mark.parametrize("k", [1, 2, 4])
    def test_k_limits_results(self, filled, k):
        store, ns = filled
        assert len(store.search(ns, "the", k=k)) == k

    def test_rrf_fusion(self, filled):
        store, ns = filled
        assert store.search(ns, "puppy Rex", k=1, fusion="rrf")[0].turn.id == "t0"

    def test_lexical_weight_zero_equals_dense_order(self, filled):
        store, ns = filled
        hybrid = [h.turn.id for h in store.search(ns, "Lisbon kitchen blue", k=5, lexical_weight=0.0)]
        dense = [h.turn.id for h in store.search(ns, "Lisbon kitchen blue", k=5, mode="dense")]
        assert hybrid == dense

    def test_candidate_path_matches_exact_path(self, ns, fake_embeddings):
        cfg = CogMemConfig.preset("ephemeral", search=SearchSettings(exact_search_max=0, candidates=3))
        store = TurnStore(cfg, embeddings=fake_embeddings)
        store.add_turns(make_turns(ns, TEXTS))
        assert store.search(ns, "puppy Rex", k=1)[0].turn.id == "t0"
        assert store.search(ns, "adopting puppies", k=1, mode="lexical")[0].turn.id == "t0"

    def test_search_results_are_stable(self, filled):
        store, ns = filled
        assert snapshot(store, ns) == snapshot(store, ns)


# ---------------------------------------------------------------------- reads
class TestReads:
    def test_count_and_get_turns(self, filled):
        store, ns = filled
        assert store.count(ns) == len(TEXTS)
        turns = store.get_turns(ns)
        assert [t.text for t in turns] == TEXTS
        assert turns == make_turns(ns, TEXTS)

    def test_get_turns_by_ids_keeps_order_and_skips_unknown(self, filled):
        store, ns = filled
        assert [t.id for t in store.get_turns(ns, ["t3", "nope", "t0"])] == ["t3", "t0"]

    def test_get_turns_is_chronological_even_when_added_out_of_order(self, fake_store, ns):
        ts = datetime(2024, 1, 1, tzinfo=UTC)
        late = [make_turn(id=f"late{i}", namespace=ns, speaker="Ann", text=f"later {i}",
                          timestamp=ts + timedelta(days=1, minutes=i), position=10 + i) for i in range(2)]
        early = [make_turn(id=f"early{i}", namespace=ns, speaker="Ann", text=f"earlier {i}",
                           timestamp=ts + timedelta(minutes=i), position=i) for i in range(2)]
        fake_store.add_turns(late)
        fake_store.add_turns(early)
        assert [t.id for t in fake_store.get_turns(ns)] == ["early0", "early1", "late0", "late1"]

    def test_unknown_namespace_reads(self, fake_store, ns):
        assert fake_store.count(ns) == 0
        assert fake_store.get_turns(ns) == []
        assert not fake_store.has_namespace(ns)
        assert ns not in fake_store.namespaces()

    def test_namespaces_lists_written_ones(self, fake_store, ns_factory):
        # Each ephemeral store has a Chroma database of its own: it lists exactly what it wrote.
        a, b = ns_factory("a"), ns_factory("b")
        fake_store.add_turns(make_turns(a, ["x y"]) + make_turns(b, ["z w"]))
        names = fake_store.namespaces()
        assert names == sorted([a, b])
        assert fake_store.has_namespace(a) and fake_store.has_namespace(b)

    def test_collection_name_hides_the_namespace(self):
        name = collection_name("alice@example.com")
        assert "alice" not in name and name.startswith("lmc_")
        assert collection_name("alice@example.com") == name != collection_name("bob")

    @pytest.mark.parametrize("bad", ["", "../x", "a b", 42, None])
    def test_invalid_namespace_raises(self, fake_store, bad):
        for call in (
            lambda: fake_store.count(bad),
            lambda: fake_store.get_turns(bad),
            lambda: fake_store.search(bad, "q"),
            lambda: fake_store.delete_turns(bad, ["t0"]),
            lambda: fake_store.forget_namespace(bad),
            lambda: fake_store.has_namespace(bad),
        ):
            with pytest.raises(InvalidNamespaceError):
                call()


# ---------------------------------------------------------------------- write validation
class TestWriteValidation:
    def test_duplicate_in_one_call_raises_and_writes_nothing(self, fake_store, ns):
        turns = make_turns(ns, ["one", "two"]) + make_turns(ns, ["again"])  # t0 twice
        with pytest.raises(DuplicateTurnError, match="t0"):
            fake_store.add_turns(turns)
        assert fake_store.count(ns) == 0
        assert not fake_store.has_namespace(ns)

    def test_duplicate_across_calls_leaves_store_unchanged(self, filled):
        store, ns = filled
        before = snapshot(store, ns)
        new = make_turns(ns, ["a brand new puppy kitchen turn"], id_prefix="new")
        dup = make_turns(ns, ["a replacement text for t2"])[0].model_copy(update={"id": "t2"})
        with pytest.raises(DuplicateTurnError, match="t2"):
            store.add_turns([*new, dup])
        assert snapshot(store, ns) == before
        assert store.get_turns(ns, ["new0"]) == []

    def test_duplicate_is_detected_by_a_fresh_store_instance(self, filled, fake_embeddings):
        store, ns = filled
        other = TurnStore(CogMemConfig.preset("ephemeral"), embeddings=fake_embeddings, client=store.client)
        with pytest.raises(DuplicateTurnError):
            other.add_turns(make_turns(ns, ["t0 again"]))
        assert other.count(ns) == len(TEXTS)

    def test_duplicate_in_one_namespace_blocks_all_namespaces(self, filled, ns_factory):
        store, ns = filled
        other = ns_factory("other")
        with pytest.raises(DuplicateTurnError):
            store.add_turns(make_turns(other, ["fresh text"]) + make_turns(ns, ["dup"]))
        assert not store.has_namespace(other)
        assert store.count(ns) == len(TEXTS)

    def test_same_id_in_different_namespaces_is_fine(self, fake_store, ns_factory):
        a, b = ns_factory("a"), ns_factory("b")
        assert fake_store.add_turns(make_turns(a, ["x"]) + make_turns(b, ["y"])) == ["t0", "t0"]
        assert fake_store.count(a) == fake_store.count(b) == 1

    @pytest.mark.parametrize("bad_item", [{"id": "t9", "text": "dict"}, "a string", None, 42])
    def test_non_turn_item_raises_and_writes_nothing(self, fake_store, ns, bad_item):
        good = make_turns(ns, ["a good turn"])
        with pytest.raises(InvalidInputError, match="item 1"):
            fake_store.add_turns([*good, bad_item])
        assert fake_store.count(ns) == 0
        assert not fake_store.has_namespace(ns)

    @pytest.mark.parametrize("bad", ["a string", b"bytes", 42, None])
    def test_non_list_raises(self, fake_store, bad):
        with pytest.raises(InvalidInputError):
            fake_store.add_turns(bad)

    def test_embedder_failure_writes_nothing(self, ns):
        class Broken(FakeEmbeddings):
            def embed_documents(self, texts):
                raise RuntimeError("model exploded")

        store = TurnStore(CogMemConfig.preset("ephemeral"), embeddings=Broken())
        with pytest.raises(RuntimeError, match="exploded"):
            store.add_turns(make_turns(ns, TEXTS))
        assert not store.has_namespace(ns)


# ---------------------------------------------------------------------- query validation
class TestQueryValidation:
    @pytest.mark.parametrize("query", ["", "   ", "\n\t", None, 42, b"bytes", ["q"], "x" * 20_001])
    def test_bad_query_raises(self, filled, query):
        store, ns = filled
        with pytest.raises(InvalidInputError):
            store.search(ns, query)

    @pytest.mark.parametrize("k", [0, -1, True, 1.5, "3", None])
    def test_bad_k_raises(self, filled, k):
        store, ns = filled
        with pytest.raises(InvalidInputError, match="k="):
            store.search(ns, "puppy", k=k)

    def test_bad_mode_and_fusion_raise(self, filled):
        store, ns = filled
        with pytest.raises(InvalidInputError, match="mode"):
            store.search(ns, "puppy", mode="sparse")
        with pytest.raises(InvalidInputError, match="fusion"):
            store.search(ns, "puppy", fusion="max")

    def test_unknown_namespace_raises(self, fake_store, ns):
        with pytest.raises(UnknownNamespaceError, match=ns) as info:
            fake_store.search(ns, "puppy")
        assert isinstance(info.value, LookupError) and isinstance(info.value, ValueError)

    def test_query_without_known_words(self, filled):
        store, ns = filled
        hits = store.search(ns, "???", k=2)
        assert len(hits) == 2
        assert all(h.lexical_score == 0 for h in hits)


# ---------------------------------------------------------------------- isolation, delete, forget
class TestIsolationDeleteForget:
    def test_namespaces_never_leak(self, fake_store, ns_factory):
        a, b = ns_factory("a"), ns_factory("b")
        shared = ["the puppy Rex likes the kitchen", "Lisbon river walk with the puppy"]
        fake_store.add_turns(make_turns(a, shared, speaker="Ann", id_prefix="a"))
        fake_store.add_turns(make_turns(b, [*shared, "puppy puppy puppy Rex Rex"], speaker="Bob", id_prefix="b"))
        for mode in ("hybrid", "dense", "lexical"):
            hits_a = fake_store.search(a, "puppy Rex kitchen", k=10, mode=mode)
            hits_b = fake_store.search(b, "puppy Rex kitchen", k=10, mode=mode)
            assert {h.turn.namespace for h in hits_a} == {a}
            assert {h.turn.id for h in hits_a} == {"a0", "a1"}
            assert {h.turn.namespace for h in hits_b} == {b}
            assert len(hits_b) == 3

    def test_delete_turns_removes_from_search_and_bm25(self, filled):
        store, ns = filled
        assert store.delete_turns(ns, ["t0", "t0", "missing"]) == 1
        assert store.count(ns) == len(TEXTS) - 1
        assert store.get_turns(ns, ["t0"]) == []
        for mode in ("hybrid", "dense", "lexical"):
            assert all(h.turn.id != "t0" for h in store.search(ns, "puppy Rex adopted", k=10, mode=mode))
        assert store.search(ns, "puppy Rex adopted", k=1, mode="lexical")[0].lexical_score == 0
        assert "t0" not in store._spaces.lexical_index(ns)

    def test_deleted_id_can_be_added_again(self, filled):
        store, ns = filled
        store.delete_turns(ns, ["t0"])
        store.add_turns(make_turns(ns, ["A kitten called Tom"]))
        assert store.search(ns, "kitten Tom", k=1)[0].turn.text == "A kitten called Tom"

    def test_delete_everything_then_search_is_empty(self, filled):
        store, ns = filled
        assert store.delete_turns(ns, [f"t{i}" for i in range(len(TEXTS))]) == len(TEXTS)
        assert store.count(ns) == 0
        assert store.search(ns, "puppy", k=3) == []

    def test_delete_from_unknown_namespace(self, fake_store, ns):
        assert fake_store.delete_turns(ns, ["t0"]) == 0

    @pytest.mark.parametrize("ids", ["t0", [1, 2], [None]])
    def test_delete_with_bad_ids_raises(self, filled, ids):
        store, ns = filled
        with pytest.raises(InvalidInputError):
            store.delete_turns(ns, ids)
        assert store.count(ns) == len(TEXTS)

    def test_forget_namespace(self, filled, ns_factory):
        store, ns = filled
        keep = ns_factory("keep")
        store.add_turns(make_turns(keep, TEXTS))
        assert store.forget_namespace(ns) is True
        with pytest.raises(UnknownNamespaceError):
            store.search(ns, "puppy")
        assert store.count(ns) == 0
        assert not store.has_namespace(ns)
        assert ns not in store.namespaces()
        assert store.forget_namespace(ns) is False
        assert store.search(keep, "puppy Rex", k=1)[0].turn.id == "t0"

    def test_forgotten_namespace_can_be_reused(self, filled):
        store, ns = filled
        store.forget_namespace(ns)
        store.add_turns(make_turns(ns, ["A kitten called Tom"]))
        assert store.count(ns) == 1
        assert store.search(ns, "puppy Rex", k=5)[0].turn.text == "A kitten called Tom"

    def test_forget_unknown_namespace(self, fake_store, ns):
        assert fake_store.forget_namespace(ns) is False


# ---------------------------------------------------------------------- persistence
def files_containing(root: Path, needle: bytes) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes())


def lexical_logs(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "lexical").glob("*.jsonl"))


class TestPersistent:
    def test_reopen_keeps_turns_and_search(self, persistent_store_factory, ns):
        ist = timezone(timedelta(hours=5, minutes=30))
        turns = make_turns(ns, TEXTS, start=datetime(2024, 3, 1, 9, 15, tzinfo=ist),
                           metadata={"source": "chat", "n": 3, "w": 0.25, "flag": True})
        store = persistent_store_factory()
        store.add_turns(turns)
        before = [(h.turn.id, round(h.score, 5)) for h in store.search(ns, "kitchen blue", k=5)]
        del store

        again = persistent_store_factory()
        got = again.get_turns(ns)
        assert got == turns
        for g, t in zip(got, turns, strict=True):
            assert g.model_dump() == t.model_dump()
            assert g.timestamp.utcoffset() == timedelta(hours=5, minutes=30)
            assert type(g.metadata["n"]) is int and type(g.metadata["flag"]) is bool
        assert ns in again.namespaces()
        assert [(h.turn.id, round(h.score, 5)) for h in again.search(ns, "kitchen blue", k=5)] == before
        assert again.search(ns, "adopting puppies", k=1, mode="lexical")[0].turn.id == "t0"

    def test_order_is_the_same_after_reopen(self, persistent_store_factory, ns):
        store = persistent_store_factory()
        ts = datetime(2024, 1, 1, tzinfo=UTC)
        for pos in (5, 1, 3, 0):
            store.add_turns([make_turn(id=f"p{pos}", namespace=ns, speaker="Ann", text="same words here",
                                       timestamp=ts + timedelta(minutes=pos), position=pos)])
        live = [(h.turn.id, h.score) for h in store.search(ns, "same words", k=4)]
        assert [t.id for t in store.get_turns(ns)] == ["p0", "p1", "p3", "p5"]
        assert [i for i, _ in live] == ["p0", "p1", "p3", "p5"]  # ties keep chronological order
        again = persistent_store_factory()
        assert again.get_turns(ns) == store.get_turns(ns)
        assert [h.turn.id for h in again.search(ns, "same words", k=4)] == [i for i, _ in live]

    def test_reopen_then_duplicate_is_rejected(self, persistent_store_factory, ns):
        persistent_store_factory().add_turns(make_turns(ns, TEXTS))
        again = persistent_store_factory()
        with pytest.raises(DuplicateTurnError):
            again.add_turns(make_turns(ns, ["again"]))
        assert again.count(ns) == len(TEXTS)

    def test_ephemeral_store_writes_no_files(self, tmp_path, ns, fake_embeddings):
        store = TurnStore(CogMemConfig.preset("ephemeral", data_dir=tmp_path), embeddings=fake_embeddings)
        store.add_turns(make_turns(ns, TEXTS))
        store.delete_turns(ns, ["t0"])
        store.forget_namespace(ns)
        assert list(tmp_path.iterdir()) == []

    @pytest.mark.parametrize("damage", ["delete", "truncate", "torn"])
    def test_bm25_is_repaired_from_chroma(self, persistent_store_factory, tmp_path, ns, damage):
        store = persistent_store_factory()
        store.add_turns(make_turns(ns, TEXTS))
        (log,) = lexical_logs(tmp_path)
        del store
        if damage == "delete":
            log.unlink()
        elif damage == "truncate":
            log.write_bytes(b"")
        else:  # keep the first line, tear the second
            lines = log.read_bytes().splitlines(keepends=True)
            log.write_bytes(lines[0] + lines[1][:10])

        again = persistent_store_factory()
        for query, expected in [("adopting puppies", "t0"), ("allergic peanuts", "t4"), ("painted kitchen", "t2")]:
            hit = again.search(ns, query, k=1, mode="lexical")[0]
            assert hit.turn.id == expected and hit.lexical_score > 0
        ids = [json.loads(line)["id"] for line in log.read_text(encoding="utf-8").splitlines()]
        assert sorted(ids) == sorted(f"t{i}" for i in range(len(TEXTS)))

    def test_a_reader_waits_for_a_half_done_write_of_another_store(self, persistent_store_factory, tmp_path, ns, monkeypatch):
        """Regression (a CI failure): a second store on the data dir read Chroma while the first had
        written the turn there but not yet to the BM25 log, "repaired" the log with it, and the
        first store's own write then failed as a duplicate. Readers now load under the dir lock."""
        import threading

        from langmem_cog.lexical import LexicalIndex

        writer, reader = persistent_store_factory(), persistent_store_factory()
        writer.add_turns(make_turns(ns, TEXTS[:2]))
        assert reader.has_namespace(ns)  # in step with the data dir; its cache is not loaded yet
        entered, go = threading.Event(), threading.Event()
        original = LexicalIndex.add

        def slow_add(self, ids, texts, **kw):
            if "late" in ids:
                entered.set()
                assert go.wait(30)
            return original(self, ids, texts, **kw)

        monkeypatch.setattr(LexicalIndex, "add", slow_add)
        (late,) = make_turns(ns, ["a late marathon"], start=datetime(2024, 2, 1, tzinfo=UTC), id_prefix="late")
        late = late.model_copy(update={"id": "late"})
        errors: list[BaseException] = []
        seen: list[list[str]] = []

        def run(fn):
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                errors.append(exc)

        w = threading.Thread(target=run, args=(lambda: writer.add_turns([late]),))
        w.start()
        assert entered.wait(30)  # the turn is in Chroma, not yet in the BM25 log
        r = threading.Thread(target=run, args=(lambda: seen.append([t.id for t in reader.get_turns(ns)]),))
        r.start()
        r.join(1.0)
        assert r.is_alive()  # blocked on the writer's directory lock, not reading a half-done write
        go.set()
        w.join(30)
        r.join(30)
        assert not errors, errors
        assert [sorted(ids) for ids in seen] == [["late", "t0", "t1"]]
        (log,) = lexical_logs(tmp_path)
        ids = [json.loads(line)["id"] for line in log.read_text(encoding="utf-8").splitlines()]
        assert sorted(ids) == ["late", "t0", "t1"]  # each once

    def test_a_reader_that_cannot_lock_repairs_bm25_in_memory_only(self, persistent_store_factory, tmp_path, ns):
        import threading

        persistent_store_factory().add_turns(make_turns(ns, TEXTS))
        (log,) = lexical_logs(tmp_path)
        log.unlink()
        again = persistent_store_factory()
        assert again.has_namespace(ns)
        held, release = threading.Event(), threading.Event()

        def hold_write_lock() -> None:  # a writer thread of the same store, busy elsewhere
            with again._access.write_lock:
                held.set()
                release.wait(30)

        t = threading.Thread(target=hold_write_lock)
        t.start()
        assert held.wait(30)
        try:
            hit = again.search(ns, "allergic peanuts", k=1, mode="lexical")[0]
            assert hit.turn.id == "t4" and hit.lexical_score > 0
            assert not log.exists()  # left to a store that holds the lock
        finally:
            release.set()
            t.join(30)
        persistent_store_factory().count(ns)  # loads under the lock: repairs the file
        assert sorted(json.loads(line)["id"] for line in log.read_text(encoding="utf-8").splitlines()) == sorted(
            f"t{i}" for i in range(len(TEXTS))
        )

    def test_bm25_entries_missing_from_chroma_are_dropped(self, persistent_store_factory, tmp_path, ns):
        store = persistent_store_factory()
        store.add_turns(make_turns(ns, TEXTS))
        (log,) = lexical_logs(tmp_path)
        del store
        with log.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"op": "add", "id": "ghost", "tokens": ["ghostword"]}) + "\n")
        again = persistent_store_factory()
        assert again.count(ns) == len(TEXTS)
        assert all(h.turn.id != "ghost" for h in again.search(ns, "ghostword", k=10, mode="lexical"))
        assert b"ghost" not in log.read_bytes()

    def test_delete_turns_removes_text_from_the_bm25_log(self, persistent_store_factory, tmp_path, ns):
        canary = "zqxdeletecanaryword"
        store = persistent_store_factory()
        store.add_turns(make_turns(ns, [*TEXTS, f"my secret word is {canary}"]))
        (log,) = lexical_logs(tmp_path)
        assert canary.encode() in log.read_bytes()
        store.delete_turns(ns, [f"t{len(TEXTS)}"])
        assert canary.encode() not in log.read_bytes()
        again = persistent_store_factory()
        assert again.count(ns) == len(TEXTS)
        assert again.search(ns, canary, k=1, mode="lexical")[0].lexical_score == 0

    def test_forget_namespace_removes_bm25_log_and_collection(self, persistent_store_factory, tmp_path, ns):
        canary = "zqxforgetcanaryword"
        store = persistent_store_factory()
        store.add_turns(make_turns(ns, [*TEXTS, f"my secret word is {canary}"]))
        assert canary.encode() in lexical_logs(tmp_path)[0].read_bytes()
        assert store.forget_namespace(ns)
        assert lexical_logs(tmp_path) == []
        again = persistent_store_factory()
        assert not again.has_namespace(ns)
        with pytest.raises(UnknownNamespaceError):
            again.search(ns, canary)
        # Nothing outside Chroma's SQLite file holds the text (see the next test for that file).
        leaks = [p for p in files_containing(tmp_path, canary.encode()) if p.name != "chroma.sqlite3"]
        assert leaks == []

    def test_forget_namespace_leaves_no_trace_on_disk(self, persistent_store_factory, tmp_path, ns):
        canary = "zqxforgetcanaryword2"
        store = persistent_store_factory()
        store.add_turns(make_turns(ns, [*TEXTS, f"my secret word is {canary}"]))
        assert files_containing(tmp_path, canary.encode())
        store.forget_namespace(ns)
        del store
        assert files_containing(tmp_path, canary.encode()) == []

    def test_delete_turns_leaves_no_trace_on_disk(self, persistent_store_factory, tmp_path, ns):
        canary = "zqxdeletecanaryword3"
        store = persistent_store_factory()
        turns = make_turns(ns, [*TEXTS, f"my secret word is {canary}"])
        store.add_turns(turns)
        store.delete_turns(ns, [turns[-1].id])
        assert store.count(ns) == len(TEXTS)
        # Chroma's write-ahead log (embeddings_queue) no longer holds the deleted ADD record.
        assert files_containing(tmp_path, canary.encode()) == []
        assert store.search(ns, TEXTS[0], k=1)  # the store still works after the VACUUM
        # Reopened (the HNSW segment replays the log): the turn stays deleted on both search paths.
        again = persistent_store_factory(search=SearchSettings(exact_search_max=0))
        assert again.count(ns) == len(TEXTS)
        hits = again.search(ns, f"my secret word is {canary}", k=len(TEXTS) + 1)
        assert turns[-1].id not in {h.turn.id for h in hits} and len(hits) == len(TEXTS)


def test_fake_embedder_geometry():
    emb = FakeEmbeddings()
    v = np.asarray(emb.embed_documents(["Puppy REX", "puppy rex", "kitchen"]))
    assert v.shape == (3, 256)
    assert np.linalg.norm(v, axis=1) == pytest.approx([1.0, 1.0, 1.0])
    assert float(v[0] @ v[1]) == pytest.approx(1.0)
    assert float(v[0] @ v[2]) < 0.5


class TestEphemeralStoresAreSeparate:
    """Chroma's in-memory clients share one system per process; each ephemeral store must still be its own."""

    NS = "shared-user"  # deliberately the same fixed namespace in every store of these tests

    def test_two_ephemeral_stores_with_the_same_namespace_and_ids(self):
        a = TurnStore(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())
        b = TurnStore(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())
        assert a.add_turns(make_turns(self.NS, TEXTS[:3])) == ["t0", "t1", "t2"]
        assert b.add_turns(make_turns(self.NS, TEXTS[3:])) == ["t0", "t1"]  # same ids: no DuplicateTurnError
        assert (a.count(self.NS), b.count(self.NS)) == (3, 2)
        assert a.namespaces() == b.namespaces() == [self.NS]
        assert [t.text for t in b.get_turns(self.NS)] == TEXTS[3:]
        assert a.search(self.NS, "puppy Rex", k=1)[0].turn.text == TEXTS[0]
        assert b.search(self.NS, "puppy Rex", k=5)[0].turn.text in TEXTS[3:]

        assert a.forget_namespace(self.NS)
        assert a.count(self.NS) == 0 and not a.has_namespace(self.NS)
        assert b.count(self.NS) == 2 and [t.text for t in b.get_turns(self.NS)] == TEXTS[3:]
        assert b.delete_turns(self.NS, ["t0"]) == 1
        assert b.count(self.NS) == 1 and a.count(self.NS) == 0

    def test_two_ephemeral_memories_with_the_same_namespace_and_ids(self):
        one = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())
        two = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())
        one.add_turns(make_turns(self.NS, TEXTS[:2], speaker="Ann"))
        two.add_turns(make_turns(self.NS, TEXTS[:2], speaker="Ann"))
        assert one.store.count(self.NS) == two.store.count(self.NS) == 2
        assert one.forget(self.NS)
        assert one.store.count(self.NS) == 0
        assert two.store.count(self.NS) == 2

    def test_a_collected_ephemeral_store_frees_its_database(self):
        import chromadb
        from chromadb.config import Settings

        admin = chromadb.AdminClient(Settings(anonymized_telemetry=False, allow_reset=False))
        store = TurnStore(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())
        store.add_turns(make_turns(self.NS, TEXTS[:1]))
        database = store.client.database
        assert database in {d["name"] for d in admin.list_databases()}
        del store
        gc.collect()
        assert database not in {d["name"] for d in admin.list_databases()}


_REOPEN_WORKER = """
import sys, warnings
warnings.simplefilter("always")
sys.path.insert(0, sys.argv[2])
from fakes import FakeEmbeddings, make_turns
from langmem_cog.config import CogMemConfig
from langmem_cog.store import TurnStore
store = TurnStore(CogMemConfig.preset("default", data_dir=sys.argv[1]), embeddings=FakeEmbeddings())
store.add_turns(make_turns("reopened", ["a second process adds a turn"], id_prefix="second"))
print(store.count("reopened"), store.search("reopened", "second process", k=1)[0].turn.id)
"""


def test_reopening_a_persistent_store_in_a_new_process_does_not_warn(tmp_path):
    first = TurnStore(CogMemConfig.preset("default", data_dir=tmp_path), embeddings=FakeEmbeddings())
    first.add_turns(make_turns("reopened", TEXTS[:2]))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.run([sys.executable, "-c", _REOPEN_WORKER, str(tmp_path), str(ROOT / "tests")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["3", "second0"]
    assert "Could not reconstruct embedding function" not in proc.stderr
    assert "embedding function" not in proc.stderr.lower(), proc.stderr[-3000:]


def test_chroma_rebuilds_our_embedding_function_without_an_embedder():
    from chromadb.utils.embedding_functions import known_embedding_functions

    TurnStore(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())
    assert known_embedding_functions["langmem_cog"] is ChromaEmbeddingFunction
    rebuilt = ChromaEmbeddingFunction.build_from_config(ChromaEmbeddingFunction(FakeEmbeddings()).get_config())
    assert rebuilt.name() == "langmem_cog" and not rebuilt.is_legacy()
    with pytest.raises(StoreError, match="without langmem-cog's embedder"):
        rebuilt(["never embedded by another model"])


class TestValidationGaps:
    """Issue 21, defect 6 (part): inputs that were accepted, or raised raw exceptions."""

    @pytest.mark.parametrize("weight", ["abc", float("nan"), float("inf"), -1.0, True, [1.0]])
    def test_a_bad_lexical_weight_is_named(self, filled, weight) -> None:
        store, ns = filled
        with pytest.raises(InvalidInputError, match="lexical_weight"):
            store.search(ns, "puppy", lexical_weight=weight)
        assert store.search(ns, "puppy", lexical_weight=0)  # zero is allowed: dense only

    @pytest.mark.parametrize("ids", [5, "t1", [1, 2], b"t1"])
    def test_get_turns_takes_a_list_of_ids(self, filled, ids) -> None:
        store, ns = filled
        with pytest.raises(InvalidInputError, match="get_turns"):
            store.get_turns(ns, ids)
        assert [t.id for t in store.get_turns(ns, ("t1",))] == ["t1"]

    # Values Chroma does not read back as written (issue 21, defect 6): refused before anything is stored.
    @pytest.mark.parametrize("position", [10**30, 2**63])
    def test_a_position_outside_signed_64_bit_is_refused(self, ns, position) -> None:
        fields = {"id": "t0", "namespace": ns, "speaker": "Ann", "text": "one",
                  "timestamp": datetime(2024, 1, 1, tzinfo=UTC), "position": position}
        with pytest.raises(InvalidInputError, match=r"position=.*64-bit.*use a smaller position"):
            make_turn(**fields)
        with pytest.raises(ValueError, match=r"position=.*64-bit"):  # the model itself refuses it too
            Turn(**fields)

    @pytest.mark.parametrize(
        ("value", "fix"),
        [(2**70, "store it as a string"), (-(2**70), "store it as a string"), (2**63, "store it as a string"),
         (float("nan"), "not a finite number"), (float("inf"), "not a finite number"),
         (float("-inf"), "not a finite number")],
    )
    def test_metadata_values_chroma_would_change_are_refused(self, ns, value, fix) -> None:
        with pytest.raises(InvalidInputError, match=rf"metadata\['score'\].*{fix}"):
            make_turns(ns, ["one"], metadata={"score": value, "ok": 1})

    def test_a_turn_that_skipped_validation_is_refused_by_add_turns(self, filled) -> None:
        store, ns = filled
        before = snapshot(store, ns)
        (good,) = make_turns(ns, ["a new turn"], id_prefix="new")
        for update in ({"position": 10**30}, {"metadata": {"score": float("nan")}}, {"metadata": {"n": 2**64}}):
            with pytest.raises(InvalidInputError, match="cannot be stored unchanged"):
                store.add_turns([good, good.model_copy(update={**update, "id": "bad"})])  # model_copy skips validators
        assert snapshot(store, ns) == before
        naive = good.timestamp.replace(tzinfo=None)
        for update in ({"timestamp": naive}, {"text": "   "}, {"speaker": "!!!"}, {"position": -5}, {"id": "a\nb"}):
            with pytest.raises(InvalidInputError, match="is invalid: .*make_turn"):
                store.add_turns([good, good.model_copy(update={"id": "bad", **update})])
        assert snapshot(store, ns) == before

    def test_extreme_storable_values_read_back_unchanged_after_a_reopen(self, persistent_store_factory, ns) -> None:
        meta = {"big": 2**63 - 1, "small": -(2**63), "flag": True, "off": False, "x": 1e308, "tiny": -5e-324, "s": "nan"}
        turns = make_turns(ns, ["one", "two"], metadata=meta)
        turns[1] = make_turn(**{**turns[1].model_dump(), "position": 2**63 - 1})
        persistent_store_factory().add_turns(turns)
        gc.collect()
        back = persistent_store_factory().get_turns(ns)
        assert back == turns
        assert {k: type(v) for k, v in back[0].metadata.items()} == {k: type(v) for k, v in meta.items()}

    # An embedder of another dimension than the stored vectors (issue 21, defect 6).
    @pytest.mark.parametrize("emptied", [False, True])
    def test_an_embedder_of_another_dimension_is_named(self, tmp_path, ns, ns_factory, emptied) -> None:
        from langchain_core.embeddings import DeterministicFakeEmbedding

        from langmem_cog.storage.identity import DATA_DIR_MANIFEST

        cfg = CogMemConfig.preset("default", data_dir=tmp_path)
        first = TurnStore(cfg, embeddings=FakeEmbeddings())  # 256-d
        first.add_turns(make_turns(ns, TEXTS))
        if emptied:  # every turn deleted: the collection still holds 256-d vectors' dimension
            first.delete_turns(ns, [f"t{i}" for i in range(len(TEXTS))])
        count = first.count(ns)
        with pytest.raises(ConfigError, match="written with the embedder fakes.FakeEmbeddings.*DeterministicFakeEmbedding"):
            TurnStore(cfg, embeddings=DeterministicFakeEmbedding(size=8))  # the data directory says which wrote it
        (tmp_path / DATA_DIR_MANIFEST).unlink()  # a directory written before it said so: the vectors tell
        other = TurnStore(cfg, embeddings=DeterministicFakeEmbedding(size=8))
        fresh = ns_factory("fresh")
        with pytest.raises(ConfigError, match=r"built with 256-dimensional vectors.*gives 8-dimensional.*"
                                              r"same CogMemConfig.embedder.*re-ingest") as info:
            other.add_turns([*make_turns(fresh, ["a turn of a new namespace"]), *make_turns(ns, ["x y"], id_prefix="n")])
        assert str(tmp_path) in str(info.value)
        assert not other.has_namespace(fresh) and other.count(ns) == count  # nothing of the call was stored
        if not emptied:
            for mode in ("hybrid", "dense"):
                with pytest.raises(ConfigError, match="256-dimensional.*8-dimensional"):
                    other.search(ns, "puppy", mode=mode)
            with pytest.raises(ConfigError, match="256-dimensional.*8-dimensional"):
                other.pool_scores(ns, "puppy", context=True)
        (tmp_path / DATA_DIR_MANIFEST).unlink()  # it recorded the wrong embedder of its first open
        assert TurnStore(cfg, embeddings=FakeEmbeddings()).count(ns) == count  # the right embedder still works


def test_dense_scores_of_a_few_turns_are_the_pools_cosines(fake_store, ns):
    fake_store.add_turns(make_turns(ns, TEXTS))
    qv = fake_store.embed_query("camping trip with the kids")
    pool = fake_store.pool_scores(ns, "camping trip with the kids", query_vector=qv)
    want = dict(zip(pool.ids, pool.dense, strict=True))
    got = fake_store.dense_scores(ns, ["t3", "t0", "gone", "t3"], qv)
    assert list(got) == ["t3", "t0"]  # each id once, in order; an id the namespace lacks is skipped
    assert got == pytest.approx({i: want[i] for i in ("t3", "t0")}, abs=1e-6)
    assert fake_store.dense_scores(ns, [], qv) == {}
    with pytest.raises(UnknownNamespaceError):
        fake_store.dense_scores(ns + "-none", ["t0"], qv)
    with pytest.raises(ConfigError, match="dimension"):
        fake_store.dense_scores(ns, ["t0"], np.zeros(3))


# --------------------------------------------------------------------------- Chroma's transient drift
DRIFT = "Error executing plan: Internal error: Error finding id"


def _drifting(monkeypatch: pytest.MonkeyPatch, method: str, failures: int) -> list[int]:
    """Make ``Collection.<method>`` fail ``failures`` times with Chroma's drift error, then work."""
    from chromadb.api.models.Collection import Collection
    from chromadb.errors import InternalError

    from langmem_cog.storage import server

    monkeypatch.setattr(server, "DRIFT_DELAYS", (0.0, 0.0, 0.0, 0.0))
    real, calls = getattr(Collection, method), [0]

    def flaky(self, *args, **kwargs):
        calls[0] += 1
        if calls[0] <= failures:
            raise InternalError(DRIFT)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Collection, method, flaky)
    return calls


def test_a_read_that_meets_chromas_drift_is_tried_again(
    fake_embeddings: FakeEmbeddings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A concurrent write can make one Chroma read fail with ``Error finding id``: the read is retried."""
    store = TurnStore(CogMemConfig.preset("ephemeral", search=SearchSettings(exact_search_max=0)), embeddings=fake_embeddings)
    store.add_turns(make_turns("drift", ["I adopted a puppy called Rex", "My sister paints sunsets"]))
    want = [h.turn.id for h in store.search("drift", "puppy", k=2)]
    calls = _drifting(monkeypatch, "query", failures=2)
    assert [h.turn.id for h in store.search("drift", "puppy", k=2)] == want
    assert calls[0] == 3
    assert sum("Error finding id" in r.getMessage() for r in caplog.records if r.levelname == "WARNING") == 2

    col = store._spaces.collection("drift", create=False)
    calls = _drifting(monkeypatch, "get", failures=1)
    from langmem_cog.storage.sync import fetch_turns

    turns, emb = fetch_turns("drift", col, sorted(want), gone=store._spaces.gone)  # the server mode's read by id
    assert sorted(t.id for t in turns) == sorted(want) and emb.shape[0] == 2 and calls[0] == 2


def test_a_drift_that_does_not_pass_and_other_errors_are_raised(
    fake_embeddings: FakeEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chromadb.errors import InternalError

    store = TurnStore(CogMemConfig.preset("ephemeral", search=SearchSettings(exact_search_max=0)), embeddings=fake_embeddings)
    store.add_turns(make_turns("drift", ["I adopted a puppy called Rex"]))
    calls = _drifting(monkeypatch, "query", failures=99)
    with pytest.raises(InternalError, match="Error finding id"):
        store.search("drift", "puppy", k=1)
    assert calls[0] == 5  # the first try and one after each of the four delays

    from chromadb.api.models.Collection import Collection

    def broken(self, *args, **kwargs):
        calls[0] += 1
        raise InternalError("Error in compaction")

    calls[0] = 0
    monkeypatch.setattr(Collection, "query", broken)
    with pytest.raises(InternalError, match="compaction"):
        store.search("drift", "puppy", k=1)
    assert calls[0] == 1  # not a drift: raised at once
