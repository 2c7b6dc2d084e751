"""The statement stage of the rule-based extractor: the events, facts and claims of a turn.

:class:`StatementStage` reads what a turn states once the entity stage
(:mod:`~langmem_cog.graph.rules.entities`) has found its persons and concepts; it is
the second stage :class:`~langmem_cog.graph.rules.extractor.RuleExtractor` runs on a
turn. :meth:`StatementStage.find` returns the turn's :class:`Statements`:

* events (read here): first-person past, perfect, future and (with a time expression)
  present-progressive clauses, with their lemma, participants and resolved time;
* facts (:mod:`~langmem_cog.graph.rules.facts`): job, workplace, allergy, favourites,
  pets, home, origin, sports, habits, status and generic preferences of the speaker,
  deduplicated per turn;
* claims (:mod:`~langmem_cog.graph.rules.claims`): preferences, opinions and beliefs
  (also reported ones), their source, target (pronouns resolved best effort) and
  polarity from VADER with a lexical fallback, at most one per clause, behind cheap
  per-turn gates.

The readers of what a span of the turn mentions (its time expression, the noun phrase
at or before a position, the referent of a pronoun) are in
:mod:`~langmem_cog.graph.rules.mentions`. Questions give no statement. The rules
themselves are described in :mod:`langmem_cog.graph.rules.extractor`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from langmem_cog.graph.rules.claims import claim_gates, clause_claim
from langmem_cog.graph.rules.context import TurnContext
from langmem_cog.graph.rules.facts import dedupe_facts, find_facts
from langmem_cog.graph.rules.lexicon import (
    AMBIGUOUS_PAST,
    BARE_PAST_RE,
    COMMON,
    COORD_BEFORE_RE,
    DESIRE,
    DETERMINERS,
    ED_ADJ,
    EVENT_RE,
    EVENT_SUBJECTS,
    EVENT_TRAIL,
    INTRANSITIVE,
    IRREGULAR,
    MOTION_PROG,
    NAMED_ONLY,
    NP_STOP,
    PERSON_NOUNS,
    PETS,
    POSS_SUBJ_PREV,
    PREV_WORD_RE,
    QUESTION_START,
    REST_CUT_RE,
    STATIVE,
    SUBORDINATORS,
    TRAIL_STRIP,
)
from langmem_cog.graph.rules.mentions import time_in
from langmem_cog.graph.rules.text import lemma, split_clauses
from langmem_cog.graph.schema import ExtractedClaim, ExtractedEvent, ExtractedFact

__all__ = ["StatementStage", "Statements"]


class Statements(NamedTuple):
    """What one turn states, as found by :meth:`StatementStage.find`.

    Attributes:
        events: The turn's events, in the order of their clauses.
        facts: The turn's facts about its speaker, each (subject, predicate, object) once.
        claims: The turn's claims, each (source, target, predicate) once.
    """

    events: list[ExtractedEvent]
    facts: list[ExtractedFact]
    claims: list[ExtractedClaim]


class StatementStage:
    """Events, facts and claims of one turn: the statement stage of the rule-based extractor.

    Held by :class:`~langmem_cog.graph.rules.extractor.RuleExtractor` and run after the entity
    stage. It keeps no state: every method works on the turn's
    :class:`~langmem_cog.graph.rules.context.TurnContext`, so one instance can serve any number of
    turns.
    """

    def find(self, ctx: TurnContext) -> Statements:
        """The events, facts and claims of the turn.

        Sentences that are questions give nothing. Events are read from every other sentence first;
        then, sentence by sentence, its facts and the claims of its clauses (a preference claim about a
        generic thing also gives a ``likes`` / ``dislikes`` fact). The concepts that facts and claims
        name are added to ``ctx.concepts``.

        Args:
            ctx: The turn's state, after the entity stage (persons, concepts, vocatives).

        Returns:
            The turn's statements.
        """
        low = ctx.low
        questions = [self._is_question(low, b, e) for b, e in ctx.sents]
        sent_clauses = [split_clauses(low, b, e) if not q else [] for (b, e), q in zip(ctx.sents, questions, strict=True)]
        events = self._find_events(ctx, sent_clauses)
        facts: list[ExtractedFact] = []
        claims: list[ExtractedClaim] = []
        seen_claims: set[tuple[str, str, str]] = set()
        gates = claim_gates(ctx)
        for (b, e), q, clauses in zip(ctx.sents, questions, sent_clauses, strict=True):
            if q:
                continue
            find_facts(ctx, b, e, facts)
            if not gates:
                continue
            for cb, ce in clauses:
                claim = clause_claim(ctx, cb, ce, facts, gates)
                if claim is not None:
                    key = (claim.source, claim.target, claim.predicate)
                    if key not in seen_claims:
                        seen_claims.add(key)
                        claims.append(claim)
        return Statements(events, dedupe_facts(facts), claims)

    @staticmethod
    def _is_question(low: str, b: int, e: int) -> bool:
        """Whether the sentence ``low[b:e]`` is a question (ends on "?" or opens like one)."""
        seg = low[b:e].rstrip()
        return seg.endswith("?") or bool(QUESTION_START.match(seg))

    # ------------------------------------------------------------------ events

    def _find_events(self, ctx: TurnContext, sent_clauses: list[list[tuple[int, int]]]) -> list[ExtractedEvent]:
        """The events of the turn, clause by clause.

        Args:
            ctx: The turn's state.
            sent_clauses: The clauses of each sentence of ``ctx.sents`` (none for a question).

        Returns:
            The events, in the order of their clauses.
        """
        low = ctx.low
        events: list[ExtractedEvent] = []
        has_subject = bool(ctx.words & EVENT_SUBJECTS)
        for (sb, _), clauses in zip(ctx.sents, sent_clauses, strict=True):
            for cb, ce in clauses:
                if not has_subject and cb != sb:
                    continue
                matches = list(EVENT_RE.finditer(low, cb, ce)) if has_subject else []
                # "Jon and I": the subject starts at "Jon" (not at "yesterday" in "yesterday and I'll ...")
                starts = []
                for m in matches:
                    coord = COORD_BEFORE_RE.search(low, max(cb, m.start() - 25), m.start()) if m.group("subj") == "i" else None
                    starts.append(coord.start() if coord is not None and coord.group(1) not in COMMON else m.start())
                if cb == sb and not matches or (matches and matches[0].start() > cb and cb == sb):
                    bare = BARE_PAST_RE.match(low, cb, ce)
                    if bare is not None and bare.group("past") not in ED_ADJ:
                        matches.insert(0, bare)
                        starts.insert(0, cb)
                for k, m in enumerate(matches):
                    win_lo = cb if k == 0 else starts[k]
                    win_hi = starts[k + 1] if k + 1 < len(matches) else ce
                    ev = self._event(ctx, m, win_lo, win_hi, sb, starts[k])
                    if ev is not None:
                        events.append(ev)
        return events

    def _event(self, ctx: TurnContext, m: re.Match[str], win_lo: int, win_hi: int, sent_b: int,
               subj_lo: int) -> ExtractedEvent | None:  # fmt: skip
        """The event of one subject-verb match, or None where the rules give none.

        Args:
            ctx: The turn's state.
            m: A match of the event pattern (or of the bare past at a sentence start).
            win_lo: Where the match's window starts (its clause's start for the first match).
            win_hi: Where the window ends (the next match's subject, else the clause's end).
            sent_b: Where the match's sentence starts.
            subj_lo: Where the subject starts ("Jon" in "Jon and I went ...").

        Returns:
            The event, or None for a wish, a negation, a state, a subordinate clause, an
            ambiguous past without a time expression, or a description too short to stand.
        """
        low, text = ctx.low, ctx.text
        subj = m.group("subj")
        poss = m.group("poss")
        verb_word = m.group("past") or m.group("pp") or m.group("fut") or m.group("prog")
        if verb_word is None:
            return None
        tm = time_in(ctx, win_lo, win_hi)
        if tm is None:  # a time expression before the clause, in the same sentence ("Last week, ... I went")
            for t in ctx.times:
                if sent_b <= t.span[0] and t.span[1] <= win_lo:
                    tm = t
        # the verb
        fut = m.group("fut")
        vstart = m.start("past") if m.group("past") else m.start("pp") if m.group("pp") else (
            m.start("fut") if fut else m.start("prog"))  # fmt: skip
        if fut is not None:
            if DESIRE.search(m.group()):
                return None  # "I want to ...": a wish, not an event
            if fut in ("never", "not"):
                return None
            if fut in DETERMINERS:  # "I'm going to the park"
                verb = "go"
                g = max(m.group().rfind("going"), m.group().rfind("gonna"))
                vstart = m.start() + g if g >= 0 else vstart
            else:
                verb = IRREGULAR.get(fut, fut)
                if verb in ("be", "have") and tm is None:
                    return None
        elif m.group("prog") is not None:
            prog = m.group("prog")
            if prog not in MOTION_PROG and tm is None:
                return None
            verb = lemma(prog)
        elif m.group("pp") is not None:
            pp = m.group("pp")
            if pp.startswith("been to"):
                verb = "go"
            elif pp.startswith("been "):
                verb = lemma(pp.split()[1])
            else:
                if pp in AMBIGUOUS_PAST and tm is None:
                    return None
                verb = lemma(pp)
        else:
            past = m.group("past")
            if past in AMBIGUOUS_PAST and tm is None:
                return None
            verb = lemma(past)
        if verb in STATIVE or not verb.isalpha() or len(verb) < 2:
            return None
        prev = PREV_WORD_RE.search(low, max(0, subj_lo - 30), subj_lo)
        prev_word = prev.group(1) if prev and not prev.group(2) else ""
        if prev_word in SUBORDINATORS:
            return None  # "since we last talked", "if I go": not a reported event
        kin_subject = None
        subj_hi = m.end("subj")
        if poss is not None and not subj.endswith(" i") and prev_word and prev_word not in POSS_SUBJ_PREV:
            return None  # "I played one of my songs ...": "my songs" is an object, not a subject
        if poss is not None and not subj.endswith(" i"):
            head = poss.split()[-1]
            if head in STATIVE or head in NP_STOP or head in ("favorite", "favourite"):
                return None
            for p in ctx.persons:
                if subj_lo <= p.start < subj_hi:
                    kin_subject = p.name
                    break
            if kin_subject is None:
                if head in NAMED_ONLY - PETS or head in PERSON_NOUNS:
                    return None  # "my friend ..." without a name: not the speaker's event
                vstart = m.start("poss")  # "my car broke down" -> "car broke down"
        # text: from the verb to the end of the window, time expressions removed, at most 12 words
        cut = REST_CUT_RE.search(low, vstart, win_hi)
        hi = cut.start() if cut is not None and cut.group() != "," else win_hi
        pieces = []
        pos = vstart
        for t in ctx.times:
            if t.span[0] >= pos and t.span[1] <= hi:
                pieces.append(text[pos : t.span[0]])
                pos = t.span[1]
        pieces.append(text[pos:hi])
        words = " ".join(pieces).split()[:12]
        while words and words[-1].lower().strip(TRAIL_STRIP + ".!?") in EVENT_TRAIL:
            words.pop()
        desc = " ".join(words).strip(TRAIL_STRIP + ".!?")
        if not desc or (" " not in desc and verb not in INTRANSITIVE):
            return None
        # participants: the speaker (or the kin subject), then the people named in the clause
        participants: list[str] = [kin_subject or ctx.speaker]
        for p in ctx.persons:
            if subj_lo <= p.start < hi and p.name not in participants and p.start not in ctx.vocatives:
                participants.append(p.name)
        concepts = []
        for c in ctx.concepts:
            if subj_lo <= c.start and c.end <= hi and c.name not in concepts:
                concepts.append(c.name)
        return ExtractedEvent(
            text=desc,
            participants=tuple(participants),
            source_turn_id=ctx.turn.id,
            start=tm.start if tm else None,
            end=tm.end if tm else None,
            time_text=tm.text if tm else None,
            concepts=tuple(concepts),
            verb=verb,
        )
