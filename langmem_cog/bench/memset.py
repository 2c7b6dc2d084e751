"""The attribution-and-currency set: who thinks what, and what is true now, in whole conversations.

Each conversation of the set (``benchmarks/data/memset/ms-NN.json``, LoCoMo's record schema plus a
typed ``qa`` list; how it was written: ``SPEC.md`` beside it) is stored in its own namespace of one
:class:`~langmem_cog.memory.CogMemory`, as a user's ingest would store it. Every question is then asked
through :class:`~langmem_cog.CogMemRetriever` (the default retriever unless ``mode``), dated a day after
the conversation's last turn, with every turn of the conversation a candidate. Four kinds of question:

* ``record``: a person's own event or fact, asked for as a record (gold: the record turn; ``other``:
  an opinion about it);
* ``belief``: what someone thinks or feels about it (gold: the opinion turn; ``other``: the record);
* ``now``: the latest state after a change (gold: the new state's turn; ``other``: the old state's);
* ``before``: the state before it (gold: the old state's turn; ``other``: the new state's).

The conversations are split into a dev half and a test half by :func:`split_ids` (seed 48): tune on
dev, score test once per method change.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from langmem_cog.bench.protocol import split_conversations
from langmem_cog.config import RetrievalMode
from langmem_cog.errors import InvalidInputError
from langmem_cog.loaders import locomo_turns, read_json
from langmem_cog.records import Turn

__all__ = ["KINDS", "MemsetConversation", "MemsetQuestion", "conversation_retrievers", "default_memset_dir", "load_memset",
           "pick_split", "run_memset", "split_ids"]

#: The kinds of question, in report order.
KINDS = ("record", "belief", "now", "before")
#: The seed of the dev/test split.
SPLIT_SEED = 48
#: How many turns each question's ranking holds (MRR counts a gold turn below this as 0).
DEPTH = 50

Split = Literal["dev", "test", "all"]


@dataclass(frozen=True)
class MemsetQuestion:
    """One question of the set (see ``SPEC.md``)."""

    id: str
    kind: str
    group: str
    question: str
    evidence: tuple[str, ...]
    other: tuple[str, ...]
    holder: str
    slot: str | None = None
    indirect: bool | None = None


@dataclass(frozen=True)
class MemsetConversation:
    """One conversation: its id, turns (namespace = the sample id) and questions."""

    sample_id: str
    turns: list[Turn]
    questions: list[MemsetQuestion] = field(default_factory=list)


def default_memset_dir() -> Path:
    """The set's folder in a checkout of the repository (``benchmarks/data/memset``).

    Raises:
        InvalidInputError: If the package does not sit in a checkout that holds the set.
    """
    here = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "memset"
    if not here.is_dir():
        raise InvalidInputError(f"the attribution-and-currency set is not at {here}: run from a checkout of the "
                                "repository, or pass the folder of its ms-*.json files")
    return here


def _question(raw: dict[str, Any], where: str, turn_ids: set[str]) -> MemsetQuestion:
    try:
        q = MemsetQuestion(id=str(raw["id"]), kind=str(raw["kind"]), group=str(raw["group"]),
                           question=str(raw["question"]), evidence=tuple(raw["evidence"]),
                           other=tuple(raw.get("other", ())), holder=str(raw.get("holder", "")),
                           slot=raw.get("slot"), indirect=raw.get("indirect"))
    except KeyError as exc:
        raise InvalidInputError(f"{where}: a question lacks {exc.args[0]!r}") from None
    if q.kind not in KINDS:
        raise InvalidInputError(f"{where}: question {q.id} has kind {q.kind!r}: use one of {list(KINDS)}")
    missing = [t for t in (*q.evidence, *q.other) if t not in turn_ids]
    if not q.evidence or missing:
        raise InvalidInputError(f"{where}: question {q.id} cites turns the conversation lacks: {missing or 'none'}")
    return q


def load_memset(folder: str | Path | None = None) -> list[MemsetConversation]:
    """The set's conversations, in sample-id order.

    Raises:
        InvalidInputError: If the folder holds no ``ms-*.json`` file, or a question is malformed or
            cites a turn its conversation lacks.
    """
    root = Path(folder) if folder is not None else default_memset_dir()
    files = sorted(root.glob("ms-*.json"))
    if not files:
        raise InvalidInputError(f"{root} holds no ms-*.json conversation: pass the set's folder")
    out = []
    for path in files:
        record = read_json(path)
        turns = locomo_turns(record)
        ids = {t.id for t in turns}
        out.append(MemsetConversation(str(record["sample_id"]), turns,
                                      [_question(q, str(path), ids) for q in record.get("qa", [])]))
    return out


def split_ids(sample_ids: Sequence[str], seed: int = SPLIT_SEED) -> tuple[list[str], list[str]]:
    """``(dev, test)``: LoCoMo's conversation split (:func:`~langmem_cog.bench.protocol.split_conversations`:
    the sorted ids shuffled with ``random.Random(seed)``, first half dev) with this set's seed.

    Example:
        >>> split_ids(["a", "b", "c", "d"], seed=1)
        (['d', 'a'], ['c', 'b'])
    """
    return split_conversations(sample_ids, seed)


def pick_split(convs: list[MemsetConversation], split: Split) -> list[MemsetConversation]:
    """The conversations of one half (``dev``, ``test``; by :func:`split_ids`) or ``all`` of them.

    Raises:
        InvalidInputError: If ``split`` is none of those.
    """
    if split == "all":
        return convs
    if split not in ("dev", "test"):
        raise InvalidInputError(f"split={split!r} is invalid: use 'dev', 'test' or 'all'")
    dev, test = split_ids([c.sample_id for c in convs])
    chosen = set(dev if split == "dev" else test)
    return [c for c in convs if c.sample_id in chosen]


def conversation_retrievers(convs: Sequence[MemsetConversation], memory: Any, *,
                            mode: RetrievalMode | None = None) -> Iterator[tuple[MemsetConversation, Any]]:
    """Each conversation stored in a fresh namespace of ``memory``, with a
    :class:`~langmem_cog.CogMemRetriever` over it (``k`` = :data:`DEPTH`, ``mode``, dated a day after the
    conversation's last turn); the namespace is forgotten when the caller moves on.

    Args:
        convs: The conversations (:func:`load_memset`, :func:`pick_split`).
        memory: The :class:`~langmem_cog.memory.CogMemory` to store them in.
        mode: The retrieval path (``None``: the config's, the cascade by default).

    Yields:
        ``(conversation, retriever)`` in order.
    """
    from langmem_cog.retriever import CogMemRetriever

    run = uuid.uuid4().hex[:8]
    for conv in convs:
        ns = f"memset.{run}.{conv.sample_id}"
        memory.add_turns([t.model_copy(update={"namespace": ns}) for t in conv.turns])
        try:
            now = max(t.timestamp for t in conv.turns) + timedelta(days=1)
            yield conv, CogMemRetriever(memory=memory, namespace=ns, k=DEPTH, mode=mode, now=now)
        finally:
            memory.forget(ns)


def run_memset(config: Any | None = None, *, mode: RetrievalMode | None = None, split: Split = "dev",
               folder: str | Path | None = None, memory: Any | None = None) -> dict[str, Any]:
    """Ask every question of one half of the set through :class:`~langmem_cog.CogMemRetriever`.

    Args:
        config: The memory's config (default: the ``ephemeral`` preset), unless ``memory`` is given.
        mode: The retrieval path (``None``: the config's, the cascade by default).
        split: ``dev``, ``test`` or ``all``.
        folder: The set's folder (default :func:`default_memset_dir`).
        memory: A :class:`~langmem_cog.memory.CogMemory` to use (conversations are stored in fresh
            namespaces and forgotten afterwards).

    Returns:
        ``by_kind``: per kind ``n``, ``h1`` (share of questions whose first turn is gold), ``mrr``
        (over the first :data:`DEPTH` turns), ``other_first`` (share whose first turn is the
        counterpart: the record for a belief question, the old state for a now-question) and
        ``gold_in_10``; also ``split``, ``samples``, ``mode`` and per-question ``details``.
    """
    from langmem_cog.config import CogMemConfig
    from langmem_cog.memory import CogMemory

    convs = pick_split(load_memset(folder), split)
    memory = memory or CogMemory(config or CogMemConfig.preset("ephemeral"))
    details: list[dict[str, Any]] = []
    used = ""
    for conv, retriever in conversation_retrievers(convs, memory, mode=mode):
        used = str(retriever.mode)
        for q in conv.questions:
            ranked = [d.metadata["turn_id"] for d in retriever.invoke(q.question)]
            gold = next((i for i, t in enumerate(ranked, 1) if t in q.evidence), None)
            other = next((i for i, t in enumerate(ranked, 1) if t in q.other), None)
            details.append({"sample_id": conv.sample_id, "id": q.id, "kind": q.kind, "gold_rank": gold,
                            "other_rank": other, "first": ranked[0] if ranked else None,
                            "slot": q.slot, "indirect": q.indirect})
    by_kind = {}
    for kind in KINDS:
        rows = [d for d in details if d["kind"] == kind]
        n = len(rows)
        by_kind[kind] = {
            "n": n,
            "h1": sum(d["gold_rank"] == 1 for d in rows) / n if n else 0.0,
            "mrr": sum(1 / d["gold_rank"] for d in rows if d["gold_rank"]) / n if n else 0.0,
            "other_first": sum(d["other_rank"] == 1 for d in rows) / n if n else 0.0,
            "gold_in_10": sum(bool(d["gold_rank"] and d["gold_rank"] <= 10) for d in rows) / n if n else 0.0,
        }
    return {"split": split, "samples": [c.sample_id for c in convs], "mode": used, "by_kind": by_kind,
            "details": details}
