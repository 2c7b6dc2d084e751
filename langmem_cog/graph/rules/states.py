"""The states of a turn that a later statement replaces: vehicle, school, diet, relationship.

Each is a Fact about the speaker whose predicate names the state (:data:`~langmem_cog.graph.reconcile.STATE_PREDICATES`):
``drives`` ("I'm driving a little green Subaru Forester now", "bought a 2015 Honda Jazz", "my old red
Fiesta"), ``studies`` ("I'm doing the part-time data science master's at York"), ``diet`` ("I've been
vegetarian six years", "still doing keto") and ``relationship`` ("I've been seeing Tomasz", "we broke
up", "I'm engaged"). Reconciliation (:func:`~langmem_cog.graph.reconcile.reconcile_facts`) then keeps one
value of each state CURRENT and the older ones SUPERSEDED, as it does for ``lives_in`` and ``works_at``.
Only what the speaker says of themself in plain words is read here; a change told without the state's
words ("the movers dropped the last boxes in Leith") needs a chat model (``LLMExtractor`` gives the same
predicates).

Example:
    >>> from datetime import datetime, timezone
    >>> from langmem_cog import make_turn
    >>> from langmem_cog.graph.rules import RuleExtractor
    >>> ts = datetime(2023, 5, 8, tzinfo=timezone.utc)
    >>> turn = make_turn(id="t1", namespace="doc", speaker="Marcus", timestamp=ts,
    ...                  text="Traded in the corolla friday, got a used 2016 Subaru Outback with heated seats.")
    >>> [(f.predicate, f.object) for f in RuleExtractor().extract([turn])[0].facts]
    [('drives', '2016 subaru outback')]
"""

from __future__ import annotations

import re
from collections.abc import Callable

from langmem_cog.graph.rules.context import TurnContext
from langmem_cog.graph.rules.lexicon import (
    ACQUIRE_RE,
    BROKE_UP_RE,
    DATING_PAIR_RE,
    DATING_RE,
    DIET_RE,
    DRIVE_RE,
    MY_STUDY_RE,
    MY_VEHICLE_RE,
    RELATIONSHIP_STATUS,
    STATE_LEAD,
    STATE_OTHERS,
    STATE_STOP,
    STATE_TRAIL,
    STUDY_DEGREES,
    STUDY_HEADS,
    STUDY_PLACES,
    STUDY_RE,
    VEHICLE_MAKES,
    VEHICLE_MODELS,
    VEHICLE_MODELS_AMBIGUOUS,
    VEHICLE_WORDS,
)
from langmem_cog.graph.schema import ExtractedFact

__all__ = ["AddFact", "find_states", "relationship_status", "vehicle_at"]

_TOKEN = re.compile(r"[a-z0-9][a-z0-9'-]*|[,.;:!?()]")


def _tokens(low: str, pos: int, end: int, limit: int) -> list[str]:
    return [m.group(0) for m in _TOKEN.finditer(low, pos, end)][:limit]


def vehicle_at(low: str, pos: int, end: int) -> str | None:
    """The vehicle named at ``pos`` (within eight words, before a clause ends): its words up to its last
    make, model or vehicle noun, without determiners and words of age ("a used 2016 subaru outback" ->
    "2016 subaru outback"), else ``None``.

    Example:
        >>> vehicle_at("a used 2016 subaru outback with heated seats", 0, 44)
        '2016 subaru outback'
        >>> vehicle_at("a kayak off gumtree", 0, 19) is None
        True
    """
    words: list[str] = []
    for w in _tokens(low, pos, end, 8):
        if not w[0].isalnum() or (w in STATE_STOP and words):
            break
        words.append(w)
    last = max((i for i, w in enumerate(words) if w in VEHICLE_WORDS), default=None)
    if last is None or any(w not in STATE_TRAIL for w in words[last + 1:]):  # "a golf umbrella", "a car seat"
        return None
    kept = words[:last + 1]
    while kept and kept[0] in STATE_LEAD:
        kept = kept[1:]
    return " ".join(kept) or None


def _said_by_speaker(ctx: TurnContext, b: int, at: int) -> bool:
    """Whether the clause before ``at`` (from ``b``) has the speaker as its subject: its last subject
    pronoun is "i" / "we", or it has none and names no one."""
    before = _tokens(ctx.low, b, at, 40)
    subjects = [w for w in before if w in ("i", "i'm", "i've", "i'd", "i'll", "we", "we're", "we've") or w in STATE_OTHERS]
    if subjects:
        return subjects[-1] not in STATE_OTHERS
    return not any(b <= p.start < at for p in ctx.persons)


def _study_at(ctx: TurnContext, pos: int, end: int) -> str | None:
    """The course or school named at ``pos``: the words through a study word ("master's", "course",
    "class", ...) within ten words, and what follows it up to the clause's end (" in ecology at the U"),
    else ``None``."""
    words = _tokens(ctx.low, pos, end, 16)
    head = next((i for i, w in enumerate(words[:10]) if w in STUDY_HEADS), None)
    if head is None or any(not w[0].isalnum() for w in words[:head]) or words[head + 1:head + 2] == ["of"]:
        return None  # "a course of antibiotics"
    tail = []
    for w in words[head + 1:]:
        if not w[0].isalnum() or (w not in ("in", "at", "with", "of", "from") and w in STATE_STOP):
            break
        tail.append(w)
        if len(tail) == 6:
            break
    kept = words[:head + 1]
    while kept and kept[0] in STATE_LEAD:
        kept = kept[1:]
    clause = words[:next((i for i, w in enumerate(words) if not w[0].isalnum()), len(words))]
    if words[head] not in STUDY_DEGREES and not STUDY_PLACES & set(clause):
        return None  # "a pottery class": a pastime, not a school
    return " ".join(kept + tail) or None


def relationship_status(status: str) -> bool:
    """Whether a status the speaker gives ("married", "single", ...) is a relationship state.

    Example:
        >>> relationship_status("engaged"), relationship_status("retired")
        (True, False)
    """
    return status in RELATIONSHIP_STATUS


#: The signature of :func:`~langmem_cog.graph.rules.facts.add_fact` (context, facts, predicate, object, text, start, end).
AddFact = Callable[[TurnContext, list[ExtractedFact], str, str, str, int, int], None]


def find_states(ctx: TurnContext, b: int, e: int, facts: list[ExtractedFact], add_fact: AddFact) -> None:
    """Add the vehicle, course, diet and relationship the sentence ``[b, e)`` states of its speaker.

    Args:
        ctx: The turn's state, after the entity stage.
        b: Where the sentence starts.
        e: Where it ends.
        facts: The turn's facts so far; appended to.
        add_fact: :func:`~langmem_cog.graph.rules.facts.add_fact` (it drops a negated fact).
    """
    low, sp = ctx.low, ctx.speaker
    seg = low[b:e]
    if ctx.words & VEHICLE_WORDS:
        for rx in (DRIVE_RE, ACQUIRE_RE):
            for m in rx.finditer(low, b, e):
                vehicle = vehicle_at(low, m.end(), e)
                if vehicle and _said_by_speaker(ctx, b, m.start()):
                    add_fact(ctx, facts, "drives", vehicle, f"{sp} drives {vehicle}", m.start(), m.end() + len(vehicle))
        if "my" in seg or "our" in seg:
            for m in MY_VEHICLE_RE.finditer(low, b, e):
                nxt, prev = _tokens(low, m.end(), e, 1), _tokens(low, m.start(), m.start("v"), 8)[-1:]
                model = m.group("v") + (" " + nxt[0] if nxt and m.group("v") in VEHICLE_MAKES and nxt[0] in VEHICLE_MODELS | VEHICLE_MODELS_AMBIGUOUS else "")
                model = (prev[0] + " " if prev and prev[0] in VEHICLE_MAKES else "") + model
                add_fact(ctx, facts, "drives", model, f"{sp} drives {model}", m.start(), m.end())
    if ctx.words & STUDY_HEADS:
        for m in STUDY_RE.finditer(low, b, e):
            course = _study_at(ctx, m.end(), e)
            if course:
                add_fact(ctx, facts, "studies", course, f"{sp} studies {course}", m.start(), m.end() + len(course))
        for m in MY_STUDY_RE.finditer(low, b, e):
            if _said_by_speaker(ctx, b, m.start()):
                course = _study_at(ctx, m.start() + 3, e)
                if course and course.split()[-1] not in STUDY_HEADS:  # "my master's in ecology", not "my degree"
                    add_fact(ctx, facts, "studies", course, f"{sp} studies {course}", m.start(), m.end())
    if "diet" in seg or "vege" in seg or "vegan" in seg or "keto" in seg or "again" in seg or "sober" in seg \
            or "pesc" in seg or "carb" in seg or "paleo" in seg or "free" in seg or "low-" in seg:
        for m in DIET_RE.finditer(low, b, e):
            diet = m.group("d") or m.group("d2") or (f"eats {m.group('d3')}" if m.group("d3") else None)
            if diet and _said_by_speaker(ctx, b, m.start()):
                diet = " ".join(diet.split())
                add_fact(ctx, facts, "diet", diet, f"{sp}'s diet: {diet}", m.start(), m.end())
    if "seeing" in seg or "dating" in seg or "going out" in seg or "my " in seg or "and i" in seg or "up" in seg \
            or "separated" in seg or "off" in seg:
        for m in DATING_RE.finditer(low, b, e):
            st = m.start("rest") if m.group("rest") else m.start("rest2")
            who = next((p.name for p in ctx.persons if st <= p.start <= st + 1), None)
            if who:
                add_fact(ctx, facts, "relationship", f"with {who}", f"{sp} is in a relationship with {who}", m.start(), m.end() + len(who))
        for m in DATING_PAIR_RE.finditer(low, b, e):
            who = next((p.name for p in ctx.persons if b <= p.start and p.end <= m.start() and m.start() - p.end <= 2), None)
            if who:
                add_fact(ctx, facts, "relationship", f"with {who}", f"{sp} is in a relationship with {who}", m.start(), m.end())
        for m in BROKE_UP_RE.finditer(low, b, e):
            add_fact(ctx, facts, "relationship", "single", f"{sp} is single", m.start(), m.end())
