"""Context vectors and context BM25: each turn with the previous turns of its session (a derived index)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from fakes import FakeEmbeddings, make_turns

from langmem_cog.config import CogMemConfig
from langmem_cog.context import CONTEXT_TURNS, MAX_CHUNKS, ContextIndex, context_texts
from langmem_cog.rank.features import FEATURE_NAMES, CandidatePool, candidate_features
from langmem_cog.records import make_turn
from langmem_cog.store import TurnStore

TS = datetime(2024, 1, 1, tzinfo=UTC)
TEXTS = ["Did you go camping with the kids", "Yes last week", "The lake was cold", "Pottery class on Friday"]


def _turn(i: int, text: str, session: str = "1", conversation: str = "c1"):
    return make_turn(id=f"t{i}", namespace="ns", speaker="Ann", text=text, position=i, timestamp=TS,
                     session_id=session, conversation_id=conversation)


class Counting:
    """The fake embedder, recording each batch of texts."""

    def __init__(self) -> None:
        self.fake = FakeEmbeddings()
        self.batches: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return np.stack([self.fake.vector(t) for t in texts])


class TestContextTexts:
    def test_previous_turn_of_the_same_session_is_prepended(self):
        turns = [_turn(0, "a"), _turn(1, "b"), _turn(2, "c", session="2"), _turn(3, "d", session="2")]
        assert context_texts(turns) == ["Ann: a", "Ann: a\nAnn: b", "Ann: c", "Ann: c\nAnn: d"]

    def test_at_most_context_turns_previous_turns_oldest_first(self):
        assert CONTEXT_TURNS == 2
        turns = [_turn(i, x) for i, x in enumerate("abcd")]
        assert context_texts(turns) == ["Ann: a", "Ann: a\nAnn: b", "Ann: a\nAnn: b\nAnn: c", "Ann: b\nAnn: c\nAnn: d"]

    def test_the_window_stops_at_the_session_start(self):
        turns = [_turn(0, "a"), _turn(1, "b", session="2"), _turn(2, "c", session="2")]
        assert context_texts(turns) == ["Ann: a", "Ann: b", "Ann: b\nAnn: c"]

    def test_no_context_across_conversations(self):
        turns = [_turn(0, "a"), _turn(1, "b", conversation="c2")]
        assert context_texts(turns) == ["Ann: a", "Ann: b"]

    def test_empty(self):
        assert context_texts([]) == []


class TestContextIndex:
    def test_rows_are_the_embeddings_of_the_context_texts(self):
        embed = Counting()
        turns = [_turn(i, x) for i, x in enumerate(TEXTS)]
        M = ContextIndex(embed).matrix(turns)
        expected = np.stack([embed.fake.vector(x) for x in context_texts(turns)])
        assert M.shape == (4, expected.shape[1]) and M.dtype == np.float32
        np.testing.assert_allclose(M, expected, rtol=1e-6)

    def test_only_new_or_changed_rows_are_embedded(self):
        embed = Counting()
        idx = ContextIndex(embed)
        turns = [_turn(i, x) for i, x in enumerate(TEXTS)]
        idx.matrix(turns[:2])
        idx.matrix(turns)  # two new turns: only they are embedded
        assert [len(b) for b in embed.batches] == [2, 2]
        idx.matrix(turns)
        assert len(embed.batches) == 2  # nothing changed: no model call
        # Deleting t1 changes the previous turns of t2 and t3: only they are re-embedded; t1's row is dropped.
        kept = [turns[0], turns[2], turns[3]]
        M = idx.matrix(kept)
        assert embed.batches[-1] == ["Ann: Did you go camping with the kids\nAnn: The lake was cold",
                                     "Ann: Did you go camping with the kids\nAnn: The lake was cold\nAnn: Pottery class on Friday"]
        np.testing.assert_allclose(M[1:], np.stack([embed.fake.vector(x) for x in embed.batches[-1]]), rtol=1e-6)
        assert set(idx._load()) == {"t0", "t2", "t3"}

    def test_persisted_rows_reload_without_the_model(self, tmp_path):
        path = tmp_path / "ctx" / "ns"
        turns = [_turn(i, x) for i, x in enumerate(TEXTS)]
        first = ContextIndex(Counting(), path).matrix(turns)
        assert path.exists()
        embed = Counting()
        again = ContextIndex(embed, path).matrix(turns)
        assert embed.batches == []
        np.testing.assert_array_equal(first, again)

    def test_an_unreadable_file_is_recomputed(self, tmp_path, caplog):
        path = tmp_path / "ns"
        path.mkdir()
        (path / "00000001.npz").write_bytes(b"not a zip")
        embed = Counting()
        M = ContextIndex(embed, path).matrix([_turn(0, "a"), _turn(1, "b")])
        assert M.shape[0] == 2 and len(embed.batches) == 1
        assert "unreadable" in caplog.text
        [chunk] = path.glob("*.npz")  # the bad file replaced by the recomputed rows
        assert np.load(chunk)["ids"].tolist() == ["t0", "t1"]

    def test_rows_computed_without_the_lock_are_written_by_the_next_call_that_may(self, tmp_path):
        path = tmp_path / "ns"
        turns = [_turn(i, x) for i, x in enumerate(TEXTS)]
        idx = ContextIndex(Counting(), path)
        idx.matrix(turns[:3], persist=False)
        assert not path.exists()  # a reader without the data directory lock writes nothing
        idx.matrix(turns[1:], persist=False)  # t0 deleted meanwhile
        assert not path.exists()
        M = idx.matrix(turns[1:], persist=False)
        idx.flush()
        [chunk] = path.glob("*.npz")  # one file: the pending rows and the pending deletion
        assert sorted(np.load(chunk)["ids"].tolist()) == ["t1", "t2", "t3"]
        embed = Counting()
        np.testing.assert_array_equal(ContextIndex(embed, path).matrix(turns[1:]), M)
        assert embed.batches == []

    def test_chunk_numbers_follow_every_file_on_disk(self, tmp_path):
        path = tmp_path / "ns"
        turns = [_turn(i, x) for i, x in enumerate(TEXTS)]
        a, b = ContextIndex(Counting(), path), ContextIndex(Counting(), path)
        a.matrix(turns[:2])
        b.matrix(turns[:3])  # another store object: its chunk must not overwrite a's
        a.matrix(turns)
        assert len(list(path.glob("*.npz"))) == 3
        embed = Counting()
        ContextIndex(embed, path).matrix(turns)
        assert embed.batches == []

    def test_chunks_are_appended_then_compacted(self, tmp_path):
        path = tmp_path / "ns"
        turns = [_turn(i, f"turn number {i}") for i in range(40)]
        idx = ContextIndex(Counting(), path)
        for n in range(1, 41):  # one turn added at a time: one small chunk per add, compacted now and then
            M = idx.matrix(turns[:n])
            assert len(list(path.glob("*.npz"))) <= MAX_CHUNKS + 1
        idx.matrix(turns[:10] + turns[11:])  # a deletion: one row dropped, its successor re-embedded
        embed = Counting()
        M = ContextIndex(embed, path).matrix(turns[:10] + turns[11:])
        assert embed.batches == []
        np.testing.assert_array_equal(M, idx.matrix(turns[:10] + turns[11:]))
        assert np.allclose(M[10], Counting().fake.vector("Ann: turn number 8\nAnn: turn number 9\nAnn: turn number 11"))

    def test_forget_removes_the_file(self, tmp_path):
        path = tmp_path / "ns"
        idx = ContextIndex(Counting(), path)
        idx.matrix([_turn(0, "a")])
        idx.forget()
        assert not path.exists()
        assert idx.matrix([]).shape == (0, 0)
        assert idx.lexical_scores("a", ["t0"]).tolist() == [0.0]


class TestContextLexical:
    def test_words_split_between_a_reply_and_its_question_match_together(self):
        turns = [_turn(0, "Did you go camping?"), _turn(1, "Yes, at the lake"), _turn(2, "Pottery on Friday"),
                 _turn(3, "We went hiking at the lake", session="2")]
        idx = ContextIndex(Counting())
        idx.matrix(turns)
        sc = idx.lexical_scores("camping lake", [t.id for t in turns])
        # t1's context holds both words; t3 (another session) only "lake"; t2's window holds both as well.
        assert sc[1] > sc[3] > 0 and sc[0] > 0
        assert int(np.argmax(sc)) in (1, 2)

    def test_follows_deletions_and_reload(self, tmp_path):
        turns = [_turn(0, "Did you go camping?"), _turn(1, "Yes, at the lake"), _turn(2, "It was cold")]
        path = tmp_path / "ns"
        idx = ContextIndex(Counting(), path)
        idx.matrix(turns)
        assert idx.lexical_scores("camping cold", ["t2"])[0] > 0
        idx.matrix([turns[1], turns[2]])  # t0 deleted: "camping" leaves t1's and t2's contexts
        assert idx.lexical_scores("camping", ["t0", "t1", "t2"]).tolist() == [0.0, 0.0, 0.0]
        embed = Counting()
        again = ContextIndex(embed, path)  # reopened: the vectors come from disk, the BM25 side is re-tokenised
        again.matrix([turns[1], turns[2]])
        assert embed.batches == []
        np.testing.assert_allclose(again.lexical_scores("lake cold", ["t1", "t2"]),
                                   idx.lexical_scores("lake cold", ["t1", "t2"]))


class TestStoreContext:
    def test_pool_scores_carry_the_context_cosine(self, fake_store, ns):
        turns = make_turns(ns, TEXTS)
        fake_store.add_turns(turns)
        ps = fake_store.pool_scores(ns, "camping kids trip", context=True)
        fake = FakeEmbeddings()
        q = fake.vector("camping kids trip")
        expected = [float(fake.vector(x) @ q) for x in context_texts(turns)]
        np.testing.assert_allclose(ps.context, expected, rtol=1e-5)
        # "Yes last week" alone shares no word with the question; with its previous turn it does.
        assert ps.dense[1] == pytest.approx(0.0, abs=1e-6) and ps.context[1] > 0.3
        assert ps.lexical[1] == 0.0 and ps.context_lexical[1] > 0.0

    def test_delete_recomputes_the_next_turns_context(self, fake_store, ns):
        fake_store.add_turns(make_turns(ns, TEXTS))
        fake_store.pool_scores(ns, "lake", context=True)
        calls = fake_store.embeddings.calls
        fake_store.delete_turns(ns, ["t1"])
        assert fake_store.embeddings.calls == calls + 2  # t2's and t3's new contexts, embedded at the deletion
        ps = fake_store.pool_scores(ns, "lake cold", context=True)
        fake = FakeEmbeddings()
        want = fake.vector("Ann: Did you go camping with the kids\nAnn: The lake was cold") @ fake.vector("lake cold")
        assert ps.ids == ["t0", "t2", "t3"]
        assert ps.context[1] == pytest.approx(float(want), rel=1e-5)

    def test_built_on_first_use_then_kept_up_to_date(self, fake_store, ns):
        fake_store.add_turns(make_turns(ns, TEXTS[:2]))
        fake_store.search(ns, "camping")
        assert fake_store.pool_scores(ns, "camping").context is None
        assert fake_store.embeddings.calls == 2 + 1  # plain search never embeds contexts
        fake_store.pool_scores(ns, "camping", context=True)
        assert fake_store.embeddings.calls == 3 + 2
        later = [t.model_copy(update={"position": t.position + 2}) for t in make_turns(ns, TEXTS[2:], id_prefix="u")]
        fake_store.add_turns(later)
        assert fake_store.embeddings.calls == 5 + 2 * 2  # each new turn and its context, at the add

    def test_turned_off_by_config(self, ns):
        store = TurnStore(CogMemConfig.preset("ephemeral", context_vectors=False), embeddings=FakeEmbeddings())
        store.add_turns(make_turns(ns, TEXTS))
        ps = store.pool_scores(ns, "camping", context=True)
        assert ps.context is None and ps.context_lexical is None
        assert store.embeddings.calls == len(TEXTS) + 1  # the turns and the query, nothing more

    def test_persistent_store_reopens_without_re_embedding(self, persistent_store_factory, ns):
        first = persistent_store_factory()
        first.add_turns(make_turns(ns, TEXTS[:2]))
        first.pool_scores(ns, "camping", context=True)
        first.add_turns(make_turns(ns, TEXTS[2:], id_prefix="u"))
        before = first.pool_scores(ns, "camping kids", context=True).context
        again = persistent_store_factory()
        after = again.pool_scores(ns, "camping kids", context=True).context
        np.testing.assert_array_equal(before, after)
        assert again.embeddings.calls == 1  # the query only

    def test_deleted_turns_vectors_leave_the_disk(self, persistent_store_factory, ns):
        store = persistent_store_factory()
        for i, text in enumerate(TEXTS):  # one add per turn: several chunk files
            store.add_turns(make_turns(ns, [text], id_prefix=f"a{i}-"))
            store.pool_scores(ns, "camping", context=i == 0)
        store.delete_turns(ns, ["a1-t0"])
        [folder] = (store.data_dir / "context").iterdir()
        stored = [str(i) for chunk in folder.glob("*.npz") for i in np.load(chunk)["ids"]]
        assert sorted(stored) == sorted(t.id for t in store.get_turns(ns)) and "a1-t0" not in stored

    def test_forget_namespace_removes_the_vectors(self, persistent_store_factory, ns):
        store = persistent_store_factory()
        store.add_turns(make_turns(ns, TEXTS))
        store.pool_scores(ns, "camping", context=True)
        [folder] = (store.data_dir / "context").iterdir()
        assert list(folder.glob("*.npz"))
        store.forget_namespace(ns)
        assert not folder.exists()


class TestContextFeatures:
    def test_zero_without_context_scores(self):
        turns = [_turn(i, x) for i, x in enumerate(TEXTS)]
        pool = CandidatePool(turns=turns, dense=np.ones(4), lexical=np.zeros(4))
        X = candidate_features(pool, "camping?")
        assert not X[:, FEATURE_NAMES.index("context_z")].any()
        assert not X[:, FEATURE_NAMES.index("context_rr")].any()
        assert not X[:, FEATURE_NAMES.index("context_lex_z")].any()

    def test_z_scored_and_ranked(self):
        turns = [_turn(i, x) for i, x in enumerate(TEXTS)]
        pool = CandidatePool(turns=turns, dense=np.ones(4), lexical=np.zeros(4), context=np.array([0.1, 0.9, 0.5, 0.1]))
        X = candidate_features(pool, "camping?")
        z = X[:, FEATURE_NAMES.index("context_z")]
        assert z.argmax() == 1 and z.mean() == pytest.approx(0.0, abs=1e-9)
        assert X[:, FEATURE_NAMES.index("context_rr")].tolist() == [1 / 3, 1.0, 1 / 2, 1 / 4]

    def test_context_bm25_z_scored_and_ranked(self):
        turns = [_turn(i, x) for i, x in enumerate(TEXTS)]
        pool = CandidatePool(turns=turns, dense=np.ones(4), lexical=np.zeros(4),
                             context_lexical=np.array([0.0, 2.0, 1.0, 0.0]))
        X = candidate_features(pool, "camping?")
        assert X[:, FEATURE_NAMES.index("context_lex_z")].argmax() == 1
        assert X[:, FEATURE_NAMES.index("context_lex_rr")].tolist() == [1 / 3, 1.0, 1 / 2, 1 / 4]
        assert not X[:, FEATURE_NAMES.index("context_z")].any()

    def test_misaligned_context_is_refused(self):
        from langmem_cog.errors import InvalidInputError

        turns = [_turn(i, x) for i, x in enumerate(TEXTS)]
        with pytest.raises(InvalidInputError, match="context"):
            CandidatePool(turns=turns, dense=np.ones(4), lexical=np.zeros(4), context=np.zeros(3))
        with pytest.raises(InvalidInputError, match="context BM25"):
            CandidatePool(turns=turns, dense=np.ones(4), lexical=np.zeros(4), context_lexical=np.zeros(5))


class TestCascadeAsksOnlyWhenUsed:
    def _cascade(self, fake_store, ns, weight):
        from langmem_cog.rank.cascade import Cascade
        from langmem_cog.rank.scorer import FusionScorer

        fake_store.add_turns(make_turns(ns, TEXTS))
        w = FusionScorer.untrained().weights.copy()
        w[FEATURE_NAMES.index("context_z")] = weight
        return Cascade(store=fake_store, scorer=FusionScorer(weights=w), use_graph=False)

    def test_a_scorer_without_context_weight_never_builds_them(self, fake_store, ns):
        cascade = self._cascade(fake_store, ns, 0.0)
        assert not cascade.scorer.uses_context
        calls = fake_store.embeddings.calls
        cascade.rank(ns, "camping kids trip", k=2)
        assert fake_store.embeddings.calls == calls + 1  # the query only

    def test_a_scorer_with_context_weight_ranks_by_it(self, fake_store, ns):
        cascade = self._cascade(fake_store, ns, 10.0)
        assert cascade.scorer.uses_context
        docs = cascade.rank(ns, "camping kids trip", k=2).documents
        # "Yes last week" shares no word with the query; its context (the camping question) does.
        assert [d.metadata["turn_id"] for d in docs] == ["t0", "t1"]
        assert fake_store.embeddings.calls == len(TEXTS) * 2 + 1

    def test_a_store_with_context_off_warns_once(self, ns, caplog):
        from langmem_cog.rank.cascade import Cascade
        from langmem_cog.rank.scorer import FusionScorer

        store = TurnStore(CogMemConfig.preset("ephemeral", context_vectors=False), embeddings=FakeEmbeddings())
        store.add_turns(make_turns(ns, TEXTS))
        w = FusionScorer.untrained().weights.copy()
        w[FEATURE_NAMES.index("context_z")] = 1.0
        cascade = Cascade(store=store, scorer=FusionScorer(weights=w), use_graph=False)
        for q in ("camping", "lake"):
            assert len(cascade.rank(ns, q, k=2).documents) == 2
        assert caplog.text.count("context_vectors is off") == 1
