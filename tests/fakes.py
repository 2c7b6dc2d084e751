"""Test doubles with known behaviour: a bag-of-words embedder and a turn factory.

``FakeEmbeddings`` hashes lower-cased word tokens into a fixed number of buckets
and L2-normalises the counts, so the cosine of two texts grows with the words
they share and is 0 for texts with no word in common (barring hash collisions).
No model is loaded.

Example:
    >>> emb = FakeEmbeddings()
    >>> a, b, c = (emb.embed_query(t) for t in ("red apple", "red car", "blue sky"))
    >>> cosine(a, b) > cosine(a, c)
    True
    >>> round(cosine(a, a), 6)
    1.0
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage

from langmem_cog.records import Turn, make_turn

__all__ = ["FakeEmbeddings", "ScriptedChatModel", "cosine", "make_turns", "scripted", "DIM"]

#: Dimension of the fake vectors.
DIM = 256
_WORD = re.compile(r"\w+", re.UNICODE)


def _bucket(word: str, dim: int) -> int:
    # hashlib, not hash(): stable across processes (PYTHONHASHSEED) and runs.
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "big") % dim


class FakeEmbeddings(Embeddings):
    """Hashed bag-of-words embeddings (dimension ``dim``, L2-normalised).

    A text with no word characters maps to a fixed unit vector on the last bucket, so no
    vector is ever zero (Chroma's cosine space dislikes zero vectors).

    Attributes:
        calls: Number of texts embedded so far (documents and queries).
    """

    def __init__(self, dim: int = DIM) -> None:
        self.dim = dim
        self.calls = 0

    def vector(self, text: str) -> np.ndarray:
        """The normalised float32 vector of ``text``."""
        v = np.zeros(self.dim, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            v[_bucket(word, self.dim)] += 1.0
        norm = float(np.linalg.norm(v))
        if norm == 0.0:
            v[-1] = 1.0
            return v
        return v / norm

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += len(texts)
        return [self.vector(t).tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return self.vector(text).tolist()


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def make_turns(
    namespace: str,
    texts: Sequence[str],
    speaker: str = "Ann",
    start: datetime = datetime(2024, 1, 1, tzinfo=UTC),
    *,
    id_prefix: str = "t",
    session_id: str = "1",
    conversation_id: str = "c1",
    metadata: dict[str, Any] | None = None,
) -> list[Turn]:
    """One validated turn per text: ids ``t0, t1, ...``, one minute apart, positions 0..n-1.

    Example:
        >>> [t.id for t in make_turns("ns", ["a", "b"])]
        ['t0', 't1']
    """
    return [
        make_turn(
            id=f"{id_prefix}{i}",
            namespace=namespace,
            conversation_id=conversation_id,
            session_id=session_id,
            speaker=speaker,
            text=text,
            timestamp=start + timedelta(minutes=i),
            position=i,
            metadata=dict(metadata or {}),
        )
        for i, text in enumerate(texts)
    ]


class ScriptedChatModel(GenericFakeChatModel):
    """Replies from a script (tool calls included) and records every prompt it is given."""

    prompts: list[list[BaseMessage]] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.prompts.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def scripted(*replies: AIMessage | str) -> ScriptedChatModel:
    """A :class:`ScriptedChatModel` that gives ``replies`` in turn (a string is a plain text reply)."""
    return ScriptedChatModel(messages=iter([AIMessage(r) if isinstance(r, str) else r for r in replies]), prompts=[])
