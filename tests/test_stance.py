"""The learned stance reader (langmem_cog/rank/stance.py): its file, its checks, which embedder it fits, and
how the cascade's reaction rule uses it beside the stance lexicon."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langmem_cog import CogMemConfig
from langmem_cog.embeddings import config_embedder
from langmem_cog.errors import DamagedModelError, InvalidInputError, LangMemCogError, ModelNotFoundError
from langmem_cog.memory import CogMemory
from langmem_cog.rank.cascade import Cascade
from langmem_cog.rank.questions import states_stance
from langmem_cog.rank.stance import StanceModel, shipped_stance_model
from langmem_cog.rank.updates import Echo, echo_first, reaction_first
from langmem_cog.records import make_turn
from langmem_cog.storage.identity import embedder_identity

T0 = datetime(2024, 1, 1, 9, tzinfo=UTC)


def _model(**kw: object) -> StanceModel:
    fields = {"weights": np.array([1.0, -1.0]), "bias": 0.0, "threshold": 0.5, "embedder_sha256": "abc", **kw}
    return StanceModel(**fields)  # type: ignore[arg-type]


def test_probability_is_a_logistic_of_the_vector_and_reads_cut_at_the_threshold() -> None:
    model = _model(threshold=0.6)
    x = np.array([[2.0, 0.0], [0.0, 0.0], [0.0, 2.0]])
    p = model.probability(x)
    assert p == pytest.approx(1 / (1 + np.exp(-np.array([2.0, 0.0, -2.0]))))
    assert model.reads(x).tolist() == [True, False, False]
    assert np.all(np.diff(model.probability(np.array([[a, 0.0] for a in np.linspace(-3, 3, 7)]))) > 0)  # monotone


@pytest.mark.parametrize("fields", [{"weights": np.array([])}, {"weights": np.array([np.nan, 1.0])},
                                    {"weights": np.ones((2, 2))}, {"bias": float("inf")}, {"threshold": 0.0},
                                    {"threshold": 1.0}, {"threshold": -0.2}])
def test_a_model_that_cannot_read_is_refused_with_a_named_error(fields: dict) -> None:
    with pytest.raises(InvalidInputError):
        _model(**fields)


def test_vectors_of_another_dimension_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="dimension 2"):
        _model().probability(np.ones((3, 5)))
    with pytest.raises(InvalidInputError):
        _model().probability(np.ones(2))  # one vector must be a row


def test_a_missing_or_damaged_file_is_a_named_error(tmp_path) -> None:
    with pytest.raises(ModelNotFoundError):
        StanceModel.from_file(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    for text in ("{not json", json.dumps({"weights": [1.0]}), json.dumps({"weights": [], "bias": 0, "threshold": 0.5,
                                                                          "embedder_sha256": "x"})):
        bad.write_text(text)
        with pytest.raises(DamagedModelError) as info:
            StanceModel.from_file(bad)
        assert isinstance(info.value, LangMemCogError) and isinstance(info.value, ValueError)
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"weights": [1.0, 2.0], "bias": -1, "threshold": 0.5, "embedder_sha256": "x",
                                "provenance": {"command": "c"}}))
    assert StanceModel.from_file(good).provenance == {"command": "c"}


def test_the_shipped_model_fits_the_packaged_embedder_only() -> None:
    model = shipped_stance_model()
    assert model is shipped_stance_model()  # loaded once
    assert model.provenance["teacher"] and model.provenance["command"]
    packaged = config_embedder(CogMemConfig.preset("ephemeral"))
    assert model.fits(embedder_identity(packaged))
    assert model.weights.size == len(packaged.embed_query("hello"))
    assert not model.fits(embedder_identity(DeterministicFakeEmbedding(size=384)))
    assert not model.fits({"kind": "sentence-transformers", "sha256": {"model.safetensors": "other"}})


#: Pairs of turns on one matter: a judgement in words the stance lexicon holds none of, and a plain report.
PAIRS = [("Two hundred euros for a folding chair is daylight robbery.",
          "I bought a folding chair at the market for the balcony."),
         ("That ferry timetable is a joke, nobody can plan around it.",
          "We took the ferry to the island on Saturday morning."),
         ("Your brother will be bored of that boat within a month, mark my words.",
          "My brother bought a boat last month and keeps it at the marina."),
         ("Painting the kitchen purple was a bold choice and it paid off.",
          "We painted the kitchen purple over the weekend."),
         ("Nobody should pay that much for a haircut.",
          "I got a haircut on Tuesday at the place by the station."),
         ("That landlord is going to keep your deposit, just watch.",
          "The landlord came round to check the boiler this morning.")]


def test_the_shipped_model_reads_judgements_the_lexicon_misses_above_reports_of_the_same_matter() -> None:
    model = shipped_stance_model()
    emb = config_embedder(CogMemConfig.preset("ephemeral"))
    assert not any(states_stance(judged) for judged, _ in PAIRS)  # the lexicon reads none of them
    vectors = np.asarray(emb.embed_documents([f"Ines: {t}" for pair in PAIRS for t in pair]))  # as turns are stored
    p = model.probability(vectors).reshape(-1, 2)
    assert (p[:, 0] > p[:, 1]).all()  # each judgement above the report on its matter
    read = model.reads(vectors).reshape(-1, 2)
    assert read[:, 0].sum() > read[:, 1].sum()


def _turn(tid: str, speaker: str, text: str, day: int, session: str):
    return make_turn(id=tid, namespace="n", speaker=speaker, text=text, timestamp=T0 + timedelta(days=day),
                     session_id=session)


def test_a_reaction_the_model_reads_as_a_stance_moves_like_one_the_lexicon_reads() -> None:
    unread = _turn("take", "Jo", "four hundred quid for that rust bucket, right before winter", 40, "4")
    assert not states_stance(unread.text)
    turns = {"take": unread}
    assert reaction_first(["news", "x", "take"], [Echo("news", "take", 3.5)], turns, "jo") == ["news", "x", "take"]
    assert reaction_first(["news", "x", "take"], [Echo("news", "take", 3.5, stance=True)], turns, "jo") == \
        ["take", "news", "x"]
    # a question is still no stance, whatever the model reads
    asks = {"take": _turn("take", "Jo", "four hundred quid for that rust bucket, really?", 40, "4")}
    assert reaction_first(["news", "x"], [Echo("news", "take", 3.5, stance=True)], asks, "jo") == ["news", "x"]


def test_a_holders_later_word_the_model_reads_as_a_stance_can_stand_for_their_view_now() -> None:
    later = {"new": _turn("new", "Jo", "the new office on the river with the glass walls and the long commute", 90, "5")}
    lead = _turn("old", "Jo", "the old office", 10, "1")
    turns = {**later, "old": lead}
    assert echo_first(["old", "x"], [Echo("old", "new", 4.0)], turns, holder="jo") == ["old", "x"]
    assert echo_first(["old", "x"], [Echo("old", "new", 4.0, stance=True)], turns, holder="jo") == ["new", "old", "x"]
    assert echo_first(["old", "x"], [Echo("old", "new", 4.0)], turns) == ["new", "old", "x"]  # no holder: no gate


def test_the_cascade_reads_stance_only_where_the_model_fits_its_embedder() -> None:
    fake = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=DeterministicFakeEmbedding(size=16))
    assert Cascade(store=fake.store, memory=fake)._stance_reader() is None
    own = _model(weights=np.ones(16))
    assert Cascade(store=fake.store, memory=fake, stance=own)._stance_reader() is own
    packaged = CogMemory(CogMemConfig.preset("ephemeral"))
    assert Cascade(store=packaged.store, memory=packaged)._stance_reader() is shipped_stance_model()
