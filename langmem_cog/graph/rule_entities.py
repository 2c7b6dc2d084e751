"""Entity stages of the rule-based extractor: the persons and concepts of a turn.

:class:`EntityStages` holds the methods of
:class:`~langmem_cog.graph.rule_extractor.RuleExtractor` that find who and what a
turn mentions, writing into the turn's :class:`~langmem_cog.graph.rule_helpers._Ctx`:

* persons: known names, capitalised words read as names (not places, brands,
  nationalities, acronyms, pets or words of a stoplist), owned kin ("my mom" ->
  "Melanie's mom"), unique prefixes of a speaker's name, and the vocatives among them;
* concepts: capitalised multi-word names, quoted titles, activities and holidays
  from the lexicon, the noun phrase after activity and preference verbs, and the
  fallback ``topic`` concepts of a turn that yields nothing else; then the
  :class:`~langmem_cog.graph.schema.ExtractedConcept` records of the turn.

The noun-phrase reader (:meth:`EntityStages._noun_phrase`) and the gerund-object
rule (:meth:`EntityStages._with_object`) are shared with the statement stages of
:mod:`langmem_cog.graph.rule_statements`.
"""

from __future__ import annotations

from langmem_cog.graph.lexicon import (
    _ACT_FIRST,
    _ACTIVITY_SET,
    _ADJ_SUFFIXES,
    _AND_I_RE,
    _BRANDS,
    _CAP_BREAK,
    _CAP_GAP_LONG_RE,
    _CAP_GAP_RE,
    _CAP_KIN,
    _CAPS_RE,
    _CHITCHAT_WORDS,
    _COMMON,
    _COMMON_VERBS,
    _CONCEPT_CUES,
    _DET_BEFORE_RE,
    _DET_NP_RE,
    _DETERMINERS,
    _ED_NOUNS,
    _EVAL,
    _FRAME_WORDS,
    _GENERIC_PEOPLE,
    _GERUND_DOBJ_RE,
    _GERUND_OBJ_RE,
    _HOLIDAY_PHRASES,
    _HOLIDAY_RE,
    _HOLIDAY_WORDS,
    _JOBS,
    _KIN_NORMAL,
    _KIN_RE,
    _MOTION_KIND,
    _MULTI_FIRST,
    _NAME_VERB_RE,
    _NATIONALITIES,
    _NEXT_WORD,
    _NOT_NAMES,
    _NP_SKIP,
    _NP_STOP,
    _NP_TOKEN,
    _OBJ_KIND,
    _OBJ_MULTI,
    _OBJ_MULTI_PREFIX,
    _ORG_HEADS,
    _PARTICLES,
    _PERSON_NOUNS,
    _PETS,
    _PLACE_ACRONYMS,
    _PLACE_HEADS,
    _PLACES,
    _POSS_KIN_RE,
    _PREF_VERBS,
    _QUOTED_RE,
    _THING_BEFORE_RE,
    _TRAIL_WORDS,
    _VAGUE,
)
from langmem_cog.graph.rule_helpers import (
    _clean_np,
    _Concept,
    _Ctx,
    _fold,
    _is_place_context,
    _is_work_context,
    _occurrences,
    _Person,
)
from langmem_cog.graph.schema import ExtractedConcept

__all__ = ["EntityStages"]


class EntityStages:
    """Persons and concepts of one turn: a stage mixin of the rule-based extractor.

    Mixed into :class:`~langmem_cog.graph.rule_extractor.RuleExtractor`, which owns the state kept
    across calls. The stages keep no state of their own: every method reads and writes the turn's
    :class:`~langmem_cog.graph.rule_helpers._Ctx` only.
    """

    # ------------------------------------------------------------------ persons

    def _add_person(self, ctx: _Ctx, name: str, start: int, end: int) -> None:
        if name and name != ctx.speaker:
            ctx.persons.append(_Person(name, start, end))

    def _owner(self, ctx: _Ctx, own: str) -> str | None:
        own = own.lower()
        return ctx.addressee if own == "your" else ctx.speaker

    def _find_persons(self, ctx: _Ctx) -> None:
        text, low = ctx.text, ctx.low
        kin_spans: list[tuple[int, int]] = []
        if "my " in low or "our " in low or "your " in low:
            for m in _KIN_RE.finditer(text):
                rel = m.group("rel").lower()
                name = m.group("name")
                if name and rel not in _PETS and rel != "pet" and name.lower() not in _COMMON and name not in ctx.pets:
                    self._add_person(ctx, name, m.start("name"), m.end("name"))
                    kin_spans.append((m.start("name"), m.end("name")))
                elif rel in _KIN_NORMAL:
                    owner = self._owner(ctx, m.group("own"))
                    if owner:
                        self._add_person(ctx, f"{owner}'s {_KIN_NORMAL[rel]}", m.start(), m.end("rel"))
        if "'s " in text:
            for m in _POSS_KIN_RE.finditer(text):
                if m.group("name").lower() not in _COMMON:
                    self._add_person(ctx, f"{m.group('name')}'s {_KIN_NORMAL[m.group('rel').lower()]}", m.start(), m.end())
        if '"' in text or "'" in text:  # quoted titles: concepts, and no names inside
            for m in _QUOTED_RE.finditer(text):
                g = "q" if m.group("q") is not None else "s"
                q = _clean_np(m.group(g).lower())
                if q and 1 <= len(q.split()) <= 10 and q.split()[0] not in ("s", "t", "re", "ve", "ll", "m", "d"):
                    ctx.concepts.append(_Concept(q, "work", m.start(g), m.end(g), 0))
                    kin_spans.append((m.start(g), m.end(g)))
        self._scan_caps(ctx, kin_spans)

    def _scan_caps(self, ctx: _Ctx, skip: list[tuple[int, int]]) -> None:
        """Capitalised sequences -> persons (single names) or concepts (places, organisations, works...)."""
        text = ctx.text
        sent_starts = {b for b, _ in ctx.sents}
        # also treat the first word after an opening quote or bracket at a sentence start as a start
        toks = [(m.start(), m.end()) for m in _CAPS_RE.finditer(text)]
        if not toks:
            return
        # group adjacent capitalised tokens
        groups: list[list[tuple[int, int]]] = []
        cur: list[tuple[int, int]] = [toks[0]]
        for s, e in toks[1:]:
            ps, pe = cur[-1]
            gap = text[pe:s]
            if _CAP_GAP_RE.fullmatch(gap) or (len(cur) >= 2 and _CAP_GAP_LONG_RE.fullmatch(gap) and "and" not in gap.split()):
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
                if wbase in _CAP_BREAK or w in _CAP_KIN or w[:-2] in _CAP_KIN:
                    if part:
                        self._classify_caps(ctx, part, sent_starts, skip)
                    part = []
                    if w in _CAP_KIN or w[:-2] in _CAP_KIN:
                        rel = _CAP_KIN.get(w) or _CAP_KIN[w[:-2]]
                        self._add_person(ctx, f"{ctx.speaker}'s {rel}", s, e)
                    continue
                part.append((s, e))
            if part:
                self._classify_caps(ctx, part, sent_starts, skip)

    def _classify_caps(self, ctx: _Ctx, part: list[tuple[int, int]], sent_starts: set[int],
                       skip: list[tuple[int, int]]) -> None:  # fmt: skip
        text = ctx.text
        s0, e_last = part[0][0], part[-1][1]
        if any(a <= s0 < b for a, b in skip):
            return
        at_start = s0 in sent_starts or (s0 > 0 and text[s0 - 1] in "\"'(" and (s0 - 1) in sent_starts)
        article = False
        if at_start and len(part) < 3:  # drop common sentence-initial words ("Yesterday Melanie", "The Godfather")
            while part and text[part[0][0] : part[0][1]].lower() in _COMMON:
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
                if w.lower() not in _COMMON:
                    ctx.concepts.append(_Concept(w.lower(), "work" if _is_work_context(before) else "thing", s0, e_last, 0))
                return
            wl = w.lower()
            key = _fold(wl)  # gazetteer key: "zürich" is looked up as "zurich" (ASCII words are their own key)
            alias = self._alias(ctx, w)
            if alias is not None:  # "Mel" -> "Melanie"
                self._add_person(ctx, alias, s0, e_last)
                return
            if w in ctx.known:
                self._add_person(ctx, w, s0, e_last)
                return
            if w in ctx.pets:
                ctx.concepts.append(_Concept(wl, "thing", s0, e_last, 1))
                return
            if len(w) < 2 or key in _COMMON:
                return
            if at_start and not (key not in _NOT_NAMES and (_AND_I_RE.match(text, e_last) or _NAME_VERB_RE.match(text, e_last))):
                return  # an unknown single capitalised word at a sentence start is ambiguous
            if w.isupper():
                kind = "place" if key in _PLACE_ACRONYMS else "topic"
                ctx.concepts.append(_Concept(wl, kind, s0, e_last, 1))
                return
            if key in _NATIONALITIES or key.endswith(("ern",)) and key[:-3] in ("north", "south", "east", "west", "midwest"):
                ctx.concepts.append(_Concept(wl, "topic", s0, e_last, 1))
                return
            if key in _PLACES:
                ctx.concepts.append(_Concept(wl, "place", s0, e_last, 1))
                return
            if key in _COMMON_VERBS or key in _EVAL or key in _FRAME_WORDS or key in _VAGUE or key in _HOLIDAY_WORDS:
                return  # a capitalised common word ("I Bet", "Hang in there")

            if key in _BRANDS or any(c.isupper() for c in w[1:]) or any(c.isdigit() for c in w):
                ctx.concepts.append(_Concept(wl, "thing", s0, e_last, 1))
                return
            if key in _PLACE_HEADS or key in _ORG_HEADS or key in _ACTIVITY_SET or key in _JOBS or key in _PETS:
                return  # a capitalised common noun ("Park", "Yoga")
            if _THING_BEFORE_RE.search(before):  # "the Prius", "a Fender": names of things
                ctx.concepts.append(_Concept(wl, "thing", s0, e_last, 1))
                return
            if not possessive and _is_place_context(before):
                ctx.concepts.append(_Concept(wl, "place", s0, e_last, 1))
                return
            if not possessive and _is_work_context(before):
                ctx.concepts.append(_Concept(wl, "work", s0, e_last, 1))
                return
            self._add_person(ctx, w, s0, e_last)
            return
        # a multi-word name
        if first in ctx.known and len(part) == 2 and words[1].lower() not in _PLACE_HEADS | _ORG_HEADS:
            self._add_person(ctx, first, s0, part[0][1])
            return
        low_words = name.lower().rstrip(".").split()
        if low_words[0] in ("the", "a", "an"):
            low_words = low_words[1:]
        if not low_words:
            return
        keys = [_fold(w) for w in low_words]  # gazetteer keys ("são paulo" -> "sao paulo")
        head = keys[-1]
        if any(w in _ORG_HEADS for w in keys):
            kind = "organization"
        elif head in _PLACE_HEADS or keys[0] in _PLACE_HEADS or head in _PLACES or _is_place_context(before):
            kind = "place"
        elif _is_work_context(before) or (s0 > 0 and text[s0 - 1] in "\"'"):
            kind = "work"
        elif keys[-1] in _NATIONALITIES or keys[0] in _NATIONALITIES:
            kind = "topic"
        else:
            kind = "thing"
        ctx.concepts.append(_Concept(" ".join(low_words), kind, s0, e_last, 0))

    @staticmethod
    def _alias(ctx: _Ctx, word: str) -> str | None:
        """The one speaker whose name starts with ``word`` ("Mel" -> "Melanie"), if exactly one does."""
        if len(word) < 2:
            return None
        hits = [sp for sp in ctx.speakers if len(sp) > len(word) and sp.startswith(word)]
        return hits[0] if len(hits) == 1 else None

    @staticmethod
    def _person_names(ctx: _Ctx) -> list[str]:
        seen: dict[str, None] = {}
        for p in sorted(ctx.persons, key=lambda p: p.start):
            seen.setdefault(p.name, None)
        return list(seen)

    # ------------------------------------------------------------------ concepts

    def _find_concepts(self, ctx: _Ctx) -> None:
        """Activities, holidays and the objects of activity verbs (only where their words occur)."""
        low = ctx.low
        for w in sorted(ctx.words & _CONCEPT_CUES):
            for s, e in _occurrences(low, w):
                nxt = _NEXT_WORD.match(low, e)
                # activities (one or two words)
                if nxt is not None and w in _ACT_FIRST and f"{w} {nxt.group(1)}" in _ACTIVITY_SET:
                    ctx.concepts.append(_Concept(f"{w} {nxt.group(1)}", "activity", s, nxt.end(), 2))
                elif w in _ACTIVITY_SET:
                    ctx.concepts.append(_Concept(w, "activity", s, e, 2))
                # activity and preference verbs: the noun phrase after them
                trig_end, v = -1, w
                if nxt is not None and w in _MULTI_FIRST:
                    key = f"{w} {nxt.group(1)}"
                    if key in _OBJ_MULTI_PREFIX:
                        nxt2 = _NEXT_WORD.match(low, nxt.end())
                        if nxt2 is not None and f"{key} {nxt2.group(1)}" in _OBJ_MULTI:
                            trig_end, v = nxt2.end(), f"{key} {nxt2.group(1)}"
                    if trig_end < 0 and key in _OBJ_MULTI:
                        trig_end, v = nxt.end(), key
                if trig_end < 0 and w in _OBJ_KIND:
                    if w.endswith("ing") and _DET_BEFORE_RE.search(low, max(0, s - 12), s):
                        continue  # "my writing club": a modifier, not a verb
                    if nxt is not None and nxt.group(1) in _PARTICLES:
                        trig_end, v = nxt.end(), f"{w} {nxt.group(1)}"
                    else:
                        trig_end = e
                if trig_end >= 0:
                    self._object_concept(ctx, v, trig_end)
        if ctx.words & _HOLIDAY_WORDS or any(h in low for h in _HOLIDAY_PHRASES):
            for m in _HOLIDAY_RE.finditer(low):
                ctx.concepts.append(_Concept(" ".join(m.group().split()), "topic", m.start(), m.end(), 2))

    def _object_concept(self, ctx: _Ctx, v: str, pos: int) -> None:
        low = ctx.low
        np = self._noun_phrase(low, pos, len(low), stops=ctx.pstarts)
        if np is None:
            return
        name, s, e, det = np
        if not det and (v.split()[0] in _PREF_VERBS or _OBJ_KIND.get(v.split()[0]) == "activity"):
            name = self._with_object(low, name, e, len(low))
            e = s + len(name) if low.startswith(name, s) else e
        if v.endswith(" to") and not det and name.split()[0] in _COMMON_VERBS:
            return  # "went to see ...", "a trip to connect with ...": an infinitive, not a place
        vfirst = v.split()[0]
        kind = _OBJ_KIND.get(vfirst, "thing")
        if vfirst in _MOTION_KIND:
            kind = "place" if name.split()[-1] in _PLACE_HEADS else "thing"
        if name in _ACTIVITY_SET or (name.split()[0].endswith("ing") and name.split()[0] not in _VAGUE):
            kind = "activity"  # "hiking", "hitting the gym"
        elif kind == "activity" or (kind == "place" and name.split()[-1] not in _PLACE_HEADS and det):
            kind = "thing"
        ctx.concepts.append(_Concept(name, kind, s, e, 3))

    def _noun_phrase(self, low: str, pos: int, end: int, *, allow_vague: bool = False,
                     stops: frozenset[int] = frozenset()) -> tuple[str, int, int, str] | None:  # fmt: skip
        """The noun phrase starting at ``pos``: ``(name, start, end, determiner)``, or None.

        Determiners and evaluative adjectives are skipped; the phrase stops at a
        function word, punctuation or after five words (one inner ``of`` allowed).
        """
        det = ""
        toks: list[tuple[int, int]] = []
        last_end = pos
        has_of = False
        for m in _NP_TOKEN.finditer(low, pos, min(end, pos + 120)):
            gap = low[last_end : m.start()]
            if gap and not gap.isspace():
                break
            if toks == [] and gap.count(" ") > 1 and last_end != pos:
                break
            w = m.group()
            if m.start() in stops:
                break
            if "'" in w:  # contractions end a phrase: "everyone's gotta", "it's"
                base = w.split("'")[0]
                if base in _NP_STOP or base in _GENERIC_PEOPLE or not w.endswith("'s"):
                    break
            if not toks:
                if w in _DETERMINERS or w in _NP_SKIP or w.endswith("ly") and w not in ("family", "july", "italy"):
                    if w in _DETERMINERS:
                        det = det or w
                    last_end = m.end()
                    continue
                if w in _NP_STOP or (w.endswith("ed") and w not in _ED_NOUNS):
                    return None
            else:
                if w == "of" and not has_of and len(toks) <= 2:
                    has_of = True
                    toks.append((m.start(), m.end()))
                    last_end = m.end()
                    continue
                if w in _NP_STOP or w.endswith("ly") and w not in ("family", "july", "italy") or len(toks) >= 5:
                    break
                if w.endswith("ed") and w not in ("seed", "bed", "red", "need", "feed", "speed") and len(toks) >= 1:
                    break
            toks.append((m.start(), m.end()))
            last_end = m.end()
        while toks and low[toks[-1][0] : toks[-1][1]] in _TRAIL_WORDS | _NP_SKIP:
            toks.pop()
        if not toks:
            return None
        s, e = toks[0][0], toks[-1][1]
        name = low[s:e]
        words = name.split()
        has_of = "of" in words
        if words[-1] in _PERSON_NOUNS:
            return None
        if words[-1] in _VAGUE and not allow_vague:
            if has_of:
                i = words.index("of")
                if i + 1 < len(words):
                    rest = words[i + 1 :]
                    if rest and rest[-1] not in _VAGUE and rest[0] not in _NP_STOP:
                        return " ".join(rest), e - len(" ".join(rest)), e, det
            return None
        if words[0] in _VAGUE and has_of:
            rest = words[words.index("of") + 1 :]
            if rest:
                return " ".join(rest), e - len(" ".join(rest)), e, det
        if all(w in _NP_STOP or w.isdigit() for w in words) or len(name) < 2:
            return None
        return name, s, e, det

    def _fallback_concepts(self, ctx: _Ctx) -> None:
        """Up to two determiner noun phrases as ``topic`` concepts (a turn that found nothing else)."""
        n = 0
        seen = set()
        for m in _DET_NP_RE.finditer(ctx.low):
            np = self._noun_phrase(ctx.low, m.end(), len(ctx.low), stops=ctx.pstarts)
            if np is None or np[0] in seen:
                continue
            seen.add(np[0])
            ctx.concepts.append(_Concept(np[0], "topic", np[1], np[2], 4))
            n += 1
            if n >= 2:
                return
        if n == 0:  # no determiner phrase: the longest run of content words
            best: tuple[int, int] = (0, 0)
            run: tuple[int, int] | None = None
            for m in _NP_TOKEN.finditer(ctx.low):
                w = m.group()
                content = not (w in _NP_STOP or w in _VAGUE or w in _EVAL or w in _CHITCHAT_WORDS or w in _PERSON_NOUNS
                               or len(w) < 3 or "'" in w or w.endswith(_ADJ_SUFFIXES))  # fmt: skip
                if content and run is not None and ctx.low[run[1] : m.start()] == " " and m.start() - run[0] < 40:
                    run = (run[0], m.end())
                elif content:
                    run = (m.start(), m.end())
                else:
                    run = None
                if run is not None and run[1] - run[0] > best[1] - best[0]:
                    best = run
            if best[1] - best[0] >= 4:
                ctx.concepts.append(_Concept(ctx.low[best[0] : best[1]], "topic", best[0], best[1], 5))

    @staticmethod
    def _concept_records(ctx: _Ctx) -> list[ExtractedConcept]:
        persons_low = {p.name.lower() for p in ctx.persons} | {ctx.speaker.lower()}
        best: dict[str, _Concept] = {}
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

    def _with_object(self, low: str, name: str, name_end: int, end: int) -> str:
        """A bare gerund with its object: "creating a serene space", "learning about cultures"."""
        if " " in name or not name.endswith("ing") or name in _VAGUE:
            return name
        obj = (_GERUND_DOBJ_RE if name in _ACTIVITY_SET else _GERUND_OBJ_RE).match(low, name_end, end)
        if obj is None:
            return name
        rest = self._noun_phrase(low, obj.end(), end)
        if rest is None:
            return name
        return " ".join(low[name_end - len(name) : rest[2]].split()[:6])
