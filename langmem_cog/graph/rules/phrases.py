"""The noun-phrase reader shared by the stages of the rule-based extractor.

:func:`noun_phrase` reads the noun phrase at a position of a turn's lower-cased text
(determiners and evaluative adjectives skipped, at most five words, one inner "of");
:func:`with_object` extends a bare gerund with its object ("creating a serene space").
The entity stage (:mod:`~langmem_cog.graph.rules.entities`) reads the objects of
activity verbs and the fallback topics with them, the statement stage the objects of
facts and the targets of claims (:mod:`~langmem_cog.graph.rules.mentions`,
:mod:`~langmem_cog.graph.rules.facts`, :mod:`~langmem_cog.graph.rules.claims`). Both
are pure functions of the text.

Example:
    >>> noun_phrase("we adopted a cute puppy last week", 11, 33)
    ('puppy', 18, 23, 'a')
    >>> with_object("i love creating a serene space", "creating", 15, 30)
    'creating a serene space'
"""

from __future__ import annotations

from langmem_cog.graph.rules.lexicon import (
    ACTIVITY_SET,
    DETERMINERS,
    ED_NOUNS,
    GENERIC_PEOPLE,
    GERUND_DOBJ_RE,
    GERUND_OBJ_RE,
    NP_SKIP,
    NP_STOP,
    NP_TOKEN,
    PERSON_NOUNS,
    TRAIL_WORDS,
    VAGUE,
)

__all__ = ["noun_phrase", "with_object"]


def noun_phrase(low: str, pos: int, end: int, *, allow_vague: bool = False,
                stops: frozenset[int] = frozenset()) -> tuple[str, int, int, str] | None:  # fmt: skip
    """The noun phrase starting at ``pos``: ``(name, start, end, determiner)``, or None.

    Determiners and evaluative adjectives are skipped; the phrase stops at a
    function word, punctuation or after five words (one inner ``of`` allowed).
    """
    det = ""
    toks: list[tuple[int, int]] = []
    last_end = pos
    has_of = False
    for m in NP_TOKEN.finditer(low, pos, min(end, pos + 120)):
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
            if base in NP_STOP or base in GENERIC_PEOPLE or not w.endswith("'s"):
                break
        if not toks:
            if w in DETERMINERS or w in NP_SKIP or w.endswith("ly") and w not in ("family", "july", "italy"):
                if w in DETERMINERS:
                    det = det or w
                last_end = m.end()
                continue
            if w in NP_STOP or (w.endswith("ed") and w not in ED_NOUNS):
                return None
        else:
            if w == "of" and not has_of and len(toks) <= 2:
                has_of = True
                toks.append((m.start(), m.end()))
                last_end = m.end()
                continue
            if w in NP_STOP or w.endswith("ly") and w not in ("family", "july", "italy") or len(toks) >= 5:
                break
            if w.endswith("ed") and w not in ("seed", "bed", "red", "need", "feed", "speed") and len(toks) >= 1:
                break
        toks.append((m.start(), m.end()))
        last_end = m.end()
    while toks and low[toks[-1][0] : toks[-1][1]] in TRAIL_WORDS | NP_SKIP:
        toks.pop()
    if not toks:
        return None
    s, e = toks[0][0], toks[-1][1]
    name = low[s:e]
    words = name.split()
    has_of = "of" in words
    if words[-1] in PERSON_NOUNS:
        return None
    if words[-1] in VAGUE and not allow_vague:
        if has_of:
            i = words.index("of")
            if i + 1 < len(words):
                rest = words[i + 1 :]
                if rest and rest[-1] not in VAGUE and rest[0] not in NP_STOP:
                    return " ".join(rest), e - len(" ".join(rest)), e, det
        return None
    if words[0] in VAGUE and has_of:
        rest = words[words.index("of") + 1 :]
        if rest:
            return " ".join(rest), e - len(" ".join(rest)), e, det
    if all(w in NP_STOP or w.isdigit() for w in words) or len(name) < 2:
        return None
    return name, s, e, det



def with_object(low: str, name: str, name_end: int, end: int) -> str:
    """A bare gerund with its object: "creating a serene space", "learning about cultures"."""
    if " " in name or not name.endswith("ing") or name in VAGUE:
        return name
    obj = (GERUND_DOBJ_RE if name in ACTIVITY_SET else GERUND_OBJ_RE).match(low, name_end, end)
    if obj is None:
        return name
    rest = noun_phrase(low, obj.end(), end)
    if rest is None:
        return name
    return " ".join(low[name_end - len(name) : rest[2]].split()[:6])
