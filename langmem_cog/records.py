"""Typed records: the raw :class:`Turn`, the source of truth of every memory.

A turn is one utterance of one speaker at one time in one conversation of one
namespace (a user, an agent, a tenant). Everything else langmem-cog stores is
derived from turns and can be rebuilt from them.

Example:
    >>> from datetime import datetime, timezone
    >>> t = Turn(id="D1:3", namespace="alice", conversation_id="c1", session_id="1",
    ...          speaker="Caroline", text="I went to a support group yesterday.",
    ...          timestamp=datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc), position=2)
    >>> t.memory_text
    'Caroline: I went to a support group yesterday.'
"""

from __future__ import annotations

import math
import re
import unicodedata
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from langmem_cog.checks import positive_int
from langmem_cog.errors import InvalidInputError, InvalidNamespaceError

__all__ = [
    "NAMESPACE_PATTERN",
    "MAX_TEXT_CHARS",
    "Turn",
    "validate_namespace",
    "is_valid_id",
    "make_turn",
    "nameable",
    "unstorable_values",
    "split_text",
    "storable_speaker",
    "storable_text",
]

#: Namespaces are 1-128 characters of letters, digits, ``_``, ``-``, ``.``, ``:`` and ``@``,
#: starting with a letter or digit. They are validated, never interpolated into filters.
NAMESPACE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$")

#: Longest text accepted for one turn (characters).
MAX_TEXT_CHARS = 100_000

#: The integers SQLite (and so Chroma) stores as integers: signed 64-bit. A larger one comes back
#: from a reopened store as a float (or is refused), so a turn would not read back as it was written.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_ID_PATTERN = re.compile(r"^[^\x00-\x1f\x7f]{1,256}$")
_SCALAR = (str, int, float, bool)
#: Characters no turn field can hold: NUL and lone surrogates (not encodable as UTF-8).
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
_SPEAKER_UNSAFE = re.compile(r"[\x00-\x1f\ud800-\udfff]")
#: Longest speaker name (characters).
_MAX_SPEAKER_CHARS = 256


def nameable(name: str) -> bool:
    """Whether ``name`` has a letter or digit, i.e. can name a Person node of the graph.

    Mirrors :func:`langmem_cog.graph.resolve.normalize_name` (NFKD, combining marks dropped,
    then letters and digits kept): a name is nameable exactly when its normal form is not empty.

    Example:
        >>> nameable("Zoë"), nameable("R2-D2"), nameable("!!!"), nameable("🙂")
        (True, True, False, False)
    """
    text = unicodedata.normalize("NFKD", name)
    return any(c.isalnum() for c in text if not unicodedata.combining(c))


def storable_speaker(name: Any, default: str = "user") -> str:
    """A speaker name every part of langmem-cog accepts, made from ``name``.

    Control characters and lone surrogates are removed, the name is stripped and cut to 256
    characters; an empty result gives ``default``. A name without letters or digits (``"🙂"``,
    ``"!!!"``, ``"—"``) is kept, followed by its code points, so different such names stay
    different speakers: ``"!!! (U+0021 U+0021 U+0021)"``.

    Args:
        name: The proposed speaker name (``None`` gives ``default``).
        default: The name used when nothing usable is left.

    Returns:
        A valid :attr:`Turn.speaker`.

    Example:
        >>> storable_speaker("  Ann  "), storable_speaker("🙂"), storable_speaker(None)
        ('Ann', '🙂 (U+1F642)', 'user')
    """
    text = _SPEAKER_UNSAFE.sub("", "" if name is None else str(name)).strip()[:_MAX_SPEAKER_CHARS].strip()
    if not text:
        return default
    if nameable(text):
        return text
    shown = text[:16]
    points = " ".join(f"U+{ord(c):04X}" for c in shown[:8] if not c.isspace())
    return f"{shown} ({points})"


def storable_text(text: str) -> str:
    r"""``text`` without the characters no turn can hold (NUL and lone surrogates).

    Example:
        >>> storable_text("a\x00b\ud800c")
        'abc'
    """
    return _UNSTORABLE.sub("", text)


def split_text(text: str, limit: int = MAX_TEXT_CHARS) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` characters, at whitespace where possible.

    Each cut is made at the last whitespace of the window (or at the limit if the window has
    none); whitespace at the cuts is dropped, so joining the pieces with a space gives the text
    back up to the whitespace at the cuts. A text that fits is returned whole.

    Args:
        text: The text.
        limit: The longest piece (characters, at least 1).

    Returns:
        The pieces, in order, none of them empty or only whitespace.

    Raises:
        InvalidInputError: If ``limit`` is not a positive integer.

    Example:
        >>> split_text("one two three", limit=8)
        ['one two', 'three']
    """
    limit = positive_int(limit, "limit")
    if len(text) <= limit:
        return [text] if text.strip() else []
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[: limit + 1]
        cut = max(window.rfind(" "), window.rfind("\n"), window.rfind("\t"))
        if cut <= 0:
            cut = limit
        piece, rest = rest[:cut].rstrip(), rest[cut:].lstrip()
        if piece:
            pieces.append(piece)
    if rest.strip():
        pieces.append(rest)
    return pieces


def unstorable_values(position: Any, metadata: Any) -> list[str]:
    """What of a turn's ``position`` and ``metadata`` would not read back unchanged after a reopen.

    Chroma keeps them in SQLite: integers outside the signed 64-bit range come back as floats
    (or are refused) and NaN / infinite floats are dropped (their keys vanish). Bools are fine.

    Returns:
        One message per problem, each saying what to do (empty: everything is storable).

    Example:
        >>> unstorable_values(3, {"mood": True, "score": 0.5})
        []
        >>> unstorable_values(10**30, {})[0][:40]
        'position=1000000000000000000000000000000'
    """
    problems: list[str] = []
    if isinstance(position, int) and not isinstance(position, bool) and not INT64_MIN <= position <= INT64_MAX:
        problems.append(
            f"position={position} is outside the signed 64-bit range Chroma stores (at most {INT64_MAX}, "
            "2**63 - 1): use a smaller position (it only orders the turns of a conversation)"
        )
    for key, value in (metadata.items() if isinstance(metadata, dict) else ()):
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
            problems.append(
                f"metadata[{key!r}]={value} is outside the signed 64-bit range ({INT64_MIN} to {INT64_MAX}) that "
                "Chroma stores as an integer (it would read back as a float): store it as a string, e.g. "
                f"str({value})"
            )
        elif isinstance(value, float) and not math.isfinite(value):
            problems.append(
                f"metadata[{key!r}]={value!r} is not a finite number (Chroma drops NaN and infinities, so the key "
                "would vanish after a reopen): use a finite number, a string such as 'nan', or leave the key out"
            )
    return problems


def is_valid_id(value: Any) -> bool:
    """Whether ``value`` can be a turn, conversation or session id (1-256 printable characters, not
    only whitespace, encodable as UTF-8).

    Example:
        >>> is_valid_id("D1:3"), is_valid_id("s\\n1"), is_valid_id("  ")
        (True, False, False)
    """
    if not isinstance(value, str) or not _ID_PATTERN.fullmatch(value) or not value.strip():
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def validate_namespace(namespace: Any) -> str:
    """Return ``namespace`` if it is a valid namespace id, else raise.

    Args:
        namespace: The candidate namespace id.

    Returns:
        The namespace, unchanged.

    Raises:
        InvalidNamespaceError: If it is not a string matching :data:`NAMESPACE_PATTERN`.

    Example:
        >>> validate_namespace("user-42")
        'user-42'
    """
    if not isinstance(namespace, str) or not NAMESPACE_PATTERN.fullmatch(namespace):  # "$" would take "ns\n"
        raise InvalidNamespaceError(
            f"invalid namespace {namespace!r}: use 1-128 characters of letters, digits, "
            "'_', '-', '.', ':' or '@', starting with a letter or digit"
        )
    return namespace


class Turn(BaseModel):
    """One raw conversational turn.

    Attributes:
        id: Turn id, unique within its namespace (e.g. LoCoMo's ``"D1:3"``).
        namespace: The user / agent namespace the turn belongs to.
        conversation_id: The conversation the turn belongs to.
        session_id: The session within the conversation.
        speaker: Who said it (1-256 printable characters, at least one a letter or digit; see
            :func:`storable_speaker`).
        text: What was said (non-empty, at most :data:`MAX_TEXT_CHARS` characters).
        timestamp: When it was said; must be timezone-aware.
        position: Chronological position within the conversation (0-based, at most ``2**63 - 1``).
        metadata: Extra scalar metadata (str, int, float or bool values; ints within signed 64-bit,
            floats finite: what Chroma stores and reads back unchanged).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    namespace: str
    conversation_id: str = "default"
    session_id: str = "0"
    speaker: str
    text: str
    timestamp: datetime
    position: int = Field(default=0, ge=0)
    metadata: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @field_validator("id", "conversation_id", "session_id")
    @classmethod
    def _check_id(cls, v: str) -> str:
        if not _ID_PATTERN.fullmatch(v) or not v.strip():
            raise ValueError(
                f"{v!r} is not a valid id: use 1-256 printable characters, not only whitespace"
            )
        return v

    @field_validator("id", "conversation_id", "session_id", "speaker", "text", "metadata")
    @classmethod
    def _check_utf8(cls, v: Any) -> Any:
        # Lone surrogates (e.g. from a bad decode) cannot be written as UTF-8 to Chroma or the logs.
        for s in [*v.keys(), *(x for x in v.values() if isinstance(x, str))] if isinstance(v, dict) else [v]:
            try:
                s.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError(
                    f"{s[:40]!r} is not valid Unicode (lone surrogate at position {exc.start}): "
                    "decode the source with errors='replace' first"
                ) from None
        return v

    @field_validator("position")
    @classmethod
    def _check_position(cls, v: int) -> int:
        problems = unstorable_values(v, {})
        if problems:
            raise ValueError(problems[0])
        return v

    @field_validator("metadata")
    @classmethod
    def _check_metadata(cls, v: dict[str, Any]) -> dict[str, Any]:
        problems = unstorable_values(0, v)
        if problems:
            raise ValueError("; ".join(problems))
        return v

    @field_validator("namespace")
    @classmethod
    def _check_namespace(cls, v: str) -> str:
        validate_namespace(v)
        return v

    @field_validator("speaker")
    @classmethod
    def _check_speaker(cls, v: str) -> str:
        if not v.strip() or len(v) > 256 or any(ord(c) < 32 for c in v):
            raise ValueError(f"speaker {v!r} must be 1-256 printable characters")
        if not nameable(v):
            # The graph keys Person nodes by the speaker's letters and digits: a speaker without
            # any would be stored, then make every later write of the namespace fail.
            raise ValueError(
                f"speaker {v!r} has no letters or digits: name the speaker with at least one "
                f"(storable_speaker({v!r}) gives {storable_speaker(v)!r})"
            )
        return v.strip()

    @field_validator("text")
    @classmethod
    def _check_text(cls, v: str) -> str:
        if "\x00" in v:
            raise ValueError("text contains a NUL character: strip control characters first")
        if not v.strip():
            raise ValueError("text is empty or whitespace: skip empty turns before adding them")
        if len(v) > MAX_TEXT_CHARS:
            raise ValueError(
                f"text has {len(v)} characters, more than {MAX_TEXT_CHARS}: split it into several turns"
            )
        return v

    @field_validator("timestamp")
    @classmethod
    def _check_timestamp(cls, v: datetime) -> datetime:
        if v.tzinfo is None or v.utcoffset() is None:
            raise ValueError(
                f"timestamp {v.isoformat()} is naive: give it a timezone, e.g. tzinfo=timezone.utc"
            )
        return v

    @property
    def memory_text(self) -> str:
        """The text that is embedded and indexed: ``"{speaker}: {text}"``."""
        return f"{self.speaker}: {self.text}"


def make_turn(**fields: Any) -> Turn:
    """Build a :class:`Turn`, turning pydantic's error into :class:`InvalidInputError`.

    Args:
        **fields: The fields of :class:`Turn`.

    Returns:
        The validated turn.

    Raises:
        InvalidInputError: If any field is missing or invalid; the message names it.

    Example:
        >>> from datetime import datetime, timezone
        >>> make_turn(id="t1", namespace="n", speaker="Ann", text="hi",
        ...           timestamp=datetime(2024, 1, 1, tzinfo=timezone.utc)).id
        't1'
    """
    ns = fields.get("namespace")
    if ns is not None:
        validate_namespace(ns)
    try:
        return Turn(**fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'turn'}: {err['msg']}" for err in exc.errors()
        )
        raise InvalidInputError(f"invalid turn {fields.get('id')!r}: {problems}") from None
