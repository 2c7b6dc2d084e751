"""The LongMemEval retrieval benchmark (turn- and session-level), run through the real store.

For each question, its haystack sessions are ingested in date order into a fresh
namespace (timestamps from ``haystack_dates``), the question is asked with its
``question_date`` as "now", and the full ranking of the haystack's turns is scored
against the gold turns (``has_answer: true``). Abstention questions (``_abs``) have
no gold and are excluded. Nothing is trained: LongMemEval has no train split here,
so every system is zero-shot (``hybrid`` uses the config's lexical weight).

Metrics follow LongMemEval's own evaluation code (``src/retrieval/eval_utils.py``):
``recall_any@k`` / ``recall_all@k`` (any / all gold units in the top k) and binary
NDCG@k with its DCG (``rel[0] + sum(rel[p - 1] / log2(p))`` over positions ``p >= 2``), for k in
5 and 10, at turn level and at session level (a session ranks where its best turn
ranks; gold sessions are ``answer_session_ids``), plus the MRR of the first gold turn.

The systems are those of :mod:`langmem_cog.bench.systems` that run on LongMemEval: each ranks with
its function ``rank(memory, namespace, question, now) -> ranked turn ids``; register more with
:func:`~langmem_cog.bench.systems.register_system`. Several systems share one ingest (embedding
dominates the cost).

Example:
    >>> lme_metrics(["s1:0", "s2:1", "s1:3"], ["s1:3"], {"s1:0": "s1", "s2:1": "s2", "s1:3": "s1"}, ["s1"])["turn_recall_all@5"]
    1.0
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langmem_cog.bench.protocol import percentiles, row_metrics
from langmem_cog.bench.runner import LocomoRun, Progress, no_progress
from langmem_cog.bench.systems import RankFn, get_system, system_names
from langmem_cog.checks import positive_int
from langmem_cog.config import CogMemConfig
from langmem_cog.errors import InvalidInputError
from langmem_cog.loaders import LongMemEvalQuestion, load_longmemeval

__all__ = [
    "LmeSelection",
    "LmeVectors",
    "LME_METRICS",
    "lme_metrics",
    "summarize_lme",
    "run_longmemeval",
    "default_longmemeval_path",
    "spread_order",
    "rescore_rows",
    "ingest_haystack",
]

logger = logging.getLogger(__name__)

KS = (5, 10)
#: Per-row metrics averaged in the summary, in report order.
LME_METRICS: tuple[str, ...] = (
    *(f"{level}_{m}@{k}" for level in ("turn", "session") for m in ("recall_any", "recall_all", "ndcg") for k in KS),
    "mrr",
)


def default_longmemeval_path() -> Path | None:
    """``../shared/data/longmemeval/longmemeval_s_dev.json.gz`` relative to the cwd or the package."""
    rel = "shared/data/longmemeval/longmemeval_s_dev.json.gz"
    candidates = [Path.cwd() / ".." / rel, *(p / rel for p in Path(__file__).resolve().parents)]
    return next((c.resolve() for c in candidates if c.exists()), None)


# ----------------------------------------------------------------------------- metrics
def _dcg(relevances: Sequence[float], k: int) -> float:
    rel = list(relevances)[:k]
    if not rel:
        return 0.0
    # LongMemEval's eval_utils.dcg: rel[0] + sum(rel[1:] / log2(arange(2, len + 1))), i.e. position p >= 2
    # is discounted by log2(p) (positions 1 and 2 both count fully).
    return rel[0] + math.fsum(r / math.log2(p) for p, r in enumerate(rel[1:], start=2))


def _unit_metrics(ranked: Sequence[str], gold: set[str], prefix: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in KS:
        top = ranked[:k]
        out[f"{prefix}_recall_any@{k}"] = float(any(g in top for g in gold))
        out[f"{prefix}_recall_all@{k}"] = float(all(g in top for g in gold))
        ideal_k = _dcg([1.0] * len(gold), k)
        out[f"{prefix}_ndcg@{k}"] = _dcg([1.0 if d in gold else 0.0 for d in top], k) / ideal_k if ideal_k else 0.0
    return out


def lme_metrics(
    ranked_turns: Sequence[str], gold_turns: Iterable[str], session_of: Mapping[str, str], gold_sessions: Iterable[str]
) -> dict[str, Any]:
    """LongMemEval's retrieval metrics of one question.

    Args:
        ranked_turns: Turn ids, best first (the whole ranking; absent turns rank nowhere).
        gold_turns: The gold turn ids (non-empty).
        session_of: Turn id -> session id.
        gold_sessions: The gold (answer) session ids; the gold turns' sessions when empty.

    Returns:
        ``turn_*`` and ``session_*`` recall_any / recall_all / ndcg at 5 and 10, ``mrr`` and ``rank``
        (1-based rank of the first gold turn, ``None`` if absent), plus LoCoMo's ``h1``, ``hit10``, ``r10``
        (so ``bench compare`` pairs LongMemEval rows like LoCoMo ones).

    Raises:
        InvalidInputError: If there is no gold turn (abstention questions are not scored).
    """
    gold = set(gold_turns)
    base = row_metrics(list(ranked_turns), gold)  # raises on empty gold
    sessions = list(dict.fromkeys(session_of[t] for t in ranked_turns if t in session_of))
    gold_s = set(gold_sessions) or {session_of[t] for t in gold if t in session_of}
    return {**_unit_metrics(ranked_turns, gold, "turn"), **_unit_metrics(sessions, gold_s, "session"), **base}


def summarize_lme(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean of every metric over the rows, overall and per question type (``category``).

    Example:
        >>> r = {m: 1.0 for m in LME_METRICS}
        >>> summarize_lme([{**r, "category": "a"}, {**r, "mrr": 0.0, "category": "b"}])["full"]["mrr"]
        0.5
    """
    if not rows:
        raise InvalidInputError("summarize_lme() needs at least one row")

    def mean(group: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        return {m: math.fsum(float(r[m]) for r in group) / len(group) for m in LME_METRICS}

    by_type: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_type.setdefault(str(r["category"]), []).append(r)
    return {
        "n_rows": len(rows),
        "full": mean(rows),
        "per_type": {t: {**mean(g), "n": len(g)} for t, g in sorted(by_type.items())},
    }


def rescore_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Recompute the metrics of stored rows from their ``ranked_ids`` (the top 50) and gold.

    For a run that stopped early, or rows written by an older version. Turn ids are
    ``"{session}:{index}"``, which gives each turn's session. ``rank`` / ``mrr`` / ``h1`` /
    ``hit10`` keep the stored values (they used the whole ranking); ``session_exact`` says whether
    the top 50 turns cover at least 10 sessions (then the session metrics at 10 are exact).
    """
    out = []
    for row in rows:
        ranked = list(row["ranked_ids"])
        session_of = {t: t.rsplit(":", 1)[0] for t in [*ranked, *row["gold"]]}
        m = lme_metrics(ranked, row["gold"], session_of, row.get("gold_sessions") or [])
        for key in ("rank", "mrr", "h1", "hit10"):
            m[key] = row[key]
        distinct = len({session_of[t] for t in ranked})
        out.append({**row, **m, "session_exact": distinct >= max(KS) or len(ranked) >= row.get("n_turns", 0)})
    return out


# ----------------------------------------------------------------------------- runner
def spread_order(n: int) -> list[int]:
    """``range(n)`` in bit-reversed (van der Corput) order: every prefix is spread evenly over the range.

    The dev file is grouped by question type, so a run that takes (or stops after) the first N questions
    in this order still covers every type in proportion.

    Example:
        >>> spread_order(8)
        [0, 4, 2, 6, 1, 5, 3, 7]
    """
    bits = max(1, (n - 1).bit_length())
    key = [int(format(i, f"0{bits}b")[::-1], 2) for i in range(n)]
    return sorted(range(n), key=key.__getitem__)


@dataclass(frozen=True)
class LmeSelection:
    """Which LongMemEval questions a run takes: the scorable ones (no abstention) in :func:`spread_order`,
    the first ``limit`` of them (every type in proportion), from ``start`` on (one slice of a run split
    over processes), less the ids in ``skip`` (already done by an earlier run that stopped).

    Raises:
        InvalidInputError: If ``limit`` is not a positive integer or ``start`` is negative.

    Example:
        >>> LmeSelection(limit=10, skip=["q1"]).skip
        frozenset({'q1'})
    """

    limit: int | None = None
    start: int = 0
    skip: Collection[str] = frozenset()

    def __post_init__(self) -> None:
        positive_int(self.limit, "limit", allow_none=True)
        if isinstance(self.start, bool) or not isinstance(self.start, int) or self.start < 0:
            raise InvalidInputError(f"start={self.start!r} is invalid: pass 0 or more questions to skip")
        object.__setattr__(self, "skip", frozenset(self.skip))

    def questions(self, data: str | Path) -> list[LongMemEvalQuestion]:
        """The selected questions of a LongMemEval file, in order."""
        scored = [q for q in load_longmemeval(data) if not q.is_abstention and q.gold_turn_ids]
        chosen = [scored[i] for i in spread_order(len(scored))][: self.limit][self.start :]
        return [q for q in chosen if q.question_id not in self.skip]


@dataclass(frozen=True)
class LmeVectors:
    """How a LongMemEval run makes turn vectors.

    Attributes:
        embeddings: An embedder to use (tests pass a fake; ``None``: the config's).
        max_seq_length: Truncation of the config's embedder (``None``: the model's own limit).
        cache: A ``.npz`` of turn vectors (:meth:`CachedEmbeddings.save`): read first when it exists,
            written every 10 questions and at the end, so a rerun skips the model for turns seen.
    """

    embeddings: Any | None = None
    max_seq_length: int | None = None
    cache: str | Path | None = None


def ingest_haystack(memory: Any, question: LongMemEvalQuestion, namespace: str, *,
                    with_graph: bool = True) -> tuple[list[Any], float]:
    """Store a question's haystack in ``namespace`` (raw store, then the graph and its consolidation
    unless ``with_graph`` is off); returns its turns and the seconds the ingest took."""
    turns = [t.model_copy(update={"namespace": namespace}) for t in question.turns]
    t0 = time.perf_counter()
    if with_graph:
        memory.add_turns(turns)
        memory.consolidate(namespace)
    else:
        memory.store.add_turns(turns)
    return turns, time.perf_counter() - t0


def run_longmemeval(
    data: str | Path,
    *,
    systems: Sequence[str] = ("hybrid",),
    selection: LmeSelection = LmeSelection(),
    config: CogMemConfig | None = None,
    vectors: LmeVectors = LmeVectors(),
    progress: Progress = no_progress,
    on_row: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, LocomoRun]:
    """Run the LongMemEval retrieval protocol for one or more systems (one shared ingest).

    Args:
        data: LongMemEval JSON / JSON.gz.
        systems: Names of systems that run on LongMemEval (:func:`~langmem_cog.bench.systems.system_names`).
        selection: The questions scored (default: every scorable one, in :func:`spread_order`).
        config: Base config, its ``embedder`` included (default: the ephemeral preset).
        vectors: The embedder, its token limit and a vector cache file.
        progress: Wraps iterables to show progress (the CLI passes tqdm).
        on_row: Called with ``(system, row)`` as soon as each row is scored (incremental rows files).

    Returns:
        A :class:`~langmem_cog.bench.locomo.LocomoRun` (summary and rows) per system.
    """
    if not systems:
        raise InvalidInputError(f"no system to run: choose from {', '.join(system_names('longmemeval'))}")
    chosen = {name: get_system(name, "longmemeval") for name in systems}
    rankers: dict[str, RankFn] = {name: s.rank for name, s in chosen.items() if s.rank is not None}
    from langmem_cog.memory import CogMemory

    questions = selection.questions(data)
    if not questions:
        raise InvalidInputError(f"{data}: no scorable (non-abstention) LongMemEval question left to run "
                                f"({len(selection.skip)} skipped as already scored)")
    cfg = config or CogMemConfig.preset("ephemeral")
    embeddings = vectors.embeddings
    if embeddings is None:
        from langmem_cog.embeddings import config_embedder

        embeddings = config_embedder(cfg, max_seq_length=vectors.max_seq_length)
    cache, embedding_cache = None, vectors.cache
    if embedding_cache is not None:
        from langmem_cog.embeddings import CachedEmbeddings

        cache = embeddings = CachedEmbeddings(embeddings, max_items=400_000)
        if Path(embedding_cache).exists():
            logger.info("embedding cache %s: %d vectors", embedding_cache, cache.load(embedding_cache))
    memory = CogMemory(cfg, embeddings=embeddings)
    with_graph = any(s.needs_graph for s in chosen.values())
    run_id = uuid.uuid4().hex[:8]
    memory.embeddings.embed_query("warm up")

    rows: dict[str, list[dict[str, Any]]] = {s: [] for s in systems}
    latencies: dict[str, list[float]] = {s: [] for s in systems}
    n_turns, ingest_s = 0, 0.0
    for i, q in enumerate(progress(questions, "longmemeval", len(questions))):
        ns = f"lme.{run_id}.{i}"
        turns, seconds = ingest_haystack(memory, q, ns, with_graph=with_graph)
        ingest_s += seconds
        n_turns += len(turns)
        session_of = {t.id: t.session_id for t in turns}
        haystack_sessions = set(session_of.values())
        gold_sessions = [s for s in q.answer_session_ids if s in haystack_sessions]
        if cache is not None and embedding_cache is not None and (i + 1) % 10 == 0:
            cache.save(embedding_cache)
        try:
            for name in systems:
                if cache is not None:
                    cache.discard([q.question])  # each timed query pays for its embedding
                memory.store.clear_query_cache()
                t1 = time.perf_counter()
                ranked = rankers[name](memory, ns, q.question, q.question_date)
                latencies[name].append((time.perf_counter() - t1) * 1000)
                row = {
                    "seed": 0,
                    "sample_id": q.question_id,
                    "qa_index": 0,
                    "question": q.question,
                    "category": q.question_type,
                    "gold": list(q.gold_turn_ids),
                    "gold_sessions": gold_sessions,
                    "n_turns": len(turns),
                    "ranked_ids": ranked[:50],
                    **lme_metrics(ranked, q.gold_turn_ids, session_of, gold_sessions),
                }
                rows[name].append(row)
                if on_row is not None:
                    on_row(name, row)
        finally:
            memory.forget(ns)
    if cache is not None and embedding_cache is not None:
        cache.save(embedding_cache)

    out: dict[str, LocomoRun] = {}
    for name in systems:
        summary = {
            "system": name,
            "embedder": cfg.embedder,
            "max_seq_length": vectors.max_seq_length,
            "data": str(data),
            **summarize_lme(rows[name]),
            "latency_ms": percentiles(latencies[name]),
            "ingest_turns_per_s": n_turns / ingest_s if ingest_s > 0 else float("inf"),
            "ingest_includes_graph": with_graph,
            "n_turns": n_turns,
            "n_questions": len(questions),
            "params": {"lexical_weight": cfg.search.lexical_weight, "limit": selection.limit, "trained": False},
        }
        out[name] = LocomoRun(summary=summary, rows=rows[name])
    return out
