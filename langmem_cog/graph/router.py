"""Question routing and evidence sufficiency for the operator loop.

:func:`route` reads a question's *intent* (which graph operators answer it), the time
window it restricts to, and the names it mentions, with regular expressions only.
:class:`LLMRouter` asks a chat model instead (``ROUTER_PROMPT``). After each grounding
step the loop asks a sufficiency check whether the evidence is enough:
:class:`RuleSufficiency` by default, :class:`LLMSufficiency` with a model
(``SUFFICIENCY_PROMPT``).

Intents and their cues (case-insensitive; the first rule that fires wins, in this order):

1. ``COMPARE``: ``both``, ``in common``, ``compare`` / ``comparison``, ``difference between``,
   ``A and B ... share``, ``same`` (but not ``same time/day/week/...``, which is about time).
2. ``TEMPORAL``, when the question *starts* with ``when``, ``what/which date|day|year|month|time``,
   ``in what year|month``, ``how long (ago)``, ``since when``, ``how many days|weeks|months|years ago``.
3. ``BELIEF``: ``think(s)``, ``thought of/about``, ``feel(s)`` / ``felt``, ``opinion``,
   ``believe(s)`` / ``belief``, ``like(s) about``, ``prefer(s/red)`` / ``preference``,
   ``view on/of``, ``attitude``, and ``do/does/did <who> like|love|hate|enjoy|dislike``.
   ``favorite`` / ``favourite`` is deliberately *not* a cue: "What is Maya's favourite
   book?" is answered by a stated Fact (``LIKES`` edge), not by an opinion.
4. ``TEMPORAL`` anywhere: ``..., and when?``, ``when?`` at the end, ``what date/year/month``,
   ``how long ago``, ``N <units> ago``.
5. ``DETAIL`` (why / verify): ``why``, ``is it true``, ``true that``, ``did/does/is ... really``.
6. ``TEMPORAL`` when the question holds a time expression and nothing above fired
   ("What did Leo do in July 2023?").
7. ``OTHER`` otherwise.

The time window is read for every intent: the span from the earliest start to the latest
end of the time expressions :func:`~langmem_cog.timeparse.resolve_time_expressions` finds
in the question, resolved against ``now`` (the current UTC time when ``None``).

Claim nodes (opinions) are searched only for ``BELIEF``; every other intent searches the
record types Person / Event / Concept / Fact (:func:`node_types`).

Example:
    >>> from datetime import datetime, timezone
    >>> now = datetime(2023, 11, 12, tzinfo=timezone.utc)
    >>> route("What do Maya and Leo both like?", now).intent
    'COMPARE'
    >>> r = route("When did Leo go climbing in July 2023?", now)
    >>> r.intent, [d.date().isoformat() for d in r.time_window], r.entities
    ('TEMPORAL', ['2023-07-01', '2023-08-01'], ('Leo',))
    >>> route("What does Maya think of her manager Doug?", now).intent
    'BELIEF'
    >>> route("What is Maya's favourite book?", now).intent
    'OTHER'
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol, get_args

from langchain_core.exceptions import OutputParserException
from pydantic import BaseModel, ValidationError

from langmem_cog.checks import positive_int
from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.operators import TimeWindow
from langmem_cog.graph.prompts import (
    ROUTER_PROMPT,
    SUFFICIENCY_PROMPT,
    Intent,
    RouterOutput,
    SufficiencyOutput,
    parse_json_output,
)
from langmem_cog.graph.schema import RECORD_NODE_TYPES, NodeType
from langmem_cog.timeparse import resolve_time_expressions

__all__ = [
    "INTENTS",
    "Route",
    "Router",
    "route",
    "extract_entities",
    "query_time_window",
    "node_types",
    "LLMRouter",
    "Verdict",
    "Sufficiency",
    "RuleSufficiency",
    "LLMSufficiency",
    "format_evidence",
]

logger = logging.getLogger(__name__)

#: The intents, in the order of :data:`~langmem_cog.graph.prompts.Intent`.
INTENTS: tuple[str, ...] = get_args(Intent)

_F = re.IGNORECASE
_COMPARE = [
    re.compile(r"\bboth\b", _F),
    re.compile(r"\bin\s+common\b", _F),
    re.compile(r"\bcompar(?:e|es|ed|ing|ison)\b", _F),
    re.compile(r"\bdifference\s+between\b", _F),
    re.compile(r"\band\b[^?.!]*\bshare\b", _F),
    re.compile(
        r"\bsame\b(?!\s+(?:time|day|days|week|weekend|month|year|night|morning|afternoon|evening|date|period)\b)", _F
    ),
]
_TEMPORAL_LEAD = re.compile(
    r"^\W*(?:when\b|(?:what|which)\s+(?:date|day|year|month|time)\b|in\s+(?:what|which)\s+(?:year|month)\b"
    r"|how\s+long\b|since\s+when\b|how\s+many\s+(?:days|weeks|months|years)\s+ago\b)",
    _F,
)
_BELIEF = [
    re.compile(r"\bthinks?\b", _F),
    re.compile(r"\bthought\s+(?:of|about)\b", _F),
    re.compile(r"\bfeel(?:s|ings?)?\b|\bfelt\b", _F),
    re.compile(r"\bopinions?\b", _F),
    re.compile(r"\bbelieve[sd]?\b|\bbeliefs?\b", _F),
    re.compile(r"\blike[sd]?\s+about\b", _F),
    re.compile(r"\bprefer(?:s|red|ence|ences)?\b", _F),
    re.compile(r"\bviews?\s+(?:on|of)\b", _F),
    re.compile(r"\battitude\b", _F),
    re.compile(r"\b(?:do|does|did)\s+(?:[\w'\u2019-]+\s+){1,3}?(?:like|love|hate|enjoy|dislike)\b", _F),
]
_TEMPORAL_ANY = [
    re.compile(r"\b(?:and|or)\s+when\b", _F),
    re.compile(r"\bwhen\s*\?\s*$", _F),
    re.compile(r"\b(?:what|which)\s+(?:date|year|month)\b", _F),
    re.compile(r"\bhow\s+long\s+ago\b", _F),
    re.compile(r"\b(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|several|many)\s+"
               r"(?:days?|weeks?|months?|years?)\s+ago\b", _F),
]
_DETAIL = [
    re.compile(r"\bwhy\b", _F),
    re.compile(r"\bis\s+it\s+true\b|\btrue\s+that\b", _F),
    re.compile(r"\b(?:did|does|do|is|was|has|had)\b[^?.!]*\breally\b", _F),
]

# Capitalised words that are not names when they start a question (or anywhere).
_NOT_NAMES = frozenset(
    [
        "a", "an", "and", "are", "at", "be", "both", "but", "by", "can", "could", "did", "do", "does", "for", "from",
        "had", "has", "have", "how", "i", "if", "in", "is", "it", "its", "may", "might", "must", "my", "no", "not",
        "of", "on", "or", "our", "shall", "should", "so", "that", "the", "their", "them", "then", "there", "these",
        "they", "this", "those", "to", "was", "we", "were", "what", "when", "where", "which", "who", "whom", "whose",
        "why", "will", "with", "would", "you", "your", "yes", "compare", "january", "february", "march", "april",
        "june", "july", "august", "september", "october", "november", "december", "monday", "tuesday", "wednesday",
        "thursday", "friday", "saturday", "sunday",
    ]
)
_NAME = re.compile(r"[A-Z][\w\u00C0-\u024F'\u2019-]*(?:\s+[A-Z][\w\u00C0-\u024F'\u2019-]*)*")
_POSSESSIVE = re.compile(r"['\u2019]s?$")


@dataclass(frozen=True)
class Route:
    """Where a question goes.

    Attributes:
        intent: One of :data:`INTENTS`.
        time_window: ``(start, end)`` (aware; end exclusive; either may be ``None``) the
            question restricts to, or ``None``.
        entities: Names the question mentions (capitalised words, possessives stripped).
        cue: What decided the intent: the matched words, ``"time expression"``, ``"llm"`` or
            ``None`` (``OTHER``).
    """

    intent: str
    time_window: TimeWindow | None = None
    entities: tuple[str, ...] = ()
    cue: str | None = None

    def __post_init__(self) -> None:
        if self.intent not in INTENTS:
            raise InvalidInputError(f"intent {self.intent!r} is unknown: use one of {INTENTS}")


class Router(Protocol):
    """Anything that routes a question: ``router(query, now) -> Route``."""

    def __call__(self, query: str, now: datetime | None = None) -> Route: ...


def _check_query(query: Any) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError(f"query must be a non-empty string, got {query!r}")
    return query


def _reference(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    if not isinstance(now, datetime) or now.utcoffset() is None:
        raise InvalidInputError(f"now={now!r} must be a timezone-aware datetime or None")
    return now


def extract_entities(query: str) -> tuple[str, ...]:
    """Names a question mentions: runs of capitalised words, minus question words and months.

    Example:
        >>> extract_entities("What do Maya and Leo both like?")
        ('Maya', 'Leo')
        >>> extract_entities("Who thinks Everything Everywhere All at Once is overrated?")
        ('Everything Everywhere All', 'Once')
    """
    out: list[str] = []
    for m in _NAME.finditer(query):
        words = m.group(0).split()
        while words and words[0].casefold().strip("'\u2019") in _NOT_NAMES:
            words.pop(0)
        while words and words[-1].casefold() in _NOT_NAMES:
            words.pop()
        if not words:
            continue
        name = _POSSESSIVE.sub("", " ".join(words))
        if name and name.casefold() not in _NOT_NAMES and name not in out:
            out.append(name)
    return tuple(out)


def query_time_window(query: str, now: datetime | None = None) -> TimeWindow | None:
    """The span of the time expressions in ``query`` (earliest start, latest end), or ``None``.

    Example:
        >>> from datetime import datetime, timezone
        >>> w = query_time_window("between mid-March and early April 2023", datetime(2023, 11, 1, tzinfo=timezone.utc))
        >>> [d.date().isoformat() for d in w]
        ['2023-03-11', '2023-04-11']
    """
    mentions = resolve_time_expressions(query, _reference(now))
    if not mentions:
        return None
    return (min(m.start for m in mentions), max(m.end for m in mentions))


def _first(patterns: Sequence[re.Pattern[str]], query: str) -> str | None:
    for p in patterns:
        m = p.search(query)
        if m:
            return m.group(0).strip()
    return None


def route(query: str, now: datetime | None = None) -> Route:
    """Rule-based routing: the intent, time window and names of a question.

    Args:
        query: The question.
        now: When it is asked (aware), to resolve "last month"; the current UTC time if ``None``.

    Returns:
        The :class:`Route` (see the module docstring for the rules).

    Raises:
        InvalidInputError: If ``query`` is empty or ``now`` is naive.

    Example:
        >>> route("Is it true that Leo hates running?").intent
        'DETAIL'
        >>> route("How many times did Leo go climbing, and when?").intent
        'TEMPORAL'
    """
    query = _check_query(query)
    window = query_time_window(query, now)
    entities = extract_entities(query)
    cue = _first(_COMPARE, query)
    if cue:
        return Route("COMPARE", window, entities, cue)
    m = _TEMPORAL_LEAD.search(query)
    if m:
        return Route("TEMPORAL", window, entities, m.group(0).strip(" \t\n?!.,;:\"'"))
    for intent, patterns in (("BELIEF", _BELIEF), ("TEMPORAL", _TEMPORAL_ANY), ("DETAIL", _DETAIL)):
        cue = _first(patterns, query)
        if cue:
            return Route(intent, window, entities, cue)
    if window is not None:
        return Route("TEMPORAL", window, entities, "time expression")
    return Route("OTHER", None, entities, None)


def node_types(intent: str) -> frozenset[str] | None:
    """The node types searched for an intent: all (``None``) for ``BELIEF``, else the record types.

    Example:
        >>> sorted(node_types("OTHER"))
        ['Concept', 'Event', 'Fact', 'Person']
        >>> node_types("BELIEF") is None
        True
    """
    if intent == "BELIEF":
        return None
    return frozenset(str(t) for t in RECORD_NODE_TYPES)


# ---------------------------------------------------------------------------- LLM helpers
def _structured(model: Any, schema: type[BaseModel]) -> Any | None:
    """``model.with_structured_output(schema)``, or ``None`` if the model has no structured output."""
    method = getattr(model, "with_structured_output", None)
    if method is None:
        return None
    try:
        return method(schema)
    except NotImplementedError:
        return None


def _ask(model: Any, structured: Any | None, prompt: Any, inputs: Mapping[str, str], schema: type[BaseModel]) -> Any:
    """Ask with structured output when available, else parse the reply text as JSON.

    Raises:
        OutputParserException: If the reply cannot be read as ``schema``.
    """
    messages = prompt.format_messages(**inputs)
    if structured is not None:
        try:
            out = structured.invoke(messages)
        except (OutputParserException, ValidationError) as exc:
            logger.info("structured output failed (%s): asking for plain JSON", exc)
        else:
            if isinstance(out, schema):
                return out
            if isinstance(out, Mapping):
                try:
                    return schema.model_validate(out)
                except ValidationError as exc:
                    logger.info("structured output does not match %s (%s): asking for plain JSON", schema.__name__, exc)
            elif out is not None:
                logger.info("structured output returned a %s: asking for plain JSON", type(out).__name__)
    reply = model.invoke(messages)
    text = reply.content if hasattr(reply, "content") else reply
    if isinstance(text, list):  # content blocks
        text = "".join(b.get("text", "") if isinstance(b, Mapping) else str(b) for b in text)
    return parse_json_output(text, schema)


def _day_start(value: str, tz: Any) -> datetime:
    try:
        d = date.fromisoformat(value)
        return datetime.combine(d, time(0), tzinfo=tz)
    except ValueError:
        dt = datetime.fromisoformat(value)
        return dt if dt.utcoffset() is not None else dt.replace(tzinfo=tz)


class LLMRouter:
    """Route with a chat model (``ROUTER_PROMPT`` -> ``RouterOutput``).

    Uses ``model.with_structured_output(RouterOutput)`` when the model supports it, else
    parses the reply text with :func:`~langmem_cog.graph.prompts.parse_json_output`. If
    the reply cannot be read, the rule-based ``fallback`` decides (logged). Names are
    always read by :func:`extract_entities`. The window's ISO dates are first and last
    *days*: the end becomes the start of the day after (exclusive).

    Args:
        model: A LangChain chat model.
        fallback: The router used when the model's reply is unreadable (default :func:`route`).

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> model = FakeListChatModel(responses=['{"intent": "BELIEF", "time_window_start": "2023-05-01", '
        ...                                       '"time_window_end": "2023-05-31"}'])
        >>> r = LLMRouter(model)("How did Maya feel in May?")
        >>> r.intent, r.time_window[1].date().isoformat(), r.cue
        ('BELIEF', '2023-06-01', 'llm')
    """

    def __init__(self, model: Any, *, fallback: Router | Callable[..., Route] = route) -> None:
        if not hasattr(model, "invoke"):
            raise InvalidInputError(f"model must be a LangChain chat model, got {type(model).__name__}")
        self.model = model
        self.fallback = fallback
        self._structured = _structured(model, RouterOutput)

    def __call__(self, query: str, now: datetime | None = None) -> Route:
        """Route ``query`` asked at ``now`` (see :func:`route`)."""
        query = _check_query(query)
        ref = _reference(now)
        try:
            out = _ask(self.model, self._structured, ROUTER_PROMPT, {"question": query, "today": ref.date().isoformat()},
                       RouterOutput)
        except OutputParserException as exc:
            logger.warning("router reply unreadable (%s): falling back to the rule-based router", exc)
            return self.fallback(query, now)
        start = _day_start(out.time_window_start, ref.tzinfo) if out.time_window_start else None
        end = _day_start(out.time_window_end, ref.tzinfo) + timedelta(days=1) if out.time_window_end else None
        if start is not None and end is not None and start >= end:
            logger.warning("router window %s..%s is empty: ignoring it", out.time_window_start, out.time_window_end)
            start = end = None
        window = None if start is None and end is None else (start, end)
        return Route(out.intent, window, extract_entities(query), "llm")


# ---------------------------------------------------------------------------- sufficiency
@dataclass(frozen=True)
class Verdict:
    """A sufficiency decision: whether to stop, and why (shown in traces)."""

    sufficient: bool
    reason: str = ""


class Sufficiency(Protocol):
    """Anything that judges evidence: ``check(query, route, evidence) -> Verdict``.

    ``evidence`` items are the loop's evidence dicts (``turn_id``, ``score``, ``node``,
    ``node_type``, ``via_types``, ``step``, ``speaker``, ``timestamp``, ``text``), best first.
    """

    def __call__(self, query: str, route: Route, evidence: Sequence[Mapping[str, Any]]) -> Verdict: ...


def _reached_via(item: Mapping[str, Any], node_type: str) -> bool:
    return item.get("node_type") == node_type or node_type in (item.get("via_types") or ())


def _mentions(item: Mapping[str, Any], name: str) -> bool:
    key = name.casefold()
    return str(item.get("speaker", "")).casefold() == key or key in str(item.get("text", "")).casefold()


class RuleSufficiency:
    """Enough grounded turns scoring at least ``min_score``, and the intent's requirement met.

    Requirements: ``COMPARE`` needs good evidence about at least two entities (the route's
    names, found as the speaker or in the text; without names, two speakers); ``BELIEF``
    needs a good turn grounded through a Claim; ``TEMPORAL`` one grounded through an Event
    (``node_type`` or ``via_types``).

    Args:
        min_turns: Good turns needed.
        min_score: Score a turn needs to count as good.

    Example:
        >>> ev = [{"turn_id": f"t{i}", "score": 0.8, "node_type": "Event", "speaker": "Leo", "text": "x"}
        ...       for i in range(3)]
        >>> RuleSufficiency()("q", Route("TEMPORAL"), ev).sufficient
        True
        >>> RuleSufficiency()("q", Route("COMPARE", entities=("Leo", "Maya")), ev).reason
        'evidence covers 1 of the 2 entities compared'
    """

    def __init__(self, min_turns: int = 3, min_score: float = 0.3) -> None:
        self.min_turns = positive_int(min_turns, "min_turns")
        self.min_score = float(min_score)

    def __call__(self, query: str, route: Route, evidence: Sequence[Mapping[str, Any]]) -> Verdict:
        """Judge ``evidence`` for ``query`` routed as ``route``."""
        good = [e for e in evidence if float(e.get("score", 0.0)) >= self.min_score]
        if len(good) < self.min_turns:
            return Verdict(False, f"{len(good)} of {self.min_turns} turns needed score >= {self.min_score:g}")
        if route.intent == "COMPARE":
            names = route.entities
            if len(names) >= 2:
                covered = sum(any(_mentions(e, n) for e in good) for n in names)
                if covered < 2:
                    return Verdict(False, f"evidence covers {covered} of the {len(names)} entities compared")
            elif len({str(e.get("speaker", "")).casefold() for e in good}) < 2:
                return Verdict(False, "evidence comes from fewer than two people")
        elif route.intent == "BELIEF" and not any(_reached_via(e, NodeType.CLAIM) for e in good):
            return Verdict(False, "no opinion (Claim) grounded yet")
        elif route.intent == "TEMPORAL" and not any(_reached_via(e, NodeType.EVENT) for e in good):
            return Verdict(False, "no dated Event grounded yet")
        return Verdict(True, f"{len(good)} turns score >= {self.min_score:g}")


def format_evidence(evidence: Sequence[Mapping[str, Any]], limit: int = 10) -> str:
    """One ``[turn_id] (YYYY-MM-DD) Speaker: text`` line per evidence item (best ``limit``).

    Example:
        >>> format_evidence([{"turn_id": "D1:3", "timestamp": "2023-05-08T13:56:00+00:00",
        ...                   "speaker": "Leo", "text": "I went climbing."}])
        '[D1:3] (2023-05-08) Leo: I went climbing.'
    """
    lines = []
    for e in list(evidence)[:limit]:
        day = str(e.get("timestamp") or "")[:10] or "?"
        lines.append(f"[{e.get('turn_id')}] ({day}) {e.get('speaker', '?')}: {e.get('text', '')}")
    return "\n".join(lines) if lines else "(none)"


class LLMSufficiency:
    """Ask a chat model whether the evidence answers the question (``SUFFICIENCY_PROMPT``).

    With no evidence the answer is "not sufficient" without a call. If the reply cannot
    be read, the ``fallback`` check decides (logged).

    Args:
        model: A LangChain chat model.
        max_evidence: Evidence items shown to the model (best first).
        fallback: The check used when the reply is unreadable (default :class:`RuleSufficiency`).

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> check = LLMSufficiency(FakeListChatModel(responses=['{"sufficient": true, "reason": "date stated"}']))
        >>> check("When?", Route("TEMPORAL"), [{"turn_id": "t1", "score": 1.0, "text": "on May 7"}])
        Verdict(sufficient=True, reason='date stated')
    """

    def __init__(self, model: Any, *, max_evidence: int = 10, fallback: Sufficiency | None = None) -> None:
        if not hasattr(model, "invoke"):
            raise InvalidInputError(f"model must be a LangChain chat model, got {type(model).__name__}")
        self.model = model
        self.max_evidence = max_evidence
        self.fallback = fallback or RuleSufficiency()
        self._structured = _structured(model, SufficiencyOutput)

    def __call__(self, query: str, route: Route, evidence: Sequence[Mapping[str, Any]]) -> Verdict:
        """Judge ``evidence`` for ``query`` (``route`` is passed to the fallback only)."""
        if not evidence:
            return Verdict(False, "no evidence yet")
        inputs = {"question": query, "evidence": format_evidence(evidence, self.max_evidence)}
        try:
            out = _ask(self.model, self._structured, SUFFICIENCY_PROMPT, inputs, SufficiencyOutput)
        except OutputParserException as exc:
            logger.warning("sufficiency reply unreadable (%s): falling back to %s", exc, type(self.fallback).__name__)
            return self.fallback(query, route, evidence)
        return Verdict(bool(out.sufficient), out.reason)
