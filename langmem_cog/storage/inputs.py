"""What the store accepts: the turns given to ``add_turns`` (checked, grouped, compared with the stored ones),
their order, and the query of a search."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from langmem_cog.errors import DuplicateTurnError, InvalidInputError
from langmem_cog.records import Turn, unstorable_values
from langmem_cog.storage.chroma import turn_metadata


def order_key(turn: Turn) -> tuple[str, int, str]:
    """The chronological order of a namespace's turns: conversation, position, id."""
    return (turn.conversation_id, turn.position, turn.id)


def turn_list(turns: Any) -> list[Turn]:
    """``add_turns``'s argument as a list of turns (one :class:`Turn` is a list of one).

    Raises:
        InvalidInputError: If it is not a list of :class:`Turn`.
    """
    if isinstance(turns, Turn):
        return [turns]
    if not isinstance(turns, Sequence) or isinstance(turns, str | bytes):
        raise InvalidInputError(f"add_turns takes a list of Turn, got {type(turns).__name__}")
    for i, t in enumerate(turns):
        if not isinstance(t, Turn):
            raise InvalidInputError(
                f"item {i} is a {type(t).__name__}, not a Turn: build turns with langmem_cog.make_turn"
            )
        # Turn's validators check these too; a model_copy(update=...) or model_construct skips them.
        problems = unstorable_values(t.position, t.metadata)
        if problems:
            raise InvalidInputError(f"turn {t.id!r} (item {i}) cannot be stored unchanged: {'; '.join(problems)}")
        try:  # every other field again (a naive timestamp, an empty text, a speaker no graph can name)
            Turn.model_validate(t.model_dump())
        except ValidationError as exc:
            errors = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise InvalidInputError(f"turn {t.id!r} (item {i}) is invalid: {errors} (build turns with "
                                    "langmem_cog.make_turn; model_copy(update=...) skips its checks)") from None
    return list(turns)


def group_by_namespace(turns: list[Turn]) -> dict[str, list[Turn]]:
    """The turns of each namespace, in order.

    Raises:
        DuplicateTurnError: If an id appears twice in one namespace.
    """
    by_ns: dict[str, list[Turn]] = {}
    seen: set[tuple[str, str]] = set()
    for t in turns:
        key = (t.namespace, t.id)
        if key in seen:
            raise DuplicateTurnError(f"turn id {t.id!r} appears twice in namespace {t.namespace!r}: ids must be unique")
        seen.add(key)
        by_ns.setdefault(t.namespace, []).append(t)
    return by_ns


def _content(turn: Turn) -> tuple[str, dict[str, tuple[str, Any]]]:
    """A turn's content as Chroma stores it (text and metadata), with value types (so 1, 1.0 and True differ)."""
    meta = turn_metadata(turn)
    return turn.text, {k: (type(v).__name__, repr(v) if isinstance(v, float) else v) for k, v in meta.items()}


def unstored(namespace: str, group: list[Turn], stored: dict[str, Turn]) -> list[Turn]:
    """The turns of ``group`` not in ``stored`` (the namespace's stored turns of those ids).

    Raises:
        DuplicateTurnError: If a stored turn has the id of one of ``group`` but other content.
    """
    clash = [t.id for t in group if t.id in stored and _content(stored[t.id]) != _content(t)]
    if clash:
        raise DuplicateTurnError(
            f"turn ids already stored in namespace {namespace!r} with other content: {clash[:5]}; delete them "
            "first or use new ids (retrying with identical turns is accepted)"
        )
    return [t for t in group if t.id not in stored]


def check_query(query: Any) -> None:
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise InvalidInputError("query is empty or whitespace: pass the question to search for")
    if len(query) > 20_000:
        raise InvalidInputError(f"query has {len(query)} characters: shorten it to at most 20,000")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"query is not valid Unicode (lone surrogate at position {exc.start}): decode it with errors='replace'"
        ) from None
