"""The rule-based router (intents, time windows, names), the LLM router and the sufficiency checks."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.runnables import RunnableLambda

from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.prompts import RouterOutput, SufficiencyOutput
from langmem_cog.graph.router import (
    INTENTS,
    LLMRouter,
    LLMSufficiency,
    Route,
    RuleSufficiency,
    Verdict,
    extract_entities,
    format_evidence,
    node_types,
    query_time_window,
    route,
)

NOW = datetime(2023, 11, 12, 18, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        # COMPARE
        ("What do Maya and Leo both like?", "COMPARE"),
        ("What hobbies do Maya and Leo have in common?", "COMPARE"),
        ("Compare Maya's and Leo's jobs.", "COMPARE"),
        ("Do Maya and Leo share a favourite film?", "COMPARE"),
        ("Did Maya and Leo read the same book?", "COMPARE"),
        ("What is the difference between Maya's job and Leo's?", "COMPARE"),
        ("When did Maya and Leo both go climbing?", "COMPARE"),  # shared-ness wins over "when"
        # TEMPORAL (leading cue wins over opinion words)
        ("When did Leo adopt his dog?", "TEMPORAL"),
        ("What year did Leo start teaching?", "TEMPORAL"),
        ("In what month did Maya run her first 10k?", "TEMPORAL"),
        ("How long ago did Leo move to Westbrook?", "TEMPORAL"),
        ("How long has Leo been a teacher?", "TEMPORAL"),
        ("When did Maya start to think Doug is unfair?", "TEMPORAL"),
        ("How many times did Leo go climbing, and when?", "TEMPORAL"),
        ("Leo went to Yosemite when?", "TEMPORAL"),
        ("What did Leo do in July 2023?", "TEMPORAL"),  # only a time expression
        ("Did they talk at the same time every week?", "OTHER"),  # "same time" is not a comparison
        # BELIEF
        ("What does Maya think of her manager Doug?", "BELIEF"),
        ("Who thinks Everything Everywhere All at Once is overrated?", "BELIEF"),
        ("How does Maya feel about running?", "BELIEF"),
        ("What is Leo's opinion of the movie?", "BELIEF"),
        ("What does Maya like about yoga?", "BELIEF"),
        ("Does Maya like running now?", "BELIEF"),
        ("Does Leo prefer tea or coffee?", "BELIEF"),
        ("Why does Maya hate running?", "BELIEF"),  # an opinion asked with "why"
        # DETAIL (why / verify)
        ("Why did Leo change schools?", "DETAIL"),
        ("Is it true that Leo is allergic to shellfish?", "DETAIL"),
        ("Did Leo really climb El Capitan?", "DETAIL"),
        # OTHER
        ("What is Leo allergic to?", "OTHER"),
        ("What is Maya's favourite book?", "OTHER"),  # a stated fact, not an opinion
        ("What is the name of Leo's dog?", "OTHER"),
        ("What did Maya say when she finished the race?", "OTHER"),  # "when" as a conjunction
        ("Would a crab boil be a good way to celebrate Leo's promotion?", "OTHER"),
    ],
)
def test_route_intents(question: str, intent: str) -> None:
    assert route(question, NOW).intent == intent


def test_route_time_window_from_the_question() -> None:
    r = route("What did Leo do in July 2023?", NOW)
    assert r.time_window == (datetime(2023, 7, 1, tzinfo=UTC), datetime(2023, 8, 1, tzinfo=UTC))
    assert r.cue == "time expression"
    # relative expressions resolve against now; several expressions give their span
    assert route("How did Maya feel last month?", NOW).time_window == (
        datetime(2023, 10, 1, tzinfo=UTC), datetime(2023, 11, 1, tzinfo=UTC))
    span = query_time_window("between mid-March and early April 2023", NOW)
    assert span == (datetime(2023, 3, 11, tzinfo=UTC), datetime(2023, 4, 11, tzinfo=UTC))
    assert route("What is Leo allergic to?", NOW).time_window is None


def test_route_validates_input() -> None:
    with pytest.raises(InvalidInputError):
        route("   ")
    with pytest.raises(InvalidInputError):
        route("When?", datetime(2023, 1, 1))  # naive
    with pytest.raises(InvalidInputError):
        Route("SOMETHING")
    assert route("When did Leo adopt his dog?").intent == "TEMPORAL"  # now=None: the current time


def test_entities_and_node_types() -> None:
    assert extract_entities("What do Maya and Leo both like?") == ("Maya", "Leo")
    assert extract_entities("When did Doug start as Maya's manager?") == ("Doug", "Maya")
    assert extract_entities("what is it?") == ()
    assert route("What do Maya and Leo both like?").entities == ("Maya", "Leo")
    assert node_types("BELIEF") is None
    for intent in INTENTS:
        if intent != "BELIEF":
            assert "Claim" not in node_types(intent)


# ---------------------------------------------------------------------------- LLM router
def test_llm_router_parses_json_replies() -> None:
    model = FakeListChatModel(responses=[
        '{"intent": "belief", "time_window_start": "2023-05-01", "time_window_end": "2023-05-31"}',
        'Sure.\n```json\n{"intent": "COMPARE", "time_window_start": null, "time_window_end": "null"}\n```',
    ])
    router = LLMRouter(model)
    first = router("How did Maya feel in May?", NOW)
    assert first.intent == "BELIEF" and first.cue == "llm" and first.entities == ("Maya",)
    assert first.time_window == (datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC))
    second = router("Maya vs Leo?", NOW)
    assert second.intent == "COMPARE" and second.time_window is None


def test_llm_router_falls_back_to_rules_on_unreadable_replies(caplog: pytest.LogCaptureFixture) -> None:
    router = LLMRouter(FakeListChatModel(responses=["I think it is about time.", '{"intent": "SOMETHING"}']))
    with caplog.at_level("WARNING"):
        assert router("When did Leo adopt his dog?", NOW).intent == "TEMPORAL"
        assert router("What is Leo allergic to?", NOW).intent == "OTHER"
    assert "falling back" in caplog.text


class _StructuredModel:
    """A chat model stand-in with structured output: returns the given object for ``schema``."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.schemas: list[type] = []

    def with_structured_output(self, schema: type) -> RunnableLambda:
        self.schemas.append(schema)
        return RunnableLambda(lambda _messages: self.value)

    def invoke(self, _messages: Any) -> Any:  # pragma: no cover - the structured path answers
        raise AssertionError("plain invoke should not be needed")


def test_llm_router_uses_structured_output_when_available() -> None:
    model = _StructuredModel(RouterOutput(intent="DETAIL"))
    r = LLMRouter(model)("Why did Leo move?", NOW)
    assert r.intent == "DETAIL" and model.schemas == [RouterOutput]
    # a dict answer is validated too
    assert LLMRouter(_StructuredModel({"intent": "temporal"}))("x", NOW).intent == "TEMPORAL"


def test_llm_router_rejects_non_models() -> None:
    with pytest.raises(InvalidInputError):
        LLMRouter(object())


# ---------------------------------------------------------------------------- sufficiency
def _ev(n: int, score: float = 0.8, node_type: str = "Event", speaker: str = "Leo", text: str = "x") -> list[dict]:
    return [{"turn_id": f"t{i}", "score": score, "node_type": node_type, "speaker": speaker, "text": text,
             "timestamp": "2023-05-08T10:00:00+00:00"} for i in range(n)]


def test_rule_sufficiency_needs_enough_good_turns() -> None:
    check = RuleSufficiency(min_turns=3, min_score=0.5)
    assert check("q", Route("OTHER"), _ev(3)).sufficient
    assert not check("q", Route("OTHER"), _ev(2)).sufficient
    low = check("q", Route("OTHER"), _ev(5, score=0.2))
    assert not low.sufficient and "score >= 0.5" in low.reason
    with pytest.raises(InvalidInputError):
        RuleSufficiency(min_turns=0)


def test_rule_sufficiency_intent_requirements() -> None:
    check = RuleSufficiency(min_turns=2, min_score=0.5)
    compare = Route("COMPARE", entities=("Leo", "Maya"))
    assert not check("q", compare, _ev(3)).sufficient  # Leo only
    both = _ev(2) + _ev(1, speaker="Maya")
    assert check("q", compare, both).sufficient
    mentioned = _ev(2, text="Maya and I went climbing")  # Maya named in Leo's turn counts
    assert check("q", compare, mentioned).sufficient
    assert not check("q", Route("COMPARE"), _ev(3)).sufficient  # no names: two speakers needed
    assert check("q", Route("COMPARE"), both).sufficient
    assert not check("q", Route("BELIEF"), _ev(3)).sufficient
    assert check("q", Route("BELIEF"), _ev(2) + _ev(1, node_type="Claim")).sufficient
    via = [{**e, "node_type": "Concept", "via_types": ["Claim", "Concept"]} for e in _ev(2)]
    assert check("q", Route("BELIEF"), via).sufficient
    assert not check("q", Route("TEMPORAL"), _ev(3, node_type="Concept")).sufficient
    assert check("q", Route("TEMPORAL"), _ev(3)).sufficient


def test_llm_sufficiency() -> None:
    model = FakeListChatModel(responses=['{"sufficient": false, "reason": "no date"}', "garbage"])
    check = LLMSufficiency(model)
    assert check("When?", Route("TEMPORAL"), _ev(1)) == Verdict(False, "no date")
    # unreadable reply: the rule-based fallback decides
    assert check("When?", Route("TEMPORAL"), _ev(3)).sufficient
    # no evidence: no call at all (the fake would run out of responses otherwise)
    assert check("When?", Route("TEMPORAL"), []) == Verdict(False, "no evidence yet")
    structured = LLMSufficiency(_StructuredModel(SufficiencyOutput(sufficient=True, reason="stated")))
    assert structured("q", Route("OTHER"), _ev(1)) == Verdict(True, "stated")


def test_format_evidence() -> None:
    text = format_evidence(_ev(12), limit=2)
    assert text.splitlines() == ["[t0] (2023-05-08) Leo: x", "[t1] (2023-05-08) Leo: x"]
    assert format_evidence([]) == "(none)"
