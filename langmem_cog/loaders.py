"""Loaders: LoCoMo JSON, LongMemEval JSON / JSON.gz and LangChain messages into :class:`Turn` lists.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> turns = turns_from_messages([HumanMessage("I moved to Lisbon"), AIMessage("Nice!")],
    ...                             namespace="u1")
    >>> [t.speaker for t in turns]
    ['user', 'assistant']
"""

from __future__ import annotations

import gzip
import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from langmem_cog.errors import InvalidInputError
from langmem_cog.records import Turn, make_turn, validate_namespace

__all__ = [
    "LOCOMO_DATE_FORMAT",
    "read_json",
    "LoCoMoConversation",
    "load_locomo",
    "locomo_turns",
    "parse_locomo_date",
    "LongMemEvalQuestion",
    "load_longmemeval",
    "longmemeval_turns",
    "parse_longmemeval_date",
    "turns_from_messages",
]

logger = logging.getLogger(__name__)

LOCOMO_DATE_FORMAT = "%I:%M %p on %d %B, %Y"
_SESSION_KEY = re.compile(r"^session_(\d+)$")


def read_json(path: str | Path) -> Any:
    p = Path(path)
    if not p.exists():
        raise InvalidInputError(f"data file {p} does not exist: pass an existing path with --data")
    opener = gzip.open if p.suffix == ".gz" else open
    try:
        with opener(p, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    except (json.JSONDecodeError, OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{p} is not valid JSON (or JSON.gz): {exc}") from exc


def parse_locomo_date(value: str, tz: tzinfo = UTC) -> datetime:
    """Parse LoCoMo's ``"1:56 pm on 8 May, 2023"`` into an aware datetime.

    Example:
        >>> parse_locomo_date("1:56 pm on 8 May, 2023").isoformat()
        '2023-05-08T13:56:00+00:00'
    """
    try:
        return datetime.strptime(value.strip(), LOCOMO_DATE_FORMAT).replace(tzinfo=tz)
    except (ValueError, AttributeError) as exc:
        raise InvalidInputError(f"session date {value!r} is not of the form '1:56 pm on 8 May, 2023'") from exc


@dataclass(frozen=True)
class LoCoMoConversation:
    """One LoCoMo record: its id, speakers, turns (in order) and raw QA list."""

    sample_id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    qa: list[dict[str, Any]]


def locomo_turns(record: dict[str, Any], namespace: str | None = None) -> list[Turn]:
    """The turns of one LoCoMo record, in chronological order.

    Turn ids are LoCoMo's ``dia_id``; the session timestamp is the turn's timestamp plus one
    second per position within the session (keeps order, never crosses a day). Image turns keep
    their caption in ``metadata["blip_caption"]``.

    Args:
        record: A LoCoMo conversation record.
        namespace: The namespace (default: the record's ``sample_id``).
    """
    if not isinstance(record, dict) or "conversation" not in record:
        raise InvalidInputError("not a LoCoMo record: expected a dict with a 'conversation' key")
    conv = record["conversation"]
    sample_id = str(record.get("sample_id", "conversation"))
    if not isinstance(conv, dict):
        raise InvalidInputError(f"{sample_id}: 'conversation' must be an object, got {type(conv).__name__}")
    ns = validate_namespace(namespace or sample_id)
    sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.match(k)))
    turns: list[Turn] = []
    for s in sessions:
        items = conv.get(f"session_{s}") or []
        if not items:
            continue
        date_key = f"session_{s}_date_time"
        if date_key not in conv:
            raise InvalidInputError(f"{sample_id}: session {s} has turns but no {date_key!r}")
        base = parse_locomo_date(conv[date_key])
        for j, item in enumerate(items):
            if not isinstance(item, dict) or "dia_id" not in item or "speaker" not in item:
                raise InvalidInputError(
                    f"{sample_id}: turn {j} of session {s} is not an object with 'dia_id' and 'speaker'"
                )
            meta: dict[str, Any] = {"session_date": conv[date_key]}
            if item.get("blip_caption"):
                meta["blip_caption"] = str(item["blip_caption"])
            turns.append(
                make_turn(
                    id=str(item["dia_id"]),
                    namespace=ns,
                    conversation_id=sample_id,
                    session_id=str(s),
                    speaker=str(item["speaker"]),
                    text=str(item["text"]) if str(item.get("text", "")).strip() else "(no text)",
                    timestamp=base + timedelta(seconds=j),
                    position=len(turns),
                    metadata=meta,
                )
            )
    return turns


def load_locomo(path: str | Path, namespace_prefix: str = "") -> list[LoCoMoConversation]:
    """Load a LoCoMo JSON file (a list of conversation records).

    Args:
        path: The JSON file.
        namespace_prefix: Prepended to each ``sample_id`` to form its namespace.
    """
    data = read_json(path)
    if not isinstance(data, list):
        raise InvalidInputError(f"{path}: expected a JSON list of LoCoMo conversations")
    out = []
    for rec in data:
        if not isinstance(rec, dict):
            raise InvalidInputError(f"{path}: expected LoCoMo records (objects), got a {type(rec).__name__}")
        sid = str(rec.get("sample_id"))
        turns = locomo_turns(rec, namespace=f"{namespace_prefix}{sid}")  # validates the record
        conv = rec["conversation"]
        out.append(
            LoCoMoConversation(
                sample_id=sid,
                speakers=(str(conv.get("speaker_a", "")), str(conv.get("speaker_b", ""))),
                turns=turns,
                qa=list(rec.get("qa", [])),
            )
        )
    return out


def parse_longmemeval_date(value: str, tz: tzinfo = UTC) -> datetime:
    """Parse LongMemEval's ``"2023/04/10 (Mon) 23:07"``.

    Example:
        >>> parse_longmemeval_date("2023/04/10 (Mon) 23:07").isoformat()
        '2023-04-10T23:07:00+00:00'
    """
    try:
        cleaned = re.sub(r"\s*\([A-Za-z]{3}\)\s*", " ", value.strip())
        return datetime.strptime(cleaned, "%Y/%m/%d %H:%M").replace(tzinfo=tz)
    except (ValueError, AttributeError) as exc:
        raise InvalidInputError(f"date {value!r} is not of the form '2023/04/10 (Mon) 23:07'") from exc


@dataclass(frozen=True)
class LongMemEvalQuestion:
    """One LongMemEval question with its haystack turns (sessions sorted by date)."""

    question_id: str
    question_type: str
    question: str
    question_date: datetime
    answer: str
    gold_turn_ids: list[str]
    answer_session_ids: list[str]
    turns: list[Turn]

    @property
    def is_abstention(self) -> bool:
        """Abstention questions (``_abs`` ids) have no gold turn."""
        return self.question_id.endswith("_abs")


def longmemeval_turns(record: dict[str, Any], namespace: str | None = None) -> tuple[list[Turn], list[str]]:
    """The haystack turns of one LongMemEval record (sessions sorted by date) and the gold turn ids.

    Turn ids are ``"{session_id}:{index}"``; ``has_answer`` turns are gold. A session listed twice in
    one haystack (LongMemEval-S dev has 7 such questions, the same session under two dates) is kept
    once, at its earlier date.
    """
    haystack = ("haystack_dates", "haystack_session_ids", "haystack_sessions")
    if not isinstance(record, dict) or any(k not in record for k in ("question_id", *haystack)):
        raise InvalidInputError(f"not a LongMemEval record: expected an object with 'question_id' and {haystack}")
    qid = str(record["question_id"])
    ns = validate_namespace(namespace or re.sub(r"[^A-Za-z0-9_.:@-]", "_", qid))
    lists = [record[k] for k in haystack]
    if not all(isinstance(x, list) for x in lists) or len({len(x) for x in lists}) != 1:
        raise InvalidInputError(f"{qid}: {haystack} must be lists of the same length")
    sessions = list(zip(*lists, strict=True))
    sessions.sort(key=lambda x: parse_longmemeval_date(x[0]))
    turns: list[Turn] = []
    gold: list[str] = []
    seen: set[str] = set()
    for date, sid, items in sessions:
        if str(sid) in seen:
            logger.debug("%s: session %r is listed twice; keeping its first date", qid, sid)
            continue
        seen.add(str(sid))
        base = parse_longmemeval_date(date)
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise InvalidInputError(f"{qid}: session {sid!r} must be a list of turn objects")
        for j, item in enumerate(items):
            content = str(item.get("content", ""))
            if not content.strip():
                continue
            tid = f"{sid}:{j}"
            if item.get("has_answer"):
                gold.append(tid)
            turns.append(
                make_turn(
                    id=tid,
                    namespace=ns,
                    conversation_id=qid,
                    session_id=str(sid),
                    speaker=str(item.get("role", "user")),
                    text=content[:100_000],
                    timestamp=base + timedelta(seconds=j),
                    position=len(turns),
                )
            )
    return turns, gold


def load_longmemeval(path: str | Path, limit: int | None = None) -> list[LongMemEvalQuestion]:
    """Load LongMemEval JSON or JSON.gz (a list of question records)."""
    data = read_json(path)
    if not isinstance(data, list):
        raise InvalidInputError(f"{path}: expected a JSON list of LongMemEval questions")
    out = []
    for rec in data[:limit]:
        turns, gold = longmemeval_turns(rec)  # validates the record
        if "question" not in rec or "question_date" not in rec:
            raise InvalidInputError(f"{rec['question_id']}: a LongMemEval record needs 'question' and 'question_date'")
        out.append(
            LongMemEvalQuestion(
                question_id=str(rec["question_id"]),
                question_type=str(rec.get("question_type", "")),
                question=str(rec["question"]),
                question_date=parse_longmemeval_date(rec["question_date"]),
                answer=str(rec.get("answer", "")),
                gold_turn_ids=gold,
                answer_session_ids=[str(s) for s in rec.get("answer_session_ids", [])],
                turns=turns,
            )
        )
    return out


def turns_from_messages(
    messages: Sequence[Any],
    namespace: str,
    *,
    conversation_id: str = "default",
    session_id: str = "0",
    start: datetime | None = None,
    start_position: int = 0,
    id_prefix: str | None = None,
    speaker_names: dict[str, str] | None = None,
) -> list[Turn]:
    """Turn LangChain messages into turns (system and tool messages are skipped).

    Args:
        messages: ``BaseMessage`` objects.
        namespace: The namespace of the turns.
        conversation_id: Their conversation.
        session_id: Their session.
        start: Timestamp of the first message (default: now, UTC); later ones add a second each.
        start_position: Position of the first message in the conversation.
        id_prefix: Prefix of generated ids (default ``"{conversation_id}:{session_id}:"``); a message
            with an ``id`` keeps it.
        speaker_names: Map from message type (``human``, ``ai``) to speaker name
            (default ``user`` / ``assistant``).
    """
    from langchain_core.messages import BaseMessage

    validate_namespace(namespace)
    names = {"human": "user", "ai": "assistant", **(speaker_names or {})}
    t0 = start or datetime.now(UTC)
    if t0.tzinfo is None:
        raise InvalidInputError("start is a naive datetime: give it a timezone, e.g. tzinfo=timezone.utc")
    prefix = id_prefix if id_prefix is not None else f"{conversation_id}:{session_id}:"
    out: list[Turn] = []
    for i, msg in enumerate(_iter_messages(messages)):
        if not isinstance(msg, BaseMessage):
            raise InvalidInputError(f"message {i} is a {type(msg).__name__}, not a LangChain BaseMessage")
        if msg.type not in names:
            continue
        text = msg.text if isinstance(msg.text, str) else str(msg.content)
        if not text.strip():
            continue
        pos = start_position + len(out)
        out.append(
            make_turn(
                id=str(msg.id) if msg.id else f"{prefix}{pos}",
                namespace=namespace,
                conversation_id=conversation_id,
                session_id=session_id,
                speaker=getattr(msg, "name", None) or names[msg.type],
                text=text,
                timestamp=t0 + timedelta(seconds=len(out)),
                position=pos,
            )
        )
    return out


def _iter_messages(messages: Iterable[Any]) -> Iterable[Any]:
    if isinstance(messages, str | bytes):
        raise InvalidInputError("turns_from_messages takes a list of messages, not a string")
    return messages
