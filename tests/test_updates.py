"""A person's later (or earlier) word on the same matter, and a person's word on someone else's matter
(langmem_cog/rank/updates.py): the pure functions; through the default retriever, a change of state said
without the question's words, and an opinion of news someone else told."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from langmem_cog import CogMemConfig, CogMemRetriever
from langmem_cog.memory import CogMemory
from langmem_cog.rank import cascade as cascade_module
from langmem_cog.rank import slots
from langmem_cog.rank.cascade import Cascade
from langmem_cog.rank.updates import Echo, echo_first, find_echoes, find_reactions, reaction_first
from langmem_cog.records import Turn, make_turn

T0 = datetime(2024, 1, 1, 9, tzinfo=UTC)


def _turn(tid: str, speaker: str, text: str, day: int, session: str) -> Turn:
    return make_turn(id=tid, namespace="n", speaker=speaker, text=text, timestamp=T0 + timedelta(days=day),
                     session_id=session)


LONG = "and that is the whole story of it, more or less"  # makes a turn long enough to stand for a change


def test_echoes_are_the_anchors_speakers_later_turns_of_other_sessions_strongest_first() -> None:
    turns = [_turn("a", "Sam", "still driving the corolla", 10, "2"),
             _turn("same-session", "Sam", "the corolla again", 10, "2"),
             _turn("other-speaker", "Jo", "corolla talk", 30, "3"),
             _turn("late-weak", "Sam", "x", 30, "3"), _turn("late-strong", "Sam", "y", 40, "4"),
             _turn("early", "Sam", "z", 1, "1")]
    likeness = np.array([5.0, 4.0, 4.0, 1.0, 3.5, 6.0])
    found = find_echoes(turns[0], turns, likeness)
    assert found == (Echo("a", "late-strong", 3.5), Echo("a", "late-weak", 1.0))
    assert find_echoes(turns[0], turns, likeness, keep=1) == (Echo("a", "late-strong", 3.5),)
    with pytest.raises(ValueError):  # likeness must align with the turns
        find_echoes(turns[0], turns, np.array([1.0]))


def test_echo_first_moves_only_a_strong_statement() -> None:
    turns = {t.id: t for t in [
        _turn("old", "Sam", "still driving the corolla " + LONG, 1, "1"),
        _turn("new", "Sam", "traded in the corolla on friday for a subaru " + LONG, 50, "5"),
        _turn("asks", "Sam", "did you ever get the corolla fixed, " + LONG + "?", 60, "6"),
        _turn("short", "Sam", "corolla forever", 70, "7"),
        _turn("x", "Jo", "nice " + LONG, 45, "4")]}
    echoes = [Echo("old", "new", 3.5)]
    assert echo_first(["old", "x", "new"], echoes, turns) == ["new", "old", "x"]
    assert echo_first(["old", "x"], echoes, turns, threshold=4.0) == ["old", "x"]  # too weak
    # questions and short turns do not stand for a change of state; a weaker statement behind them does
    assert echo_first(["old"], [Echo("old", "asks", 9.0), Echo("old", "short", 8.0)], turns) == ["old"]
    assert echo_first(["old"], [Echo("old", "asks", 9.0), *echoes], turns) == ["new", "old"]
    # the next leading turns are anchors too, in order
    assert echo_first(["x", "old"], echoes, turns) == ["new", "x", "old"]
    assert echo_first(["x", "old"], echoes, turns, lead=1) == ["x", "old"]
    assert echo_first([], echoes, turns) == []
    # a later anchor's echo that is not newer than the leading turn leaves the leader first
    assert echo_first(["new", "old"], echoes, turns) == ["new", "old"]
    assert echo_first(["x", "old"], [Echo("old", "x", 5.0), *echoes], turns) == ["x", "old"]
    same_session = {**turns, "x": _turn("x", "Jo", "nice " + LONG, 50, "5")}  # said with the echo: one story
    assert echo_first(["x", "old"], echoes, same_session) == ["x", "old"]


def test_for_a_stance_question_the_echo_must_be_the_holders_stance() -> None:
    turns = {t.id: t for t in [
        _turn("old", "Sam", "pickleball is ping-pong for people who lost the table " + LONG, 1, "1"),
        _turn("news", "Sam", "I was out at the pickleball courts three mornings this week " + LONG, 50, "5"),
        _turn("view", "Sam", "honestly I think pickleball is the best thing in my week " + LONG, 60, "6")]}
    news, view = Echo("old", "news", 5.0), Echo("old", "view", 4.0)
    assert echo_first(["old"], [news, view], turns) == ["news", "old"]
    assert echo_first(["old"], [news, view], turns, holder="sam") == ["view", "old"]
    assert echo_first(["old"], [news, view], turns, holder="jo") == ["old"]


FILLER = """work was long today, three admissions before midnight
did you watch the game on sunday
my sister says hi, she is baking bread again
the weather here is miserable, rain all week
i finally fixed the kitchen tap, only took two hours
we should plan something for the holidays
the dog ate a sock and survived, somehow
reading a thriller about a lighthouse keeper
coffee machine at the office broke again
my landlord painted the hallway bright green
mom wants everyone at her place for thanksgiving
i started a pottery class on tuesday nights
the new neighbours play drums at seven in the morning
got a flu shot, arm is sore
my phone screen cracked when i dropped it on the stairs
we watched a documentary about octopuses
i burned the rice again, smoke alarm went off
the library is closing early on fridays now
my cousin is getting married in june
i have been sleeping badly since the heatwave
our team lost the quiz by one point
i bought new running shoes but have not used them
the grocery store moved the cereal aisle and i am lost
work gave us pizza for hitting the target
i am thinking of learning spanish online
someone stole the plant from my porch
my back hurts from moving the sofa
the train was cancelled so i walked home
i tried the new taco place, it was decent
our power went out during the storm
my friend had twins last week
the gym is packed every january
i fell asleep during the movie again
my boss retired and threw a big party
we found a stray kitten under the deck
i painted my bedroom a dark blue
the concert tickets sold out in a minute
my grandmother turned ninety
i lost my keys twice this week
the parking garage raised its prices""".splitlines()


def _chat() -> list[tuple[int, str, str]]:
    """A year of small talk in which Marcus's car changes, the change told without the question's words."""
    rows = [(0, "Marcus", "still driving the corolla, it makes a grinding noise every time i turn left"),
            (0, "Elena", "the way you drive that car, get it looked at before it falls apart on the highway")]
    rows += [(30 * (1 + i // 4), "Elena" if i % 2 else "Marcus", line) for i, line in enumerate(FILLER)]
    rows += [(330, "Marcus", "my news: the grinding noise won, i traded in the corolla friday and there's an outback "
                             "with heated seats in my driveway"),
             (330, "Elena", "heated seats! fancy. congrats")]
    return rows


def _remember(rows: list[tuple[int, str, str]], namespace: str) -> tuple[CogMemory, list[Turn]]:
    """An ephemeral memory holding ``rows`` (day, speaker, text) as turns ``t0``, ``t1``, ..., one session a day."""
    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    turns = [make_turn(id=f"t{i}", namespace=namespace, speaker=who, text=text, timestamp=T0 + timedelta(days=day),
                       position=i, session_id=f"s{day}") for i, (day, who, text) in enumerate(rows)]
    memory.add_turns(turns)
    return memory, turns


def test_a_change_told_without_the_questions_words_ranks_first_for_now_and_the_old_state_for_before(
        monkeypatch: pytest.MonkeyPatch) -> None:
    memory, turns = _remember(_chat(), "cars")
    new = next(t.id for t in turns if "outback" in t.text)
    retriever = CogMemRetriever(memory=memory, namespace="cars", k=5, now=T0 + timedelta(days=340))
    assert retriever.invoke("What does Marcus drive now?")[0].metadata["turn_id"] == new
    with monkeypatch.context() as patch:  # without the state statements' lift (and the question scored as
        patch.setattr(slots, "STATE_WEIGHT", 0.0)  # asked, names and all), the later word moves it first
        patch.setattr(cascade_module, "NAME_FREE_WEIGHT", 0.0)
        first = CogMemRetriever(memory=memory, namespace="cars", k=5,
                                now=T0 + timedelta(days=340)).invoke("What does Marcus drive now?")[0]
        assert first.metadata["turn_id"] == new and first.metadata["placed_by"] == "later_word"
    assert retriever.invoke("What car did Marcus drive at first?")[0].metadata["turn_id"] == "t0"
    # a filter holds for the moved turn too
    assert retriever.invoke("What does Marcus drive now?", exclude_ids=[new])[0].metadata["turn_id"] != new
    assert all(d.metadata["turn_id"] != new for d in retriever.invoke("What does Marcus drive now?", speaker="Elena"))
    # plain hybrid search finds the old state first: its words are the question's
    hybrid = CogMemRetriever(memory=memory, namespace="cars", k=5, mode="hybrid", now=T0 + timedelta(days=340))
    assert hybrid.invoke("What does Marcus drive now?")[0].metadata["turn_id"] == "t0"


def test_reactions_are_the_holders_turns_said_with_or_after_the_anchor_strongest_first() -> None:
    turns = [_turn("news", "Sam", "I sold my car", 10, "2"),
             _turn("reply", "Jo", "wow, already?", 10, "2"),
             _turn("later", "Jo", "selling the car was a mistake", 40, "4"),
             _turn("earlier", "Jo", "sell the car", 1, "1"),
             _turn("sam-again", "Sam", "the car is gone", 50, "5")]
    likeness = np.array([9.0, 1.0, 3.5, 6.0, 5.0])
    assert find_reactions(turns[0], turns, likeness, "jo") == (Echo("news", "later", 3.5), Echo("news", "reply", 1.0))
    assert find_reactions(turns[0], turns, likeness, "jo", keep=1) == (Echo("news", "later", 3.5),)
    assert find_reactions(turns[0], turns, likeness, "kim") == ()
    with pytest.raises(ValueError):  # likeness must align with the turns
        find_reactions(turns[0], turns, np.array([1.0]), "jo")


def test_reaction_first_moves_the_strongest_stated_stance_on_a_leading_turn() -> None:
    turns = {t.id: t for t in [
        _turn("take", "Jo", "Honestly, selling your car before winter was a mistake", 40, "4"),
        _turn("plain", "Jo", "you sold the car to Dave from work", 41, "4"),
        _turn("asks", "Jo", "Honestly, was selling the car a mistake?", 42, "4")]}
    strong = [Echo("news", "plain", 6.0), Echo("news", "asks", 5.0), Echo("news", "take", 3.5)]
    # a turn that states no stance, or asks, does not move; the strongest that states one does
    assert reaction_first(["news", "x", "take"], strong, turns, "jo") == ["take", "news", "x"]
    assert reaction_first(["news", "x"], strong, turns, "jo", threshold=4.0) == ["news", "x"]  # too weak
    # the anchor must be among the leading turns
    assert reaction_first(["x", "y", "z", "news"], strong, turns, "jo") == ["x", "y", "z", "news"]
    assert reaction_first(["x", "news"], strong, turns, "jo", lead=1) == ["x", "news"]
    assert reaction_first(["take", "news"], strong, turns, "jo") == ["take", "news"]  # already first
    assert reaction_first(["news"], strong, {}, "jo") == ["news"]  # a reaction the filter removed stays out
    assert reaction_first([], strong, turns, "jo") == []
    # the holder's first-person stance leads already: it stays first when it is a strong reaction too
    own = {**turns, "mine": _turn("mine", "Jo", "Honestly, I think the bus is fine", 43, "4")}
    assert reaction_first(["mine", "news", "take"], strong, own, "jo") == ["take", "mine", "news"]
    assert reaction_first(["mine", "news", "take"], [*strong, Echo("news", "mine", 3.2)], own, "jo") == \
        ["mine", "news", "take"]


def _car_chat() -> list[tuple[int, str, str]]:
    """Months of small talk in which Sam tells he sold his car and, two months on, Jo says what she
    thinks of it in other words; Sam also says what he thinks."""
    rows = [(0, "Sam", "I sold my car last week to a guy from work, the old blue hatchback"),
            (0, "Jo", "wait, you sold the car? what are you going to drive now"),
            (0, "Sam", "honestly I think selling it was the best thing I did all year, no more repair bills")]
    rows += [(20 * (1 + i // 4), "Jo" if i % 2 else "Sam", line) for i, line in enumerate(FILLER)]
    rows += [(120, "Jo", "I still think you let that old blue hatchback go to the guy from work too cheap, "
                         "and right before winter too")]
    return rows


def test_the_holders_opinion_of_news_another_told_ranks_first() -> None:
    memory, turns = _remember(_car_chat(), "car")
    take = turns[-1].id
    question = "What does Jo think about Sam selling his car?"
    # Jo's take is the strongest reaction to Sam's news, which leads plain hybrid search with Jo's first reply
    pool, _ = Cascade(store=memory.store, memory=memory).candidates("car", question)
    assert max(pool.reactions, key=lambda e: e.z) == Echo("t0", take, pytest.approx(4.5, abs=1.5))
    hybrid = CogMemRetriever(memory=memory, namespace="car", k=5, mode="hybrid", now=T0 + timedelta(days=130))
    assert take not in [d.metadata["turn_id"] for d in hybrid.invoke(question)[:3]]
    retriever = CogMemRetriever(memory=memory, namespace="car", k=5, now=T0 + timedelta(days=130))
    assert retriever.invoke(question)[0].metadata["turn_id"] == take
    # a record question keeps the news first
    assert retriever.invoke("Who did Sam sell his car to?")[0].metadata["turn_id"] == "t0"
    # a filter holds for the moved turn too
    assert retriever.invoke(question, exclude_ids=[take])[0].metadata["turn_id"] != take


def test_a_state_the_graph_read_answers_a_present_tense_question_and_labels_both_turns() -> None:
    rows = [(day, who, "my news: the grinding noise won, i traded in the corolla friday and got a used outback"
             if "outback" in text else text) for day, who, text in _chat()]  # the change in words the graph reads
    memory, turns = _remember(rows, "cars-now")
    new = next(t.id for t in turns if "outback" in t.text)
    retriever = CogMemRetriever(memory=memory, namespace="cars-now", k=50, now=T0 + timedelta(days=340))
    docs = retriever.invoke("What does Marcus drive?")  # no word of "now": the present tense asks for the state as it is
    assert docs[0].metadata["turn_id"] == new
    status = {d.metadata["turn_id"]: d.metadata.get("fact_status") for d in docs}
    assert status[new] == "CURRENT" and status["t0"] == "SUPERSEDED"
    assert retriever.invoke("What car did Marcus have at first?")[0].metadata["turn_id"] == "t0"
    # the moved turn obeys the filter
    assert retriever.invoke("What does Marcus drive?", exclude_ids=[new])[0].metadata["turn_id"] != new


def _truck_chat() -> list[tuple[int, str, str]]:
    """Sam tells of a third person's venture; Jo first only asks about it, and two months on says what she
    expects of it and then asks a rhetorical question."""
    rows = [(0, "Sam", "big family news, my cousin Dave quit his job at the bank to open a taco truck by the harbour"),
            (0, "Jo", "Dave? the Dave who burnt the toast at your birthday party?")]
    rows += [(20 * (1 + i // 4), "Jo" if i % 2 else "Sam", line) for i, line in enumerate(FILLER)]
    rows += [(90, "Jo", "I keep thinking about Dave and the taco truck. I think he will be broke by the summer, "
                        "a harbour this quiet in winter. Who is going to queue for tacos in the rain?")]
    return rows


def test_the_holders_word_on_a_third_persons_matter_ranks_first_though_it_ends_with_a_question() -> None:
    memory, turns = _remember(_truck_chat(), "truck")
    take = turns[-1].id
    question = "How does Jo expect Dave's taco truck to turn out?"  # Dave is no speaker: Sam told of him
    cascade = Cascade(store=memory.store, memory=memory)
    pool, _ = cascade.candidates("truck", question)
    assert any(e.anchor == "t0" and e.turn == take for e in pool.reactions)
    # a question about Jo's own matter names no third person: no reactions to Sam's turns are sought
    assert cascade.candidates("truck", "How does Jo feel about the pottery class?")[0].reactions == ()
    retriever = CogMemRetriever(memory=memory, namespace="truck", k=5, now=T0 + timedelta(days=100))
    docs = retriever.invoke(question)
    assert docs[0].metadata["turn_id"] == take
    assert docs[0].metadata.get("placed_by") in (None, "reaction")
    # Jo's first reply only asks: it states no view, whatever its likeness to the news
    assert docs[0].metadata["turn_id"] != "t1"


def test_a_judgement_question_is_fused_once_and_ranks_as_a_fresh_fusion(monkeypatch: pytest.MonkeyPatch) -> None:
    memory, _ = _remember(_truck_chat(), "truck-once")
    question = "How does Jo expect Dave's taco truck to turn out?"  # reactions anchored on the fused ranking
    cascade = Cascade(store=memory.store, memory=memory)
    calls = []
    fuse = Cascade.fuse
    monkeypatch.setattr(Cascade, "fuse", lambda self, *a, **kw: calls.append(1) or fuse(self, *a, **kw))
    pool, signals, fused = cascade.first_stage("truck-once", question)
    assert pool.reactions and len(calls) == 1  # the anchors' fusion is the one handed on
    np.testing.assert_array_equal(fused, fuse(cascade, pool, question, signals))


def test_whether_someone_likes_another_persons_matter_is_answered_by_their_reaction_to_it() -> None:
    rows = [(0, "Sam", "I have been baking sourdough every sunday, the starter lives on top of my fridge"),
            (0, "Jo", "a starter with a name, of course")]
    rows += [(20 * (1 + i // 4), "Jo" if i % 2 else "Sam", line) for i, line in enumerate(FILLER)]
    rows += [(120, "Sam", "my brother loves my sourdough, he took two loaves home"),
             (120, "Jo", "I have had your sunday sourdough three times now and I genuinely think it could double as "
                         "a doorstop, so please stop baking it and give that starter on your fridge a rest")]
    memory, turns = _remember(rows, "bread-of-another")
    take = turns[-1].id
    retriever = CogMemRetriever(memory=memory, namespace="bread-of-another", k=5, now=T0 + timedelta(days=130))
    first = retriever.invoke("Is Jo a fan of Sam's sourdough?")[0]
    assert first.metadata["turn_id"] == take


def test_a_present_tense_question_about_a_state_asks_for_it_as_it_is_now() -> None:
    memory, turns = _remember(_chat(), "cars-present")
    new = next(t.id for t in turns if "outback" in t.text)
    retriever = CogMemRetriever(memory=memory, namespace="cars-present", k=5, now=T0 + timedelta(days=340))
    # no word of now: the present tense asks for the state as it is, the newer of the person's two tellings
    assert retriever.invoke("What car does Marcus drive?")[0].metadata["turn_id"] == new
    assert retriever.invoke("What car did Marcus drive at first?")[0].metadata["turn_id"] == "t0"
