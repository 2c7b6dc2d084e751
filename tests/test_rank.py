"""The cascade's stages: features, fusion scorer, ConvMemory v2 compressor, retriever wiring."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from fakes import FakeEmbeddings
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.cross_encoders import BaseCrossEncoder
from langchain_core.documents import BaseDocumentCompressor, Document

from langmem_cog import CogMemConfig, CogMemRetriever, make_turn
from langmem_cog.config import RetrieverSettings, SearchSettings
from langmem_cog.errors import ConfigError, InvalidInputError, ShortcutFieldError
from langmem_cog.memory import CogMemory
from langmem_cog.rank.cascade import Cascade, CascadeSettings
from langmem_cog.rank.compressor import FORBIDDEN_FIELDS, Candidate, ConvMemoryCompressor
from langmem_cog.rank.data import rerank_examples
from langmem_cog.rank.features import FEATURE_NAMES, CandidatePool, GraphSignals, candidate_features, neighbour_max
from langmem_cog.rank.head import head_order
from langmem_cog.rank.scorer import FusionScorer
from langmem_cog.rank.training import RerankExample

T0 = datetime(2023, 5, 8, 9, 0, tzinfo=UTC)


def _turns(texts, speakers=None, sessions=None, ns="rank-test"):
    return [
        make_turn(id=f"t{i}", namespace=ns, speaker=(speakers or ["Leo"] * len(texts))[i], text=x, position=i,
                  session_id=(sessions or ["1"] * len(texts))[i], timestamp=T0 + timedelta(minutes=i))
        for i, x in enumerate(texts)
    ]


class RecordingCE(BaseCrossEncoder):
    """A cross-encoder with known geometry: the score is the number of query words in the memory."""

    def __init__(self) -> None:
        self.calls: list[list[tuple[str, str]]] = []

    def score(self, text_pairs):
        self.calls.append(list(text_pairs))
        out = []
        for q, m in text_pairs:
            qw = {w.strip("?.,").lower() for w in q.split()}
            out.append(float(sum(w.strip("?.,").lower() in qw for w in m.split())))
        return out


class ReverseCE(BaseCrossEncoder):
    """Scores the candidates in reverse of their input order."""

    def score(self, text_pairs):
        return [-float(i) for i in range(len(text_pairs))][::-1]


# ---------------------------------------------------------------- features
def test_features_shape_and_columns():
    turns = _turns(["I am allergic to shellfish.", "Really?", "Since I was a kid."], ["Leo", "Maya", "Leo"])
    pool = CandidatePool(turns=turns, dense=np.array([0.9, 0.1, 0.2]), lexical=np.array([3.0, 0.0, 0.0]))
    X = candidate_features(pool, "What is Leo allergic to?")
    col = FEATURE_NAMES.index
    assert X.shape == (3, len(FEATURE_NAMES))
    assert X[:, col("speaker_match")].tolist() == [1.0, 0.0, 1.0]
    assert X[:, col("is_question")].tolist() == [0.0, 1.0, 0.0]
    assert X[:, col("lexical_zero")].tolist() == [0.0, 1.0, 1.0]
    assert X[:, col("position")].tolist() == [0.0, 0.5, 1.0]
    # the neighbour window carries turn 0's strong score to its neighbours
    assert X[1, col("window1")] == pytest.approx(X[:, col("dense_z")][0] + X[:, col("lexical_z")][0])
    assert not X[:, [col(f) for f in FEATURE_NAMES if f.startswith("graph_")]].any()


@given(st.lists(st.sampled_from(["I love crab boil parties.", "When did Leo adopt Pickle in May 2021?", "Nice.",
                                  "Because Maya visited the Louvre in Paris, twice!", "I read \"Dune\" last week"]),
                min_size=1, max_size=8),
       st.sampled_from(["What is Leo allergic to?", "When did Maya go to Paris?", "Why does Leo like Dune?",
                        "Who did Maya meet?", "How many cats?"]),
       st.sets(st.sampled_from(FEATURE_NAMES)))
@settings(max_examples=60, deadline=None)
def test_a_subset_of_features_scores_exactly_as_every_feature(texts, query, subset):
    turns = _turns(texts, [("Leo", "Maya")[i % 2] for i in range(len(texts))], [str(i // 3) for i in range(len(texts))])
    rng = np.random.default_rng(len(texts))
    state = {"evidence": [{"turn_id": "t0", "node_type": "Event"}], "time_window": (T0, None),
             "intent": "TEMPORAL"}
    pool = CandidatePool(turns=turns, dense=rng.normal(size=len(texts)), lexical=np.abs(rng.normal(size=len(texts))),
                         context=rng.normal(size=len(texts)))
    full = candidate_features(pool, query, GraphSignals.from_state(state))
    part = candidate_features(pool, query, GraphSignals.from_state(state), only=subset)
    keep = [FEATURE_NAMES.index(f) for f in subset]
    assert np.array_equal(part[:, keep], full[:, keep])
    assert not part[:, [j for j in range(len(FEATURE_NAMES)) if j not in keep]].any()
    w = np.array([1.0 if f in subset else 0.0 for f in FEATURE_NAMES])
    scorer = FusionScorer(weights=w)
    assert scorer.active_features == frozenset(subset)
    assert np.array_equal(scorer.score(part), scorer.score(full))


def test_the_feature_registry_names_each_column_once_and_refuses_unknown_names():
    from langmem_cog.rank.features import FEATURES

    assert tuple(f.name for f in FEATURES) == FEATURE_NAMES and len(set(FEATURE_NAMES)) == len(FEATURE_NAMES)
    assert all(f.family and f.doc for f in FEATURES)
    pool = CandidatePool(turns=_turns(["x"]), dense=np.zeros(1), lexical=np.zeros(1))
    with pytest.raises(InvalidInputError, match="unknown features"):
        candidate_features(pool, "q", only={"dense_z", "densez"})


def test_neighbour_window_never_crosses_sessions():
    turns = _turns(["a", "b", "c", "d"], sessions=["1", "1", "2", "2"])
    out = neighbour_max(np.array([1.0, 5.0, 9.0, 2.0]), turns, 2)
    assert out.tolist() == [5.0, 1.0, 2.0, 9.0]


def test_graph_features_from_operator_state():
    turns = _turns(["x", "y", "z"])
    state = {"evidence": [{"turn_id": "t2", "node_type": "Fact", "via_types": ["Fact", "Event"]},
                          {"turn_id": "t0", "node_type": "Claim"}],
             "time_window": (T0, T0 + timedelta(minutes=1)), "intent": "TEMPORAL"}
    signals = GraphSignals.from_state(state)
    pool = CandidatePool(turns=turns, dense=np.zeros(3), lexical=np.zeros(3))
    X = candidate_features(pool, "when?", signals)
    col = FEATURE_NAMES.index
    assert X[:, col("graph_grounded")].tolist() == [1.0, 0.0, 1.0]
    assert X[:, col("graph_rr")].tolist() == [0.5, 0.0, 1.0]
    assert X[:, col("graph_fact")].tolist() == [0.0, 0.0, 1.0]
    assert X[:, col("graph_claim")].tolist() == [1.0, 0.0, 0.0]
    assert X[:, col("in_window")].tolist() == [1.0, 1.0, 0.0]


def test_session_and_time_question_features():
    turns = _turns(["We met in May 2021.", "Nice.", "I have 3 cats.", "Cool"], sessions=["1", "1", "2", "2"])
    pool = CandidatePool(turns=turns, dense=np.array([0.9, 0.1, 0.5, 0.2]), lexical=np.array([2.0, 0.0, 1.0, 0.0]))
    col = FEATURE_NAMES.index
    X = candidate_features(pool, "When did they meet?")
    hybrid = X[:, col("dense_z")] + X[:, col("lexical_z")]
    assert X[:, col("session_best")].tolist() == pytest.approx([hybrid[0], hybrid[0], hybrid[2], hybrid[2]])
    assert X[:, col("session_mean")][0] == pytest.approx(hybrid[:2].mean())
    assert X[:, col("session_rr")].tolist() == [1.0, 0.5, 1.0, 0.5]
    assert X[:, col("when_number")].tolist() == [1.0, 0.0, 1.0, 0.0]
    assert X[:, col("when_time_word")].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert X[:, col("dense_x_lexical")].tolist() == pytest.approx((X[:, col("dense_z")] * X[:, col("lexical_z")]).tolist())
    other = candidate_features(pool, "What do they own?")  # not a time question: the time flags stay 0
    assert not other[:, [col("when_number"), col("when_time_word")]].any()
    signals = GraphSignals(grounded=["t2"])
    G = candidate_features(pool, "What do they own?", signals)
    assert G[:, col("grounded_near")].tolist() == [0.0, 0.0, 0.0, 1.0]  # the neighbour in session 2 only


def test_answer_type_features_match_the_kind_of_answer_asked_for():
    texts = ["Maya and I went to Paris last spring.", "We adopted two cats.", "Leo said hi.",
             "I loved reading \"Dune\" because it helps me relax.", "Ok."]
    turns = _turns(texts, speakers=["Leo", "Maya", "Maya", "Leo", "Maya"])
    pool = CandidatePool(turns=turns, dense=np.zeros(5), lexical=np.zeros(5))
    col = FEATURE_NAMES.index

    def column(query, name):
        return candidate_features(pool, query)[:, col(name)].tolist()

    assert column("Where did Leo travel?", "where_place") == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert column("How many cats does Maya have?", "count_number") == [0.0, 1.0, 0.0, 0.0, 0.0]
    # 'Paris' and 'Dune' are capitalised and no speaker's; 'Leo' and 'Maya' are speakers, not answers to "who".
    assert column("Who did Leo travel with?", "who_name") == [1.0, 0.0, 0.0, 1.0, 0.0]
    assert column("What book does Leo enjoy?", "title_name") == [0.0, 0.0, 0.0, 1.0, 0.0]
    assert column("What book does Leo enjoy?", "like_preference") == [0.0, 0.0, 0.0, 1.0, 0.0]
    assert column("Why does Leo read?", "why_reason") == [0.0, 0.0, 0.0, 1.0, 0.0]
    assert column("When was Leo in Paris?", "proper_overlap") == [1.0, 0.0, 0.0, 0.0, 0.0]  # Leo: a speaker
    assert column("Did they adopt two cats?", "bigram_overlap") == pytest.approx([0, np.log(2), 0, 0, 0])
    # A question that asks for none of these leaves the flags at zero.
    X = candidate_features(pool, "what is up")
    assert not X[:, col("who_name") : col("why_reason") + 1].any()


def test_misaligned_pool_is_refused():
    with pytest.raises(InvalidInputError, match="misaligned"):
        CandidatePool(turns=_turns(["a"]), dense=np.zeros(2), lexical=np.zeros(1))


# ---------------------------------------------------------------- scorer
def test_scorer_learns_the_informative_feature():
    rng = np.random.default_rng(1)
    j = FEATURE_NAMES.index("lexical_rr")
    lists = [rng.normal(size=(30, len(FEATURE_NAMES))) for _ in range(60)]
    golds = [np.eye(30, dtype=bool)[int(np.argmax(X[:, j]))] for X in lists]
    scorer = FusionScorer.fit(lists, golds, trained_on="synthetic")
    assert int(np.argmax(scorer.weights)) == j
    hits = [int(np.argmax(scorer.score(X))) == int(np.argmax(X[:, j])) for X in lists]
    assert np.mean(hits) > 0.9
    again = FusionScorer.from_dict(scorer.to_dict())
    assert np.allclose(again.score(lists[0]), scorer.score(lists[0]))
    assert again.trained_on == "synthetic"


def test_scorer_errors_name_the_fix():
    with pytest.raises(InvalidInputError, match="no training query has a gold"):
        FusionScorer.fit([np.zeros((3, len(FEATURE_NAMES)))], [np.zeros(3, bool)])
    with pytest.raises(ConfigError, match="retrain"):
        FusionScorer.from_dict({"features": ["a"], "weights": [1.0]})
    with pytest.raises(ConfigError, match="one weight per feature"):
        FusionScorer.from_dict({"features": ["dense_z", "lexical_z"], "weights": [1.0]})
    with pytest.raises(ConfigError, match="repeated"):
        FusionScorer.from_dict({"features": ["dense_z", "dense_z"], "weights": [1.0, 2.0]})


def test_scorer_fitted_on_fewer_features_gives_the_new_ones_weight_zero():
    old = FusionScorer.from_dict({"features": ["lexical_z", "dense_z"], "weights": [0.5, 2.0]})
    assert old.features == FEATURE_NAMES
    assert old.weights[FEATURE_NAMES.index("dense_z")] == 2.0 and old.weights[FEATURE_NAMES.index("lexical_z")] == 0.5
    assert np.count_nonzero(old.weights) == 2
    with pytest.raises(InvalidInputError):
        FusionScorer.untrained().score(np.zeros((2, 3)))


# ---------------------------------------------------------------- compressor
def _docs(n, **meta):
    return [Document(id=f"d{i}", page_content=f"memory {i}", metadata={"score": float(n - i), "position": i, **meta})
            for i in range(n)]


@settings(max_examples=60, deadline=None)
@given(n=st.integers(min_value=0, max_value=30), protect=st.integers(min_value=1, max_value=12),
       scores=st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=30, max_size=30),
       w_first=st.sampled_from([0.0, 0.5, 1.0]), scale=st.sampled_from(["z", "center"]))
def test_compressor_preserves_topk_set_and_tail(n, protect, scores, w_first, scale):
    class ListCE(BaseCrossEncoder):
        def score(self, text_pairs):
            return [scores[int(m.rsplit(" ", 1)[1])] for _, m in text_pairs]

    docs = _docs(n)
    out = ConvMemoryCompressor(cross_encoder=ListCE(), protect=protect, first_stage_weight=w_first,
                               use_positions=False, scale=scale).compress_documents(docs, "q")
    ids_in, ids_out = [d.id for d in docs], [d.id for d in out]
    assert sorted(ids_out) == sorted(ids_in)
    assert set(ids_out[:protect]) == set(ids_in[:protect])
    assert ids_out[protect:] == ids_in[protect:]
    rel = [d.metadata["relevance_score"] for d in out]
    assert rel == sorted(rel, reverse=True)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(min_value=0, max_value=14), protect=st.integers(min_value=1, max_value=12),
       scores=st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=14, max_size=14),
       w_first=st.sampled_from([0.0, 1.0]), positions=st.booleans(), max_position=st.sampled_from([None, 40]))
def test_rerank_by_values_orders_as_compress_documents(n, protect, scores, w_first, positions, max_position):
    class ListCE(BaseCrossEncoder):
        def score(self, text_pairs):
            return [scores[int(m.rsplit(" ", 1)[1])] + 0.001 * len(q) for q, m in text_pairs]

    extra = {} if max_position is None else {"max_position": max_position}
    docs = _docs(n, **extra)
    compressor = ConvMemoryCompressor(cross_encoder=ListCE(), protect=protect, first_stage_weight=w_first,
                                      use_positions=positions)
    candidates = [Candidate(turn_id=str(d.id), text=d.page_content, score=d.metadata["score"],
                            position=d.metadata["position"]) for d in docs]
    by_values = compressor.rerank(candidates, "q", max_position=max_position)
    out = compressor.compress_documents(docs, "q")
    assert [d.id for d in by_values.apply(docs)] == [d.id for d in out] == [docs[i].id for i in by_values.order]
    assert [d.metadata for d in by_values.apply(docs)] == [d.metadata for d in out]
    assert by_values.head == min(n, protect)


def test_compressor_formats_time_prefixed_pairs_and_reorders():
    ce = RecordingCE()
    docs = [Document(id="a", page_content="Maya: nice weather", metadata={"score": 2.0, "position": 3, "max_position": 40}),
            Document(id="b", page_content="Leo: I am allergic to shellfish", metadata={"score": 1.0, "position": 7,
                                                                                       "max_position": 40})]
    out = ConvMemoryCompressor(cross_encoder=ce, first_stage_weight=0.0).compress_documents(docs, "Leo allergic to what")
    assert ce.calls[0][1] == ("QUERY_TIME: 40. Leo allergic to what", "MEMORY_TIME: 7. Leo: I am allergic to shellfish")
    assert [d.id for d in out] == ["b", "a"]
    assert [d.metadata["reranked"] for d in out] == [True, True]
    assert docs[0].metadata.get("relevance_score") is None  # inputs are not mutated


def test_compressor_blend_keeps_first_stage_when_cross_encoder_is_off():
    docs = _docs(5)
    out = ConvMemoryCompressor(cross_encoder=ReverseCE(), cross_encoder_weight=0.0).compress_documents(docs, "q")
    assert [d.id for d in out] == [d.id for d in docs]


@pytest.mark.parametrize("field", sorted(FORBIDDEN_FIELDS))
def test_compressor_refuses_gold_and_teacher_fields(field):
    docs = _docs(3)
    docs[1].metadata[field] = True
    with pytest.raises(ShortcutFieldError, match=field) as info:
        ConvMemoryCompressor(cross_encoder=RecordingCE()).compress_documents(docs, "q")
    assert isinstance(info.value, ValueError)


# ---------------------------------------------------------------- training data
def test_rerank_examples_add_missed_gold_in_compressor_format():
    turns = _turns(["a", "b", "c"])
    pool = CandidatePool(turns=turns, dense=np.zeros(3), lexical=np.zeros(3))
    [ex] = rerank_examples([("q?", pool, np.array([3.0, 2.0, 1.0]), np.array([False, False, True]))], depth=1)
    assert ex.query == "QUERY_TIME: 2. q?"
    assert ex.docs == ["MEMORY_TIME: 0. Leo: a", "MEMORY_TIME: 2. Leo: c"]
    assert list(ex.gold) == [False, True]
    [plain] = rerank_examples([("q?", pool, np.array([3.0, 2.0, 1.0]), np.array([False, False, True]))], depth=1,
                              positions=False)
    assert plain.query == "q?" and plain.docs == ["Leo: a", "Leo: c"]
    with pytest.raises(InvalidInputError):
        RerankExample(query="q", docs=["a"], gold=[True, False])


def test_the_compressor_formats_pairs_as_its_models_folder_says(tmp_path):
    import shutil

    from langmem_cog.rank.defaults import default_compressor, load_blend_settings, models_path

    shipped = default_compressor()
    assert shipped.use_positions is load_blend_settings().use_positions
    folder = tmp_path / "models"
    shutil.copytree(models_path(), folder)
    settings = {**dataclasses.asdict(load_blend_settings(folder)), "use_positions": False}
    (folder / "cascade.json").write_text(json.dumps(settings))
    plain = default_compressor(models_dir=folder)
    assert plain.use_positions is False
    docs = [Document(id="a", page_content="Leo: I am allergic to shellfish", metadata={"score": 0.0, "position": 4,
                                                                                      "max_position": 9})]
    assert plain.pairs(docs, "q?") == [("q?", "Leo: I am allergic to shellfish")]
    assert default_compressor(models_dir=folder, use_positions=True).pairs(docs, "q?")[0][0] == "QUERY_TIME: 9. q?"
    assert plain.scale == shipped.scale == load_blend_settings().scale == "center"
    (folder / "cascade.json").write_text(json.dumps({**settings, "scale": "z"}))
    assert default_compressor(models_dir=folder).scale == "z"
    del settings["scale"]  # a folder written before the scale was recorded: z-scores
    (folder / "cascade.json").write_text(json.dumps(settings))
    assert default_compressor(models_dir=folder).scale == "z"


def test_blend_settings_hold_the_shipped_cascade_json_as_it_is(tmp_path):
    """``load_blend_settings`` reads every key of the shipped ``cascade.json``, with the values the dict had."""
    from langmem_cog.rank.defaults import BLEND_KEYS, BlendSettings, load_blend_settings, models_path
    from langmem_cog.rank.manifest import write_manifest

    raw = json.loads((models_path() / "cascade.json").read_text(encoding="utf-8"))
    blend = load_blend_settings()
    assert set(raw) <= set(BLEND_KEYS)
    assert {k: getattr(blend, k) for k in raw} == raw
    assert (blend.cross_encoder_weight, blend.first_stage_weight, blend.max_length) == (0.25, 1.0, 64)
    assert (blend.use_positions, blend.scale) == (False, "center")
    with pytest.raises(dataclasses.FrozenInstanceError):
        blend.scale = "z"  # type: ignore[misc]
    # A folder whose manifest lists no cascade.json: the untrained blend (weights 1, z, 128 tokens).
    write_manifest(tmp_path)
    assert load_blend_settings(tmp_path) == BlendSettings(1.0, 1.0, 128, True, "z", "")


@pytest.mark.parametrize(("text", "needle"), [
    ('{"cross_encoder_weight": -1}', "cross_encoder_weight=-1"),
    ('{"scale": "log"}', "scale='log'"),
    ('{"max_length": 4}', "max_length=4"),
    ('{"cross_encoder_weigth": 0.5}', "unknown keys ['cross_encoder_weigth']"),
    ('[1, 2]', "not a JSON object"),
    ('{"cross', "cannot be read as JSON"),
])
def test_a_bad_cascade_json_is_named_with_what_to_fix(tmp_path, text, needle):
    from langmem_cog.rank.defaults import load_blend_settings
    from langmem_cog.rank.manifest import write_manifest

    (tmp_path / "cascade.json").write_text(text)
    write_manifest(tmp_path)  # the file is as its folder says: only its content is wrong
    with pytest.raises(ConfigError, match="cascade.json") as info:
        load_blend_settings(tmp_path)
    assert needle in str(info.value)


class _FixedCE(BaseCrossEncoder):
    """Scores each memory by the number after its last space."""

    def score(self, text_pairs):
        return [float(m.rsplit(" ", 1)[1]) for _, m in text_pairs]


def test_a_centred_blend_keeps_how_sure_the_cross_encoder_is():
    # The first stage is sure that "a" leads; the cross-encoder barely prefers "b". Z-scores blow the
    # cross-encoder's small margin up to the first stage's size and flip the pair; centred scores keep it small.
    docs = [Document(id="a", page_content="a 0.0", metadata={"score": 2.0}),
            Document(id="b", page_content="b 0.2", metadata={"score": 0.0})]
    blend = {"cross_encoder": _FixedCE(), "cross_encoder_weight": 1.5, "use_positions": False}
    assert [d.id for d in ConvMemoryCompressor(**blend, scale="z").compress_documents(docs, "q")] == ["b", "a"]
    assert [d.id for d in ConvMemoryCompressor(**blend, scale="center").compress_documents(docs, "q")] == ["a", "b"]
    # A sure cross-encoder still reorders on the centred scale.
    sure = [docs[0], Document(id="b", page_content="b 4.0", metadata={"score": 0.0})]
    assert [d.id for d in ConvMemoryCompressor(**blend, scale="center").compress_documents(sure, "q")] == ["b", "a"]


def test_an_unknown_blend_scale_is_refused():
    from pydantic import ValidationError

    from langmem_cog.errors import InvalidInputError
    from langmem_cog.rank.compressor import head_scale

    with pytest.raises(ValidationError):
        ConvMemoryCompressor(cross_encoder=_FixedCE(), scale="minmax")
    with pytest.raises(InvalidInputError, match="center"):
        head_scale([1.0, 2.0], "minmax")


# ---------------------------------------------------------------- cascade + retriever
@pytest.fixture
def memory():
    return CogMemory(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())


def _fill(memory, ns):
    texts = ["I am allergic to shellfish since childhood.", "The weather is lovely today.",
             "We should cook pasta tonight.", "My sister visited Paris last week.", "Do you like jazz?"]
    memory.add_turns(_turns(texts, ["Leo", "Maya", "Leo", "Maya", "Leo"], ["1", "1", "2", "2", "3"], ns=ns))


def test_cascade_stages_and_metadata(memory, ns):
    _fill(memory, ns)
    ce = RecordingCE()
    retriever = CogMemRetriever(memory=memory, namespace=ns, use_graph=True,
                                compressor=ConvMemoryCompressor(cross_encoder=ce), k=3)
    docs = retriever.invoke("What is Leo allergic to?")
    assert docs[0].metadata["turn_id"] == "t0"
    assert [d.metadata["rank"] for d in docs] == [1, 2, 3]
    for d in docs:
        assert d.metadata["stage"] in {"raw", "graph", "raw+graph"}
        assert {"turn_id", "speaker", "timestamp", "score", "relevance_score", "reranked"} <= set(d.metadata)
    assert ce.calls and len(ce.calls[0]) == 5  # the protected head (all 5 turns here)
    assert retriever.invoke("What is Leo allergic to?", k=1)[0].metadata["turn_id"] == "t0"


def test_the_cascade_hands_the_compressor_values_and_ranks_as_through_documents(memory, ns):
    _fill(memory, ns)

    class ThroughDocuments(BaseDocumentCompressor):
        inner: ConvMemoryCompressor

        def compress_documents(self, documents, query, callbacks=None):
            return self.inner.compress_documents(documents, query, callbacks)

    class CountingCompressor(ConvMemoryCompressor):
        calls: list = []

        def rerank(self, candidates, query, max_position=None):
            self.calls.append([c.turn_id for c in candidates])
            return super().rerank(candidates, query, max_position)

    for positions in (False, True):
        by_values = CountingCompressor(cross_encoder=RecordingCE(), use_positions=positions)
        through = ThroughDocuments(inner=ConvMemoryCompressor(cross_encoder=RecordingCE(), use_positions=positions))
        for q in ("What is Leo allergic to?", "Where did Maya's sister go?"):
            a = Cascade(store=memory.store, memory=memory, compressor=by_values).rank(ns, q, k=5).documents
            b = Cascade(store=memory.store, memory=memory, compressor=through).rank(ns, q, k=5).documents
            assert [d.metadata for d in a] == [d.metadata for d in b] and [d.id for d in a] == [d.id for d in b]
            assert sorted(by_values.calls[-1]) == sorted(d.metadata["turn_id"] for d in b)  # handed as values
            assert by_values.cross_encoder.calls == through.inner.cross_encoder.calls


def test_each_stage_can_be_turned_off(memory, ns):
    _fill(memory, ns)
    plain = CogMemRetriever(store=memory.store, namespace=ns, k=2).invoke("allergic shellfish")
    assert plain[0].metadata["stage"] == "raw" and "reranked" not in plain[0].metadata
    fused = CogMemRetriever(memory=memory, namespace=ns, use_graph=False, fusion=FusionScorer.untrained(),
                            compressor=None, k=2).invoke("allergic shellfish")
    assert fused[0].metadata["stage"] == "raw" and fused[0].metadata["reranked"] is False
    with pytest.raises(InvalidInputError, match="use_graph=True needs memory"):
        CogMemRetriever(store=memory.store, namespace=ns, use_graph=True)


def test_a_memory_retriever_runs_the_shipped_cascade_by_default(memory, ns):
    from langmem_cog.rank.defaults import default_scorer

    _fill(memory, ns)
    r = CogMemRetriever(memory=memory, namespace=ns, k=3)
    assert r.mode == "cascade" and r.use_graph is True
    assert isinstance(r.compressor, ConvMemoryCompressor)
    assert r.fusion.weights.tolist() == default_scorer().weights.tolist()
    docs = r.invoke("What is Leo allergic to?")
    assert docs[0].metadata["turn_id"] == "t0" and all(d.metadata["reranked"] for d in docs)
    assert CogMemRetriever.full(memory, ns).mode == "cascade"
    # the documented switches to plain search: per retriever, or for every integration through the config
    assert "reranked" not in CogMemRetriever(memory=memory, namespace=ns, mode="hybrid").invoke("shellfish")[0].metadata
    hybrid_memory = CogMemory(memory.config.model_copy(update={"retriever": RetrieverSettings(mode="hybrid")}), embeddings=FakeEmbeddings())
    assert CogMemRetriever(memory=hybrid_memory, namespace=ns).mode == "hybrid"
    assert CogMemRetriever(store=memory.store, namespace=ns).mode == "hybrid"
    with pytest.raises(InvalidInputError, match="apply to mode='cascade'"):
        CogMemRetriever(memory=memory, namespace=ns, mode="hybrid", fusion=FusionScorer.untrained())


def test_cascade_filters_the_whole_ranking_before_the_rerank(memory, ns):
    from langmem_cog.filters import TurnFilter

    _fill(memory, ns)
    ce = RecordingCE()
    r = CogMemRetriever(memory=memory, namespace=ns, compressor=ConvMemoryCompressor(cross_encoder=ce), k=5)
    docs = r.invoke("What is Leo allergic to?", speaker="maya")
    assert docs and {d.metadata["speaker"] for d in docs} == {"Maya"}
    assert len(ce.calls[-1]) == 2  # only the passing turns reach the cross-encoder
    left = r.invoke("What is Leo allergic to?", where=TurnFilter.build(exclude_ids=["t0"]))
    assert "t0" not in [d.metadata["turn_id"] for d in left] and len(left) == 4
    with pytest.raises(InvalidInputError, match="unknown search arguments"):
        r.invoke("q", spaeker="Leo")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.integers(1, 12), st.integers(0, 12), st.integers(0, 2**32 - 1), st.booleans())
def test_head_order_keeps_hybrids_best_in_the_head(n, depth, protect, seed, filtered):
    protect = min(protect, depth)
    rng = np.random.default_rng(seed)
    fused, hybrid = rng.integers(0, 5, n).astype(float), rng.normal(size=n)  # ties in the fused scores
    allowed = sorted(rng.choice(n, size=n // 2, replace=False).tolist()) if filtered and n else None
    order = head_order(fused, hybrid, depth=depth, protect=protect, allowed=allowed)
    pool = list(range(n)) if allowed is None else allowed
    assert sorted(order.tolist()) == sorted(pool)  # a permutation of the ranked candidates
    plain = [i for i in np.argsort(-fused, kind="stable").tolist() if i in set(pool)]
    by_hybrid = [i for i in np.argsort(-hybrid[plain], kind="stable")]
    best = {plain[j] for j in by_hybrid[:protect]}
    head = order[:depth].tolist()
    assert best <= set(head)  # hybrid's best `protect` are always in the head
    assert head == [i for i in plain if i in set(head)]  # the head keeps the fused order
    rest = order[depth:].tolist()
    assert rest == [i for i in plain if i in set(rest)]  # so does the rest
    # the head is the fused top `depth` but for the protected turns it had to let in
    assert len(set(head) - set(plain[:depth])) == len(best - set(plain[:depth]))
    if protect == 0:
        assert order.tolist() == plain


def test_head_order_refuses_bad_input():
    with pytest.raises(InvalidInputError, match="protect=11"):
        head_order(np.zeros(3), np.zeros(3), depth=10, protect=11)
    with pytest.raises(InvalidInputError, match="one per candidate"):
        head_order(np.zeros(3), np.zeros(2))


def test_cascade_top10_holds_hybrids_best_8(memory, ns):
    """A fusion that ranks plain hybrid's order backwards still hands the compressor hybrid's best 8."""
    texts = [f"note {i}: shellfish allergy " + "shellfish " * (20 - i) for i in range(20)]
    t0 = datetime(2023, 5, 8, tzinfo=UTC)
    memory.add_turns([make_turn(id=f"h{i}", namespace=ns, speaker="Leo", text=x, position=i, session_id=str(i),
                                timestamp=t0 + timedelta(minutes=i))
                      for i, x in enumerate(texts)])
    hybrid = [s.turn.id for s in memory.store.search(ns, "shellfish allergy", k=20)]
    backwards = FusionScorer(weights=-FusionScorer.untrained().weights)
    for protect, expect in ((8, 8), (0, 0)):
        cascade = Cascade(store=memory.store, memory=memory, scorer=backwards, use_graph=False,
                          settings=CascadeSettings(raw_protect=protect))
        top = [d.metadata["turn_id"] for d in cascade.rank(ns, "shellfish allergy", k=10).documents]
        assert len(set(top) & set(hybrid[:8])) == expect, protect


def test_the_retriever_takes_the_cascade_sizes_from_the_config(ns):
    """``CogMemConfig.cascade`` reaches the cascade a retriever builds: ``raw_protect=0`` lets a backwards
    fusion push hybrid's best 8 out of the top 10; the default keeps them (as the Cascade test above)."""
    texts = [f"note {i}: shellfish allergy " + "shellfish " * (20 - i) for i in range(20)]
    t0 = datetime(2023, 5, 8, tzinfo=UTC)
    turns = [make_turn(id=f"h{i}", namespace=ns, speaker="Leo", text=x, position=i, session_id=str(i),
                       timestamp=t0 + timedelta(minutes=i)) for i, x in enumerate(texts)]
    backwards = FusionScorer(weights=-FusionScorer.untrained().weights)
    for sizes, expect in ((CascadeSettings(raw_protect=0), 0), (None, 8)):
        overrides = {} if sizes is None else {"cascade": sizes}
        mem = CogMemory(CogMemConfig.preset("ephemeral", **overrides), embeddings=FakeEmbeddings())
        mem.add_turns(turns)
        hybrid = [s.turn.id for s in mem.store.search(ns, "shellfish allergy", k=20)]
        retriever = CogMemRetriever(memory=mem, namespace=ns, fusion=backwards, compressor=None, use_graph=False)
        top = [d.metadata["turn_id"] for d in retriever.invoke("shellfish allergy", k=10)]
        assert retriever._cascade.settings == mem.config.cascade == (sizes or CascadeSettings())
        assert len(set(top) & set(hybrid[:8])) == expect, sizes
    plain = Cascade(store=mem.store, use_graph=False)  # built without settings: the store's
    assert plain.settings is mem.config.cascade and plain.sizes == CascadeSettings()


def test_cascade_refuses_bad_k(memory, ns):
    _fill(memory, ns)
    with pytest.raises(InvalidInputError, match="k=0"):
        Cascade(store=memory.store, memory=memory).rank(ns, "q", k=0)
    for bad in ({"rerank_depth": 0}, {"pool_cut": -1}, {"raw_protect": -1}, {"feature_pool_max": 2.5}):
        with pytest.raises(InvalidInputError, match=f"{next(iter(bad))}="):
            CascadeSettings(**bad)


def test_a_pool_over_the_feature_limit_is_cut_to_the_best_hybrid_candidates(memory, ns):
    """``feature_pool_max`` / ``pool_cut`` are the cascade's own sizes (not the store's HNSW ``candidates``)."""
    texts = [f"note {i}: shellfish allergy " + "shellfish " * (i % 7) for i in range(30)]
    t0 = datetime(2023, 5, 8, tzinfo=UTC)
    memory.add_turns([make_turn(id=f"c{i}", namespace=ns, speaker="Leo", text=x, position=i, session_id="1",
                                timestamp=t0 + timedelta(minutes=i)) for i, x in enumerate(texts)])
    hybrid = [s.turn.id for s in memory.store.search(ns, "shellfish allergy", k=30)]
    whole, _ = Cascade(store=memory.store, use_graph=False).candidates(ns, "shellfish allergy")
    cut, _ = Cascade(store=memory.store, use_graph=False,
                     settings=CascadeSettings(feature_pool_max=20, pool_cut=5)).candidates(ns, "shellfish allergy")
    assert len(whole.ids) == 30 and set(cut.ids) == set(hybrid[:5])


# ---------------------------------------------------------------- shipped models
def test_shipped_models_load_offline_and_score():
    from langmem_cog.rank.defaults import default_compressor, default_scorer, models_path

    meta = json.loads((models_path() / "reranker" / "training.json").read_text())
    assert set(meta["data"]) == {"locomo", "longmemeval"} and all(d["sha256"] for d in meta["data"].values())
    assert meta["command"].startswith("langmem-cog train-models") and meta["git_commit"]
    assert meta["recipe"]["train"]["num_layers"] == 4 and meta["recipe"]["train"]["pooling"] == "mean"
    assert not any(isinstance(v, str) and v.startswith("/") for v in meta.values()), "no machine paths"
    size = sum(p.stat().st_size for p in (models_path() / "reranker").iterdir())
    assert size < 50 * 2**20
    from langmem_cog.bench.recipe import TRANSFER_FEATURES

    weights = dict(zip(FEATURE_NAMES, default_scorer().weights, strict=True))
    assert all(w == 0.0 for f, w in weights.items() if f not in TRANSFER_FEATURES)  # the recipe's features only
    assert weights["graph_event"] > 0 and weights["graph_rr"] > 0  # the fitted fusion weighs the graph
    assert meta["recipe"]["drop_features"] == ["nontransfer"] and meta["recipe"]["fit_fusion"] is True
    compressor = default_compressor()
    docs = [Document(id="a", page_content="Maya: the weather is nice", metadata={"score": 0.0, "position": 1}),
            Document(id="b", page_content="Leo: I am allergic to shellfish", metadata={"score": 0.0, "position": 2})]
    out = compressor.compress_documents(docs, "What is Leo allergic to?")
    assert {d.id for d in out} == {"a", "b"} and all(np.isfinite(d.metadata["relevance_score"]) for d in out)


def test_full_retriever_uses_every_shipped_stage(memory, ns):
    _fill(memory, ns)
    retriever = CogMemRetriever.full(memory, ns, k=3)
    docs = retriever.invoke("What is Leo allergic to?")
    assert len(docs) == 3 and all(d.metadata["reranked"] for d in docs)
    assert any(d.metadata["stage"] in {"graph", "raw+graph"} for d in docs)
    assert docs[0].metadata["turn_id"] == "t0"


def test_full_retriever_reranks_on_the_configured_threads(ns):
    import torch

    memory = CogMemory(CogMemConfig.preset("ephemeral", rerank_threads=2), embeddings=FakeEmbeddings())
    _fill(memory, ns)
    retriever = CogMemRetriever.full(memory, ns, k=3)
    assert retriever.compressor.cross_encoder.threads == 2
    before = torch.get_num_threads()
    assert retriever.invoke("What is Leo allergic to?")[0].metadata["turn_id"] == "t0"
    assert torch.get_num_threads() == before  # the rerank's setting does not leak into the process
    with pytest.raises(ConfigError, match="rerank_threads"):
        CogMemConfig.preset("ephemeral", rerank_threads=0)


def test_residual_training_takes_the_loss_on_logit_plus_the_first_stage_prior(tmp_path):
    from langmem_cog.embeddings import resolve_model_path
    from langmem_cog.rank.training import RerankExample, TrainConfig, train_cross_encoder

    docs = ["MEMORY_TIME: 1. Leo: I work at the bakery.", "MEMORY_TIME: 2. Maya: Nice weather."]
    cfg = TrainConfig(epochs=1, max_length=32, num_layers=1, freeze_layers=1, threads=1, prior_weight=1.0)

    def loss(prior):
        ex = RerankExample(query="QUERY_TIME: 2. Where does Leo work?", docs=docs, gold=[True, False], prior=prior)
        report = train_cross_encoder([ex], resolve_model_path("minilm"), tmp_path / str(prior[0]), cfg)
        assert "first-stage score" in json.loads((tmp_path / str(prior[0]) / "training.json").read_text())["objective"]
        return report["final_epoch_loss"]

    # A prior that already ranks the gold far ahead leaves (almost) nothing to learn; one that buries it, a lot.
    assert loss([30.0, 0.0]) < 1e-6 < 10.0 < loss([0.0, 30.0])
    with pytest.raises(InvalidInputError, match="prior"):
        RerankExample(query="q", docs=docs, gold=[True, False], prior=[1.0])
    with pytest.raises(InvalidInputError, match="finite"):
        RerankExample(query="q", docs=docs, gold=[True, False], prior=[1.0, float("nan")])


def test_mean_pooling_is_saved_with_the_checkpoint_and_used_when_scoring(tmp_path):
    import torch

    from langmem_cog.embeddings import resolve_model_path
    from langmem_cog.rank.cross_encoder import LocalCrossEncoder, load_backbone
    from langmem_cog.rank.training import TrainConfig, train_cross_encoder

    docs = ["MEMORY_TIME: 1. Leo: I work at the bakery.", "MEMORY_TIME: 2. Maya: Nice weather."]
    ex = RerankExample(query="QUERY_TIME: 2. Where does Leo work?", docs=docs, gold=[True, False])
    cfg = TrainConfig(epochs=4, lr=1e-3, warmup=0.0, max_length=32, num_layers=1, threads=1, pooling="mean")
    train_cross_encoder([ex] * 4, resolve_model_path("minilm"), tmp_path / "mean", cfg)
    ce = LocalCrossEncoder(tmp_path / "mean", max_length=32)
    assert ce.model.config.lmc_pooling == "mean"
    report = json.loads((tmp_path / "mean" / "training.json").read_text())
    assert report["uniform_loss"] == pytest.approx(np.log(2))  # equal logits over one gold in two
    assert report["final_epoch_loss"] < report["uniform_loss"]
    pairs = [(ex.query, d) for d in docs]
    gold, other = ce.score(pairs)
    assert gold > other  # it learned the list
    # The head reads the mean of the pair's token states (not the first token's pooler).
    from transformers import AutoTokenizer

    enc = AutoTokenizer.from_pretrained(str(tmp_path / "mean"))([ex.query], [docs[0]], return_tensors="pt")
    with torch.inference_mode():
        mean = ce.model.bert(**enc).last_hidden_state.mean(1)
        assert abs(float(ce.model.classifier(mean)) - gold) < 1e-3
    with pytest.raises(InvalidInputError, match="pooling"):
        load_backbone(resolve_model_path("minilm"), pooling="max")


@pytest.mark.parametrize("field, value", [
    ("epochs", -1), ("epochs", 1.5), ("lr", 0), ("lr", -1e-4), ("lr", float("nan")), ("lr", "fast"),
    ("weight_decay", -0.1), ("warmup", 1.5), ("max_length", 0), ("queries_per_step", 0), ("seed", "a"),
    ("threads", 0), ("freeze_layers", -1), ("freeze_layers", True), ("max_queries", 0), ("num_layers", 0),
    ("prior_weight", float("inf")), ("pooling", "max"),
])
def test_train_config_refuses_a_field_out_of_range_and_names_it(field: str, value: object) -> None:
    from langmem_cog.rank.training import TrainConfig

    with pytest.raises(InvalidInputError, match=f"{field}="):
        TrainConfig(**{field: value})


def test_train_config_takes_its_edges() -> None:
    from langmem_cog.rank.training import TrainConfig

    cfg = TrainConfig(epochs=0, warmup=0.0, weight_decay=0.0, freeze_layers=0, threads=None, max_queries=None,
                      num_layers=None, pooling=None, prior_weight=0.0, seed=-3)
    assert cfg.epochs == 0 and cfg.warmup == 0.0  # epochs 0: the backbone as it is (the full system's --epochs 0)
    assert TrainConfig(warmup=1.0, pooling="cls").warmup == 1.0


def test_name_speakers_tells_an_assistant_chat_between_two_named_people():
    import random

    from langmem_cog.rank.data import name_speakers

    ex = RerankExample(query="Did I tell you my dog's name? I've forgotten what you said.",
                       docs=["user: My dog is Rex.", "assistant: Rex is a fine name.", "user: I walk him daily."],
                       gold=[True, False, False], prior=[1.0, 0.5, 0.2])
    out = name_speakers(ex, random.Random(3), names=("Maya", "Leo"))
    a = out.docs[0].split(": ")[0]
    b = out.docs[1].split(": ")[0]
    assert {a, b} == {"Maya", "Leo"} and out.docs[2].startswith(f"{a}: ")
    # The memories keep their own text; the question's first person is the user's name, its second the assistant's.
    assert [d.split(": ", 1)[1] for d in out.docs] == [d.split(": ", 1)[1] for d in ex.docs]
    assert out.query == f"Did {a} tell {b} {a}'s dog's name? {a} has forgotten what {b} said."
    assert list(out.gold) == list(ex.gold) and list(out.prior) == list(ex.prior)
    # A chat between named people is left as it is.
    named = RerankExample(query="What did Maya say?", docs=["Maya: Hi.", "user: hello"], gold=[True, False])
    assert name_speakers(named, random.Random(0)) is named


def test_same_role_keeps_an_assistant_chats_candidates_of_the_golds_role():
    from langmem_cog.rank.data import is_role_list, same_role

    docs = ["assistant: A.", "user: U1.", "assistant: B.", "user: U2.", "user: U3.", "assistant: C.", "user: U4."]
    gold = [False, False, False, True, False, False, True]
    ex = RerankExample(query="What did I say?", docs=docs, gold=gold, prior=[7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0])
    out = same_role(ex, depth=2)
    # The first two user turns in the list's order, then the gold beyond them; priors follow their turns.
    assert out.docs == ["user: U1.", "user: U2.", "user: U4."] and out.gold == [False, True, True]
    assert out.prior == [6.0, 4.0, 1.0] and out.query == ex.query
    assert all(d.startswith("user: ") for d in same_role(ex, depth=10).docs)
    # An assistant's gold keeps the assistant's turns; golds of both roles keep both.
    to_assistant = RerankExample(query="What did you suggest?", docs=docs, gold=[False, False, True] + [False] * 4)
    assert same_role(to_assistant, depth=10).docs == ["assistant: A.", "assistant: B.", "assistant: C."]
    both = RerankExample(query="q", docs=docs, gold=[True, False, False, True, False, False, False])
    assert same_role(both, depth=10).docs == docs
    # Chats between named people, lists without gold and mixed lists are returned as they are.
    named = RerankExample(query="What did Maya say?", docs=["Maya: Hi.", "Leo: Hello."], gold=[True, False])
    no_gold = RerankExample(query="q", docs=docs, gold=[False] * 7)
    mixed = RerankExample(query="q", docs=["Maya: Hi.", "user: hello"], gold=[True, False])
    assert same_role(named, 1) is named and same_role(no_gold, 1) is no_gold and same_role(mixed, 1) is mixed
    assert is_role_list(ex) and not is_role_list(mixed) and not is_role_list(named)


def test_the_cascade_computes_features_with_the_bm25_weight_its_scorer_was_fitted_with(ns):
    """A scorer records the BM25 weight of its training features; the store's own weight does not leak in."""
    memory = CogMemory(CogMemConfig.preset("ephemeral", search=SearchSettings(lexical_weight=3.0)), embeddings=FakeEmbeddings())
    _fill(memory, ns)
    w = np.zeros(len(FEATURE_NAMES))
    w[FEATURE_NAMES.index("window2")] = 1.0  # the neighbour window is built on the hybrid score
    fitted = FusionScorer.from_dict({**FusionScorer(weights=w).to_dict(), "lexical_weight": 0.5})
    assert fitted.lexical_weight == 0.5 and FusionScorer.from_dict({"features": ["dense_z"], "weights": [1.0]}
                                                                   ).lexical_weight == 1.0  # older files: 1.0
    cascade = Cascade(store=memory.store, memory=memory, scorer=fitted, use_graph=False)
    pool, signals = cascade.candidates(ns, "What is Leo allergic to?")
    fused = cascade.fuse(pool, "What is Leo allergic to?", signals)
    want = candidate_features(pool, "What is Leo allergic to?", signals, lexical_weight=0.5) @ w
    store_weight = candidate_features(pool, "What is Leo allergic to?", signals, lexical_weight=3.0) @ w
    assert np.allclose(fused, want) and not np.allclose(fused, store_weight)
    lists = [np.eye(4, len(FEATURE_NAMES))] * 3
    assert FusionScorer.fit(lists, [np.eye(4, dtype=bool)[0]] * 3, lexical_weight=0.5).lexical_weight == 0.5
