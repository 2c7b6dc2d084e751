"""A person's later word on the same matter: the turn that says what holds now.

A change of state is often told without the question's words ("traded in the corolla friday, got
a used subaru" for "What does Marcus drive now?"), but it usually echoes what the same person said
of the matter before ("still driving the corolla"). So for a question about a state now, the turns
that lead the ranking are taken as **anchors**, and each anchor's speaker's later turns from other
sessions are scored by their likeness to it: the hybrid score a search for the anchor's text gives
(dense cosine plus BM25, each z-scored over the namespace). A strong later echo is the newer word
on the matter.

* :func:`find_echoes` (at the candidate stage, for the few best hybrid candidates): each anchor's
  strongest later echoes.
* :func:`echo_first` (at the last step): the strongest echo of a leading turn that is strong enough,
  says something rather than asks it, and, for a question about someone's stance, states the
  holder's stance, moves to the front.

The same likeness finds a person's word on someone else's matter. For a question about where a named
person stands ("What does Jo think of Sam selling his car?"), the turns that lead the ranking are often
the other person's telling of the matter ("I sold my car last week"), and the holder's opinion of it
shares its words ("selling your car right before winter was a mistake"):

* :func:`find_reactions` (at the candidate stage, for a judgement question that names another speaker,
  or a third person whom one of the speakers told of, for the best candidates by the fused score that
  those speakers said): the holder's turns, said then or later, most like each of them.
* :func:`reaction_first` (at the last step): the strongest reaction to a leading turn that is strong
  enough, does not only ask (:func:`only_asks`) and states a stance (the stance lexicon, or the learned
  reader's ``Echo.stance``) moves to the front.

Example:
    >>> from datetime import datetime, timezone
    >>> from langmem_cog.records import Turn
    >>> day = lambda d: datetime(2024, 1, d, tzinfo=timezone.utc)
    >>> turns = [Turn(id="a", namespace="n", speaker="Sam", text="still driving the corolla", timestamp=day(1),
    ...               session_id="1"),
    ...          Turn(id="b", namespace="n", speaker="Sam", text="traded in the corolla on friday, got a used subaru",
    ...               timestamp=day(9), session_id="2"),
    ...          Turn(id="c", namespace="n", speaker="Jo", text="nice car", timestamp=day(9), session_id="2")]
    >>> found = find_echoes(turns[0], turns, np.array([4.1, 3.2, -0.4]))
    >>> found
    (Echo(anchor='a', turn='b', z=3.2, stance=False),)
    >>> echo_first(["a", "c", "b"], found, {t.id: t for t in turns})
    ['b', 'a', 'c']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from langmem_cog.graph.rules.text import split_sentences
from langmem_cog.rank.features import Echo, first_name
from langmem_cog.rank.questions import states_stance
from langmem_cog.records import Turn

__all__ = ["ECHO_ANCHORS", "ECHO_LEAD", "ECHO_THRESHOLD", "Echo", "echo_first", "find_echoes", "find_reactions",
           "only_asks", "reaction_first"]

#: How many of the best candidates are anchors (by the hybrid score for echoes, by the fused score for
#: reactions; the leading turns of the final ranking are usually among them).
ECHO_ANCHORS = 3
#: How many of the leading turns of the final ranking are tried as anchors, in order.
ECHO_LEAD = 3
#: How strong an echo (its hybrid score for the anchor's text: a sum of two z-scores) must be to move
#: to the front.
ECHO_THRESHOLD = 3.0
#: How many echoes are kept per anchor.
ECHO_KEEP = 5
#: An echo this short (in words) says too little to stand for a change of state.
ECHO_MIN_WORDS = 8


def find_echoes(anchor: Turn, turns: Sequence[Turn], likeness: np.ndarray, *,
                keep: int = ECHO_KEEP) -> tuple[Echo, ...]:
    """The anchor's speaker's turns said after it in other sessions that are most like it: the best
    ``keep``, strongest first.

    Args:
        anchor: The anchor turn.
        turns: The turns to search (the namespace's, or a pool of them).
        likeness: Each turn's likeness to the anchor (aligned with ``turns``): the hybrid score of a
            search for the anchor's text, ``z(dense) + z(BM25)`` over the namespace.
        keep: How many echoes to keep.

    Raises:
        ValueError: If ``likeness`` is not aligned with ``turns``.
    """
    z = np.asarray(likeness, dtype=np.float64)
    found = [Echo(anchor.id, t.id, float(score)) for t, score in zip(turns, z, strict=True)
             if t.speaker == anchor.speaker and t.session_id != anchor.session_id and t.timestamp > anchor.timestamp]
    return tuple(sorted(found, key=lambda e: -e.z)[:keep])


def only_asks(text: str) -> bool:
    """Whether a turn only asks: every sentence of it is a question (a turn that says something and then
    asks, "I think he'll burn through his savings. How is he going to run a company?", says something).

    Example:
        >>> only_asks("Dariusz? The one who delivered a fridge to the wrong town?"), only_asks(
        ...     "I think it'll work. Who knows?"), only_asks("Great news")
        (True, False, False)
    """
    sentences = [text[b:e].rstrip("\"')]") for b, e in split_sentences(text)]
    return bool(sentences) and all(s.endswith("?") for s in sentences)


def _says(echo: Echo, turn: Turn, holder: str | None) -> bool:
    """Whether an echo can stand for a change of state: a statement of some length (not only questions,
    :func:`only_asks`), and, for a stance question, the holder's stance (read by the stance model or the
    lexicon)."""
    text = turn.text.strip()
    if only_asks(text) or len(text.split()) < ECHO_MIN_WORDS:
        return False
    return holder is None or (first_name(turn.speaker) == holder and (echo.stance or states_stance(turn.text)))


def echo_first(turn_ids: list[str], echoes: Sequence[Echo], turns: Mapping[str, Turn], *,
               holder: str | None = None, threshold: float = ECHO_THRESHOLD, lead: int = ECHO_LEAD) -> list[str]:
    """For a question about a state now: the strongest later echo of the leading turn that reaches
    ``threshold`` and can stand for a change of state moves to the front, the others keeping their
    order; when the leading turn has none, the next turns up to ``lead`` are tried in turn (the old
    state often ranks just below a turn that shares the question's words); the first anchor with
    such an echo decides, and its echo moves only when said after the leading turn, in another
    session. Without one the list is left as it is.

    Args:
        turn_ids: The ranking, best first.
        echoes: The echoes :func:`find_echoes` found (of any anchors).
        turns: The turns by id (an echo not among them is skipped).
        holder: For a question about someone's stance, the holder's first name (lower-cased).
        threshold: The least likeness (z) of an echo that moves.
        lead: How many leading turns may be anchors.
    """
    if not turn_ids:
        return []
    strongest = sorted(echoes, key=lambda e: -e.z)
    leader = turns.get(turn_ids[0])
    for anchor in turn_ids[:lead]:
        best = next((e for e in strongest if e.anchor == anchor and e.z >= threshold and e.turn in turns
                     and _says(e, turns[e.turn], holder)), None)
        if best is not None:
            echo = turns[best.turn]
            if leader is not None and (echo.timestamp <= leader.timestamp or echo.session_id == leader.session_id):
                break  # the leading turn is already as new as the newest word on this matter
            return [best.turn] + [t for t in turn_ids if t != best.turn]
    return list(turn_ids)


def find_reactions(anchor: Turn, turns: Sequence[Turn], likeness: np.ndarray, holder: str, *,
                   keep: int = ECHO_KEEP) -> tuple[Echo, ...]:
    """The holder's turns said with or after the anchor (someone else's turn) that are most like it:
    the best ``keep``, strongest first.

    Args:
        anchor: The anchor turn (said by someone other than the holder).
        turns: The turns to search (the namespace's, or a pool of them).
        likeness: Each turn's likeness to the anchor (aligned with ``turns``), as for :func:`find_echoes`.
        holder: The holder's first name, lower-cased.
        keep: How many reactions to keep.

    Raises:
        ValueError: If ``likeness`` is not aligned with ``turns``.

    Example:
        >>> from datetime import datetime, timezone
        >>> from langmem_cog.records import Turn
        >>> day = lambda d: datetime(2024, 1, d, tzinfo=timezone.utc)
        >>> sold = Turn(id="a", namespace="n", speaker="Sam", text="I sold my car", timestamp=day(1), session_id="1")
        >>> take = Turn(id="b", namespace="n", speaker="Jo", text="Selling your car was a mistake, I think",
        ...             timestamp=day(9), session_id="2")
        >>> find_reactions(sold, [sold, take], np.array([6.0, 3.4]), "jo")
        (Echo(anchor='a', turn='b', z=3.4, stance=False),)
    """
    z = np.asarray(likeness, dtype=np.float64)
    found = [Echo(anchor.id, t.id, float(score)) for t, score in zip(turns, z, strict=True)
             if t.id != anchor.id and first_name(t.speaker) == holder and t.timestamp >= anchor.timestamp]
    return tuple(sorted(found, key=lambda e: -e.z)[:keep])


def reaction_first(turn_ids: list[str], reactions: Sequence[Echo], turns: Mapping[str, Turn], holder: str, *,
                   threshold: float = ECHO_THRESHOLD, lead: int = ECHO_LEAD) -> list[str]:
    """For a question about where a named person stands on something: the strongest of the holder's
    reactions to the leading ``lead`` turns that reaches ``threshold``, says something rather than
    only asks it (:func:`only_asks`) and states a stance (``Echo.stance``, the learned reading, or
    :func:`~langmem_cog.rank.questions.states_stance`) moves to the front, the others keeping their
    order. Without one, or when a strong reaction that states the holder's stance in the first person
    leads already, the list is left as it is.

    Args:
        turn_ids: The ranking, best first.
        reactions: The reactions :func:`find_reactions` found.
        turns: The turns by id (a reaction not among them is skipped).
        holder: The holder's first name, lower-cased.
        threshold: The least likeness (z) of a reaction that moves.
        lead: How many leading turns may be anchors.

    Example:
        >>> from datetime import datetime, timezone
        >>> from langmem_cog.records import Turn
        >>> at = datetime(2024, 1, 9, tzinfo=timezone.utc)
        >>> take = Turn(id="b", namespace="n", speaker="Jo", text="Selling your car was a mistake, I think",
        ...             timestamp=at, session_id="2")
        >>> reaction_first(["a", "c", "b"], [Echo("a", "b", 3.4)], {"b": take}, "jo")
        ['b', 'a', 'c']
    """
    anchors = set(turn_ids[:lead])
    strong = [e for e in sorted(reactions, key=lambda e: -e.z)
              if e.anchor in anchors and e.z >= threshold and e.turn in turns
              and not only_asks(turns[e.turn].text) and (e.stance or states_stance(turns[e.turn].text))]
    if not strong or strong[0].turn == turn_ids[0]:
        return list(turn_ids)
    leader = turns.get(turn_ids[0])
    if leader is not None and first_name(leader.speaker) == holder and states_stance(leader.text, evaluative=False) \
            and any(e.turn == leader.id for e in strong):
        return list(turn_ids)  # the holder's own stance on the matter leads already
    best = strong[0]
    return [best.turn] + [t for t in turn_ids if t != best.turn]
