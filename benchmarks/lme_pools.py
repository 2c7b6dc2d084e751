"""Build LongMemEval-S labelled pools in slices (one process per core), then merge them.

``langmem-cog train-models`` builds the LongMemEval pools itself, one question after another
(each haystack ingested through ``CogMemory.add_turns`` into a fresh namespace, then
``Cascade.candidates`` at the question's date). On a 2-core machine that is hours for all 233 dev
questions, mostly turn embedding. This script runs the same :func:`collect_lme_pools` code on a slice of
the question order, appends each pool to a stream file as soon as it is built (a stopped run resumes
where it stopped), and ``--merge`` writes the one pool cache that ``train-models --pool-cache-dir``
and ``bench transfer --pool-cache`` read::

    python benchmarks/lme_pools.py --start 56 --stop 145 --out ~/.cache/lmc-dev/lme-a.stream --no-context &
    python benchmarks/lme_pools.py --start 145 --stop 233 --out ~/.cache/lmc-dev/lme-b.stream --no-context &
    wait
    python benchmarks/lme_pools.py --merge ~/.cache/lmc-dev/longmemeval-pools.pkl \\
        --base ~/.cache/lmc-dev/longmemeval-pools-56.pkl ~/.cache/lmc-dev/lme-a.stream ~/.cache/lmc-dev/lme-b.stream

``--no-context`` skips the context vectors (one more embedding per turn): the shipped recipe's fusion
prior gives the context features no weight, so its rankings are the same without them.
"""

from __future__ import annotations

import argparse
import logging
import pickle
import sys
from pathlib import Path

from langmem_cog.bench.cascade import load_pool_cache
from langmem_cog.bench.longmemeval import LmeSelection
from langmem_cog.bench.pools import LME_POOL_MAX_TOKENS, PoolSet, QueryPool, collect_lme_pools
from langmem_cog.config import CogMemConfig
from langmem_cog.embeddings import PRECISIONS, CachedEmbeddings, config_embedder

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "longmemeval" / "longmemeval_s_dev.json.gz"


def read_stream(path: Path) -> list[QueryPool]:
    """The pools appended to a stream file (a cut-off last record is ignored)."""
    out: list[QueryPool] = []
    if not path.exists():
        return out
    with path.open("rb") as fh:
        while True:
            try:
                out.append(pickle.load(fh))  # noqa: S301 - our own file
            except EOFError:
                break
            except pickle.UnpicklingError:
                logging.warning("%s: a cut-off record at the end was ignored", path)
                break
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--stop", type=int, default=None)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--no-context", action="store_true")
    ap.add_argument("--embed-precision", choices=list(PRECISIONS), default="auto",
                    help="the embedder's arithmetic (CogMemConfig.embed_precision)")
    ap.add_argument("--merge", type=Path, help="write the merged pool cache here")
    ap.add_argument("--base", type=Path, help="with --merge: a pool cache whose questions come first")
    ap.add_argument("--embedder", default="", help="with --merge: the embedder the streams were built with "
                    "(recorded in the cache, e.g. 'minilm int8')")
    ap.add_argument("streams", nargs="*", type=Path)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.merge:
        ps = load_pool_cache(args.base) if args.base else PoolSet()
        ps.embedder = args.embedder or ps.embedder
        for stream in args.streams:
            for qp in read_stream(stream):
                if qp.sample_id not in ps.by_sample:  # a question in two files counts once
                    ps.by_sample[qp.sample_id] = [qp]
                    ps.n_turns += len(qp.pool.turns)
        args.merge.parent.mkdir(parents=True, exist_ok=True)
        with args.merge.open("wb") as fh:
            pickle.dump(ps, fh)
        print(f"{args.merge}: {len(ps.by_sample)} questions")
        return 0
    if args.out is None:
        ap.error("--out is required unless --merge")
    done = {qp.sample_id for qp in read_stream(args.out)}
    cfg = CogMemConfig.preset("ephemeral", embed_precision=args.embed_precision)
    emb = CachedEmbeddings(config_embedder(cfg, max_seq_length=LME_POOL_MAX_TOKENS))

    def save(qp: QueryPool) -> None:
        with args.out.open("ab") as fh:
            pickle.dump(qp, fh)

    ps = collect_lme_pools(args.data, cfg, progress=lambda it, _d, _n: it,
                           selection=LmeSelection(limit=args.stop, start=args.start, skip=done), embeddings=emb,
                           context=not args.no_context, on_pool=save)
    print(f"{args.out}: {len(ps.by_sample)} new questions, {len(done)} already there, ingest {ps.ingest_s:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
