"""What batching short texts through the per-item int8 graph gains, and a check that it moves no vector.

Two parts, both on the default int8 MiniLM embedder (ONNX Runtime, one-thread sessions):

1. ``lengths``: for token counts 4 to 96, the cost per text of the per-call graph run on one text
   against the per-item graph (``runtime.quantize_per_item``) run on a batch of one length (random
   token ids, one thread; the fastest of three alternating rounds). This is what ``embeddings.INT8_BATCH_MAX_TOKENS`` was read from.
2. ``locomo``: LoCoMo's 10 conversations ingested into an ephemeral ``CogMemory`` (graph on); its
   turns (one ``embed_array`` call per conversation, as ``add_turns`` makes) and its graphs' node
   texts (one call) embedded with the shipped rule (``int8_calls``) and with every text on its own;
   prints both times and whether every vector is bit for bit the same.

    python benchmarks/int8_batches.py            # both parts, about two minutes on 2 cores
    python benchmarks/int8_batches.py lengths
"""

from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def lengths() -> None:
    from langmem_cog.embeddings import resolve_embedder

    enc = resolve_embedder("minilm", precision="int8")._onnx_encoder()
    one, items = enc._session(1), enc._items_session()
    rng = np.random.default_rng(0)

    def feeds(b: int, n: int) -> dict[str, np.ndarray]:
        x = rng.integers(1000, 2000, size=(b, n)).astype(np.int64)
        return {"input_ids": x, "attention_mask": np.ones_like(x)}

    def per_text(session: object, f: dict[str, np.ndarray], reps: int) -> float:
        for _ in range(2):
            session.run(None, f)  # type: ignore[attr-defined]
        t = time.perf_counter()
        for _ in range(reps):
            session.run(None, f)  # type: ignore[attr-defined]
        return (time.perf_counter() - t) / reps / len(f["input_ids"]) * 1000

    print("tokens  alone ms/text  batch ms/text (batch size)  batch/alone")
    for n in (4, 8, 12, 16, 24, 32, 48, 64, 96):
        b = max(2, min(128, 2048 // n))
        f1, fb = feeds(1, n), feeds(b, n)
        rounds = [(per_text(one, f1, max(20, 400 // n)), per_text(items, fb, max(3, 400 // n // b))) for _ in range(3)]
        alone, batch = min(r[0] for r in rounds), min(r[1] for r in rounds)  # the least disturbed of 3 rounds
        print(f"{n:6d}  {alone:13.2f}  {batch:13.2f} ({b:3d})        {batch / alone:.2f}")


def locomo(data: Path) -> None:
    import langmem_cog.embeddings as E
    from langmem_cog import CogMemConfig, CogMemory
    from langmem_cog.graph.operators import node_text
    from langmem_cog.loaders import locomo_turns, read_json

    mem = CogMemory(CogMemConfig.preset("ephemeral"))
    convs = [locomo_turns(rec, namespace=f"c{i}") for i, rec in enumerate(read_json(data))]
    for turns in convs:
        mem.add_turns(turns)
    nodes: list[str] = []
    for i in range(len(convs)):
        G = mem.graph(f"c{i}")
        nodes.extend(node_text(G, n) for n in G.nodes)
    nodes = list(dict.fromkeys(nodes))
    calls = [[t.memory_text for t in turns] for turns in convs] + [nodes]
    emb = E.resolve_embedder("minilm", precision="int8")  # no cache in front of it
    emb.embed_array(["warm up", "the sessions"])
    shipped = E.int8_calls
    out = {}
    for name, rule in (("one per call", functools.partial(shipped, max_tokens=0)), ("shipped rule", shipped)):
        E.int8_calls = rule
        try:
            t = time.perf_counter()
            turn_vecs = [emb.embed_array(c) for c in calls[:-1]]
            t_turns = time.perf_counter() - t
            t = time.perf_counter()
            node_vecs = emb.embed_array(calls[-1])
            t_nodes = time.perf_counter() - t
        finally:
            E.int8_calls = shipped
        out[name] = turn_vecs + [node_vecs]
        print(f"{name}: {sum(map(len, calls[:-1]))} turns {t_turns:.2f} s, {len(nodes)} node texts {t_nodes:.2f} s")
    same = all(np.array_equal(a, b) for a, b in zip(out["one per call"], out["shipped rule"], strict=True))
    print(f"every vector bit for bit the same: {same}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", nargs="?", choices=("lengths", "locomo", "all"), default="all")
    ap.add_argument("--data", type=Path, default=DATA / "locomo" / "locomo10.json")
    args = ap.parse_args()
    if args.part in ("lengths", "all"):
        lengths()
    if args.part in ("locomo", "all"):
        locomo(args.data)


if __name__ == "__main__":
    main()
