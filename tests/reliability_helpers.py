"""Shared helpers of the reliability suites (tests/test_reliability_*.py).

``conversation_texts`` makes turns whose words overlap across namespaces (so a leak
would rank high) plus one tag word unique to the namespace; ``files_with`` greps a
data directory's bytes.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from langmem_cog.records import Turn, make_turn

SPEAKERS = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jun"]
_TEMPLATES = [
    "I went hiking with my dog {pet} near the lake last weekend",
    "My sister loves painting sunsets and pottery",
    "We adopted a puppy called {pet} and it chews my shoes",
    "I started a new job as a nurse at the city hospital",
    "Yesterday I baked a chocolate cake for my mother's birthday",
    "I play the guitar in a jazz band on Fridays",
    "My favourite book is about a detective in Paris",
    "I am allergic to peanuts and shellfish",
    "We are planning a trip to Japan in the spring",
    "I ran a marathon in Berlin and finished in four hours",
]
_PETS = ["Rex", "Luna", "Max", "Bella", "Coco"]


def tag(i: int) -> str:
    """A word that occurs only in namespace ``i``'s turns."""
    return f"zqtag{i}x"


def conversation_texts(i: int, n: int, rng: random.Random) -> list[str]:
    """``n`` texts of namespace ``i``: shared vocabulary plus the namespace's tag word."""
    out = []
    for j in range(n):
        text = rng.choice(_TEMPLATES).format(pet=rng.choice(_PETS))
        out.append(f"{text} {tag(i)} note {j}")
    return out


def turns_for(namespace: str, i: int, texts: list[str], start: int = 0, id_prefix: str = "t") -> list[Turn]:
    """Turns with ids ``t{start}``... (the same ids in every namespace, on purpose)."""
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    speakers = [SPEAKERS[i % len(SPEAKERS)], SPEAKERS[(i + 1) % len(SPEAKERS)]]
    return [
        make_turn(
            id=f"{id_prefix}{start + j}",
            namespace=namespace,
            conversation_id="c1",
            session_id=str((start + j) // 10),
            speaker=speakers[(start + j) % 2],
            text=text,
            timestamp=t0 + timedelta(minutes=start + j),
            position=start + j,
        )
        for j, text in enumerate(texts)
    ]


def files_with(root: Path, needle: bytes) -> list[Path]:
    """Files under ``root`` whose bytes contain ``needle``."""
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]
