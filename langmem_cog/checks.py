"""Argument checks shared by the public API: one rule, one message.

Example:
    >>> positive_int(3, "k")
    3
    >>> positive_int(None, "max_tokens", allow_none=True) is None
    True
    >>> positive_int(0, "k")
    Traceback (most recent call last):
    ...
    langmem_cog.errors.InvalidInputError: k=0 is invalid: pass a positive integer
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any, Literal, overload

from langmem_cog.errors import InvalidInputError

__all__ = ["nonnegative_int", "nonnegative_weight", "positive_int", "positive_number", "turn_id_list"]


@overload
def positive_int(value: Any, name: str, *, allow_none: Literal[False] = False) -> int: ...
@overload
def positive_int(value: Any, name: str, *, allow_none: Literal[True]) -> int | None: ...


def positive_int(value: Any, name: str, *, allow_none: bool = False) -> int | None:
    """``value`` as an ``int`` if it is a positive integer (``numpy`` integers too; never a ``bool``).

    Args:
        value: The argument.
        name: Its name, for the message.
        allow_none: Accept ``None`` (returned as is).

    Raises:
        InvalidInputError: If it is anything else (``0``, ``-1``, ``"a"``, ``2.5``, ``True``).
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        hint = ", or None" if allow_none else ""
        raise InvalidInputError(f"{name}={value!r} is invalid: pass a positive integer{hint}")
    return int(value)


def nonnegative_int(value: Any, name: str) -> int:
    """``value`` as an ``int`` if it is an integer >= 0 (``numpy`` integers too; never a ``bool``).

    Example:
        >>> nonnegative_int(0, "epochs")
        0

    Raises:
        InvalidInputError: If it is anything else (``-1``, ``"a"``, ``2.5``, ``True``).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise InvalidInputError(f"{name}={value!r} is invalid: pass an integer >= 0")
    return int(value)


def positive_number(value: Any, name: str) -> float:
    """``value`` as a ``float`` if it is a finite number above 0 (never a ``bool``).

    Example:
        >>> positive_number(2e-4, "lr")
        0.0002

    Raises:
        InvalidInputError: If it is anything else (``0``, ``-1``, ``nan``, ``inf``, ``"a"``, ``True``).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise InvalidInputError(f"{name}={value!r} is invalid: pass a finite number above 0")
    return float(value)


def nonnegative_weight(value: Any, name: str) -> float:
    """``value`` as a ``float`` if it is a finite number >= 0 (never a ``bool``).

    Example:
        >>> nonnegative_weight(2, "lexical_weight")
        2.0

    Raises:
        InvalidInputError: If it is anything else (``-1``, ``nan``, ``inf``, ``"a"``, ``True``).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
        raise InvalidInputError(f"{name}={value!r} is invalid: pass a finite number >= 0")
    return float(value)


def turn_id_list(ids: Any, caller: str) -> list[str]:
    """``ids`` as a list of turn id strings (any iterable of strings; not one bare string).

    Example:
        >>> turn_id_list(("t1", "t2"), "delete_turns")
        ['t1', 't2']

    Raises:
        InvalidInputError: If it is a string or bytes, not iterable, or holds anything but strings; the message
            names ``caller``.
    """
    if isinstance(ids, str | bytes) or not isinstance(ids, Iterable):
        raise InvalidInputError(f"{caller} takes a list of turn id strings, got {type(ids).__name__}: "
                                "wrap one id in a list")
    out = list(ids)
    if not all(isinstance(i, str) for i in out):
        raise InvalidInputError(f"{caller} takes a list of turn id strings")
    return out
