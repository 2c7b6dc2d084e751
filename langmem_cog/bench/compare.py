"""Paired comparison of two benchmark runs (A = baseline, B = candidate).

Each run is a JSONL file of scored rows, one per (seed, conversation, question),
with at least ``seed``, ``sample_id``, ``qa_index`` and ``rank`` (1-based rank of
the first gold id, ``null`` if no gold id was ranked). :func:`compare_rows`
pairs the rows of the two runs, compares their MRR with a paired bootstrap and
counts, at Hit@10 and H@1, the questions B gains (benefit) and loses (tax).

Example:
    >>> a = [{"seed": 7, "sample_id": "c", "qa_index": i, "rank": r}
    ...      for i, r in enumerate([1, 2, None, 4])]
    >>> b = [{"seed": 7, "sample_id": "c", "qa_index": i, "rank": r}
    ...      for i, r in enumerate([1, 1, 3, 20])]
    >>> result = compare_rows(a, b, resamples=200)
    >>> result.n_pairs, result.mrr_a, round(result.mrr_b, 4)
    (4, 0.4375, 0.5958)
    >>> result.hit10_benefit, result.hit10_tax, result.h1_benefit, result.h1_tax
    (1, 1, 1, 0)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from langmem_cog.checks import positive_int
from langmem_cog.errors import InvalidInputError

__all__ = ["KEY_FIELDS", "ComparisonResult", "load_rows", "compare_rows"]

#: The fields that identify a row across runs.
KEY_FIELDS: tuple[str, str, str] = ("seed", "sample_id", "qa_index")

# Bootstrap resamples are drawn in chunks of at most this many indices (8 MB of int64).
_CHUNK_ELEMENTS = 1 << 20


@dataclass(frozen=True)
class ComparisonResult:
    """The outcome of :func:`compare_rows` (B minus A on the shared rows).

    Attributes:
        n_pairs: Rows present in both runs (the rows compared).
        n_unmatched_a: Rows of A with no partner in B (not compared).
        n_unmatched_b: Rows of B with no partner in A (not compared).
        mrr_a: Mean MRR of A over the paired rows.
        mrr_b: Mean MRR of B over the paired rows.
        diff: ``mrr_b - mrr_a``.
        ci_low: Lower end of the paired-bootstrap percentile interval of ``diff``.
        ci_high: Upper end of that interval.
        confidence: Coverage of the interval (0.95).
        resamples: Number of bootstrap resamples.
        seed: Seed of the bootstrap generator.
        hit10_a: Hit@10 rate of A.
        hit10_b: Hit@10 rate of B.
        hit10_benefit: Rows where B hits at 10 and A misses.
        hit10_tax: Rows where A hits at 10 and B misses.
        hit10_hits_a: Rows where A hits at 10.
        h1_a: H@1 rate of A.
        h1_b: H@1 rate of B.
        h1_benefit: Rows where B ranks a gold id first and A does not.
        h1_tax: Rows where A ranks a gold id first and B does not.
        h1_hits_a: Rows where A ranks a gold id first.
    """

    n_pairs: int
    n_unmatched_a: int
    n_unmatched_b: int
    mrr_a: float
    mrr_b: float
    diff: float
    ci_low: float
    ci_high: float
    confidence: float
    resamples: int
    seed: int
    hit10_a: float
    hit10_b: float
    hit10_benefit: int
    hit10_tax: int
    hit10_hits_a: int
    h1_a: float
    h1_b: float
    h1_benefit: int
    h1_tax: int
    h1_hits_a: int

    @property
    def n_unmatched(self) -> int:
        """Rows of either run left out because the other run lacks them."""
        return self.n_unmatched_a + self.n_unmatched_b

    @property
    def hit10_tax_share(self) -> float:
        """Hit@10 tax as a share of A's Hit@10 hits (0.0 when A has none)."""
        return self.hit10_tax / self.hit10_hits_a if self.hit10_hits_a else 0.0

    @property
    def h1_tax_share(self) -> float:
        """H@1 tax as a share of A's H@1 hits (0.0 when A has none)."""
        return self.h1_tax / self.h1_hits_a if self.h1_hits_a else 0.0

    @property
    def significant(self) -> bool:
        """Whether the bootstrap interval of the MRR difference excludes 0."""
        return self.ci_low > 0.0 or self.ci_high < 0.0

    def format(self, label_a: str = "A", label_b: str = "B") -> str:
        """Return a readable multi-line report.

        Args:
            label_a: Name of the baseline run.
            label_b: Name of the candidate run.

        Returns:
            The report, without a trailing newline.

        Example:
            >>> rows = [{"seed": 7, "sample_id": "c", "qa_index": 0, "rank": 1}]
            >>> print(compare_rows(rows, rows, resamples=10).format().splitlines()[0])
            Paired comparison B - A on 1 shared rows (unmatched: 0 in A, 0 in B)
        """
        pct = round(self.confidence * 100)
        if self.significant:
            better = label_b if self.diff > 0 else label_a
            verdict = f"the {pct}% interval excludes 0: {better} is better"
        else:
            verdict = f"the {pct}% interval contains 0: no significant difference"
        lines = [
            f"Paired comparison {label_b} - {label_a} on {self.n_pairs} shared rows "
            f"(unmatched: {self.n_unmatched_a} in {label_a}, {self.n_unmatched_b} in {label_b})",
            f"MRR     {label_a} {self.mrr_a:.4f}  {label_b} {self.mrr_b:.4f}  "
            f"diff {self.diff:+.4f}  {pct}% CI [{self.ci_low:+.4f}, {self.ci_high:+.4f}] "
            f"({self.resamples} paired bootstrap resamples, seed {self.seed})",
            f"        {verdict}",
            f"Hit@10  {label_a} {self.hit10_a:.4f}  {label_b} {self.hit10_b:.4f}  "
            f"benefit {self.hit10_benefit}  tax {self.hit10_tax} "
            f"({self.hit10_tax_share:.1%} of {label_a}'s {self.hit10_hits_a} hits)",
            f"H@1     {label_a} {self.h1_a:.4f}  {label_b} {self.h1_b:.4f}  "
            f"benefit {self.h1_benefit}  tax {self.h1_tax} "
            f"({self.h1_tax_share:.1%} of {label_a}'s {self.h1_hits_a} hits)",
        ]
        return "\n".join(lines)


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSONL file of rows (one JSON object a line; blank lines skipped).

    Args:
        path: The file to read.

    Returns:
        The rows, in file order.

    Raises:
        FileNotFoundError: If the file does not exist.
        InvalidInputError: If a line is not valid JSON or not a JSON object.
    """
    rows: list[dict[str, Any]] = []
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
            if not isinstance(row, dict):
                raise InvalidInputError(
                    f"{path}:{number}: expected a JSON object, got {type(row).__name__}"
                )
            rows.append(row)
    return rows


def _rank(row: Mapping[str, Any], label: str) -> int | None:
    if "rank" not in row:
        _missing(row, label, "rank")
    rank = row["rank"]
    if rank is None:
        return None
    if isinstance(rank, float) and rank.is_integer():
        rank = int(rank)
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise InvalidInputError(
            f"row {_key(row, label)} of {label} has rank {rank!r}: expected an int >= 1 or null"
        )
    return rank


def _missing(row: Mapping[str, Any], label: str, field: str) -> NoReturn:
    raise InvalidInputError(f"a row of {label} lacks the field {field!r}: {dict(row)!r:.200}")


def _key(row: Mapping[str, Any], label: str) -> tuple[Any, ...]:
    if not isinstance(row, Mapping):
        raise InvalidInputError(f"rows of {label} must be mappings, got {type(row).__name__}")
    for field in KEY_FIELDS:
        if field not in row:
            _missing(row, label, field)
    key = tuple(row[field] for field in KEY_FIELDS)
    try:
        hash(key)
    except TypeError:
        raise InvalidInputError(f"a row of {label} has an unhashable key {key!r}") from None
    return key


def _index(rows: Iterable[Mapping[str, Any]], label: str) -> dict[tuple[Any, ...], int | None]:
    ranks: dict[tuple[Any, ...], int | None] = {}
    duplicates = 0
    for row in rows:
        key = _key(row, label)
        if key in ranks:
            duplicates += 1
        ranks[key] = _rank(row, label)
    if duplicates:
        raise InvalidInputError(
            f"{label} has {duplicates} duplicate rows for the key {KEY_FIELDS}: "
            "each (seed, sample_id, qa_index) must appear once"
        )
    return ranks


def _bootstrap_means(diffs: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = diffs.shape[0]
    chunk = max(1, _CHUNK_ELEMENTS // n)
    means = np.empty(resamples, dtype=np.float64)
    done = 0
    while done < resamples:
        size = min(chunk, resamples - done)
        idx = rng.integers(0, n, size=(size, n))
        means[done : done + size] = diffs[idx].mean(axis=1)
        done += size
    return means


def compare_rows(
    rows_a: Iterable[Mapping[str, Any]],
    rows_b: Iterable[Mapping[str, Any]],
    resamples: int = 10_000,
    seed: int = 0,
) -> ComparisonResult:
    """Compare run B against run A on the rows they share.

    Rows are paired by ``(seed, sample_id, qa_index)``; only shared keys are
    compared, and the rows left without a partner are counted. Each row's MRR
    is ``1 / rank`` (0 if ``rank`` is null), its Hit@10 is ``rank <= 10`` and its
    H@1 ``rank == 1``. The 95% interval of the mean MRR difference is the
    percentile interval of a paired bootstrap: the per-row differences are
    resampled with replacement ``resamples`` times with
    ``numpy.random.default_rng(seed)`` (vectorised, in chunks of about 1M
    indices), so a run is reproducible given the same rows and seed.

    Args:
        rows_a: Rows of the baseline run (see :func:`load_rows`).
        rows_b: Rows of the candidate run.
        resamples: Number of bootstrap resamples, >= 1.
        seed: Seed of the bootstrap generator.

    Returns:
        A :class:`ComparisonResult`; ``format()`` renders it as text.

    Raises:
        InvalidInputError: If a run has duplicate keys, the runs share no key, a
            row lacks a key field or ``rank``, a rank is not an int >= 1 or null,
            or ``resamples`` is not a positive int.

    Example:
        >>> rows = [{"seed": 7, "sample_id": "c", "qa_index": i, "rank": i + 1} for i in range(5)]
        >>> r = compare_rows(rows, rows, resamples=100)
        >>> (r.diff, r.ci_low, r.ci_high, r.hit10_benefit, r.hit10_tax)
        (0.0, 0.0, 0.0, 0, 0)
    """
    resamples = positive_int(resamples, "resamples")
    ranks_a = _index(rows_a, "A")
    ranks_b = _index(rows_b, "B")
    shared = [key for key in ranks_a if key in ranks_b]
    if not shared:
        raise InvalidInputError(
            f"the runs share no (seed, sample_id, qa_index) key "
            f"({len(ranks_a)} rows in A, {len(ranks_b)} rows in B): are they the same benchmark?"
        )

    def arrays(ranks: dict[tuple[Any, ...], int | None]) -> tuple[np.ndarray, ...]:
        values = np.array([ranks[k] or 0 for k in shared], dtype=np.float64)
        found = values > 0
        mrr = np.divide(1.0, values, out=np.zeros_like(values), where=found)
        return mrr, found & (values <= 10), found & (values == 1)

    mrr_a, hit10_a, h1_a = arrays(ranks_a)
    mrr_b, hit10_b, h1_b = arrays(ranks_b)
    means = _bootstrap_means(mrr_b - mrr_a, resamples, seed)
    low, high = np.percentile(means, [2.5, 97.5])
    mean_a = float(mrr_a.mean())
    mean_b = float(mrr_b.mean())
    return ComparisonResult(
        n_pairs=len(shared),
        n_unmatched_a=len(ranks_a) - len(shared),
        n_unmatched_b=len(ranks_b) - len(shared),
        mrr_a=mean_a,
        mrr_b=mean_b,
        diff=mean_b - mean_a,
        ci_low=float(low),
        ci_high=float(high),
        confidence=0.95,
        resamples=resamples,
        seed=seed,
        hit10_a=float(hit10_a.mean()),
        hit10_b=float(hit10_b.mean()),
        hit10_benefit=int(np.count_nonzero(hit10_b & ~hit10_a)),
        hit10_tax=int(np.count_nonzero(hit10_a & ~hit10_b)),
        hit10_hits_a=int(np.count_nonzero(hit10_a)),
        h1_a=float(h1_a.mean()),
        h1_b=float(h1_b.mean()),
        h1_benefit=int(np.count_nonzero(h1_b & ~h1_a)),
        h1_tax=int(np.count_nonzero(h1_a & ~h1_b)),
        h1_hits_a=int(np.count_nonzero(h1_a)),
    )
