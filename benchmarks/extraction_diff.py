"""How many rule extractions a change to the rule extractor moves, over LoCoMo and LongMemEval-S dev.

Run it once per version of the code (each writes one hash per turn: the turn's extraction,
serialised as the graph journal stores it), then compare the two files::

    python benchmarks/extraction_diff.py hash before.pkl          # on the old commit
    python benchmarks/extraction_diff.py hash after.pkl           # on the new one
    python benchmarks/extraction_diff.py compare before.pkl after.pkl

``compare`` prints how many extractions differ, per dataset, and the keys ``(dataset, index,
turn id)`` of those that do. About three minutes a run on one core.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
from collections import Counter
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def hash_all(locomo: Path, longmemeval: Path) -> dict[tuple[str, int, str], str]:
    """A hash of every turn's rule extraction: LoCoMo conversations, then scorable haystacks."""
    from langmem_cog.graph.rules import RuleExtractor
    from langmem_cog.graph.store import _encode
    from langmem_cog.loaders import load_longmemeval, locomo_turns, read_json

    def digest(e: object) -> str:
        return hashlib.sha256(json.dumps(_encode(e), sort_keys=True, default=str).encode()).hexdigest()

    out: dict[tuple[str, int, str], str] = {}
    for i, rec in enumerate(read_json(locomo)):
        for e in RuleExtractor().extract(locomo_turns(rec, namespace=f"n{i}")):
            out[("locomo", i, e.turn_id)] = digest(e)
    scorable = [q for q in load_longmemeval(longmemeval) if q.gold_turn_ids]
    for j, q in enumerate(scorable):
        for e in RuleExtractor().extract(q.turns):
            out[("longmemeval", j, e.turn_id)] = digest(e)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("hash", help="hash every extraction of this code into OUT")
    h.add_argument("out", type=Path)
    h.add_argument("--locomo", type=Path, default=DATA / "locomo" / "locomo10.json")
    h.add_argument("--longmemeval", type=Path, default=DATA / "longmemeval" / "longmemeval_s_dev.json.gz")
    c = sub.add_parser("compare", help="count the extractions that differ between two hash files")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = ap.parse_args()
    if args.cmd == "hash":
        hashes = hash_all(args.locomo, args.longmemeval)
        with args.out.open("wb") as f:
            pickle.dump(hashes, f)
        print(f"{len(hashes)} extractions hashed into {args.out}")
        return
    with args.before.open("rb") as f:
        before = pickle.load(f)  # noqa: S301 - files this script wrote
    with args.after.open("rb") as f:
        after = pickle.load(f)  # noqa: S301
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    print(f"{len(changed)} of {len(before)} extractions differ: {dict(Counter(k[0] for k in changed))}")
    for key in changed:
        print(" ", key)


if __name__ == "__main__":
    main()
