"""Training lists for the reranker and the fusion scorer, built from a train split.

:func:`rerank_examples` turns scored candidate pools into :class:`~langmem_cog.rank.training.RerankExample`
lists: the fused top ``depth`` in order (with plain hybrid search's best ``protect`` kept in it, as the
cascade keeps them: :func:`~langmem_cog.rank.head.head_order`), plus any gold candidate the first stage left out (so
every list teaches something), each pair formatted exactly as the compressor formats it. The pools
themselves come from the retriever's candidate stage (:mod:`langmem_cog.bench.pools`).

Example:
    >>> from datetime import datetime, timezone
    >>> from langmem_cog.records import make_turn
    >>> ts = datetime(2023, 1, 1, tzinfo=timezone.utc)
    >>> turns = [make_turn(id=f"t{i}", namespace="d", speaker="a", text=f"text {i}", position=i, timestamp=ts)
    ...          for i in range(4)]
    >>> pool = CandidatePool(turns=turns, dense=np.zeros(4), lexical=np.zeros(4))
    >>> [ex] = rerank_examples([("q?", pool, np.array([3.0, 2.0, 1.0, 0.0]), np.array([0, 0, 0, 1], bool))], depth=2)
    >>> ex.docs, ex.gold
    (['MEMORY_TIME: 0. a: text 0', 'MEMORY_TIME: 1. a: text 1', 'MEMORY_TIME: 3. a: text 3'], [False, False, True])
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Iterable, Sequence

import numpy as np

from langmem_cog.rank.cross_encoder import format_pair
from langmem_cog.rank.features import CandidatePool
from langmem_cog.rank.head import RAW_PROTECT, RERANK_DEPTH, head_order
from langmem_cog.rank.training import RerankExample

__all__ = ["NAMES", "ROLE_SPEAKERS", "SAME_ROLE_REACH", "ScoredPool", "is_role_list", "name_speakers", "rerank_examples",
           "same_role"]

logger = logging.getLogger(__name__)

#: ``(query, pool, fused scores, gold mask)``
ScoredPool = tuple[str, CandidatePool, np.ndarray, np.ndarray]


def rerank_examples(pools: Iterable[ScoredPool], depth: int = RERANK_DEPTH, add_missed_gold: bool = True, *,
                    protect: int = RAW_PROTECT, lexical_weight: float = 1.0, positions: bool = True) -> list[RerankExample]:
    """One training list per pool: the fused top ``depth`` (+ missed gold), formatted as the compressor does,
    with each candidate's fused score as the example's ``prior``.

    ``protect`` and ``lexical_weight``: the head holds hybrid's best ``min(protect, depth)`` candidates
    (hybrid = ``z(dense) + lexical_weight * z(BM25)``), as in :meth:`~langmem_cog.rank.cascade.Cascade.rank_pool`.
    ``positions``: the pairs carry the ``QUERY_TIME`` / ``MEMORY_TIME`` positions (the compressor's
    ``use_positions``); ``False``: the plain ``(question, memory text)`` pair.
    """
    out = []
    for query, pool, fused, gold in pools:
        order = [int(i) for i in head_order(fused, pool.hybrid(lexical_weight), depth=depth, protect=min(protect, depth))[:depth]]
        if add_missed_gold:
            order += [int(i) for i in np.flatnonzero(gold) if int(i) not in set(order)]
        if not order:
            continue
        max_pos = max(t.position for t in pool.turns)
        pairs = [format_pair(query, pool.turns[i].memory_text, pos=pool.turns[i].position, max_pos=max_pos)
                 if positions else (query, pool.turns[i].memory_text) for i in order]
        out.append(RerankExample(query=pairs[0][0], docs=[p[1] for p in pairs], gold=[bool(gold[i]) for i in order],
                                 prior=[float(fused[i]) for i in order]))
    return out


#: The speakers of an assistant chat (LongMemEval's roles); :func:`name_speakers` renames them.
ROLE_SPEAKERS: tuple[str, str] = ("user", "assistant")
_ROLE_PREFIXES = tuple(f"{s}: " for s in ROLE_SPEAKERS)

#: How much deeper than its depth a list is read for :func:`same_role`: its candidates of the gold's role
#: are taken from the fused top ``SAME_ROLE_REACH * depth``.
SAME_ROLE_REACH = 4

#: First names :func:`name_speakers` gives the two sides of an assistant chat.
NAMES: tuple[str, ...] = (
    "Alex", "Amara", "Ben", "Chloe", "Daniel", "Elena", "Farid", "Grace", "Hana", "Ivan", "Jonas", "Kemi", "Lara",
    "Marco", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sam", "Tariq", "Uma", "Victor", "Wen", "Yusuf", "Zoe",
)

# The question's first person becomes the user's name ({a}), its second person the assistant's ({b}).
# Longer forms first; the verb is put in the third person where it follows or precedes the pronoun.
_PERSON = tuple((re.compile(p), r) for p, r in (
    (r"\b([Dd])o I\b", r"\1oes {a}"), (r"\b([Hh])ave I\b", r"\1as {a}"), (r"\b([Aa])m I\b", "is {a}"),
    (r"\bI'm\b", "{a} is"), (r"\bI've\b", "{a} has"), (r"\bI'd\b", "{a} would"), (r"\bI'll\b", "{a} will"),
    (r"\bI am\b", "{a} is"), (r"\bI have\b", "{a} has"), (r"\bI do\b", "{a} does"),
    (r"\b([Dd])o you\b", r"\1o {b}"), (r"\b[Yy]ou're\b", "{b} is"), (r"\b[Yy]ou've\b", "{b} has"),
    (r"\b[Mm]yself\b", "{a}"), (r"\b[Mm]y\b", "{a}'s"), (r"\b[Mm]ine\b", "{a}'s"), (r"\b[Mm]e\b", "{a}"),
    (r"\bI\b", "{a}"), (r"\b[Oo]ur\b", "{a}'s"), (r"\b[Ww]e\b", "{a}"), (r"\b[Uu]s\b", "{a}"),
    (r"\b[Yy]ours\b", "{b}'s"), (r"\b[Yy]our\b", "{b}'s"), (r"\b[Yy]ourself\b", "{b}"), (r"\b[Yy]ou\b", "{b}"),
))


def name_speakers(example: RerankExample, rng: random.Random, names: Sequence[str] = NAMES) -> RerankExample:
    """The list of an assistant chat told as a chat between two named people, or ``example`` unchanged.

    A list whose memories all start with ``"user: "`` or ``"assistant: "`` (:data:`ROLE_SPEAKERS`) gets
    two distinct names drawn from ``names``: each memory's speaker prefix becomes the name, and the
    question's first person (``I``, ``my``, ``do I``, ...) becomes the user's name and its second person
    the assistant's. So a reranker trained on first-person questions about a user also meets questions
    that name the speaker, as in chats between people; the memories' own text keeps its first person,
    as such chats do. Lists of named speakers are returned as they are.

    Example:
        >>> ex = RerankExample(query="What time do I wake up on my days off?",
        ...                    docs=["user: I wake up at 6.", "assistant: Early!"], gold=[True, False])
        >>> out = name_speakers(ex, random.Random(0), names=("Maya", "Leo"))
        >>> out.query in ("What time does Maya wake up on Maya's days off?", "What time does Leo wake up on Leo's days off?")
        True
        >>> out.docs[0].split(": ")[0] in ("Maya", "Leo"), out.gold
        (True, [True, False])
    """
    if not is_role_list(example):
        return example
    a, b = rng.sample(list(names), 2)
    query = example.query
    for pattern, repl in _PERSON:
        query = pattern.sub(repl.format(a=a, b=b), query)
    rename = dict(zip(ROLE_SPEAKERS, (a, b), strict=True))
    docs = [f"{rename[speaker]}: {text}" for speaker, _, text in (d.partition(": ") for d in example.docs)]
    return RerankExample(query=query, docs=docs, gold=list(example.gold), prior=example.prior)


def is_role_list(example: RerankExample) -> bool:
    """Whether every memory of ``example`` is an assistant chat's turn (``"user: "`` / ``"assistant: "``).

    Example:
        >>> is_role_list(RerankExample(query="q", docs=["user: hi", "assistant: hello"], gold=[True, False]))
        True
        >>> is_role_list(RerankExample(query="q", docs=["Maya: hi", "Leo: hello"], gold=[True, False]))
        False
    """
    return bool(example.docs) and all(d.startswith(_ROLE_PREFIXES) for d in example.docs)


def same_role(example: RerankExample, depth: int) -> RerankExample:
    """An assistant chat's list told within its gold's role: only the memories whose speaker (``user`` or
    ``assistant``) is one of the gold memories' speakers, the first ``depth`` of them in the list's order,
    plus any gold after those.

    In LongMemEval the gold turns are nearly all the user's while most of the fused top 10 is the
    assistant's, so a cross-encoder trained on its lists can learn the role ("the user said it") instead of
    what a turn says; chats between two people have no roles to learn. Within one role a list teaches only
    relevance. Pass a list read deeper than ``depth`` (:data:`SAME_ROLE_REACH`) so that enough candidates
    of the role remain. A list that is not an assistant chat's (:func:`is_role_list`), or holds no gold, is
    returned as it is.

    Example:
        >>> ex = RerankExample(query="Where do I work?", gold=[False, True, False, False, False],
        ...                    docs=["assistant: Great!", "user: I work at a bakery.", "user: I like tea.",
        ...                          "assistant: Tea is nice.", "user: I bake."])
        >>> same_role(ex, depth=2).docs
        ['user: I work at a bakery.', 'user: I like tea.']
        >>> same_role(ex, depth=1).gold
        [True]
    """
    if not is_role_list(example) or not example.n_gold:
        return example
    roles = {d.partition(": ")[0] for d, g in zip(example.docs, example.gold, strict=True) if g}
    keep = [i for i, d in enumerate(example.docs) if d.partition(": ")[0] in roles]
    keep = keep[:depth] + [i for i in keep[depth:] if example.gold[i]]
    prior = None if example.prior is None else [example.prior[i] for i in keep]
    return RerankExample(query=example.query, docs=[example.docs[i] for i in keep],
                         gold=[bool(example.gold[i]) for i in keep], prior=prior)
