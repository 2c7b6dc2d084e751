"""LangChain integrations run for real: the cited retriever tool, the LCEL RAG chain, the evidence
helpers and the offline stand-in chat model."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest
from conftest import unique_namespace
from fakes import FakeEmbeddings, make_turns
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate

from langmem_cog import CogMemConfig, CogMemRetriever, TurnStore
from langmem_cog.errors import InvalidInputError
from langmem_cog.integrations.evidence import (
    format_evidence,
    parse_evidence_line,
    parse_time,
    resolve_time,
    search_evidence,
)
from langmem_cog.integrations.langchain import create_memory_retriever_tool, create_rag_chain
from langmem_cog.integrations.langchain.rag import NO_CONTEXT
from langmem_cog.integrations.offline import NO_MEMORY_ANSWER, OfflineEvidenceChatModel, load_chat_model

TEXTS = [
    "I adopted a terrier called Pickle last week.",
    "My favourite book is Piranesi by Susanna Clarke.",
    "I am allergic to shellfish, so no crab boil for me.",
]


class RecordingChatModel(GenericFakeChatModel):
    prompts: list[list[BaseMessage]] = []

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.prompts.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


class RecordingHandler(BaseCallbackHandler):
    """Records the kinds of runs started under it."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def on_retriever_start(self, *args: Any, **kwargs: Any) -> None:
        self.started.append("retriever")


@pytest.fixture(scope="module")
def store() -> TurnStore:
    return TurnStore(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())


@pytest.fixture
def ns(store: TurnStore) -> str:
    ns = unique_namespace("lc")
    store.add_turns(make_turns(ns, TEXTS, speaker="Leo", start=datetime(2023, 5, 8, 12, tzinfo=UTC)))
    store.add_turns(make_turns(ns, ["Crab boil on Saturday, who's in?"], speaker="Maya", id_prefix="m",
                               start=datetime(2023, 6, 1, tzinfo=UTC)))
    return ns


def test_retriever_tool_returns_cited_lines_and_artifacts(store: TurnStore, ns: str) -> None:
    retriever = CogMemRetriever(store=store, namespace=ns, k=2)
    tool = create_memory_retriever_tool(retriever)
    assert tool.name == "search_memory" and "query" in tool.tool_call_schema.model_json_schema()["properties"]
    lines = tool.invoke({"query": "shellfish allergy"}).splitlines()
    assert parse_evidence_line(lines[0]) == ("t2", "Leo", "2023-05-08", TEXTS[2])
    assert len(lines) == 2
    rich = create_memory_retriever_tool(retriever, name="recall", response_format="content_and_artifact")
    msg = rich.invoke({"type": "tool_call", "id": "c1", "name": "recall", "args": {"query": "crab boil"}})
    assert isinstance(msg, ToolMessage)
    assert [d.metadata["turn_id"] for d in msg.artifact] == [parse_evidence_line(x)[0] for x in msg.text.splitlines()]


async def test_retriever_tool_async(store: TurnStore, ns: str) -> None:
    tool = create_memory_retriever_tool(CogMemRetriever(store=store, namespace=ns, k=1))
    out = await tool.ainvoke({"query": "Which book is my favourite?"})
    assert parse_evidence_line(out)[0] == "t1"


async def test_retriever_tool_returns_a_rejected_query_to_the_model(store: TurnStore, ns: str) -> None:
    tool = create_memory_retriever_tool(CogMemRetriever(store=store, namespace=ns, k=1))
    for query in ("   ", "dog " * 6000):
        call = {"type": "tool_call", "id": "c1", "name": "search_memory", "args": {"query": query}}
        for msg in (tool.invoke(call), await tool.ainvoke(call)):
            assert isinstance(msg, ToolMessage) and msg.status == "error"
            assert msg.text.startswith("Error: query ") and "call the tool again" in msg.text
    strict = create_memory_retriever_tool(CogMemRetriever(store=store, namespace=ns, k=1), handle_tool_errors=False)
    with pytest.raises(InvalidInputError, match="empty or whitespace"):
        strict.invoke({"query": " "})
    callbacks = RecordingHandler()
    tool.invoke({"query": "shellfish"}, config={"callbacks": [callbacks]})
    assert "retriever" in callbacks.started  # the retriever still runs under the tool's callbacks


def test_rag_chain_gives_the_model_cited_context_and_returns_sources(store: TurnStore, ns: str) -> None:
    model = RecordingChatModel(messages=iter([AIMessage(content="Shellfish [t2]."), AIMessage(content="Piranesi [t1].")]),
                               prompts=[])
    chain = create_rag_chain(CogMemRetriever(store=store, namespace=ns, k=2), model)
    out = chain.invoke("What is Leo allergic to?")
    assert out["answer"] == "Shellfish [t2]." and out["question"] == "What is Leo allergic to?"
    assert out["docs"][0].metadata["turn_id"] == "t2" and out["context"] == format_evidence(out["docs"])
    system, human = model.prompts[0]
    assert isinstance(system, SystemMessage) and out["context"] in system.text
    assert isinstance(human, HumanMessage) and human.text == "What is Leo allergic to?"
    [second] = chain.batch(["favourite book"])
    assert second["answer"] == "Piranesi [t1]." and second["docs"][0].metadata["turn_id"] == "t1"


def test_rag_chain_on_an_empty_namespace_and_a_bad_prompt(store: TurnStore) -> None:
    retriever = CogMemRetriever(store=store, namespace=unique_namespace("empty"))
    out = create_rag_chain(retriever, OfflineEvidenceChatModel()).invoke("What is my dog called?")
    assert out["docs"] == [] and out["context"] == NO_CONTEXT and out["answer"] == NO_MEMORY_ANSWER
    with pytest.raises(InvalidInputError, match="context"):
        create_rag_chain(retriever, OfflineEvidenceChatModel(), prompt=ChatPromptTemplate.from_messages([("human", "{question}")]))


def test_search_evidence_filters_the_whole_ranking(store: TurnStore, ns: str) -> None:
    top = search_evidence(store, ns, "crab boil", k=1)
    assert [d.metadata["turn_id"] for d in top] in (["t2"], ["m0"])
    leo = search_evidence(store, ns, "crab boil", k=5, speaker="LEO")
    assert leo and {d.metadata["speaker"] for d in leo} == {"Leo"} and [d.metadata["rank"] for d in leo] == [1, 2, 3]
    june = search_evidence(store, ns, "terrier", start="2023-06-01")
    assert [d.metadata["turn_id"] for d in june] == ["m0"]  # the best match after the date, not the overall best
    assert sorted(d.metadata["turn_id"] for d in search_evidence(store, ns, "crab", exclude_ids={"t2", "m0"}, k=5)) == ["t0", "t1"]
    assert search_evidence(store, unique_namespace("none"), "x") == []
    with pytest.raises(InvalidInputError, match="not a date"):
        search_evidence(store, ns, "x", start="someday")
    with pytest.raises(InvalidInputError):
        search_evidence(store, ns, "x", k=0)
    assert parse_time("2023-05-08T10:00:00").tzinfo is not None


def test_search_evidence_resolves_relative_dates_against_now(store: TurnStore, ns: str) -> None:
    june = "2023-06-15T12:00:00+00:00"
    may = search_evidence(store, ns, "crab boil", k=5, start="last month", end="last month", now=june)
    assert sorted(d.metadata["turn_id"] for d in may) == ["t0", "t1", "t2"]
    assert [d.metadata["turn_id"] for d in search_evidence(store, ns, "crab", start="in June", now=june)] == ["m0"]
    assert search_evidence(store, ns, "crab", start="yesterday", now=june) == []
    assert [d.metadata["turn_id"] for d in search_evidence(store, ns, "crab", start="yesterday",
                                                            now=datetime(2023, 6, 2, tzinfo=UTC))] == ["m0"]
    assert resolve_time("in May", end=True, now=june) == datetime(2023, 6, 1, tzinfo=UTC)
    assert resolve_time("2023-05-08", end=True) == datetime(2023, 5, 9, tzinfo=UTC)
    with pytest.raises(InvalidInputError, match="not before"):
        search_evidence(store, ns, "crab", start="in June", end="last month", now=june)
    with pytest.raises(InvalidInputError, match="ISO date"):
        resolve_time("last week", now="not a time")


def test_time_bounds_in_iso_form_mean_what_they_say(store: TurnStore, ns: str) -> None:
    june = "2023-06-15T12:00:00+00:00"
    assert resolve_time("2023-05", now=june) == datetime(2023, 5, 1, tzinfo=UTC)  # a month, not its year
    assert resolve_time("2023-12", end=True, now=june) == datetime(2024, 1, 1, tzinfo=UTC)
    assert resolve_time("20230508", end=True) == datetime(2023, 5, 9, tzinfo=UTC)  # a compact date is a day too
    for bad in ("2023-02-30", "2023-13-45", "20231345", "2023-13"):  # no such day: an error, never a whole year
        with pytest.raises(InvalidInputError, match=r"not an ISO date|not a month"):
            resolve_time(bad, now=june)
        with pytest.raises(InvalidInputError):
            search_evidence(store, ns, "crab", start=bad, now=june)
    assert [d.metadata["turn_id"] for d in search_evidence(store, ns, "crab", start="2023-06", now=june)] == ["m0"]


def test_the_last_day_a_date_can_name_is_an_end_bound(store: TurnStore, ns: str) -> None:
    retriever = CogMemRetriever(store=store, namespace=ns, k=5)
    ids = lambda docs: sorted(d.metadata["turn_id"] for d in docs)  # noqa: E731
    everything = ids(retriever.invoke("crab"))
    for end in ("9999-12-31", date(9999, 12, 31)):
        assert ids(retriever.invoke("crab", end=end)) == everything
    for end in ("9999-12-31", date(9999, 12, 31), "9999-12"):  # the tools' bounds also take a month
        assert ids(search_evidence(store, ns, "crab", k=5, end=end)) == ids(search_evidence(store, ns, "crab", k=5))
        assert resolve_time(end, end=True) == datetime.max.replace(tzinfo=UTC)
    assert retriever.invoke("crab", start="9999-12-31") == []


def test_a_filter_built_directly_means_what_build_means(store: TurnStore, ns: str) -> None:
    from langmem_cog.filters import TurnFilter

    direct = TurnFilter(speaker=" LEO ", start="2023-05-08", end=date(2023, 5, 8), exclude_ids=["t2"])
    assert direct == TurnFilter.build(speaker="Leo", start="2023-05-08", end="2023-05-08", exclude_ids={"t2"})
    assert direct.speaker == "leo" and direct.end == datetime(2023, 5, 9, tzinfo=UTC)
    assert TurnFilter(start=datetime(2023, 5, 8)).start == datetime(2023, 5, 8, tzinfo=UTC)  # naive means UTC
    retriever = CogMemRetriever(store=store, namespace=ns, k=5)
    assert sorted(d.metadata["turn_id"] for d in retriever.invoke("crab", where=direct)) == ["t0", "t1"]
    for bad, match in ((dict(exclude_ids="t0"), "exclude_ids"), (dict(speaker=["Leo"]), "speaker"),
                       (dict(start="2023-06-01", end="2023-05-01"), "not before")):
        with pytest.raises(InvalidInputError, match=match):
            TurnFilter(**bad)
        with pytest.raises(InvalidInputError, match=match):
            retriever.invoke("crab", **bad)


def test_offline_stand_in_rules() -> None:
    model = OfflineEvidenceChatModel()
    evidence = SystemMessage("Memories:\n[a1 | assistant | 2024-01-02] From memory: Rex is a dog.\n"
                             "[u1 | user | 2024-01-01] My dog is called Rex.\n[u2 | user | 2024-01-01] I like tea.")
    assert model.invoke([evidence, HumanMessage("What is my dog called?")]).text == (
        "From memory: My dog is called Rex. [u1 | user | 2024-01-01]")  # people before the assistant
    assert model.invoke([evidence, HumanMessage("Where do I work?")]).text == NO_MEMORY_ANSWER
    assert model.invoke([HumanMessage("I moved to Porto.")]).text == "Noted."
    bound = model.bind_tools([create_memory_retriever_tool(CogMemRetriever.model_construct(namespace="x"))])
    call = bound.invoke([HumanMessage("What is my dog called?")])
    assert call.tool_calls[0]["name"] == "search_memory" and call.tool_calls[0]["args"] == {"query": "What is my dog called?"}
    answer = bound.invoke([HumanMessage("What is my dog called?"), call,
                           ToolMessage("[u1 | user | 2024-01-01] My dog is called Rex.", tool_call_id=call.tool_calls[0]["id"])])
    assert answer.text.endswith("[u1 | user | 2024-01-01]") and not answer.tool_calls
    assert type(load_chat_model(environ={})).__name__ == "OfflineEvidenceChatModel"
    assert type(load_chat_model(environ={"LMC_CHAT_MODEL": "offline"})).__name__ == "OfflineEvidenceChatModel"
