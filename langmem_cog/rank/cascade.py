"""The retrieval cascade: raw + graph candidates -> fusion -> protected cross-encoder rerank.

:class:`Cascade` is what :class:`~langmem_cog.retriever.CogMemRetriever` runs when any stage beyond
plain hybrid search is on:

1. **Candidates**: every turn of the namespace scored by the raw store (dense cosine and BM25),
   and, when a :class:`~langmem_cog.memory.CogMemory` is given and the graph stage is on, the turns
   the operator loop grounds from memory records (Facts, Claims, Events, ...). Raw evidence is never
   dropped for memory records: a grounded turn only gains features. A turn is embedded as
   "Speaker: text", so for a question that names a speaker the dense score is blended with the
   cosine to the question without the names (:data:`NAME_FREE_WEIGHT`): the question is then
   scored by what it asks, and whom it asks about is left to the ``speaker_match`` feature.
2. **Fusion**: :class:`~langmem_cog.rank.scorer.FusionScorer` over
   :func:`~langmem_cog.rank.features.candidate_features` (learned, or the untrained fallback).
3. **Compressor**: any ``BaseDocumentCompressor``; normally
   :class:`~langmem_cog.rank.compressor.ConvMemoryCompressor`, which reorders only the top 10. The
   cascade hands it each candidate's fused score and position as values
   (:meth:`~langmem_cog.rank.compressor.ConvMemoryCompressor.rerank`) and applies the order of indices
   it returns; any other compressor gets the documents (``compress_documents``).

Each result's ``metadata["stage"]`` says where it came from: ``raw`` (raw retrieval only),
``graph`` (grounded by the operator loop, outside the raw top candidates) or ``raw+graph``.
``reranked`` says whether the compressor reordered it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from langchain_core.documents import BaseDocumentCompressor, Document

from langmem_cog.checks import positive_int
from langmem_cog.documents import turn_document
from langmem_cog.filters import TurnFilter
from langmem_cog.fusion import zscore_fuse
from langmem_cog.graph.provenance import (
    TurnClaim,
    TurnRecords,
    current_state_first,
    prefer_current,
    prefer_earlier,
    prefer_records,
    state_facts,
    state_value_first,
    subject_name,
)
from langmem_cog.graph.reconcile import FUNCTIONAL_PREDICATES
from langmem_cog.graph.schema import ClaimStatus
from langmem_cog.lexical import tokenize
from langmem_cog.rank.compressor import Candidate, ConvMemoryCompressor
from langmem_cog.rank.features import CandidatePool, GraphSignals, candidate_features, first_name, name_tokens
from langmem_cog.rank.head import head_order
from langmem_cog.rank.questions import (
    asked_state,
    asks_before_change,
    asks_current_value,
    asks_judgement,
    asks_present_state,
    asks_state_now,
    asks_taste,
    by_tense,
    holder_first,
    hybrid_stance_first,
    named_others,
    names_third_person,
    stance_holder,
    state_subject,
    state_tense,
    states_stance,
    window_first,
    without_names,
)
from langmem_cog.rank.scorer import FusionScorer
from langmem_cog.rank.settings import FEATURE_POOL_MAX, CascadeSettings
from langmem_cog.rank.slots import STATE_STATEMENTS, StateStatements, state_lift
from langmem_cog.rank.stance import StanceModel, shipped_stance_model
from langmem_cog.rank.updates import ECHO_ANCHORS, Echo, echo_first, find_echoes, find_reactions, reaction_first
from langmem_cog.storage.identity import embedder_identity

if TYPE_CHECKING:
    from langmem_cog.memory import CogMemory
    from langmem_cog.records import Turn
    from langmem_cog.store import TurnStore

__all__ = ["NAME_FREE_WEIGHT", "Cascade", "CascadeResult", "CascadeSettings", "FEATURE_POOL_MAX", "annotate_records",
           "asked_tense", "named_claims", "pool_documents"]

logger = logging.getLogger(__name__)

#: For a question that names a speaker, how much of each candidate's dense score is its cosine to the
#: question without the names (:meth:`Cascade.candidates`; 0: the question as asked only).
NAME_FREE_WEIGHT = 0.5

@dataclass
class CascadeResult:
    """A ranking with per-stage timings (milliseconds)."""

    documents: list[Document]
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class Cascade:
    """Raw + graph candidates, learned fusion, protected rerank.

    Attributes:
        store: The raw-turn store.
        memory: The memory whose graph the operator loop searches (``None``: no graph stage).
        scorer: The fusion scorer (``None``: :meth:`FusionScorer.untrained`).
        compressor: The last step (``None``: the fused ranking is returned as is).
        use_graph: Run the operator loop (needs ``memory``).
        settings: Its sizes (:class:`~langmem_cog.rank.settings.CascadeSettings`: rerank depth, raw
            protection, pool cut); ``None``: the store's ``CogMemConfig.cascade``, which is what a
            :class:`~langmem_cog.retriever.CogMemRetriever` passes.
        stance: The learned stance reader of the turns a question's holder said after another's matter
            (:class:`~langmem_cog.rank.stance.StanceModel`, beside the stance lexicon); ``None``: the
            shipped one where it fits the store's embedder, else the lexicon alone.

    Example:
        >>> import uuid
        >>> from datetime import datetime, timezone
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langmem_cog import CogMemConfig, make_turn
        >>> from langmem_cog.memory import CogMemory
        >>> mem = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=DeterministicFakeEmbedding(size=32))
        >>> ns = "doc-cascade-" + uuid.uuid4().hex[:8]
        >>> texts = ["I am allergic to shellfish.", "Nice weather today.", "Shall we cook tonight?"]
        >>> _ = mem.add_turns([make_turn(id=f"t{i}", namespace=ns, speaker="Leo", text=x, position=i, session_id=str(i),
        ...                              timestamp=datetime(2023, 5, 8, 12, i, tzinfo=timezone.utc))
        ...                    for i, x in enumerate(texts)])
        >>> docs = Cascade(store=mem.store, memory=mem).rank(ns, "What is Leo allergic to?", k=3).documents
        >>> {d.metadata["turn_id"]: d.metadata["stage"] for d in docs}["t0"]  # found by both stages
        'raw+graph'
        >>> [d.metadata["rank"] for d in docs]
        [1, 2, 3]
    """

    store: TurnStore
    memory: CogMemory | None = None
    scorer: FusionScorer | None = None
    compressor: BaseDocumentCompressor | None = None
    use_graph: bool = True
    settings: CascadeSettings | None = None
    stance: StanceModel | None = None
    _retrieval: Any = field(default=None, init=False, repr=False)
    _warned_context: bool = field(default=False, init=False, repr=False)
    _stance_checked: bool = field(default=False, init=False, repr=False)
    _statements: StateStatements | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.settings is None:
            self.settings = self.store.config.cascade

    @property
    def sizes(self) -> CascadeSettings:
        """The sizes in force: ``settings``, or the store's ``CogMemConfig.cascade`` where it is ``None``."""
        return self.settings if self.settings is not None else self.store.config.cascade

    def signals(self, namespace: str, query: str, now: datetime | str | None) -> GraphSignals | None:
        """The operator loop's signals for a query, or ``None`` when the graph stage is off."""
        if not (self.use_graph and self.memory is not None):
            return None
        if self._retrieval is None:
            self._retrieval = self.memory.retrieval
        result = self._retrieval.result(namespace, query, now=now)
        return GraphSignals.from_result(result, self.memory.turn_records(namespace))

    def candidates(self, namespace: str, query: str, *, now: datetime | str | None = None,
                   query_vector: np.ndarray | None = None, context: bool | None = None,
                   where: TurnFilter | None = None) -> tuple[CandidatePool, GraphSignals | None]:
        """The candidate pool (every turn with its raw scores) and the operator loop's signals.

        Args:
            namespace: The namespace searched.
            query: The question.
            now: When the question is asked (``None``: now).
            query_vector: The query's vector, if the caller has it.
            context: Score the context vectors and texts too; ``None``: when the scorer uses them.
            where: See :meth:`first_stage`.

        A pool larger than ``settings.feature_pool_max`` is cut to its best ``settings.pool_cut`` hybrid
        candidates and the grounded turns; with an active ``where``, the best hybrid candidates that pass
        it are kept too.
        """
        pool, signals, _ = self._candidates(namespace, query, now=now, query_vector=query_vector, context=context,
                                            where=where)
        return pool, signals

    def _candidates(self, namespace: str, query: str, *, now: datetime | str | None, query_vector: np.ndarray | None,
                    context: bool | None, where: TurnFilter | None,
                    ) -> tuple[CandidatePool, GraphSignals | None, np.ndarray | None]:
        """:meth:`candidates`, with the pool's fused score (:meth:`fuse`) where it was computed on the way
        (the anchors of a judgement question's reactions), else ``None``."""
        scorer = self.scorer or FusionScorer.untrained()
        # Context vectors cost an embedding per turn on a namespace's first query: only for a scorer that uses them.
        wants_context = scorer.uses_context if context is None else context
        ps = self.store.pool_scores(namespace, query, query_vector=query_vector, context=wants_context)
        if wants_context and ps.context is None and not self._warned_context:
            self._warned_context = True
            logger.warning("the fusion scorer weighs context features but the store's context_vectors is off: "
                           "they score 0; set CogMemConfig(context_vectors=True) or refit the scorer without them")
        signals = self.signals(namespace, query, now)
        ids = ps.ids
        dense, lexical, context_s, context_lexical = ps.dense, ps.lexical, ps.context, ps.context_lexical
        cut = self.sizes.pool_cut
        if len(ids) > self.sizes.feature_pool_max:
            hybrid = zscore_fuse([dense, lexical], [1.0, self.store.config.search.lexical_weight])
            keep = set(np.argsort(-hybrid, kind="stable")[:cut].tolist())
            if signals is not None:
                at = {d: i for i, d in enumerate(ids)}
                keep |= {at[t] for t in signals.grounded if t in at}
            if where is not None and where.active:
                passing = [i for i, t in enumerate(self.store.get_turns(namespace, ids)) if where.allows(t)]
                best = np.argsort(-hybrid[passing], kind="stable")[:cut]
                keep |= {passing[int(j)] for j in best}
            sel = sorted(keep)
            ids = [ids[i] for i in sel]
            dense, lexical = dense[sel], lexical[sel]
            context_s = None if context_s is None else context_s[sel]
            context_lexical = None if context_lexical is None else context_lexical[sel]
        turns = self.store.get_turns(namespace, ids)
        speakers = {t.speaker for t in turns}
        dense = self._name_free_dense(namespace, query, turns, speakers, dense)
        pool = CandidatePool(turns=turns, dense=dense, lexical=lexical, context=context_s,
                             context_lexical=context_lexical)
        holder = stance_holder(query, speakers)
        pool.state_match = self._state_match(namespace, pool, query, speakers, holder, signals)
        state_now, judgement = asks_state_now(query), asks_judgement(query)
        # a judgement, or a taste for another speaker's matter ("Is Grace a fan of Diego's sourdough?")
        named = named_others(query, speakers, holder) if holder is not None else []
        of_another = holder is not None and (judgement or (bool(named) and asks_taste(query)))
        if not (state_now or of_another):
            return pool, signals, None
        if state_now:  # a state now: the same person's later word on the matter (for a stance question, the
            # holder's stance: read only then)
            pool.echoes = self._later_words(namespace, pool, pool.hybrid(self.store.config.search.lexical_weight),
                                            read_stance=holder is not None)
        if holder is not None and of_another:
            # what a person thinks of (or, for a word of taste, whether they like) a matter another told
            # the others the question names, else, for a third person's matter ("Does Mei expect Niamh's
            # engagement to work out?"), every other speaker (one of them told of it); anchored on the
            # others' turns the fusion ranks best
            others = set(named)
            if not others and names_third_person(query, speakers):
                others = {first_name(s) for s in speakers} - {holder}
            if others:
                fused = self.fuse(pool, query, signals)
                pool.reactions = self._later_words(namespace, pool, fused, holder, others)
                return pool, signals, fused
        return pool, signals, None

    def _name_free_dense(self, namespace: str, query: str, turns: Sequence[Turn], speakers: set[str],
                         dense: np.ndarray) -> np.ndarray:
        """For a question that names one of ``speakers`` (those of ``turns``): each turn's cosine to the question blended with
        its cosine to the question without the names (:func:`~langmem_cog.rank.questions.without_names`),
        :data:`NAME_FREE_WEIGHT` of the latter; else ``dense`` as it is. A turn is stored with its speaker's
        name before its text, so a question that names someone is otherwise nearest to that person's
        shortest turns ("Leo: Now I need to know." for "What does Leo do for a living?"), and the turn
        that answers it ("the glamorous life of a high school chemistry teacher") far below them."""
        if not NAME_FREE_WEIGHT:
            return dense
        free = without_names(query, speakers)
        if free == query:
            return dense
        cosine = self.store.dense_scores(namespace, [t.id for t in turns], self.store.embed_query(free))
        named = np.asarray(dense, dtype=np.float64)
        other = np.array([cosine.get(t.id, float(d)) for t, d in zip(turns, named, strict=True)])
        return (1.0 - NAME_FREE_WEIGHT) * named + NAME_FREE_WEIGHT * other

    def _state_match(self, namespace: str, pool: CandidatePool, query: str, speakers: set[str], holder: str | None,
                     signals: GraphSignals | None) -> np.ndarray | None:
        """For a question about one state (:func:`asked_state`) of one speaker (:func:`state_subject`) at a
        time (a word of now or before, :func:`state_tense`, the simple present, :func:`asks_current_value`:
        "Where does Priya live?", or a time window the operator loop routed: "Where did Marcus work in summer
        2022?"), not about where someone stands (``holder``, the question's
        :func:`stance_holder`, is ``None``):
        the likeness of that speaker's turns to plain statements of the state
        (:meth:`~langmem_cog.rank.slots.StateStatements.match`, on their stored vectors), else ``None``."""
        windowed = signals is not None and signals.window is not None
        if not windowed and asked_tense(query, holder, windowed=False) is None:
            return None
        state = asked_state(query)
        if state is None or state[0] not in STATE_STATEMENTS or holder is not None:
            return None  # no one state asked, or where someone stands on it ("How does Jo feel about college?")
        subject = state_subject(query, speakers)
        if subject is None:
            return None
        mine = np.array([first_name(t.speaker) == subject for t in pool.turns], dtype=bool)
        if not mine.any():
            return None
        vectors = self.store.stored_vectors(namespace, [t.id for t in pool.turns])
        if len(vectors) != len(pool.turns):  # a turn without a stored vector: nothing to compare
            return None
        if self._statements is None:
            self._statements = StateStatements.embed(self.store.embeddings)
        return self._statements.match(state[0], np.stack([vectors[t.id] for t in pool.turns]), mine)

    def _stance_reader(self) -> StanceModel | None:
        """``stance``, or the shipped stance model where it fits the store's embedder (else ``None``: the
        lexicon alone)."""
        if self.stance is None and not self._stance_checked:
            model = shipped_stance_model()
            self._stance_checked = True
            self.stance = model if model.fits(embedder_identity(self.store.embeddings)) else None
        return self.stance

    def _later_words(self, namespace: str, pool: CandidatePool, score: np.ndarray, holder: str | None = None,
                     others: set[str] | None = None, *, read_stance: bool = True) -> tuple[Echo, ...]:
        """Without a ``holder``: the echoes (:func:`~langmem_cog.rank.updates.find_echoes`) of the pool's
        best :data:`~langmem_cog.rank.updates.ECHO_ANCHORS` candidates by ``score`` (aligned with the pool);
        with one: the holder's reactions (:func:`~langmem_cog.rank.updates.find_reactions`) to the best as
        many that the ``others`` (first names) said. Both among the pool's turns; with ``read_stance``, each
        marked ``stance`` where the stance model (:meth:`_stance_reader`) reads its stored vector as a stance."""
        order = np.argsort(-np.asarray(score), kind="stable")
        anchors = [pool.turns[int(i)] for i in order
                   if holder is None or first_name(pool.turns[int(i)].speaker) in (others or ())][:ECHO_ANCHORS]
        vectors = self.store.stored_vectors(namespace, [a.id for a in anchors])
        at = {t.id: i for i, t in enumerate(pool.turns)}
        out: list[Echo] = []
        for anchor in anchors:
            if anchor.id not in vectors:
                continue
            ps = self.store.pool_scores(namespace, anchor.text, query_vector=vectors[anchor.id])
            likeness = zscore_fuse([ps.dense, ps.lexical], [1.0, 1.0])
            mine = [(at[t], float(z)) for t, z in zip(ps.ids, likeness, strict=True) if t in at]
            turns, z = [pool.turns[i] for i, _ in mine], np.array([z for _, z in mine])
            out.extend(find_echoes(anchor, turns, z) if holder is None else find_reactions(anchor, turns, z, holder))
        model = self._stance_reader() if read_stance else None
        if model is not None and out:
            said = self.store.stored_vectors(namespace, {e.turn for e in out})
            ids = list(said)
            reads = dict(zip(ids, model.reads(np.stack([said[t] for t in ids])).tolist(), strict=True)) if ids else {}
            out = [dataclasses.replace(e, stance=bool(reads.get(e.turn, False))) for e in out]
        return tuple(out)

    def first_stage(self, namespace: str, query: str, *, now: datetime | str | None = None,
                    query_vector: np.ndarray | None = None,
                    where: TurnFilter | None = None) -> tuple[CandidatePool, GraphSignals | None, np.ndarray]:
        """The candidate pool (:meth:`candidates`), the graph signals and the fused score of every candidate."""
        pool, signals, fused = self._candidates(namespace, query, now=now, query_vector=query_vector, context=None,
                                                where=where)
        return pool, signals, self.fuse(pool, query, signals) if fused is None else fused

    def fuse(self, pool: CandidatePool, query: str, signals: GraphSignals | None) -> np.ndarray:
        """The fused score of every candidate of a pool (the scorer over its features, computed with the
        BM25 weight the scorer was fitted with)."""
        scorer = self.scorer or FusionScorer.untrained()
        X = candidate_features(pool, query, signals, lexical_weight=scorer.lexical_weight,
                               only=scorer.active_features)  # a zero-weight column is never computed
        score = scorer.score(X)
        if pool.state_match is None:
            return score
        return score + state_lift(score, pool.state_match)

    def rank(self, namespace: str, query: str, k: int = 10, *, now: datetime | str | None = None,
             where: TurnFilter | None = None) -> CascadeResult:
        """The best ``k`` turns as ``Document`` objects, through every stage that is on.

        Args:
            namespace: The namespace searched.
            query: The question.
            k: How many documents to return.
            now: When the question is asked (relative dates resolve against it); ``None``: now.
            where: Only turns that pass this filter are returned; every turn is scored first (the
                features see the whole pool), then the fused ranking is filtered before the rerank.

        Raises:
            InvalidInputError: If ``k`` is not a positive integer.
        """
        k = positive_int(k, "k")
        t0 = time.perf_counter()
        pool, signals, fused = self.first_stage(namespace, query, now=now, where=where)
        t1 = time.perf_counter()
        docs = self.rank_pool(pool, signals, fused, query, k, where=where)
        timings = {"first_stage_ms": (t1 - t0) * 1000}
        if self.compressor is not None and docs:
            timings["rerank_ms"] = (time.perf_counter() - t1) * 1000
        return CascadeResult(documents=docs, timings=timings)

    def rank_pool(self, pool: CandidatePool, signals: GraphSignals | None, fused: np.ndarray, query: str, k: int,
                  *, where: TurnFilter | None = None) -> list[Document]:
        """The last steps of :meth:`rank` on a pool already scored: filter, cut, compress, number.

        Benchmarks that keep pools call this with the pools :meth:`candidates` built, so they rank
        exactly as the live retriever does.
        """
        allowed = None
        if where is not None and where.active:
            allowed = [i for i, t in enumerate(pool.turns) if where.allows(t)]
        hybrid = pool.hybrid(self.store.config.search.lexical_weight)
        head_size = self.sizes.rerank_depth
        order = head_order(fused, hybrid, depth=head_size, protect=min(self.sizes.raw_protect, head_size),
                           allowed=allowed)
        depth = max(k, head_size) if self.compressor is not None else k
        docs = self._documents(pool, signals, fused, order[:depth], hybrid)
        if self.compressor is not None and docs:
            docs = self._compress(self.compressor, docs, pool, fused, order[:depth], query)
        at = {d.metadata["turn_id"]: d for d in docs[:head_size]}
        ranked = list(at)
        speakers = {str(d.metadata.get("speaker") or "") for d in at.values()}
        holder = stance_holder(query, speakers)
        if holder is not None:  # where a named person stands: their own turns first
            claims = {t for t in at if signals is not None and t in signals.records and signals.records[t].claims}
            stances = claims | {t for t, d in at.items() if states_stance(d.page_content)}
            # a judgement of another's matter: the holder's stance before the holder's plain turn, and the
            # other's turn leads unmoved only when it states an opinion in the first person (news told
            # with an evaluative word often yields a Claim: "My first real outdoor route!")
            of_another = asks_judgement(query) and bool(named_others(query, speakers, holder))
            opinions = (set() if of_another else claims) | {t for t, d in at.items()
                                                            if states_stance(d.page_content, evaluative=False)}
            ranked = holder_first(ranked, {t for t, d in at.items()
                                           if first_name(str(d.metadata.get("speaker") or "")) == holder},
                                  stances, opinions, judgement=of_another)
        if signals is not None and signals.window is not None:  # a time window: a turn said in it first
            ranked = window_first(ranked, {t: datetime.fromisoformat(d.metadata["timestamp"]) for t, d in at.items()},
                                  signals.window)
        tense = asked_tense(query, holder, windowed=signals is not None and signals.window is not None)
        if tense is not None:  # a state now, or before: of the best matches, the latest (or earliest) first
            ranked = by_tense(ranked, {t: d.metadata["timestamp"] for t, d in at.items()}, tense,
                              {t: str(d.metadata.get("speaker") or "") for t, d in at.items()},
                              {t: str(d.metadata.get("session_id")) for t, d in at.items()})
        if signals is not None and signals.records:
            about = named_claims(ranked, signals.records, query)
            if tense == "before":  # what someone thought, or how a state stood, before: the superseded first
                ranked = prefer_earlier(ranked, signals.records, facts=True, about=about)
            if signals.asks_current_belief or (holder is not None and signals.window is None):
                if tense != "before":  # what someone thinks now: a CURRENT claim before the claim it superseded
                    ranked = prefer_current(ranked, signals.records, facts=tense == "now", about=about)
            else:
                if tense == "now":  # a state now: a CURRENT state fact (or claim) before what it superseded
                    ranked = prefer_current(ranked, signals.records, facts=True, about=about)
                if signals.intent != "BELIEF":  # a record about a named person: not someone else's opinion first
                    words = name_tokens(query)
                    named = {t for t, d in at.items()
                             if (n := first_name(str(d.metadata.get("speaker") or ""))) and n in words}
                    ranked = prefer_records(ranked, signals.records, named)
        docs = [at[t] for t in ranked] + docs[head_size:]
        if holder is not None and pool.reactions:  # the holder's word on the matter another told first
            docs = self._word_first(docs, pool, signals, fused, hybrid, allowed, "reaction",
                                    lambda ids, turns: reaction_first(ids, pool.reactions, turns, holder))
        if tense == "now" and asks_state_now(query):  # a state now: the same person's later word on it first
            docs = self._word_first(docs, pool, signals, fused, hybrid, allowed, "later_word",
                                    lambda ids, turns: echo_first(ids, pool.echoes, turns, holder=holder))
        if signals is not None and signals.records and signals.window is None:
            docs = self._state_first(docs, pool, signals, fused, hybrid, allowed, query, tense)
        if holder is not None and tense != "now":  # hybrid search's first place, when it is the holder's plain
            # stance, is kept (not for a stance now: the plainly worded stance is often the one since changed)
            docs = self._hybrid_stance(docs, pool, signals, fused, hybrid, allowed, holder)
        if signals is not None and signals.records:  # what the question names: read once for every document
            shown = [str(d.metadata["turn_id"]) for d in docs[:k]]
            about, state = named_claims(shown, signals.records, query), asked_state(query) or ()
            for d, t in zip(docs[:k], shown, strict=True):
                annotate_records(d, signals.records.get(t), about=about, state=state)
        for r, d in enumerate(docs, 1):
            d.metadata["rank"] = r
        return docs[:k]

    def _state_first(self, docs: list[Document], pool: CandidatePool, signals: GraphSignals, fused: np.ndarray,
                     hybrid: np.ndarray, allowed: Sequence[int] | None, query: str,
                     tense: str | None) -> list[Document]:
        """For a question about a state as it is (or was before): the graph's value first. Where the
        question names one state (:func:`asked_state`) and one person whose values of it the graph holds
        (:func:`state_subject`: a speaker of the head, or someone a speaker told of), the
        first telling of the current value (or of the oldest replaced one) leads
        (:func:`~langmem_cog.graph.provenance.state_value_first`); else, for a question about a state as
        it is, a leading turn whose state a later turn replaced gives way to that turn
        (:func:`~langmem_cog.graph.provenance.current_state_first`)."""
        records = signals.records
        present = asks_present_state(query)
        if not docs or not (present or tense == "before"):
            return docs
        ids = [str(d.metadata["turn_id"]) for d in docs]
        predicates = asked_state(query)
        if predicates:
            known = state_facts(records, None, predicates)  # of anyone: the speakers and the people they tell of
            names = {str(d.metadata.get("speaker") or "") for d in docs} | {subject_name(f) for _, f in known}
            person = state_subject(query, names)
            facts = [(t, f) for t, f in known if subject_name(f) == person] if person else []
            if facts:  # the graph holds this person's values of the state: it decides (nothing moves if it leads)
                mode = "now" if present else "before"
                return self._word_first(docs, pool, signals, fused, hybrid, allowed, "state_value",
                                        lambda order, turns: state_value_first(
                                            order, facts, {t: turns[t].timestamp for t in [order[0], *(t for t, _ in facts)]
                                                           if t in turns}, mode))
        if not present or not any(f.status == ClaimStatus.SUPERSEDED and f.predicate in FUNCTIONAL_PREDICATES
                                  for t in ids[:3] if (rec := records.get(t)) is not None for f in rec.facts):
            return docs  # no leading turn holds a replaced state: nothing can move
        return self._word_first(docs, pool, signals, fused, hybrid, allowed, "current_state",
                                lambda order, turns: current_state_first(order, records, others=turns))

    def _hybrid_stance(self, docs: list[Document], pool: CandidatePool, signals: GraphSignals | None,
                       fused: np.ndarray, hybrid: np.ndarray, allowed: Sequence[int] | None,
                       holder: str) -> list[Document]:
        """For a question about where ``holder`` stands: plain hybrid search's best turn (of those the filter
        ``allowed``) first when it is the holder's plain stance and the ranking leads neither with a stance
        of the holder's nor with anyone's plain stance (:func:`~langmem_cog.rank.questions.hybrid_stance_first`)."""
        at = range(len(pool.turns)) if allowed is None else allowed
        best = max(at, key=lambda i: hybrid[i], default=None)
        if not docs or best is None:
            return docs
        top = pool.turns[best]
        if first_name(top.speaker) != holder or not states_stance(top.text, evaluative=False):
            return docs  # nothing to keep: hybrid search's best is not the holder's plain stance
        lead, lead_id = docs[0], str(docs[0].metadata["turn_id"])
        mine = {top.id} | ({lead_id} if first_name(str(lead.metadata.get("speaker") or "")) == holder else set())
        plain = {top.id} | ({lead_id} if states_stance(lead.page_content, evaluative=False) else set())
        stances = plain | ({lead_id} if states_stance(lead.page_content) else set())
        return self._word_first(docs, pool, signals, fused, hybrid, allowed, "hybrid_stance",
                                lambda ids, turns: hybrid_stance_first(ids, top.id, mine, plain, stances))

    def _word_first(self, docs: list[Document], pool: CandidatePool, signals: GraphSignals | None, fused: np.ndarray,
                    hybrid: np.ndarray, allowed: Sequence[int] | None, placed_by: str,
                    reorder: Callable[[list[str], dict[str, Turn]], list[str]]) -> list[Document]:
        """The turn ``reorder`` puts first (:func:`~langmem_cog.rank.updates.echo_first`,
        :func:`~langmem_cog.rank.updates.reaction_first`, or the state's value,
        :func:`~langmem_cog.graph.provenance.state_value_first` /
        :func:`~langmem_cog.graph.provenance.current_state_first`), as a new document when it ranked below the
        documents at hand, marked ``placed_by``; only a turn the filter allows (``allowed``: the pool
        indices that pass it, ``None``: all) can move."""
        if not docs:
            return docs
        ids = [d.metadata["turn_id"] for d in docs]
        passing = None if allowed is None else set(allowed)
        at = {t.id: i for i, t in enumerate(pool.turns) if passing is None or i in passing}
        moved = reorder(ids, {t: pool.turns[i] for t, i in at.items()})
        if moved[0] == ids[0]:
            return docs
        have = {d.metadata["turn_id"]: d for d in docs}
        first = have.get(moved[0])
        if first is None:
            first = self._documents(pool, signals, fused, [at[moved[0]]], hybrid)[0]
        first.metadata["placed_by"] = placed_by
        return [first] + [d for d in docs if d.metadata["turn_id"] != moved[0]]

    @staticmethod
    def _compress(compressor: BaseDocumentCompressor, docs: list[Document], pool: CandidatePool, fused: np.ndarray,
                  idx: Sequence[int] | np.ndarray, query: str) -> list[Document]:
        """The compressor's order of ``docs`` (the pool's candidates ``idx``). A
        :class:`~langmem_cog.rank.compressor.ConvMemoryCompressor` that blends the fused score (its
        ``first_stage_key`` is ``"score"``) is handed each candidate's turn id, text, fused score and
        position as values and reorders by index; any other compressor gets the documents."""
        if isinstance(compressor, ConvMemoryCompressor) and compressor.first_stage_key == "score":
            entries = [(pool.turns[int(i)], float(fused[int(i)])) for i in idx]
            candidates = [Candidate(turn_id=t.id, text=t.memory_text, score=s, position=t.position) for t, s in entries]
            return compressor.rerank(candidates, query, max_position=pool.max_position).apply(docs)
        return list(compressor.compress_documents(docs, query))

    def _documents(self, pool: CandidatePool, signals: GraphSignals | None, fused: np.ndarray,
                   idx: Sequence[int] | np.ndarray, hybrid: np.ndarray) -> list[Document]:
        return pool_documents(pool, signals, fused, idx, hybrid=hybrid, raw_candidates=self.sizes.raw_candidates)


def pool_documents(pool: CandidatePool, signals: GraphSignals | None, fused: np.ndarray, idx: Sequence[int] | np.ndarray, *,
                   lexical_weight: float = 1.0, raw_candidates: int = 50,
                   hybrid: np.ndarray | None = None) -> list[Document]:
    """The candidates ``idx`` of a pool as ``Document`` objects with stage labels and fused scores
    (``hybrid``: the pool's hybrid scores when the caller has them, else computed with ``lexical_weight``)."""
    hybrid = pool.hybrid(lexical_weight) if hybrid is None else hybrid
    raw_top = set(np.argsort(-hybrid, kind="stable")[:raw_candidates].tolist())
    grounded = set(signals.grounded) if signals is not None else set()
    max_pos = pool.max_position
    out = []
    for i in idx:
        t = pool.turns[int(i)]
        in_raw, in_graph = int(i) in raw_top, t.id in grounded
        stage = "raw+graph" if in_raw and in_graph else "graph" if in_graph else "raw"
        out.append(turn_document(t, score=float(fused[i]), dense_score=float(pool.dense[i]),
                                 lexical_score=float(pool.lexical[i]), rank=0, stage=stage,
                                 max_position=max_pos, reranked=False))
    return out


def asked_tense(query: str, holder: str | None, *, windowed: bool) -> Literal["now", "before"] | None:
    """The time a question asks a state at, as the cascade's rules read it: ``None`` where the operator
    loop routed a time window (``windowed``: the window decides), else its word of now or before
    (:func:`~langmem_cog.rank.questions.state_tense`), else ``"now"`` for one state asked in the simple
    present of no one's stance (``holder`` is ``None``; :func:`~langmem_cog.rank.questions.asks_current_value`:
    "Where does Priya live?"), else ``"before"`` for a state or a stance asked in the past before a change
    (:func:`~langmem_cog.rank.questions.asks_before_change`: "Where did Priya live before she moved to
    Leeds?").

    Example:
        >>> asked_tense("Where does Priya live?", None, windowed=False), asked_tense("Where did Priya live before?",
        ...     None, windowed=False), asked_tense("Where does Priya live now?", None, windowed=True)
        ('now', 'before', None)
        >>> asked_tense("Where did Priya live before she moved to Leeds?", None, windowed=False)
        'before'
    """
    if windowed:
        return None
    tense = state_tense(query)
    if tense is None and holder is None and asks_current_value(query):
        return "now"
    if tense is None and (holder is not None or asked_state(query) is not None) and asks_before_change(query):
        return "before"
    return tense


def named_claims(turn_ids: Sequence[str], records: Mapping[str, TurnRecords],
                 query: str) -> Callable[[TurnClaim], bool] | None:
    """A test of the claims about what ``query`` names (a claim's target shares a word with it), where any
    claim of ``turn_ids`` is such; else ``None``: the question names no claim's target, and every claim
    counts.

    Example:
        >>> from langmem_cog.graph.provenance import TurnClaim
        >>> recs = {"jan": TurnRecords(claims=(TurnClaim("c0", "SUPERSEDED", -1, "jun", "running"),
        ...                                    TurnClaim("c1", "CURRENT", 1, None, "swimming")))}
        >>> about = named_claims(["jan"], recs, "Does Dana like swimming?")
        >>> [c.target for c in recs["jan"].claims if about(c)]
        ['swimming']
        >>> named_claims(["jan"], recs, "What is Dana into these days?") is None
        True
    """
    asked = set(tokenize(query))
    named = {c.claim_id for t in turn_ids if (rec := records.get(t)) is not None for c in rec.claims
             if c.target and asked & set(tokenize(c.target))}
    return (lambda c: c.claim_id in named) if named else None


def annotate_records(doc: Document, records: TurnRecords | None, *, about: Callable[[TurnClaim], bool] | None = None,
                     state: Collection[str] = ()) -> None:
    """Put the graph's records of a document's turn in its metadata: ``claims`` (claim id, status,
    polarity, the superseding claim's turn, the claim's target), ``claim_status``, ``event_dates`` (each
    event's resolved ``[start, end)`` as ISO 8601 strings), and for state facts (where someone lives or
    works, what they drive) ``facts`` (fact id, status, the superseding fact's turn) and ``fact_status``.
    A turn the graph derived none of these from gets none of these keys.

    ``claim_status`` is CURRENT if any of the claims is, else CONFLICTING, else SUPERSEDED, counting only
    the claims ``about`` accepts where the turn has such (:func:`named_claims`: those about what the
    question names; a turn whose claim about running was superseded is SUPERSEDED for a question about
    running, though its claim about swimming is CURRENT); ``fact_status`` likewise over the facts of the
    predicates in ``state`` (the state the question asks about, :func:`~langmem_cog.rank.questions.asked_state`),
    CURRENT if any is, else SUPERSEDED.

    Example:
        >>> from langmem_cog.graph.provenance import TurnClaim
        >>> doc = Document(page_content="I hate running but I love swimming.")
        >>> recs = TurnRecords(claims=(TurnClaim("c0", "SUPERSEDED", -1, "t9", "running"),
        ...                            TurnClaim("c1", "CURRENT", 1, None, "swimming")))
        >>> about = named_claims(["t0"], {"t0": recs}, "Does Dana like running now?")
        >>> annotate_records(doc, recs, about=about); doc.metadata["claim_status"]
        'SUPERSEDED'
        >>> annotate_records(doc, recs); doc.metadata["claim_status"]
        'CURRENT'
    """
    if records is None:
        return
    if records.claims:
        named = [c for c in records.claims if about(c)] if about is not None else []
        statuses = {c.status for c in named or records.claims}
        doc.metadata["claims"] = [c.as_dict() for c in records.claims]
        doc.metadata["claim_status"] = next(s for s in ("CURRENT", "CONFLICTING", "SUPERSEDED") if s in statuses) \
            if statuses & {"CURRENT", "CONFLICTING", "SUPERSEDED"} else sorted(statuses)[0]
    if records.events:
        doc.metadata["event_dates"] = [[e.start, e.end] for e in records.events if e.start or e.end]
    if records.facts:
        facts = [f for f in records.facts if f.predicate in state] or records.facts
        doc.metadata["facts"] = [f.as_dict() for f in records.facts]
        doc.metadata["fact_status"] = "CURRENT" if any(f.status == "CURRENT" for f in facts) else "SUPERSEDED"
