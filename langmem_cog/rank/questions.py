"""What a question asks of memory, read from its wording: whose stance, and which time of a state.

Two readings the cascade's last step uses (:meth:`~langmem_cog.rank.cascade.Cascade.rank_pool`):

* :func:`stance_holder`: the question asks where a named person stands on something (what they
  think, feel, expect, worry about, approve of, ...). The holder is the person the stance word
  belongs to: the subject of a stance verb ("Does Tom reckon ...", "What did Priya predict ..."), the
  owner of a stance noun ("In Tom's view", "Elena's take on ..."), else the first person named who
  is not only an owner of the topic ("Tom" in "How does Tom feel about Priya's tattoo?"); a question
  that names speakers only as owners ("Jordan's husband hopes ...") asks someone else's stance.
  Of those, :func:`asks_judgement` tells a question about a judgement ("What does Jo think of ...",
  "Does Tom expect ...") from one about a taste ("Does Jo like ...") or a report ("according to Jo"),
  and :func:`named_others` names whose matter it is ("Sam" in "What does Jo think about Sam selling
  his car?").
* :func:`state_tense`: the question asks for a state as it is now ("now", "currently", "still",
  "these days", "anymore") or as it was before ("used to", "did ... use to", "before", "originally", "at first").

Example:
    >>> stance_holder("How does Tom feel about Priya's swallow tattoo?", ["Priya", "Tom"])
    'tom'
    >>> stance_holder("In Tom's view, was Priya's party a good idea?", ["Priya", "Tom"])
    'tom'
    >>> stance_holder("What did Tom sell last month?", ["Priya", "Tom"]) is None
    True
    >>> state_tense("Where does Tom live these days?"), state_tense("What car did Tom drive originally?")
    ('now', 'before')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Literal

from langmem_cog.graph.rules.lexicon import EVAL, PERSON_NOUNS
from langmem_cog.rank.features import first_name

__all__ = ["STANCE", "TENSE_WINDOW", "asked_state", "asks_judgement", "asks_current_value", "asks_present_state", "asks_taste", "asks_before_change", "state_subject", "asks_state_now", "by_tense", "holder_first", "hybrid_stance_first",
           "named_others", "names_third_person", "states_stance", "stance_holder", "state_tense", "window_first", "without_names"]

_F = re.IGNORECASE
# Adjectives of a feeling or attitude; a stance word only where they are said of someone (:func:`_is_stance`:
# "Is Kavya nervous about ...", "How keen is Li on ...", not "make sure", "a certain shop", "the content").
_ATTITUDES = ("glad", "nervous", "anxious", "afraid", "scared", "confident", "doubtful", "sure", "unsure", "certain",
              "bitter", "satisfied", "dissatisfied", "disappointed", "cross", "upset", "angry", "furious", "jealous",
              "envious", "grateful", "thankful", "relieved", "hopeful", "optimistic", "pessimistic", "ashamed",
              "embarrassed", "guilty", "sorry", "content", "enthusiastic", "tempted", "keen", "pleased", "displeased",
              "delighted", "thrilled", "frustrated", "unhappy", "comfortable", "uncomfortable", "opposed", "supportive",
              "surprised", "shocked", "offended", "bothered", "resentful", "homesick")
_ATTITUDE_SET = frozenset(_ATTITUDES)
_ADVERBS = frozenset({"still", "so", "very", "quite", "too", "more", "less", "most", "even", "now", "ever", "always"})
# The words after which such an adjective is said of someone: a form of "be" or of feeling or seeming, "how"
# ("How keen is Li"); or a name ("Is Sam glad"). One adverb may come between ("still", "really").
_BEFORE_ATTITUDE = frozenset({"is", "was", "are", "were", "be", "been", "being", "am", "isn't", "wasn't", "feel",
                              "feels", "felt", "feeling", "seem", "seems", "seemed", "get", "gets", "got", "getting",
                              "become", "became", "how", "stay", "stays", "remain", "remains", "sound", "sounds",
                              "look", "looks"})

#: Words of stance: what someone thinks, feels, expects or judges (verbs, nouns and adjectives).
STANCE = re.compile(
    r"\b(?:think|thinks|thought|feel|feels|felt|feelings?|believe[sd]?|beliefs?|opinions?|views?"
    r"|verdict|reckons?|reckoned|predict(?:s|ed|ion|ions)?|expect(?:s|ed|ations?)?|worr(?:y|ies|ied)"
    r"|hope[sd]?|hoping|approve[sd]?|approval|disapprove[sd]?|recommend(?:s|ed|ation)?|advice|advise[sd]?"
    r"|impressed|happy\s+(?:with|about)|excited\s+about|fan\s+of|keen\s+on|mind|reaction|react(?:ed)?"
    r"|consider(?:s|ed)?|judge[sd]?|sensible|wise|mistake|(?:good|bad)\s+idea|rate[sd]?|stance|attitude"
    r"|like[sd]?|love[sd]?|hate[sd]?|enjoy(?:s|ed|ing)?|dislike[sd]?|prefer(?:s|red|ring)?|loving|hating"
    r"|suspicious|skeptical|sceptical|proud|annoyed|regret(?:s|ted)?|blame[sd]?|responsible|foresee[sn]?|assess(?:es|ed|ment)?"
    r"|estimation|estimate[sd]?|conclu(?:de[sd]?|sions?)|convinced|on\s+board|make\s+of"
    r"|suspect(?:s|ed)?|doubt(?:s|ed)?|fear(?:s|ed)?|concerned|reckoning|regard(?:s|ed)?|according\s+to"
    # a feeling held towards something, said of a person (:data:`_ATTITUDES`: "Is Kavya nervous about ...")
    rf"|{'|'.join(_ATTITUDES)}|happy\s+(?:that|to|in|for)|fed\s+up|tired\s+of|sick\s+of|fond\s+of"
    r"|hurt\s+by|trust(?:s|ed|ing)?|distrust(?:s|ed)?|forgiven?|forgave|get(?:s|ting)?\s+on\s+with"
    r"|agree(?:s|d)?\s+(?:with|that)|disagree(?:s|d)?|look(?:s|ed|ing)?\s+forward\s+to|regretting|worrying|expecting"
    r"|lean(?:s|ing)?\s+towards?|c[ao]me\s+round|in\s+favou?r\s+of|for\s+or\s+against"
    # a wish ("Does Jo wish she'd studied law?"; "want" asks as often for a plan: "What does Jo want to do?")
    r"|wish(?:es|ed)?)\b",
    _F,
)
# A stance noun owned by a name: "Tom's view", "Elena's take on", "Priya's verdict".
# Nouns that are no verb may follow a word or two ("Lucia's honest verdict", "Nia's gut feeling"); the others
# only right after the owner ("Jo's husband hopes ..." owns no stance).
_OWNED_STANCE = re.compile(
    r"^'s\s+(?:(?:[a-z-]+\s+){0,2}?(?:view|opinion|take|verdict|thoughts?|feelings?|reaction|prediction|advice"
    r"|attitude|stance|impression|expectations?|judgement|judgment|estimation|assessment)"
    r"|worry|worries|hope|hopes|eyes|mind)\b", _F)
# Words that ask how things stand now; of them, "lately", "today", "latest" and "most recent" ask for
# what happened last rather than for a state that may have changed.
_STATE_NOW = (r"now|nowadays|currently|current|still|these\s+days|at\s+the\s+moment|at\s+present|presently"
              r"|anymore|any\s+more")
_NOW = re.compile(rf"\b(?:{_STATE_NOW}|today|lately|latest|most\s+recent(?:ly)?)\b", _F)
_STATE_NOW_RE = re.compile(rf"\b(?:{_STATE_NOW})\b", _F)
# "before" asks for an earlier state only as an adverb ("Where did Jo live before?", "... before that?"), not
# as a preposition ("What did Jo do before meeting Sam?"). "Used to" is also asked as "did Jo use to"
# ("What car did Jo use to drive?"; an instrument, "What did Jo use to fix it?", reads the same).
_BEFORE = re.compile(r"\b(?:used\s+to|did(?:n't|n\u2019t|\s+not)?\s+(?:[\w'\u2019-]+\s+){1,4}?use\s+to"
                     r"|before(?=\s*(?:[?.!,;]|$|(?:that|then|this|now)\b))|originally|original"
                     r"|previously|at\s+first|in\s+the\s+beginning|back\s+when|back\s+then|formerly|initially"
                     r"|first\s+(?:impression|reaction|take))\b", _F)


# A speaker's own stance in a turn: a first-person stance verb, a hedge that marks an opinion, or
# an evaluative word ("heroic", "a terrible plan", "overrated").
_FIRST_PERSON_STANCE = re.compile(
    r"\b(?:i|i'm|i'd|i've|i'll)\s+(?:(?:still|do|just|kind\s+of|would|also|even|[a-z]+ly)\s+)?"
    r"(?:think|thought|reckon|bet|feel|felt|believe|expect|guess|suspect|doubt|worry|worried|hope|predict|say|admit"
    r"|love|hate|like|prefer|be\s+honest|bet)\b"
    r"|\bhonestly\b|(?:^|[.!?;:,]\s*)to\s+me\b"
    r"|\b(?:is|was|are|were|be|been|seems?|seemed|sounds?|sounded|looks?|looked|feels?|felt)"
    r"(?:\s+[\w'-]+){0,4}?\s+to\s+me\b|\bin\s+my\s+(?:opinion|view|book)\b|\bmy\s+(?:prediction|view|opinion|take|guess|bet)\b",
    _F,
)
_WORDS = re.compile(r"[a-z]+")


def states_stance(text: str, *, evaluative: bool = True) -> bool:
    """Whether a turn states its speaker's stance: a first-person stance verb ("I think", "I reckon"),
    a hedge that marks an opinion ("honestly", "to me", "in my view") or, with ``evaluative``, an
    evaluative word ("heroic", "perfect": news is often told with one too).

    Example:
        >>> states_stance("Honestly, hosting Diwali for twelve is heroic."), states_stance("I got a kayak on Saturday.")
        (True, False)
        >>> states_stance("Exhausting and perfect. I had twelve people round."), states_stance(
        ...     "Exhausting and perfect. I had twelve people round.", evaluative=False)
        (True, False)
    """
    low = text.lower().replace("\u2019", "'")
    return bool(_FIRST_PERSON_STANCE.search(low)) or (evaluative and any(w in EVAL for w in _WORDS.findall(low)))


def _mentions(query: str, names: Iterable[str]) -> list[tuple[int, str, str]]:
    """``(position, first name lower-cased, role)`` of each named speaker in the question, in order;
    ``role``: ``"stance"`` for the owner of a stance noun ("Tom's view"), ``"owner"`` for another
    owner ("Priya's tattoo"), else ``"free"``."""
    found = []
    for name in {first_name(n) for n in names} - {""}:
        for m in re.finditer(rf"\b{re.escape(name)}\b", query, _F):
            rest = query[m.end():].replace("\u2019", "'")
            role = "free" if not rest.startswith("'s") else "stance" if _OWNED_STANCE.match(rest) else "owner"
            found.append((m.start(), name, role))
    return sorted(found)


# The words after which "like" is the verb of a taste, not a preposition ("does Jo like", "would they like",
# "Jo doesn't like"); any -ly adverb also ("Jo really likes").
_BEFORE_LIKED = frozenset({"do", "does", "did", "would", "will", "to", "i", "you", "he", "she", "we", "they", "not",
                           "don't", "doesn't", "didn't", "wouldn't", "won't", "dont", "doesnt", "didnt", "still",
                           "also", "never", "always"})


def _is_stance(m: re.Match[str], query: str) -> bool:
    """Whether a :data:`STANCE` match is a stance word here: not a capitalised word inside the question
    (a name: "the Mt. Hope auction") and not "like" used as a preposition (:func:`_liked`)."""
    word = m.group(0)
    if word[0].isupper() and query[:m.start()].strip():
        return False
    before = query[:m.start()].replace("\u2019", "'").split()
    if word.lower() in _ATTITUDE_SET:
        return _said_of_someone(before)
    return word.lower() != "like" or _liked(before)


def _said_of_someone(before: list[str]) -> bool:
    """Whether an adjective of feeling (:data:`_ATTITUDES`) after the words ``before`` is said of someone:
    after a form of "be", a verb of feeling or seeming, or "how" (:data:`_BEFORE_ATTITUDE`), or after a name
    that follows a form of "be" ("Is Sam glad"), with at most one adverb between.

    Example:
        >>> _said_of_someone("Is Kavya".split()), _said_of_someone("How".split()), _said_of_someone("Is Tom still".split())
        (True, True, True)
        >>> _said_of_someone("Did Jo make".split()), _said_of_someone("Did Sam".split()), _said_of_someone("at a".split())
        (False, False, False)
    """
    words = [w.strip(",;:") for w in before]
    if words and (words[-1].lower() in _ADVERBS or words[-1].endswith("ly")):
        words = words[:-1]
    if not words:
        return False
    if words[-1].lower() in _BEFORE_ATTITUDE:
        return True
    return words[-1][:1].isupper() and len(words) >= 2 and words[-2].lower() in _BEFORE_ATTITUDE


def _liked(before: list[str]) -> bool:
    """Whether "like" after the words ``before`` is the verb of a taste: first, or after a capitalised word
    (a name), an auxiliary, a pronoun or an adverb (:data:`_BEFORE_LIKED`, a word in -ly); after another
    lower-case word it is a preposition ("What does space smell like?", "sunsets like the one he shared").

    Example:
        >>> _liked("Does Jo".split()), _liked("Jo doesn't".split()), _liked("Jo really".split())
        (True, True, True)
        >>> _liked("What does space smell".split()), _liked("How often does Jo see sunsets".split())
        (False, False)
    """
    if not before:
        return True
    last = before[-1]
    return not last.islower() or last in _BEFORE_LIKED or last.endswith("ly")


def without_names(query: str, speakers: Iterable[str]) -> str:
    """``query`` with each speaker's first name, and its possessive, replaced by "they": what the question
    asks, without whom it asks it of.

    Example:
        >>> without_names("What does Leo do for a living?", ["Leo Park", "Maya"])
        'What does they do for a living?'
        >>> without_names("Is Maya's knee better?", ["Leo", "Maya"]), without_names("Where is Oslo?", ["Leo"])
        ('Is they knee better?', 'Where is Oslo?')
    """
    names = sorted({first_name(s) for s in speakers} - {""}, key=len, reverse=True)
    if not names:
        return query
    alternatives = "|".join(re.escape(n) for n in names)
    return re.sub(rf"\b(?:{alternatives})(?:'s|\u2019s)?\b", "they", query, flags=_F)


def stance_holder(query: str, speakers: Iterable[str]) -> str | None:
    """The first name (lower-cased) of the speaker whose stance ``query`` asks for, else ``None``.

    ``None`` when the question names none of ``speakers``, or holds neither a stance word
    (:data:`STANCE`) nor a stance noun owned by a name ("Elena's take on ...").

    Args:
        query: The question.
        speakers: The speakers' names (their first word is matched, case-insensitively).
    """
    mentions = _mentions(query, speakers)
    owners = [name for _, name, role in mentions if role == "stance"]
    if owners:
        return owners[0]
    if not mentions or not any(_is_stance(m, query) for m in STANCE.finditer(query)):
        return None
    free = [name for _, name, role in mentions if role == "free"]
    return free[0] if free else None  # only owners ("Jordan's husband hopes ..."): someone else's stance


# Stance words that ask for a taste, or for a report of what was said, rather than a judgement.
_TASTE = frozenset({"like", "likes", "liked", "love", "loves", "loved", "loving", "enjoy", "enjoys", "enjoyed",
                    "enjoying", "prefer", "prefers", "preferred", "preferring", "hate", "hates", "hated", "hating",
                    "dislike", "dislikes", "disliked",
                    "fan of", "keen on", "mind", "wish", "wishes", "wished"})
_REPORT = frozenset({"according to", "advice", "advise", "advises", "advised", "recommend", "recommends", "recommended",
                     "recommendation"})
_TASTE_OR_REPORT = _TASTE | _REPORT


def asks_judgement(query: str) -> bool:
    """Whether ``query`` holds a stance word that asks for a judgement (what someone thinks, expects,
    worries about, makes of something: :data:`STANCE` less the words of taste, "like", "love",
    "enjoy", "prefer", "hate", ..., and of report, "according to", "advice", "recommend"). The answer
    to such a question is a turn that states the holder's stance; the answer to "What does Jo like?"
    is often a plain statement ("I watch every Jazz game"), and to "What did Jo recommend?" the turn
    that recommended it.

    Example:
        >>> asks_judgement("What does Jo think of Sam selling his car?"), asks_judgement("Which teams does Jo like?")
        (True, False)
        >>> asks_judgement("According to Morgan, when did the announcement come?")
        False
    """
    return any(w not in _TASTE_OR_REPORT for w, _ in _stance_words(query))


def _stance_words(query: str) -> list[tuple[str, re.Match[str]]]:
    """The stance words of ``query`` (:data:`STANCE` matches that :func:`_is_stance` keeps), lower-cased with
    single spaces ("fan of"), each with its match."""
    return [(" ".join(m.group(0).lower().split()), m) for m in STANCE.finditer(query) if _is_stance(m, query)]


def asks_taste(query: str) -> bool:
    """Whether ``query`` asks for a taste ("like", "love", "enjoy", "fan of", ...) and holds no word of a
    report ("recommend", "advice", "according to"): "Is Grace a fan of Diego's sourdough?", not "What book did
    Tom recommend to Jo?". About another person's matter, a taste is a judgement of it. "Like" used as a
    preposition ("sunsets like the one he shared") is no stance word at all, so no taste.

    Example:
        >>> asks_taste("Is Grace a fan of Diego's sourdough?"), asks_taste("What book did Tom recommend to Jo?")
        (True, False)
        >>> asks_taste("Does Jo like Sam's haircut?"), asks_taste("How often does Jo see sunsets like the one Sam saw?")
        (True, False)
    """
    words = [w for w, _ in _stance_words(query)]
    return any(w in _TASTE for w in words) and not any(w in _REPORT for w in words)


def named_others(query: str, speakers: Iterable[str], holder: str) -> list[str]:
    """The first names (lower-cased) of the speakers other than ``holder`` that ``query`` names, in order:
    for a question about the holder's stance, the people whose matter it is ("Sam" in "What does Jo
    think about Sam selling his car?").

    Example:
        >>> named_others("What does Jo think about Sam selling his car?", ["Sam", "Jo"], "jo")
        ['sam']
        >>> named_others("How did Jo feel after the accident?", ["Sam", "Jo"], "jo")
        []
    """
    return list(dict.fromkeys(name for _, name, _ in _mentions(query, speakers) if name != holder))


_OWNER = re.compile(r"\b([A-Z][\w-]*)['\u2019]s\b")


def names_third_person(query: str, speakers: Iterable[str]) -> bool:
    """Whether ``query`` names, as the owner of a matter, a person who is none of ``speakers``
    ("Niamh's engagement", "Dariusz's courier venture"): a matter that one of the speakers told of.

    Example:
        >>> names_third_person("Does Mei expect Niamh's engagement to work out?", ["Mei", "Daniel"])
        True
        >>> names_third_person("How did Mei feel after the accident?", ["Mei", "Daniel"]), names_third_person(
        ...     "What does Mei think of Daniel's stream?", ["Mei", "Daniel"]), names_third_person(
        ...     "What's Mei's take on the stream?", ["Mei", "Daniel"])
        (False, False, False)
    """
    known = {first_name(n) for n in speakers}
    start = len(query) - len(query.lstrip())  # the first word's "'s" is a contraction ("What's", "How's")
    return any(m.group(1).lower() not in known and m.start() > start for m in _OWNER.finditer(query))


_PAST_BEFORE = re.compile(r"\b(?:did|was|were|had)\b.*\bbefore\s+\w", _F)


def asks_before_change(query: str) -> bool:
    """Whether ``query`` asks, in the past, how things were before something happened: "Where did Priya
    live before she moved to Leeds?", "Who was Mei dating before she met Ethan?" (:func:`state_tense` reads
    "before" only as an adverb, since "What did Jo do before meeting Sam?" asks for an event; a caller
    that knows the question asks for a state or a stance reads this as a before-question).

    Example:
        >>> asks_before_change("Where did Priya live before she moved to Leeds?"), asks_before_change(
        ...     "Where does Priya live before work?")
        (True, False)
    """
    return bool(_PAST_BEFORE.search(query))


def state_tense(query: str) -> Literal["now", "before"] | None:
    """``"now"`` when ``query`` asks for a state as it is now, ``"before"`` as it was before, else ``None``
    (both or neither)."""
    now, before = bool(_NOW.search(query)), bool(_BEFORE.search(query))
    if now == before:
        return None
    return "now" if now else "before"


def asks_state_now(query: str) -> bool:
    """Whether ``query`` asks how a state stands now in words that allow it to have changed ("now",
    "currently", "still", "these days", "anymore", ...; not "lately" or "latest", which ask for what
    happened last), and not how it was before.

    Example:
        >>> asks_state_now("Is Marcus still a smoker?"), asks_state_now("What has Sam been reading lately?")
        (True, False)
    """
    return state_tense(query) == "now" and bool(_STATE_NOW_RE.search(query))


# Present tense ("Where does Priya live?", "What is Tom's job?") and words that place a question at another time.
_PRESENT_AUX = re.compile(r"\b(?:is|are|does|do|has|have)\b", _F)
_OTHER_TIME = re.compile(r"\b(?:did|was|were|had|will|would|used|ago|last|yesterday|tomorrow|once|ever|first|next"
                         r"|going\s+to|plan(?:s|ning)?)\b|\b(?:19|20)\d\d\b", _F)


# Questions that ask for a time, a reason, a count or how often, not for a state's value.
_NOT_A_VALUE = re.compile(r"^\W*(?:when|why|how\s+(?:often|long|many|much|come))\b", _F)
# Phrasal verbs that name no job: "work out" (exercise), "work on" (a task).
_NOT_A_JOB = re.compile(r"\b(?:work|works|worked|working)\s+(?:out|on)\b", _F)
# "For a living", "earn her living" name a job; a living room names no state.
_A_LIVING = re.compile(r"\b(?:for|earns?|earning|earned|makes?|making|made)\s+(?:a|my|your|his|her|our|their)\s+living\b"
                       r"(?!\s+rooms?\b)", _F)
_LIVING_ROOM = re.compile(r"\bliving\s+(?=rooms?\b)", _F)


def asks_present_state(query: str) -> bool:
    """Whether ``query`` asks how something stands as of now: a word of now ("currently", "still", ...),
    or the present tense with no word that places it at another time ("Where does Priya live?",
    "What does Marcus drive?"; not "Where did Priya live in 2023?" or "What will Tom drive?").

    Example:
        >>> asks_present_state("What does Marcus drive?"), asks_present_state("Which car is Priya driving these days?")
        (True, True)
        >>> asks_present_state("What car did Marcus have at first?"), asks_present_state("Where was Ivan living in 2023?")
        (False, False)
    """
    tense = state_tense(query)
    if tense is not None:
        return tense == "now"
    return bool(_PRESENT_AUX.search(query)) and not _OTHER_TIME.search(query)


def asks_current_value(query: str) -> bool:
    """Whether ``query`` asks for the value of one state (:func:`asked_state`) as it stands now in the
    simple present, with no word of another time ("Where does Priya live?", "Which college is Gabi
    attending?"; not "What cars has Casey driven?", which asks for a history, nor "Where did Priya live?").

    Example:
        >>> asks_current_value("Where does Priya live?"), asks_current_value("What are the best cars Casey has driven?")
        (True, False)
    """
    state = asked_state(query)
    return (state is not None and state[0] not in _MANY_AT_ONCE and asks_present_state(query)
            and state_tense(query) is None and not _PERFECT.search(query))


# States a person may hold several values of at once (pets, habits): asked in the simple present ("What pets
# does Jo have?") they ask for all of them, not for the latest; only a word of now or before asks for a time.
_MANY_AT_ONCE = frozenset({"keeps_pet", "habit"})


# The present perfect ("has driven", "have lived", "has come"): a history, not a state as it stands. "Has/have"
# before a determiner or a noun is a possession ("has a dog"), which is a state.
_PERFECT = re.compile(r"\b(?:has|have|'ve)\s+(?:(?:ever|always|never|just|already|recently|been)\s+)?"
                      r"(?:\w+(?:ed|en|wn|ne|un|ung)|had|made|got|been|done|gone|kept|held|taught|bought|brought|thought"
                      r"|sat|run|come|become|left|lost|met|paid|said|sold|told|heard|felt|built|spent|sent|won|read|put"
                      r"|set|cut|let|hit)\b", _F)


# The words that name each state a question can ask about: the graph's state predicates, which a person holds one
# value of at a time, and pets and habits, which a person may hold several of (:data:`_MANY_AT_ONCE`).
_STATE_WORDS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (preds, re.compile(rf"\b(?:{words})\b", _F)) for preds, words in (
        (("lives_in",), r"live|lives|living|home|house|flat|apartment|reside[sd]?|based|moved|neighbou?rhood|renting"
                        r"|staying"),
        (("works_at", "works_as"), r"work|works|working|job|jobs|employer|employed|career|profession|occupation"),
        (("studies",), r"study|studies|studying|degree|school|college|university|course|program|programme|enrolled"
                       r"|master's|masters|phd|student|classes|apprenticeship"),
        (("drives",), r"car|cars|drive|drives|driving|vehicle|truck|bike|bicycle|motorbike|motorcycle|scooter"
                      r"|cycl(?:e|es|ing)|commut(?:e|es|ing)|get(?:s|ting)?\s+around|ride|rides|rider"),
        (("diet",), r"diet|vegetarian|vegan|meat|keto|carbs|dairy|dairy-free|halal|kosher|pescatarian|gluten|sugar"
                    r"|fasting|plant-based"),
        (("relationship",), r"dating|relationship|partner|girlfriend|boyfriend|husband|wife|single|married|engaged"
                            r"|divorced|seeing\s+anyone|going\s+out\s+with"),
        (("keeps_pet",), r"pets?|dogs?|cats?|puppy|kitten|animals?|fish|goldfish|hamsters?|rabbits?|parrots?"
                         r"|chickens|hens"),
        (("habit",), r"smok(?:e|es|ed|er|ers|ing)|cigarettes?|vap(?:e|es|ing)|drinking|drinker|sober|runner|running"
                     r"|gym|yoga|swimming|swimmer"),
    )
)
_STATE_WORDS_BY = dict(_STATE_WORDS)
# Words that name a state only as a place or a person's kin, when the question names another state too: "cycle
# to work", "working towards a degree" (no job); "Raj's girlfriend Anita", "her husband Tunde" (no relationship).
_ONLY_A_REFERENCE = {
    ("works_at", "works_as"): re.compile(r"\bto\s+work\b|\bwork(?:s|ing)?\s+towards?\b", _F),
    ("relationship",): re.compile(r"(?:'s|\u2019s|\bhis|\bher|\btheir|\bmy|\byour)\s+(?:\w+\s+)?"
                                  r"(?:girlfriend|boyfriend|husband|wife|partner)\b", _F),
}


def asked_state(query: str) -> tuple[str, ...] | None:
    """The state predicates of the state ``query`` names ("What does Marcus drive?" -> ``("drives",)``): one
    of the graph's states (:data:`~langmem_cog.graph.reconcile.STATE_PREDICATES`), or a pet kept
    (``keeps_pet``) or a habit (``habit``), which the ranking reads and the rule extractor does not. Of
    several, the one named first, once a state named only as a place or as someone's kin ("cycle to
    work", "Raj's girlfriend Anita") has given way to the others. ``None`` for no state, or a question
    that asks when, why, how often or how many rather than for the state's value ("work out" and "work
    on" name no job).

    Example:
        >>> asked_state("What does Marcus drive?"), asked_state("Where does Priya live these days?")
        (('drives',), ('lives_in',))
        >>> asked_state("Is Mei still cycling to work?"), asked_state("Is Marcus still a smoker?")
        (('drives',), ('habit',))
        >>> asked_state("What did Tom sell last month?") is None, asked_state("How often does Jo work out?") is None
        (True, True)
    """
    if _NOT_A_VALUE.search(query):
        return None
    text = _LIVING_ROOM.sub(" ", _A_LIVING.sub(" job ", _NOT_A_JOB.sub(" ", query)))
    found = {preds: m.start() for preds, rx in _STATE_WORDS if (m := rx.search(text))}
    if len(found) > 1:  # a state named only as a place or someone's kin gives way to the other
        found = {p: at for p, at in found.items() if not (p in _ONLY_A_REFERENCE and _ONLY_A_REFERENCE[p].search(text)
                                                          and len(_STATE_WORDS_BY[p].findall(text)) == 1)}
    return min(found, key=found.__getitem__) if found else None  # of several, the one named first


def state_subject(query: str, names: Iterable[str]) -> str | None:
    """The first name (lower-cased) of the one person of ``names`` whose state ``query`` asks about: the
    only one it names other than as an owner ("Where does Priya's brother Arjun live?" -> "arjun"), else
    the only owner, when what is owned is no person ("What is Tom's job?" -> "tom"; "Is Tom's mother
    still at Boots?" asks about his mother: ``None``), else ``None``.

    Example:
        >>> state_subject("Where does Priya's brother Arjun live?", ["Priya", "Tom", "Arjun"])
        'arjun'
        >>> state_subject("What is Tom's job these days?", ["Priya", "Tom"])
        'tom'
        >>> state_subject("Is Tom's mother still working at Boots?", ["Priya", "Tom"]) is None
        True
    """
    mentions = _mentions(query, names)
    free = {name for _, name, role in mentions if role == "free"}
    if free:
        return next(iter(free)) if len(free) == 1 else None
    owners = {name for _, name, role in mentions if role == "owner"}
    if len(owners) != 1:
        return None
    owner = next(iter(owners))  # "Tom's job" asks about Tom; "Tom's mother" about someone else
    owned = re.search(rf"\b{re.escape(owner)}'s\s+(?:(?:new|old|current|younger|older|little|big)\s+)?([a-z]+)",
                      query.replace("\u2019", "'"), _F)
    return None if owned is None or owned.group(1).lower() in PERSON_NOUNS else owner


def holder_first(turn_ids: list[str], by_holder: set[str], stances: set[str] | frozenset[str] = frozenset(),
                 opinions: set[str] | frozenset[str] | None = None, *, judgement: bool = False) -> list[str]:
    """For a question about a named person's stance, when someone else's turn that states no stance
    leads (such as the news the stance is about): the holder's best turn that states a stance (else
    the holder's best turn) moves to the front; the others keep their order. A list that someone
    else's stance leads (perhaps reporting the holder's) is left as it is; so is one the holder leads,
    unless the question asks for a judgement (``judgement``) and the holder's leading turn states no
    stance while a later one of theirs does: that one moves to the front.

    Args:
        turn_ids: The turn ids, best first.
        by_holder: The turns the holder spoke.
        stances: The turns that state a stance (a Claim in the graph, or :func:`states_stance`).
        opinions: The turns whose lead is left alone: those that plainly state an opinion (default:
            ``stances``).
        judgement: The question asks for a judgement (:func:`asks_judgement`), not a taste or a report
            (the cascade sets it for a judgement of another speaker's matter, :func:`named_others`).

    Example:
        >>> holder_first(["t1", "t4", "t2", "t3"], {"t2", "t3"}, {"t3"})
        ['t3', 't1', 't4', 't2']
        >>> holder_first(["t2", "t1", "t3"], {"t2", "t3"}, {"t3"})
        ['t2', 't1', 't3']
        >>> holder_first(["t2", "t1", "t3"], {"t2", "t3"}, {"t3"}, judgement=True)
        ['t3', 't2', 't1']
    """
    if not turn_ids:
        return []
    lead = turn_ids[0]
    mine = [t for t in turn_ids if t in by_holder]
    if lead in by_holder:
        best = next((t for t in mine if t in stances), None) if judgement and lead not in stances else None
    elif lead in (stances if opinions is None else opinions):
        best = None
    else:
        best = next((t for t in mine if t in stances), mine[0] if mine else None)
    return list(turn_ids) if best is None else [best] + [t for t in turn_ids if t != best]


def hybrid_stance_first(turn_ids: list[str], hybrid_best: str | None, by_holder: set[str] | frozenset[str],
                        plain_stances: set[str] | frozenset[str], stances: set[str] | frozenset[str]) -> list[str]:
    """For a question about a named person's stance: when plain hybrid search ranks first a turn of the
    holder's that plainly states a stance (``hybrid_best`` in ``plain_stances``), it leads, unless the
    ranking already leads with a stance of the holder's, or with someone else's plain stance (perhaps
    reporting the holder's, as :func:`holder_first` leaves it). The reordering of memory may find the
    holder's word where hybrid search misses it, but does not take the first place from the holder's own
    opinion that hybrid search put there in favour of news or a plain telling.

    Args:
        turn_ids: The ranking, best first.
        hybrid_best: Plain hybrid search's best turn (``None``: none).
        by_holder: The turns the holder spoke.
        plain_stances: The turns that state their speaker's stance in the first person
            (:func:`states_stance` with ``evaluative=False``).
        stances: The turns that state a stance in any form (:func:`states_stance`).

    Example:
        >>> hybrid_stance_first(["news", "mine"], "mine", {"mine"}, {"mine"}, {"mine"})  # someone's news led
        ['mine', 'news']
        >>> hybrid_stance_first(["told", "mine"], "mine", {"mine", "told"}, {"mine"}, {"mine"})  # their plain telling
        ['mine', 'told']
        >>> hybrid_stance_first(["theirs", "mine"], "mine", {"mine"}, {"mine", "theirs"}, {"mine", "theirs"})
        ['theirs', 'mine']
    """
    if not turn_ids or hybrid_best is None or hybrid_best == turn_ids[0]:
        return list(turn_ids)
    lead = turn_ids[0]
    if hybrid_best not in by_holder or hybrid_best not in plain_stances or lead in plain_stances \
            or (lead in by_holder and lead in stances):
        return list(turn_ids)
    return [hybrid_best] + [t for t in turn_ids if t != hybrid_best]


#: How many of the best turns :func:`by_tense` orders by time.
TENSE_WINDOW = 2


def by_tense(turn_ids: list[str], times: dict[str, object], tense: Literal["now", "before"],
             speakers: dict[str, str] | None = None, sessions: dict[str, str] | None = None,
             window: int = TENSE_WINDOW) -> list[str]:
    """For a question about a state now (or before): the best ``window`` turns ordered newest (or
    oldest) first, the rest as they are, when one speaker said them in different sessions (two
    statements of the same person on one matter, apart in time: the later says what holds now, the
    earlier what held before; turns of one session tell one story).

    Args:
        turn_ids: The turn ids, best first.
        times: Each turn's time (comparable values).
        tense: ``"now"`` or ``"before"``.
        speakers: Each turn's speaker (``None``: not checked).
        sessions: Each turn's session (``None``: not checked).
        window: How many of the best turns are ordered.

    Example:
        >>> by_tense(["a", "b", "c", "d"], {"a": 1, "b": 3, "c": 2, "d": 9}, "now", window=3)
        ['b', 'c', 'a', 'd']
        >>> by_tense(["a", "b"], {"a": 1, "b": 3}, "now", {"a": "Sam", "b": "Jo"})
        ['a', 'b']
        >>> by_tense(["a", "b"], {"a": 1, "b": 3}, "now", sessions={"a": "1", "b": "1"})
        ['a', 'b']
    """
    head = turn_ids[:window]
    if speakers is not None and len({speakers[t] for t in head}) > 1:
        return list(turn_ids)
    if sessions is not None and len({sessions[t] for t in head}) < len(head):
        return list(turn_ids)
    return sorted(head, key=lambda t: times[t], reverse=tense == "now") + turn_ids[window:]  # type: ignore[arg-type,return-value]


def window_first(turn_ids: list[str], times: Mapping[str, datetime], window: tuple[datetime | None, datetime | None]) -> list[str]:
    """For a question with a time window ("back in March 2023", "on February 7, 2022"): when the
    leading turn was said outside the window, the best turn said inside it moves to the front; the
    others keep their order. A list with no turn said in the window is left as it is.

    Args:
        turn_ids: The turn ids, best first.
        times: Each turn's time (timezone-aware, as the window's bounds).
        window: The window's ``(start, end)``, inclusive; either may be ``None`` (open).

    Example:
        >>> from datetime import datetime, timezone
        >>> day = lambda m, d: datetime(2023, m, d, tzinfo=timezone.utc)
        >>> times = {"a": day(9, 1), "b": day(3, 12), "c": day(3, 20)}
        >>> window_first(["a", "b", "c"], times, (day(3, 1), day(3, 31)))
        ['b', 'a', 'c']
        >>> window_first(["b", "a"], times, (day(3, 1), day(3, 31)))
        ['b', 'a']
    """
    start, end = window

    def inside(t: str) -> bool:
        return (start is None or times[t] >= start) and (end is None or times[t] <= end)

    if not turn_ids or inside(turn_ids[0]):
        return list(turn_ids)
    best = next((t for t in turn_ids if inside(t)), None)
    return list(turn_ids) if best is None else [best] + [t for t in turn_ids if t != best]
