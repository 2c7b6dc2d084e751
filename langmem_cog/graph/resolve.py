"""Entity resolution: map surface names ("Mel", "the Little Fern") to graph node ids.

Names are compared in a normal form (:func:`normalize_name`): case-folded, accents,
possessives, punctuation and a leading "the" removed, spaces collapsed. Node ids of
persons and concepts are ``"<prefix>:<normal form>"`` (:func:`canonical_person_id`,
:func:`canonical_concept_id`), so the same name always gives the same id.

An :class:`EntityResolver` looks a surface name up among the existing Person or
Concept nodes of one namespace graph, always within one type (a concept never
resolves to a person). Rules, in order; the first that matches wins:

1. **exact**: the normal form equals a node's name or one of its aliases;
2. **first name** (persons only): a one-word name equal to the first word of exactly
   one known multi-word person ("Caroline" -> "Caroline Smith"); possessive phrases
   give no first name ("Leo" never resolves to "Leo's dad");
3. **fuzzy**: ``rapidfuzz.fuzz.token_sort_ratio >= fuzzy_threshold`` (90) against
   every known name of the type, but only when both names have at least
   ``min_fuzzy_len`` (6) characters and the same numbers (so "Mel" != "Mia",
   "Maria" != "Marian", "Windows 10" != "Windows 11");
4. **embedding** (only with an ``Embeddings`` object, and by default only for
   concepts): cosine of the name vectors ``>= embedding_threshold`` (0.85), with the
   same length rule. Vectors are cached by normal form.

Ties are broken by the node id, so resolution does not depend on insertion order.
Not done: a multi-word name never resolves to a known one-word person ("Caroline
Smith" stays apart from "Caroline"), because that would be ambiguous as soon as a
second "Caroline ..." appears.

Example:
    >>> normalize_name("The Little Fern's")
    'little fern'
    >>> canonical_person_id("Caroline")
    'person:caroline'
"""

from __future__ import annotations

import functools
import logging
import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
from rapidfuzz import fuzz, process

from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.schema import NodeType

__all__ = [
    "normalize_name",
    "canonical_person_id",
    "symbol_person_id",
    "canonical_concept_id",
    "node_id_for",
    "Match",
    "EntityResolver",
    "FUZZY_THRESHOLD",
    "NAME_SIMILARITY",
    "EMBEDDING_THRESHOLD",
    "MIN_FUZZY_LEN",
]

logger = logging.getLogger(__name__)

#: Minimum ``token_sort_ratio`` (0-100) for a fuzzy match.
FUZZY_THRESHOLD = 90.0

#: How alike two normalised names are (0-100, word order ignored): the one fuzzy scorer of the graph, for
#: entity resolution at ingest and for the names a question mentions (``graph.loop``), with
#: :data:`FUZZY_THRESHOLD` as the one threshold.
NAME_SIMILARITY = fuzz.token_sort_ratio
#: Minimum cosine of two name vectors for an embedding match.
EMBEDDING_THRESHOLD = 0.85
#: Names shorter than this (in normalised characters) match only exactly, by alias or first name.
MIN_FUZZY_LEN = 6

_POSSESSIVE = re.compile(r"(?<=\w)['\u2019\u02bc]s\b|(?<=s)['\u2019\u02bc](?=\s|$)")
_POSSESSIVE_PHRASE = re.compile(r"\w['\u2019\u02bc]s?\s+\w")
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_DIGITS = re.compile(r"\d+")
_LEADING_ARTICLES = ("the", "a", "an")
_PREFIX = {NodeType.PERSON: "person:", NodeType.CONCEPT: "concept:"}


def normalize_name(name: str) -> str:
    """The normal form of a surface name, used for ids and comparisons.

    Case-folds, strips accents, possessives ("Mel's", "James'"), punctuation and
    leading articles ("the", "a", "an"), and collapses whitespace. A name made only of
    an article keeps it.

    Args:
        name: The surface name.

    Returns:
        The normal form; ``""`` when nothing word-like is left.

    Example:
        >>> normalize_name("  Caroline's ")
        'caroline'
        >>> normalize_name("The  Lord-of-the-Rings!")
        'lord of the rings'
        >>> normalize_name("Zoë")
        'zoe'
        >>> normalize_name("a dog"), normalize_name("The")
        ('dog', 'the')
    """
    if not isinstance(name, str):
        raise InvalidInputError(f"a name must be a string, got {type(name).__name__}")
    return _normal_form(name)


@functools.lru_cache(maxsize=1 << 16)
def _normal_form(name: str) -> str:
    """:func:`normalize_name` of a string, memoised: ingest normalises the same few names per turn."""
    text = unicodedata.normalize("NFKD", name)
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = _POSSESSIVE.sub("", text.casefold())
    tokens = _NON_WORD.sub(" ", text).split()
    while len(tokens) > 1 and tokens[0] in _LEADING_ARTICLES:
        tokens = tokens[1:]
    return " ".join(tokens)


def _canonical(name: str, node_type: NodeType) -> str:
    norm = normalize_name(name)
    if not norm:
        raise InvalidInputError(f"name {name!r} has no letters or digits: it cannot name a {node_type.value}")
    return _PREFIX[node_type] + norm


def canonical_person_id(name: str) -> str:
    """The id a new Person node of this name gets: ``"person:<normal form>"``.

    Raises:
        InvalidInputError: If the name normalises to nothing.

    Example:
        >>> canonical_person_id("Mel's")
        'person:mel'
    """
    return _canonical(name, NodeType.PERSON)


def symbol_person_id(name: str) -> str:
    """The id of the Person node of a speaker whose name has no letters or digits (``"🙂"``,
    ``"!!!"``): ``"person:u"`` followed by its code points, so such speakers stay apart and a
    namespace holding one stays writable.

    Example:
        >>> symbol_person_id("🙂"), symbol_person_id("!!!")
        ('person:u1f642', 'person:u0021-0021-0021')
    """
    return "person:u" + "-".join(f"{ord(c):04x}" for c in name if not c.isspace())


def canonical_concept_id(name: str) -> str:
    """The id a new Concept node of this name gets: ``"concept:<normal form>"``.

    Example:
        >>> canonical_concept_id("The Little Fern")
        'concept:little fern'
    """
    return _canonical(name, NodeType.CONCEPT)


def node_id_for(name: str, node_type: NodeType | str) -> str:
    """The canonical id of a Person or Concept name.

    Example:
        >>> node_id_for("Running", "Concept")
        'concept:running'
    """
    node_type = NodeType(node_type)
    if node_type not in _PREFIX:
        raise InvalidInputError(f"only Person and Concept names resolve, not {node_type.value}")
    return _canonical(name, node_type)


@dataclass(frozen=True)
class Match:
    """The result of resolving a name.

    Attributes:
        node_id: The existing node the name refers to.
        method: ``exact``, ``first_name``, ``fuzzy`` or ``embedding``.
        score: 100 for exact and first-name matches, the ratio for fuzzy, the cosine for embedding.
    """

    node_id: str
    method: str
    score: float


def _numbers(norm: str) -> tuple[str, ...]:
    return tuple(_DIGITS.findall(norm))


class EntityResolver:
    """Resolves surface names to the Person and Concept nodes of one namespace graph.

    The resolver indexes the graph's names when built; :meth:`register` adds the
    names of nodes created or renamed afterwards. Build a new one after deleting
    nodes (a stale index may point at a removed node; :meth:`match` skips those).

    Args:
        graph: The namespace graph (nodes carry ``type``, ``name`` and ``aliases``).
        embeddings: Optional LangChain ``Embeddings`` for the embedding rule.
        fuzzy_threshold: Minimum ``token_sort_ratio`` for a fuzzy match.
        embedding_threshold: Minimum cosine for an embedding match.
        min_fuzzy_len: Names shorter than this never match fuzzily or by embedding.
        embedding_types: Node types the embedding rule applies to (concepts only by
            default: name vectors of different people are often close).
        vector_cache: A dict (normal form -> unit vector) to share between resolvers.

    Example:
        >>> import networkx as nx
        >>> G = nx.MultiDiGraph()
        >>> G.add_node("person:caroline smith", type="Person", name="Caroline Smith", aliases=set())
        >>> G.add_node("person:melanie", type="Person", name="Melanie", aliases={"Mel"})
        >>> r = EntityResolver(G)
        >>> r.resolve("caroline", "Person"), r.resolve("MEL", "Person"), r.resolve("Mia", "Person")
        ('person:caroline smith', 'person:melanie', None)
    """

    def __init__(
        self,
        graph: nx.MultiDiGraph,
        embeddings: Any | None = None,
        *,
        fuzzy_threshold: float = FUZZY_THRESHOLD,
        embedding_threshold: float = EMBEDDING_THRESHOLD,
        min_fuzzy_len: int = MIN_FUZZY_LEN,
        embedding_types: Iterable[NodeType | str] = (NodeType.CONCEPT,),
        vector_cache: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.graph = graph
        self.embeddings = embeddings
        self.fuzzy_threshold = float(fuzzy_threshold)
        self.embedding_threshold = float(embedding_threshold)
        self.min_fuzzy_len = int(min_fuzzy_len)
        self.embedding_types = frozenset(NodeType(t) for t in embedding_types)
        self._vectors: dict[str, np.ndarray] = vector_cache if vector_cache is not None else {}
        # type -> normal form -> node ids carrying that name or alias
        self._names: dict[NodeType, dict[str, set[str]]] = {t: {} for t in _PREFIX}
        # first word of multi-word person names -> node ids
        self._first: dict[str, set[str]] = {}
        # Names long enough to match fuzzily, in the order they were indexed (grown, never rebuilt):
        # all of them, and by length (a fuzzy match needs a close length; see _fuzzy).
        self._choices: dict[NodeType, list[str]] = {t: [] for t in _PREFIX}
        self._by_len: dict[NodeType, dict[int, list[str]]] = {t: {} for t in _PREFIX}
        # Unit vectors of the first rows of _choices (capacity doubles as names come).
        self._matrix: dict[NodeType, np.ndarray | None] = {t: None for t in _PREFIX}
        self._rows: dict[NodeType, int] = {t: 0 for t in _PREFIX}
        for node, data in graph.nodes(data=True):
            if data.get("type") in _PREFIX:
                self.register(node)

    # ------------------------------------------------------------------ index
    def register(self, node_id: str, *names: str) -> None:
        """Index a node's id, name and aliases (plus any extra ``names``) for later lookups.

        Args:
            node_id: A Person or Concept node of the graph.
            *names: Extra surface names to index for it (new aliases).
        """
        data = self.graph.nodes[node_id]
        node_type = NodeType(data["type"])
        if node_type not in _PREFIX:
            return
        surfaces = {f for f in (data.get("name"), *(data.get("aliases") or ()), *names) if f}
        suffix = node_id[len(_PREFIX[node_type]) :]
        table = self._names[node_type]
        for form in {suffix, *surfaces}:
            norm = normalize_name(form)
            if not norm:
                continue
            if norm not in table and len(norm) >= self.min_fuzzy_len:
                self._choices[node_type].append(norm)
                self._by_len[node_type].setdefault(len(norm), []).append(norm)
            table.setdefault(norm, set()).add(node_id)
        if node_type is NodeType.PERSON:
            # "Leo's dad" is not a Leo: possessive phrases give no first name.
            for form in surfaces or {suffix}:
                words = normalize_name(form).split()
                if len(words) > 1 and not _POSSESSIVE_PHRASE.search(form):
                    self._first.setdefault(words[0], set()).add(node_id)

    def _live(self, ids: Iterable[str], node_type: NodeType) -> list[str]:
        nodes = self.graph.nodes
        return sorted(i for i in ids if i in nodes and nodes[i].get("type") == node_type)

    # ------------------------------------------------------------------ lookup
    def resolve(self, name: str, node_type: NodeType | str) -> str | None:
        """The id of the existing node ``name`` refers to, or ``None``.

        Args:
            name: The surface name.
            node_type: ``Person`` or ``Concept``.

        Example:
            >>> import networkx as nx
            >>> G = nx.MultiDiGraph()
            >>> G.add_node("concept:little fern", type="Concept", name="Little Fern", aliases=set())
            >>> EntityResolver(G).resolve("the little fern", "Concept")
            'concept:little fern'
        """
        m = self.match(name, node_type)
        return m.node_id if m else None

    def match(self, name: str, node_type: NodeType | str) -> Match | None:
        """Like :meth:`resolve`, saying which rule matched and with what score."""
        node_type = NodeType(node_type)
        if node_type not in _PREFIX:
            raise InvalidInputError(f"only Person and Concept names resolve, not {node_type.value}")
        norm = normalize_name(name)
        if not norm:
            return None
        table = self._names[node_type]
        hit = self._pick(table.get(norm, ()), node_type, _PREFIX[node_type] + norm)
        if hit:
            return Match(hit, "exact", 100.0)
        if node_type is NodeType.PERSON and " " not in norm:
            owners = self._live(self._first.get(norm, ()), node_type)
            if len(owners) == 1:
                return Match(owners[0], "first_name", 100.0)
        if len(norm) < self.min_fuzzy_len:
            return None
        found = self._fuzzy(norm, node_type)
        if found:
            return found
        if self.embeddings is not None and node_type in self.embedding_types:
            return self._embedding(norm, node_type)
        return None

    def _pick(self, ids: Iterable[str], node_type: NodeType, preferred: str) -> str | None:
        live = self._live(ids, node_type)
        if not live:
            return None
        return preferred if preferred in live else live[0]

    def _candidates(self, norm: str, node_type: NodeType) -> list[str]:
        """The indexed names whose length allows ``token_sort_ratio(norm, name) >= fuzzy_threshold``.

        The ratio is ``100 * (1 - d / (len1 + len2))`` with ``d`` an Indel distance of at least
        ``|len1 - len2|`` (token sorting keeps the length of a normalised name), so names outside
        ``len1 * (1 - a) / (1 + a) <= len2 <= len1 * (1 + a) / (1 - a)``, ``a = 1 - threshold / 100``,
        can never reach the threshold and are not compared: the cost follows the names of similar
        length, not all names of the namespace.
        """
        a = max(0.0, 1.0 - self.fuzzy_threshold / 100.0)
        n = len(norm)
        lo = math.floor(n * (1 - a) / (1 + a)) if a < 1 else 0
        hi = math.ceil(n * (1 + a) / (1 - a)) if a < 1 else None
        buckets = self._by_len[node_type]
        if hi is None or hi - lo + 1 > len(buckets):
            return [c for length, names in buckets.items() if length >= lo and (hi is None or length <= hi) for c in names]
        return [c for length in range(lo, hi + 1) for c in buckets.get(length, ())]

    def _fuzzy(self, norm: str, node_type: NodeType) -> Match | None:
        choices = self._candidates(norm, node_type)
        if not choices:
            return None
        nums = _numbers(norm)
        best: tuple[float, str] | None = None
        for choice, score, _ in process.extract(
            norm, choices, scorer=NAME_SIMILARITY, score_cutoff=self.fuzzy_threshold, limit=None
        ):
            if _numbers(choice) != nums:
                continue
            node = self._pick(self._names[node_type][choice], node_type, _PREFIX[node_type] + choice)
            if node is None:
                continue
            if best is None or score > best[0] or (score == best[0] and node < best[1]):
                best = (float(score), node)
        if best is None:
            return None
        logger.debug("resolved %r to %s by fuzzy match (%.1f)", norm, best[1], best[0])
        return Match(best[1], "fuzzy", best[0])

    def _embed(self, texts: list[str]) -> None:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if not missing or self.embeddings is None:
            return
        vecs = np.asarray(self.embeddings.embed_documents(missing), dtype=np.float64)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        vecs = vecs / np.where(norms > 0, norms, 1.0)
        for text, vec in zip(missing, vecs, strict=True):
            self._vectors[text] = vec

    def _embedding(self, norm: str, node_type: NodeType) -> Match | None:
        choices = self._choices[node_type]
        if not choices:
            return None
        done, matrix = self._rows[node_type], self._matrix[node_type]
        if matrix is None or done < len(choices):  # names indexed since the last lookup: embed and append only those
            new = choices[done:]
            self._embed(new)
            rows = np.vstack([self._vectors[c] for c in new])
            if matrix is None or len(matrix) < len(choices):
                grown = np.empty((max(len(choices), 2 * (0 if matrix is None else len(matrix))), rows.shape[1]))
                if matrix is not None:
                    grown[:done] = matrix[:done]
                matrix = self._matrix[node_type] = grown
            matrix[done : len(choices)] = rows
            self._rows[node_type] = len(choices)
        self._embed([norm])
        sims = matrix[: len(choices)] @ self._vectors[norm]
        best: tuple[float, str] | None = None
        for i in np.flatnonzero(sims >= self.embedding_threshold):
            if _numbers(choices[i]) != _numbers(norm):
                continue
            node = self._pick(self._names[node_type][choices[i]], node_type, _PREFIX[node_type] + choices[i])
            score = float(sims[i])
            if node is not None and (best is None or score > best[0] or (score == best[0] and node < best[1])):
                best = (score, node)
        if best is None:
            return None
        logger.debug("resolved %r to %s by embedding (cos %.3f)", norm, best[1], best[0])
        return Match(best[1], "embedding", best[0])
