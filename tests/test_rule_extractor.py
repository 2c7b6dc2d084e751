"""Tests of the rule-based PEC2F extractor (no model, no network)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.rules import RuleExtractor, is_chitchat
from langmem_cog.graph.rules.entities import EntityStage
from langmem_cog.graph.schema import (
    ExtractedClaim,
    ExtractedConcept,
    ExtractedEvent,
    ExtractedFact,
    Extraction,
    Extractor,
)
from langmem_cog.loaders import load_locomo
from langmem_cog.records import Turn

#: Monday 8 May 2023, 13:56 UTC (a LoCoMo-style session timestamp).
REF = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
SAMPLE = Path(__file__).resolve().parents[1] / "langmem_cog" / "data" / "sample_conversation.json"


def make(text: str, speaker: str = "Melanie", i: int = 0, ts: datetime = REF, conv: str = "c1") -> Turn:
    return Turn(id=f"t{i}", namespace="test", conversation_id=conv, speaker=speaker, text=text, timestamp=ts, position=i)


def one(text: str, speaker: str = "Melanie", **kwargs: object) -> Extraction:
    """Extract a single turn with a fresh strict extractor."""
    return RuleExtractor(strict=True, **kwargs).extract([make(text, speaker)])[0]  # type: ignore[arg-type]


def convo(*lines: tuple[str, str], **kwargs: object) -> list[Extraction]:
    """Extract ``(speaker, text)`` lines as one conversation."""
    turns = [make(text, speaker, i) for i, (speaker, text) in enumerate(lines)]
    return RuleExtractor(strict=True, **kwargs).extract(turns)  # type: ignore[arg-type]


def d(x: datetime | None) -> str | None:
    return x.date().isoformat() if x else None


# --------------------------------------------------------------------------- protocol and shape


def test_is_an_extractor_and_returns_one_extraction_per_turn_in_order() -> None:
    rx = RuleExtractor()
    assert isinstance(rx, Extractor)
    turns = [make("Hi!", i=0), make("I went hiking yesterday.", i=1), make("I love pottery.", "Caroline", i=2)]
    out = rx.extract(turns)
    assert [e.turn_id for e in out] == ["t0", "t1", "t2"]
    assert [e.speaker for e in out] == ["Melanie", "Melanie", "Caroline"]
    assert all(e.timestamp == REF for e in out)
    assert rx.extract([]) == []


@pytest.mark.parametrize("bad", ["I went hiking", b"bytes", 42, None])
def test_rejects_non_sequences(bad: object) -> None:
    with pytest.raises(InvalidInputError):
        RuleExtractor().extract(bad)  # type: ignore[arg-type]


def test_rejects_non_turns() -> None:
    with pytest.raises(InvalidInputError, match="not a Turn"):
        RuleExtractor().extract([object()])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        RuleExtractor(known_people="Caroline")


# --------------------------------------------------------------------------- chit-chat


@pytest.mark.parametrize(
    "text", ["Hi!", "Thanks!", "Bye!", "Thanks, Melanie!", "See you later!", "Hey Mel!", "Wow, that's great!", ":)"]
)
def test_chitchat_gives_an_empty_extraction(text: str) -> None:
    assert is_chitchat(text)
    ex = one(text)
    assert ex.empty
    assert (ex.persons, ex.concepts, ex.events, ex.facts, ex.claims) == ([], [], [], [], [])


@pytest.mark.parametrize(
    "text", ["Thanks! I went hiking yesterday.", "Paris!", "I adopted a puppy.", "Hi Mel, I just ran my first 10k!"]
)
def test_content_is_not_chitchat(text: str) -> None:
    assert not is_chitchat(text)


def test_is_chitchat_rejects_non_strings() -> None:
    with pytest.raises(InvalidInputError):
        is_chitchat(None)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- events

# (text, verb, start, end (exclusive), time_text, a word of the description)
EVENTS = [
    ("I went to a support group yesterday.", "go", "2023-05-07", "2023-05-08", "yesterday", "support group"),
    ("We adopted a puppy last Friday!", "adopt", "2023-05-05", "2023-05-06", "last Friday", "puppy"),
    ("I'm going to a pottery class next week.", "go", "2023-05-15", "2023-05-22", "next week", "pottery class"),
    ("I just finished my first marathon two weeks ago.", "finish", "2023-04-24", "2023-05-01", "two weeks ago", "marathon"),
    ("I started painting last year.", "start", "2022-01-01", "2023-01-01", "last year", "painting"),
    ("I painted a sunrise last summer.", "paint", "2022-06-01", "2022-09-01", "last summer", "sunrise"),
    ("I ran my first 10k on Saturday.", "run", "2023-05-06", "2023-05-07", "on Saturday", "10k"),
    ("Next month I'm having an art show with my paintings.", "have", "2023-06-01", "2023-07-01", "Next month", "art show"),
    ("Yesterday, I baked a cake for my sister.", "bake", "2023-05-07", "2023-05-08", "Yesterday", "cake"),
    ("Lost my job yesterday, so that was rough.", "lose", "2023-05-07", "2023-05-08", "yesterday", "job"),
]


@pytest.mark.parametrize(("text", "verb", "start", "end", "time_text", "word"), EVENTS)
def test_events_with_resolved_times(text: str, verb: str, start: str, end: str, time_text: str, word: str) -> None:
    ex = one(text)
    assert len(ex.events) == 1, ex.events
    ev = ex.events[0]
    assert isinstance(ev, ExtractedEvent)
    assert ev.verb == verb
    assert (d(ev.start), d(ev.end), ev.time_text) == (start, end, time_text)
    assert word in ev.text.lower()
    assert ev.participants[0] == "Melanie"
    assert ev.source_turn_id == "t0"
    assert ev.start is not None and ev.start.tzinfo is not None


def test_event_without_time_leaves_start_none() -> None:
    ev = one("I adopted a puppy from the shelter.").events[0]
    assert (ev.start, ev.end, ev.time_text, ev.verb) == (None, None, None, "adopt")
    assert "puppy" in ev.concepts


def test_one_event_per_clause_with_its_own_time() -> None:
    evs = one("I went swimming yesterday and I'll go hiking tomorrow.").events
    assert [(e.verb, d(e.start)) for e in evs] == [("go", "2023-05-07"), ("go", "2023-05-09")]
    assert "swimming" in evs[0].concepts and "hiking" in evs[1].concepts


def test_participants_include_kin_and_named_people() -> None:
    ev = one("My kids and I went camping last weekend.").events[0]
    assert ev.participants == ("Melanie", "Melanie's kids")
    assert d(ev.start) == "2023-05-06"
    ev = one("I went hiking with Josh on Sunday.").events[0]
    assert ev.participants == ("Melanie", "Josh")
    # "we" adds nobody; a vocative is not a participant
    assert one("We went to the beach, Caroline!").events[0].participants == ("Melanie",)


@pytest.mark.parametrize(
    "text",
    [
        "I didn't go to the party.",
        "I want to learn guitar.",
        "I'll never forget that day.",
        "Did you go to the concert?",
        "I think the manager is unfair.",
        "It's been a while since we last talked.",
    ],
)
def test_no_event_for_negations_wishes_questions_and_opinions(text: str) -> None:
    assert one(text).events == []


# --------------------------------------------------------------------------- facts

# (text, predicate, object)
FACTS = [
    ("I work as a nurse.", "works_as", "nurse"),
    ("I'm a high school chemistry teacher.", "works_as", "high school chemistry teacher"),
    ("I'm allergic to shellfish.", "allergic_to", "shellfish"),
    ("My favorite book is Dune.", "favorite", "dune"),
    ("My favourite food is spicy ramen.", "favorite", "spicy ramen"),
    ("I have a dog named Bailey.", "has", "dog named Bailey"),
    ("I live in Boston.", "lives_in", "boston"),
    ("I've been painting for seven years.", "habit", "painting"),
    ("I usually go running before work.", "habit", "go running before work"),
    ("I love hiking.", "likes", "hiking"),
    ("I hate crowds.", "dislikes", "crowds"),
    ("I play the guitar.", "plays", "guitar"),
    ("I'm vegan.", "diet", "vegan"),
]


@pytest.mark.parametrize(("text", "predicate", "obj"), FACTS)
def test_facts(text: str, predicate: str, obj: str) -> None:
    facts = one(text).facts
    assert (predicate, obj) in [(f.predicate, f.object) for f in facts], facts
    for f in facts:
        assert isinstance(f, ExtractedFact)
        assert f.subject == "Melanie" and f.source_turn_id == "t0" and f.text


@pytest.mark.parametrize("text", [
    "I'm not allergic to peanuts.", "Luckily I'm not allergic to cats.", "My favorite book is not Dune.",
    "I never lived in Paris.", "I don't work at the bank.",
])
def test_a_negated_statement_is_no_fact(text: str) -> None:
    assert one(text).facts == []  # "not allergic to peanuts" never becomes "allergic to peanuts"


@pytest.mark.parametrize(("text", "polarity"), [
    ("I don't like coffee anymore.", -1), ("I love coffee nowadays.", 1), ("I don't hate coffee anymore.", 1)])
def test_a_time_adverb_is_not_part_of_the_target(text: str, polarity: int) -> None:
    [claim] = one(text).claims  # "coffee anymore" would never reconcile with "I love coffee"
    assert (claim.target, claim.polarity) == ("coffee", polarity)


@pytest.mark.parametrize(("text", "start"), [
    ("In the spring we planted tomatoes yesterday.", "2023-05-07"),  # yesterday lies within the spring
    ("We went to Paris in March last year.", "2022-03-01"),
    ("In 2020 I went to Rome and again yesterday.", "2020-01-01"),  # yesterday is not within 2020
    ("My niece graduated last month on April 15th.", "2023-04-15"),
    ("I visited Universal Studios last year around October 8th.", "2022-10-08"),
    ("I went to a workshop last weekend, on Saturday and Sunday.", "2023-05-06"),  # two more times: the weekend
    ("I wore loafers every day last week, from Tuesday to Friday.", "2023-05-01"),
    ("I wore loafers every day last week, from Monday to Tuesday.", "2023-05-01"),  # "Tuesday" is tomorrow
    ("I've gone to bed at 11 for the past two weeks, except for last Friday.", "2023-04-24"),  # a rolling span
])
def test_an_event_takes_the_narrowest_nested_time(text: str, start: str) -> None:
    [event] = one(text).events
    assert d(event.start) == start


@pytest.mark.parametrize(("text", "polarity"), [
    ("I used to love running, but not anymore.", -1), ("I used to like hiking and I no longer do.", -1),
    ("I used to hate sushi but I don't anymore.", 1)])
def test_a_preference_that_has_turned_holds_the_other_way_now(text: str, polarity: int) -> None:
    [claim] = one(text).claims
    assert (claim.predicate, claim.polarity) == ("preference", polarity)


@pytest.mark.parametrize("text", ["I used to love running.", "I used to like it but I'm not sure now.",
                                  "I used to love running. I don't have time anymore."])
def test_a_past_preference_alone_says_nothing_of_now(text: str) -> None:
    assert one(text).claims == [] and one(text).facts == []


def test_a_present_preference_after_a_past_one_still_counts() -> None:
    ex = one("I used to love running but I like swimming.")
    assert [(c.target, c.polarity) for c in ex.claims] == [("swimming", 1)]
    assert [(f.predicate, f.object) for f in ex.facts] == [("likes", "swimming")]


def test_a_negated_preference_is_a_dislike() -> None:
    assert [(f.predicate, f.object) for f in one("I don't like dogs, that's why I have cats.").facts] == [
        ("dislikes", "dogs")]


def test_pet_names_are_concepts_not_persons() -> None:
    ex = one("I have a dog named Bailey. Bailey loves the beach.")
    assert "Bailey" not in ex.persons
    assert "bailey" in [c.name for c in ex.concepts]
    assert [c for c in ex.claims if c.source == "Bailey"] == []


def test_fact_valid_from_uses_the_time_of_its_sentence() -> None:
    f = one("I moved to Denver last year.").facts[0]
    assert (f.predicate, f.object, d(f.valid_from)) == ("lives_in", "denver", "2022-01-01")


# --------------------------------------------------------------------------- claims


def claims_of(ex: Extraction) -> list[tuple[str, str, str, int]]:
    return [(c.source, c.target, c.predicate, c.polarity) for c in ex.claims]


# (text, source, target, predicate, polarity)
CLAIMS = [
    ("I think the manager is unfair.", "Melanie", "manager", "opinion", -1),
    ("That film is overrated.", "Melanie", "film", "opinion", -1),
    ("Little Fern is amazing!", "Melanie", "little fern", "opinion", 1),
    ("I love that café.", "Melanie", "café", "opinion", 1),
    ("I can't stand reality shows.", "Melanie", "reality shows", "preference", -1),
    ("I don't like running.", "Melanie", "running", "preference", -1),
    ("What a beautiful painting!", "Melanie", "painting", "opinion", 1),
    ("My mom thinks the new cafe is terrible.", "Melanie's mom", "cafe", "opinion", -1),
    ("I believe the store closes at nine.", "Melanie", "store", "belief", 0),
]


@pytest.mark.parametrize(("text", "source", "target", "predicate", "polarity"), CLAIMS)
def test_claims(text: str, source: str, target: str, predicate: str, polarity: int) -> None:
    ex = one(text)
    assert claims_of(ex)[:1] == [(source, target, predicate, polarity)], ex.claims
    c = ex.claims[0]
    assert isinstance(c, ExtractedClaim)
    assert c.content == text and c.timestamp == REF and c.source_turn_id == "t0"
    assert -1.0 <= c.sentiment <= 1.0
    assert (c.sentiment > 0) - (c.sentiment < 0) == c.polarity


def test_changed_preference_gives_opposite_polarities_about_the_same_target() -> None:
    a, b = convo(("Maya", "I hate running."), ("Maya", "I love running now!"))
    assert claims_of(a) == [("Maya", "running", "preference", -1)]
    assert claims_of(b) == [("Maya", "running", "preference", 1)]
    assert [(f.predicate, f.object) for f in a.facts] == [("dislikes", "running")]
    assert [(f.predicate, f.object) for f in b.facts] == [("likes", "running")]
    assert "running" in [c.name for c in a.concepts] and "running" in [c.name for c in b.concepts]


def test_two_clauses_two_claims() -> None:
    ex = one("I hate running but I love swimming.")
    assert claims_of(ex) == [("Melanie", "running", "preference", -1), ("Melanie", "swimming", "preference", 1)]


def test_evaluation_of_a_specific_thing_is_a_claim_not_a_fact() -> None:
    ex = one("I loved the movie we saw.")
    assert claims_of(ex) == [("Melanie", "movie", "opinion", 1)]
    assert [f for f in ex.facts if f.predicate in ("likes", "dislikes")] == []


def test_reported_opinion_is_attributed_to_that_person() -> None:
    ex = one("Caroline thinks yoga is boring.", known_people=["Caroline"])
    assert claims_of(ex) == [("Caroline", "yoga", "opinion", -1)]
    ex = one("My sister loves jazz, but I find it dull.")
    assert ("Melanie's sister", "jazz", "preference", 1) in claims_of(ex)
    assert all(f.subject == "Melanie" for f in ex.facts)
    assert ("likes", "jazz") not in [(f.predicate, f.object) for f in ex.facts]


@pytest.mark.parametrize(
    "text", ["Do you think it's good?", "Is that film overrated?", "Do you like hiking?", "What do you love about it?"]
)
def test_questions_give_no_claims(text: str) -> None:
    assert one(text).claims == []


def test_you_is_the_addressee() -> None:
    _, b = convo(("Caroline", "I finally came out to my family."), ("Melanie", "You're so brave!"))
    assert claims_of(b) == [("Melanie", "Caroline", "opinion", 1)]


def test_pronoun_target_is_the_last_concept() -> None:
    ex = one("I tried pottery last week. It was amazing!")
    assert claims_of(ex) == [("Melanie", "pottery", "opinion", 1)]


def test_claim_targets_are_concepts_or_persons() -> None:
    for ex in convo(("Caroline", "I think the manager is unfair."), ("Melanie", "Caroline is so brave.")):
        names = {c.name for c in ex.concepts} | set(ex.persons) | {"Caroline", "Melanie"}
        assert all(c.target in names for c in ex.claims)


# --------------------------------------------------------------------------- persons and concepts


def test_persons_exclude_the_speaker_and_common_capitalised_words() -> None:
    ex = one("Hey Caroline, Monday was great! OMG I met Josh at the park.")
    assert ex.persons == ["Caroline", "Josh"]


def test_kinship_persons_are_named_after_their_owner() -> None:
    assert one("My sister visited last week.").persons == ["Melanie's sister"]
    assert one("My mum and my father came over.").persons == ["Melanie's mom", "Melanie's dad"]
    assert one("My friend Josh came over.").persons == ["Josh"]
    _, b = convo(("Caroline", "I'm back!"), ("Melanie", "How is your mom doing? Tell your mom I said hi."))
    assert b.persons == ["Caroline's mom"]


def test_known_speakers_are_recognised_at_sentence_start() -> None:
    _, b = convo(("Caroline", "I adopted a cat."), ("Melanie", "Caroline is so lucky."))
    assert b.persons == ["Caroline"]
    # an unknown capitalised word at a sentence start is not a person, unless a verb of people follows
    assert one("Josh is so lucky.").persons == []
    assert one("Josh is so lucky.", known_people=["Josh"]).persons == ["Josh"]
    assert one("Doug started two weeks ago.").persons == ["Doug"]
    assert one("Pottery helped me a lot.").persons == []


def test_nickname_of_a_speaker_is_the_speaker() -> None:
    _, b = convo(("Melanie", "I'm here."), ("Caroline", "Hey Mel, I went to the park."))
    assert b.persons == ["Melanie"]


def concepts_of(ex: Extraction) -> dict[str, str]:
    return {c.name: c.kind for c in ex.concepts}


def test_places_and_titles_are_concepts() -> None:
    ex = one("We went to Paris in May and watched Everything Everywhere All at Once.")
    assert ex.persons == []
    assert concepts_of(ex)["paris"] == "place"
    assert "everything everywhere all at once" in concepts_of(ex)
    ex = one('I read "The Midnight Library" last month.')
    assert concepts_of(ex)["the midnight library"] == "work"


def test_activities_and_verb_objects_are_concepts() -> None:
    ex = one("I do yoga and pottery. Last week I joined a book club.")
    kinds = concepts_of(ex)
    assert kinds["yoga"] == "activity" and kinds["pottery"] == "activity"
    assert "book club" in kinds
    for c in ex.concepts:
        assert isinstance(c, ExtractedConcept)
        assert c.name == c.name.lower().strip() and c.name
        assert c.kind in {"place", "organization", "thing", "topic", "activity", "work"}


def test_content_without_rules_still_yields_a_topic() -> None:
    ex = one("They eat a combination of vegetables, fruits, and insects.")
    assert ex.concepts and not ex.empty


# --------------------------------------------------------------------------- determinism and robustness


def test_deterministic_across_extractors_and_calls() -> None:
    lines = [
        ("Caroline", "I went to a support group yesterday. It was so powerful!"),
        ("Melanie", "That's amazing, Caroline! My kids and I went camping last weekend."),
        ("Caroline", "I love camping. My friend Josh says Little Fern is the best spot."),
        ("Melanie", "I have a dog named Luna. Luna is adorable."),
    ]
    turns = [make(t, s, i) for i, (s, t) in enumerate(lines)]
    rx = RuleExtractor(strict=True)
    first = rx.extract(turns)
    assert rx.extract(turns) == first
    assert RuleExtractor(strict=True).extract(turns) == first


def test_sample_conversation_coverage() -> None:
    """Most content-bearing turns of the bundled sample yield a non-person record."""
    conv = load_locomo(SAMPLE)[0]
    out = RuleExtractor(known_people=conv.speakers, strict=True).extract(conv.turns)
    content = [(t, e) for t, e in zip(conv.turns, out, strict=True) if not is_chitchat(t.text)]
    covered = sum(bool(e.concepts or e.events or e.facts or e.claims) for _, e in content)
    assert covered / len(content) >= 0.9
    assert any(e.events for _, e in content) and any(e.claims for _, e in content)


def test_unexpected_errors_are_contained_unless_strict(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(EntityStage, "find_concepts", boom)
    ex = RuleExtractor().extract([make("I went hiking yesterday.")])[0]
    assert ex.turn_id == "t0" and ex.empty
    with pytest.raises(RuntimeError):
        RuleExtractor(strict=True).extract([make("I went hiking yesterday.")])


#: Words that trigger the rules, for generated texts.
_VOCAB_TEXT = (
    "I we my mom Caroline Josh went love hate think is was amazing awful yesterday last Friday next week "
    "the a to at in and but running pottery Paris \"Dune\" dog named Luna allergic favorite work as nurse "
    "you it that ? ! . , ' - my kids I'm I've been for years usually every day Mom says OMG Hi Thanks"
)
_VOCAB = _VOCAB_TEXT.split()
_texts = st.one_of(
    st.text(min_size=1, max_size=200),
    st.lists(st.sampled_from(_VOCAB), min_size=1, max_size=40).map(" ".join),
).filter(lambda s: s.strip() and "\x00" not in s)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["Caroline", "Melanie"]), _texts), min_size=1, max_size=4))
def test_arbitrary_text_never_raises_and_keeps_provenance(lines: list[tuple[str, str]]) -> None:
    turns = [make(text, speaker, i) for i, (speaker, text) in enumerate(lines)]
    out = RuleExtractor(strict=True).extract(turns)
    assert len(out) == len(turns)
    for turn, ex in zip(turns, out, strict=True):
        assert ex.turn_id == turn.id and ex.speaker == turn.speaker
        records: list[ExtractedConcept | ExtractedEvent | ExtractedFact | ExtractedClaim] = [
            *ex.concepts, *ex.events, *ex.facts, *ex.claims
        ]  # fmt: skip
        assert all(r.source_turn_id == turn.id for r in records)
        assert turn.speaker not in ex.persons
        for c in ex.claims:
            assert c.polarity in (-1, 0, 1) and -1.0 <= c.sentiment <= 1.0 and c.target and c.source
            assert c.timestamp == turn.timestamp
        for e in ex.events:
            assert e.participants and e.text and e.verb
            assert (e.start is None) == (e.end is None)
            if e.start is not None and e.end is not None:
                assert e.start < e.end
        for concept in ex.concepts:
            assert concept.name and concept.name == concept.name.lower()
    assert RuleExtractor(strict=True).extract(turns) == out


def test_timestamps_in_other_timezones_keep_their_zone() -> None:
    from zoneinfo import ZoneInfo

    ts = datetime(2023, 5, 8, 9, 0, tzinfo=ZoneInfo("America/New_York"))
    ev = RuleExtractor(strict=True).extract([make("I went hiking yesterday.", ts=ts)])[0].events[0]
    assert ev.start is not None and ev.start.date() == date(2023, 5, 7)
    assert ev.start.tzinfo == ts.tzinfo


# --------------------------------------------------------------------------- names that are not people


def test_plural_days_titles_by_an_author_and_places_named_elsewhere_are_not_people() -> None:
    ex = convo(("Maya", "Doug cancelled everyone's remote Fridays."),
               ("Maya", "I'm rereading Piranesi by Susanna Clarke for the third time."),
               ("Leo", "Sam and I are going to Yosemite next month to climb."),
               ("Maya", "Send me photos from Yosemite, okay?"))
    people = [p for e in ex for p in e.persons]
    assert "Sam" in people
    assert not {"Fridays", "Piranesi", "Yosemite"} & set(people)
    assert ("yosemite", "place") in {(c.name, c.kind) for c in ex[3].concepts}
    # A name that is a person elsewhere in the batch stays a person.
    ex = convo(("Maya", "My friend Jordan moved to Denver."), ("Leo", "Say hi from me to Jordan, okay?"))
    assert "Jordan" in ex[1].persons
