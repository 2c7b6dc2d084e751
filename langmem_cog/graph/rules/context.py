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
    """Per-turn working state, read and written by the stages of the extractor.

    Built by :class:`~langmem_cog.graph.rules.extractor.RuleExtractor` for one turn
    (which then fills in ``speakers``, ``sents`` and ``times``); the entity stage adds
    ``persons``, ``concepts``, ``pstarts`` and ``vocatives``, and the statement stage
    reads them (and adds the concepts its facts and claims name).

    Args:
        turn: The turn (``id``, ``speaker`` and ``timestamp`` are read).
        text: The turn's text with ASCII quotes.
        low: ``text`` lower-cased, of the same length.
        words: The tokens of ``low``.
        addressee: The speaker the turn is addressed to, if any.
        known: Names known to be people in the batch.
        pets: Pet names known in the batch.
        prev_concepts: The concepts of the previous turn with any (same conversation).
        prev_persons: The persons of that turn.
    """

    __slots__ = (
        "turn", "speaker", "addressee", "text", "low", "sents", "clauses", "times", "concepts", "persons",
        "prev_concepts", "prev_persons", "known", "pets", "pstarts", "words", "vocatives", "speakers", "pet_names",
        "places",
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
        #: Single capitalised words the batch uses as places (read as places where the context is silent).
        self.places: set[str] | frozenset[str] = frozenset()
        self.pet_names: frozenset[str] = frozenset(p.lower() for p in pets)

    def owner(self, own: str) -> str | None:
        """Who a possessive of the turn refers to: the addressee for "your", else the speaker.

        Args:
            own: The possessive ("my", "our", "your"; any case).

        Returns:
            The addressee (None if the turn has none) for "your", else the speaker.
        """
        own = own.lower()
        return self.addressee if own == "your" else self.speaker
