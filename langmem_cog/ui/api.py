"""The memory inspector's JSON API over a :class:`~langmem_cog.memory.CogMemory`.

:class:`InspectorAPI` answers the four read-only endpoints the page uses; the HTTP
server (:mod:`langmem_cog.ui.server`) only routes requests to :meth:`InspectorAPI.handle`.

* ``/api/namespaces``: namespaces with their turn counts and example questions;
* ``/api/search?ns=&q=&now=&k=``: what the default :class:`~langmem_cog.CogMemRetriever` returns
  (the shipped cascade unless configured otherwise), the operator loop's route, trace and grounded
  evidence, and plain hybrid (dense + BM25) hits beside them;
* ``/api/graph?ns=&limit=``: the PEC2F graph by node type (:func:`~langmem_cog.ui.views.graph_view`);
* ``/api/timeline?ns=&person=``: one person's events along their ``NEXT`` edges.

Every parameter is validated; bad input raises :class:`~langmem_cog.errors.InvalidInputError`
(HTTP 400), an unknown namespace or person :class:`~langmem_cog.errors.UnknownNamespaceError`
(HTTP 404). Requests are served one at a time (a lock), so the memory is never read mid-write.

The endpoints write nothing to disk: they read the memory through
:class:`~langmem_cog.ui.readonly.ReadOnlyMemory`, which shows a graph that is missing or out of step
with the raw turns as rebuilt in memory (``rebuilt``, ``note``) instead of repairing and saving it as
``CogMemory.graph`` does. Only :meth:`InspectorAPI.add_conversation` (loading, at start) writes.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langmem_cog import CogMemConfig
    >>> from langmem_cog.memory import CogMemory
    >>> api = InspectorAPI(CogMemory(CogMemConfig.preset("ephemeral"),
    ...                              embeddings=DeterministicFakeEmbedding(size=32)))
    >>> status, body = api.handle("/api/search", {"ns": "no such ns!", "q": "hi"})
    >>> status, "namespace" in body["error"]
    (400, True)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from langmem_cog.errors import InvalidInputError, LangMemCogError
from langmem_cog.graph.loop import GraphRetrieval
from langmem_cog.loaders import LoCoMoConversation
from langmem_cog.memory import CogMemory
from langmem_cog.records import validate_namespace
from langmem_cog.retriever import CogMemRetriever
from langmem_cog.ui.readonly import ReadOnlyMemory
from langmem_cog.ui.views import graph_view, jsonable, timeline_view

__all__ = ["InspectorAPI", "MAX_QUERY_CHARS", "MAX_K", "sample_conversation", "locomo_conversations"]

logger = logging.getLogger(__name__)

#: Longest accepted question.
MAX_QUERY_CHARS = 2000
#: Largest accepted ``k`` (evidence and raw hits shown).
MAX_K = 100
_MAX_LIMIT = 5000


def _required(params: Mapping[str, Any], name: str) -> str:
    value = _param(params, name, required=True)
    assert value is not None  # _param raised otherwise
    return value


def _param(params: Mapping[str, Any], name: str, required: bool = False) -> str | None:
    value = params.get(name)
    if isinstance(value, list | tuple):  # parse_qs gives lists
        if len(value) > 1:
            raise InvalidInputError(f"parameter {name!r} was given {len(value)} times: give it once")
        value = value[0] if value else None
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise InvalidInputError(f"parameter {name!r} is required")
        return None
    return str(value)


def _int_param(params: Mapping[str, Any], name: str, default: int, high: int) -> int:
    raw = _param(params, name, required=False)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInputError(f"parameter {name}={raw!r} is not an integer: pass 1..{high}") from None
    if not 1 <= value <= high:
        raise InvalidInputError(f"parameter {name}={value} is out of range: pass 1..{high}")
    return value


class InspectorAPI:
    """Read-only JSON views of a memory for the inspector page.

    Args:
        memory: The memory to inspect.
        max_steps: Operator step budget of the loop (as ``langmem-cog search --trace``).

    Attributes:
        view: The read-only view of ``memory`` the endpoints read (they never write to disk).
        examples: Namespace -> example questions with their expected evidence turn ids
            (filled by :meth:`add_conversation`; shown as suggestions and gold marks).
    """

    def __init__(self, memory: CogMemory, *, max_steps: int = 5) -> None:
        self.memory = memory
        self.view = ReadOnlyMemory(memory)
        self.retrieval = GraphRetrieval(self.view, max_steps=max_steps)  # type: ignore[arg-type] # duck-typed
        self.examples: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ loading
    def add_conversation(self, conv: LoCoMoConversation, *, reuse: bool = True) -> int:
        """Ingest a LoCoMo-style conversation into its namespace and remember its questions.

        With ``reuse``, a namespace that already holds exactly these turn ids is kept (its
        graph synced and consolidated); otherwise the namespace is forgotten and re-ingested.

        Returns:
            The number of turns written (0 when the stored namespace was reused).
        """
        ns = validate_namespace(conv.turns[0].namespace if conv.turns else conv.sample_id)
        store = self.memory.store
        written = 0
        with self._lock:
            ids = {t.id for t in conv.turns}
            stored = {t.id for t in store.get_turns(ns)} if store.has_namespace(ns) else set()
            if reuse and stored == ids and ids:
                self.memory.sync_graph(ns)
            else:
                if stored:
                    logger.info("namespace %r holds other turns: re-ingesting it", ns)
                    self.memory.forget(ns)
                self.memory.add_turns(conv.turns)
                written = len(conv.turns)
            self.memory.consolidate(ns)
            self.examples[ns] = [
                {"question": str(qa["question"]), "evidence": [str(e) for e in qa.get("evidence") or []],
                 "answer": jsonable(qa.get("answer", qa.get("adversarial_answer")))}
                for qa in conv.qa if isinstance(qa, Mapping) and qa.get("question")
            ]
        return written

    # ------------------------------------------------------------------ endpoints
    def handle(self, path: str, params: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """Answer one API request: ``(HTTP status, JSON body)``; errors become ``{"error": msg}``."""
        routes = {
            "/api/namespaces": self.namespaces,
            "/api/search": self.search,
            "/api/graph": self.graph,
            "/api/timeline": self.timeline,
        }
        fn = routes.get(path)
        if fn is None:
            return 404, {"error": f"no endpoint {path!r}: use one of {sorted(routes)}"}
        try:
            with self._lock:
                self.view.refresh()  # the graph files may have changed since the last request
                return 200, fn(params)
        except InvalidInputError as exc:  # unknown namespace or person (LookupError): 404; bad value: 400
            return (404 if isinstance(exc, LookupError) else 400), {"error": str(exc)}
        except LangMemCogError as exc:
            logger.exception("inspector request %s failed", path)
            return 500, {"error": str(exc)}

    def _namespace(self, params: Mapping[str, Any]) -> str:
        ns = validate_namespace(_required(params, "ns"))
        self.memory.store.require_namespace(ns)
        return ns

    def namespaces(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Every namespace of the store with its turn count and example questions."""
        store = self.memory.store
        out = []
        for ns in store.namespaces():
            out.append({"namespace": ns, "turns": store.count(ns),
                        "examples": [e["question"] for e in self.examples.get(ns, [])]})
        return {"namespaces": out}

    def search(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Run the default retriever, the operator loop and plain hybrid search on one question.

        Returns:
            ``query``, ``namespace``, ``now``, ``intent``, ``time_window``, ``entities``,
            ``trace`` (one row per operator step), ``reason``, ``steps``, ``evidence`` (grounded
            turns, best first, with ``rank``), ``n_evidence`` (before the cut to ``k``), ``raw``
            (hybrid hits with their fused, dense and BM25 scores), ``retrieval`` (the default
            retriever's mode, ``memory.config.retriever.mode``), ``results`` (its documents, with ``stage``,
            ``score`` and the claim status of a turn that holds a claim) and ``gold`` (the expected
            evidence when the question is a loaded conversation's question, else ``None``).
        """
        ns = self._namespace(params)
        query = _required(params, "q")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidInputError(f"the question has {len(query)} characters: keep it to at most {MAX_QUERY_CHARS}")
        now = _param(params, "now")
        k = _int_param(params, "k", 10, MAX_K)
        state = self.retrieval.run(ns, query, now=now)  # validates ``now`` (InvalidInputError)
        evidence = [{**e, "rank": r} for r, e in enumerate(state.get("evidence") or [], 1)]
        ranked = CogMemRetriever(memory=self.view, namespace=ns, k=k, missing_ok=False)
        results = ranked.invoke(query, now=now)
        docs = CogMemRetriever(store=self.memory.store, namespace=ns, k=k, missing_ok=False).invoke(query)
        turns = {t.id: t for t in self.memory.store.get_turns(ns, [d.metadata["turn_id"] for d in results + docs])}
        raw = [{"turn_id": d.metadata["turn_id"], "speaker": d.metadata["speaker"],
                "timestamp": d.metadata["timestamp"], "text": turns[d.metadata["turn_id"]].text,
                "score": d.metadata["score"], "dense_score": d.metadata.get("dense_score"),
                "lexical_score": d.metadata.get("lexical_score"), "rank": d.metadata.get("rank")}
               for d in docs]
        retrieved = [{"turn_id": d.metadata["turn_id"], "speaker": d.metadata["speaker"],
                      "timestamp": d.metadata["timestamp"], "text": turns[d.metadata["turn_id"]].text,
                      "stage": d.metadata.get("stage"), "score": d.metadata.get("relevance_score", d.metadata["score"]),
                      "claim_status": d.metadata.get("claim_status"), "fact_status": d.metadata.get("fact_status"),
                      "placed_by": d.metadata.get("placed_by"), "rank": d.metadata.get("rank")}
                     for d in results]
        gold = next((e["evidence"] for e in self.examples.get(ns, []) if e["question"].strip() == query.strip()), None)
        return jsonable({
            "query": query,
            "namespace": ns,
            "now": now,
            "intent": state.get("intent"),
            "time_window": state.get("time_window"),
            "entities": state.get("entities") or [],
            "trace": state.get("trace") or [],
            "reason": state.get("reason", ""),
            "steps": state.get("steps", 0),
            "evidence": evidence[:k],
            "n_evidence": len(evidence),
            "raw": raw,
            "retrieval": ranked.mode,
            "results": retrieved,
            "gold": gold,
        })

    def graph(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The namespace's graph by node type (see :func:`~langmem_cog.ui.views.graph_view`), with
        ``rebuilt`` and ``note`` (see :meth:`ReadOnlyMemory.graph_state`)."""
        ns = self._namespace(params)
        limit = _int_param(params, "limit", 500, _MAX_LIMIT)
        g = self.view.graph_state(ns)
        return {"namespace": ns, "rebuilt": g.rebuilt, "note": g.note, **graph_view(g.graph, limit=limit)}

    def timeline(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """One person's timeline with the raw turns behind each event (and ``rebuilt``, ``note``)."""
        ns = self._namespace(params)
        person = _required(params, "person")
        g = self.view.graph_state(ns)
        turns = {t.id: {"turn_id": t.id, "speaker": t.speaker, "timestamp": t.timestamp, "text": t.text}
                 for t in self.memory.store.get_turns(ns)}
        return {"namespace": ns, "rebuilt": g.rebuilt, "note": g.note, **timeline_view(g.graph, person, turns)}


# ---------------------------------------------------------------------------- data to show
def sample_conversation(namespace_prefix: str = "") -> LoCoMoConversation:
    """The bundled sample conversation (namespace ``demo-1`` after ``namespace_prefix``; Maya and
    Leo, with questions)."""
    from importlib import resources

    from langmem_cog.loaders import load_locomo

    sample = resources.files("langmem_cog") / "data" / "sample_conversation.json"
    with resources.as_file(sample) as path:
        return load_locomo(path, namespace_prefix=namespace_prefix)[0]


def locomo_conversations(path: str, ids: Sequence[str] | None = None,
                         namespace_prefix: str = "") -> list[LoCoMoConversation]:
    """The conversations ``ids`` (all when ``None`` or empty) of a LoCoMo JSON file; each goes to
    the namespace ``namespace_prefix + sample_id``.

    Raises:
        InvalidInputError: If an id is not in the file (the message lists the ids it holds).
    """
    from langmem_cog.loaders import load_locomo

    convs = load_locomo(path, namespace_prefix=namespace_prefix)
    if not ids:
        return convs
    by_id = {c.sample_id: c for c in convs}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise InvalidInputError(f"{path} has no conversation {missing}: pick from {sorted(by_id)}")
    return [by_id[i] for i in ids]
