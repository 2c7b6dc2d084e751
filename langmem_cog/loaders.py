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
import hashlib
import json
import logging
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from langmem_cog.errors import InvalidInputError
from langmem_cog.records import (
    MAX_TEXT_CHARS,
    Turn,
    make_turn,
    split_text,
    storable_speaker,
    storable_text,
    validate_namespace,
)

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
    "message_turn_id",
    "turns_from_messages",
]

logger = logging.getLogger(__name__)

LOCOMO_DATE_FORMAT = "%I:%M %p on %d %B, %Y"
_SESSION_KEY = re.compile(r"^session_(\d+)$")
#: A message id kept as a turn id: printable, at most 240 characters (room for ``#<part>``).
_MESSAGE_ID = re.compile(r"^[^\x00-\x1f\x7f\ud800-\udfff]{1,240}$")


def read_json(path: str | Path) -> Any:
    p = Path(path)
    if not p.exists():
        raise InvalidInputError(f"data file {p} does not exist: pass the path of an existing file")
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


def message_turn_id(message_id: Any) -> str | None:
    r"""The turn id a message's own id gives (``None`` for a message without an id).

    An id a turn can hold (1-240 printable characters, leaving room for a ``#<part>`` suffix) is
    kept as is; any other becomes ``msg-<sha256 prefix>``, stable across calls.

    Example:
        >>> message_turn_id("lc_run-1"), message_turn_id(None), message_turn_id("a\nb")[:4]
        ('lc_run-1', None, 'msg-')
    """
    if message_id is None or message_id == "":
        return None
    raw = str(message_id)
    if _MESSAGE_ID.match(raw) and raw.strip():
        return raw
    return "msg-" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:32]


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

    Every message is stored in a form a turn can hold: NUL characters and lone surrogates are
    removed, and a text longer than :data:`~langmem_cog.records.MAX_TEXT_CHARS` becomes several
    turns ``<id>#1``, ``<id>#2``, ... (metadata ``message_id``, ``part``, ``parts``), each with a
    logged warning. Speaker names without letters or digits get their code points appended
    (:func:`~langmem_cog.records.storable_speaker`).

    Args:
        messages: Anything ``langchain_core.messages.convert_to_messages`` accepts: ``BaseMessage``
            objects, ``(role, text)`` tuples, ``{"role": ..., "content": ...}`` dicts, strings
            (user messages).
        namespace: The namespace of the turns.
        conversation_id: Their conversation.
        session_id: Their session.
        start: Timestamp of the first message (default: now, UTC); later ones add a second each.
        start_position: Position of the first message in the conversation.
        id_prefix: Prefix of generated ids (default ``"{conversation_id}:{session_id}:"``). A message
            with an ``id`` keeps it (see :func:`message_turn_id`); one without gets the prefix and a
            fresh uuid, so converting more messages of the same conversation never repeats an id.
        speaker_names: Map from message type (``human``, ``ai``) to speaker name
            (default ``user`` / ``assistant``); a message's own ``name`` wins.

    Returns:
        The turns, in message order.

    Raises:
        InvalidInputError: If ``messages`` is a string or an item is not a message LangChain accepts,
            or ``start`` is naive.
        InvalidNamespaceError: If the namespace id is malformed.
    """
    validate_namespace(namespace)
    defaults = {"human": "user", "ai": "assistant"}
    names = {**defaults, **(speaker_names or {})}
    t0 = start or datetime.now(UTC)
    if t0.tzinfo is None:
        raise InvalidInputError("start is a naive datetime: give it a timezone, e.g. tzinfo=timezone.utc")
    prefix = id_prefix if id_prefix is not None else f"{conversation_id}:{session_id}:"
    out: list[Turn] = []
    for i, raw in enumerate(_iter_messages(messages)):
        msg = _to_message(raw, i)
        if msg.type not in names:
            continue
        text = msg.text if isinstance(msg.text, str) else str(msg.content)
        clean = storable_text(text)
        base_id = message_turn_id(msg.id) or f"{prefix}{uuid.uuid4().hex}"
        if clean != text:
            logger.warning("message %r: removed %d characters a turn cannot hold (NUL, lone surrogates)",
                           base_id, len(text) - len(clean))
        parts = split_text(clean)
        if not parts:
            continue
        if len(parts) > 1:
            logger.warning("message %r has %d characters, more than %d: stored as %d turns %r to %r",
                           base_id, len(clean), MAX_TEXT_CHARS, len(parts), f"{base_id}#1", f"{base_id}#{len(parts)}")
        wanted = getattr(msg, "name", None) or names[msg.type]
        speaker = storable_speaker(wanted, default=defaults.get(msg.type, "user"))
        if speaker != str(wanted).strip():
            logger.warning("message %r: speaker %r stored as %r", base_id, wanted, speaker)
        for j, part in enumerate(parts, start=1):
            whole = len(parts) == 1
            out.append(
                make_turn(
                    id=base_id if whole else f"{base_id}#{j}",
                    namespace=namespace,
                    conversation_id=conversation_id,
                    session_id=session_id,
                    speaker=speaker,
                    text=part,
                    timestamp=t0 + timedelta(seconds=len(out)),
                    position=start_position + len(out),
                    metadata={} if whole else {"message_id": base_id, "part": j, "parts": len(parts)},
                )
            )
    return out


def _to_message(item: Any, index: int) -> Any:
    from langchain_core.messages import BaseMessage, convert_to_messages

    if isinstance(item, BaseMessage):
        return item
    if isinstance(item, bytes):
        raise InvalidInputError(f"message {index} is bytes: decode it to a string first")
    try:
        (msg,) = convert_to_messages([item])
    except (ValueError, TypeError, KeyError, NotImplementedError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidInputError(
            f"message {index} ({type(item).__name__}) is not a LangChain message: {reason}; pass BaseMessage "
            "objects, (role, text) tuples or {'role': ..., 'content': ...} dicts"
        ) from None
    return msg


def _iter_messages(messages: Iterable[Any]) -> Iterable[Any]:
    if isinstance(messages, str | bytes):
        raise InvalidInputError("turns_from_messages takes a list of messages, not a string")
    if not isinstance(messages, Iterable):
        raise InvalidInputError(f"turns_from_messages takes a list of messages, got {type(messages).__name__}")
    return messages
