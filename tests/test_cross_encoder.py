"""LocalCrossEncoder's batching, int8 and layer truncation; the store's query-vector cache."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_cog.errors import InvalidInputError
from langmem_cog.rank.cross_encoder import LocalCrossEncoder, default_reranker_path, length_batches, load_backbone

PAIRS = [
    ("QUERY_TIME: 9. What is Leo allergic to?", "MEMORY_TIME: 1. Leo: I am allergic to shellfish."),
    ("QUERY_TIME: 9. What is Leo allergic to?", "MEMORY_TIME: 2. Maya: nice weather " + "and more words " * 20),
    ("QUERY_TIME: 9. What is Leo allergic to?", "MEMORY_TIME: 3. Leo: ok"),
    ("QUERY_TIME: 9. Where does Maya work?", "MEMORY_TIME: 4. Maya: I started at the bakery last spring."),
]


@given(st.lists(st.integers(1, 200), max_size=40), st.integers(1, 16), st.integers(0, 500))
@settings(max_examples=200, deadline=None)
def test_length_batches_cover_every_index_once(lengths, max_batch, pass_cost):
    batches = length_batches(lengths, max_batch, pass_cost)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert all(1 <= len(b) <= max_batch for b in batches)
    # contiguous runs of the length order: no batch's range overlaps the next one's
    for a, b in zip(batches, batches[1:], strict=False):
        assert max(lengths[i] for i in a) <= min(lengths[i] for i in b)


def test_length_batches_one_pass_when_passes_are_dear_and_one_each_when_free():
    assert length_batches([10, 50, 20], 8, pass_cost=10_000) == [[0, 2, 1]]
    assert len(length_batches([10, 50, 20], 8, pass_cost=0)) == 3
    with pytest.raises(InvalidInputError, match="max_batch"):
        length_batches([1], 0)


@pytest.fixture(scope="module")
def shipped() -> LocalCrossEncoder:
    return LocalCrossEncoder(default_reranker_path(), max_length=64)


def test_bucketed_scores_equal_one_pair_at_a_time(shipped):
    together = shipped.score(PAIRS)
    alone = [shipped.score([p])[0] for p in PAIRS]
    assert np.allclose(together, alone, atol=1e-3)  # fp16 weights run in fp32: padding must not change a score
    assert together[0] > together[2]


def test_scoring_threads_give_the_same_scores_and_restore_torch(shipped):
    import torch

    before = torch.get_num_threads()
    two = LocalCrossEncoder(default_reranker_path(), max_length=64, threads=2)
    assert np.allclose(two.score(PAIRS), shipped.score(PAIRS), atol=1e-4)
    assert torch.get_num_threads() == before
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InvalidInputError, match="threads="):
            LocalCrossEncoder(default_reranker_path(), threads=bad)


def test_int8_scores_track_fp32(shipped):
    q = LocalCrossEncoder(default_reranker_path(), max_length=64, quantize=True)
    assert "quantize=True" in repr(q)
    a, b = np.array(shipped.score(PAIRS)), np.array(q.score(PAIRS))
    # An approximation (its ranking cost: BENCHMARKS): within a third of the scores' range, and the same
    # order for every two pairs whose fp32 scores are further apart than twice the largest int8 error.
    assert np.all(np.isfinite(b))
    err = np.max(np.abs(a - b))
    assert err < np.ptp(a) / 3
    apart = [(i, j) for i in range(len(a)) for j in range(len(a)) if a[i] - a[j] > 2 * err]
    assert apart and all(b[i] > b[j] for i, j in apart)


def test_load_backbone_keeps_the_first_layers():
    full, _ = load_backbone(default_reranker_path())
    small, _ = load_backbone(default_reranker_path(), num_layers=3)
    assert small.config.num_hidden_layers == 3 and len(small.bert.encoder.layer) == 3
    for a, b in zip(small.bert.encoder.layer[2].parameters(), full.bert.encoder.layer[2].parameters(), strict=True):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    assert np.array_equal(small.classifier.weight.detach().numpy(), full.classifier.weight.detach().numpy())
    for bad in (0, 7, True):
        with pytest.raises(InvalidInputError, match="num_layers"):
            load_backbone(default_reranker_path(), num_layers=bad)


@pytest.fixture
def memory():
    from fakes import FakeEmbeddings

    from langmem_cog.config import CogMemConfig
    from langmem_cog.memory import CogMemory

    return CogMemory(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())


def test_store_caches_query_vectors_read_only(memory):
    store = memory.store
    calls = []
    inner = store.embed_texts

    def counting(texts):
        calls.append(list(texts))
        return inner(texts)

    store.embed_texts = counting
    try:
        a = store.embed_query("where does Leo work?")
        b = store.embed_query("where does Leo work?")
        assert a is b and len(calls) == 1
        with pytest.raises(ValueError):
            a[0] = 1.0  # shared between callers: read-only
        store.clear_query_cache()
        c = store.embed_query("where does Leo work?")
        assert len(calls) == 2 and np.array_equal(a, c)
    finally:
        del store.embed_texts


def test_store_serves_a_seeded_query_vector_without_running_the_model(memory):
    from langmem_cog.errors import InvalidInputError

    store = memory.store
    given = store.embed_texts(["where does Leo work?"])[0]
    calls = []
    inner = store.embed_texts
    store.embed_texts = lambda texts: calls.append(list(texts)) or inner(texts)
    try:
        kept = store.cache_query_vector("where does Leo work?", given)
        assert np.array_equal(store.embed_query("where does Leo work?"), given) and calls == []
        assert store.embed_query("where does Leo work?") is kept and not kept.flags.writeable
        given[0] += 1.0  # the cache holds a copy: the caller's array stays the caller's
        assert not np.array_equal(kept, given)
        for bad in (np.zeros((2, 3)), np.array([np.nan, 1.0]), np.zeros(0)):
            with pytest.raises(InvalidInputError, match="1-D"):
                store.cache_query_vector("q", bad)
        assert calls == []
    finally:
        del store.embed_texts


def test_cascades_share_one_operator_loop_and_embed_the_query_once(memory, ns):
    from datetime import UTC, datetime

    from langmem_cog.rank.cascade import Cascade
    from langmem_cog.records import make_turn

    memory.add_turns([make_turn(id=f"t{i}", namespace=ns, speaker="Leo", text=x, position=i,
                                timestamp=datetime(2023, 5, 8, 12, i, tzinfo=UTC))
                      for i, x in enumerate(["I am allergic to shellfish.", "Nice weather today."])])
    one, two = Cascade(store=memory.store, memory=memory), Cascade(store=memory.store, memory=memory)
    queries = []
    inner = memory.store.embed_texts

    def counting(texts):
        queries.extend(t for t in texts if "allergic to?" in t)
        return inner(texts)

    memory.store.embed_texts = counting
    try:
        one.rank(ns, "What is Leo allergic to?", k=2)
        two.rank(ns, "What is Leo allergic to?", k=2)
    finally:
        del memory.store.embed_texts
    assert one._retrieval is two._retrieval is memory.retrieval
    # raw scores and the loop share one embedding of the question; the question without the speaker's name
    # (the dense score's other half) is embedded once more, and the second cascade reuses both
    assert queries == ["What is Leo allergic to?", "What is they allergic to?"]


def test_clipping_long_memories_keeps_the_tokens(shipped):
    import random

    rng = random.Random(0)
    vocab = ["running", "Maya", "the", "—", "!!!", "東京", "naïve", "x" * 40, "2023-05-01,", "🙂", "a.b.c", "\t"]
    texts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(100, 900))) for _ in range(60)]
    texts += ["— " * 2000 + "late words", "word " * 200, "nospace" * 400]
    queries = ["QUERY_TIME: 9. Does Maya like running?", "QUERY_TIME: 9. " + "how many times " * 30]
    for q in queries:
        whole = shipped.tokenizer([q] * len(texts), texts, truncation="longest_first", max_length=shipped.max_length)
        clipped = shipped.tokenizer([q] * len(texts), [shipped._clip(t) for t in texts], truncation="longest_first",
                                    max_length=shipped.max_length)
        assert whole["input_ids"] == clipped["input_ids"]
    assert len(shipped._clip(texts[0])) < len(texts[0])  # long texts are cut
    assert shipped._clip("— " * 2000 + "late words") == "— " * 2000 + "late words"  # too few words that count
