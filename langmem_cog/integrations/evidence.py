"""Cited evidence: filtered search over a namespace and the ``[turn_id | speaker | date] text`` format.

Every integration shows evidence the same way, so a model (or a person) can cite the raw turn an
answer came from::

    [D1:18 | Leo | 2023-05-08] I'm allergic to shellfish, so no paella for me.

Example:
    >>> from langchain_core.documents import Document
    >>> doc = Document(page_content="Leo: I'm allergic to shellfish.",
    ...                metadata={"turn_id": "D1:18", "speaker": "Leo", "timestamp": "2023-05-08T13:56:00+00:00"})
    >>> format_evidence([doc])
    "[D1:18 | Leo | 2023-05-08] I'm allergic to shellfish."
    >>> parse_evidence_line("[D1:18 | Leo | 2023-05-08] I'm allergic to shellfish.")
    ('D1:18', 'Leo', '2023-05-08', "I'm allergic to shellfish.")
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from datetime import MAXYEAR, UTC, date, datetime
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.tools import ToolException

from langmem_cog.config import RetrievalMode
from langmem_cog.errors import InvalidInputError
from langmem_cog.filters import END_OF_TIME, TurnFilter, parse_time
from langmem_cog.retriever import CogMemRetriever
from langmem_cog.store import TurnStore
from langmem_cog.timeparse import resolve_time_expressions

if TYPE_CHECKING:
    from langmem_cog.memory import CogMemory

__all__ = [
    "EVIDENCE_LINE",
    "MemoryToolError",
    "evidence_fields",
    "evidence_line",
    "format_evidence",
    "parse_evidence_line",
    "parse_time",
    "reference_time",
    "resolve_time",
    "search_evidence",
    "tool_error_content",
]

#: A year and month in ISO form (``2023-05``).
_YEAR_MONTH = re.compile(r"(?P<year>\d{4})-(?P<month>\d{1,2})")
#: The start of an ISO date or datetime (``2023-05-08``, ``20230508``), valid or not.
_ISO_LIKE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}(?!\d)|\d{8}(?!\d)")

#: One evidence line: ``[turn_id | speaker | date] text``.
EVIDENCE_LINE = re.compile(r"^\[(?P<turn_id>[^|\]]+) \| (?P<speaker>[^|\]]+) \| (?P<date>[^\]]*)\] (?P<text>.*)$")


def evidence_fields(item: Document | Mapping[str, Any]) -> tuple[str, str, str, str]:
    """``(turn_id, speaker, date, text)`` of a retrieved ``Document`` or an operator-loop evidence dict.

    A document's ``page_content`` is ``"speaker: text"``; the speaker prefix is dropped from the text.
    """
    if isinstance(item, Document):
        meta: Mapping[str, Any] = item.metadata
        text = item.page_content
        speaker = str(meta.get("speaker", ""))
        if speaker and text.startswith(f"{speaker}: "):
            text = text[len(speaker) + 2 :]
    elif isinstance(item, Mapping):
        meta = item
        speaker = str(meta.get("speaker", ""))
        text = str(meta.get("text", ""))
    else:
        raise InvalidInputError(f"evidence must be a Document or a dict, got {type(item).__name__}")
    if "turn_id" not in meta:
        raise InvalidInputError(f"evidence {meta!r} has no 'turn_id': pass documents from CogMemRetriever")
    return str(meta["turn_id"]), speaker, str(meta.get("timestamp", ""))[:10], " ".join(text.split())


def evidence_line(item: Document | Mapping[str, Any]) -> str:
    """One evidence item as ``[turn_id | speaker | date] text``."""
    turn_id, speaker, day, text = evidence_fields(item)
    return f"[{turn_id} | {speaker} | {day}] {text}"


def format_evidence(items: Iterable[Document | Mapping[str, Any]], separator: str = "\n") -> str:
    """Evidence items as cited lines, one per item (``""`` for none)."""
    return separator.join(evidence_line(i) for i in items)


def parse_evidence_line(line: str) -> tuple[str, str, str, str] | None:
    """``(turn_id, speaker, date, text)`` of a line written by :func:`evidence_line`, else ``None``."""
    m = EVIDENCE_LINE.match(line.strip())
    if m is None:
        return None
    return m["turn_id"], m["speaker"], m["date"], m["text"]


def reference_time(now: datetime | str | None) -> datetime:
    """``now`` as an aware datetime (naive means UTC); ``None`` is the current time.

    Raises:
        InvalidInputError: If ``now`` is neither a datetime nor an ISO date or datetime.
    """
    if now is None:
        return datetime.now(UTC)
    if isinstance(now, str | datetime):
        ref = parse_time(now)
        if ref is not None:
            return ref
    raise InvalidInputError(f"now={now!r} is not a datetime or an ISO date: pass e.g. '2023-05-08T12:00:00+00:00'")


def resolve_time(
    value: str | date | datetime | None, *, end: bool = False, now: datetime | str | None = None
) -> datetime | None:
    """An aware time bound from an ISO date / datetime or a relative expression ("yesterday",
    "last month", "in May", "two weeks ago"), resolved against ``now``.

    ISO values mean what :func:`~langmem_cog.filters.parse_time` says, and ``2023-05`` is that month; a
    value in ISO form that names no real day (``2023-02-30``) is an error. A relative expression is read
    by :func:`~langmem_cog.timeparse.resolve_time_expressions`: as a ``start`` it is the first instant
    of the period it names, as an ``end`` (``end=True``) the first instant after it, so
    ``start="in May", end="in May"`` keeps all of May. A bare month, season or year ("May", "2022")
    is read as "in May", "in 2022".

    Args:
        value: The bound (``None`` or blank: no bound).
        end: Whether it is an end bound.
        now: When the question is asked (a datetime or ISO string; naive means UTC); ``None``: now.

    Returns:
        The bound, or ``None``.

    Raises:
        InvalidInputError: If the value is neither ISO nor an expression the time parser resolves
            (the message lists forms that work), or ``now`` is not a time.

    Example:
        >>> resolve_time("last month", now="2023-05-08T12:00:00+00:00").isoformat()
        '2023-04-01T00:00:00+00:00'
        >>> resolve_time("yesterday", end=True, now="2023-05-08T12:00:00+00:00").isoformat()
        '2023-05-08T00:00:00+00:00'
        >>> resolve_time("2023-05-08").isoformat()
        '2023-05-08T00:00:00+00:00'
    """
    if not isinstance(value, str) or not value.strip():
        return parse_time(value, end=end)
    raw = value.strip()
    month = _YEAR_MONTH.fullmatch(raw)
    if month is not None:  # "2023-05": that month
        year, mon = int(month["year"]), int(month["month"])
        if not 1 <= mon <= 12:
            raise InvalidInputError(f"{value!r} is not a month: use e.g. '2023-05' or '2023-05-08'")
        if end:
            year, mon = (year + 1, 1) if mon == 12 else (year, mon + 1)
            if year > MAXYEAR:  # the end of 9999-12, the last month a date can name
                return END_OF_TIME
        return datetime(year, mon, 1, tzinfo=UTC)
    try:
        return parse_time(raw, end=end)
    except InvalidInputError:
        if _ISO_LIKE.match(raw):  # a date in ISO form that does not exist ("2023-02-30"): not an expression
            raise
    ref = reference_time(now)
    raw = " ".join(value.split())
    mentions = resolve_time_expressions(raw, ref) or resolve_time_expressions(f"in {raw}", ref)
    if not mentions:
        raise InvalidInputError(
            f"{value!r} is not a date: use an ISO date such as '2023-05-08' or an expression such as "
            "'yesterday', 'last week', 'last month', 'in May', 'two weeks ago' or 'in 2022'"
        )
    return max(m.end for m in mentions) if end else min(m.start for m in mentions)


def search_evidence(
    memory: CogMemory | TurnStore,
    namespace: str,
    query: str,
    *,
    k: int = 5,
    speaker: str | None = None,
    start: str | date | datetime | None = None,
    end: str | date | datetime | None = None,
    exclude_ids: Collection[str] = (),
    mode: RetrievalMode | None = None,
    now: datetime | str | None = None,
) -> list[Document]:
    """Search one namespace through :class:`~langmem_cog.CogMemRetriever`, filtered by speaker and a
    ``[start, end)`` time range.

    On a :class:`~langmem_cog.memory.CogMemory` this runs what ``memory.config.retriever.mode`` says (the
    shipped cascade by default); on a bare :class:`~langmem_cog.store.TurnStore`, plain hybrid search.
    Filters apply to the whole ranking (every turn is scored), so a filtered search returns the best
    ``k`` turns that pass, not the passing ones among the overall top ``k``.

    Args:
        memory: The memory (or a bare raw-turn store).
        namespace: The namespace (a namespace with no turns yet gives ``[]``).
        query: The query text.
        k: How many documents to return.
        speaker: Keep only turns of this speaker (case-insensitive).
        start: Keep turns at or after this time: an ISO date or datetime, or a relative expression
            ("yesterday", "last month", "in May"; see :func:`resolve_time`), resolved against ``now``.
        end: Keep turns before this time; a bare date or a relative expression includes that whole
            day or period.
        exclude_ids: Turn ids to leave out (e.g. the messages already in the conversation).
        mode: ``cascade``, ``hybrid``, ``dense`` or ``lexical``; ``None``: the retriever's default.
        now: When the question is asked (relative dates in it and in ``start`` / ``end`` resolve
            against it); ``None``: now.

    Returns:
        Documents with the retriever's metadata (``turn_id``, ``speaker``, ``timestamp``, scores,
        ``stage``), best first, ``rank`` renumbered after filtering.

    Raises:
        InvalidInputError: If ``k`` is not a positive integer, the query is empty, a time is neither
            ISO nor a time expression, or ``start`` is not before ``end``.
    """
    from langmem_cog.memory import CogMemory

    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInputError(f"k={k!r} is invalid: pass a positive integer")
    t0, t1 = resolve_time(start, now=now), resolve_time(end, end=True, now=now)
    if t0 is not None and t1 is not None and t0 >= t1:
        raise InvalidInputError(
            f"start={start!r} ({t0.isoformat()}) is not before end={end!r} ({t1.isoformat()}): "
            "swap them or widen the range"
        )
    where = TurnFilter.build(speaker=speaker, start=t0, end=t1, exclude_ids=exclude_ids)
    source = {"memory": memory} if isinstance(memory, CogMemory) else {"store": memory}
    retriever = CogMemRetriever(namespace=namespace, k=k, mode=mode, **source)
    return retriever.invoke(query, now=now, where=where)


class MemoryToolError(InvalidInputError, ToolException):
    """A memory tool was called with arguments it cannot use (an empty query, ``k=0``, a ``start``
    that is not a date, ...).

    It is a ``ToolException``: the tools built by ``create_memory_tools`` and
    ``create_memory_retriever_tool`` return it to the model
    as an error ``ToolMessage`` (``status="error"``) so the model can call again with better
    arguments; with ``handle_tool_errors=False`` it is raised (an :class:`InvalidInputError`).
    """


def tool_error_content(exc: ToolException) -> str:
    """The content of the error ``ToolMessage`` the model gets for a :class:`MemoryToolError`."""
    return f"Error: {exc} Correct the arguments and call the tool again."
