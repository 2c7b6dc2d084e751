"""Deterministic, rule-based extraction of PEC2F records from raw turns.

:class:`RuleExtractor` turns each :class:`~langmem_cog.records.Turn` into one
:class:`~langmem_cog.graph.schema.Extraction` with regular expressions, small
lexicons and VADER sentiment. It needs no model and no network, is deterministic
(the same turns give equal extractions) and fast (thousands of turns per second
on one core), so it can index every turn of a long conversation and serve as
the fallback of the LLM extractor.

Example:
    >>> from datetime import datetime, timezone
    >>> from langmem_cog.records import Turn
    >>> ts = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    >>> turn = Turn(id="D1:3", namespace="demo", speaker="Caroline", timestamp=ts,
    ...             text="I went to a support group yesterday. I think it was amazing!")
    >>> ex = RuleExtractor().extract([turn])[0]
    >>> ev = ex.events[0]
    >>> ev.text, ev.verb, ev.participants, ev.start.date().isoformat(), ev.time_text
    ('went to a support group', 'go', ('Caroline',), '2023-05-07', 'yesterday')
    >>> [(c.source, c.target, c.predicate, c.polarity) for c in ex.claims]
    [('Caroline', 'support group', 'opinion', 1)]
    >>> is_chitchat("Thanks, Melanie!")
    True

Rules in brief:

* **Chit-chat** (greetings, thanks, farewells, bare reactions such as "Wow, that's
  great!") gives an empty extraction; see :func:`is_chitchat`.
* **Persons** (``Extraction.persons``) are the people *mentioned* in the turn other
  than its speaker. The speaker is ``Extraction.speaker`` and is always a Person; it
  is left out of ``persons`` so that ``Extraction.empty`` stays meaningful. A person
  is a known name (speakers, ``known_people``, names introduced as "my friend Josh"
  or "his name is Kyle"), a capitalised word that is not at the start of a sentence
  and not read otherwise, or a capitalised word at a sentence start followed by a
  verb of people ("Doug started ...", "Anna said ...", "Jon and I ..."). Not persons:
  a stoplist of common capitalised words (I, days, months, OMG, God, ...), places
  (after "in/at/to/from ..." or in a small gazetteer of countries, states and big
  cities), nationalities, acronyms, brands, names after an article ("the Prius"),
  and pets (learned from "my dog Luna", "a cat named Oliver", "Oscar, my guinea
  pig", and "her name is Coco" near a pet word); pet names are concepts of kind
  ``thing``. A unique prefix of a speaker's name is that speaker ("Mel" ->
  "Melanie"). Kin without a name become ``"<owner>'s <relation>"``: "my mom" said by
  Melanie is ``"Melanie's mom"``, "your sister" said to Melanie is ``"Melanie's
  sister"`` (mum/mother -> mom, father -> dad, children -> kids, ...); a name given
  with the relation wins ("my friend Josh" is ``"Josh"``). The *addressee* of a turn
  is the nearest other speaker of its conversation in the batch (before it, else
  after it): "you" in a claim and "your mom" refer to them.
* **Concepts** are lower-cased, trimmed names: capitalised multi-word names
  ("little fern"), quoted titles, hobbies and activities from a lexicon
  ("running", "pottery"), holidays, places, and the noun phrase after activity and
  preference verbs ("went to *the farmers market*", "love *hiking*", "adopted *a
  puppy*"). Articles and evaluative adjectives are dropped ("an awesome trip" ->
  "trip"). Kinds: ``place``, ``organization``, ``thing``, ``topic``, ``activity``,
  ``work``. When a turn with content yields nothing else, up to two noun phrases
  after a determiner (else its longest run of content words) are kept as
  ``topic`` concepts, so that content-bearing turns are represented in the graph.
* **Events** are first-person past, perfect, future and (with a time expression)
  present-progressive clauses: "I went ...", "we adopted ...", "I'm going to ...",
  "I've finished ...", "Next month I'm having ...", a sentence opening on a past
  verb ("Lost my job yesterday."), and "my X <past verb>" ("my son broke his arm":
  the participant is ``"<speaker>'s son"``; "my car broke down": the speaker). No
  event for negations, wishes ("I want to ..."), questions, states ("I felt",
  "I loved", ...), subordinate clauses ("since we last talked", "if I go"), or an
  ambiguous past ("I read", "I had") without a time expression. One event per
  subject-verb clause. The time is the first time expression of the clause, or the
  one later expression of the clause that narrows it ("last month on June 15th"; not
  a rolling span, "the past two weeks, except last Friday", nor one followed by two,
  "last week, from Tuesday to Friday"), else the last one before the clause in its
  sentence ("Yesterday, I ..."), resolved with
  :func:`~langmem_cog.timeparse.resolve_time_expressions` against the turn's
  timestamp; with none, ``start``/``end`` stay ``None`` (the graph store falls back to
  the turn's timestamp). Participants: the speaker first (or the kin subject), then
  the persons named in the clause ("my kids and I" adds ``"<speaker>'s kids"``; "we"
  adds nobody; an addressed "..., Caroline!" is not a participant). ``verb`` is a
  lemma from an irregular-verb table and suffix rules.
* **Facts** (subject: the speaker): job (``works_as``: "I work as a nurse", "I'm a
  chemistry teacher"; ``works_at``), ``allergic_to``, ``favorite`` ("my favorite book
  is Dune", "X is my favorite"), pets (``has``: "dog named Bailey"), ``lives_in``,
  ``from``, ``plays``, habits (``habit``: "I usually ...", "I've been painting for
  seven years", "I ... every week"), status (``is``: married, vegan, ...) and generic
  preferences (``likes`` / ``dislikes``). ``valid_from`` is the time expression of the
  fact's sentence, if any.
* **Claims** -- the decision between Fact and Claim: a preference verb (love, like,
  enjoy, hate, can't stand, ...) about a *generic* thing or activity ("I love
  running", "I hate crowds", "I love painting landscapes") gives both a Fact
  (``likes``/``dislikes``: the stable preference, for factual questions) and a Claim
  with predicate ``preference`` (the dated, polarised statement that reconciliation
  can supersede: "I hate running" then "I love running now"). About a *specific*
  thing, person or work ("I love that café", "I loved the movie", "I love you") it
  is an evaluation: a Claim with predicate ``opinion`` and no Fact ("I love that
  café" is borderline; the demonstrative makes it an evaluation). Opinion frames ("I
  think", "I believe", "I feel like", "in my opinion", "I'm sure", "I bet") give
  ``opinion`` when the embedded clause has an evaluative adjective, else ``belief``
  ("I believe the store closes at nine"). Evaluative predications ("that film is
  overrated", "the manager is unfair", "you're amazing", "What a beautiful
  painting!", "I'm so proud of you") give ``opinion``. Reported opinions ("Mom
  thinks ...", "my sister loves ...", "Josh says ...") are attributed to that person,
  not the speaker (and give no Fact). Questions give no claim. The target is the
  evaluated subject ("It's great *to* X" / "*how* X": X), the object of the
  preference verb, a named person, or, for pronouns, best effort: "you" is the
  addressee; "it"/"that"/"they" the last concept named before in the turn, else the
  previous turn's first concept; "he"/"she" the last person (or pet) named. A claim
  whose target cannot be resolved, or is its own source, is dropped; at most one
  claim per clause. Targets that are not persons and are named in the turn are
  added to its concepts. ``content`` is the sentence. Polarity is VADER's compound
  score on the clause (>= 0.05: +1, <= -0.05: -1, else 0); where VADER is neutral,
  or contradicts an explicit preference verb ("I can't stand X" scores 0), the
  lexical polarity of the verb or adjective is used and ``sentiment`` is +-0.5.

The time resolver is skipped for text that contains none of the keys its own rules
need (read from :mod:`langmem_cog.timeparse`), which roughly halves the time spent
on turns without dates.

The extractor is a pipeline of stage objects, one module each, all in
:mod:`langmem_cog.graph.rules`. :class:`RuleExtractor` (this module, with
:func:`is_chitchat`) runs the batch pre-scan of names and pets and finds each turn's
addressee; then, for each turn that is not chit-chat, it builds the turn's
:class:`~langmem_cog.graph.rules.context.TurnContext` and runs, in order:

1. the entity stage, :class:`~langmem_cog.graph.rules.entities.EntityStage`: persons
   (and vocatives), then concepts;
2. the statement stage, :class:`~langmem_cog.graph.rules.statements.StatementStage`:
   events, then facts and claims, sentence by sentence;
3. the entity stage again: fallback ``topic`` concepts for a turn with nothing else,
   and the persons and concepts as records.

The stages share :mod:`~langmem_cog.graph.rules.phrases` (the noun-phrase reader),
:mod:`~langmem_cog.graph.rules.text` (sentence and clause splitting, lemmas, VADER
sentiment, the time pre-gate) and :mod:`~langmem_cog.graph.rules.lexicon` (word
lists, gazetteers and compiled patterns; data only).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.rules.context import TurnContext
from langmem_cog.graph.rules.entities import EntityStage
from langmem_cog.graph.rules.lexicon import (
    CAP_NAME_RE,
    CAPS_RE,
    CHAT_TOKEN_RE,
    CHITCHAT_WORDS,
    COMMON,
    HAVE_PET_RE,
    KIN_RE,
    NAME_COMMA_PET_RE,
    NAME_IS_RE,
    NORMALIZE,
    NP_TOKEN,
    OWNERS,
    PET_CUES,
    PET_NAMED_RE,
    PETS,
    RELATIONS,
)
from langmem_cog.graph.rules.statements import StatementStage
from langmem_cog.graph.rules.text import is_place_context, prepare_text, resolve_times, split_sentences
from langmem_cog.graph.schema import Extraction
from langmem_cog.records import Turn

__all__ = ["RuleExtractor", "is_chitchat"]

logger = logging.getLogger(__name__)


def is_chitchat(text: str) -> bool:
    """Whether ``text`` is small talk with nothing to remember.

    Greetings, thanks, farewells and bare reactions ("Hi!", "Thanks, Melanie!",
    "Bye! Take care.", "Wow, that's great!") are chit-chat; so is text with no
    word at all (emoji, punctuation). At most one capitalised word outside the
    small-talk vocabulary is allowed, and only beside small talk (the addressee's
    name). Anything longer than eight words is not chit-chat.

    Args:
        text: The text of one turn.

    Returns:
        True if the turn can be skipped.

    Raises:
        InvalidInputError: If ``text`` is not a string.

    Example:
        >>> [is_chitchat(t) for t in ("Hi!", "Thanks so much, Caroline!", "Bye :)", "Paris!")]
        [True, True, True, False]
        >>> is_chitchat("Thanks! I went hiking yesterday.")
        False
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
    if len(text) > 120:
        return False
    words = CHAT_TOKEN_RE.findall(text.translate(NORMALIZE))
    if not words:
        return True
    if len(words) > 8:
        return False
    names = 0
    for w in words:
        lw = w.lower().strip("'")
        if lw in CHITCHAT_WORDS:
            continue
        if w[0].isupper() and names == 0 and len(words) > 1:
            names += 1
            continue
        return False
    return True


# =========================================================================== the extractor


class RuleExtractor:
    """Deterministic regex-and-lexicon extractor of PEC2F records (no model, no network).

    The extractor remembers the names it has seen (speakers, ``known_people``,
    people introduced as "my friend Josh", pet names) across calls, so that a
    known name is recognised even at the start of a sentence. Each call first
    scans all its turns for such names, so extracting the same turns twice gives
    equal results. That memory makes an instance stateful: use one per thread
    (or per namespace), not one shared between threads.

    The work on each turn is done by two stateless stage objects it holds, the entity
    stage (:class:`~langmem_cog.graph.rules.entities.EntityStage`) and the statement
    stage (:class:`~langmem_cog.graph.rules.statements.StatementStage`).

    Args:
        known_people: Names known to be people before the first call (e.g. the
            conversation's participants).
        strict: Re-raise unexpected errors instead of logging them and returning a
            bare extraction for the failing turn (use in tests).

    Example:
        >>> from datetime import datetime, timezone
        >>> from langmem_cog.records import Turn
        >>> ts = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
        >>> turns = [Turn(id="1", namespace="d", speaker="Maya", text="I hate running.", timestamp=ts),
        ...          Turn(id="2", namespace="d", speaker="Maya", text="I'm allergic to shellfish.", timestamp=ts)]
        >>> a, b = RuleExtractor().extract(turns)
        >>> [(c.target, c.predicate, c.polarity) for c in a.claims]
        [('running', 'preference', -1)]
        >>> [(f.subject, f.predicate, f.object) for f in b.facts]
        [('Maya', 'allergic_to', 'shellfish')]
    """

    def __init__(self, known_people: Iterable[str] = (), *, strict: bool = False) -> None:
        if isinstance(known_people, str):
            raise InvalidInputError("known_people must be an iterable of names, not a single string")
        self._known: set[str] = {str(p).strip() for p in known_people if str(p).strip()}
        self._pets: set[str] = set()
        self._places: set[str] = set()
        self._speakers: frozenset[str] = frozenset(self._known)
        self._strict = strict
        self._entities = EntityStage()
        self._statements = StatementStage()

    # ------------------------------------------------------------------ public API

    @property
    def known_people(self) -> frozenset[str]:
        """Names this extractor treats as people (grows with every call).

        Example:
            >>> from datetime import datetime, timezone
            >>> from langmem_cog.records import Turn
            >>> ts = datetime(2023, 5, 8, tzinfo=timezone.utc)
            >>> rx = RuleExtractor(known_people=["Caroline"])
            >>> _ = rx.extract([Turn(id="1", namespace="d", speaker="Melanie", timestamp=ts,
            ...                      text="My friend Josh ran a marathon.")])
            >>> sorted(rx.known_people)
            ['Caroline', 'Josh', 'Melanie']
        """
        return frozenset(self._known)

    def extract(self, turns: Sequence[Turn]) -> list[Extraction]:
        """Extract records from each turn.

        Args:
            turns: Turns in chronological order (objects with ``id``, ``speaker``,
                ``text`` and an aware ``timestamp``; ``conversation_id`` is used when
                present to find each turn's addressee).

        Returns:
            One :class:`Extraction` per turn, in order. Every record's
            ``source_turn_id`` is its turn's id.

        Raises:
            InvalidInputError: If ``turns`` is not a sequence of turns.

        Example:
            >>> from datetime import datetime, timezone
            >>> from langmem_cog.records import Turn
            >>> ts = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
            >>> ex = RuleExtractor().extract([Turn(id="t1", namespace="d", speaker="Leo", timestamp=ts,
            ...     text="I have a dog named Bailey and I work as a chemistry teacher.")])[0]
            >>> [(f.predicate, f.object) for f in ex.facts]
            [('has', 'dog named Bailey'), ('works_as', 'chemistry teacher')]
            >>> RuleExtractor().extract([Turn(id="t2", namespace="d", speaker="Leo", text="Bye!",
            ...                               timestamp=ts)])[0].empty
            True
        """
        if isinstance(turns, (str, bytes)) or not isinstance(turns, Sequence):
            raise InvalidInputError(f"turns must be a sequence of Turn objects, got {type(turns).__name__}")
        for i, t in enumerate(turns):
            if not all(hasattr(t, a) for a in ("id", "speaker", "text", "timestamp")):
                raise InvalidInputError(f"turns[{i}] is a {type(t).__name__}, not a Turn")
            if not isinstance(t.text, str) or not isinstance(t.timestamp, datetime) or t.timestamp.tzinfo is None:
                raise InvalidInputError(f"turns[{i}] ({t.id!r}) needs a str text and an aware timestamp")
        # pre-scan: names and pets of the whole batch are known before extraction
        known = set(self._known)
        pets = set(self._pets)
        places = set(self._places)
        prepared: list[tuple[str, str, set[str]]] = []
        speakers = set(self._speakers)
        recent: dict[str, list[set[str]]] = {}  # the last three turns' words, per conversation
        for t in turns:
            known.add(t.speaker)
            speakers.add(t.speaker)
            text, low = prepare_text(t.text)
            words = set(NP_TOKEN.findall(low))
            prepared.append((text, low, words))
            conv = str(getattr(t, "conversation_id", ""))
            window = recent.setdefault(conv, [])
            pet_context = bool(words & PET_CUES) or any(w & PET_CUES for w in window)
            self._scan_names(text, words, known, pets, pet_context)
            self._scan_places(text, places)
            window.append(words)
            del window[:-3]
        self._speakers = frozenset(speakers)
        known -= pets
        places -= known
        addressees = self._addressees(turns)
        out: list[Extraction] = []
        prev_concepts: dict[str, list[str]] = {}
        prev_persons: dict[str, list[str]] = {}
        for t, addressee, prep in zip(turns, addressees, prepared, strict=True):
            conv = str(getattr(t, "conversation_id", ""))
            try:
                ex = self._extract_one(t, prep, addressee, known, pets, prev_concepts.get(conv, []), prev_persons.get(conv, []),
                                       places)
            except Exception:
                if self._strict:
                    raise
                logger.exception("rule extraction failed on turn %r; returning a bare extraction", t.id)
                ex = Extraction(turn_id=t.id, speaker=t.speaker, timestamp=t.timestamp)
            if ex.concepts or ex.persons:
                prev_concepts[conv] = [c.name for c in ex.concepts]
                prev_persons[conv] = list(ex.persons)
            out.append(ex)
        self._known = known
        self._pets = pets
        self._places = places
        return out

    # ------------------------------------------------------------------ batch helpers

    @staticmethod
    def _scan_names(text: str, words: set[str], known: set[str], pets: set[str], pet_context: bool) -> None:
        """Learn pet names ("my dog Luna", "her name is Coco" near a pet word) and people introduced by
        relation ("my friend Josh", "his name is Kyle" with no pet around)."""
        if words & PETS:
            found = [m.group("name") for m in PET_NAMED_RE.finditer(text)]
            found += [m.group("name2") for m in PET_NAMED_RE.finditer(text) if m.group("name2")]
            found += [m.group("name") for m in HAVE_PET_RE.finditer(text) if m.group("name")]
            found += [m.group("name") for m in NAME_COMMA_PET_RE.finditer(text)]
            pets.update(n for n in found if n.lower() not in COMMON)
        if "name" in words or "names" in words or "named" in words or "this" in words or "meet" in words:
            for m in NAME_IS_RE.finditer(text):
                names = CAP_NAME_RE.findall(m.group("names"))
                target = pets if pet_context else known
                target.update(n for n in names if n.lower() not in COMMON)
        if words & OWNERS and words & RELATIONS:
            for m in KIN_RE.finditer(text):
                name = m.group("name")
                rel = m.group("rel").lower()
                if name and rel not in PETS and name.lower() not in COMMON :
                    known.add(name)

    @staticmethod
    def _scan_places(text: str, places: set[str]) -> None:
        """Learn the single capitalised words a turn puts in a strong place context ("going to Yosemite",
        "we live in Leith", "visited Kyoto"), so the batch reads them as places, not people, where the
        context says nothing ("photos from Yosemite")."""
        for m in CAPS_RE.finditer(text):
            word = m.group(0)
            if " " not in word and word.lower() not in COMMON and is_place_context(text[max(0, m.start() - 40):m.start()], strong=True):
                places.add(word)

    @staticmethod
    def _addressees(turns: Sequence[Any]) -> list[str | None]:
        """For each turn, the nearest other speaker of its conversation (before it, else after it)."""
        n = len(turns)
        out: list[str | None] = [None] * n
        last: dict[str, tuple[str, str | None]] = {}  # conv -> (last speaker, last other speaker)
        for i, t in enumerate(turns):
            conv = str(getattr(t, "conversation_id", ""))
            prev = last.get(conv)
            if prev is not None:
                sp, other = prev
                out[i] = sp if sp != t.speaker else (other if other != t.speaker else None)
                last[conv] = (t.speaker, sp if sp != t.speaker else other)
            else:
                last[conv] = (t.speaker, None)
        nxt: dict[str, str] = {}
        for i in range(n - 1, -1, -1):
            t = turns[i]
            conv = str(getattr(t, "conversation_id", ""))
            if out[i] is None and conv in nxt and nxt[conv] != t.speaker:
                out[i] = nxt[conv]
            if conv not in nxt or t.speaker != nxt[conv]:
                nxt[conv] = t.speaker
        return out

    # ------------------------------------------------------------------ one turn

    def _extract_one(self, turn: Any, prep: tuple[str, str, set[str]], addressee: str | None, known: set[str],
                     pets: set[str], prev_concepts: list[str], prev_persons: list[str],
                     places: set[str] | frozenset[str] = frozenset()) -> Extraction:  # fmt: skip
        """The extraction of one turn: its context, then the entity and statement stages in order."""
        ex = Extraction(turn_id=turn.id, speaker=turn.speaker, timestamp=turn.timestamp)
        raw = turn.text
        if is_chitchat(raw):
            return ex
        text, low, words = prep
        ctx = TurnContext(turn, text, low, words, addressee, known, pets, prev_concepts, prev_persons)
        ctx.places = places
        ctx.speakers = self._speakers
        ctx.sents = split_sentences(text)
        ctx.times = resolve_times(raw, low, turn.timestamp)
        self._entities.find_persons(ctx)
        self._entities.find_concepts(ctx)
        found = self._statements.find(ctx)
        if not (ctx.concepts or found.events or found.facts or found.claims):
            self._entities.fallback_concepts(ctx)
        ex.persons = self._entities.person_names(ctx)
        ex.concepts = self._entities.concept_records(ctx)
        ex.events = found.events
        ex.facts = found.facts
        ex.claims = found.claims
        return ex
