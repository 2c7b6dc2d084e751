"""What a span of a turn mentions, for the statement stage of the rule-based extractor.

Readers of the turn's :class:`~langmem_cog.graph.rules.context.TurnContext` that the
statement stage (:mod:`~langmem_cog.graph.rules.statements`) and its fact and claim
readers (:mod:`~langmem_cog.graph.rules.facts`, :mod:`~langmem_cog.graph.rules.claims`)
share:

* :func:`time_in` -- the time expression of a span (an event's time, a fact's
  ``valid_from``);
* :func:`np_after` -- the noun phrase at a position, stopping at a person's name;
* :func:`resolve_pronoun` -- who or what a pronoun refers to: the addressee, the
  speaker, the last person (or pet) or concept named before it, else the previous
  turn's;
* :func:`subject_before` -- the subject right before a position (a person, a pronoun
  resolved, a concept covering it, else the noun phrase, which becomes a concept).

Only :func:`subject_before` writes to the context (the concept it names).
"""

from __future__ import annotations

from langmem_cog.graph.rules.context import Concept, TurnContext
from langmem_cog.graph.rules.lexicon import (
    DETERMINERS,
    GENERIC_PEOPLE,
    NP_SKIP,
    NP_STOP,
    NP_TOKEN,
    PRONOUN_PERSON,
    PRONOUN_THING,
    ROLLING_SPAN_RE,
    VAGUE,
)
from langmem_cog.graph.rules.phrases import noun_phrase
from langmem_cog.timeparse import TimeMention

__all__ = ["np_after", "resolve_pronoun", "subject_before", "time_in"]


def time_in(ctx: TurnContext, lo: int, hi: int) -> TimeMention | None:
    """The time expression of the span ``[lo, hi)`` of the turn.

    The first time expression inside the span, or the one later expression that narrows it
    ("last month on June 15th", "in the spring ... yesterday"). A rolling span ("the past two
    weeks, except last Friday") or one followed by two more ("last week, Tuesday to Friday") stays.

    Args:
        ctx: The turn's state (its resolved ``times``).
        lo: Where the span starts (a character offset of the turn's text).
        hi: Where it ends (exclusive).

    Returns:
        The time expression, or None if the span has none.
    """
    inside = [tm for tm in ctx.times if tm.span[0] >= lo and tm.span[1] <= hi]
    if not inside:
        return None
    first = inside[0]
    if len(inside) != 2 or ROLLING_SPAN_RE.match(first.text):
        return first
    tm = inside[1]
    return tm if first.start <= tm.start and tm.end <= first.end and tm.end - tm.start < first.end - first.start else first


def np_after(ctx: TurnContext, pos: int, end: int, *, allow_vague: bool = False) -> str | None:
    """The noun phrase starting at ``pos``, stopping at a person's name.

    Args:
        ctx: The turn's state (its lower-cased text and the starts of its persons).
        pos: Where the phrase may start.
        end: Where it must end by.
        allow_vague: Keep a phrase whose head is vague ("stuff", "things").

    Returns:
        The phrase (as :func:`~langmem_cog.graph.rules.phrases.noun_phrase` reads it), or None.
    """
    np = noun_phrase(ctx.low, pos, end, allow_vague=allow_vague, stops=ctx.pstarts)
    return np[0] if np else None


def resolve_pronoun(ctx: TurnContext, word: str, before: int) -> str | None:
    """Who or what a pronoun of the turn refers to, best effort.

    "you" is the addressee; "I" and "we" the speaker; "he" / "she" the last person (or pet)
    named before it (not a vocative), else the previous turn's last person; "it" / "that" /
    "they" the last concept named before it, else the previous turn's first concept.

    Args:
        ctx: The turn's state.
        word: The pronoun (any case).
        before: Its position: only names before it count.

    Returns:
        The referent's name, or None if the word is no pronoun or refers to nothing known.
    """
    w = word.lower()
    if w in ("you", "u", "ya", "you're", "your", "yourself"):
        return ctx.addressee
    if w in ("i", "me", "myself", "we", "us"):
        return ctx.speaker
    if w in PRONOUN_PERSON:  # the last person (or pet) named before
        cands = [(p.start, p.name) for p in ctx.persons if p.start < before and p.start not in ctx.vocatives]
        cands += [(c.start, c.name) for c in ctx.concepts if c.start < before and c.name in ctx.pet_names]
        if cands:
            return max(cands)[1]
        return ctx.prev_persons[-1] if ctx.prev_persons else None
    if w in PRONOUN_THING:
        best = None
        for c in ctx.concepts:
            if c.end <= before and (best is None or c.start > best.start) and c.prio <= 3:
                best = c
        if best is not None:
            return best.name
        return ctx.prev_concepts[0] if ctx.prev_concepts else None  # the previous turn's first topic
    return None


def subject_before(ctx: TurnContext, cb: int, pos: int) -> str | None:
    """The subject right before ``pos`` in the clause ``[cb, pos)``.

    A person there, a pronoun resolved with :func:`resolve_pronoun`, a concept covering the
    words before ``pos`` ("Little Fern is great"), else those words (at most four, back to
    punctuation or a function word); such a noun phrase is added to ``ctx.concepts`` as a
    ``thing``.

    Args:
        ctx: The turn's state.
        cb: Where the clause starts.
        pos: Where the predicate starts.

    Returns:
        The subject's name, or None if there is none or it is vague ("things", "people").
    """
    low = ctx.low
    toks = [m for m in NP_TOKEN.finditer(low, cb, pos)]
    if not toks:
        return None
    last = toks[-1].group()
    if last.endswith("'s") or last.endswith("'re"):
        last = last.rsplit("'", 1)[0]
    # a person right there
    last_start = toks[-1].start()
    for p in ctx.persons:
        if p.start <= last_start < p.end or last_start <= p.start < pos:
            return p.name
    if last in PRONOUN_THING or last in PRONOUN_PERSON or last in ("you", "i", "we", "u"):
        return resolve_pronoun(ctx, last, toks[-1].start())
    words: list[str] = []
    start = pos
    for m in reversed(toks):
        w = m.group()
        if words and not low[m.end() : start].isspace():
            break  # punctuation ends the subject ("Hey Calvin, photography is great")
        if w.endswith("'s") and words:
            break
        if w in NP_STOP or w in DETERMINERS or w in NP_SKIP:
            break
        words.insert(0, w)
        start = m.start()
        if len(words) >= 4:
            break
    if not words:
        return None
    # a name covering the subject ("Little Fern is great"), else the whole noun phrase
    name = " ".join(words)
    for c in ctx.concepts:
        if c.prio <= 3 and (c.start <= start < c.end or (start <= c.start < pos and (c.prio <= 1 or c.name == name))):
            return c.name
    if words[-1] in VAGUE or words[-1] in GENERIC_PEOPLE:
        return None
    ctx.concepts.append(Concept(name, "thing", start, start + len(name), 3))
    return name
