"""The packaged embedder on the torch backend: one query embedded on one thread, batches on torch's setting.

The ONNX Runtime backend (the default) is tested in ``test_runtime.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from langmem_cog.embeddings import LocalSentenceEmbeddings, resolve_model_path
from langmem_cog.errors import InvalidInputError


def test_a_single_text_is_embedded_on_single_threads_and_torch_is_restored(monkeypatch) -> None:
    emb = LocalSentenceEmbeddings(resolve_model_path("minilm"), backend="torch")
    assert emb.single_threads == 1
    seen: list[int] = []
    encode = type(emb.model).encode

    def spy(self, *args, **kwargs):
        seen.append(torch.get_num_threads())
        return encode(self, *args, **kwargs)

    monkeypatch.setattr(type(emb.model), "encode", spy)
    before = torch.get_num_threads()
    texts = ["What is Leo allergic to?", "Leo: I am allergic to shellfish."]
    one = emb.embed_array(texts[:1])
    both = emb.embed_array(texts)
    assert seen == [1, before] and torch.get_num_threads() == before
    assert np.allclose(one[0], both[0], atol=1e-5)
    default = LocalSentenceEmbeddings(resolve_model_path("minilm"), single_threads=None, backend="torch")
    seen.clear()
    default.embed_array(texts[:1])
    assert seen == [before]


@pytest.mark.parametrize("bad", [0, -1, True])
def test_single_threads_must_be_positive(bad) -> None:
    with pytest.raises(InvalidInputError, match="single_threads"):
        LocalSentenceEmbeddings(resolve_model_path("minilm"), single_threads=bad)


def test_token_batches_cap_texts_and_padded_tokens() -> None:
    from langmem_cog.embeddings import token_batches

    lengths = [3] * 10 + [40] * 5 + [300]
    batches = token_batches(lengths, max_texts=4, budget=128)
    assert [i for b in batches for i in b] == list(range(len(lengths)))  # every text once, in order
    assert all(len(b) <= 4 for b in batches)
    assert all(len(b) * lengths[b[-1]] <= 128 for b in batches if len(b) > 1)
    assert batches[-1] == [15]  # a text longer than the budget still gets its own batch
    assert token_batches([], max_texts=4, budget=128) == []


def test_int8_calls_batch_short_texts_of_one_length_and_run_long_ones_alone() -> None:
    from langmem_cog.embeddings import INT8_BATCH_MAX_TOKENS, int8_calls

    long = INT8_BATCH_MAX_TOKENS + 1
    lengths = [5] * 7 + [long, 9, 5, long, INT8_BATCH_MAX_TOKENS, INT8_BATCH_MAX_TOKENS]
    calls = int8_calls(lengths, max_texts=3)
    assert sorted(i for c in calls for i in c) == list(range(len(lengths)))  # every text once
    assert all(len({lengths[i] for i in c}) == 1 for c in calls)  # one length a call: no padding
    assert all(len(c) == 1 for c in calls if lengths[c[0]] > INT8_BATCH_MAX_TOKENS)
    assert [len(c) for c in calls if lengths[c[0]] == 5] == [3, 3, 2] and all(len(c) <= 3 for c in calls)
    assert [i for c in calls if lengths[c[0]] == INT8_BATCH_MAX_TOKENS for i in c] == [11, 12]
    costs = [len(c) * lengths[c[0]] for c in calls]
    assert costs == sorted(costs, reverse=True)  # the costliest first
    assert [len(c) for c in int8_calls([4] * 10, max_texts=100, budget=16)] == [4, 4, 2]  # 16 tokens a call
    assert int8_calls([], max_texts=3) == []


def test_int8_batches_give_each_text_its_lone_vector() -> None:
    """Short texts of one length embed together through the per-item graph, bit for bit as alone."""
    from langmem_cog.embeddings import int8_calls

    emb = LocalSentenceEmbeddings(resolve_model_path("minilm"), backend="onnx", precision="int8")
    texts = ["Maya", "Leo", "running", "coffee", "Paris", "I love running now", "I hate running a lot",
             "shellfish allergy", "a camping trip to the lake", "Leo is allergic to shellfish"]
    lengths = [len(ids) for ids in emb.model.tokenizer(texts)["input_ids"]]
    assert any(len(c) > 1 for c in int8_calls(lengths, emb.batch_size))  # the batched path runs
    batch = emb.embed_array(texts)
    alone = np.stack([np.asarray(emb.embed_query(t), dtype=np.float32) for t in texts])
    assert np.array_equal(batch, alone)
    assert np.array_equal(emb.embed_array(texts[::-1])[::-1], batch)


def test_a_model_whose_graph_cannot_be_quantised_per_item_embeds_one_text_per_call(monkeypatch, caplog) -> None:
    from langmem_cog import runtime

    session = runtime.onnx_session

    def no_items(*args, per_item=False, **kwargs):
        if per_item:
            raise ValueError("x is not a (batch, tokens, features) tensor: cannot quantise it per item")
        return session(*args, **kwargs)

    monkeypatch.setattr(runtime, "onnx_session", no_items)
    emb = LocalSentenceEmbeddings(resolve_model_path("minilm"), backend="onnx", precision="int8")
    texts = ["Maya", "Leo", "Paris", "running now"]
    with caplog.at_level("WARNING", logger="langmem_cog.embeddings"):
        vecs = emb.embed_array(texts)
    assert "int8 texts embed one per call" in caplog.text
    assert np.array_equal(vecs, np.stack([np.asarray(emb.embed_query(t), dtype=np.float32) for t in texts]))
