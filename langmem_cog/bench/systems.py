"""The benchmark systems: one registry for LoCoMo, LongMemEval and the CLI.

A system is a name, one line of help, the datasets it runs on and how it ranks. Its ``kind`` says
which runner ranks it:

* ``search``: :meth:`~langmem_cog.store.TurnStore.search` in one ``mode`` with one ``fusion`` rule.
  On LoCoMo's seeds, ``hybrid`` tunes its BM25 weight on each seed's train conversations
  (``tunes_weight``).
* ``graph``: the CogMem operator loop (:mod:`langmem_cog.graph.loop`); ingest builds the PEC2F graph.
* ``cascade``: the LoCoMo cascade systems (:mod:`langmem_cog.bench.cascade`), each a
  :class:`CascadeRecipe`: where its fusion scorer and its cross-encoder come from (fitted per seed on
  the seed's train conversations, or the shipped models).
* ``rank``: a function ``rank(memory, namespace, question, now) -> turn ids`` (LongMemEval's systems;
  :func:`register_system` adds one).

Every system that runs on LongMemEval has a ``rank`` function; LoCoMo's runners read ``kind`` and the
fields beside it. The CLI lists :func:`system_names` of a dataset as its ``--system`` choices.

Example:
    >>> system_names("locomo")
    ['augmented', 'bm25', 'dense', 'full', 'full-zeroshot', 'graph', 'hybrid', 'hybrid-rrf']
    >>> get_system("full", "locomo").cascade
    CascadeRecipe(scorer='fitted', reranker='fitted')
    >>> get_system("full", "longmemeval")
    Traceback (most recent call last):
        ...
    langmem_cog.errors.InvalidInputError: system 'full' does not run on longmemeval: choose one of augmented-untrained, bm25, dense, graph, hybrid, hybrid-rrf
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import numpy as np

from langmem_cog.errors import InvalidInputError

__all__ = [
    "DATASETS",
    "SYSTEMS",
    "BenchSystem",
    "CascadeRecipe",
    "RankFn",
    "get_system",
    "register_system",
    "system_names",
]

#: ``rank(memory, namespace, question, now) -> ranked turn ids`` (best first); ``memory`` is a CogMemory.
RankFn = Callable[[Any, str, str, datetime], list[str]]

DATASETS = ("locomo", "longmemeval")


@dataclass(frozen=True)
class CascadeRecipe:
    """Where a cascade system's models come from.

    Attributes:
        scorer: ``fitted``: the fusion scorer is fitted per seed on the seed's train conversations;
            ``shipped``: the packaged one.
        reranker: ``none``: no cross-encoder (the fused ranking is the answer); ``fitted``: one
            fine-tuned per seed; ``shipped``: the packaged ConvMemory v2 compressor.
    """

    scorer: Literal["fitted", "shipped"]
    reranker: Literal["none", "fitted", "shipped"]

    @property
    def fits(self) -> bool:
        """Whether anything is fitted per seed (such a system needs LoCoMo's seeds, not ``split="all"``)."""
        return "fitted" in (self.scorer, self.reranker)


@dataclass(frozen=True)
class BenchSystem:
    """A registered benchmark system (see the module docstring for the kinds)."""

    name: str
    help: str
    kind: Literal["search", "graph", "cascade", "rank"]
    datasets: tuple[str, ...] = DATASETS
    mode: str | None = None
    fusion: str | None = None
    tunes_weight: bool = False
    cascade: CascadeRecipe | None = None
    rank: RankFn | None = None

    def __post_init__(self) -> None:
        if "longmemeval" in self.datasets and self.rank is None:
            raise InvalidInputError(f"system {self.name!r} runs on longmemeval: it needs a rank function")
        if (self.kind == "cascade") != (self.cascade is not None):
            raise InvalidInputError(f"system {self.name!r}: a cascade system, and only one, has a CascadeRecipe")

    @property
    def needs_graph(self) -> bool:
        """Whether ingest must build the PEC2F graph (``CogMemory.add_turns`` + ``consolidate``)."""
        return self.kind == "graph"


#: The registered systems by name.
SYSTEMS: dict[str, BenchSystem] = {}


def system_names(dataset: str) -> list[str]:
    """The names of the systems that run on ``dataset`` (``locomo`` or ``longmemeval``), sorted."""
    return sorted(name for name, s in SYSTEMS.items() if dataset in s.datasets)


def get_system(name: str, dataset: str) -> BenchSystem:
    """The system ``name`` of ``dataset``.

    Raises:
        InvalidInputError: If no such system runs on ``dataset``; the message lists those that do.
    """
    system = SYSTEMS.get(name)
    if system is None or dataset not in system.datasets:
        why = "is unknown" if system is None else f"does not run on {dataset}"
        raise InvalidInputError(f"system {name!r} {why}: choose one of {', '.join(system_names(dataset))}")
    return system


def register_system(name: str, rank: RankFn, *, needs_graph: bool = False, help: str = "") -> None:  # noqa: A002
    """Register (or replace) a LongMemEval system given by its ranking function.

    Args:
        name: The ``--system`` name.
        rank: ``rank(memory, namespace, question, now)`` returning turn ids best first; ``memory`` is a
            :class:`~langmem_cog.memory.CogMemory` whose namespace holds the question's haystack.
        needs_graph: Ingest with extraction (``CogMemory.add_turns`` + ``consolidate``) instead of the raw store only.
        help: One line for the CLI's help.

    Example:
        >>> register_system("dense-copy", lambda mem, ns, q, now: [h.turn.id for h in
        ...     mem.store.search(ns, q, k=mem.store.count(ns), mode="dense")])
        >>> "dense-copy" in system_names("longmemeval")
        True
        >>> del SYSTEMS["dense-copy"]
    """
    if not name or not callable(rank):
        raise InvalidInputError(f"register_system needs a name and a callable, got {name!r}, {rank!r}")
    SYSTEMS[name] = BenchSystem(name, help or name, "graph" if needs_graph else "rank", ("longmemeval",), rank=rank)


def _add(system: BenchSystem) -> None:
    SYSTEMS[system.name] = system


def _search_ranker(mode: str, fusion: str | None) -> RankFn:
    def rank(memory: Any, namespace: str, question: str, now: datetime) -> list[str]:
        store = memory.store
        hits = store.search(namespace, question, k=max(store.count(namespace), 1), mode=mode, fusion=fusion)
        return [h.turn.id for h in hits]

    return rank


def _graph_rank(memory: Any, namespace: str, question: str, now: datetime) -> list[str]:
    return memory.retrieval.result(namespace, question, now=now).turn_ids


def _augmented_untrained_rank(memory: Any, namespace: str, question: str, now: datetime) -> list[str]:
    """Raw candidates -> the untrained fusion fallback (neighbour window, no graph, no cross-encoder)."""
    from langmem_cog.rank.cascade import Cascade
    from langmem_cog.rank.scorer import FusionScorer

    cascade = Cascade(store=memory.store, scorer=FusionScorer.untrained(), use_graph=False)
    pool, _signals, fused = cascade.first_stage(namespace, question, now=now)
    return [pool.turns[int(i)].id for i in np.argsort(-fused, kind="stable")]


for _name, _mode, _fusion, _help in (
    ("dense", "dense", None, "cosine similarity of the embedder"),
    ("bm25", "lexical", None, "stemmed BM25"),
    ("hybrid", "hybrid", "zscore", "z(dense) + w * z(BM25); on LoCoMo's seeds w is tuned on the train conversations"),
    ("hybrid-rrf", "hybrid", "rrf", "reciprocal-rank fusion of dense and BM25 (untrained)"),
):
    _add(BenchSystem(_name, _help, "search", mode=_mode, fusion=_fusion, tunes_weight=_name == "hybrid",
                     rank=_search_ranker(_mode, _fusion)))
_add(BenchSystem("graph", "the operator loop over the PEC2F graph (grounded turns in order)", "graph",
                 rank=_graph_rank))
_add(BenchSystem("augmented", "raw + graph candidates -> a fusion scorer fitted per seed", "cascade", ("locomo",),
                 cascade=CascadeRecipe("fitted", "none")))
_add(BenchSystem("full", "augmented -> a cross-encoder fine-tuned per seed (ConvMemory v2)", "cascade", ("locomo",),
                 cascade=CascadeRecipe("fitted", "fitted")))
_add(BenchSystem("full-zeroshot", "the shipped models as they are (the default retriever's)", "cascade", ("locomo",),
                 cascade=CascadeRecipe("shipped", "shipped")))
_add(BenchSystem("augmented-untrained", "raw candidates -> the untrained fusion fallback (no graph, no "
                 "cross-encoder)", "rank", ("longmemeval",), rank=_augmented_untrained_rank))
