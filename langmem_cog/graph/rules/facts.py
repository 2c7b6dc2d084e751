"""The facts of a turn, for the statement stage of the rule-based extractor.

Facts are what the speaker states about themself, as (subject, predicate, object) with
the speaker as subject: job (``works_as``, ``is``) and workplace (``works_at``),
``allergic_to``, ``favorite``, pets (``has``), ``lives_in``, ``from``, ``plays``,
``habit``, status (``is``) and the states :mod:`~langmem_cog.graph.rules.states` reads
(``drives``, ``studies``, ``diet``, ``relationship``). :func:`find_facts` reads them sentence by sentence, each
pattern behind a cheap test of the sentence's words; :func:`add_fact` records one (the
claim reader, :mod:`~langmem_cog.graph.rules.claims`, adds ``likes`` / ``dislikes``
with it) and :func:`dedupe_facts` keeps each triple once. The statement stage
(:mod:`~langmem_cog.graph.rules.statements`) calls all three.
"""

from __future__ import annotations

from datetime import datetime

from langmem_cog.graph.rules.context import Concept, TurnContext
from langmem_cog.graph.rules.lexicon import (
    ACTIVITY_SET,
    ALLERGY_RE,
    BEEN_FOR_RE,
    CLAUSE_SPLIT_RE,
    COMMON,
    CONCEPT_FACTS,
    DETERMINERS,
    DIET_STATUS,
    EVERY_RE,
    FAV_RE,
    FAV_REV_RE,
    FROM_RE,
    HABIT_RE,
    HAVE_PET_RE,
    IRREGULAR,
    JOB_RE,
    JOBS,
    LIVE_RE,
    NEGATION_RE,
    NP_SKIP,
    NP_STOP,
    PET_NAMED_RE,
    PETS,
    PLAYS_RE,
    REST_CUT_RE,
    STATIVE,
    STATUS_RE,
    TO_A_THING_RE,
    TRAIL_STRIP,
    TRAIL_WORDS,
    WORK_AT_RE,
    WORK_CATS,
)
from langmem_cog.graph.rules.mentions import np_after, time_in
from langmem_cog.graph.rules.states import find_states, relationship_status
from langmem_cog.graph.rules.text import lemma
from langmem_cog.graph.schema import ExtractedFact

__all__ = ["add_fact", "dedupe_facts", "find_facts"]


def find_facts(ctx: TurnContext, b: int, e: int, facts: list[ExtractedFact]) -> None:
    """Add the facts the sentence ``[b, e)`` states about its speaker to ``facts``.

    A sentence without "i", "my" or "we" gives none. The concepts the facts name are added
    to ``ctx.concepts``; a title read as a favourite ("my favorite book is Dune") moves from
    ``ctx.persons`` to the concepts as a ``work``.

    Args:
        ctx: The turn's state, after the entity stage.
        b: Where the sentence starts.
        e: Where it ends.
        facts: The turn's facts so far; appended to.
    """
    low, text = ctx.low, ctx.text
    seg = low[b:e]
    sp = ctx.speaker
    if "i" not in seg and "my" not in seg and "we" not in seg:
        return
    # pets
    if ctx.words & PETS:
        got = False
        for m in HAVE_PET_RE.finditer(text, b, e):
            pet = m.group("pet").lower()
            name = m.group("name")
            num = m.group("num").lower()
            obj = f"{pet} named {name}" if name else (pet if num in ("a", "an", "one") else f"{num} {pet}")
            add_fact(ctx, facts, "has", obj, f"{sp} has a {pet}" + (f" named {name}" if name else ""), m.start(), m.end())
            got = True
        for m in PET_NAMED_RE.finditer(text, b, e):
            if not (m.group("own") or got):
                continue
            pet = (m.group("pet") or m.group("pet2")).lower()
            for name in (m.group("name"), m.group("name2")):
                if name and name.lower() not in COMMON and name not in ctx.known:
                    add_fact(ctx, facts, "has", f"{pet} named {name}", f"{sp} has a {pet} named {name}", m.start(), m.end())
    if "i" in seg:
        if "'m a" in seg or "am a" in seg or "work" in seg or "job" in seg:
            for m in JOB_RE.finditer(low, b, e):
                job = m.group("job") or m.group("job2") or m.group("job3")
                job = " ".join(w for w in job.split() if w not in NP_SKIP or w in ("assistant",))
                if job and job.split()[-1] not in ("fan", "bit", "lot", "mess", "little"):
                    pred = "works_as" if job.split()[-1] in JOBS or m.group("job2") or m.group("job3") else "is"
                    add_fact(ctx, facts, pred, job, f"{sp} works as {job}" if pred == "works_as" else f"{sp} is {job}", m.start(), m.end())
            for m in WORK_AT_RE.finditer(low, b, e):
                org = _org_after(ctx, m.start("rest"), e)
                if org:
                    add_fact(ctx, facts, "works_at", org, f"{sp} works at {org}", m.start(), e)
        if "allerg" in seg:
            for m in ALLERGY_RE.finditer(low, b, e):
                st = m.start("rest") if m.group("rest") else m.start("rest2")
                obj = np_after(ctx, st, e, allow_vague=True)
                if obj:
                    add_fact(ctx, facts, "allergic_to", obj, f"{sp} is allergic to {obj}", m.start(), e)
        if "live" in seg or "moved" in seg or "relocated" in seg:
            for m in LIVE_RE.finditer(low, b, e):
                place = _org_after(ctx, m.start("rest"), e)
                if place:
                    add_fact(ctx, facts, "lives_in", place, f"{sp} lives in {place}", m.start(), e)
        if "from" in seg or "grew up" in seg or "born" in seg:
            for m in FROM_RE.finditer(low, b, e):
                st = m.start("rest") if m.group("rest") else m.start("rest2")
                place = _org_after(ctx, st, e)
                if place:
                    add_fact(ctx, facts, "from", place, f"{sp} is from {place}", m.start(), e)
        if "play" in seg:
            for m in PLAYS_RE.finditer(low, b, e):
                obj = np_after(ctx, m.start("rest"), e)
                if obj and obj not in ("it", "that", "with"):
                    add_fact(ctx, facts, "plays", obj, f"{sp} plays {obj}", m.start(), e)
        if "'m " in seg or " am " in seg:
            for m in STATUS_RE.finditer(low, b, e):
                status = " ".join(m.group("st").split())
                status = status[2:] if status.startswith("a ") else status
                if status in DIET_STATUS:
                    continue  # a diet: read by find_states
                if relationship_status(status):
                    if TO_A_THING_RE.match(low, m.end(), e):
                        continue  # "married to my job"
                    add_fact(ctx, facts, "relationship", status, f"{sp} is {status}", m.start(), m.end())
                else:
                    add_fact(ctx, facts, "is", status, f"{sp} is {status}", m.start(), m.end())
        if any(a in seg for a in ("usually", "always", "often", "normally", "regularly", "sometimes", "generally",
                                  "typically", "frequently", "occasionally", "tend to")):  # fmt: skip
            for m in HABIT_RE.finditer(low, b, e):
                rest = _clause_rest(low, m.start("rest"), e)
                first = rest.split()[0] if rest else ""
                past = first.endswith("ed") or (first in IRREGULAR and IRREGULAR[first] != first)
                if rest and not past and first not in STATIVE and first not in ("be", "have", "get", "feel", "think", "find"):
                    add_fact(ctx, facts, "habit", rest, f"{sp} {m.group('adv')} {rest}", m.start(), e)
        if "been" in seg and (" for " in seg or " since " in seg):
            for m in BEEN_FOR_RE.finditer(low, b, e):
                ing = m.group("ing")
                if lemma(ing) in STATIVE or ing in ("going", "doing", "thinking", "feeling", "trying", "looking"):
                    continue
                obj = _clause_rest(low, m.start("ing"), m.start("dur"))
                add_fact(ctx, facts, "habit", obj, f"{sp} has been {obj} {m.group('dur')}", m.start(), e)
        if "every" in seg or "daily" in seg or "weekly" in seg or " a week" in seg or " a month" in seg:
            for m in EVERY_RE.finditer(low, b, e):
                v = m.group("verb")
                if v in STATIVE or v in NP_STOP or lemma(v) in STATIVE or v.endswith("ed") or v in IRREGULAR:
                    continue
                obj = f"{v}{m.group('obj')} {m.group('freq')}".strip()
                add_fact(ctx, facts, "habit", obj, f"{sp} {obj}", m.start(), m.end())
    find_states(ctx, b, e, facts, add_fact)
    if "favo" in seg:
        for m in FAV_RE.finditer(low, b, e):
            cat = m.group("cat").strip()
            obj = _name_after(ctx, m.start("rest"), cat) or _org_after(ctx, m.start("rest"), e)
            if obj:
                add_fact(ctx, facts, "favorite", obj, f"{sp}'s favorite {cat} is {obj}", m.start(), e)
        for m in FAV_REV_RE.finditer(low, b, e):
            np = m.group("np").split()
            while np and (np[0] in NP_STOP or np[0] in DETERMINERS):
                np = np[1:]
            if np and len(np) <= 5:
                obj = " ".join(np)
                cat = m.group("cat") or "thing"
                add_fact(ctx, facts, "favorite", obj, f"{sp}'s favorite {cat} is {obj}", m.start(), m.end())


def add_fact(ctx: TurnContext, facts: list[ExtractedFact], pred: str, obj: str, text: str, b: int, e: int) -> None:
    """Add one fact about the speaker to ``facts``, unless the span negates it.

    The object is trimmed; a negation between ``b`` and the object ("I'm not allergic to X")
    drops the fact, except for ``likes`` / ``dislikes``, which carry their polarity. An
    object of a predicate in ``CONCEPT_FACTS`` (six words at most) that is not yet a concept
    of the turn is added to ``ctx.concepts``. ``valid_from`` is the span's time expression.

    Args:
        ctx: The turn's state.
        facts: The turn's facts so far; appended to.
        pred: The predicate ("works_as", "likes", ...).
        obj: The object.
        text: The fact as a sentence ("Caroline works as a nurse").
        b: Where the span stating the fact starts.
        e: Where it ends.
    """
    obj = " ".join(obj.split()).strip(TRAIL_STRIP + ".!?")
    # "I'm not allergic to X", "my favorite is not X": no fact. Preferences read their negation
    # themselves ("I don't like X" is ``dislikes``).
    at = ctx.low.find(obj.lower(), b, max(e, b + len(obj))) if obj else -1
    if pred not in ("likes", "dislikes") and NEGATION_RE.search(ctx.low, b, at if at > b else e):
        return
    if obj and pred in CONCEPT_FACTS and len(obj.split()) <= 6 and not any(c.name == obj for c in ctx.concepts):
        kind = CONCEPT_FACTS[pred]
        if obj in ACTIVITY_SET or (obj.endswith("ing") and " " not in obj):
            kind = "activity"
        ctx.concepts.append(Concept(obj, kind, e, e, 3))
    if obj:
        facts.append(ExtractedFact(subject=ctx.speaker, predicate=pred, object=obj, text=text,
                                   source_turn_id=ctx.turn.id, valid_from=_valid_from(ctx, b, e)))  # fmt: skip


def dedupe_facts(facts: list[ExtractedFact]) -> list[ExtractedFact]:
    """The facts with each (subject, predicate, object) once, the first kept, in order.

    Args:
        facts: The turn's facts.

    Returns:
        A new list.
    """
    seen: set[tuple[str, str, str]] = set()
    out = []
    for f in facts:
        key = (f.subject, f.predicate, f.object)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _valid_from(ctx: TurnContext, b: int, e: int) -> datetime | None:
    """The start of the time expression of ``[b, e)``, if any: a fact's ``valid_from``."""
    tm = time_in(ctx, b, e)
    return tm.start if tm else None


def _name_after(ctx: TurnContext, pos: int, cat: str) -> str | None:
    """A person's name at ``pos`` as a favourite; a title ("my favorite book is Dune") becomes a work."""
    for i, p in enumerate(ctx.persons):
        if pos <= p.start <= pos + 5:
            if cat.split()[-1] in WORK_CATS:
                del ctx.persons[i]
                name = p.name.lower()
                ctx.concepts.append(Concept(name, "work", p.start, p.end, 0))
                return name
            return p.name
    return None


def _org_after(ctx: TurnContext, pos: int, end: int) -> str | None:
    """The name starting at ``pos``: a capitalised name or the noun phrase there (the longer)."""
    for p in ctx.persons:
        if pos <= p.start <= pos + 5:
            return None
    np = np_after(ctx, pos, end, allow_vague=True)
    for c in ctx.concepts:
        if pos <= c.start <= pos + 5 and c.prio <= 1 and (np is None or len(c.name) >= len(np) or c.name not in np):
            return c.name
    return np


def _clause_rest(low: str, pos: int, end: int) -> str:
    """The words from ``pos`` to the end of their clause (at most eight)."""
    m = CLAUSE_SPLIT_RE.search(low, pos, end)
    stop = m.start() if m else end
    m = REST_CUT_RE.search(low, pos, stop)
    stop = m.start() if m else stop
    words = low[pos:stop].split()[:8]
    while words and words[-1].strip(TRAIL_STRIP + ".!?") in TRAIL_WORDS:
        words.pop()
    return " ".join(words).strip(TRAIL_STRIP + ".!?")
