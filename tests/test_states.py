"""States a person holds one value of at a time (vehicle, school, diet, relationship, home, job): what the
rule extractor reads, how reconciliation orders their values, and how a question about a state gets the
graph's value (langmem_cog/graph/rules/states.py, reconcile.py, provenance.py; rank/questions.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import networkx as nx
import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from langmem_cog.graph.llm_extractor import LLMExtractor
from langmem_cog.graph.prompts import EXTRACTION_SYSTEM
from langmem_cog.graph.provenance import (
    TurnFact,
    TurnRecords,
    current_state_first,
    state_facts,
    state_value_first,
    turn_records,
)
from langmem_cog.graph.reconcile import STATE_PREDICATES, reconcile_facts, state_predicate
from langmem_cog.graph.rules import RuleExtractor
from langmem_cog.rank.questions import asked_state, asks_present_state
from langmem_cog.records import make_turn

T0 = datetime(2023, 1, 2, 9, tzinfo=UTC)


def states_of(text: str, speaker: str = "Ann") -> list[tuple[str, str]]:
    turn = make_turn(id="t", namespace="n", speaker=speaker, text=text, timestamp=T0)
    [ex] = RuleExtractor().extract([turn])
    return [(f.predicate, f.object) for f in ex.facts if f.predicate in STATE_PREDICATES]


@pytest.mark.parametrize(("text", "expected"), [
    ("Traded in the corolla friday, got a used 2016 Subaru Outback with heated seats.", ("drives", "2016 subaru outback")),
    ("still driving the corolla, still making that grinding noise", ("drives", "corolla")),
    ("And when it pours I drive over in the Panda.", ("drives", "panda")),
    ("The check engine light on my Subaru Outback is on again.", ("drives", "subaru outback")),
    ("I'm driving a little green Subaru Forester now.", ("drives", "green subaru forester")),
    ("Picked up a grey Skoda estate from a garage in Newport.", ("drives", "grey skoda estate")),
    ("I'm doing the part-time data science master's at York.", ("studies", "part-time data science master's at york")),
    ("I signed up for the accounting night class at Northgate College.", ("studies", "accounting night class at northgate college")),
    ("I've been vegetarian six years this spring.", ("diet", "vegetarian")),
    ("still doing keto. no bread no rice", ("diet", "keto")),
    ("I'm eating meat again, sorry.", ("diet", "eats meat")),
    ("I've been seeing Tomasz, the farrier, for two months.", ("relationship", "with Tomasz")),
    ("Sam and I have been going out since Christmas.", ("relationship", "with Sam")),
    ("We broke up last week.", ("relationship", "single")),
    ("I'm engaged!", ("relationship", "engaged")),
    ("I live in Leeds.", ("lives_in", "leeds")),
])
def test_the_rule_extractor_reads_a_state_the_speaker_states(text: str, expected: tuple[str, str]) -> None:
    assert expected in states_of(text)


@pytest.mark.parametrize("text", [
    "I bought a golf umbrella and a car seat for the baby.",  # a vehicle word inside another thing
    "He bought a Tesla last week.",  # someone else's
    "I got a kayak off Gumtree.",
    "I'm taking a pottery class on Thursdays.",  # a pastime, not a school
    "I signed up for a meditation course at a retreat near a lake.",
    "I'm considering policymaking because of my degree.",  # a degree held, not a school now
    "I started a course of antibiotics.",
    "I'm seeing the dentist tomorrow.",  # no person named
    "Tell her I'm married to my job.",
    "I'm not vegetarian.",  # negated
    "Driving to Leeds was awful.",
])
def test_the_rule_extractor_reads_no_state_where_none_is_stated(text: str) -> None:
    assert states_of(text) == []


def _state_graph(values: list[tuple[str, str, int]], predicate: str = "drives") -> nx.MultiDiGraph:
    """A graph with one state fact per (node, object, day) of Priya, said in turn ``t<day>``."""
    G = nx.MultiDiGraph(turns={f"t{day}": T0 + timedelta(days=day) for _, _, day in values})
    for node, obj, day in values:
        G.add_node(node, type="Fact", subject="person:priya", predicate=predicate, object=obj, provenance={f"t{day}"})
    return G


def test_a_newer_value_of_a_state_supersedes_the_older_and_the_chain_ends_at_the_current_one() -> None:
    G = _state_graph([("fact:a", "panda", 0), ("fact:b", "2015 honda jazz", 60), ("fact:c", "yaris", 200)])
    assert reconcile_facts(G) == {"CURRENT": 1, "SUPERSEDED": 2}
    recs = turn_records(G)
    assert recs["t0"].facts[0].superseded_by_turn == "t60" and recs["t0"].facts[0].current_turn == "t200"
    assert recs["t60"].facts[0].current_turn == "t200" and recs["t200"].facts[0].current_turn is None
    assert (recs["t0"].facts[0].subject, recs["t0"].facts[0].predicate) == ("person:priya", "drives")


def test_the_current_value_told_again_in_other_words_stays_current_from_its_first_telling() -> None:
    G = _state_graph([("fact:a", "silverado", 0), ("fact:b", "little green subaru forester", 60),
                      ("fact:c", "green subaru", 90)])
    reconcile_facts(G)
    assert [G.nodes[n]["status"] for n in ("fact:a", "fact:b", "fact:c")] == ["SUPERSEDED", "CURRENT", "CURRENT"]
    assert G.has_edge("fact:b", "fact:a", key="SUPERSEDES") and not G.has_edge("fact:c", "fact:b", key="SUPERSEDES")


def test_a_value_told_again_after_another_is_current_only_from_its_return() -> None:
    G = _state_graph([("fact:a", "leeds", 0), ("fact:b", "york", 60), ("fact:c", "a flat in leeds", 120)],
                     predicate="lives_in")
    reconcile_facts(G)  # Leeds, York, then back to Leeds: York and the first Leeds are both over
    assert [G.nodes[n]["status"] for n in ("fact:a", "fact:b", "fact:c")] == ["SUPERSEDED", "SUPERSEDED", "CURRENT"]


def test_state_facts_read_the_same_from_the_lazy_map_and_from_a_plain_dict() -> None:
    G = _state_graph([("fact:a", "panda", 0), ("fact:b", "jazz", 60)])
    reconcile_facts(G)
    lazy = turn_records(G)
    assert state_facts(lazy, "priya", {"drives"}) == state_facts(dict(lazy.items()), "priya", {"drives"})
    assert [t for t, _ in state_facts(lazy, "priya", {"drives"})] == ["t0", "t60"]
    assert state_facts(lazy, "tom", {"drives"}) == [] and state_facts(lazy, "priya", {"diet"}) == []


def _fact(status: str, current: str | None = None) -> TurnFact:
    return TurnFact(f"fact:{status}", status, current, current, "person:priya", "drives")


@pytest.mark.parametrize("ids", [["t1", "t2", "t3"], ["t2", "t1", "t3"], ["t3", "t2", "t1"], ["t2", "t3"]])
def test_the_state_orderings_only_move_one_turn_to_the_front(ids: list[str]) -> None:
    recs = {"t1": TurnRecords(facts=(_fact("SUPERSEDED", "t9"),)), "t9": TurnRecords(facts=(_fact("CURRENT"),))}
    facts = [("t1", _fact("SUPERSEDED", "t9")), ("t9", _fact("CURRENT"))]
    times = {t: T0 + timedelta(days=int(t[1:])) for t in ("t1", "t2", "t3", "t9")}
    for out in (current_state_first(ids, recs, others={"t9"}), state_value_first(ids, facts, times, "now"),
                state_value_first(ids, facts, times, "before")):
        assert out[1:] == [t for t in ids if t != out[0]]  # the rest keep their order
        assert set(out) - set(ids) <= {"t9", "t1"}


def test_the_graphs_value_does_not_displace_a_leading_turn_said_on_a_later_day() -> None:
    facts = [("t1", _fact("SUPERSEDED", "t5")), ("t5", _fact("CURRENT"))]
    times = {"t1": T0, "t5": T0 + timedelta(days=5), "t8": T0 + timedelta(days=8)}
    assert state_value_first(["t8", "t1"], facts, times, "now") == ["t8", "t1"]  # a change the graph did not read
    assert state_value_first(["t1", "t8"], facts, times, "now") == ["t5", "t1", "t8"]
    assert state_value_first(["t5", "t8"], facts, times, "before") == ["t1", "t5", "t8"]


@pytest.mark.parametrize(("question", "present", "state"), [
    ("What does Marcus drive?", True, ("drives",)),
    ("Which car is Priya driving these days?", True, ("drives",)),
    ("Where does Priya live?", True, ("lives_in",)),
    ("What does Tom do for a living at the moment?", True, ("works_at", "works_as")),
    ("How does Rosa's brother Leo earn a living?", True, ("works_at", "works_as")),  # a living is a job, not a home
    ("Is Sam living with his parents?", True, ("lives_in",)),
    ("How does Daniel make his living these days?", True, ("works_at", "works_as")),
    ("What type of dog was Audrey looking to adopt based on her living space?", False, ("keeps_pet",)),  # named first
    ("What does Joanna recommend to make a living room comfy?", True, None),
    ("What degree is Elena working toward?", True, ("studies",)),  # "working toward" names no job
    ("Is Grace still vegetarian?", True, ("diet",)),
    ("Is Tom in a relationship right now?", True, ("relationship",)),
    ("What car did Marcus have at first?", False, ("drives",)),
    ("Where did Priya live in 2023?", False, ("lives_in",)),
    ("Who ended up with Ben's bass boat?", False, None),
    ("What will Tom drive next year?", False, ("drives",)),
    ("When has Jon lost his job as a banker?", True, None),  # asks for a time, not the state's value
    ("How often does John work out with his family?", True, None),
    ("What is Jon working on opening?", True, None),
    ("Does Elena have a pet at the moment?", True, ("keeps_pet",)),
    ("Is Marcus still a smoker?", True, ("habit",)),
    ("Is Mei still cycling to work?", True, ("drives",)),  # "to work" is a place, not a job
    ("What did Raj's girlfriend Anita originally study?", False, ("studies",)),  # a girlfriend as kin
    ("Is Mei still with her boyfriend?", True, ("relationship",)),  # kin, and no other state named
    ("Which animals share Rosa's house right now?", True, ("keeps_pet",)),  # of two states, the one named first
    ("Is Kemi still dairy-free?", True, ("diet",)),
])
def test_questions_name_their_state_and_their_time(question: str, present: bool, state: tuple[str, ...] | None) -> None:
    assert asks_present_state(question) is present
    assert asked_state(question) == state


def test_a_chat_models_names_for_a_state_are_read_as_the_state_predicates() -> None:
    assert {state_predicate(p) for p in ("resides_in", "employer", "vehicle", "dating", "studies_at")} == \
        {"lives_in", "works_at", "drives", "relationship", "studies"}
    for predicate in STATE_PREDICATES:  # the prompt asks for every one
        assert predicate in EXTRACTION_SYSTEM
    answer = json.dumps({"events": [], "claims": [], "concepts": [], "facts": [
        {"source_turn_id": "a", "subject": "Ann", "predicate": "resides in", "object": "Leith",
         "text": "Ann lives in Leith."}]})
    [ex] = LLMExtractor(FakeListChatModel(responses=[answer])).extract(
        [make_turn(id="a", namespace="n", speaker="Ann", text="The movers dropped the last boxes in Leith.", timestamp=T0)])
    assert [(f.predicate, f.object) for f in ex.facts] == [("lives_in", "Leith")]


def test_a_third_persons_state_read_by_a_chat_model_answers_where_they_live_now_and_before(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from langmem_cog import CogMemConfig, CogMemRetriever
    from langmem_cog.memory import CogMemory
    from langmem_cog.rank import cascade as cascade_module

    filler = ["the bus was late again this morning", "we watched the match at the pub", "my plants are dying",
              "work has been quiet this week", "i tried that new ramen place", "the weather turned cold"]
    rows = [(0, "Priya", "Speaking of Arjun, he's still in London, doing accountancy in Canary Wharf.")]
    rows += [(10 * (1 + i), "Tom" if i % 2 else "Priya", line) for i, line in enumerate(filler * 3)]
    rows += [(220, "Priya", "And Arjun video-called on New Year's Day from his balcony, a tram going past below.")]
    turns = [make_turn(id=f"t{i}", namespace="arjun", speaker=who, text=text, position=i, session_id=f"s{day}",
                       timestamp=T0 + timedelta(days=day)) for i, (day, who, text) in enumerate(rows)]
    last = turns[-1].id
    answer = json.dumps({"events": [], "claims": [], "concepts": [], "facts": [  # what a chat model reads
        {"source_turn_id": "t0", "subject": "Arjun", "predicate": "lives_in", "object": "London",
         "text": "Arjun lives in London."},
        {"source_turn_id": last, "subject": "Arjun", "predicate": "resides in", "object": "Lisbon",
         "text": "Arjun lives in Lisbon."}]})
    extractor = LLMExtractor(FakeListChatModel(responses=[answer]), batch_size=len(turns))
    memory = CogMemory(CogMemConfig.preset("ephemeral"), extractor=extractor)
    memory.add_turns(turns)
    retriever = CogMemRetriever(memory=memory, namespace="arjun", k=len(turns), now=T0 + timedelta(days=230))
    question = "Where does Priya's brother Arjun live?"
    docs = retriever.invoke(question)
    assert docs[0].metadata["turn_id"] == last and docs[0].metadata["fact_status"] == "CURRENT"
    with monkeypatch.context() as patch:  # the simple present not read as "now": the graph's value puts it first
        patch.setattr(cascade_module, "asks_current_value", lambda query: False)
        first = retriever.invoke(question)[0]
        assert first.metadata["turn_id"] == last and first.metadata["placed_by"] == "state_value"
    assert {d.metadata["turn_id"]: d.metadata.get("fact_status") for d in docs}["t0"] == "SUPERSEDED"
    assert retriever.invoke("Where did Arjun live before?")[0].metadata["turn_id"] == "t0"
