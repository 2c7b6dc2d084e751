"""Per-turn working state of the rule-based extractor.

:class:`TurnContext` carries one turn through the stages of
:class:`~langmem_cog.graph.rules.extractor.RuleExtractor`: its text (ASCII quotes)
and lower-cased copy, its sentences and resolved time expressions, the persons
and concepts found so far (as :class:`Person` and :class:`Concept` span records),
and what the batch knows (names, pets, speakers, the addressee and the previous
turn's persons and concepts). The stages read and write it; it lives for one turn.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from langmem_cog.timeparse import TimeMention

__all__ = ["Concept", "Person", "TurnContext"]


class Concept(NamedTuple):
    """A concept found in the turn: name, kind, character span and priority (lower wins)."""
    name: str
    kind: str
    start: int
    end: int
    prio: int


class Person(NamedTuple):
    """A person mentioned in the turn, with the character span of the mention."""
    name: str
    start: int
    end: int


class TurnContext:
    """Per-turn working state."""

    __slots__ = (
        "turn", "speaker", "addressee", "text", "low", "sents", "clauses", "times", "concepts", "persons",
        "prev_concepts", "prev_persons", "known", "pets", "pstarts", "words", "vocatives", "speakers", "pet_names",
    )  # fmt: skip

    def __init__(self, turn: Any, text: str, low: str, words: set[str], addressee: str | None, known: set[str],
                 pets: set[str], prev_concepts: list[str], prev_persons: list[str]) -> None:  # fmt: skip
        self.turn = turn
        self.speaker: str = turn.speaker
        self.addressee = addressee
        self.text = text
        self.low = low
        self.sents: list[tuple[int, int]] = []
        self.clauses: list[tuple[int, int]] = []
        self.times: list[TimeMention] = []
        self.concepts: list[Concept] = []
        self.persons: list[Person] = []
        self.known = known
        self.pets = pets
        self.prev_concepts = prev_concepts
        self.prev_persons = prev_persons
        self.pstarts: frozenset[int] = frozenset()
        self.words = words
        self.vocatives: set[int] = set()
        self.speakers: frozenset[str] = frozenset()
        self.pet_names: frozenset[str] = frozenset(p.lower() for p in pets)
