"""The claims of a turn, for the statement stage of the rule-based extractor.

A claim is a dated, polarised statement of a source about a target: a ``preference``
(a preference verb about a generic thing or activity: "I love running"), an
``opinion`` (about a specific thing or person, or an evaluative predication: "that film
is overrated", "What a beautiful painting!", "I'm so proud of you") or a ``belief`` (an
opinion frame without evaluation: "I think the store closes at nine"). Reported ones
("Mom thinks ...", "my sister loves ...") have the reporter as source.

:func:`claim_gates` tells from the turn's words which rules can fire at all;
:func:`clause_claim` reads at most one claim from a clause, with its target (pronouns
resolved with :mod:`~langmem_cog.graph.rules.mentions`) and its polarity (VADER's, with
a lexical fallback). A preference of the speaker's about a generic thing also gives a
``likes`` / ``dislikes`` fact (:func:`~langmem_cog.graph.rules.facts.add_fact`). The
statement stage (:mod:`~langmem_cog.graph.rules.statements`) calls both.
"""

from __future__ import annotations

import re

from langmem_cog.graph.rules.context import Concept, TurnContext
from langmem_cog.graph.rules.facts import add_fact
from langmem_cog.graph.rules.lexicon import (
    ACTIVITY_SET,
    CAP_KIN,
    EMOTION_OF_RE,
    EMOTION_POLARITY,
    EMOTION_WORDS,
    EVAL,
    EVAL_ANY_RE,
    EVAL_PRED_RE,
    EVAL_WORDS,
    EXPL_FRAME_RE,
    EXPLETIVE_RE,
    EXPLETIVE_SUBJ_RE,
    FRAME_RE,
    FRAME_WORDS,
    KIN_NORMAL,
    NEGATION_RE,
    NP_SKIP,
    NP_STOP,
    NP_TOKEN,
    PREF_RE,
    PREF_VERBS,
    PREF_WORDS,
    PRONOUN_PERSON,
    PRONOUN_THING,
    REPORT_VERB_RE,
    REPORT_WORDS,
    REPORTER_RE,
    SELF_RE,
    SENT_END_RE,
    STATIVE,
    USED_TO_TURNED_RE,
    WHAT_A_RE,
)
from langmem_cog.graph.rules.mentions import resolve_pronoun, subject_before
from langmem_cog.graph.rules.phrases import noun_phrase, with_object
from langmem_cog.graph.rules.text import gerund, sentiment
from langmem_cog.graph.schema import ExtractedClaim, ExtractedFact

__all__ = ["claim_gates", "clause_claim"]


def claim_gates(ctx: TurnContext) -> frozenset[str]:
    """Which claim rules can fire anywhere in the turn (cheap word-set tests).

    Args:
        ctx: The turn's state.

    Returns:
        The names of the rules whose cue words the turn has: ``"report"``, ``"frame"``,
        ``"pref"``, ``"eval"``, ``"emotion"``; empty if no claim can be read.
    """
    w = ctx.words
    gates = set()
    if w & REPORT_WORDS:
        gates.add("report")
    if w & FRAME_WORDS or "to me" in ctx.low or "ask me" in ctx.low:
        gates.add("frame")
    if w & PREF_WORDS:
        gates.add("pref")
    if w & EVAL_WORDS:
        gates.add("eval")
    if w & EMOTION_WORDS:
        gates.add("emotion")
    return frozenset(gates)


def clause_claim(ctx: TurnContext, cb: int, ce: int, facts: list[ExtractedFact], gates: frozenset[str]) -> ExtractedClaim | None:
    """At most one claim from the clause ``[cb, ce)``.

    Tried in order: a reported opinion, a preference verb (in an opinion frame's clause or
    the plain clause), an evaluative predication or "What a ...", an emotion about something
    ("I'm proud of ..."), then a framed belief. A target that is not a person and is named in
    the turn is added to ``ctx.concepts``.

    Args:
        ctx: The turn's state, after the entity stage.
        cb: Where the clause starts.
        ce: Where it ends.
        facts: The turn's facts so far; a preference of the speaker's about a generic thing
            appends its ``likes`` / ``dislikes`` fact.
        gates: The turn's :func:`claim_gates`.

    Returns:
        The claim (its ``content`` the clause's sentence), or None if the clause gives none,
        its target cannot be resolved, or the target is its own source.
    """
    low, text = ctx.low, ctx.text
    source = ctx.speaker
    predicate: str | None = None
    target: str | None = None
    lexical = 0
    body = cb
    reported = False
    # reported opinions: "Mom thinks ...", "my sister loves ...", "Josh says ..."
    if "report" in gates:
        for vm in REPORT_VERB_RE.finditer(low, cb, ce):
            m = REPORTER_RE.search(text, max(cb, vm.start() - 60), vm.start())
            if m is None:
                continue
            who = None
            if m.group("rel"):
                owner = ctx.owner(m.group("own"))
                if owner:
                    who = f"{owner}'s {KIN_NORMAL[m.group('rel').lower()]}"
            else:
                name = m.group("name")
                if name in CAP_KIN:
                    who = f"{ctx.speaker}'s {CAP_KIN[name]}"
                elif name in ctx.known or any(p.name == name for p in ctx.persons):
                    who = name
            if who and who != ctx.speaker:
                source, reported, body = who, True, vm.end()
                verb = " ".join(vm.group("verb").split())
                if verb in PREF_VERBS:
                    lexical = 2 * PREF_VERBS[verb]
                    target, generic = _target_np(ctx, vm.end(), ce)
                    predicate = "preference" if generic else "opinion"
                break
    if predicate is None:
        fm = FRAME_RE.search(low, body, ce) if "frame" in gates and not reported else None
        inner_lo = fm.end() if fm is not None else body
        framed = fm is not None or reported
        has_eval = "eval" in gates and EVAL_ANY_RE.search(low, inner_lo, ce) is not None
        if fm is not None and fm.group("verb") == "doubt":
            lexical = -1
        # preference verbs, in the frame's clause or the plain clause
        pm, vpol = _present_preference(low, inner_lo, ce) if "pref" in gates else (None, 0)
        if pm is not None:
            target, generic = _target_np(ctx, pm.start("rest"), ce)
            if target is not None:
                lexical = 2 * vpol
                predicate = "preference" if generic else "opinion"
                if generic and not reported and pm.group("subj") == "i" and target != ctx.addressee:
                    pred = "likes" if vpol > 0 else "dislikes"
                    add_fact(ctx, facts, pred, target, f"{ctx.speaker} {pred} {target}", cb, ce)
        if predicate is None and has_eval:
            em = EVAL_PRED_RE.search(low, inner_lo, ce)
            if em is not None:
                expletive = EXPLETIVE_RE.match(low, em.end(), ce)
                if expletive is not None and EXPLETIVE_SUBJ_RE.search(low, inner_lo, em.start()):
                    if expletive.group(1) == "to":  # "It's great to collaborate ..." -> "collaborating"
                        target = _target_np(ctx, expletive.start(1), ce)[0]
                    else:  # "It's great how you ..." -> the subject of the clause
                        target = _belief_target(ctx, expletive.end(), ce)
                else:
                    target = subject_before(ctx, inner_lo, em.start())
                if target is not None:
                    predicate = "opinion"
                    lexical = EVAL[em.group("adj")]
                    if NEGATION_RE.search(low, max(cb, em.start() - 4), em.start("adj")):
                        lexical = -lexical
            if predicate is None:
                wm = WHAT_A_RE.match(low, inner_lo, ce)
                if wm is not None:
                    np = noun_phrase(low, wm.start("np") + 1, ce)
                    if np:
                        target, predicate, lexical = np[0], "opinion", EVAL[wm.group("adj")]
        if predicate is None and "emotion" in gates:
            om = EMOTION_OF_RE.search(low, inner_lo, ce)
            if om is not None and SELF_RE.search(low, inner_lo, om.start()):
                t, _generic = _target_np(ctx, om.end(), ce)
                if t is not None:
                    target, predicate = t, "opinion"
                    lexical = EMOTION_POLARITY.get(om.group("pred").split()[0], 0)
        if predicate is None and framed:
            # "I think we should go": a belief about the clause's subject (or first concept);
            # "I think it's important to rest": about resting
            xm = EXPL_FRAME_RE.match(low, inner_lo, ce)
            if xm is not None:
                target = (_target_np(ctx, xm.start(1), ce)[0] if xm.group(1) == "to"
                          else _belief_target(ctx, xm.end(), ce))  # fmt: skip
            else:
                target = _belief_target(ctx, inner_lo, ce)
            if target is not None:
                predicate = "opinion" if has_eval else "belief"
        if fm is not None and predicate == "opinion" and pm is None and not has_eval:
            predicate = "belief"  # "I think the store is closed": about a fact
    if predicate is None or not target:
        return None
    if target == source:
        return None
    clause = text[cb:ce].strip()
    pol, sent = _polarity(clause, lexical)
    is_person = target in ctx.known or target in (ctx.addressee, ctx.speaker) or any(p.name == target for p in ctx.persons)
    # a target resolved from an earlier turn is not re-mentioned here: no concept for it
    if not is_person and target in low and not any(c.name == target for c in ctx.concepts):
        kind = "activity" if target in ACTIVITY_SET or (target.endswith("ing") and " " not in target) else "thing"
        ctx.concepts.append(Concept(target, kind, ce, ce, 3))
    sent_b, sent_e = next(((b, e) for b, e in ctx.sents if b <= cb < e), (cb, ce))
    content = text[sent_b:sent_e].strip() or clause
    return ExtractedClaim(
        source=source,
        target=target,
        predicate=predicate,
        polarity=pol,
        content=content,
        source_turn_id=ctx.turn.id,
        sentiment=sent,
        timestamp=ctx.turn.timestamp,
    )


def _target_np(ctx: TurnContext, pos: int, end: int) -> tuple[str | None, bool]:
    """Target of a preference verb at ``pos``: ``(name, generic)``."""
    low = ctx.low
    for p in ctx.persons:
        if pos <= p.start <= pos + 5:
            return p.name, False
    for c in ctx.concepts:
        if pos <= c.start <= pos + 4 and c.prio <= 1:
            return c.name, c.kind == "activity"
    m = NP_TOKEN.match(low, pos)
    if m is None:
        return None, False
    w = m.group()
    if w == "to":  # "love to paint", "like to go hiking"
        m2 = NP_TOKEN.match(low, m.end() + 1)
        if m2 is None:
            return None, False
        v = m2.group()
        if v in ("go", "do"):
            m3 = NP_TOKEN.match(low, m2.end() + 1)
            if m3 and m3.group().endswith("ing"):
                return m3.group(), True
        if v in NP_STOP or v in STATIVE:
            return None, False
        g = gerund(v)
        obj = noun_phrase(low, m2.end() + 1, end)
        return (f"{g} {obj[0]}" if obj and v not in ("go",) and len(obj[0].split()) <= 2 and g not in ACTIVITY_SET else g), True
    if w in ("you", "ya", "u", "it", "that", "this", "them", "him", "her", "these", "those", "how", "when",
             "the way", "what", "seeing", "hearing", "watching"):  # fmt: skip
        if w in ("how", "what", "when") or w in ("seeing", "hearing", "watching"):
            rest = noun_phrase(low, m.end() + 1, end)
            for c in ctx.concepts:
                if m.end() <= c.start < end and c.prio <= 3:
                    return c.name, False
            return (ctx.addressee if w == "how" else (rest[0] if rest else None)), False
        nxt = NP_TOKEN.match(low, m.end() + 1)
        if w in ("that", "this", "these", "those") and nxt and (nxt.group() not in NP_STOP or nxt.group() in NP_SKIP):
            np = noun_phrase(low, pos, end)  # "that café", "this new journey"
            return (np[0] if np else None), False
        return resolve_pronoun(ctx, w, pos), False
    np = noun_phrase(low, pos, end)
    if np is None:
        return None, False
    name, _, np_end, det = np
    if not det:
        name = with_object(low, name, np_end, end)
    generic = det in ("", "some", "any") or name in ACTIVITY_SET or name.split()[0].endswith("ing")
    if det in ("the", "that", "this", "these", "those", "your", "his", "her", "their"):
        generic = name in ACTIVITY_SET
    return name, generic


def _belief_target(ctx: TurnContext, lo: int, hi: int) -> str | None:
    """The target of a belief or of "It's great how ...": the subject of ``[lo, hi)``.

    A pronoun resolved, a person there, a name covering the noun phrase there, the noun phrase
    (a trailing verb dropped: "the store closes" -> "store"), else the first concept of the
    span.
    """
    low = ctx.low
    m = NP_TOKEN.search(low, lo, hi)
    if m is None:
        return None
    w = m.group()
    base = w.split("'")[0]
    if base in ("you", "u", "i", "we") or base in PRONOUN_PERSON:
        return resolve_pronoun(ctx, base, m.start())
    for p in ctx.persons:
        if m.start() <= p.start <= m.start() + 5:
            return p.name
    if base in PRONOUN_THING:
        return resolve_pronoun(ctx, base, m.start())
    np = noun_phrase(low, m.start(), hi)
    if np is not None:
        words = np[0].split()
        if len(words) >= 2 and words[-1].endswith("s") and not words[-1].endswith("ss") and not words[-2].endswith("s"):
            np = (" ".join(words[:-1]), np[1], np[2] - len(words[-1]) - 1, np[3])  # "the store closes"
        for c in ctx.concepts:  # a name covering the subject
            if c.start <= np[1] < c.end and c.prio <= 1:
                return c.name
        return np[0]
    for c in sorted(ctx.concepts, key=lambda c: c.start):
        if lo <= c.start < hi and c.prio <= 3:
            return c.name
    return None


def _polarity(clause: str, lexical: int) -> tuple[int, float]:
    """Polarity and sentiment: VADER's, or the lexical cue's where VADER is neutral or (for a
    preference verb, ``lexical`` given as +-2) contradicts it."""
    c = sentiment(clause)
    pol = 1 if c >= 0.05 else -1 if c <= -0.05 else 0
    lex = max(-1, min(1, lexical))
    if lex and (pol == 0 or (abs(lexical) == 2 and pol != lex)):
        return lex, 0.5 * lex
    return pol, round(c, 4)


def _present_preference(low: str, start: int, end: int) -> tuple[re.Match[str] | None, int]:
    """The first preference verb of ``low[start:end]`` that speaks of now, and its polarity now.

    A wish ("I'd like", "I would love") is none. "I used to love X" says nothing of now unless its
    sentence says the preference has turned ("..., but not anymore", "... and I no longer do"): then
    the opposite holds now.

    Example:
        >>> m, pol = _present_preference("i used to love tea, but not anymore.", 0, 17)
        >>> m.group("verb"), pol
        ('love', -1)
    """
    for pm in PREF_RE.finditer(low, start, end):
        if low[max(0, pm.start("verb") - 3) : pm.start("verb")] in ("'d ", "ld "):
            return None, 0  # a wish
        vpol = PREF_VERBS[" ".join(pm.group("verb").split())] * (-1 if pm.group("neg") else 1)
        if not pm.group("used"):
            return pm, vpol
        stop = SENT_END_RE.search(low, pm.end())
        if USED_TO_TURNED_RE.search(low, pm.end(), stop.start() if stop else len(low)):
            return pm, -vpol
    return None, 0
