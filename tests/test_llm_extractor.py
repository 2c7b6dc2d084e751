"""Tests of the LLM extractor and the prompts module, with scripted fake chat models.

No real model is used. Three kinds of fake:

* ``FakeListChatModel`` / ``GenericFakeChatModel`` from langchain-core answer JSON text:
  they do not implement tool calling, so the extractor takes the JSON-parsing path.
* ``ToolCallingFake`` (``GenericFakeChatModel`` + a no-op ``bind_tools``) answers with tool
  calls, so langchain-core's own ``with_structured_output`` parses them.
* ``ScriptedStructuredModel`` returns scripted ``ExtractionOutput`` objects (or raises
  scripted exceptions) from ``with_structured_output``.

Model calls are counted with a callback handler (langchain's own tracing hook) or by the
scripted model itself.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from langgraph.errors import GraphInterrupt
from pydantic import ValidationError

from langmem_cog.errors import ExtractionError, InvalidInputError
from langmem_cog.graph import llm_extractor as llm_module
from langmem_cog.graph.llm_extractor import LLMExtractor, _is_chitchat
from langmem_cog.graph.prompts import (
    CONSOLIDATION_PROMPT,
    EXTRACTION_PROMPT,
    EXTRACTION_RETRY,
    EXTRACTION_SYSTEM,
    ROUTER_PROMPT,
    SUFFICIENCY_PROMPT,
    ClaimOutput,
    ConsolidatedFactOutput,
    ExtractionOutput,
    RouterOutput,
    SufficiencyOutput,
    format_turns,
    parse_json_output,
)
from langmem_cog.graph.schema import (
    ExtractedClaim,
    ExtractedConcept,
    ExtractedEvent,
    ExtractedFact,
    Extraction,
    Extractor,
)
from langmem_cog.records import Turn, make_turn

#: Monday 8 May 2023, 13:56 UTC.
REF = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


# --------------------------------------------------------------------------- fakes and helpers


def turn(
    turn_id: str,
    speaker: str,
    text: str,
    timestamp: datetime = REF,
    *,
    conversation_id: str = "c1",
    namespace: str = "n",
) -> Turn:
    return make_turn(
        id=turn_id,
        namespace=namespace,
        conversation_id=conversation_id,
        speaker=speaker,
        text=text,
        timestamp=timestamp,
    )


def answer(**lists: list[dict[str, Any]]) -> str:
    """A JSON answer with the four keys; missing lists are empty."""
    return json.dumps({key: lists.get(key, []) for key in ("events", "facts", "claims", "concepts")})


EMPTY = answer()


def output(**lists: list[dict[str, Any]]) -> ExtractionOutput:
    return ExtractionOutput.model_validate(json.loads(answer(**lists)))


class CallRecorder(BaseCallbackHandler):
    """Records the messages of every chat-model call (langchain's tracing hook)."""

    run_inline = True

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.calls.append(list(messages[0]))


def listing_model(*responses: str) -> tuple[FakeListChatModel, CallRecorder]:
    recorder = CallRecorder()
    return FakeListChatModel(responses=list(responses), callbacks=[recorder]), recorder


class ScriptedStructuredModel(BaseChatModel):
    """A chat model whose ``with_structured_output`` returns scripted answers in order.

    Each item of ``script`` is returned as is (an ``ExtractionOutput``, ``None``, a dict)
    or raised if it is an exception. ``received`` holds the messages of every call.
    """

    script: list[Any]
    received: list[list[BaseMessage]] = []

    @property
    def _llm_type(self) -> str:
        return "scripted-structured"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        raise AssertionError("the extractor must use with_structured_output on this model")

    def _answer(self, messages: list[BaseMessage]) -> Any:
        self.received.append(list(messages))
        if not self.script:
            raise AssertionError("more calls than scripted answers")
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    async def _aanswer(self, messages: list[BaseMessage]) -> Any:
        return self._answer(messages)

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Runnable[Any, Any]:
        assert schema is ExtractionOutput
        return RunnableLambda(self._answer, afunc=self._aanswer)


class ToolCallingFake(GenericFakeChatModel):
    """``GenericFakeChatModel`` with a no-op ``bind_tools``: langchain-core's structured output parses its tool calls."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Runnable[Any, Any]:
        return self


def tool_call(args: dict[str, Any]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "ExtractionOutput", "args": args, "id": "call_1"}])


def human_lines(messages: list[BaseMessage]) -> list[str]:
    """The ``[id] (date) Speaker: text`` lines of the (first) human message of a call."""
    human = next(m for m in messages if isinstance(m, HumanMessage))
    return [line for line in str(human.content).splitlines() if line.startswith("[")]


# --------------------------------------------------------------------------- mapping


MAPPING_TURNS = [
    turn("D1:1", "Caroline", "I went to the LGBTQ support group yesterday. It was so powerful!"),
    turn("D1:2", "Melanie", "I'm a nurse at St. Mary's. Tom thinks nursing is a thankless job."),
]
MAPPING_ANSWER: dict[str, Any] = {
    "events": [
        {
            "source_turn_id": "D1:1",
            "text": "went to the LGBTQ support group",
            "participants": ["I"],
            "time_text": "yesterday",
            "date": "2023-05-07",
            "concepts": ["LGBTQ support group"],
        }
    ],
    "facts": [
        {
            "source_turn_id": "D1:2",
            "subject": "Melanie",
            "predicate": "works as",
            "object": "nurse",
            "text": "Melanie works as a nurse.",
        }
    ],
    "claims": [
        {
            "source_turn_id": "D1:1",
            "source": "Caroline",
            "target": "LGBTQ support group",
            "predicate": "opinion",
            "polarity": 1,
            "timestamp": None,
            "content": "It was so powerful!",
        },
        {
            "source_turn_id": "D1:2",
            "source": "Tom",
            "target": "nursing",
            "predicate": "belief",
            "polarity": -1,
            "timestamp": None,
            "content": "nursing is a thankless job",
        },
    ],
    "concepts": [
        {"source_turn_id": "D1:2", "name": "St. Mary's", "kind": "organisation"},
        {"source_turn_id": "D1:2", "name": "nursing", "kind": "activity"},
    ],
}


def check_mapping(extractions: list[Extraction]) -> None:
    first, second = extractions
    assert [e.turn_id for e in extractions] == ["D1:1", "D1:2"]
    assert (first.speaker, first.timestamp) == ("Caroline", REF)
    assert all(isinstance(e, Extraction) for e in extractions)

    [event] = first.events
    assert isinstance(event, ExtractedEvent)
    assert event.text == "went to the LGBTQ support group"
    assert event.participants == ("Caroline",)  # "I" is the speaker
    assert event.start == datetime(2023, 5, 7, tzinfo=UTC)
    assert event.end == datetime(2023, 5, 8, tzinfo=UTC)
    assert event.start.tzinfo is not None
    assert (event.time_text, event.concepts, event.source_turn_id) == ("yesterday", ("LGBTQ support group",), "D1:1")
    # the concept an event names exists as a concept of its turn
    assert [(c.name, c.kind) for c in first.concepts] == [("LGBTQ support group", "thing")]

    [claim] = first.claims
    assert isinstance(claim, ExtractedClaim)
    assert (claim.source, claim.target, claim.predicate, claim.polarity) == (
        "Caroline",
        "LGBTQ support group",
        "opinion",
        1,
    )
    assert claim.sentiment == 1.0
    assert claim.timestamp == REF  # when it was said
    assert first.facts == []
    assert first.persons == ["Caroline"]

    [fact] = second.facts
    assert isinstance(fact, ExtractedFact)
    assert (fact.subject, fact.predicate, fact.object, fact.text) == (
        "Melanie",
        "works_as",
        "nurse",
        "Melanie works as a nurse.",
    )
    [tom_claim] = second.claims
    assert (tom_claim.source, tom_claim.polarity, tom_claim.predicate) == ("Tom", -1, "belief")  # named in the turn
    assert all(isinstance(c, ExtractedConcept) for c in second.concepts)
    assert [(c.name, c.kind, c.source_turn_id) for c in second.concepts] == [
        ("St. Mary's", "organization", "D1:2"),
        ("nursing", "activity", "D1:2"),
    ]
    assert second.persons == ["Melanie", "Tom"]


def test_json_text_path_maps_to_schema_dataclasses() -> None:
    model, recorder = listing_model(f"Here you go:\n```json\n{json.dumps(MAPPING_ANSWER)}\n```")
    extractor = LLMExtractor(model)
    assert isinstance(extractor, Extractor)
    assert not extractor.uses_structured_output

    check_mapping(extractor.extract(MAPPING_TURNS))

    [call] = recorder.calls
    assert [type(m) for m in call] == [SystemMessage, HumanMessage]
    assert human_lines(call) == [
        "[D1:1] (2023-05-08) Caroline: I went to the LGBTQ support group yesterday. It was so powerful!",
        "[D1:2] (2023-05-08) Melanie: I'm a nurse at St. Mary's. Tom thinks nursing is a thankless job.",
    ]
    assert "Valid turn ids: D1:1, D1:2" in str(call[1].content)


def test_structured_output_path_maps_to_schema_dataclasses() -> None:
    model = ScriptedStructuredModel(script=[ExtractionOutput.model_validate(MAPPING_ANSWER)], received=[])
    extractor = LLMExtractor(model)
    assert extractor.uses_structured_output

    check_mapping(extractor.extract(MAPPING_TURNS))
    [call] = model.received
    assert len(human_lines(call)) == 2


def test_langchain_structured_output_over_tool_calls() -> None:
    model = ToolCallingFake(messages=iter([tool_call(MAPPING_ANSWER)]))
    extractor = LLMExtractor(model, structured_output=True)
    assert extractor.uses_structured_output
    check_mapping(extractor.extract(MAPPING_TURNS))


def test_structured_output_dict_answer_is_accepted() -> None:
    model = ScriptedStructuredModel(script=[json.loads(answer(facts=[MAPPING_ANSWER["facts"][0]]))], received=[])
    [_, second] = LLMExtractor(model).extract(MAPPING_TURNS)
    assert second.facts[0].predicate == "works_as"


def test_turn_without_records_is_empty_and_persons_start_with_speaker() -> None:
    model, _ = listing_model(answer(events=[{"source_turn_id": "a", "text": "moved to Oslo"}]))
    a, b = LLMExtractor(model).extract([turn("a", "Ann", "We moved to Oslo."), turn("b", "Bo", "Tell me more.")])
    assert a.persons == ["Ann"] and a.events[0].participants == ("Ann",)  # no participants given: the speaker
    assert a.events[0].start is None  # no time given
    assert b.empty and b.persons == []


def test_speaker_is_put_first_among_participants() -> None:
    model, _ = listing_model(
        answer(events=[{"source_turn_id": "a", "text": "hiked", "participants": ["Tom", "ann", "she"]}])
    )
    [ext] = LLMExtractor(model).extract([turn("a", "Ann", "Tom and I hiked.")])
    assert ext.events[0].participants == ("Ann", "Tom")  # canonical spelling, pronoun dropped
    assert ext.persons == ["Ann", "Tom"]


# --------------------------------------------------------------------------- batching


def test_batching_20_turns_in_batches_of_8_makes_3_calls() -> None:
    turns = [turn(f"t{i}", "Ann", f"I planted {i} tomato seedlings in the garden.") for i in range(20)]
    model, recorder = listing_model(EMPTY)
    extractions = LLMExtractor(model, batch_size=8).extract(turns)
    assert len(recorder.calls) == 3
    assert [len(human_lines(call)) for call in recorder.calls] == [8, 8, 4]
    assert [line.split("]")[0] for line in human_lines(recorder.calls[2])] == ["[t16", "[t17", "[t18", "[t19"]
    assert [e.turn_id for e in extractions] == [t.id for t in turns]


def test_default_batch_size_is_8() -> None:
    turns = [turn(f"t{i}", "Ann", f"I read chapter {i} of the novel.") for i in range(9)]
    model, recorder = listing_model(EMPTY)
    LLMExtractor(model).extract(turns)
    assert [len(human_lines(call)) for call in recorder.calls] == [8, 1]


def test_batches_never_mix_conversations_and_results_keep_input_order() -> None:
    turns = [
        turn("a1", "Ann", "I adopted a cat named Miso.", conversation_id="A"),
        turn("b1", "Bo", "I started learning the cello.", conversation_id="B"),
        turn("a2", "Ann", "Miso sleeps all day on my desk.", conversation_id="A"),
        turn("b2", "Bo", "My cello teacher is very strict.", conversation_id="B"),
    ]
    model, recorder = listing_model(EMPTY)
    extractions = LLMExtractor(model, batch_size=8).extract(turns)
    assert [[line.split("]")[0] for line in human_lines(c)] for c in recorder.calls] == [["[a1", "[a2"], ["[b1", "[b2"]]
    assert [e.turn_id for e in extractions] == ["a1", "b1", "a2", "b2"]


def test_same_turn_id_in_two_namespaces_is_allowed() -> None:
    turns = [turn("t1", "Ann", "I moved to Oslo.", namespace="x"), turn("t1", "Bo", "I moved to Rome.", namespace="y")]
    model, recorder = listing_model(EMPTY)
    assert len(LLMExtractor(model).extract(turns)) == 2
    assert len(recorder.calls) == 2


def test_empty_input_makes_no_call() -> None:
    model, recorder = listing_model(EMPTY)
    assert LLMExtractor(model).extract([]) == []
    assert recorder.calls == []


# --------------------------------------------------------------------------- chit-chat


def test_chitchat_turns_skip_the_model_entirely() -> None:
    model = GenericFakeChatModel(messages=iter([]))  # any call would fail: nothing scripted
    turns = [turn("c1", "Ann", "Hi!"), turn("c2", "Bo", "Thanks!"), turn("c3", "Ann", "Bye!")]
    extractions = LLMExtractor(model).extract(turns)
    assert [e.turn_id for e in extractions] == ["c1", "c2", "c3"]
    assert all(e.empty for e in extractions)
    assert [e.speaker for e in extractions] == ["Ann", "Bo", "Ann"]


def test_chitchat_turns_are_left_out_of_the_batch() -> None:
    model, recorder = listing_model(EMPTY)
    turns = [turn("c1", "Ann", "Hi!"), turn("c2", "Bo", "I got a new job at the bakery."), turn("c3", "Ann", "Bye!")]
    LLMExtractor(model).extract(turns)
    [call] = recorder.calls
    assert [line.split("]")[0] for line in human_lines(call)] == ["[c2"]


def test_chitchat_filter_can_be_turned_off() -> None:
    model, recorder = listing_model(EMPTY)
    LLMExtractor(model, skip_chitchat=False).extract([turn("c1", "Ann", "Hi!")])
    assert len(recorder.calls) == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hi!", True),
        ("Hey, how are you?", True),
        ("Thanks so much, bye!", True),
        ("haha", True),
        ("👍", True),
        ("No.", False),  # answers a question
        ("Yes, I do.", False),
        ("I hate running.", False),
        ("Hi! I moved to Oslo last week.", False),
    ],
)
def test_local_chitchat_fallback(text: str, expected: bool) -> None:
    assert _is_chitchat(text) is expected


def test_shared_chitchat_filter_is_preferred_or_local_fallback_used() -> None:
    chosen = llm_module._chitchat_filter()
    try:
        from langmem_cog.graph.rules import is_chitchat
    except ImportError:
        assert chosen is _is_chitchat
    else:
        assert chosen is is_chitchat


# --------------------------------------------------------------------------- retries and errors

ONE_TURN = [turn("D1:1", "Ann", "I adopted a dog named Rex last Friday.")]
REX = answer(
    facts=[{"source_turn_id": "D1:1", "subject": "Ann", "predicate": "has", "object": "dog", "text": "Ann has a dog."}]
)


def test_retry_succeeds_on_second_answer_after_invalid_json() -> None:
    model, recorder = listing_model("Sorry, I cannot produce JSON {oops", REX)
    [ext] = LLMExtractor(model).extract(ONE_TURN)
    assert ext.facts[0].object == "dog"
    assert len(recorder.calls) == 2
    retry = recorder.calls[1]
    # first request, then the invalid answer, then the request to fix it
    assert [type(m) for m in retry] == [SystemMessage, HumanMessage, AIMessage, HumanMessage]
    assert retry[2].content == "Sorry, I cannot produce JSON {oops"
    assert "could not be used: the reply holds no JSON object" in str(retry[3].content)
    assert "D1:1" in str(retry[3].content)
    with pytest.raises(ValueError, match="cut off"):  # a reply that ran out of output tokens says so
        parse_json_output('{"events": [{"source_turn_id": "D1:1", "text": "adopted a d', ExtractionOutput)


def test_retry_after_schema_violation_shows_the_validation_error() -> None:
    bad = answer(
        claims=[{"source_turn_id": "D1:1", "source": "Ann", "target": "Rex", "polarity": "very", "content": "x"}]
    )
    model, recorder = listing_model(bad, REX)
    [ext] = LLMExtractor(model).extract(ONE_TURN)
    assert ext.facts and len(recorder.calls) == 2
    assert "polarity" in str(recorder.calls[1][-1].content)


def test_missing_top_level_key_is_invalid() -> None:
    model, recorder = listing_model('{"events": []}', REX)
    LLMExtractor(model).extract(ONE_TURN)
    assert len(recorder.calls) == 2


def test_structured_path_retries_when_no_tool_call_is_made() -> None:
    model = ScriptedStructuredModel(script=[None, ValidationError.from_exception_data("x", []), output()], received=[])
    [ext] = LLMExtractor(model).extract(ONE_TURN)
    assert ext.empty
    assert len(model.received) == 3
    assert [type(m) for m in model.received[1]] == [SystemMessage, HumanMessage, HumanMessage]
    assert "no structured answer" in str(model.received[1][-1].content)


def test_tool_calling_fake_without_tool_call_is_retried() -> None:
    model = ToolCallingFake(messages=iter([AIMessage(content="I'd rather chat."), tool_call(json.loads(REX))]))
    [ext] = LLMExtractor(model).extract(ONE_TURN)
    assert ext.facts[0].object == "dog"


def test_repeated_invalid_output_raises_extraction_error_naming_turn_ids() -> None:
    turns = [turn("D1:1", "Ann", "I adopted a dog."), turn("D1:2", "Ann", "His name is Rex.")]
    model, recorder = listing_model("not json")
    with pytest.raises(ExtractionError) as info:
        LLMExtractor(model, max_retries=2).extract(turns)
    assert len(recorder.calls) == 3  # 1 + 2 retries
    assert "D1:1, D1:2" in str(info.value)
    assert "3 attempt" in str(info.value)
    assert getattr(info.value, "turn_ids", None) == ("D1:1", "D1:2")
    assert isinstance(info.value, RuntimeError)


def test_max_retries_zero_means_one_call() -> None:
    model, recorder = listing_model("not json")
    with pytest.raises(ExtractionError):
        LLMExtractor(model, max_retries=0).extract(ONE_TURN)
    assert len(recorder.calls) == 1


def test_on_error_skip_logs_and_returns_empty_extractions(caplog: pytest.LogCaptureFixture) -> None:
    turns = [turn("a", "Ann", "I adopted a dog."), turn("b", "Ann", "I adopted a cat named Miso.")]
    cat = answer(facts=[{"source_turn_id": "b", "subject": "Ann", "predicate": "has", "object": "cat", "text": "."}])
    model, recorder = listing_model("garbage", "garbage", cat)
    with caplog.at_level(logging.WARNING, logger="langmem_cog.graph.llm_extractor"):
        a, b = LLMExtractor(model, batch_size=1, max_retries=1, on_error="skip").extract(turns)
    assert a.empty and a.turn_id == "a"
    assert b.facts[0].object == "cat"  # the next batch still ran
    assert len(recorder.calls) == 3
    assert any("turns a:" in r.getMessage() and "skipping" in r.getMessage() for r in caplog.records)


def test_model_failure_is_not_retried_and_becomes_extraction_error() -> None:
    model = ScriptedStructuredModel(script=[ConnectionError("server down")], received=[])
    with pytest.raises(ExtractionError, match="D1:1.*ConnectionError: server down") as info:
        LLMExtractor(model).extract(ONE_TURN)
    assert isinstance(info.value.__cause__, ConnectionError)
    assert len(model.received) == 1


def test_model_failure_with_skip_returns_empty() -> None:
    model = ScriptedStructuredModel(script=[ConnectionError("server down")], received=[])
    [ext] = LLMExtractor(model, on_error="skip").extract(ONE_TURN)
    assert ext.empty


def test_graph_bubble_up_is_never_swallowed() -> None:
    model = ScriptedStructuredModel(script=[GraphInterrupt(())], received=[])
    with pytest.raises(GraphInterrupt):
        LLMExtractor(model, on_error="skip").extract(ONE_TURN)


# --------------------------------------------------------------------------- turn ids, time, attribution


def test_records_citing_unknown_turn_ids_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    reply = answer(
        events=[
            {"source_turn_id": "D9:9", "text": "invented event"},
            {"source_turn_id": "[D1:1]", "text": "adopted a dog"},
        ],
        concepts=[{"source_turn_id": "nope", "name": "Rex"}],
        claims=[{"source_turn_id": "D9:9", "source": "Ann", "target": "dogs", "polarity": 1, "content": "x"}],
    )
    model, _ = listing_model(reply)
    with caplog.at_level(logging.WARNING, logger="langmem_cog.graph.llm_extractor"):
        [ext] = LLMExtractor(model).extract(ONE_TURN)
    assert [e.text for e in ext.events] == ["adopted a dog"]
    assert ext.claims == [] and ext.concepts == []
    warning = " ".join(r.getMessage() for r in caplog.records)
    assert "D9:9" in warning and "nope" in warning and "3 record" in warning


def test_relative_time_text_is_resolved_against_the_turn_timestamp() -> None:
    turns = [
        turn("a", "Ann", "I went to a support group yesterday."),
        turn(
            "b", "Ann", "I adopted Rex last Friday.", datetime(2023, 7, 12, 9, 0, tzinfo=timezone(timedelta(hours=2)))
        ),
        turn("c", "Ann", "I'm going to the concert on Friday."),
        turn("d", "Ann", "We met two weeks ago at the lake."),
    ]
    events: list[dict[str, Any]] = [
        {"source_turn_id": "a", "text": "went to a support group", "time_text": "yesterday", "date": None},
        {"source_turn_id": "b", "text": "adopted Rex", "time_text": "last Friday", "date": "null"},
        {"source_turn_id": "c", "text": "goes to the concert", "time_text": "on Friday"},
        {"source_turn_id": "d", "text": "met at the lake", "time_text": "two weeks ago", "date": "sometime"},
    ]
    model, _ = listing_model(answer(events=events))
    a, b, c, d = (x.events[0] for x in LLMExtractor(model).extract(turns))
    assert (a.start, a.end) == (datetime(2023, 5, 7, tzinfo=UTC), datetime(2023, 5, 8, tzinfo=UTC))
    tz = timezone(timedelta(hours=2))
    assert (b.start, b.end) == (datetime(2023, 7, 7, tzinfo=tz), datetime(2023, 7, 8, tzinfo=tz))  # turn's zone
    assert c.start == datetime(2023, 5, 12, tzinfo=UTC)  # future tense in the turn: the next Friday
    assert d.start == datetime(2023, 4, 24, tzinfo=UTC)  # unreadable date: time_text used
    for event in (a, b, c, d):
        assert event.start is not None and event.start.tzinfo is not None and event.end is not None


def test_iso_date_from_the_model_wins_and_partial_iso_dates_are_intervals() -> None:
    turns = [turn(f"t{i}", "Ann", f"Event number {i} happened then.") for i in range(3)]
    events = [
        {"source_turn_id": "t0", "text": "e0", "time_text": "yesterday", "date": "2023-01-02"},
        {"source_turn_id": "t1", "text": "e1", "date": "2022-02"},
        {"source_turn_id": "t2", "text": "e2", "date": "2023-05-01T10:30:00"},
    ]
    model, _ = listing_model(answer(events=events))
    e0, e1, e2 = (x.events[0] for x in LLMExtractor(model).extract(turns))
    assert e0.start == datetime(2023, 1, 2, tzinfo=UTC)
    assert (e1.start, e1.end) == (datetime(2022, 2, 1, tzinfo=UTC), datetime(2022, 3, 1, tzinfo=UTC))
    assert (e2.start, e2.end) == (datetime(2023, 5, 1, 10, 30, tzinfo=UTC), None)  # naive: the turn's zone


def test_claim_timestamp_from_iso_or_relative_text() -> None:
    claims = [
        {
            "source_turn_id": "D1:1",
            "source": "Ann",
            "target": "cats",
            "polarity": -1,
            "timestamp": "2020-01-01",
            "content": "a",
        },
        {
            "source_turn_id": "D1:1",
            "source": "Ann",
            "target": "dogs",
            "polarity": 1,
            "timestamp": "last year",
            "content": "b",
        },
    ]
    model, _ = listing_model(answer(claims=claims))
    [ext] = LLMExtractor(model).extract(ONE_TURN)
    assert [c.timestamp for c in ext.claims] == [datetime(2020, 1, 1, tzinfo=UTC), datetime(2022, 1, 1, tzinfo=UTC)]


def test_claims_are_attributed_to_speakers_or_named_persons() -> None:
    turns = [
        turn("D1:1", "Caroline", "Honestly I think jazz is boring."),
        turn("D1:2", "Melanie", "My friend Tom says jazz is wonderful."),
    ]

    def claim(turn_id: str, source: str) -> dict[str, Any]:
        return {"source_turn_id": turn_id, "source": source, "target": "jazz", "polarity": 0, "content": "jazz"}

    claims = [
        claim("D1:1", "I"),  # first person: the speaker
        claim("D1:1", "caroline"),  # a speaker, canonical spelling
        claim("D1:1", "Bob"),  # named nowhere: the turn's speaker
        claim("D1:2", "Tom"),  # named in the batch: kept
        claim("D1:2", "she"),  # a pronoun: the turn's speaker
        claim("D1:2", "Caroline"),  # another speaker of the batch, not named in this turn: the turn's speaker
        claim("D1:2", "friend"),  # written in lower case: not a name
        claim("D1:2", ""),
    ]
    model, _ = listing_model(answer(claims=claims))
    first, second = LLMExtractor(model).extract(turns)
    assert [c.source for c in first.claims] == ["Caroline", "Caroline", "Caroline"]
    assert [c.source for c in second.claims] == ["Tom", "Melanie", "Melanie", "Melanie", "Melanie"]
    assert second.persons == ["Melanie", "Tom"]
    assert all(c.source_turn_id == "D1:2" for c in second.claims)


def test_a_models_made_up_subjects_and_dates_never_reach_the_graph() -> None:
    turns = [turn("D1:1", "Maya", "Running is boring. Tom ran with me yesterday."), turn("D1:2", "Leo", "Sure.")]
    facts = [
        {"source_turn_id": "D1:1", "subject": "running", "predicate": "is", "object": "boring", "text": ""},  # an opinion
        {"source_turn_id": "D1:1", "subject": "Zed", "predicate": "likes", "object": "jazz", "text": ""},  # made up
        {"source_turn_id": "D1:1", "subject": "I", "predicate": "runs_with", "object": "Tom", "text": ""},
        {"source_turn_id": "D1:1", "subject": "Tom", "predicate": "runs", "object": "daily", "text": ""},
    ]
    events = [{"source_turn_id": "D1:1", "text": "ran", "participants": ["Tom", "Beyonce", "Leo"], "time_text": "yesterday",
               "date": None, "concepts": []}]
    claims = [{"source_turn_id": "D1:1", "source": "I", "target": "running", "polarity": -1, "content": "boring",
               "timestamp": "2999-01-01"}]
    model, _ = listing_model(answer(facts=facts, events=events, claims=claims))
    first, _ = LLMExtractor(model).extract(turns)
    assert [(f.subject, f.predicate) for f in first.facts] == [("Maya", "runs_with"), ("Tom", "runs")]
    assert first.events[0].participants == ("Tom",)  # nobody the turn does not name (Leo speaks elsewhere)
    assert first.claims[0].timestamp == turns[0].timestamp  # never dated after it was said
    assert "Beyonce" not in first.persons and "Zed" not in first.persons


def test_opinion_stays_a_claim_and_polarity_words_are_read() -> None:
    claims = [
        {"source_turn_id": "D1:1", "source": "Ann", "target": "Rex", "polarity": "negative", "content": "Rex is loud"}
    ]
    model, _ = listing_model(answer(claims=claims))
    [ext] = LLMExtractor(model).extract(ONE_TURN)
    assert ext.facts == [] and ext.claims[0].polarity == -1 and ext.claims[0].predicate == "opinion"


def test_blank_records_and_person_concepts_are_dropped() -> None:
    reply = answer(
        events=[{"source_turn_id": "D1:1", "text": "  "}],
        facts=[{"source_turn_id": "D1:1", "subject": "she", "predicate": "is", "object": "tall", "text": "x"}],
        concepts=[
            {"source_turn_id": "D1:1", "name": "Rex", "kind": "person"},
            {"source_turn_id": "D1:1", "name": "Oslo", "kind": "city"},
        ],
    )
    model, _ = listing_model(reply)
    [ext] = LLMExtractor(model).extract(ONE_TURN)
    assert ext.events == [] and ext.facts == []
    assert [(c.name, c.kind) for c in ext.concepts] == [("Oslo", "place")]


# --------------------------------------------------------------------------- async


async def test_aextract_json_text_path() -> None:
    model, recorder = listing_model("not json", json.dumps(MAPPING_ANSWER))
    check_mapping(await LLMExtractor(model).aextract(MAPPING_TURNS))
    assert len(recorder.calls) == 2


async def test_aextract_structured_path_and_batching() -> None:
    turns = [turn(f"t{i}", "Ann", f"I planted {i} tomato seedlings.") for i in range(20)]
    model = ScriptedStructuredModel(script=[output(), output(), output()], received=[])
    extractions = await LLMExtractor(model, batch_size=8, max_concurrency=2).aextract(turns)
    assert [e.turn_id for e in extractions] == [t.id for t in turns]
    assert sorted(len(human_lines(m)) for m in model.received) == [4, 8, 8]


async def test_aextract_raises_extraction_error_and_skips_chitchat() -> None:
    model, recorder = listing_model("nope")
    turns = [turn("x", "Ann", "Hello!"), turn("y", "Ann", "I sold my bike.")]
    with pytest.raises(ExtractionError, match="turns y:"):
        await LLMExtractor(model, max_retries=1).aextract(turns)
    assert len(recorder.calls) == 2
    assert all("[x]" not in line for call in recorder.calls for line in human_lines(call))


async def test_aextract_on_error_skip_and_graph_bubble_up() -> None:
    model = ScriptedStructuredModel(script=[RuntimeError("boom")], received=[])
    [ext] = await LLMExtractor(model, on_error="skip").aextract(ONE_TURN)
    assert ext.empty
    model = ScriptedStructuredModel(script=[GraphInterrupt(())], received=[])
    with pytest.raises(GraphInterrupt):
        await LLMExtractor(model, on_error="skip").aextract(ONE_TURN)


async def test_aextract_empty_input() -> None:
    model, recorder = listing_model(EMPTY)
    assert await LLMExtractor(model).aextract([]) == []
    assert recorder.calls == []


# --------------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    "kwargs",
    [
        {"batch_size": 0},
        {"batch_size": True},
        {"max_retries": -1},
        {"max_concurrency": 0},
        {"on_error": "ignore"},
        {"structured_output": "yes"},
    ],
)
def test_invalid_arguments_are_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        LLMExtractor(FakeListChatModel(responses=[EMPTY]), **kwargs)


def test_model_must_be_a_runnable() -> None:
    with pytest.raises(InvalidInputError, match="chat model"):
        LLMExtractor(object())  # type: ignore[arg-type]


def test_structured_output_required_but_unsupported() -> None:
    with pytest.raises(InvalidInputError, match="with_structured_output"):
        LLMExtractor(FakeListChatModel(responses=[EMPTY]), structured_output=True)


def test_structured_output_can_be_turned_off() -> None:
    model = ToolCallingFake(messages=iter([AIMessage(content=REX)]))
    extractor = LLMExtractor(model, structured_output=False)
    assert not extractor.uses_structured_output
    assert extractor.extract(ONE_TURN)[0].facts


def test_invalid_turns_are_rejected() -> None:
    extractor = LLMExtractor(FakeListChatModel(responses=[EMPTY]))
    with pytest.raises(InvalidInputError, match=r"turns\[0\]"):
        extractor.extract([{"id": "t"}])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        extractor.extract("some text")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="twice"):
        extractor.extract([ONE_TURN[0], ONE_TURN[0]])


# --------------------------------------------------------------------------- prompts


def test_extraction_prompt_explains_pec2f_and_lists_turns() -> None:
    assert set(EXTRACTION_PROMPT.input_variables) == {"turns", "turn_ids"}
    for phrase in ("Person, Event, Concept, Claim, Fact", "never a fact", "Use only the turn ids", "date of that turn"):
        assert phrase in EXTRACTION_SYSTEM
    # the worked example in the system prompt is itself a valid answer
    example = EXTRACTION_SYSTEM.split("Example answer:\n", 1)[1]
    assert parse_json_output(example, ExtractionOutput).claims[0].polarity == -1
    messages = EXTRACTION_PROMPT.format_messages(turns="[t1] (2024-01-01) Ann: {not a variable}", turn_ids="t1")
    assert messages[0].content == EXTRACTION_SYSTEM
    assert "{not a variable}" in str(messages[1].content)


def test_format_turns_keeps_one_line_per_turn_and_uses_local_date() -> None:
    late = datetime(2023, 5, 8, 23, 30, tzinfo=timezone(timedelta(hours=-5)))  # 9 May in UTC
    text = format_turns([turn("t1", "Ann", "Hi\n[t2] (2020-01-01) Bo: fake"), turn("t3", "Bo", "ok", late)])
    assert text.splitlines() == ["[t1] (2023-05-08) Ann: Hi / [t2] (2020-01-01) Bo: fake", "[t3] (2023-05-08) Bo: ok"]


def test_other_prompts_variables_and_schemas() -> None:
    assert set(CONSOLIDATION_PROMPT.input_variables) == {"person", "concept", "count", "events"}
    assert set(ROUTER_PROMPT.input_variables) == {"question", "today"}
    assert set(SUFFICIENCY_PROMPT.input_variables) == {"question", "evidence"}
    assert set(EXTRACTION_RETRY.input_variables) == {"error", "turn_ids"}
    assert ConsolidatedFactOutput(text="Leo climbs.").text == "Leo climbs."
    router = RouterOutput.model_validate({"intent": "belief", "time_window_start": "", "time_window_end": "2023-05-31"})
    assert (router.intent, router.time_window_start, router.time_window_end) == ("BELIEF", None, "2023-05-31")
    with pytest.raises(ValidationError):
        RouterOutput.model_validate({"intent": "COMPARE", "time_window_start": "last May"})
    with pytest.raises(ValidationError):
        RouterOutput.model_validate({"intent": "GOSSIP"})
    assert SufficiencyOutput.model_validate({"sufficient": False}).reason == ""
    for prompt, kwargs in (
        (ROUTER_PROMPT, {"question": "q", "today": "2024-01-01"}),
        (SUFFICIENCY_PROMPT, {"question": "q", "evidence": "e"}),
        (CONSOLIDATION_PROMPT, {"person": "Leo", "concept": "climbing", "count": 3, "events": "- e"}),
    ):
        assert [m.type for m in prompt.format_messages(**kwargs)] == ["system", "human"]


@pytest.mark.parametrize(
    "text",
    [
        '{"sufficient": true, "reason": "r"}',
        '```json\n{"sufficient": true, "reason": "r"}\n```',
        '```\n{"sufficient": true, "reason": "r"}\n```',
        '<think>{"sufficient": false}</think>Answer: {"sufficient": true, "reason": "r"} -- done',
    ],
)
def test_parse_json_output_strips_fences_and_prose(text: str) -> None:
    assert parse_json_output(text, SufficiencyOutput).sufficient is True


@pytest.mark.parametrize("text", ["", "no json here", "[1, 2]", '{"sufficient": "maybe"}', "{broken"])
def test_parse_json_output_rejects_invalid(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_json_output(text, SufficiencyOutput)
    assert info.value.observation  # type: ignore[attr-defined]


def test_claim_output_coerces_polarity_and_nulls() -> None:
    base = {"source_turn_id": 7, "source": "Ann", "target": "x", "content": "c"}
    assert ClaimOutput.model_validate({**base, "polarity": 0.4}).polarity == 1
    assert ClaimOutput.model_validate({**base, "polarity": "-1"}).polarity == -1
    claim = ClaimOutput.model_validate({**base, "polarity": "mixed", "timestamp": "null"})
    assert (claim.polarity, claim.timestamp, claim.source_turn_id) == (0, None, "7")
    with pytest.raises(ValidationError):
        ClaimOutput.model_validate({**base, "polarity": "very"})


def test_fake_models_are_chat_models() -> None:
    # guard: the fakes used above really are LangChain chat models
    assert isinstance(ScriptedStructuredModel(script=[], received=[]), BaseChatModel)
    assert isinstance(ToolCallingFake(messages=iter([])), BaseChatModel)
    gen: Iterator[str] = iter(["x"])
    assert isinstance(GenericFakeChatModel(messages=gen), BaseChatModel)
