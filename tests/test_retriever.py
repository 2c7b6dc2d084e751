"""Behaviour tests of CogMemRetriever over the fake embedder."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from fakes import make_turns
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from pydantic import ValidationError

from langmem_cog.config import RetrieverSettings
from langmem_cog.errors import InvalidInputError, InvalidNamespaceError, UnknownNamespaceError
from langmem_cog.retriever import CogMemRetriever, trim_to_budget
from langmem_cog.tokens import count_tokens

TEXTS = [
    "I adopted a puppy called Rex last spring and he loves the park",
    "My sister lives in Lisbon near the river and works as an architect",
    "We painted the kitchen blue last weekend after a long debate about colours",
    "The marathon in Berlin was exhausting but I finished under four hours",
    "I am allergic to peanuts and shellfish so I always check menus",
    "Rex chewed my running shoes again this morning",
]

REQUIRED_KEYS = {
    "turn_id", "speaker", "session_id", "timestamp", "score", "dense_score", "lexical_score", "rank", "stage",
}


@pytest.fixture
def filled(fake_store, ns):
    fake_store.add_turns(make_turns(ns, TEXTS, metadata={"source": "chat"}))
    return fake_store, ns


@pytest.fixture
def retriever(filled) -> CogMemRetriever:
    store, ns = filled
    return CogMemRetriever(store=store, namespace=ns, k=4)


def test_documents_carry_full_metadata(retriever):
    docs = retriever.invoke("puppy Rex")
    assert len(docs) == 4
    for rank, doc in enumerate(docs, 1):
        assert isinstance(doc, Document)
        assert set(doc.metadata) >= REQUIRED_KEYS
        meta = doc.metadata
        assert meta["stage"] == "raw"
        assert meta["rank"] == rank
        assert meta["speaker"] == "Ann"
        assert meta["session_id"] == "1"
        assert meta["namespace"] == retriever.namespace
        assert meta["turn_source"] == "chat"
        assert doc.id == meta["turn_id"]
        assert doc.page_content.startswith("Ann: ")
        assert "+00:00" in meta["timestamp"]
        assert all(isinstance(meta[k], float) for k in ("score", "dense_score", "lexical_score"))
    assert docs[0].metadata["turn_id"] in {"t0", "t5"}
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)


def test_a_turns_own_metadata_never_replaces_a_standard_key(fake_store, ns):
    fake_store.add_turns(make_turns(ns, TEXTS[:3], metadata={"id": "msg-row-7", "speaker": "bot", "source": "chat"}))
    docs = CogMemRetriever(store=fake_store, namespace=ns, k=3).invoke("puppy Rex")
    assert sorted(d.metadata["turn_id"] for d in docs) == ["t0", "t1", "t2"]
    assert all(d.metadata["turn_id"] == d.id and d.metadata["turn_speaker"] == "bot" for d in docs)
    assert {d.metadata["speaker"] for d in docs} == {"Ann"} and {d.metadata["turn_source"] for d in docs} == {"chat"}


def test_every_bad_constructor_argument_is_one_of_our_errors(fake_store, ns):
    for bad, match in ((dict(), "needs namespace"), (dict(namespace=ns, mode="fancy"), "mode='fancy' is invalid"),
                       (dict(namespace=ns, missing_ok="maybe"), "missing_ok"),
                       (dict(namespace=ns, now=[2023]), "now")):
        with pytest.raises(InvalidInputError, match=match):
            CogMemRetriever(store=fake_store, **bad)


def test_best_document_is_the_right_turn(retriever):
    assert retriever.invoke("allergic peanuts")[0].metadata["turn_id"] == "t4"


@pytest.mark.parametrize("k", [1, 2, 6])
def test_invoke_k_overrides_the_default(retriever, k):
    assert len(retriever.invoke("puppy", k=k)) == k


def test_default_k(retriever):
    assert len(retriever.invoke("puppy")) == 4


def test_k_and_max_tokens_default_to_the_store_config(filled):
    store, ns = filled
    assert CogMemRetriever(store=store, namespace=ns).k == store.config.retriever.k == 10
    store.config = store.config.model_copy(update={"retriever": RetrieverSettings(k=3, max_tokens=12)})
    r = CogMemRetriever(store=store, namespace=ns)
    assert (r.k, r.max_tokens) == (3, 12)
    docs = r.invoke("puppy Rex")
    assert 1 <= len(docs) <= 3 and all("over_budget" in d.metadata for d in docs)
    explicit = CogMemRetriever(store=store, namespace=ns, k=5, max_tokens=None)
    assert (explicit.k, explicit.max_tokens) == (5, None)  # what the caller passes wins


@pytest.mark.parametrize("k", [0, -2, True])
def test_bad_k_raises(retriever, k):
    with pytest.raises(InvalidInputError):
        retriever.invoke("puppy", k=k)


def test_bad_query_raises(retriever):
    with pytest.raises(InvalidInputError):
        retriever.invoke("   ")


@pytest.mark.parametrize("mode", ["dense", "lexical"])
def test_modes(filled, mode):
    store, ns = filled
    r = CogMemRetriever(store=store, namespace=ns, k=1, mode=mode)
    assert r.invoke("Lisbon river")[0].metadata["turn_id"] == "t1"


def test_max_tokens_trims_to_budget(filled):
    store, ns = filled
    full = CogMemRetriever(store=store, namespace=ns, k=6).invoke("puppy Rex")
    sizes = [count_tokens(d.page_content) for d in full]
    budget = sizes[0] + sizes[1] + sizes[2] // 2  # room for two, not three
    r = CogMemRetriever(store=store, namespace=ns, k=6, max_tokens=budget)
    docs = r.invoke("puppy Rex")
    assert [d.metadata["turn_id"] for d in docs] == [d.metadata["turn_id"] for d in full[:2]]
    assert sum(count_tokens(d.page_content) for d in docs) <= budget
    assert [d.metadata["tokens"] for d in docs] == sizes[:2]


def test_max_tokens_per_call_and_first_doc_always_kept(retriever):
    docs = retriever.invoke("puppy Rex", max_tokens=1)
    assert len(docs) == 1
    assert docs[0].metadata["tokens"] == count_tokens(docs[0].page_content) > 1


def test_max_tokens_marks_a_first_document_longer_than_the_budget(retriever):
    docs = retriever.invoke("puppy Rex", max_tokens=5)
    assert len(docs) == 1
    assert docs[0].metadata["tokens"] > 5
    assert docs[0].metadata["over_budget"] is True
    roomy = retriever.invoke("puppy Rex", max_tokens=10_000)
    assert len(roomy) == 4 and all(d.metadata["over_budget"] is False for d in roomy)
    assert "over_budget" not in retriever.invoke("puppy Rex")[0].metadata  # no budget, no marks


@pytest.mark.parametrize("budget", [0, -3, True, 2.5])
def test_bad_max_tokens_per_call_raises(retriever, budget):
    with pytest.raises(InvalidInputError, match="max_tokens"):
        retriever.invoke("puppy", max_tokens=budget)


def test_with_config_configurable_k_and_max_tokens(retriever):
    assert len(retriever.with_config(configurable={"k": 1}).invoke("puppy Rex")) == 1
    assert len(retriever.invoke("puppy Rex", config={"configurable": {"k": 2}})) == 2
    assert len(retriever.with_config(configurable={"k": 1}).invoke("puppy Rex", k=3)) == 3  # the call wins
    assert len(retriever.with_config(configurable={"thread_id": "x"}).invoke("puppy Rex")) == 4  # other keys: ignored
    docs = retriever.with_config(configurable={"max_tokens": 5}).invoke("puppy Rex")
    assert len(docs) == 1 and docs[0].metadata["over_budget"] is True
    assert [len(d) for d in retriever.batch(["puppy", "Lisbon"], config={"configurable": {"k": 2}})] == [2, 2]
    with pytest.raises(InvalidInputError, match="k=0"):
        retriever.with_config(configurable={"k": 0}).invoke("puppy")
    # In a chain, the chain's config reaches the retriever; config_specs advertise the keys.
    chain = RunnableLambda(lambda q: q) | retriever
    assert len(chain.invoke("puppy Rex", config={"configurable": {"k": 1}})) == 1
    assert {"k", "max_tokens"} <= {spec.id for spec in chain.config_specs}


async def test_with_config_configurable_k_async(retriever):
    assert len(await retriever.with_config(configurable={"k": 1}).ainvoke("puppy Rex")) == 1
    assert [len(d) for d in await retriever.abatch(["puppy", "Lisbon"], config={"configurable": {"k": 3}})] == [3, 3]


def test_trim_to_budget_none_keeps_everything():
    docs = [Document(page_content="a b c"), Document(page_content="d e f")]
    assert trim_to_budget(docs, None) == docs
    assert trim_to_budget([], 5) == []


def test_missing_ok_returns_empty(fake_store, ns):
    assert CogMemRetriever(store=fake_store, namespace=ns).invoke("anything") == []


def test_missing_not_ok_raises(fake_store, ns):
    r = CogMemRetriever(store=fake_store, namespace=ns, missing_ok=False)
    with pytest.raises(UnknownNamespaceError, match=ns):
        r.invoke("anything")


def test_missing_ok_after_forget(filled):
    store, ns = filled
    r = CogMemRetriever(store=store, namespace=ns)
    assert r.invoke("puppy")
    store.forget_namespace(ns)
    assert r.invoke("puppy") == []


def test_invalid_construction(fake_store):
    with pytest.raises(InvalidNamespaceError, match="etc"):  # our named error, not pydantic's
        CogMemRetriever(store=fake_store, namespace="../etc")
    with pytest.raises(InvalidInputError, match="k=0"):
        CogMemRetriever(store=fake_store, namespace="ok", k=0)
    with pytest.raises(InvalidInputError, match="mode='sparse' is invalid"):  # not pydantic's ValidationError
        CogMemRetriever(store=fake_store, namespace="ok", mode="sparse")


@pytest.mark.parametrize(
    ("field", "value"),
    [("k", 0), ("k", -1), ("k", "a"), ("k", "5"), ("k", 2.5), ("k", True), ("k", None),
     ("max_tokens", 0), ("max_tokens", -3), ("max_tokens", "a"), ("max_tokens", 1.5), ("max_tokens", False),
     ("lexical_weight", -1.0), ("lexical_weight", float("nan")), ("lexical_weight", float("inf")),
     ("lexical_weight", "abc")],
)
def test_bad_construction_values_are_named_errors_not_pydantic_ones(fake_store, field, value):
    # Issue 21, defect 6: these raised pydantic's ValidationError (no LangMemCogError, no fix to make).
    with pytest.raises(InvalidInputError, match=rf"{field}=.*(pass a positive integer|pass a finite number)") as info:
        CogMemRetriever(store=fake_store, namespace="ok", **{field: value})
    assert not isinstance(info.value, ValidationError)


def test_good_construction_values_are_kept(fake_store):
    r = CogMemRetriever(store=fake_store, namespace="ok", k=np.int64(3), max_tokens=None, lexical_weight=0)
    assert (r.k, type(r.k), r.max_tokens, r.lexical_weight) == (3, int, None, 0.0)
    assert CogMemRetriever(store=fake_store, namespace="ok", max_tokens=50).max_tokens == 50


@pytest.mark.parametrize(("arg", "value"), [("k", "a"), ("k", 0), ("k", [3]), ("max_tokens", "a"), ("max_tokens", -1)])
def test_bad_k_or_max_tokens_per_call_is_a_named_error(retriever, arg, value):
    with pytest.raises(InvalidInputError, match=f"{arg}="):
        retriever.invoke("puppy", **{arg: value})
    assert len(retriever.invoke("puppy", k=np.int64(2))) == 2  # numpy integers are integers


async def test_ainvoke(retriever):
    docs = await retriever.ainvoke("Lisbon river", k=2)
    assert len(docs) == 2
    assert docs[0].metadata["turn_id"] == "t1"
    sync = retriever.invoke("Lisbon river", k=2)
    assert [d.metadata["turn_id"] for d in docs] == [d.metadata["turn_id"] for d in sync]


async def test_ainvoke_concurrently(retriever):
    results = await asyncio.gather(*(retriever.ainvoke(q) for q in ("puppy", "Lisbon", "kitchen", "Berlin")))
    assert [len(r) for r in results] == [4, 4, 4, 4]


async def test_ainvoke_missing_not_ok_raises(fake_store, ns):
    r = CogMemRetriever(store=fake_store, namespace=ns, missing_ok=False)
    with pytest.raises(UnknownNamespaceError):
        await r.ainvoke("anything")


def test_lcel_chain(retriever):
    chain = retriever | (lambda docs: len(docs))
    assert chain.invoke("puppy") == 4


def test_lcel_chain_formats_context(retriever):
    fmt = RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs))
    chain = {"context": retriever | fmt, "question": RunnableLambda(lambda q: q)} | RunnableLambda(
        lambda x: f"{x['context']}\n\nQ: {x['question']}"
    )
    out = chain.invoke("allergic peanuts")
    assert out.startswith("Ann: I am allergic to peanuts")
    assert out.endswith("Q: allergic peanuts")


def test_batch(retriever):
    out = retriever.batch(["puppy Rex", "Lisbon river"])
    assert [docs[0].metadata["turn_id"] for docs in out][1] == "t1"
    assert len(out) == 2
