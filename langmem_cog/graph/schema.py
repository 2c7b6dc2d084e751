"""The PEC2F schema: Person, Event, Concept, Claim, Fact — node and edge types and typed records.

The graph is a derived index over raw turns: every node and edge carries
``provenance``, the ids of the turns it came from, and can be rebuilt from them.

Node ids are deterministic strings (``"person:caroline"``, ``"event:D1:3#0"``,
``"claim:D4:2#0"``), so rebuilding from the same turns gives an equal graph.

Edges live in a ``networkx.MultiDiGraph`` keyed by :class:`EdgeType` value, so two
different relations between the same pair never overwrite each other.

Example:
    >>> ExtractedClaim(source="Maya", target="running", predicate="opinion", polarity=-1,
    ...                content="Maya: I hate running", source_turn_id="D1:15").polarity
    -1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Protocol, runtime_checkable

from langmem_cog.records import Turn

__all__ = [
    "SCHEMA_VERSION",
    "NodeType",
    "EdgeType",
    "ClaimStatus",
    "ExtractedEvent",
    "ExtractedFact",
    "ExtractedClaim",
    "ExtractedConcept",
    "Extraction",
    "Extractor",
    "RECORD_NODE_TYPES",
    "RELATION_EDGES",
]

#: Bumped when the on-disk graph format changes; older snapshots are rebuilt from the raw store.
SCHEMA_VERSION = 1


class NodeType(StrEnum):
    """The five PEC2F node types."""

    PERSON = "Person"
    EVENT = "Event"
    CONCEPT = "Concept"
    CLAIM = "Claim"
    FACT = "Fact"


class EdgeType(StrEnum):
    """Typed edges (also the edge keys of the ``MultiDiGraph``)."""

    CLAIMS = "CLAIMS"  # Person -> Claim (the speaker holds the opinion)
    ABOUT = "ABOUT"  # Claim -> target (Person / Concept / Event)
    PARTICIPATED_IN = "PARTICIPATED_IN"  # Person -> Event
    MENTIONS = "MENTIONS"  # Event / Fact / Claim -> Concept or Person mentioned
    LIKES = "LIKES"  # Person -> Concept (positive stable preference)
    DISLIKES = "DISLIKES"  # Person -> Concept (negative stable preference)
    USES = "USES"  # Person -> Concept (owns / uses / plays / has)
    HAS_ATTR = "HAS_ATTR"  # Person -> Fact (stable attribute: job, pet, allergy, ...)
    SUPPORTED_BY = "SUPPORTED_BY"  # Fact -> Event (consolidated from repeated events)
    SUPERSEDES = "SUPERSEDES"  # Claim -> older Claim it replaces
    CONFLICTS_WITH = "CONFLICTS_WITH"  # Claim -> Claim (same source/target/predicate, opposite polarity, same time)
    NEXT = "NEXT"  # Event -> next Event of the same person (the per-person timeline)


class ClaimStatus(StrEnum):
    """Reconciliation status of a claim among claims with the same source, target and predicate."""

    CURRENT = "CURRENT"
    SUPERSEDED = "SUPERSEDED"
    CONFLICTING = "CONFLICTING"


#: Node types that are records (searched for factual questions); claims are searched only for beliefs.
RECORD_NODE_TYPES = frozenset({NodeType.PERSON, NodeType.EVENT, NodeType.CONCEPT, NodeType.FACT})

#: Person-to-thing relations used by ``intersect`` ("what do A and B both ...").
RELATION_EDGES = frozenset({EdgeType.LIKES, EdgeType.USES, EdgeType.PARTICIPATED_IN, EdgeType.MENTIONS, EdgeType.HAS_ATTR})


@dataclass(frozen=True)
class ExtractedConcept:
    """A named place, thing, organisation or topic mentioned in a turn.

    Attributes:
        name: Surface name ("Little Fern", "running").
        kind: Coarse kind: ``place``, ``organization``, ``thing``, ``topic``, ``activity``, ``work``.
        source_turn_id: The turn it came from.
    """

    name: str
    source_turn_id: str
    kind: str = "thing"


@dataclass(frozen=True)
class ExtractedEvent:
    """Something a person did or will do, with its resolved time.

    Attributes:
        text: Short description ("went to a support group").
        participants: Person names taking part (the speaker first).
        source_turn_id: The turn it came from.
        start: Resolved start of the event (aware), if known.
        end: Resolved end (exclusive), if known.
        time_text: The time expression as written ("yesterday").
        concepts: Names of concepts the event involves.
        verb: Lemma of the main verb ("go").
    """

    text: str
    participants: tuple[str, ...]
    source_turn_id: str
    start: datetime | None = None
    end: datetime | None = None
    time_text: str | None = None
    concepts: tuple[str, ...] = ()
    verb: str | None = None


@dataclass(frozen=True)
class ExtractedFact:
    """A stable, self-reported attribute, habit or preference ("Leo is allergic to shellfish").

    Attributes:
        subject: The person the fact is about.
        predicate: Normalised relation: ``is``, ``works_as``, ``has``, ``likes``, ``dislikes``,
            ``allergic_to``, ``lives_in``, ``habit``, ``favorite``, ...
        object: The value ("shellfish").
        text: The fact as a sentence.
        source_turn_id: The turn it came from.
        valid_from: When it became true, if known.
    """

    subject: str
    predicate: str
    object: str
    text: str
    source_turn_id: str
    valid_from: datetime | None = None


@dataclass(frozen=True)
class ExtractedClaim:
    """An opinion attributed to its speaker: never a fact.

    Attributes:
        source: Who holds the opinion (the speaker, or a person the speaker reports).
        target: What it is about (a person, concept or event name).
        predicate: Normalised kind of opinion: ``opinion`` (evaluation), ``belief``, ``preference``.
        polarity: +1 positive, -1 negative, 0 neutral / mixed.
        content: The opinion as said.
        source_turn_id: The turn it came from.
        sentiment: Continuous sentiment in [-1, 1].
        timestamp: When it was said.
    """

    source: str
    target: str
    predicate: str
    polarity: int
    content: str
    source_turn_id: str
    sentiment: float = 0.0
    timestamp: datetime | None = None


@dataclass
class Extraction:
    """Everything extracted from one turn (the output of an ``Extractor`` per turn)."""

    turn_id: str
    speaker: str
    timestamp: datetime
    persons: list[str] = field(default_factory=list)
    concepts: list[ExtractedConcept] = field(default_factory=list)
    events: list[ExtractedEvent] = field(default_factory=list)
    facts: list[ExtractedFact] = field(default_factory=list)
    claims: list[ExtractedClaim] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when nothing but the speaker was found."""
        return not (self.concepts or self.events or self.facts or self.claims or self.persons)


@runtime_checkable
class Extractor(Protocol):
    """Turns raw turns into typed records; implementations: ``RuleExtractor``, ``LLMExtractor``."""

    def extract(self, turns: Sequence[Turn]) -> list[Extraction]:
        """One :class:`Extraction` per input turn, in order."""
        ...
