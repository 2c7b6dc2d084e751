"""A namespace's turns and vectors in one local file, so that reopening a big namespace skips Chroma's read.

Reading 30,000 turns with their vectors back from the embedded Chroma database takes about 2 s (its ``get``
and the conversion of its answer); the same turns from this file take a fraction of that. The file
(``data_dir/turns/<collection>.bin``) is derived from Chroma, the source of truth, as the BM25 log is:

* every write of a namespace appends one record, its new turns and their vectors, once Chroma holds them;
* a delete rewrites the file without the deleted turns (their text leaves it), a forget removes it;
* a load uses the file only when it reads whole and its turn ids are exactly the ids the collection holds
  (one listing of ids from Chroma, about 0.15 s at 30,000 turns). Anything else (a crash between Chroma's
  write and the append, a torn or damaged record, a write by a library that does not keep the file) reads
  the namespace from Chroma and writes the file again from what it read.

A turn's content never changes under its id (``add_turns`` refuses an id stored with other content, and a
delete rewrites the file before an id can be stored again), so equal ids mean equal turns. Nothing is
fsynced: a record lost or torn by a crash is caught by the check above and costs one read from Chroma.

A record is ``MAGIC``, three little-endian ``uint32`` (header length, vector bytes, CRC-32 of both), a JSON
header (``{"dim": d, "turns": [[id, conversation, session, speaker, text, timestamp, position, metadata],
...]}``) and the vectors as float32 rows.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from langmem_cog import make_turn
    >>> path = Path(tempfile.mkdtemp()) / "turns" / "demo.bin"
    >>> turn = make_turn(id="t0", namespace="demo", speaker="Leo", text="I adopted a beagle.",
    ...                  timestamp="2023-05-08T10:00:00+00:00")
    >>> append_turns(path, [turn], np.ones((1, 4), dtype=np.float32))
    >>> turns, emb = read_turns(path, "demo")
    >>> turns == [turn], emb.shape
    (True, (1, 4))
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
import orjson

from langmem_cog.errors import StoreError
from langmem_cog.records import Turn

__all__ = ["TurnFileError", "append_turns", "drop_turns", "read_turns", "write_turns"]

logger = logging.getLogger("langmem_cog.store")

MAGIC = b"LMT1"
_HEAD = struct.Struct("<4sIII")


class TurnFileError(StoreError):
    """A turns file that cannot be used (torn, damaged, or of another shape): the namespace is read from Chroma.

    Internal to the store, never raised to a caller: a file that cannot be used is rebuilt from Chroma.
    """


def _record(turns: Sequence[Turn], emb: np.ndarray) -> bytes:
    """One record of ``turns`` and their vectors (one float32 row per turn)."""
    vectors = np.ascontiguousarray(emb, dtype=np.float32)
    if vectors.ndim != 2 or len(vectors) != len(turns):
        raise ValueError(f"{len(turns)} turns but vectors of shape {vectors.shape}: pass one row per turn")
    header = orjson.dumps(
        {
            "dim": int(vectors.shape[1]),
            "turns": [[t.id, t.conversation_id, t.session_id, t.speaker, t.text, t.timestamp.isoformat(),
                       t.position, t.metadata] for t in turns],
        }
    )
    body = vectors.tobytes()
    crc = zlib.crc32(body, zlib.crc32(header))
    return _HEAD.pack(MAGIC, len(header), len(body), crc) + header + body


def append_turns(path: Path, turns: Sequence[Turn], emb: np.ndarray) -> None:
    """Append one record of ``turns`` and their vectors to the file (created with its folder if missing).

    Raises:
        OSError: If the file cannot be written (what was appended of the record is cut back when possible;
            a load finds a torn record anyway).
    """
    if not turns:
        return
    payload = _record(turns, emb)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        start = os.fstat(fd).st_size
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            try:
                os.ftruncate(fd, start)
            except OSError as exc:
                logger.warning("cannot cut %s back after a failed append (%s): the next load reads Chroma", path, exc)
            raise
    finally:
        os.close(fd)


def write_turns(path: Path, turns: Sequence[Turn], emb: np.ndarray) -> None:
    """Replace the file by one record of ``turns`` (none: the file is removed), with an atomic rename.

    Raises:
        OSError: If the file cannot be written (the old one stays; the temporary copy is removed).
    """
    if not turns:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(_record(turns, emb))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # it holds the turns' text
        raise


def read_turns(path: Path, namespace: str) -> tuple[list[Turn], np.ndarray]:
    """The turns of the file (in the order they were written) and their vectors.

    Raises:
        FileNotFoundError: If there is no file.
        TurnFileError: If a record is torn or damaged, or the records' vectors differ in dimension.
        OSError: If the file cannot be read.
    """
    data = path.read_bytes()
    view = memoryview(data)
    turns: list[Turn] = []
    blocks: list[np.ndarray] = []
    dim: int | None = None
    at = 0
    while at < len(data):
        if len(data) - at < _HEAD.size:
            raise TurnFileError(f"{path}: torn record header at byte {at}")
        magic, n_head, n_body, crc = _HEAD.unpack_from(data, at)
        start, end = at + _HEAD.size, at + _HEAD.size + n_head + n_body
        if magic != MAGIC or end > len(data):
            raise TurnFileError(f"{path}: no record at byte {at} (torn or damaged)")
        header, body = view[start : start + n_head], view[start + n_head : end]  # no copies of the bytes
        if zlib.crc32(body, zlib.crc32(header)) != crc:
            raise TurnFileError(f"{path}: the record at byte {at} is damaged (checksum)")
        try:
            head = orjson.loads(header)
            rows, width = head["turns"], int(head["dim"])
            turns.extend(
                Turn.model_construct(id=tid, namespace=namespace, conversation_id=conv, session_id=sess, speaker=who,
                                     text=text, timestamp=datetime.fromisoformat(ts), position=int(pos), metadata=meta)
                for tid, conv, sess, who, text, ts, pos, meta in rows
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise TurnFileError(f"{path}: the record at byte {at} cannot be read ({exc})") from exc
        if (dim is not None and width != dim) or width <= 0 or n_body != 4 * width * len(rows):
            raise TurnFileError(f"{path}: the record at byte {at} holds vectors of another shape")
        dim = width
        blocks.append(np.frombuffer(body, dtype=np.float32).reshape(len(rows), width))
        at = end
    if not turns:
        raise TurnFileError(f"{path}: no records")
    emb = blocks[0].copy() if len(blocks) == 1 else np.vstack(blocks)
    return turns, emb


def drop_turns(path: Path, namespace: str, ids: Sequence[str]) -> None:
    """Rewrite the file without the turns of ``ids``; a file that cannot be read is removed (the next load
    reads Chroma and writes it again).

    Raises:
        OSError: If the file can be neither rewritten nor removed.
    """
    try:
        turns, emb = read_turns(path, namespace)
    except FileNotFoundError:
        return
    except (TurnFileError, OSError):
        path.unlink(missing_ok=True)
        return
    gone = set(ids)
    keep = [i for i, t in enumerate(turns) if t.id not in gone]
    if len(keep) == len(turns):
        return
    try:
        write_turns(path, [turns[i] for i in keep], emb[keep])
    except OSError:
        path.unlink(missing_ok=True)
