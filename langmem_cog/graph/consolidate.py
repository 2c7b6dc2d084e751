"""Consolidation: repeated events become a stable Fact ("Leo regularly goes climbing").

For every (Person, Concept) pair linked through Events (``Person -PARTICIPATED_IN->
Event -MENTIONS-> Concept``), the events are ordered by time (``start``, else the
event's ``first_seen``). An event *qualifies* when some window of ``window_days``
days contains it and at least ``min_events`` events of the pair. When any event
qualifies, the pair gets one consolidated Fact node:

* id ``"fact:<person>|regularly|<concept>|consolidated"`` (a fourth ``|`` part, so it
  never collides with an extracted fact id);
* ``consolidated=True``, ``predicate="regularly"``, ``subject`` = the person id,
  ``object`` = the concept's name, ``support`` = the number of qualifying events,
  ``valid_from`` = the earliest qualifying event's time, ``valid_to`` = the latest
  qualifying event's ``end`` (else its time);
* ``text`` from :func:`describe_habit` (a template) or from ``writer``;
* ``provenance`` = the union of the qualifying events' provenance;
* edges ``Person -HAS_ATTR-> Fact``, ``Fact -MENTIONS-> Concept`` and
  ``Fact -SUPPORTED_BY-> Event`` for each qualifying event. Events are kept.

Consolidation is a recomputation, so it is idempotent: a Fact whose support did not
change is left alone (the writer is not called again), one whose support changed is
updated, and one whose pair no longer qualifies (events deleted) is removed.

The LLM path (:class:`LLMFactWriter`) sends
:data:`~langmem_cog.graph.prompts.CONSOLIDATION_PROMPT` (beside its output schema in the prompts module).

Example:
    >>> import networkx as nx
    >>> from datetime import datetime, timezone
    >>> G = nx.MultiDiGraph()
    >>> G.add_node("person:leo", type="Person", name="Leo", provenance={"t1", "t2", "t3"})
    >>> G.add_node("concept:climbing", type="Concept", name="climbing", provenance={"t1", "t2", "t3"})
    >>> for i, day in enumerate([13, 20, 27], 1):
    ...     e = f"event:t{i}#0"
    ...     G.add_node(e, type="Event", text="went climbing", verb="go", provenance={f"t{i}"},
    ...                start=datetime(2023, 3, day, tzinfo=timezone.utc), end=None)
    ...     _ = G.add_edge("person:leo", e, key="PARTICIPATED_IN", type="PARTICIPATED_IN", provenance={f"t{i}"})
    ...     _ = G.add_edge(e, "concept:climbing", key="MENTIONS", type="MENTIONS", provenance={f"t{i}"})
    >>> consolidate(G)
    ['fact:leo|regularly|climbing|consolidated']
    >>> G.nodes["fact:leo|regularly|climbing|consolidated"]["text"]
    'Leo regularly goes climbing (3 times between 13 Mar 2023 and 27 Mar 2023)'
    >>> consolidate(G)
    []
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, cast

import networkx as nx
from langchain_core.messages import BaseMessage
from langchain_core.prompts import ChatPromptTemplate

from langmem_cog.errors import ExtractionError, InvalidInputError
from langmem_cog.graph.prompts import CONSOLIDATION_PROMPT, ConsolidatedFactOutput, parse_json_output
from langmem_cog.graph.reconcile import natural_key
from langmem_cog.graph.schema import EdgeType, NodeType

__all__ = [
    "consolidate",
    "consolidated_fact_id",
    "describe_habit",
    "FactWriter",
    "LLMFactWriter",
    "CONSOLIDATED_PREDICATE",
]

logger = logging.getLogger(__name__)

#: Predicate of consolidated facts.
CONSOLIDATED_PREDICATE = "regularly"

#: ``writer(person_name, concept_name, events) -> text``; ``events`` are the qualifying
#: events' attribute dicts (plus ``"id"``), oldest first.
FactWriter = Callable[[str, str, list[dict[str, Any]]], str]

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_IRREGULAR = {"be": "is", "have": "has", "go": "goes", "do": "does"}
_PA, _MEN, _SUP, _HAS = (
    EdgeType.PARTICIPATED_IN.value,
    EdgeType.MENTIONS.value,
    EdgeType.SUPPORTED_BY.value,
    EdgeType.HAS_ATTR.value,
)


def consolidated_fact_id(person: str, concept: str) -> str:
    """The id of the consolidated Fact of a (Person id, Concept id) pair.

    Example:
        >>> consolidated_fact_id("person:leo", "concept:climbing")
        'fact:leo|regularly|climbing|consolidated'
    """
    return f"fact:{person.split(':', 1)[-1]}|{CONSOLIDATED_PREDICATE}|{concept.split(':', 1)[-1]}|consolidated"


def _fmt_date(d: datetime) -> str:
    return f"{d.day} {_MONTHS[d.month - 1]} {d.year}"


def _third_person(verb: str) -> str:
    head, _, rest = verb.strip().partition(" ")
    head = head.lower()
    if head in _IRREGULAR:
        out = _IRREGULAR[head]
    elif head.endswith(("s", "sh", "ch", "x", "z", "o")):
        out = head + "es"
    elif len(head) > 1 and head.endswith("y") and head[-2] not in "aeiou":
        out = head[:-1] + "ies"
    else:
        out = head + "s"
    return f"{out} {rest}".strip()


def _event_time(data: dict[str, Any]) -> datetime | None:
    return data.get("start") or data.get("first_seen")


def describe_habit(person: str, concept: str, events: Sequence[dict[str, Any]], kind: str | None = None) -> str:
    """The template text of a consolidated Fact.

    Uses the events' most common ``verb`` ("go" -> "goes"; "goes to" for places and
    concepts not ending in "-ing": "goes climbing", "goes to the gym"), else "engages with".

    Args:
        person: The person's name.
        concept: The concept's name.
        events: Event attribute dicts (``start`` or ``first_seen``, optional ``verb``).
        kind: The concept's kind (``place`` adds "to" after "go").

    Example:
        >>> from datetime import datetime, timezone
        >>> evs = [{"start": datetime(2023, 3, d, tzinfo=timezone.utc), "verb": "go"} for d in (13, 20)]
        >>> describe_habit("Leo", "Crux Gym", evs, kind="place")
        'Leo regularly goes to Crux Gym (2 times between 13 Mar 2023 and 20 Mar 2023)'
        >>> describe_habit("Leo", "bouldering", evs)
        'Leo regularly goes bouldering (2 times between 13 Mar 2023 and 20 Mar 2023)'
    """
    times = sorted(t for t in (_event_time(e) for e in events) if t is not None)
    verbs = Counter(e["verb"].strip() for e in events if e.get("verb") and e["verb"].strip())
    if verbs:
        top = min(verbs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        last_word = concept.split()[-1].lower() if concept.split() else ""
        to = top.lower() == "go" and (kind == "place" or not last_word.endswith("ing"))
        phrase = _third_person(top) + (" to" if to else "")
    else:
        phrase = "engages with"
    when = f" between {_fmt_date(times[0])} and {_fmt_date(times[-1])}" if times else ""
    return f"{person} regularly {phrase} {concept} ({len(events)} times{when})"


class LLMFactWriter:
    """A ``writer`` for :func:`consolidate` that asks a LangChain chat model for the text.

    The prompt is :data:`~langmem_cog.graph.prompts.CONSOLIDATION_PROMPT`; the reply is read as its
    schema, :class:`~langmem_cog.graph.prompts.ConsolidatedFactOutput` (``{"text": ...}``), or, from a model
    that answers in plain text, as its first non-empty line. An error, an empty reply or one longer than
    ``max_chars`` falls back to :func:`describe_habit` (logged) unless ``fallback=False``, which raises
    :class:`~langmem_cog.errors.ExtractionError` instead.

    Args:
        model: Anything with ``invoke(messages)`` returning a message (``.content``) or a string: any
            LangChain chat model.
        prompt: The chat prompt template (variables ``person``, ``concept``, ``count``, ``events``).
        max_chars: Longest accepted sentence.
        fallback: Use the template when the model fails.

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> w = LLMFactWriter(FakeListChatModel(responses=['{"text": "Leo climbs most weekends."}']))
        >>> w("Leo", "climbing", [])
        'Leo climbs most weekends.'
    """

    def __init__(self, model: Any, *, prompt: ChatPromptTemplate = CONSOLIDATION_PROMPT, max_chars: int = 300,
                 fallback: bool = True):
        if not hasattr(model, "invoke"):
            raise InvalidInputError(f"LLMFactWriter needs a model with .invoke(), got {type(model).__name__}")
        self.model = model
        self.prompt = prompt
        self.max_chars = max_chars
        self.fallback = fallback

    def render(self, person: str, concept: str, events: Sequence[dict[str, Any]]) -> list[BaseMessage]:
        """The messages sent to the model (one ``- (YYYY-MM-DD) text`` line per event)."""
        lines = []
        for e in events:
            t = _event_time(e)
            lines.append(f"- ({t.date().isoformat() if t else 'unknown date'}) {e.get('text', '')}")
        return self.prompt.format_messages(person=person, concept=concept, count=len(events), events="\n".join(lines))

    def __call__(self, person: str, concept: str, events: list[dict[str, Any]]) -> str:
        try:
            reply = self.model.invoke(self.render(person, concept, events))
            text = _reply_text(reply)
            if not text or len(text) > self.max_chars:
                raise ExtractionError(
                    f"fact writer reply is empty or longer than {self.max_chars} characters: {text[:80]!r}"
                )
            return text
        except Exception as exc:
            if not self.fallback:
                if isinstance(exc, ExtractionError):
                    raise
                raise ExtractionError(f"fact writer model failed: {exc}") from exc
            logger.warning("fact writer failed for %s / %s (%s); using the template", person, concept, exc)
            return describe_habit(person, concept, events)


def _reply_text(reply: Any) -> str:
    """The sentence of a reply: its schema's ``text``, else its first non-empty line."""
    content = getattr(reply, "content", reply)
    if isinstance(content, list):
        content = "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content)
    text = str(content)
    if "{" in text:  # the schema's JSON (an invalid one raises, and the writer falls back)
        return parse_json_output(text, ConsolidatedFactOutput).text.strip()
    for line in text.splitlines():
        line = line.strip().strip('"').strip()
        if line:
            return line
    return ""


def _edge_time(G: nx.MultiDiGraph, provenance: set[str], default: datetime | None) -> datetime | None:
    times = G.graph.get("turns") or {}
    found = [times[t] for t in provenance if t in times]
    return min(found) if found else default


def _typed(G: nx.MultiDiGraph, node: str, node_type: NodeType) -> bool:
    return G.nodes[node].get("type") == node_type.value


def _pair_events(G: nx.MultiDiGraph, person: str, only: set[str] | None = None) -> dict[str, list[str]]:
    """concept id -> events of ``person`` that mention it (optionally only concepts in ``only``)."""
    out: dict[str, set[str]] = {}
    for _, ev, k in G.out_edges(person, keys=True):
        if k != _PA or not _typed(G, ev, NodeType.EVENT):
            continue
        for _, c, k2 in G.out_edges(ev, keys=True):
            if k2 == _MEN and _typed(G, c, NodeType.CONCEPT) and (only is None or c in only):
                out.setdefault(c, set()).add(ev)
    return {c: sorted(evs) for c, evs in out.items()}


def _qualifying(G: nx.MultiDiGraph, events: list[str], min_events: int, window: timedelta) -> list[str]:
    timed = sorted(
        ((t, natural_key(e), e) for e in events if (t := _event_time(G.nodes[e])) is not None),
        key=lambda x: (x[0], x[1]),
    )
    keep = [False] * len(timed)
    j = 0
    for i in range(len(timed)):
        j = max(j, i)
        while j + 1 < len(timed) and timed[j + 1][0] - timed[i][0] <= window:
            j += 1
        if j - i + 1 >= min_events:
            for m in range(i, j + 1):
                keep[m] = True
    return [e for (_, _, e), k in zip(timed, keep, strict=True) if k]


def _remove_fact(G: nx.MultiDiGraph, fid: str) -> None:
    logger.debug("removing consolidated fact %s: its pair no longer qualifies", fid)
    G.remove_node(fid)


def _upsert_fact(G: nx.MultiDiGraph, person: str, concept: str, events: list[str], writer: FactWriter | None) -> bool:
    fid = consolidated_fact_id(person, concept)
    evdata = [G.nodes[e] for e in events]
    times: list[datetime] = [cast(datetime, _event_time(d)) for d in evdata]  # _qualifying keeps timed events
    ends: list[datetime] = [d.get("end") or t for d, t in zip(evdata, times, strict=True)]
    prov: set[str] = set().union(*(set(d.get("provenance", ())) for d in evdata))
    seen: list[datetime] = [d.get("first_seen") or t for d, t in zip(evdata, times, strict=True)]
    last: list[datetime] = [d.get("last_seen") or t for d, t in zip(evdata, times, strict=True)]
    cdata, pdata = G.nodes[concept], G.nodes[person]
    attrs: dict[str, Any] = {
        "type": NodeType.FACT.value,
        "subject": person,
        "predicate": CONSOLIDATED_PREDICATE,
        "object": cdata.get("name", concept.split(":", 1)[-1]),
        "valid_from": min(times),
        "valid_to": max(ends),
        "consolidated": True,
        "support": len(events),
        "provenance": prov,
        "first_seen": min(seen),
        "last_seen": max(last),
        "aliases": set(),
    }
    old_support = {v for _, v, k in G.out_edges(fid, keys=True) if k == _SUP} if fid in G else None
    if old_support == set(events):
        old = G.nodes[fid]
        if all(old.get(k) == v for k, v in attrs.items()) and old.get("text"):
            return False
    person_name = pdata.get("name", person.split(":", 1)[-1])
    views = [{"id": e, **G.nodes[e]} for e in events]
    text = writer(person_name, attrs["object"], views) if writer else None
    if not text:
        text = describe_habit(person_name, attrs["object"], views, kind=cdata.get("kind"))
    attrs["text"] = text
    if fid in G:
        G.nodes[fid].clear()
        G.remove_edges_from([(fid, v, k) for _, v, k in G.out_edges(fid, keys=True) if k == _SUP and v not in events])
    G.add_node(fid, **attrs)
    default = min(times)
    G.add_edge(person, fid, key=_HAS, type=_HAS, provenance=set(prov), timestamp=_edge_time(G, prov, default))
    G.add_edge(fid, concept, key=_MEN, type=_MEN, provenance=set(prov), timestamp=_edge_time(G, prov, default))
    for e, t in zip(events, times, strict=True):
        ep = set(G.nodes[e].get("provenance", ()))
        G.add_edge(fid, e, key=_SUP, type=_SUP, provenance=ep, timestamp=_edge_time(G, ep, t))
    return True


def consolidate(
    G: nx.MultiDiGraph,
    *,
    min_events: int = 3,
    window_days: float = 30,
    writer: FactWriter | None = None,
    pairs: Iterable[tuple[str, str]] | None = None,
) -> list[str]:
    """Create, update or remove consolidated Facts from repeated events, in place.

    Args:
        G: The namespace graph.
        min_events: Least number of events of a pair inside one window.
        window_days: Length of the window in days.
        writer: ``writer(person_name, concept_name, events) -> str`` writing the Fact text
            (e.g. :class:`LLMFactWriter`); :func:`describe_habit` when ``None`` or when it
            returns nothing. Called only for new or changed Facts.
        pairs: Only recompute these ``(person id, concept id)`` pairs (missing ids are
            skipped); ``None`` recomputes every pair and removes every consolidated Fact
            whose pair no longer qualifies.

    Returns:
        Ids of the consolidated Facts created or changed, sorted (``[]`` when nothing
        changed, e.g. on a second run).

    Raises:
        InvalidInputError: If ``min_events < 1`` or ``window_days < 0``.

    Example:
        >>> consolidate(nx.MultiDiGraph())
        []
    """
    if isinstance(min_events, bool) or not isinstance(min_events, int) or min_events < 1:
        raise InvalidInputError(f"min_events={min_events!r} is invalid: pass an integer >= 1")
    if not isinstance(window_days, int | float) or window_days < 0:
        raise InvalidInputError(f"window_days={window_days!r} is invalid: pass a number of days >= 0")
    window = timedelta(days=window_days)
    wanted: dict[str, set[str] | None] = {}
    if pairs is None:
        for n in G.nodes:
            if _typed(G, n, NodeType.PERSON):
                wanted[n] = None
    else:
        for p, c in pairs:
            if p in G and c in G and _typed(G, p, NodeType.PERSON):
                only = wanted.setdefault(p, set())
                if only is not None:
                    only.add(c)
    changed: list[str] = []
    keep: set[str] = set()
    for person in sorted(wanted):
        only = wanted[person]
        by_concept = _pair_events(G, person, only)
        targets = sorted(only) if only is not None else sorted(by_concept)
        for concept in targets:
            fid = consolidated_fact_id(person, concept)
            events = _qualifying(G, by_concept.get(concept, []), min_events, window)
            if not events:
                if fid in G and G.nodes[fid].get("consolidated"):
                    _remove_fact(G, fid)
                continue
            keep.add(fid)
            if _upsert_fact(G, person, concept, events, writer):
                changed.append(fid)
    if pairs is None:
        stale = [n for n, d in G.nodes(data=True) if d.get("consolidated") and n not in keep]
        for fid in sorted(stale):
            _remove_fact(G, fid)
    if changed:
        logger.debug("consolidated %d facts", len(changed))
    return sorted(changed)
