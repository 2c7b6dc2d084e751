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
