"""A subprocess for the crash and two-process tests: ingest (and search) a persistent memory.

Usage: ``python reliability_worker.py DATA_DIR NAMESPACE TOTAL SEED [--search] [--prefix P]``.

It opens a :class:`~langmem_cog.memory.CogMemory` on ``DATA_DIR`` (FakeEmbeddings, the
rule extractor), skips the turns already stored, and adds the rest in batches of 1-3
turns, printing ``ACK <id>,<id>...`` (flushed) after each ``add_turns`` call returns,
then ``DONE``. The test kills it with SIGKILL at a random moment and checks that every
acknowledged id survived. Turn ``j``'s text is a function of ``(NAMESPACE, j)`` only.

With ``--then delete|forget --canary WORD`` (the forgetting kill test) it instead stores, in one
call each, ``TOTAL`` turns plus the turn ``secret`` (whose text holds ``WORD``) in ``NAMESPACE`` and
:data:`KEEP_TURNS` turns in ``NAMESPACE-keep``, prints ``ACK`` and ``READY``, then runs
``delete_turns(NAMESPACE, ["secret"])`` or ``forget(NAMESPACE)`` and prints ``TOOK <seconds>``
and ``DONE``; the test kills it at a random moment of that call.
"""

from __future__ import annotations

import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

WORDS = ["hiking", "puppy", "guitar", "marathon", "painting", "nurse", "Japan", "cake", "peanuts", "detective"]


def turn_text(namespace: str, j: int, prefix: str = "t") -> str:
    rng = random.Random(f"{namespace}:{prefix}{j}")
    return f"I talked about {rng.choice(WORDS)} and {rng.choice(WORDS)} with Maria on day {prefix}{j} ({namespace})"


def make(namespace: str, j: int, prefix: str = "t"):
    from langmem_cog.records import make_turn

    return make_turn(
        id=f"{prefix}{j}", namespace=namespace, conversation_id="c1", session_id=str(j // 10),
        speaker=("Ann", "Ben")[j % 2], text=turn_text(namespace, j, prefix),
        timestamp=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=j), position=j,
    )


#: Turns of the namespace that the forgetting kill test never deletes (``NAMESPACE-keep``).
KEEP_TURNS = 20
SECRET = "secret"


def secret_turn(namespace: str, total: int, canary: str):
    from langmem_cog.records import make_turn

    j = total // 2
    return make_turn(
        id=SECRET, namespace=namespace, conversation_id="c1", session_id=str(j // 10), speaker="Ann",
        text=f"My new neighbour {canary.title()} keeps bees at {canary}",
        timestamp=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=j, seconds=30), position=j,
    )


def forget_main(argv: list[str]) -> None:
    """``--then delete|forget``: store the turns, then delete the secret turn or forget the namespace."""
    import time

    from fakes import FakeEmbeddings

    from langmem_cog import CogMemConfig
    from langmem_cog.memory import CogMemory

    data_dir, namespace, total = argv[0], argv[1], int(argv[2])
    then, canary = argv[argv.index("--then") + 1], argv[argv.index("--canary") + 1]
    mem = CogMemory(CogMemConfig(data_dir=data_dir), embeddings=FakeEmbeddings())
    turns = [make(namespace, j) for j in range(total)] + [secret_turn(namespace, total, canary)]
    keep = [make(f"{namespace}-keep", j) for j in range(KEEP_TURNS)]
    mem.add_turns(turns)
    mem.add_turns(keep)
    print("ACK " + ",".join(t.id for t in turns), flush=True)
    print("READY", flush=True)
    start = time.perf_counter()
    n = mem.delete_turns(namespace, [SECRET]) if then == "delete" else int(mem.forget(namespace))
    print(f"TOOK {time.perf_counter() - start:.4f} {n}", flush=True)
    print("DONE", flush=True)


def main(argv: list[str]) -> None:
    if "--then" in argv:
        forget_main(argv)
        return
    from fakes import FakeEmbeddings

    from langmem_cog import CogMemConfig
    from langmem_cog.memory import CogMemory

    data_dir, namespace, total, seed = argv[0], argv[1], int(argv[2]), int(argv[3])
    search = "--search" in argv
    prefix = argv[argv.index("--prefix") + 1] if "--prefix" in argv else "t"
    rng = random.Random(seed)
    mem = CogMemory(CogMemConfig(data_dir=data_dir), embeddings=FakeEmbeddings())
    have = {t.id for t in mem.store.get_turns(namespace)} if mem.store.has_namespace(namespace) else set()
    todo = [j for j in range(total) if f"{prefix}{j}" not in have]
    print("READY", len(have), flush=True)
    while todo:
        size = rng.randint(1, 3)
        batch, todo = todo[:size], todo[size:]
        turns = [make(namespace, j, prefix) for j in batch]
        mem.add_turns(turns)
        print("ACK " + ",".join(t.id for t in turns), flush=True)
        if search:
            hits = mem.store.search(namespace, rng.choice(WORDS), k=5)
            assert all(h.turn.namespace == namespace for h in hits)
    print("DONE", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
