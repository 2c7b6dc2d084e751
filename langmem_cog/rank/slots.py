"""What the answer to a state question sounds like: each turn's likeness to plain statements of that state.

A question about a person's state at some time ("Where does Nia live now?", "What did Cal do for work in
2022?") names the state in its own words, but the turn that answers it often does not: a home is told as
"got the keys to a little flat above the bakery", a new job as "first week of night shifts done". Such a
turn is far from the question in the embedder's space and close to plain statements of the same state
("I got the keys to my new house.", "I started a new job."). :class:`StateStatements` holds, for each
state a question can name (:func:`~langmem_cog.rank.questions.asked_state`: the states the graph reads,
:data:`~langmem_cog.graph.reconcile.STATE_PREDICATES`, and a pet kept and a habit, each named by its
first predicate), a few such statements
embedded by the store's embedder; :meth:`StateStatements.match` scores the asked person's turns by their
best cosine to them. The cascade adds :func:`state_lift` of that score to the fused score of the
candidates of a state question with a word of now or before or a time window
(:meth:`~langmem_cog.rank.cascade.Cascade.fuse`), so a turn that tells the state in other words comes up
beside the ones with the question's words; the question rules then order them by time.

The statements are general English, one person telling of holding, starting or ending a state, written
for this module (the dev half of the attribution-and-currency set was read while writing them, its
test half never).

Example:
    >>> import numpy as np
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> statements = StateStatements.embed(DeterministicFakeEmbedding(size=16))
    >>> sorted(statements.vectors) == sorted(STATE_STATEMENTS)
    True
    >>> vectors = np.asarray(DeterministicFakeEmbedding(size=16).embed_documents(["I moved house.", "Nice day."]))
    >>> score = statements.match("lives_in", vectors, np.array([True, True]))
    >>> bool(score[0] > 0 > score[1])
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from langchain_core.embeddings import Embeddings

from langmem_cog.errors import InvalidInputError
from langmem_cog.fusion import zscore

__all__ = ["STATE_FLOOR", "STATE_STATEMENTS", "STATE_WEIGHT", "StateStatements", "state_lift"]

#: Plain first-person statements of each state, keyed by the state's first predicate
#: (:func:`~langmem_cog.rank.questions.asked_state`): holding it, starting it, ending it.
STATE_STATEMENTS: Mapping[str, tuple[str, ...]] = {
    "lives_in": ("I moved house.", "We just moved into our new place.", "I signed the lease on an apartment.",
                 "I got the keys to my new house.", "My new flat is in a nice neighbourhood.",
                 "Unpacking boxes in the new place.", "I'm renting a room downtown.", "We bought a house."),
    "works_at": ("I started a new job.", "I quit my job.", "My first week at the new company.",
                 "I got promoted to manager.", "I work as a nurse.", "My boss offered me a position.",
                 "I was laid off.", "I handed in my notice at work."),
    "studies": ("I started college.", "I enrolled in a degree program.", "My first semester at university.",
                "I'm studying for a master's.", "I dropped out of school.", "I transferred to another college.",
                "I graduated.", "I'm taking a course."),
    "drives": ("I bought a car.", "I sold my car.", "I passed my driving test.", "I ride my bike everywhere.",
               "I traded in my truck.", "My new car is great.", "I take the bus now.", "I got a motorbike."),
    "diet": ("I'm vegetarian.", "I eat meat again.", "I'm on a diet.", "I gave up sugar.", "I had a burger.",
             "I cut out carbs.", "I went vegan.", "I started eating fish."),
    "relationship": ("I'm dating someone.", "We broke up.", "We got engaged.", "I'm single.", "We got married.",
                     "My girlfriend moved in.", "I met someone new.", "She dumped me."),
    "keeps_pet": ("I adopted a dog.", "We got a kitten.", "My cat sleeps on my bed.", "I had to rehome the puppy.",
                  "Our old dog died.", "I walk the dog every morning.", "I bought two goldfish.",
                  "The chickens started laying."),
    "habit": ("I quit smoking.", "I started running every morning.", "I go to the gym three times a week.",
              "I gave up drinking.", "I'm on the nicotine patches.", "I swim before work.", "I stopped going to yoga.",
              "I smoke a pack a day."),
}

#: How far a turn's likeness to the asked state lifts its fused score (:func:`state_lift`):
#: ``STATE_WEIGHT`` standard deviations of the fused scores per standard deviation of likeness above
#: ``STATE_FLOOR`` standard deviations over the pool's mean.
STATE_WEIGHT = 0.5
STATE_FLOOR = 0.0


def state_lift(fused: np.ndarray, match: np.ndarray) -> np.ndarray:
    """What a state question adds to each candidate's fused score: ``STATE_WEIGHT`` x the fused scores'
    standard deviation x how far its state match (:meth:`StateStatements.match`) passes ``STATE_FLOOR``.

    Example:
        >>> state_lift(np.array([0.0, 2.0]), np.array([3.0, -0.5])).tolist()  # fused scores' sd: 1.0
        [1.5, 0.0]
    """
    return STATE_WEIGHT * float(np.std(fused)) * np.maximum(np.asarray(match, dtype=np.float64) - STATE_FLOOR, 0.0)


@dataclass(frozen=True, eq=False)
class StateStatements:
    """:data:`STATE_STATEMENTS` embedded by one embedder (unit rows, one matrix per state).

    Attributes:
        vectors: Each state's statements as unit vectors (rows), by the state's first predicate.
    """

    vectors: Mapping[str, np.ndarray] = field(repr=False)

    @classmethod
    def embed(cls, embeddings: Embeddings) -> StateStatements:
        """Every state's statements embedded by ``embeddings`` (one batch)."""
        keys = list(STATE_STATEMENTS)
        texts = [s for k in keys for s in STATE_STATEMENTS[k]]
        rows = _unit(np.asarray(embeddings.embed_documents(texts), dtype=np.float64))
        out, at = {}, 0
        for k in keys:
            n = len(STATE_STATEMENTS[k])
            out[k] = rows[at:at + n]
            at += n
        return cls(vectors=out)

    def match(self, state: str, vectors: np.ndarray, mine: np.ndarray) -> np.ndarray:
        """How much more like a statement of ``state`` each turn is than the pool's turns are on average:
        the z-score of its best cosine to the state's statements over all rows, and 0 for a turn that is
        not the asked person's (``mine`` False).

        Args:
            state: The state's first predicate (a key of :data:`STATE_STATEMENTS`).
            vectors: The turns' stored vectors (one row per turn of the pool).
            mine: Whether each turn is the asked person's (aligned with ``vectors``).

        Raises:
            InvalidInputError: If ``state`` is not a known state, or ``mine`` is not aligned with ``vectors``.
        """
        if state not in self.vectors:
            raise InvalidInputError(f"state {state!r} is unknown: use one of {sorted(self.vectors)}")
        rows = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
        mine = np.asarray(mine, dtype=bool)
        if mine.shape != (len(rows),):
            raise InvalidInputError(f"{len(mine)} flags for {len(rows)} vectors: pass one flag per vector")
        best = (_unit(rows) @ self.vectors[state].T).max(axis=1)
        return np.where(mine, zscore(best), 0.0)


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1.0)
