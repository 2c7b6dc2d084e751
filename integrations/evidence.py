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
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from langchain_core.documents import Document

from langmem_cog.errors import InvalidInputError
from langmem_cog.retriever import scored_turn_to_document
from langmem_cog.store import SearchMode, TurnStore

__all__ = [
    "EVIDENCE_LINE",
    "evidence_fields",
    "evidence_line",
    "format_evidence",
    "parse_evidence_line",
    "parse_time",
    "search_evidence",
]

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


def parse_time(value: str | date | datetime | None, *, end: bool = False) -> datetime | None:
    """An aware datetime from an ISO date or datetime (naive means UTC).

    A bare date is the start of that day, or with ``end=True`` the start of the next day (so a
    ``[start, end)`` range of two dates includes both days).

    Example:
        >>> parse_time("2023-05-08", end=True).isoformat()
        '2023-05-09T00:00:00+00:00'
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        raw = value.strip()
        try:
            value = date.fromisoformat(raw) if len(raw) == 10 else datetime.fromisoformat(raw)
        except ValueError:
            raise InvalidInputError(f"{raw!r} is not an ISO date or datetime: use e.g. '2023-05-08'") from None
    if isinstance(value, datetime):
        return value if value.utcoffset() is not None else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        day = datetime.combine(value, time(), tzinfo=UTC)
        return day + timedelta(days=1) if end else day
    raise InvalidInputError(f"expected an ISO date string, a date or a datetime, got {type(value).__name__}")


def search_evidence(
    store: TurnStore,
    namespace: str,
    query: str,
    *,
    k: int = 5,
    speaker: str | None = None,
    start: str | date | datetime | None = None,
    end: str | date | datetime | None = None,
    exclude_ids: Collection[str] = (),
    mode: SearchMode = "hybrid",
) -> list[Document]:
    """Hybrid search of one namespace, filtered by speaker and a ``[start, end)`` time range.

    Filters apply to the whole ranking (every turn is scored), so a filtered search returns the
    best ``k`` turns that pass, not the passing ones among the overall top ``k``.

    Args:
        store: The raw-turn store.
        namespace: The namespace (a namespace with no turns yet gives ``[]``).
        query: The query text.
        k: How many documents to return.
        speaker: Keep only turns of this speaker (case-insensitive).
        start: Keep turns at or after this time (ISO date or datetime).
        end: Keep turns before this time; a bare date includes that whole day.
        exclude_ids: Turn ids to leave out (e.g. the messages already in the conversation).
        mode: ``hybrid``, ``dense`` or ``lexical``.

    Returns:
        Documents with the retriever's metadata (``turn_id``, ``speaker``, ``timestamp``, scores,
        ``stage="raw"``), best first, ``rank`` renumbered after filtering.

    Raises:
        InvalidInputError: If ``k`` is not a positive integer, the query is empty, a time is not ISO
            or ``start`` is not before ``end``.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInputError(f"k={k!r} is invalid: pass a positive integer")
    t0, t1 = parse_time(start), parse_time(end, end=True)
    if t0 is not None and t1 is not None and t0 >= t1:
        raise InvalidInputError(f"start={start!r} is not before end={end!r}: swap them or widen the range")
    if not store.has_namespace(namespace):
        return []
    filtered = bool(speaker or t0 or t1 or exclude_ids)
    fetch = max(store.count(namespace), 1) if filtered else k
    who = speaker.strip().casefold() if speaker else None
    docs: list[Document] = []
    for hit in store.search(namespace, query, k=fetch, mode=mode):
        t = hit.turn
        if t.id in exclude_ids or (who and t.speaker.casefold() != who):
            continue
        if (t0 is not None and t.timestamp < t0) or (t1 is not None and t.timestamp >= t1):
            continue
        doc = scored_turn_to_document(hit)
        doc.metadata["rank"] = len(docs) + 1
        docs.append(doc)
        if len(docs) == k:
            break
    return docs
