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
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document

from langmem_cog.config import RetrievalMode
from langmem_cog.errors import InvalidInputError
from langmem_cog.filters import TurnFilter, parse_time
from langmem_cog.retriever import CogMemRetriever
from langmem_cog.store import TurnStore

if TYPE_CHECKING:
    from langmem_cog.memory import CogMemory

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

    On a :class:`~langmem_cog.memory.CogMemory` this runs what ``memory.config.retrieval`` says (the
    shipped cascade by default); on a bare :class:`~langmem_cog.store.TurnStore`, plain hybrid search.
    Filters apply to the whole ranking (every turn is scored), so a filtered search returns the best
    ``k`` turns that pass, not the passing ones among the overall top ``k``.

    Args:
        memory: The memory (or a bare raw-turn store).
        namespace: The namespace (a namespace with no turns yet gives ``[]``).
        query: The query text.
        k: How many documents to return.
        speaker: Keep only turns of this speaker (case-insensitive).
        start: Keep turns at or after this time (ISO date or datetime).
        end: Keep turns before this time; a bare date includes that whole day.
        exclude_ids: Turn ids to leave out (e.g. the messages already in the conversation).
        mode: ``cascade``, ``hybrid``, ``dense`` or ``lexical``; ``None``: the retriever's default.
        now: When the question is asked (relative dates in it resolve against it); ``None``: now.

    Returns:
        Documents with the retriever's metadata (``turn_id``, ``speaker``, ``timestamp``, scores,
        ``stage``), best first, ``rank`` renumbered after filtering.

    Raises:
        InvalidInputError: If ``k`` is not a positive integer, the query is empty, a time is not ISO
            or ``start`` is not before ``end``.
    """
    from langmem_cog.memory import CogMemory

    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInputError(f"k={k!r} is invalid: pass a positive integer")
    where = TurnFilter.build(speaker=speaker, start=start, end=end, exclude_ids=exclude_ids)
    source = {"memory": memory} if isinstance(memory, CogMemory) else {"store": memory}
    retriever = CogMemRetriever(namespace=namespace, k=k, mode=mode, **source)
    return retriever.invoke(query, now=now, where=where)
