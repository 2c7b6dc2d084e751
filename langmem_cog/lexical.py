"""A per-namespace BM25 index (bm25s + Snowball stemming) kept in step with the raw store.

bm25s indexes are immutable, so the index keeps its tokenised documents and
rebuilds the bm25s matrices lazily, on the first query after a change.

On disk the index is an append-only JSON-lines log of ``add`` and ``del``
operations; a torn last line (a crash mid-write) is ignored on load, and so is any
other line that cannot be used (bytes that are not UTF-8, JSON that is not an
operation): the log is rewritten without them, and the store re-indexes what they
held from Chroma, the source of truth. Deleting
documents compacts the log (rewritten to a temporary file, then renamed), so
forgotten text does not survive on disk.

Example:
    >>> idx = LexicalIndex()
    >>> idx.add(["a", "b"], ["I love running marathons", "The cat sleeps"])
    >>> idx.search("runner ran marathon", 1)[0][0]
    'a'
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import orjson
import Stemmer
from bm25s.stopwords import STOPWORDS_EN_PLUS

from langmem_cog.errors import DuplicateTurnError, InvalidInputError, ResourceLimitError, StoreError

__all__ = ["LexicalIndex", "tokenize"]

logger = logging.getLogger(__name__)

# bm25s sets its logger to DEBUG when imported, so its note on every index build ("Building index from
# tokens") would reach any handler an application configures: its records follow the application's levels.
if logging.getLogger("bm25s").level == logging.DEBUG:
    logging.getLogger("bm25s").setLevel(logging.NOTSET)

_TOKEN = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(STOPWORDS_EN_PLUS)
_STEMMER = Stemmer.Stemmer("english")
_STEM_LOCK = threading.Lock()

#: Characters of scripts written without spaces between words: Han ideographs (with the
#: iteration marks 々〆〇 and the Hangzhou numerals), kana (with the prolonged-sound mark ー and
#: half-width katakana) and Hangul (syllables and jamo). All of them are ``\w``, so ``_TOKEN``
#: would make a whole clause one token; :func:`tokenize` cuts their runs into bigrams instead.
_CJK_CLASS = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c"  # CJK marks, Hangzhou numerals
    "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff"  # Hiragana, Katakana (+ phonetic extensions)
    "\u3130-\u318f"  # Hangul compatibility jamo
    "\u3400-\u4dbf\u4e00-\u9fff"  # CJK Unified Ideographs (+ extension A)
    "\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"  # Hangul jamo extension A, syllables, extension B
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width katakana
    "\U00020000-\U0003134f"  # CJK Unified Ideographs extensions B-G (+ compatibility supplement)
)
_CJK = re.compile(f"[{_CJK_CLASS}]")
_CJK_RUNS = re.compile(f"([{_CJK_CLASS}]+)")


def _cjk_grams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run; a one-character run is its own token.

    Example:
        >>> _cjk_grams("跑马拉松"), _cjk_grams("跑")
        (['跑马', '马拉', '拉松'], ['跑'])
    """
    if len(run) == 1:
        return [run]
    return [run[i:i + 2] for i in range(len(run) - 1)]


def tokenize(text: str) -> list[str]:
    """Lower-case, split on word characters, drop English stopwords (bm25s's
    ``STOPWORDS_EN_PLUS``), Snowball-stem.

    Words are runs of Unicode word characters (``\\w``), so accented words stay whole
    ("Montréal" -> ``montréal``). Runs of CJK ideographs, kana and Hangul, which are written
    without spaces, become overlapping character bigrams (a lone character is a token of its
    own), neither stopword-filtered nor stemmed; the rest of a mixed word is handled like any
    word. Text with no CJK character goes through exactly the English path.

    Example:
        >>> tokenize("The kids were painting sunsets")
        ['kid', 'paint', 'sunset']
        >>> tokenize("I moved to Montréal")
        ['move', 'montréal']
        >>> tokenize("我喜欢跑步")
        ['我喜', '喜欢', '欢跑', '跑步']
    """
    lowered = text.lower()
    if _CJK.search(lowered) is None:  # the English (and other space-separated) path, unchanged
        words = [w for w in _TOKEN.findall(lowered) if w not in _STOP]
        with _STEM_LOCK:  # PyStemmer objects are not thread-safe
            return list(_STEMMER.stemWords(words))
    # (stem this?, token) in text order; the words to stem are stemmed in one call.
    items: list[tuple[bool, str]] = []
    for word in _TOKEN.findall(lowered):
        for i, part in enumerate(_CJK_RUNS.split(word)):  # odd parts are the CJK runs
            if i % 2:
                items.extend((False, g) for g in _cjk_grams(part))
            elif part and part not in _STOP:
                items.append((True, part))
    with _STEM_LOCK:
        stems = iter(_STEMMER.stemWords([w for stem, w in items if stem]))
    return [next(stems) if stem else w for stem, w in items]


def _append_synced(path: Path, payload: bytes) -> None:
    """Append ``payload`` to ``path`` and fsync it; if that fails, cut the file back to its old length,
    so a full disk leaves no torn line for the next append to glue onto.

    Raises:
        OSError: If the file cannot be opened, written or synced.
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        start = os.fstat(fd).st_size
        try:
            _write_all(fd, payload)
            os.fsync(fd)
        except OSError:
            _cut(fd, start, path)
            raise
    finally:
        os.close(fd)


def _write_all(fd: int, payload: bytes) -> None:
    """Write every byte of ``payload`` to ``fd`` (``os.write`` may write fewer)."""
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]


def _cut(fd: int, size: int, path: Path) -> None:
    """Truncate a log back to ``size`` bytes after a failed append (best effort: a torn last line is
    skipped on load anyway)."""
    try:
        os.ftruncate(fd, size)
    except OSError as exc:
        logger.warning("cannot cut %s back after a failed append (%s): its torn last line is skipped on load",
                       path, exc)


def out_of_files(exc: OSError) -> bool:
    """Whether an ``OSError`` is the process (``EMFILE``) or the system (``ENFILE``) out of file descriptors."""
    return exc.errno in (errno.EMFILE, errno.ENFILE)


def files_limit_message(path: Path, exc: OSError) -> str:
    """The message of a store file that could not be opened because the process holds too many files."""
    return (f"cannot open {path}: the process holds too many open files ({exc.strerror or exc}); nothing stored is "
            "damaged. Raise the limit (ulimit -n), or keep fewer namespaces open at once "
            "(CogMemConfig.open_namespaces, LANGMEM_COG_OPEN_NAMESPACES), then retry")


class CorpusCodes:
    """A corpus's tokens as integer ids, kept so that adding documents codes only the new ones.

    Token ids are numbered in order of first appearance, so the codes of a corpus built document by document
    equal the codes of the whole corpus at once.

    Attributes:
        ids: The coded documents' ids, in corpus order.
        vocab: Token -> id.
    """

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.vocab: dict[str, int] = {}
        self._flat: list[np.ndarray] = []
        self._lengths: list[np.ndarray] = []

    @classmethod
    def of(cls, corpus: Sequence[Sequence[str]]) -> CorpusCodes:
        """The codes of ``corpus`` (its documents numbered as ids)."""
        codes = cls()
        codes.extend([str(i) for i in range(len(corpus))], corpus)
        return codes

    def extend(self, ids: Sequence[str], docs: Sequence[Sequence[str]]) -> None:
        """Code more documents, appended after the others."""
        if not docs:
            return
        vocab = self.vocab
        lengths = np.fromiter((len(doc) for doc in docs), dtype=np.int64, count=len(docs))
        self._flat.append(np.fromiter((vocab.setdefault(tok, len(vocab)) for doc in docs for tok in doc),
                                      dtype=np.int64, count=int(lengths.sum())))
        self._lengths.append(lengths)
        self.ids.extend(ids)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Every token id of the corpus in order, and each document's length."""
        if len(self._flat) > 1:  # keep one chunk: later calls concatenate only what was added since
            self._flat, self._lengths = [np.concatenate(self._flat)], [np.concatenate(self._lengths)]
        if not self._flat:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return self._flat[0], self._lengths[0]


def build_bm25(corpus: Sequence[Sequence[str]], *, k1: float, b: float) -> bm25s.BM25:
    """The index ``bm25s.BM25(k1=k1, b=b).index(corpus)`` builds (its default Lucene BM25), computed in bulk.

    bm25s counts each document's tokens and scores them one document at a time in Python (390 ms for 30,000
    turns on 2 cores, then more in garbage collection of the objects it made); here the counts come from one
    ``np.unique`` over every (document, token) pair and the scores from the same float operations on whole
    arrays, so :meth:`bm25s.BM25.get_scores` gives the same numbers bit for bit (tested against bm25s). Token
    ids are numbered in order of first appearance (bm25s numbers them in a set's order; no score depends on
    it), and the empty token is added to the vocabulary as ``index`` adds it.

    Args:
        corpus: Each document's tokens (none may be empty).
        k1: BM25 ``k1``.
        b: BM25 ``b``.

    Example:
        >>> bm = build_bm25([["red", "fox"], ["blue", "fox", "fox"]], k1=0.9, b=0.4)
        >>> [round(float(s), 4) for s in bm.get_scores(["fox"])], [round(float(s), 4) for s in bm.get_scores(["red"])]
        ([0.0997, 0.1227], [0.3792, 0.0])
    """
    return bm25_from_codes(CorpusCodes.of(corpus), k1=k1, b=b)


def bm25_from_codes(codes: CorpusCodes, *, k1: float, b: float) -> bm25s.BM25:
    """:func:`build_bm25` of a corpus already coded (every document non-empty)."""
    bm = bm25s.BM25(k1=k1, b=b)
    flat, lengths = codes.arrays()
    n_docs, n_vocab = len(lengths), len(codes.vocab)
    pairs, counts = np.unique(np.repeat(np.arange(n_docs, dtype=np.int64), lengths) * n_vocab + flat,
                              return_counts=True)  # sorted by document, then token
    doc, tok = pairs // n_vocab, pairs % n_vocab
    df = np.bincount(tok, minlength=n_vocab)
    idf = np.zeros(n_vocab, dtype=bm.dtype)  # bm25s: math.log per token, stored as float32
    for value in np.unique(df):
        idf[df == value] = math.log(1 + (n_docs - int(value) + 0.5) / (int(value) + 0.5))
    avg = np.array(lengths).mean()
    # bm25s per document: tf / (k1 * ((1 - b) + b * len / avg) + tf), the bracket a float64 scalar that meets the
    # float32 counts as NumPy promotes a scalar (float64 under NumPy 2, float32 under NumPy 1's value-based rule).
    step = (np.float64(1.0) + np.ones(1, dtype=bm.dtype)).dtype
    tf = counts.astype(bm.dtype)
    tfc = tf / ((k1 * ((1 - b) + b * lengths[doc] / avg)).astype(step) + tf)
    scores = (idf[tok] * tfc).astype(bm.dtype)
    order = np.argsort(tok, kind="stable")  # columns of tokens, documents ascending within each (CSC)
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(np.bincount(tok, minlength=n_vocab), out=indptr[1:])
    bm.scores = {"data": scores[order], "indices": doc[order].astype(np.int32), "indptr": indptr,
                 "num_docs": n_docs}
    vocab = dict(codes.vocab)
    vocab.setdefault("", n_vocab)
    bm.vocab_dict = vocab
    bm.unique_token_ids_set = set(vocab.values())
    bm.nonoccurrence_array = None
    return bm


class LexicalIndex:
    """BM25 over one namespace's turns.

    Args:
        path: The JSON-lines log to persist to, or ``None`` for an in-memory index.
        k1: BM25 ``k1`` (default 0.9, Anserini's default).
        b: BM25 ``b`` (default 0.4, Anserini's default; conversational turns are short, so
            length normalisation matters less than in web documents).
    """

    def __init__(self, path: Path | None = None, k1: float = 0.9, b: float = 0.4) -> None:
        self.path = path
        self.k1 = k1
        self.b = b
        self._docs: dict[str, list[str]] = {}
        self._lock = threading.RLock()
        self._bm25: bm25s.BM25 | None = None
        self._codes: CorpusCodes | None = None  # the documents' token ids, extended at each build
        self._ids: list[str] = []
        self._pos: dict[str, int] = {}
        if path is not None and path.exists():
            self._replay(path)

    # ----------------------------------------------------------------- persistence
    def _replay(self, path: Path) -> None:
        """Load the log. Lines that cannot be used (a torn last line, bytes that are not UTF-8, JSON
        that is not an operation of this log) are skipped with a warning and the log is rewritten
        without them; :class:`~langmem_cog.store.TurnStore` then re-indexes from Chroma (the source of
        truth) every turn the log lost and drops every entry Chroma does not hold."""
        damaged = False
        try:
            fh = path.open("rb")
        except OSError as exc:
            if out_of_files(exc):  # a limit of the process, not a damaged file: nothing is rewritten
                raise ResourceLimitError(files_limit_message(path, exc)) from exc
            logger.warning("cannot read the BM25 log %s (%s): rebuilding it from the raw store", path, exc)
            damaged = True
        else:
            with fh:
                try:
                    damaged = self._replay_lines(fh, path)
                except OSError as exc:
                    logger.warning("cannot read the BM25 log %s (%s): rebuilding it from the raw store", path, exc)
                    self._docs.clear()
                    damaged = True
        if damaged:
            # Rewrite the log: appending after a torn line would glue the next op onto it
            # (a corrupt line, so that op would be lost on the next load).
            try:
                self.compact()
            except OSError as exc:
                if out_of_files(exc):
                    raise ResourceLimitError(files_limit_message(path, exc)) from exc
                raise StoreError(
                    f"the BM25 log {path} is damaged and cannot be rewritten ({exc}): make its folder writable, "
                    "or delete the file (it is rebuilt from the raw store)"
                ) from exc

    def _replay_lines(self, fh: Any, path: Path) -> bool:
        """Apply the log's operations to ``self._docs``; returns whether any line was skipped."""
        damaged = False
        for lineno, raw in enumerate(fh, 1):
            if not raw.endswith(b"\n"):
                logger.warning("ignoring torn last line %d of %s", lineno, path)
                return True
            try:
                op = orjson.loads(raw)
            except ValueError as exc:  # orjson.JSONDecodeError (also for bytes that are not UTF-8, or nesting too deep)
                logger.warning("ignoring corrupt line %d of %s (%s): re-indexing from the raw store", lineno, path, exc)
                damaged = True
                continue
            if not self._apply_op(op):
                # Name the shape only: the tokens are the turns' words, which logs must not hold.
                shape = f"fields {sorted(op)[:6]}" if isinstance(op, dict) else f"a JSON {type(op).__name__}"
                logger.warning(
                    "ignoring line %d of %s, not an operation of a BM25 log (%s): re-indexing from the raw store",
                    lineno, path, shape,
                )
                damaged = True
        return damaged

    def _apply_op(self, op: Any) -> bool:
        """Apply one logged operation; ``False`` (nothing applied) if it is malformed."""
        if not isinstance(op, dict):
            return False
        kind = op.get("op")
        if kind == "add":
            doc_id, tokens = op.get("id"), op.get("tokens")
            if not isinstance(doc_id, str) or not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
                return False
            self._docs[doc_id] = list(tokens)
            return True
        if kind == "del":
            ids = op.get("ids")
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                return False
            for i in ids:
                self._docs.pop(i, None)
            return True
        return False

    def _append(self, ops: list[dict]) -> None:
        """Append operations to the log (fsynced); a failed append leaves the log as it was.

        Raises:
            StoreError: If the log cannot be written (read-only folder, full disk).
        """
        if self.path is None:
            return
        payload = "".join(json.dumps(op, ensure_ascii=False) + "\n" for op in ops).encode("utf-8")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _append_synced(self.path, payload)
        except OSError as exc:
            raise StoreError(
                f"cannot append to the BM25 log {self.path} ({exc}): make {self.path.parent} writable and free "
                "disk space (the log is rebuilt from the raw store when it lacks turns)"
            ) from exc

    def compact(self) -> None:
        """Rewrite the log with only the live documents (atomic rename)."""
        if self.path is None:
            return
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(self.path.suffix + f".{os.getpid()}.tmp")
            try:
                with tmp.open("w", encoding="utf-8") as fh:
                    for doc_id, tokens in self._docs.items():
                        fh.write(json.dumps({"op": "add", "id": doc_id, "tokens": tokens}, ensure_ascii=False) + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                tmp.unlink(missing_ok=True)  # it holds the documents' tokens too
                raise

    # ----------------------------------------------------------------- mutation
    def add(self, ids: Sequence[str], texts: Sequence[str], *, persist: bool = True) -> None:
        """Add documents. Ids must be new.

        Args:
            ids: The documents' ids.
            texts: Their texts, one per id.
            persist: Append them to the log (``False``: in memory only, for a reader that does
                not hold the data directory lock; the writer that holds it logs them).

        Raises:
            InvalidInputError: If ``ids`` and ``texts`` differ in length.
            DuplicateTurnError: If an id is already indexed.
            StoreError: If the log cannot be written (nothing is added then, in memory either).
        """
        if len(ids) != len(texts):
            raise InvalidInputError(f"{len(ids)} ids but {len(texts)} texts: pass one id per text")
        with self._lock:
            dup = [i for i in ids if i in self._docs]
            if dup:
                raise DuplicateTurnError(f"ids already in the lexical index: {dup[:5]}")
            docs = {doc_id: tokenize(text) for doc_id, text in zip(ids, texts, strict=True)}
            if persist:  # the log first: if it fails, the index in memory stays as the log is
                self._append([{"op": "add", "id": doc_id, "tokens": tokens} for doc_id, tokens in docs.items()])
            self._docs.update(docs)
            self._bm25 = None

    def delete(self, ids: Sequence[str], *, persist: bool = True) -> int:
        """Delete documents (unknown ids are ignored); compacts the log unless ``persist`` is
        false. Returns how many went."""
        with self._lock:
            removed = sum(self._docs.pop(i, None) is not None for i in ids)
            if removed:
                self._bm25 = None
                self._codes = None  # an id may come back with other words
                if persist:
                    self.compact()
            return removed

    def clear(self) -> None:
        """Drop every document and delete the log file."""
        with self._lock:
            self._docs.clear()
            self._bm25 = None
            self._codes = None
            if self.path is not None and self.path.exists():
                self.path.unlink()
            if self.path is not None and self.path.parent.exists():
                # A compaction interrupted by a crash leaves a temporary copy of the log.
                for tmp in self.path.parent.glob(self.path.name + ".*.tmp"):
                    tmp.unlink(missing_ok=True)

    # ----------------------------------------------------------------- queries
    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._docs

    @property
    def ids(self) -> list[str]:
        """The indexed ids, in insertion order."""
        return list(self._docs)

    def _ensure(self) -> bm25s.BM25 | None:
        with self._lock:
            if self._bm25 is None and self._docs:
                self._ids = list(self._docs)
                self._pos = {d: i for i, d in enumerate(self._ids)}
                # Only the documents added since the last build are coded (a delete starts over).
                codes = self._codes
                if codes is None or codes.ids != self._ids[: len(codes.ids)]:
                    codes = self._codes = CorpusCodes()
                new = self._ids[len(codes.ids):]
                codes.extend(new, [self._docs[i] or ["\x00empty"] for i in new])
                self._bm25 = bm25_from_codes(codes, k1=self.k1, b=self.b)
            return self._bm25

    def scores(self, query: str) -> tuple[list[str], np.ndarray]:
        """BM25 score of every document for ``query``: ``(ids, scores)`` aligned."""
        with self._lock:
            bm = self._ensure()
            if bm is None:
                return [], np.zeros(0, dtype=np.float32)
            tokens = tokenize(query)
            vocab = bm.vocab_dict
            known = [t for t in tokens if t in vocab]
            if not known:
                return list(self._ids), np.zeros(len(self._ids), dtype=np.float32)
            return list(self._ids), np.asarray(bm.get_scores(known), dtype=np.float32)

    def scores_for(self, query: str, ids: Sequence[str]) -> np.ndarray:
        """BM25 scores of the given ids (0 for ids not indexed).

        Vectorised: the rows of ``ids`` in the index are computed once per (id list, index
        build) and reused, so scoring a whole namespace query after query is one numpy gather.
        """
        with self._lock:
            _, sc = self.scores(query)
            if not len(sc):
                return np.zeros(len(ids), dtype=np.float32)
            rows = self._rows_of(ids)
            return np.where(rows >= 0, sc[np.maximum(rows, 0)], 0.0).astype(np.float32)

    def _rows_of(self, ids: Sequence[str]) -> np.ndarray:
        """Positions of ``ids`` in the current bm25s index (-1 if absent); memoised for long lists."""
        key = tuple(ids)
        memo = getattr(self, "_rows_memo", None)
        if memo is not None and memo[0] is self._bm25 and memo[1] == key:
            return memo[2]
        pos = self._pos
        rows = np.fromiter((pos.get(i, -1) for i in key), dtype=np.int64, count=len(key))
        if len(key) >= 1000:  # whole-namespace pools repeat query after query; candidate lists do not
            self._rows_memo = (self._bm25, key, rows)
        return rows

    def search(self, query: str, n: int) -> list[tuple[str, float]]:
        """The top ``n`` documents with a positive score, best first."""
        ids, sc = self.scores(query)
        if not ids:
            return []
        n = min(n, len(ids))
        top = np.argpartition(-sc, n - 1)[:n] if n < len(ids) else np.arange(len(ids))
        top = top[np.lexsort((top, -sc[top]))]
        return [(ids[i], float(sc[i])) for i in top if sc[i] > 0]
