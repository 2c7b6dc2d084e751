"""Reading a question's stance holder and tense, and the head orders they give (langmem_cog/rank/questions.py),
through the default retriever, and the attribution-and-currency set's runner (langmem_cog/bench/memset.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from langmem_cog import CogMemConfig, CogMemRetriever
from langmem_cog.bench.memset import conversation_retrievers, load_memset, run_memset, split_ids
from langmem_cog.errors import InvalidInputError
from langmem_cog.memory import CogMemory
from langmem_cog.rank import cascade as cascade_module
from langmem_cog.rank.cascade import Cascade, asked_tense
from langmem_cog.rank.questions import (
    asks_before_change,
    asks_current_value,
    asks_judgement,
    asks_taste,
    by_tense,
    holder_first,
    hybrid_stance_first,
    stance_holder,
    state_tense,
    states_stance,
    window_first,
    without_names,
)
from langmem_cog.records import make_turn

SPEAKERS = ["Sam", "Jo"]


@pytest.mark.parametrize(("question", "holder"), [
    ("What does Jo think about Sam selling his car?", "jo"),
    ("How does Jo feel about Sam's new job?", "jo"),
    ("Is Sam happy with Jo's haircut?", "sam"),
    ("In Jo's view, was Sam's trip a good idea?", "jo"),
    ("What's Sam's take on Jo's new flat?", "sam"),
    ("Does Jo expect Sam's band to last?", "jo"),
    ("What did Sam sell last week?", None),            # a record question
    ("Where does Jo live?", None),
    ("What did Sam buy at the Mt. Hope auction?", None),  # a capitalised stance word is a name
    ("What does Ana think of the film?", None),        # names no speaker
    ("Jo, what does space smell like?", None),  # "like" as a preposition
    ("According to Jo, what did the 10k do for Sam?", "jo"),  # a view attributed to someone
    ("Does Sam regard Jo's ticket as fair?", "sam"),
    ("In Jo's estimation, was the price fair?", "jo"),
    ("What are Sam's goals with regards to his career?", None),  # a speaker named only as an owner
    ("Jo's husband hopes to study where?", None),      # a speaker named only as an owner: someone else's stance
    ("Is Sam glad he sold the van?", "sam"),            # a feeling said of someone
    ("How keen is Jo on Sam's plan?", "jo"),
    ("Is Jo still bitter about the move?", "jo"),
    ("Does Sam trust Jo's new landlord?", "sam"),
    ("Does Jo wish Sam had come to the wedding?", "jo"),  # a wish
    ("What does Jo want to do after college?", None),  # a plan
    ("What's Jo's honest verdict on Sam's pie?", "jo"),  # a stance noun owned, with a word between
    ("Did Jo make sure the door was locked?", None),    # the same adjectives said of no one
    ("What was the content of Sam's email?", None),
    ("Did Sam cross the border?", None),
    ("Is Jo enjoying her new bike?", "jo"),            # a taste in the progressive
    ("Does Sam agree with Jo about the flat?", "sam"),
    ("Is Jo looking forward to the reunion?", "jo"),
    ("Who did Sam agree to meet on Friday?", None),    # agreeing to do something is an act
])
def test_the_stance_holder_is_the_person_the_stance_word_belongs_to(question: str, holder: str | None) -> None:
    assert stance_holder(question, SPEAKERS) == holder


@pytest.mark.parametrize(("question", "tense"), [
    ("Where does Jo live now?", "now"), ("Is Sam still vegetarian?", "now"), ("What does Jo drive these days?", "now"),
    ("Where did Jo live before?", "before"), ("What car did Sam drive originally?", "before"),
    ("What did Jo think of the flat at first?", "before"), ("Where does Jo live?", None),
    ("What was Sam's first poster about?", None),  # "first" alone is an ordinal, not a tense
    ("Where did Jo work before that?", "before"),
    ("What did Jo do before meeting Sam?", None),  # "before" as a preposition
    ("What car did Jo use to drive?", "before"), ("Where did Jo and her sister use to live?", "before"),
    ("Didn't Sam use to smoke?", "before"), ("Did Sam not use to cycle to work?", "before"),
    ("What does Jo use to cook rice?", None),  # the present: an instrument, no earlier state
])
def test_state_tense(question: str, tense: str | None) -> None:
    assert state_tense(question) == tense


@pytest.mark.parametrize(("question", "current"), [
    ("Where does Priya live?", True), ("Which college is Gabi attending?", True),
    ("How does Rosa's brother Leo earn a living?", True), ("What car has Jo got?", True),  # a possession
    ("What are the best and worst cars Casey has driven?", False),  # the present perfect: a history
    ("Where has Tom lived?", False), ("Where did Priya live?", False),
    ("Where does Priya live now?", False),  # a word of now: state_tense reads it
    ("What does Priya think of Leeds?", False),  # no state
])
def test_asks_current_value(question: str, current: bool) -> None:
    assert asks_current_value(question) is current


@pytest.mark.parametrize(("question", "taste"), [
    ("Is Grace a fan of Diego's sourdough?", True),
    ("Does Jo like Sam's new haircut?", True),
    ("Which sports teams does Morgan like?", True),
    ("What book did Caroline recommend to Melanie?", False),  # a report of what was said
    ("What advice did Evan give Sam about finding a passion?", False),
    ("What does Jo think about Sam selling his car?", False),  # a judgement
    ("What did Tom sell last month?", False),
    ("How often does John get to see sunsets like the one he shared with Maria?", False),  # "like" as a preposition
])
def test_asks_taste(question: str, taste: bool) -> None:
    assert asks_taste(question) is taste


@pytest.mark.parametrize(("question", "judgement"), [
    ("What does Jo think about Sam selling his car?", True),
    ("Does Tom expect the move to work out?", True),
    ("How impressed is Marcus by the poster?", True),
    ("In Tom's view, was it wise?", True),
    ("Which sports teams does Morgan like?", False),
    ("Would Jordan enjoy going tubing on a lake?", False),
    ("Which cheese did Jordan fall in love with?", False),
    ("According to Morgan, how was the leader getting his chats in?", False),
    ("What did Tom sell last month?", False),
])
def test_asks_judgement(question: str, judgement: bool) -> None:
    assert asks_judgement(question) is judgement


@pytest.mark.parametrize(("question", "liked"), [
    ("Does Jo like Sam's new haircut?", True),
    ("Jo doesn't like Sam's haircut, does she?", True),  # after a negated auxiliary
    ("Which of Sam's dishes does Jo really like?", True),  # after an adverb
    ("Would Jo like to see Sam's band?", True),
    ("How often does Jo see sunsets like the one Sam saw?", False),  # after a noun: a preposition
    ("Jo, what does space smell like?", False),
    ("What was Sam's trip like for Jo?", False),
    ("What do Jo and Sam both like to do on weekends?", False),  # a pair's shared taste is no one's stance
])
def test_like_is_read_one_way_for_the_holder_the_taste_and_the_judgement(question: str, liked: bool) -> None:
    # "like" is the question's only stance word: as a verb it gives a holder and asks a taste (not a
    # judgement); as a preposition, neither
    assert (stance_holder(question, SPEAKERS) == "jo") is liked
    assert asks_taste(question) is liked
    assert asks_judgement(question) is False


@pytest.mark.parametrize(("question", "expected"), [
    ("What does Leo do for a living?", "What does they do for a living?"),
    ("How does Jo feel about Sam's new job?", "How does they feel about they new job?"),
    ("what does leo do?", "what does they do?"),            # a name typed in lower case
    ("Where is Leonard?", "Where is Leonard?"),              # a longer name is not the speaker's
    ("Where is Oslo?", "Where is Oslo?"),                    # names no speaker: unchanged
])
def test_without_names_replaces_each_speakers_first_name(question: str, expected: str) -> None:
    assert without_names(question, ["Leo Park", "Jo", "Sam"]) == expected
    assert without_names(question, []) == question


def test_a_named_question_is_scored_by_what_it_asks_not_by_whom(monkeypatch: pytest.MonkeyPatch) -> None:
    # A turn is embedded as "Speaker: text", so by the question as asked the dense stage puts Leo's short
    # turns first; the cosine to the question without the name lifts the turn about his job.
    t0 = datetime(2024, 3, 1, 18, tzinfo=UTC)
    lines = [("Maya", "Leo! How have you been?"), ("Leo", "Tired but good."), ("Maya", "Still at the school?"),
             ("Leo", "Yep, still teaching chemistry to sophomores at Westbrook High, still setting things on fire."),
             ("Maya", "Ha, sounds about right."), ("Leo", "Now I need to know."), ("Maya", "Know what?"),
             ("Leo", "Finally. You deserve that."), ("Maya", "Thanks, it was a long week."), ("Leo", "Why now?"),
             ("Maya", "The landlord raised the rent again."), ("Leo", "Oof."), ("Leo", "Everyone's fine, really.")]
    memory = _memory([(t0 + timedelta(minutes=i), who, text) for i, (who, text) in enumerate(lines)], "nf")

    def dense_rank(question: str) -> int:
        pool = Cascade(store=memory.store, memory=memory).candidates("nf", question)[0]
        by_dense = sorted(range(len(pool.turns)), key=lambda i: -pool.dense[i])
        return [pool.turns[i].id for i in by_dense].index("t3")

    blended = dense_rank("What does Leo do for a living?")
    monkeypatch.setattr(cascade_module, "NAME_FREE_WEIGHT", 0.0)
    as_asked = dense_rank("What does Leo do for a living?")
    assert blended < as_asked


def test_window_first_puts_the_best_turn_said_in_the_window_first() -> None:
    def day(month: int, d: int) -> datetime:
        return datetime(2023, month, d, 12, tzinfo=UTC)

    times = {"sep": day(9, 1), "mar": day(3, 12), "mar2": day(3, 20), "jan": day(1, 5)}
    march = (day(3, 1), day(3, 31))
    assert window_first(["sep", "jan", "mar2", "mar"], times, march) == ["mar2", "sep", "jan", "mar"]
    assert window_first(["mar", "sep", "mar2"], times, march) == ["mar", "sep", "mar2"]  # said in it already
    assert window_first(["sep", "jan"], times, march) == ["sep", "jan"]  # nothing said in it
    assert window_first(["sep", "jan", "mar"], times, (None, day(2, 1))) == ["jan", "sep", "mar"]  # open start
    assert window_first(["jan", "mar", "sep"], times, (day(6, 1), None)) == ["sep", "jan", "mar"]  # open end
    assert window_first([], times, march) == []


def test_orders_keep_every_turn_once() -> None:
    ids = ["a", "b", "c", "d"]
    assert holder_first(ids, {"c", "d"}, {"d"}) == ["d", "a", "b", "c"]       # the holder's stance leads
    assert holder_first(ids, {"c", "d"}) == ["c", "a", "b", "d"]              # else the holder's best turn
    assert holder_first(["c", "a", "d"], {"c", "d"}, {"d"}) == ["c", "a", "d"]  # the holder leads already
    assert holder_first(["a", "d"], {"d"}, {"a", "d"}) == ["a", "d"]          # someone else's opinion leads
    assert holder_first(["a", "d"], {"d"}, {"a", "d"}, {"d"}) == ["d", "a"]   # news told with an evaluative word
    # a judgement: the holder's stance before the holder's plain turn; a taste or a report keeps the plain turn
    assert holder_first(["c", "a", "d"], {"c", "d"}, {"d"}, judgement=True) == ["d", "c", "a"]
    assert holder_first(["d", "a", "c"], {"c", "d"}, {"d"}, judgement=True) == ["d", "a", "c"]
    assert holder_first(["c", "a"], {"c"}, {"a"}, judgement=True) == ["c", "a"]  # no stance of the holder's
    assert by_tense(ids, {"a": 1, "b": 3, "c": 2, "d": 0}, "now", window=2) == ["b", "a", "c", "d"]
    assert by_tense(ids, {"a": 1, "b": 3, "c": 2, "d": 0}, "before", window=3) == ["a", "c", "b", "d"]
    assert by_tense(ids, {"a": 1, "b": 3}, "now", {"a": "Sam", "b": "Jo"}, window=2) == ids  # two people
    assert states_stance("Honestly, I think that was a mistake.") and not states_stance("I sold my car last week.")
    assert states_stance("I genuinely think it could double as a doorstop.", evaluative=False)  # any -ly adverb


@pytest.mark.parametrize(("text", "stance"), [
    ("To me, the sequel is better.", True),                          # a hedge that opens the clause
    ("Lead climbing is terrifying and pointless to me.", True),      # a judgement of how something is, to me
    ("Eight hundred seems cheap to me, but fine.", True),
    ("People actually came up to talk to me after the poster.", False),  # "to me" after a verb: whom it was told
    ("A customer gave it to me this morning.", False),
    ("Nicest thing anyone has ever said to me.", False),
])
def test_to_me_marks_a_stance_only_as_a_hedge(text: str, stance: bool) -> None:
    assert states_stance(text, evaluative=False) is stance


def _memory(rows: list[tuple[datetime, str, str]], ns: str) -> CogMemory:
    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    memory.add_turns([make_turn(id=f"t{i}", namespace=ns, speaker=who, text=text, timestamp=ts, position=i,
                                session_id=ts.date().isoformat()) for i, (ts, who, text) in enumerate(rows)])
    return memory


def test_a_belief_question_gets_the_holders_opinion_before_the_news_it_is_about() -> None:
    rows = [(datetime(2024, 1, 5, 9, tzinfo=UTC), "Sam", "I sold my car last week to a guy from work."),
            (datetime(2024, 1, 5, 9, 1, tzinfo=UTC), "Jo", "Oh wow, how much did you get for it?"),
            (datetime(2024, 1, 5, 9, 2, tzinfo=UTC), "Sam", "Four grand, cash. He picked it up on Saturday."),
            (datetime(2024, 2, 20, 18, tzinfo=UTC), "Jo", "Did you see the match last night?"),
            (datetime(2024, 3, 2, 18, tzinfo=UTC),
             "Jo", "Honestly Sam, I think selling your car right before winter was a mistake.")]
    retriever = CogMemRetriever(memory=_memory(rows, "sam-jo"), namespace="sam-jo", k=3)
    assert retriever.invoke("What does Jo think about Sam selling his car?")[0].metadata["turn_id"] == "t4"
    assert retriever.invoke("What did Sam sell last week?")[0].metadata["turn_id"] == "t0"


@pytest.mark.parametrize(("ranking", "hybrid_best", "expected"), [
    (["news", "mine"], "mine", ["mine", "news"]),       # someone else's news led: the holder's stance leads
    (["told", "mine"], "mine", ["mine", "told"]),       # the holder's plain telling led: the stance leads
    (["said", "mine"], "mine", ["said", "mine"]),       # the holder's stance already leads
    (["theirs", "mine"], "mine", ["theirs", "mine"]),   # someone else's plain stance leads (it may report the holder's)
    (["news", "theirs"], "theirs", ["news", "theirs"]),  # hybrid's best is someone else's stance
    (["news", "plain"], "plain", ["news", "plain"]),    # hybrid's best states no stance in the first person
    (["news", "mine"], None, ["news", "mine"]),
    ([], "mine", []),
])
def test_hybrid_searchs_first_place_is_kept_when_it_is_the_holders_plain_stance(
        ranking: list[str], hybrid_best: str | None, expected: list[str]) -> None:
    holder, plain, stances = {"mine", "told", "said", "plain"}, {"mine", "theirs", "said"}, {"mine", "theirs", "said"}
    assert hybrid_stance_first(ranking, hybrid_best, holder, plain, stances) == expected


def test_a_belief_question_keeps_hybrid_searchs_first_place_for_the_holders_own_opinion() -> None:
    # the holder's own news is an Event the memory lifts; the opinion on it, later, is hybrid search's best
    rows = [(datetime(2024, 3, 5, 18, tzinfo=UTC), "Rosa",
             "We had to put Mr Henderson's spaniel Bramble to sleep this afternoon. I'd treated her for nine years."),
            (datetime(2024, 3, 5, 18, 1, tzinfo=UTC), "Ivan", "Oh Rosa, I'm so sorry. Are you alright?"),
            (datetime(2024, 3, 5, 18, 2, tzinfo=UTC), "Rosa", "Tired. Mr Henderson brought her blanket, which finished me off."),
            (datetime(2024, 4, 9, 19, tzinfo=UTC), "Ivan", "How was the clinic this week?"),
            (datetime(2024, 4, 9, 19, 1, tzinfo=UTC), "Rosa",
             "Busy. But I keep going over Bramble. Honestly, I think we waited too long with her, she had weeks she "
             "didn't need."),
            (datetime(2024, 4, 9, 19, 2, tzinfo=UTC), "Ivan", "You did what you could.")]
    memory = _memory(rows, "rosa")
    question = "What does Rosa believe about the timing of Bramble's death?"
    assert CogMemRetriever(memory=memory, namespace="rosa", k=3, mode="hybrid").invoke(question)[0].metadata["turn_id"] == "t4"
    first = CogMemRetriever(memory=memory, namespace="rosa", k=3).invoke(question)[0]
    assert (first.metadata["turn_id"], first.metadata["placed_by"]) == ("t4", "hybrid_stance")
    record = CogMemRetriever(memory=memory, namespace="rosa", k=3).invoke("What happened to Mr Henderson's spaniel?")
    assert record[0].metadata["turn_id"] == "t0"  # no one's stance asked: the record leads


def test_a_now_question_gets_the_newer_of_the_two_best_states() -> None:
    rows = [(datetime(2023, 3, 1, 9, tzinfo=UTC), "Sam", "I live in Leeds, in a flat above a bakery."),
            (datetime(2023, 3, 1, 9, 1, tzinfo=UTC), "Jo", "Nice, the bakery smell must be great."),
            (datetime(2023, 9, 9, 9, tzinfo=UTC), "Sam", "Big news: I live in York now, I moved in on Friday."),
            (datetime(2023, 9, 9, 9, 1, tzinfo=UTC), "Jo", "York! Send photos of the Minster.")]
    retriever = CogMemRetriever(memory=_memory(rows, "moves"), namespace="moves", k=4)
    assert retriever.invoke("Where does Sam live now?")[0].metadata["turn_id"] == "t2"
    assert retriever.invoke("Where did Sam live before?")[0].metadata["turn_id"] == "t0"


def test_a_question_with_a_time_window_gets_a_turn_said_in_it_first() -> None:
    rows = [(datetime(2023, 3, 1, 9, tzinfo=UTC), "Sam", "Still in the flat above the launderette, everything smells of soap."),
            (datetime(2023, 3, 1, 9, 1, tzinfo=UTC), "Jo", "Ha, could be worse."),
            (datetime(2023, 9, 9, 9, tzinfo=UTC), "Sam", "Big news: I live in a little terrace in York now, I moved on Friday."),
            (datetime(2023, 9, 9, 9, 1, tzinfo=UTC), "Jo", "York! Send photos of the Minster.")]
    memory = _memory(rows, "window")
    question = "Where did Sam live back in March 2023?"
    hybrid = CogMemRetriever(memory=memory, namespace="window", k=4, mode="hybrid")
    assert hybrid.invoke(question)[0].metadata["turn_id"] == "t2"  # the question's words are September's
    assert CogMemRetriever(memory=memory, namespace="window", k=4).invoke(question)[0].metadata["turn_id"] == "t0"


def _write_set(folder: Path, qa: list[dict[str, object]]) -> None:
    record = {"sample_id": "ms-90", "conversation": {
        "speaker_a": "Sam", "speaker_b": "Jo", "session_1_date_time": "9:00 am on 5 January, 2024",
        "session_1": [{"speaker": "Sam", "dia_id": "D1:1", "text": "I sold my car last week."},
                      {"speaker": "Jo", "dia_id": "D1:2", "text": "Honestly, selling it was a mistake."}]},
        "qa": qa}
    (folder / "ms-90.json").write_text(json.dumps(record), encoding="utf-8")


def test_the_set_runner_scores_each_kind_through_the_retriever(tmp_path: Path) -> None:
    _write_set(tmp_path, [
        {"id": "q1", "kind": "record", "group": "p1", "question": "What did Sam sell?", "evidence": ["D1:1"],
         "other": ["D1:2"], "holder": "Sam"},
        {"id": "q2", "kind": "belief", "group": "p1", "question": "What does Jo think of Sam selling his car?",
         "evidence": ["D1:2"], "other": ["D1:1"], "holder": "Jo"}])
    res = run_memset(split="all", folder=tmp_path)
    assert res["samples"] == ["ms-90"] and res["mode"] == "cascade"
    assert res["by_kind"]["record"]["n"] == 1 and res["by_kind"]["belief"]["n"] == 1
    assert {d["id"]: d["gold_rank"] for d in res["details"]} == {"q1": 1, "q2": 1}


def test_each_conversation_is_asked_in_its_own_namespace_a_day_after_its_last_turn_then_forgotten(
        tmp_path: Path) -> None:
    from fakes import FakeEmbeddings

    _write_set(tmp_path, [{"id": "q1", "kind": "record", "group": "p1", "question": "What did Sam sell?",
                           "evidence": ["D1:1"], "other": [], "holder": "Sam"}])
    convs = load_memset(tmp_path)
    memory = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())
    seen = []
    for conv, retriever in conversation_retrievers(convs, memory, mode="hybrid"):
        assert retriever.namespace.endswith(".ms-90") and memory.store.has_namespace(retriever.namespace)
        assert retriever.now == max(t.timestamp for t in conv.turns) + timedelta(days=1)
        assert str(retriever.mode) == "hybrid"
        assert {d.metadata["turn_id"] for d in retriever.invoke("What did Sam sell?")} == {"D1:1", "D1:2"}
        seen.append(retriever.namespace)
    assert len(seen) == 1 and not memory.store.has_namespace(seen[0])


def test_the_set_runner_refuses_a_question_that_cites_a_missing_turn(tmp_path: Path) -> None:
    _write_set(tmp_path, [{"id": "q1", "kind": "record", "group": "p1", "question": "What did Sam sell?",
                           "evidence": ["D9:9"], "holder": "Sam"}])
    with pytest.raises(InvalidInputError, match="cites turns the conversation lacks"):
        load_memset(tmp_path)
    with pytest.raises(InvalidInputError, match="holds no ms-"):
        load_memset(tmp_path / "nowhere")


def test_the_shipped_set_splits_by_conversation_into_halves() -> None:
    convs = load_memset()
    dev, test = split_ids([c.sample_id for c in convs])
    assert len(convs) == 12 and len(dev) == len(test) == 6 and not set(dev) & set(test)
    assert sum(len(c.questions) for c in convs) == 480


def test_documents_carry_the_state_of_a_fact_and_the_turn_that_superseded_it() -> None:
    rows = [(datetime(2023, 3, 1, 9, tzinfo=UTC), "Sam", "I live in Leeds, in a flat above a bakery."),
            (datetime(2023, 9, 9, 9, tzinfo=UTC), "Sam", "Big news: I live in York now, I moved in on Friday.")]
    docs = CogMemRetriever(memory=_memory(rows, "facts"), namespace="facts", k=2).invoke("Where does Sam live?")
    meta = {d.metadata["turn_id"]: d.metadata for d in docs}
    assert docs[0].metadata["turn_id"] == "t1"
    assert meta["t1"]["fact_status"] == "CURRENT" and meta["t0"]["fact_status"] == "SUPERSEDED"
    assert meta["t0"]["facts"][0]["superseded_by_turn"] == "t1"


@pytest.mark.parametrize(("question", "holder", "tense"), [
    ("Where did Priya live before she moved to Leeds?", None, "before"),  # a state before a change
    ("Who was Jo dating before she met Sam?", None, "before"),
    ("What did Jo think of the flat before she moved in?", "jo", "before"),  # a stance before a change
    ("What did Jo do before meeting Sam?", None, None),  # an event before another: no state, no stance
    ("Where does Jo live before work?", None, "now"),  # the present tense asks for the state now
    ("Where did Jo live before?", None, "before"),
])
def test_a_state_or_stance_asked_before_a_change_is_a_before_question(question: str, holder: str | None,
                                                                      tense: str | None) -> None:
    assert asked_tense(question, holder, windowed=False) == tense


def test_before_a_change_is_read_only_in_the_past_and_before_a_clause_or_noun() -> None:
    assert asks_before_change("Who was Jo dating before she met Sam?")
    assert asks_before_change("What did Sam drive before the accident?")
    assert not asks_before_change("Where does Jo live before work?")  # present tense
    assert not asks_before_change("Where did Jo live before?")  # the adverb: state_tense reads it
