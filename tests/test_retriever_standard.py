"""LangChain's standard retriever integration tests, run against the real packaged MiniLM embedder.

The store is built once per process, lazily (loading the model costs seconds), and shared by
every test of the suite.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

from fakes import make_turns
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langmem_cog.config import CogMemConfig
from langmem_cog.retriever import CogMemRetriever
from langmem_cog.store import TurnStore

NAMESPACE = "standard"
TEXTS = [
    "I adopted a golden retriever puppy called Rex last spring.",
    "My sister moved to Lisbon and works as an architect there.",
    "We repainted the kitchen a pale blue colour over the weekend.",
    "I ran the Berlin marathon in just under four hours.",
    "I'm allergic to peanuts, so I always check restaurant menus.",
    "My favourite book this year was a novel about deep-sea divers.",
    "Work has been stressful because of the product launch in June.",
    "On Sundays I bake sourdough bread with my grandmother's recipe.",
]

_STORE: TurnStore | None = None
_LOCK = threading.Lock()


def shared_store() -> TurnStore:
    """The module's store with the real default embedder and the turns above (built once)."""
    global _STORE
    with _LOCK:
        if _STORE is None:
            store = TurnStore(CogMemConfig.preset("ephemeral"))
            store.add_turns(make_turns(NAMESPACE, TEXTS, speaker="Sam", start=datetime(2024, 5, 1, tzinfo=UTC)))
            _STORE = store
        return _STORE


class TestCogMemRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[CogMemRetriever]:
        return CogMemRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"store": shared_store(), "namespace": NAMESPACE, "k": 4}

    @property
    def retriever_query_example(self) -> str:
        return "What kind of dog does Sam have?"


def test_real_embedder_finds_the_semantic_match():
    retriever = CogMemRetriever(store=shared_store(), namespace=NAMESPACE, k=2, mode="dense")
    docs = retriever.invoke("What kind of dog does Sam have?")
    assert docs[0].metadata["turn_id"] == "t0"
    assert docs[0].metadata["dense_score"] > docs[1].metadata["dense_score"]
