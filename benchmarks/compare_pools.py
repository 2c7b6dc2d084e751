"""Check that the code of this checkout builds the same labelled pools as a cached pool file.

A refactor of the candidate stage (store scores, operator loop, graph signals) must not move a figure;
the cheapest proof is that it rebuilds every pool exactly: the same candidates, raw and context scores,
grounded turns (in order), routes and per-turn records.

    python benchmarks/compare_pools.py ~/.cache/lmc-dev/locomo-pools.pkl            # LoCoMo, ~5 min
    python benchmarks/compare_pools.py OLD.pkl --new NEW.pkl                         # two files
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from langmem_cog.bench.cascade import load_pool_cache
from langmem_cog.bench.pools import collect_pools
from langmem_cog.bench.runner import default_locomo_path
from langmem_cog.config import CogMemConfig


def _same(a, b) -> bool:  # noqa: ANN001 - arrays or None
    if a is None or b is None:
        return a is None and b is None
    return np.array_equal(np.asarray(a), np.asarray(b))


def differences(old, new) -> list[str]:  # noqa: ANN001 - two PoolSets
    out = []
    if set(old.by_sample) != set(new.by_sample):
        return [f"samples differ: {sorted(set(old.by_sample) ^ set(new.by_sample))}"]
    for sid, group in old.by_sample.items():
        for a, b in zip(group, new.by_sample[sid], strict=True):
            where = f"{sid} q{a.question.get('qa_index')}"
            pa, pb = a.pool, b.pool
            if [t.id for t in pa.turns] != [t.id for t in pb.turns]:
                out.append(f"{where}: candidates")
                continue
            for name in ("dense", "lexical", "context", "context_lexical"):
                if not _same(getattr(pa, name), getattr(pb, name)):
                    out.append(f"{where}: {name} scores")
            ga, gb = a.graph, b.graph
            if (ga is None) != (gb is None):
                out.append(f"{where}: graph signals on one side only")
            elif ga is not None:
                for name in ("grounded", "window", "intent"):
                    if list(getattr(ga, name) or ()) != list(getattr(gb, name) or ()):
                        out.append(f"{where}: graph {name}")
                if {k: list(v) for k, v in ga.via_types.items()} != {k: list(v) for k, v in gb.via_types.items()}:
                    out.append(f"{where}: graph via_types")
                if ga.records != gb.records:
                    out.append(f"{where}: graph records")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path, help="a cached LoCoMo pool file (bench --pool-cache / train-models)")
    ap.add_argument("--new", type=Path, help="compare with this file instead of rebuilding the pools here")
    ap.add_argument("--data", type=Path, default=None, help="LoCoMo JSON (default: ../shared/data)")
    args = ap.parse_args(argv)
    old = load_pool_cache(args.old)
    if args.new:
        new = load_pool_cache(args.new)
    else:
        new = collect_pools(args.data or default_locomo_path(), CogMemConfig.preset("ephemeral"), with_graph=True,
                            progress=lambda it, _d, _n: it)
    diffs = differences(old, new)
    n = sum(len(g) for g in old.by_sample.values())
    print(f"{n} pools compared: {len(diffs)} differences")
    for d in diffs[:20]:
        print("  " + d)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
