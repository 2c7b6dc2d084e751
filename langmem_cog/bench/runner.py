"""What every benchmark run shares: progress, seed splits, rows, summaries, namespaces, outputs.

The LoCoMo, cascade, LongMemEval, transfer, latency, ingest and scale runners (and the scripts in
``benchmarks/``) build on these, so a row, a summary or a split means the same thing in each.

Example:
    >>> info = RunInfo(system="hybrid", embedder="minilm", data="x.json", split="all", seeds=(7,))
    >>> q = {"qa_index": 0, "question": "q?", "category": 1, "gold": ["D1:2"]}
    >>> r = row(0, "conv-x", q, ["D1:1", "D1:2"])
    >>> r["mrr"], run_summary(info, [r], [], 2, 1.0, {})["seeds"]
    (0.5, [0])
    >>> namespacer("run1")("conv 26")
    'locomo.run1.conv_26'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langmem_cog.bench.protocol import percentiles, row_metrics, split_conversations, summarize

__all__ = ["Progress", "no_progress", "RunInfo", "LocomoRun", "default_locomo_path", "splits", "row", "run_summary",
           "namespacer", "write_outputs"]

#: A progress wrapper: ``progress(iterable, description, total)`` yields the iterable's items.
Progress = Callable[[Iterable[Any], str, int], Iterable[Any]]


def no_progress(it: Iterable[Any], desc: str, total: int) -> Iterable[Any]:
    """The silent :data:`Progress` (the default of every runner)."""
    return it


@dataclass(frozen=True)
class RunInfo:
    """What a run scored: its system, embedder, data file, split and seeds (the summary's header)."""

    system: str
    embedder: str
    data: str | Path
    split: str
    seeds: Sequence[int]


@dataclass
class LocomoRun:
    """The outputs of one benchmark run."""

    summary: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)
    input_rows: list[dict[str, Any]] = field(default_factory=list)  # a compressor's input ranking


def default_locomo_path(start: Path | None = None) -> Path | None:
    """``../shared/data/locomo/locomo10.json`` relative to the project root or the working directory."""
    candidates = [Path.cwd() / ".." / "shared/data/locomo/locomo10.json"]
    here = Path(__file__).resolve()
    candidates += [p / "shared/data/locomo/locomo10.json" for p in here.parents]
    for c in candidates:
        if c.exists():
            return c.resolve()
    return None


def splits(by_id: Iterable[str], seeds: Sequence[int], split: str) -> list[tuple[int, list[str], list[str]]]:
    """``(seed, train, test)`` per seed, or one pseudo-seed 0 with every conversation as test (``split="all"``)."""
    if split == "seeds":
        return [(s, *split_conversations(by_id, s)) for s in seeds]
    return [(0, [], sorted(by_id))]


def row(seed: int, sid: str, q: dict[str, Any], ranked: list[str], **extra: Any) -> dict[str, Any]:
    """One rows-file entry: the question, its gold, the top 50 ids and the metrics."""
    return {
        "seed": seed,
        "sample_id": sid,
        "qa_index": q["qa_index"],
        "question": q["question"],
        "category": q["category"],
        "gold": q["gold"],
        "ranked_ids": ranked[:50],
        **extra,
        **row_metrics(ranked, q["gold"]),
    }


def run_summary(info: RunInfo, rows: list[dict[str, Any]], latencies: list[float], n_turns: int, ingest_s: float,
                params: dict[str, Any]) -> dict[str, Any]:
    """The summary dict of a run (keys of the published report plus speed and parameters)."""
    summary = summarize(rows)
    return {
        "system": info.system,
        "embedder": info.embedder,
        "data": str(info.data),
        "split": info.split,
        "seeds": list(info.seeds) if info.split == "seeds" else [0],
        "n_rows": summary["n_rows"],
        "full": summary["full"],
        "std": summary["std"],
        "per_seed": summary["per_seed"],
        "per_category": summary["per_category"],
        "latency_ms": percentiles(latencies) if latencies else {"p50": 0.0, "p95": 0.0},
        "ingest_turns_per_s": n_turns / ingest_s if ingest_s > 0 else float("inf"),
        "n_turns": n_turns,
        "params": params,
    }


def namespacer(run_id: str) -> Callable[[str], str]:
    """Namespaces of one run's conversations (``locomo.<run>.<sample id, made safe>``): in-memory Chroma clients
    share state within a process, so every run gets its own."""
    def ns(sample_id: str) -> str:
        return f"locomo.{run_id}." + "".join(c if c.isalnum() or c in "_.-" else "_" for c in sample_id)

    return ns


def write_outputs(run: LocomoRun, out: str | Path | None, rows_path: str | Path | None) -> None:
    """Write the summary JSON and the rows JSONL (parent folders are created; a compressor's input ranking goes
    to ``ROWS.input.jsonl`` beside it, for ``bench compare``)."""
    if out:
        p = Path(out)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(run.summary, indent=2) + "\n", encoding="utf-8")
    if rows_path:
        p = Path(rows_path)
        p.parent.mkdir(parents=True, exist_ok=True)
        with p.open("w", encoding="utf-8") as fh:
            for r in run.rows:
                fh.write(json.dumps(r) + "\n")
        if run.input_rows:
            with p.with_name(p.stem + ".input" + p.suffix).open("w", encoding="utf-8") as fh:
                for r in run.input_rows:
                    fh.write(json.dumps(r) + "\n")
