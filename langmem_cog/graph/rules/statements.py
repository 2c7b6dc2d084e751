"""The statement stage of the rule-based extractor: the events, facts and claims of a turn.

:class:`StatementStage` reads what a turn states once the entity stage
(:mod:`~langmem_cog.graph.rules.entities`) has found its persons and concepts; it is
the second stage :class:`~langmem_cog.graph.rules.extractor.RuleExtractor` runs on a
turn. :meth:`StatementStage.find` returns the turn's :class:`Statements`:

* events: first-person past, perfect, future and (with a time expression)
  present-progressive clauses, with their lemma, participants and resolved time;
* facts: job, workplace, allergy, favourites, pets, home, origin, sports, habits,
  status and generic preferences of the speaker, deduplicated per turn;
* claims: preferences, opinions and beliefs (also reported ones), their source,
  target (pronouns resolved best effort) and polarity from VADER with a lexical
  fallback, at most one per clause, behind cheap per-turn gates.

Questions give no statement. The rules themselves are described in
:mod:`langmem_cog.graph.rules.extractor`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import NamedTuple

from langmem_cog.graph.rules.context import Concept, TurnContext
from langmem_cog.graph.rules.lexicon import (
    ACTIVITY_SET,
    ALLERGY_RE,
    AMBIGUOUS_PAST,
    BARE_PAST_RE,
    BEEN_FOR_RE,
    CAP_KIN,
    CLAUSE_SPLIT_RE,
    COMMON,
    CONCEPT_FACTS,
    COORD_BEFORE_RE,
    DESIRE,
    DETERMINERS,
    ED_ADJ,
    EMOTION_OF_RE,
    EMOTION_POLARITY,
    EMOTION_WORDS,
    EVAL,
    EVAL_ANY_RE,
    EVAL_PRED_RE,
    EVAL_WORDS,
    EVENT_RE,
    EVENT_SUBJECTS,
    EVENT_TRAIL,
    EVERY_RE,
    EXPL_FRAME_RE,
    EXPLETIVE_RE,
    EXPLETIVE_SUBJ_RE,
    FAV_RE,
    FAV_REV_RE,
    FRAME_RE,
    FRAME_WORDS,
    FROM_RE,
    GENERIC_PEOPLE,
    HABIT_RE,
    HAVE_PET_RE,
    INTRANSITIVE,
    IRREGULAR,
    JOB_RE,
    JOBS,
    KIN_NORMAL,
    LIVE_RE,
    MOTION_PROG,
    NAMED_ONLY,
    NEGATION_RE,
    NP_SKIP,
    NP_STOP,
    NP_TOKEN,
    PERSON_NOUNS,
    PET_NAMED_RE,
    PETS,
    PLAYS_RE,
    POSS_SUBJ_PREV,
    PREF_RE,
    PREF_VERBS,
    PREF_WORDS,
    PREV_WORD_RE,
    PRONOUN_PERSON,
    PRONOUN_THING,
    QUESTION_START,
    REPORT_VERB_RE,
    REPORT_WORDS,
    REPORTER_RE,
    REST_CUT_RE,
    ROLLING_SPAN_RE,
    SELF_RE,
    SENT_END_RE,
    STATIVE,
    STATUS_RE,
    SUBORDINATORS,
    TRAIL_STRIP,
    TRAIL_WORDS,
    USED_TO_TURNED_RE,
    VAGUE,
    WHAT_A_RE,
    WORK_AT_RE,
    WORK_CATS,
)
from langmem_cog.graph.rules.phrases import noun_phrase, with_object
from langmem_cog.graph.rules.text import gerund, lemma, sentiment, split_clauses
from langmem_cog.graph.schema import ExtractedClaim, ExtractedEvent, ExtractedFact
from langmem_cog.timeparse import TimeMention

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
        gates = self._claim_gates(ctx)
        for (b, e), q, clauses in zip(ctx.sents, questions, sent_clauses, strict=True):
            if q:
                continue
            self._find_facts(ctx, b, e, facts)
            if not gates:
                continue
            for cb, ce in clauses:
                claim = self._claim(ctx, cb, ce, facts, gates)
                if claim is not None:
                    key = (claim.source, claim.target, claim.predicate)
                    if key not in seen_claims:
                        seen_claims.add(key)
                        claims.append(claim)
        return Statements(events, self._dedupe_facts(facts), claims)

    # ------------------------------------------------------------------ events

    def _time_in(self, ctx: TurnContext, lo: int, hi: int) -> TimeMention | None:
        """The first time expression in ``[lo, hi)``, or the one later expression that narrows it
        ("last month on June 15th", "in the spring ... yesterday"). A rolling span ("the past two
        weeks, except last Friday") or one followed by two more ("last week, Tuesday to Friday") stays."""
        inside = [tm for tm in ctx.times if tm.span[0] >= lo and tm.span[1] <= hi]
        if not inside:
            return None
        first = inside[0]
        if len(inside) != 2 or ROLLING_SPAN_RE.match(first.text):
            return first
        tm = inside[1]
        return tm if first.start <= tm.start and tm.end <= first.end and tm.end - tm.start < first.end - first.start else first

    def _find_events(self, ctx: TurnContext, sent_clauses: list[list[tuple[int, int]]]) -> list[ExtractedEvent]:
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
        low, text = ctx.low, ctx.text
        subj = m.group("subj")
        poss = m.group("poss")
        verb_word = m.group("past") or m.group("pp") or m.group("fut") or m.group("prog")
        if verb_word is None:
            return None
        tm = self._time_in(ctx, win_lo, win_hi)
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

    # ------------------------------------------------------------------ facts

    def _np_after(self, ctx: TurnContext, pos: int, end: int, *, allow_vague: bool = False) -> str | None:
        np = noun_phrase(ctx.low, pos, end, allow_vague=allow_vague, stops=ctx.pstarts)
        return np[0] if np else None

    def _valid_from(self, ctx: TurnContext, b: int, e: int) -> datetime | None:
        tm = self._time_in(ctx, b, e)
        return tm.start if tm else None

    def _fact(self, ctx: TurnContext, facts: list[ExtractedFact], pred: str, obj: str, text: str, b: int, e: int) -> None:
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
                                       source_turn_id=ctx.turn.id, valid_from=self._valid_from(ctx, b, e)))  # fmt: skip

    def _find_facts(self, ctx: TurnContext, b: int, e: int, facts: list[ExtractedFact]) -> None:
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
                self._fact(ctx, facts, "has", obj, f"{sp} has a {pet}" + (f" named {name}" if name else ""), m.start(), m.end())
                got = True
            for m in PET_NAMED_RE.finditer(text, b, e):
                if not (m.group("own") or got):
                    continue
                pet = (m.group("pet") or m.group("pet2")).lower()
                for name in (m.group("name"), m.group("name2")):
                    if name and name.lower() not in COMMON and name not in ctx.known:
                        self._fact(ctx, facts, "has", f"{pet} named {name}", f"{sp} has a {pet} named {name}", m.start(), m.end())
        if "i" in seg:
            if "'m a" in seg or "am a" in seg or "work" in seg or "job" in seg:
                for m in JOB_RE.finditer(low, b, e):
                    job = m.group("job") or m.group("job2") or m.group("job3")
                    job = " ".join(w for w in job.split() if w not in NP_SKIP or w in ("assistant",))
                    if job and job.split()[-1] not in ("fan", "bit", "lot", "mess", "little"):
                        pred = "works_as" if job.split()[-1] in JOBS or m.group("job2") or m.group("job3") else "is"
                        self._fact(ctx, facts, pred, job, f"{sp} works as {job}" if pred == "works_as" else f"{sp} is {job}", m.start(), m.end())
                for m in WORK_AT_RE.finditer(low, b, e):
                    org = self._org_after(ctx, m.start("rest"), e)
                    if org:
                        self._fact(ctx, facts, "works_at", org, f"{sp} works at {org}", m.start(), e)
            if "allerg" in seg:
                for m in ALLERGY_RE.finditer(low, b, e):
                    st = m.start("rest") if m.group("rest") else m.start("rest2")
                    obj = self._np_after(ctx, st, e, allow_vague=True)
                    if obj:
                        self._fact(ctx, facts, "allergic_to", obj, f"{sp} is allergic to {obj}", m.start(), e)
            if "live" in seg or "moved" in seg or "relocated" in seg:
                for m in LIVE_RE.finditer(low, b, e):
                    place = self._org_after(ctx, m.start("rest"), e)
                    if place:
                        self._fact(ctx, facts, "lives_in", place, f"{sp} lives in {place}", m.start(), e)
            if "from" in seg or "grew up" in seg or "born" in seg:
                for m in FROM_RE.finditer(low, b, e):
                    st = m.start("rest") if m.group("rest") else m.start("rest2")
                    place = self._org_after(ctx, st, e)
                    if place:
                        self._fact(ctx, facts, "from", place, f"{sp} is from {place}", m.start(), e)
            if "play" in seg:
                for m in PLAYS_RE.finditer(low, b, e):
                    obj = self._np_after(ctx, m.start("rest"), e)
                    if obj and obj not in ("it", "that", "with"):
                        self._fact(ctx, facts, "plays", obj, f"{sp} plays {obj}", m.start(), e)
            if "'m " in seg or " am " in seg:
                for m in STATUS_RE.finditer(low, b, e):
                    status = " ".join(m.group("st").split())
                    status = status[2:] if status.startswith("a ") else status
                    self._fact(ctx, facts, "is", status, f"{sp} is {status}", m.start(), m.end())
            if any(a in seg for a in ("usually", "always", "often", "normally", "regularly", "sometimes", "generally",
                                      "typically", "frequently", "occasionally", "tend to")):  # fmt: skip
                for m in HABIT_RE.finditer(low, b, e):
                    rest = self._clause_rest(low, m.start("rest"), e)
                    first = rest.split()[0] if rest else ""
                    past = first.endswith("ed") or (first in IRREGULAR and IRREGULAR[first] != first)
                    if rest and not past and first not in STATIVE and first not in ("be", "have", "get", "feel", "think", "find"):
                        self._fact(ctx, facts, "habit", rest, f"{sp} {m.group('adv')} {rest}", m.start(), e)
            if "been" in seg and (" for " in seg or " since " in seg):
                for m in BEEN_FOR_RE.finditer(low, b, e):
                    ing = m.group("ing")
                    if lemma(ing) in STATIVE or ing in ("going", "doing", "thinking", "feeling", "trying", "looking"):
                        continue
                    obj = self._clause_rest(low, m.start("ing"), m.start("dur"))
                    self._fact(ctx, facts, "habit", obj, f"{sp} has been {obj} {m.group('dur')}", m.start(), e)
            if "every" in seg or "daily" in seg or "weekly" in seg or " a week" in seg or " a month" in seg:
                for m in EVERY_RE.finditer(low, b, e):
                    v = m.group("verb")
                    if v in STATIVE or v in NP_STOP or lemma(v) in STATIVE or v.endswith("ed") or v in IRREGULAR:
                        continue
                    obj = f"{v}{m.group('obj')} {m.group('freq')}".strip()
                    self._fact(ctx, facts, "habit", obj, f"{sp} {obj}", m.start(), m.end())
        if "favo" in seg:
            for m in FAV_RE.finditer(low, b, e):
                cat = m.group("cat").strip()
                obj = self._name_after(ctx, m.start("rest"), cat) or self._org_after(ctx, m.start("rest"), e)
                if obj:
                    self._fact(ctx, facts, "favorite", obj, f"{sp}'s favorite {cat} is {obj}", m.start(), e)
            for m in FAV_REV_RE.finditer(low, b, e):
                np = m.group("np").split()
                while np and (np[0] in NP_STOP or np[0] in DETERMINERS):
                    np = np[1:]
                if np and len(np) <= 5:
                    obj = " ".join(np)
                    cat = m.group("cat") or "thing"
                    self._fact(ctx, facts, "favorite", obj, f"{sp}'s favorite {cat} is {obj}", m.start(), m.end())

    def _name_after(self, ctx: TurnContext, pos: int, cat: str) -> str | None:
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

    def _org_after(self, ctx: TurnContext, pos: int, end: int) -> str | None:
        """The name starting at ``pos``: a capitalised name or the noun phrase there (the longer)."""
        for p in ctx.persons:
            if pos <= p.start <= pos + 5:
                return None
        np = self._np_after(ctx, pos, end, allow_vague=True)
        for c in ctx.concepts:
            if pos <= c.start <= pos + 5 and c.prio <= 1 and (np is None or len(c.name) >= len(np) or c.name not in np):
                return c.name
        return np

    @staticmethod
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

    @staticmethod
    def _dedupe_facts(facts: list[ExtractedFact]) -> list[ExtractedFact]:
        seen: set[tuple[str, str, str]] = set()
        out = []
        for f in facts:
            key = (f.subject, f.predicate, f.object)
            if key not in seen:
                seen.add(key)
                out.append(f)
        return out

    # ------------------------------------------------------------------ claims

    @staticmethod
    def _is_question(low: str, b: int, e: int) -> bool:
        seg = low[b:e].rstrip()
        return seg.endswith("?") or bool(QUESTION_START.match(seg))

    def _polarity(self, clause: str, lexical: int) -> tuple[int, float]:
        """Polarity and sentiment: VADER's, or the lexical cue's where VADER is neutral or (for a
        preference verb, ``lexical`` given as +-2) contradicts it."""
        c = sentiment(clause)
        pol = 1 if c >= 0.05 else -1 if c <= -0.05 else 0
        lex = max(-1, min(1, lexical))
        if lex and (pol == 0 or (abs(lexical) == 2 and pol != lex)):
            return lex, 0.5 * lex
        return pol, round(c, 4)

    def _resolve_pronoun(self, ctx: TurnContext, word: str, before: int) -> str | None:
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

    def _subject_before(self, ctx: TurnContext, cb: int, pos: int) -> str | None:
        """The noun phrase (or resolved pronoun) right before ``pos`` in the clause ``[cb, pos)``."""
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
            return self._resolve_pronoun(ctx, last, toks[-1].start())
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

    def _target_np(self, ctx: TurnContext, pos: int, end: int) -> tuple[str | None, bool]:
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
            return self._resolve_pronoun(ctx, w, pos), False
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

    @staticmethod
    def _claim_gates(ctx: TurnContext) -> frozenset[str]:
        """Which claim rules can fire anywhere in the turn (cheap word-set tests)."""
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

    def _claim(self, ctx: TurnContext, cb: int, ce: int, facts: list[ExtractedFact], gates: frozenset[str]) -> ExtractedClaim | None:
        """At most one claim from the clause ``[cb, ce)``."""
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
                        target, generic = self._target_np(ctx, vm.end(), ce)
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
                target, generic = self._target_np(ctx, pm.start("rest"), ce)
                if target is not None:
                    lexical = 2 * vpol
                    predicate = "preference" if generic else "opinion"
                    if generic and not reported and pm.group("subj") == "i" and target != ctx.addressee:
                        pred = "likes" if vpol > 0 else "dislikes"
                        self._fact(ctx, facts, pred, target, f"{ctx.speaker} {pred} {target}", cb, ce)
            if predicate is None and has_eval:
                em = EVAL_PRED_RE.search(low, inner_lo, ce)
                if em is not None:
                    expletive = EXPLETIVE_RE.match(low, em.end(), ce)
                    if expletive is not None and EXPLETIVE_SUBJ_RE.search(low, inner_lo, em.start()):
                        if expletive.group(1) == "to":  # "It's great to collaborate ..." -> "collaborating"
                            target = self._target_np(ctx, expletive.start(1), ce)[0]
                        else:  # "It's great how you ..." -> the subject of the clause
                            target = self._belief_target(ctx, expletive.end(), ce)
                    else:
                        target = self._subject_before(ctx, inner_lo, em.start())
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
                    t, _generic = self._target_np(ctx, om.end(), ce)
                    if t is not None:
                        target, predicate = t, "opinion"
                        lexical = EMOTION_POLARITY.get(om.group("pred").split()[0], 0)
            if predicate is None and framed:
                # "I think we should go": a belief about the clause's subject (or first concept);
                # "I think it's important to rest": about resting
                xm = EXPL_FRAME_RE.match(low, inner_lo, ce)
                if xm is not None:
                    target = (self._target_np(ctx, xm.start(1), ce)[0] if xm.group(1) == "to"
                              else self._belief_target(ctx, xm.end(), ce))  # fmt: skip
                else:
                    target = self._belief_target(ctx, inner_lo, ce)
                if target is not None:
                    predicate = "opinion" if has_eval else "belief"
            if fm is not None and predicate == "opinion" and pm is None and not has_eval:
                predicate = "belief"  # "I think the store is closed": about a fact
        if predicate is None or not target:
            return None
        if target == source:
            return None
        clause = text[cb:ce].strip()
        pol, sent = self._polarity(clause, lexical)
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

    def _belief_target(self, ctx: TurnContext, lo: int, hi: int) -> str | None:
        low = ctx.low
        m = NP_TOKEN.search(low, lo, hi)
        if m is None:
            return None
        w = m.group()
        base = w.split("'")[0]
        if base in ("you", "u", "i", "we") or base in PRONOUN_PERSON:
            return self._resolve_pronoun(ctx, base, m.start())
        for p in ctx.persons:
            if m.start() <= p.start <= m.start() + 5:
                return p.name
        if base in PRONOUN_THING:
            return self._resolve_pronoun(ctx, base, m.start())
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
