"""The entity stage of the rule-based extractor: the persons and concepts of a turn.

:class:`EntityStage` finds who and what a turn mentions, writing into the turn's
:class:`~langmem_cog.graph.rules.context.TurnContext`; it is the first stage that
:class:`~langmem_cog.graph.rules.extractor.RuleExtractor` runs on a turn, before the
statement stage (:mod:`~langmem_cog.graph.rules.statements`):

* persons (:meth:`EntityStage.find_persons`): known names, capitalised words read as
  names (not places, brands, nationalities, acronyms, pets or words of a stoplist),
  owned kin ("my mom" -> "Melanie's mom"), unique prefixes of a speaker's name, and
  the vocatives among them;
* concepts (:meth:`EntityStage.find_concepts`): capitalised multi-word names, quoted
  titles, activities and holidays from the lexicon, and the noun phrase after activity
  and preference verbs; :meth:`EntityStage.fallback_concepts` adds the ``topic``
  concepts of a turn that yields nothing else;
* records: :meth:`EntityStage.person_names` and :meth:`EntityStage.concept_records`
  turn what was found into the fields of the turn's
  :class:`~langmem_cog.graph.schema.Extraction`.

The noun-phrase reader it shares with the statement stage is in
:mod:`~langmem_cog.graph.rules.phrases`.
"""

from __future__ import annotations

import re

from langmem_cog.graph.rules.context import Concept, Person, TurnContext
from langmem_cog.graph.rules.lexicon import (
    ACT_FIRST,
    ACTIVITY_SET,
    ADJ_SUFFIXES,
    AND_I_RE,
    BRANDS,
    CAP_BREAK,
    CAP_GAP_LONG_RE,
    CAP_GAP_RE,
    CAP_KIN,
    CAPS_RE,
    CHITCHAT_WORDS,
    COMMON,
    COMMON_VERBS,
    CONCEPT_CUES,
    DET_BEFORE_RE,
    DET_NP_RE,
    EVAL,
    FRAME_WORDS,
    HOLIDAY_PHRASES,
    HOLIDAY_RE,
    HOLIDAY_WORDS,
    JOBS,
    KIN_NORMAL,
    KIN_RE,
    MOTION_KIND,
    MULTI_FIRST,
    NAME_VERB_RE,
    NATIONALITIES,
    NEXT_WORD,
    NOT_NAMES,
    NP_STOP,
    NP_TOKEN,
    OBJ_KIND,
    OBJ_MULTI,
    OBJ_MULTI_PREFIX,
    ORG_HEADS,
    PARTICLES,
    PERSON_NOUNS,
    PETS,
    PLACE_ACRONYMS,
    PLACE_HEADS,
    PLACES,
    POSS_KIN_RE,
    PREF_VERBS,
    QUOTED_RE,
    THING_BEFORE_RE,
    VAGUE,
    VOCATIVE_AFTER,
    VOCATIVE_BEFORE,
)
from langmem_cog.graph.rules.phrases import noun_phrase, with_object
from langmem_cog.graph.rules.text import clean_np, fold, is_place_context, is_work_context, occurrences
from langmem_cog.graph.schema import ExtractedConcept

# A title's author right after it: "Piranesi by Susanna Clarke".
_BY_AUTHOR = re.compile(r"\s+by\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+\b")

__all__ = ["EntityStage"]


class EntityStage:
    """Persons and concepts of one turn: the entity stage of the rule-based extractor.

    Held by :class:`~langmem_cog.graph.rules.extractor.RuleExtractor`, which owns the state kept
    across calls. The stage keeps no state of its own: every method reads and writes the turn's
    :class:`~langmem_cog.graph.rules.context.TurnContext` only, so one instance can serve any
    number of turns.
    """

    # ------------------------------------------------------------------ persons

    def _add_person(self, ctx: TurnContext, name: str, start: int, end: int) -> None:
        if name and name != ctx.speaker:
            ctx.persons.append(Person(name, start, end))

    def find_persons(self, ctx: TurnContext) -> None:
        """Find the persons of the turn, and the quoted titles and capitalised names that are concepts.

        Fills ``ctx.persons`` (and adds to ``ctx.concepts``), then ``ctx.pstarts`` (where persons start)
        and ``ctx.vocatives`` (the persons addressed, as in "Thanks, Caroline!").

        Args:
            ctx: The turn's state, with its sentences (``ctx.sents``) set.
        """
        text, low = ctx.text, ctx.low
        kin_spans: list[tuple[int, int]] = []
        if "my " in low or "our " in low or "your " in low:
            for m in KIN_RE.finditer(text):
                rel = m.group("rel").lower()
                name = m.group("name")
                if name and rel not in PETS and rel != "pet" and name.lower() not in COMMON and name not in ctx.pets:
                    self._add_person(ctx, name, m.start("name"), m.end("name"))
                    kin_spans.append((m.start("name"), m.end("name")))
                elif rel in KIN_NORMAL:
                    owner = ctx.owner(m.group("own"))
                    if owner:
                        self._add_person(ctx, f"{owner}'s {KIN_NORMAL[rel]}", m.start(), m.end("rel"))
        if "'s " in text:
            for m in POSS_KIN_RE.finditer(text):
                if m.group("name").lower() not in COMMON:
                    self._add_person(ctx, f"{m.group('name')}'s {KIN_NORMAL[m.group('rel').lower()]}", m.start(), m.end())
        if '"' in text or "'" in text:  # quoted titles: concepts, and no names inside
            for m in QUOTED_RE.finditer(text):
                g = "q" if m.group("q") is not None else "s"
                q = clean_np(m.group(g).lower())
                if q and 1 <= len(q.split()) <= 10 and q.split()[0] not in ("s", "t", "re", "ve", "ll", "m", "d"):
                    ctx.concepts.append(Concept(q, "work", m.start(g), m.end(g), 0))
                    kin_spans.append((m.start(g), m.end(g)))
        self._scan_caps(ctx, kin_spans)
        ctx.pstarts = frozenset(p.start for p in ctx.persons)
        for p in ctx.persons:
            if VOCATIVE_BEFORE.search(text, max(0, p.start - 12), p.start) and VOCATIVE_AFTER.match(text, p.end):
                ctx.vocatives.add(p.start)

    def _scan_caps(self, ctx: TurnContext, skip: list[tuple[int, int]]) -> None:
        """Capitalised sequences -> persons (single names) or concepts (places, organisations, works...)."""
        text = ctx.text
        sent_starts = {b for b, _ in ctx.sents}
        # also treat the first word after an opening quote or bracket at a sentence start as a start
        toks = [(m.start(), m.end()) for m in CAPS_RE.finditer(text)]
        if not toks:
            return
        # group adjacent capitalised tokens
        groups: list[list[tuple[int, int]]] = []
        cur: list[tuple[int, int]] = [toks[0]]
        for s, e in toks[1:]:
            ps, pe = cur[-1]
            gap = text[pe:s]
            if CAP_GAP_RE.fullmatch(gap) or (len(cur) >= 2 and CAP_GAP_LONG_RE.fullmatch(gap) and "and" not in gap.split()):
                cur.append((s, e))
            else:
                groups.append(cur)
                cur = [(s, e)]
        groups.append(cur)
        for g in groups:
            # split at stop tokens (I, I'm, days, months, OMG...)
            part: list[tuple[int, int]] = []
            for s, e in g:
                w = text[s:e]
                wl = w.lower()
                wbase = wl[:-2] if wl.endswith("'s") else wl
                plural = len(wbase) > 4 and wbase.endswith("s") and wbase[:-1] in CAP_BREAK  # "Fridays", "Mondays"
                if wbase in CAP_BREAK or plural or w in CAP_KIN or w[:-2] in CAP_KIN:
                    if part:
                        self._classify_caps(ctx, part, sent_starts, skip)
                    part = []
                    if w in CAP_KIN or w[:-2] in CAP_KIN:
                        rel = CAP_KIN.get(w) or CAP_KIN[w[:-2]]
                        self._add_person(ctx, f"{ctx.speaker}'s {rel}", s, e)
                    continue
                part.append((s, e))
            if part:
                self._classify_caps(ctx, part, sent_starts, skip)

    def _classify_caps(self, ctx: TurnContext, part: list[tuple[int, int]], sent_starts: set[int],
                       skip: list[tuple[int, int]]) -> None:  # fmt: skip
        text = ctx.text
        s0, e_last = part[0][0], part[-1][1]
        if any(a <= s0 < b for a, b in skip):
            return
        at_start = s0 in sent_starts or (s0 > 0 and text[s0 - 1] in "\"'(" and (s0 - 1) in sent_starts)
        article = False
        if at_start and len(part) < 3:  # drop common sentence-initial words ("Yesterday Melanie", "The Godfather")
            while part and text[part[0][0] : part[0][1]].lower() in COMMON:
                article = text[part[0][0] : part[0][1]].lower() == "the"
                part = part[1:]
                at_start = False
            if not part:
                return
            s0 = part[0][0]
        elif len(part) > 1 and text[part[0][0] : part[0][1]].lower() == "the":
            article = True
        words = [text[s:e] for s, e in part]
        possessive = words[-1].endswith("'s")
        if possessive:
            words[-1] = words[-1][:-2]
            e_last -= 2
        name = " ".join(text[s0:e_last].split())
        first = words[0].split()[0]
        before = text[max(0, s0 - 40) : s0]
        if len(part) == 1 and " " not in words[0]:
            w = words[0]
            if article:  # "The Godfather"
                if w.lower() not in COMMON:
                    ctx.concepts.append(Concept(w.lower(), "work" if is_work_context(before) else "thing", s0, e_last, 0))
                return
            wl = w.lower()
            key = fold(wl)  # gazetteer key: "zürich" is looked up as "zurich" (ASCII words are their own key)
            alias = self._alias(ctx, w)
            if alias is not None:  # "Mel" -> "Melanie"
                self._add_person(ctx, alias, s0, e_last)
                return
            if w in ctx.known:
                self._add_person(ctx, w, s0, e_last)
                return
            if w in ctx.pets:
                ctx.concepts.append(Concept(wl, "thing", s0, e_last, 1))
                return
            if len(w) < 2 or key in COMMON:
                return
            if at_start and not (key not in NOT_NAMES and (AND_I_RE.match(text, e_last) or NAME_VERB_RE.match(text, e_last))):
                return  # an unknown single capitalised word at a sentence start is ambiguous
            if w.isupper():
                kind = "place" if key in PLACE_ACRONYMS else "topic"
                ctx.concepts.append(Concept(wl, kind, s0, e_last, 1))
                return
            if key in NATIONALITIES or key.endswith(("ern",)) and key[:-3] in ("north", "south", "east", "west", "midwest"):
                ctx.concepts.append(Concept(wl, "topic", s0, e_last, 1))
                return
            if key in PLACES:
                ctx.concepts.append(Concept(wl, "place", s0, e_last, 1))
                return
            if key in COMMON_VERBS or key in EVAL or key in FRAME_WORDS or key in VAGUE or key in HOLIDAY_WORDS:
                return  # a capitalised common word ("I Bet", "Hang in there")

            if key in BRANDS or any(c.isupper() for c in w[1:]) or any(c.isdigit() for c in w):
                ctx.concepts.append(Concept(wl, "thing", s0, e_last, 1))
                return
            if key in PLACE_HEADS or key in ORG_HEADS or key in ACTIVITY_SET or key in JOBS or key in PETS:
                return  # a capitalised common noun ("Park", "Yoga")
            if THING_BEFORE_RE.search(before):  # "the Prius", "a Fender": names of things
                ctx.concepts.append(Concept(wl, "thing", s0, e_last, 1))
                return
            if not possessive and is_place_context(before):
                ctx.concepts.append(Concept(wl, "place", s0, e_last, 1))
                return
            if not possessive and (is_work_context(before) or _BY_AUTHOR.match(text, e_last)):
                ctx.concepts.append(Concept(wl, "work", s0, e_last, 1))  # "reading Piranesi by Susanna Clarke"
                return
            if w in ctx.places:  # a place elsewhere in the batch ("going to Yosemite" ... "photos from Yosemite")
                ctx.concepts.append(Concept(wl, "place", s0, e_last, 1))
                return
            self._add_person(ctx, w, s0, e_last)
            return
        # a multi-word name
        if first in ctx.known and len(part) == 2 and words[1].lower() not in PLACE_HEADS | ORG_HEADS:
            self._add_person(ctx, first, s0, part[0][1])
            return
        low_words = name.lower().rstrip(".").split()
        if low_words[0] in ("the", "a", "an"):
            low_words = low_words[1:]
        if not low_words:
            return
        keys = [fold(w) for w in low_words]  # gazetteer keys ("são paulo" -> "sao paulo")
        head = keys[-1]
        if any(w in ORG_HEADS for w in keys):
            kind = "organization"
        elif head in PLACE_HEADS or keys[0] in PLACE_HEADS or head in PLACES or is_place_context(before):
            kind = "place"
        elif is_work_context(before) or (s0 > 0 and text[s0 - 1] in "\"'"):
            kind = "work"
        elif keys[-1] in NATIONALITIES or keys[0] in NATIONALITIES:
            kind = "topic"
        else:
            kind = "thing"
        ctx.concepts.append(Concept(" ".join(low_words), kind, s0, e_last, 0))

    @staticmethod
    def _alias(ctx: TurnContext, word: str) -> str | None:
        """The one speaker whose name starts with ``word`` ("Mel" -> "Melanie"), if exactly one does."""
        if len(word) < 2:
            return None
        hits = [sp for sp in ctx.speakers if len(sp) > len(word) and sp.startswith(word)]
        return hits[0] if len(hits) == 1 else None

    @staticmethod
    def person_names(ctx: TurnContext) -> list[str]:
        """The names of the turn's persons, each once, in the order of their first mention.

        Args:
            ctx: The turn's state, after both stages.

        Returns:
            The value of ``Extraction.persons``.
        """
        seen: dict[str, None] = {}
        for p in sorted(ctx.persons, key=lambda p: p.start):
            seen.setdefault(p.name, None)
        return list(seen)

    # ------------------------------------------------------------------ concepts

    def find_concepts(self, ctx: TurnContext) -> None:
        """Add the activities, holidays and objects of activity verbs (only where their words occur).

        Args:
            ctx: The turn's state, after :meth:`find_persons` (names stop the objects' noun phrases).
        """
        low = ctx.low
        for w in sorted(ctx.words & CONCEPT_CUES):
            for s, e in occurrences(low, w):
                nxt = NEXT_WORD.match(low, e)
                # activities (one or two words)
                if nxt is not None and w in ACT_FIRST and f"{w} {nxt.group(1)}" in ACTIVITY_SET:
                    ctx.concepts.append(Concept(f"{w} {nxt.group(1)}", "activity", s, nxt.end(), 2))
                elif w in ACTIVITY_SET:
                    ctx.concepts.append(Concept(w, "activity", s, e, 2))
                # activity and preference verbs: the noun phrase after them
                trig_end, v = -1, w
                if nxt is not None and w in MULTI_FIRST:
                    key = f"{w} {nxt.group(1)}"
                    if key in OBJ_MULTI_PREFIX:
                        nxt2 = NEXT_WORD.match(low, nxt.end())
                        if nxt2 is not None and f"{key} {nxt2.group(1)}" in OBJ_MULTI:
                            trig_end, v = nxt2.end(), f"{key} {nxt2.group(1)}"
                    if trig_end < 0 and key in OBJ_MULTI:
                        trig_end, v = nxt.end(), key
                if trig_end < 0 and w in OBJ_KIND:
                    if w.endswith("ing") and DET_BEFORE_RE.search(low, max(0, s - 12), s):
                        continue  # "my writing club": a modifier, not a verb
                    if nxt is not None and nxt.group(1) in PARTICLES:
                        trig_end, v = nxt.end(), f"{w} {nxt.group(1)}"
                    else:
                        trig_end = e
                if trig_end >= 0:
                    self._object_concept(ctx, v, trig_end)
        if ctx.words & HOLIDAY_WORDS or any(h in low for h in HOLIDAY_PHRASES):
            for m in HOLIDAY_RE.finditer(low):
                ctx.concepts.append(Concept(" ".join(m.group().split()), "topic", m.start(), m.end(), 2))

    def _object_concept(self, ctx: TurnContext, v: str, pos: int) -> None:
        low = ctx.low
        np = noun_phrase(low, pos, len(low), stops=ctx.pstarts)
        if np is None:
            return
        name, s, e, det = np
        if not det and (v.split()[0] in PREF_VERBS or OBJ_KIND.get(v.split()[0]) == "activity"):
            name = with_object(low, name, e, len(low))
            e = s + len(name) if low.startswith(name, s) else e
        if v.endswith(" to") and not det and name.split()[0] in COMMON_VERBS:
            return  # "went to see ...", "a trip to connect with ...": an infinitive, not a place
        vfirst = v.split()[0]
        kind = OBJ_KIND.get(vfirst, "thing")
        if vfirst in MOTION_KIND:
            kind = "place" if name.split()[-1] in PLACE_HEADS else "thing"
        if name in ACTIVITY_SET or (name.split()[0].endswith("ing") and name.split()[0] not in VAGUE):
            kind = "activity"  # "hiking", "hitting the gym"
        elif kind == "activity" or (kind == "place" and name.split()[-1] not in PLACE_HEADS and det):
            kind = "thing"
        ctx.concepts.append(Concept(name, kind, s, e, 3))

    def fallback_concepts(self, ctx: TurnContext) -> None:
        """Add up to two determiner noun phrases as ``topic`` concepts (for a turn that found nothing else).

        With no noun phrase after a determiner, the turn's longest run of content words is the topic.

        Args:
            ctx: The turn's state.
        """
        n = 0
        seen = set()
        for m in DET_NP_RE.finditer(ctx.low):
            np = noun_phrase(ctx.low, m.end(), len(ctx.low), stops=ctx.pstarts)
            if np is None or np[0] in seen:
                continue
            seen.add(np[0])
            ctx.concepts.append(Concept(np[0], "topic", np[1], np[2], 4))
            n += 1
            if n >= 2:
                return
        if n == 0:  # no determiner phrase: the longest run of content words
            best: tuple[int, int] = (0, 0)
            run: tuple[int, int] | None = None
            for m in NP_TOKEN.finditer(ctx.low):
                w = m.group()
                content = not (w in NP_STOP or w in VAGUE or w in EVAL or w in CHITCHAT_WORDS or w in PERSON_NOUNS
                               or len(w) < 3 or "'" in w or w.endswith(ADJ_SUFFIXES))  # fmt: skip
                if content and run is not None and ctx.low[run[1] : m.start()] == " " and m.start() - run[0] < 40:
                    run = (run[0], m.end())
                elif content:
                    run = (m.start(), m.end())
                else:
                    run = None
                if run is not None and run[1] - run[0] > best[1] - best[0]:
                    best = run
            if best[1] - best[0] >= 4:
                ctx.concepts.append(Concept(ctx.low[best[0] : best[1]], "topic", best[0], best[1], 5))

    @staticmethod
    def concept_records(ctx: TurnContext) -> list[ExtractedConcept]:
        """The turn's concepts as records: each name once (the kind of its best find), persons left out.

        Args:
            ctx: The turn's state, after both stages.

        Returns:
            The value of ``Extraction.concepts``, in the order of the concepts' positions.
        """
        persons_low = {p.name.lower() for p in ctx.persons} | {ctx.speaker.lower()}
        best: dict[str, Concept] = {}
        order: list[str] = []
        for c in sorted(ctx.concepts, key=lambda c: (c.start, c.prio)):
            name = " ".join(c.name.split())
            if not name or name in persons_low or len(name) > 80:
                continue
            if name not in best:
                best[name] = c
                order.append(name)
            elif c.prio < best[name].prio:
                best[name] = c._replace(start=best[name].start)
        tid = ctx.turn.id
        return [ExtractedConcept(name=n, source_turn_id=tid, kind=best[n].kind) for n in order]

