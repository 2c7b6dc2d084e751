"""The published LoCoMo retrieval protocol, as pure functions.

The protocol (ConvMemory, arXiv 2606.10842, and its v1 report; see
``shared/data/README.md``) runs on the official, unpatched ``locomo10.json``:

* a memory is one turn; the candidate pool of a question is every turn of its
  own conversation;
* gold = the question's evidence ids that are real turn ids of that
  conversation (:func:`clean_evidence`); questions left with no gold are dropped
  (1,977 of 1,986 remain, all 5 categories);
* 5 seeds (:data:`SEEDS`): sort the 10 sample ids, shuffle them with
  ``random.Random(seed)``, first 5 = train, last 5 = test
  (:func:`split_conversations`); test rows per seed 938 / 1135 / 937 / 990 / 955;
* MRR = 1/rank of the first gold over the whole ranked list (0 if absent);
  H@1 and Hit@10 = any gold in the top k; R@10 = fraction of the gold ids in the
  top 10 (:func:`row_metrics`);
* report the mean and the sample std over the 5 per-seed means
  (:func:`summarize`).

Nothing here reads files, prints or draws random numbers outside the seeded
split; loading the data and ranking the candidates belong to the caller.

Example:
    >>> record = {
    ...     "sample_id": "conv-x",
    ...     "conversation": {"session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"},
    ...                                    {"speaker": "B", "dia_id": "D1:2", "text": "yo"}]},
    ...     "qa": [{"question": "Who said yo?", "answer": "B", "evidence": ["D1:2"], "category": 4},
    ...            {"question": "Lost?", "answer": "?", "evidence": ["D9:9"], "category": 1}],
    ... }
    >>> [q["qa_index"] for q in locomo_questions(record)]
    [0]
    >>> row_metrics(["D1:1", "D1:2"], ["D1:2"])["mrr"]
    0.5
"""

from __future__ import annotations

import math
import random
import re
import statistics
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from langmem_cog.errors import InvalidInputError

__all__ = [
    "SEEDS",
    "METRICS",
    "split_conversations",
    "clean_evidence",
    "conversation_turn_ids",
    "locomo_questions",
    "row_metrics",
    "summarize",
    "percentiles",
]

#: The five split seeds of the published protocol.
SEEDS: tuple[int, ...] = (7, 11, 23, 31, 47)

#: The per-row metrics averaged by :func:`summarize`, in report order.
METRICS: tuple[str, ...] = ("mrr", "h1", "r10", "hit10")

_SESSION_KEY = re.compile(r"^session_\d+$")


def split_conversations(sample_ids: Iterable[str], seed: int) -> tuple[list[str], list[str]]:
    """Split conversation ids into train and test halves for one seed.

    The ids are sorted, shuffled with ``random.Random(seed)``, and cut in the
    middle: the first ``len // 2`` ids are train, the rest test (5 / 5 for the
    10 LoCoMo conversations; with an odd count the test half gets the extra id).

    Args:
        sample_ids: The conversation ids (e.g. LoCoMo ``sample_id`` values), any order.
        seed: The split seed, normally one of :data:`SEEDS`.

    Returns:
        ``(train_ids, test_ids)``, two disjoint lists in shuffled order.

    Raises:
        InvalidInputError: If an id is not a string or appears twice.

    Example:
        >>> train, test = split_conversations(["c", "a", "d", "b"], seed=7)
        >>> sorted(train + test)
        ['a', 'b', 'c', 'd']
        >>> len(train), len(test), set(train) & set(test)
        (2, 2, set())
    """
    ids = list(sample_ids)
    for sample_id in ids:
        if not isinstance(sample_id, str):
            raise InvalidInputError(
                f"sample ids must be strings, got {sample_id!r} ({type(sample_id).__name__})"
            )
    if len(set(ids)) != len(ids):
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        raise InvalidInputError(f"duplicate sample ids {duplicates}: pass each conversation once")
    ids.sort()
    random.Random(seed).shuffle(ids)
    half = len(ids) // 2
    return ids[:half], ids[half:]


def clean_evidence(evidence: Any, valid_ids: Collection[str]) -> list[str]:
    """Return the gold turn ids of a question: its evidence ids that are real turn ids.

    Rule (exact match, no repair): an evidence item is gold if and only if it is
    a string that is *exactly* one of ``valid_ids`` (the turn ids of the
    question's own conversation). Nothing is split, stripped or normalised;
    malformed items are dropped as a whole, duplicates are removed keeping the
    first occurrence, and non-string or unhashable items are ignored.

    This is the only rule checked that reproduces the published figures on the
    official ``locomo10.json``: 1,977 of 1,986 questions keep a gold id, and the
    test rows per seed 7 / 11 / 23 / 31 / 47 are 938 / 1135 / 937 / 990 / 955
    (4,955 in all). The malformed items all name real turns once repaired
    (``"D8:6; D9:17"`` in conv-26, ``"D:11:26"`` in conv-43, ``"D30:05"`` in
    conv-50, and the space-separated lists in conv-49), so repairing changes
    the counts: splitting on ``;``/whitespace gives 1,981 questions
    (939 / 1138 / 938 / 991 / 955), splitting plus fixing ``D:11:26`` and
    ``D30:05`` gives 1,982 (940 / 1139 / 939 / 991 / 955), splitting on ``;``
    alone gives 1,978 (939 / 1135 / 938 / 991 / 955). The 9 dropped questions
    are the 4 with empty evidence, the 3 conv-49 questions whose only item is a
    space-separated list, ``"D8:6; D9:17"`` and ``"D30:05"``.

    Args:
        evidence: The question's ``evidence`` value, normally a list of strings.
            ``None`` or a non-iterable gives ``[]``; a lone string is taken as one id.
        valid_ids: The turn ids (``dia_id``) of the question's conversation.

    Returns:
        The gold ids, in evidence order, without duplicates (possibly empty).

    Example:
        >>> valid = {"D1:3", "D8:6", "D9:17", "D11:26", "D30:5"}
        >>> clean_evidence(["D1:3", "D8:6; D9:17", "D:11:26", "D30:05", "D1:3", 7, None], valid)
        ['D1:3']
        >>> clean_evidence(None, valid)
        []
    """
    if evidence is None:
        return []
    if isinstance(evidence, str):
        items: Iterable[Any] = [evidence]
    else:
        try:
            items = list(evidence)
        except TypeError:
            return []
    gold: list[str] = []
    seen: set[str] = set()
    for item in items:
        if not isinstance(item, str) or item in seen:
            continue
        try:
            real = item in valid_ids
        except TypeError:
            real = False
        if real:
            seen.add(item)
            gold.append(item)
    return gold


def conversation_turn_ids(conversation_record: Mapping[str, Any]) -> list[str]:
    """Return the turn ids of one LoCoMo conversation record, in session and turn order.

    Turns are read from the ``conversation["session_N"]`` lists; date keys,
    speaker keys and empty sessions are skipped, as are turns without a string
    ``dia_id``.

    Args:
        conversation_record: One element of ``locomo10.json``.

    Returns:
        The ``dia_id`` of every turn (5,882 over the 10 conversations).

    Raises:
        InvalidInputError: If the record has no ``conversation`` mapping.

    Example:
        >>> conversation_turn_ids({"conversation": {
        ...     "session_2": [{"dia_id": "D2:1"}], "session_2_date_time": "x",
        ...     "session_1": [{"dia_id": "D1:1"}, {"dia_id": "D1:2"}]}})
        ['D1:1', 'D1:2', 'D2:1']
    """
    if not isinstance(conversation_record, Mapping):
        raise InvalidInputError(
            f"a LoCoMo record must be a mapping, got {type(conversation_record).__name__}"
        )
    conversation = conversation_record.get("conversation")
    if not isinstance(conversation, Mapping):
        raise InvalidInputError(
            f"LoCoMo record {conversation_record.get('sample_id')!r} has no 'conversation' mapping"
        )
    sessions = sorted(
        (int(key.split("_")[1]), value)
        for key, value in conversation.items()
        if isinstance(key, str) and _SESSION_KEY.match(key) and isinstance(value, list)
    )
    ids: list[str] = []
    for _, turns in sessions:
        for turn in turns:
            if isinstance(turn, Mapping) and isinstance(turn.get("dia_id"), str):
                ids.append(turn["dia_id"])
    return ids


def locomo_questions(conversation_record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Return the kept questions of one LoCoMo conversation record.

    A question is kept when :func:`clean_evidence` leaves it at least one gold id
    among the record's own turn ids (1,977 of the 1,986 questions of the file).

    Args:
        conversation_record: One element of ``locomo10.json`` (``sample_id``,
            ``conversation``, ``qa``, ...).

    Returns:
        One dict per kept question, in ``qa`` order:
        ``{"qa_index": int, "question": str, "category": int, "gold": list[str]}``,
        where ``qa_index`` is the question's index in the record's ``qa`` list.

    Raises:
        InvalidInputError: If the record lacks a ``conversation`` mapping or a ``qa`` list.

    Example:
        >>> record = {"conversation": {"session_1": [{"dia_id": "D1:1"}]},
        ...           "qa": [{"question": "q?", "evidence": ["D1:1", "D1:1"], "category": 2},
        ...                  {"question": "none", "evidence": [], "category": 5}]}
        >>> locomo_questions(record)
        [{'qa_index': 0, 'question': 'q?', 'category': 2, 'gold': ['D1:1']}]
    """
    valid_ids = set(conversation_turn_ids(conversation_record))
    qa = conversation_record.get("qa")
    if not isinstance(qa, list):
        raise InvalidInputError(
            f"LoCoMo record {conversation_record.get('sample_id')!r} has no 'qa' list"
        )
    kept: list[dict[str, Any]] = []
    for index, item in enumerate(qa):
        if not isinstance(item, Mapping):
            continue
        gold = clean_evidence(item.get("evidence"), valid_ids)
        if gold:
            kept.append(
                {
                    "qa_index": index,
                    "question": item.get("question"),
                    "category": item.get("category"),
                    "gold": gold,
                }
            )
    return kept


def row_metrics(ranked_ids: Sequence[str], gold: Iterable[str]) -> dict[str, Any]:
    """Score one ranked candidate list against a question's gold ids.

    Args:
        ranked_ids: Candidate turn ids, best first (the whole ranked pool).
        gold: The question's gold ids (duplicates are ignored).

    Returns:
        ``{"rank", "mrr", "h1", "hit10", "r10"}``: ``rank`` is the 1-based rank
        of the first gold id (``None`` if no gold id is ranked), ``mrr`` is
        ``1 / rank`` (0.0 if absent), ``h1`` and ``hit10`` are 1.0 if any gold id
        is in the top 1 / top 10 else 0.0, and ``r10`` is the fraction of the
        distinct gold ids found in the top 10.

    Raises:
        InvalidInputError: If ``gold`` is empty (such questions are dropped by the protocol).

    Example:
        >>> row_metrics(["a", "b", "c"], ["c", "x"])
        {'rank': 3, 'mrr': 0.3333333333333333, 'h1': 0.0, 'hit10': 1.0, 'r10': 0.5}
        >>> row_metrics(["a"], ["z"])["rank"] is None
        True
    """
    gold_set = set(gold)
    if not gold_set:
        raise InvalidInputError("gold is empty: questions without a gold id are not scored")
    rank: int | None = None
    for position, candidate in enumerate(ranked_ids, start=1):
        if candidate in gold_set:
            rank = position
            break
    top10 = set(ranked_ids[:10])
    return {
        "rank": rank,
        "mrr": 0.0 if rank is None else 1.0 / rank,
        "h1": 1.0 if rank == 1 else 0.0,
        "hit10": 1.0 if rank is not None and rank <= 10 else 0.0,
        "r10": len(gold_set & top10) / len(gold_set),
    }


def _sorted_keys(keys: Iterable[Any]) -> list[Any]:
    keys = list(keys)
    try:
        return sorted(keys)
    except TypeError:
        return sorted(keys, key=repr)


def _mean_metrics(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    return {m: math.fsum(float(r[m]) for r in rows) / len(rows) for m in METRICS}


def summarize(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Aggregate scored rows the way the protocol reports them.

    Every metric is first averaged within each seed; ``full`` is the mean of
    those per-seed means and ``std`` their sample standard deviation (ddof=1;
    0.0 with a single seed). ``per_category`` averages, over the seeds that
    have rows of the category, that category's per-seed means. Nothing is rounded.

    Args:
        rows: Dicts with at least ``seed``, ``category``, ``mrr``, ``h1``,
            ``r10`` and ``hit10`` (e.g. :func:`row_metrics` output plus keys).

    Returns:
        ``{"n_rows": int, "full": {metric: float}, "std": {metric: float},
        "per_seed": {str(seed): {metric: float, "n": int}},
        "per_category": {str(category): {metric: float, "n": int}}}``
        with metrics ``mrr``, ``h1``, ``r10``, ``hit10``; ``n`` counts rows.

    Raises:
        InvalidInputError: If there are no rows, or a row lacks a required key.

    Example:
        >>> rows = [{"seed": 7, "category": 1, "mrr": 1.0, "h1": 1.0, "r10": 1.0, "hit10": 1.0},
        ...         {"seed": 11, "category": 1, "mrr": 0.5, "h1": 0.0, "r10": 1.0, "hit10": 1.0}]
        >>> s = summarize(rows)
        >>> s["full"]["mrr"], s["per_seed"]["11"]["n"], s["per_category"]["1"]["n"]
        (0.75, 1, 2)
    """
    rows = list(rows)
    if not rows:
        raise InvalidInputError("summarize() needs at least one row")
    required = ("seed", "category", *METRICS)
    by_seed: dict[Any, list[Mapping[str, Any]]] = defaultdict(list)
    for index, row in enumerate(rows):
        missing = [k for k in required if k not in row]
        if missing:
            raise InvalidInputError(f"row {index} lacks the keys {missing}")
        by_seed[row["seed"]].append(row)

    seeds = _sorted_keys(by_seed)
    seed_means = {seed: _mean_metrics(by_seed[seed]) for seed in seeds}
    full = {m: math.fsum(seed_means[s][m] for s in seeds) / len(seeds) for m in METRICS}
    if len(seeds) > 1:
        std = {m: statistics.stdev(seed_means[s][m] for s in seeds) for m in METRICS}
    else:
        std = {m: 0.0 for m in METRICS}
    per_seed = {str(s): {**seed_means[s], "n": len(by_seed[s])} for s in seeds}

    by_category: dict[Any, dict[Any, list[Mapping[str, Any]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for row in rows:
        by_category[row["category"]][row["seed"]].append(row)
    per_category: dict[str, dict[str, Any]] = {}
    for category in _sorted_keys(by_category):
        cat_seeds = by_category[category]
        means = [_mean_metrics(cat_seeds[s]) for s in _sorted_keys(cat_seeds)]
        per_category[str(category)] = {
            **{m: math.fsum(x[m] for x in means) / len(means) for m in METRICS},
            "n": sum(len(v) for v in cat_seeds.values()),
        }
    return {
        "n_rows": len(rows),
        "full": full,
        "std": std,
        "per_seed": per_seed,
        "per_category": per_category,
    }


def percentiles(values: Iterable[float], qs: Iterable[float] = (50, 95)) -> dict[str, float]:
    """Return percentiles of ``values`` (e.g. latencies) by linear interpolation.

    Uses the same definition as ``numpy.percentile``'s default ("linear").

    Args:
        values: The sample, non-empty.
        qs: Percentiles in [0, 100].

    Returns:
        ``{"p50": ..., "p95": ...}``, one key ``f"p{q:g}"`` per requested ``q``.

    Raises:
        InvalidInputError: If ``values`` is empty or a ``q`` is outside [0, 100].

    Example:
        >>> percentiles([1, 2, 3, 4, 5])
        {'p50': 3.0, 'p95': 4.8}
        >>> percentiles([10.0], qs=(99.9,))
        {'p99.9': 10.0}
    """
    data = sorted(float(v) for v in values)
    if not data:
        raise InvalidInputError("percentiles() needs at least one value")
    result: dict[str, float] = {}
    for q in qs:
        if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 <= q <= 100:
            raise InvalidInputError(f"percentile {q!r} is not a number in [0, 100]")
        position = (len(data) - 1) * q / 100
        low = math.floor(position)
        high = min(low + 1, len(data) - 1)
        fraction = position - low
        result[f"p{q:g}"] = data[low] + (data[high] - data[low]) * fraction
    return result
