"""``CogMemRetriever``: a LangChain retriever over a namespace's memory.

Built on a :class:`~langmem_cog.memory.CogMemory`, it runs the shipped cascade (raw + graph
candidates -> fusion -> ConvMemory v2 rerank); built on a bare :class:`~langmem_cog.store.TurnStore`,
or with ``mode="hybrid"``, it runs plain hybrid search (dense + BM25, z-score fusion). Every
integration of this package retrieves through it.

Example:
    >>> from langmem_cog import CogMemConfig, CogMemRetriever, TurnStore
    >>> store = TurnStore(CogMemConfig.preset("ephemeral"))  # doctest: +SKIP
    >>> retriever = CogMemRetriever(store=store, namespace="demo-1", k=3)  # doctest: +SKIP
    >>> docs = retriever.invoke("What is Leo allergic to?")  # doctest: +SKIP
    >>> docs[0].metadata["turn_id"], docs[0].metadata["stage"]  # doctest: +SKIP
    ('D1:18', 'raw')
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any, get_args

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, ensure_config
from langchain_core.runnables.utils import ConfigurableFieldSpec
from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from langmem_cog.checks import nonnegative_weight, positive_int
from langmem_cog.config import RetrievalMode
from langmem_cog.documents import scored_turn_to_document, turn_document
from langmem_cog.errors import InvalidInputError, LangMemCogError
from langmem_cog.filters import TurnFilter
from langmem_cog.records import validate_namespace
from langmem_cog.store import TurnStore
from langmem_cog.tokens import count_tokens

if TYPE_CHECKING:
    from langmem_cog.memory import CogMemory

__all__ = ["CogMemRetriever", "scored_turn_to_document", "turn_document", "trim_to_budget", "CONFIGURABLE_KEYS"]

logger = logging.getLogger(__name__)

#: The ``configurable`` keys a :class:`CogMemRetriever` reads from its run config
#: (``retriever.with_config(configurable={"k": 1})``); arguments of the call take precedence.
CONFIGURABLE_KEYS = ("k", "max_tokens")


def _check_k(value: Any) -> int:
    """``k``: a positive integer (``numpy`` integers too), as an ``int``.

    Raises:
        InvalidInputError: If it is anything else (``0``, ``-1``, ``"a"``, ``2.5``, ``True``).
    """
    return positive_int(value, "k")


def _check_budget(value: Any) -> int | None:
    """``max_tokens``: a positive integer or ``None``.

    Raises:
        InvalidInputError: If it is anything else.
    """
    return positive_int(value, "max_tokens", allow_none=True)


def trim_to_budget(docs: list[Document], max_tokens: int | None) -> list[Document]:
    """Keep the longest prefix of ``docs`` whose page contents fit in ``max_tokens`` (cl100k_base).

    Documents are never cut. The first document is always kept, so a budget never returns nothing
    when there is evidence, even when that document alone is longer than the budget: it is then
    marked ``over_budget=True``. Every kept document records its ``tokens`` and ``over_budget``
    (whether the documents up to and including it exceed ``max_tokens``; only ever true for the first).

    Args:
        docs: The ranked documents.
        max_tokens: The token budget of the page contents; ``None`` keeps every document, unmarked.

    Returns:
        The kept documents (the same objects, their metadata updated).

    Example:
        >>> docs = trim_to_budget([Document(page_content="one two three four"), Document(page_content="five")], 2)
        >>> [(d.metadata["tokens"], d.metadata["over_budget"]) for d in docs]
        [(4, True)]
    """
    if max_tokens is None:
        return docs
    out: list[Document] = []
    used = 0
    for doc in docs:
        n = count_tokens(doc.page_content)
        if out and used + n > max_tokens:
            break
        doc.metadata["tokens"] = n
        doc.metadata["over_budget"] = used + n > max_tokens
        if doc.metadata["over_budget"]:
            logger.debug("the first document (%d tokens) is over the budget of %d tokens; kept whole", n, max_tokens)
        out.append(doc)
        used += n
    return out


class CogMemRetriever(BaseRetriever):
    """Retrieve cited evidence turns from one namespace of memory.

    Two retrieval paths, chosen by ``mode``:

    * ``"cascade"`` (the default on a :class:`~langmem_cog.memory.CogMemory`): raw + graph candidates
      -> the shipped fusion scorer -> the ConvMemory v2 compressor with the shipped cross-encoder
      (:class:`~langmem_cog.rank.cascade.Cascade`, with the store's ``CogMemConfig.cascade`` sizes).
      ``use_graph``, ``fusion`` and ``compressor`` swap or turn off a stage (``compressor=None``: no rerank).
    * ``"hybrid"`` (the default on a bare ``store``), ``"dense"`` or ``"lexical"``: plain search of
      the raw store.

    The default of a memory-backed retriever is ``memory.config.retriever.mode`` (``"cascade"`` unless
    configured otherwise), so ``CogMemConfig(retriever=RetrieverSettings(mode="hybrid"))`` switches every
    integration built on that memory to plain hybrid search.

    Attributes:
        store: The raw-turn store (taken from ``memory`` when omitted).
        namespace: The namespace searched (one user's or agent's memory).
        k: How many documents to return (default: the store's ``CogMemConfig.retriever.k``, 10; overridable per
            call: ``invoke(q, k=3)``, or through the run config: ``with_config(configurable={"k": 3})``).
        max_tokens: Token budget (cl100k_base) of the returned page contents, or ``None`` (default: the
            store's ``CogMemConfig.retriever.max_tokens``; overridable
            per call and through ``configurable`` as ``k`` is). Documents are never cut: the longest
            prefix of the ranking that fits is returned, but always at least the first document, which
            may alone be longer than the budget. With a budget, every document's metadata has ``tokens``
            and ``over_budget`` (``True`` on a first document longer than the budget).
        mode: ``cascade``, ``hybrid``, ``dense`` or ``lexical``; ``None`` chooses as described above.
        lexical_weight: Weight of BM25 in plain hybrid search; ``None`` uses the store's config.
        missing_ok: Return ``[]`` for a namespace with no turns yet (default) instead of raising
            :class:`~langmem_cog.errors.UnknownNamespaceError`.
        memory: A :class:`~langmem_cog.memory.CogMemory` (needed by the graph stage).
        use_graph: Run the operator loop and use what it grounds (cascade; default: when there is a memory).
        fusion: A :class:`~langmem_cog.rank.scorer.FusionScorer` (cascade; default: the shipped one, or
            the one in ``config.models_dir``).
        compressor: The last step (cascade; default: the shipped ConvMemory v2 compressor, or the one of
            ``config.models_dir``, its ONNX graph kept under ``config.cache_dir``; ``None``: none).
        now: When questions are asked (relative dates in questions resolve against it); ``None``: now.

    Per call, ``invoke(query, k=..., max_tokens=..., now=..., where=TurnFilter(...))`` or the
    shortcuts ``speaker=``, ``start=``, ``end=``, ``exclude_ids=`` (see
    :class:`~langmem_cog.filters.TurnFilter`) narrow what may be returned; every turn is scored first.
    ``k`` and ``max_tokens`` can also come from the run config's ``configurable`` dict (the keys in
    :data:`CONFIGURABLE_KEYS`, listed by ``config_specs``), so ``with_config`` and a chain's config
    reach the retriever; a value passed to ``invoke`` wins over the config's.

    Every returned ``Document`` has ``metadata`` with ``turn_id``, ``speaker``, ``session_id``,
    ``timestamp`` (ISO 8601), ``score``, ``dense_score``, ``lexical_score``, ``rank`` and
    ``stage`` (``"raw"`` for raw-turn evidence, ``"graph"`` / ``"raw+graph"`` for turns the operator
    loop grounded); after a compressor also ``relevance_score`` and ``reranked``.

    Raises:
        InvalidInputError: At construction, for a malformed namespace, ``k`` or ``max_tokens`` that is
            not a positive integer, or a ``lexical_weight`` that is not a finite number >= 0; per call,
            for a bad ``k`` / ``max_tokens`` / filter argument.

    Example:
        >>> retriever = CogMemRetriever(memory=memory, namespace="demo-1")  # doctest: +SKIP
        >>> [d.metadata["stage"] for d in retriever.invoke("What is Leo allergic to?", k=3)]  # doctest: +SKIP
        ['raw+graph', 'raw', 'raw']
        >>> CogMemRetriever(memory=memory, namespace="demo-1", mode="hybrid").invoke("Leo allergy")  # doctest: +SKIP
        >>> one = retriever.with_config(configurable={"k": 1})  # doctest: +SKIP
        >>> len(one.invoke("What is Leo allergic to?"))  # doctest: +SKIP
        1
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: TurnStore | None = None
    namespace: str
    k: int = Field(default=10, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    mode: RetrievalMode | None = None
    lexical_weight: float | None = Field(default=None, ge=0.0)
    missing_ok: bool = True
    memory: Any = None
    use_graph: bool | None = None
    fusion: Any = None
    compressor: BaseDocumentCompressor | None = None
    now: datetime | str | None = None
    _cascade: Any = PrivateAttr(default=None)

    # Hidden from type checkers, which then read the keyword arguments and their types from the fields
    # (pydantic's dataclass_transform); at run time the arguments are checked before pydantic validates them.
    if not TYPE_CHECKING:

        def __init__(self, **data: Any) -> None:
            # Checked before pydantic runs, so callers get our named errors rather than a ValidationError.
            if "namespace" in data:
                validate_namespace(data["namespace"])
            if "k" in data:
                data["k"] = _check_k(data["k"])
            if "max_tokens" in data:
                data["max_tokens"] = _check_budget(data["max_tokens"])
            if data.get("lexical_weight") is not None:
                data["lexical_weight"] = nonnegative_weight(data["lexical_weight"], "lexical_weight")
            if data.get("store") is None and data.get("memory") is None:
                raise InvalidInputError("CogMemRetriever needs store=TurnStore(...) or memory=CogMemory(...)")
            if "namespace" not in data:
                raise InvalidInputError("CogMemRetriever needs namespace=...: the user or conversation to search")
            if "mode" in data and data["mode"] not in (None, *get_args(RetrievalMode)):
                raise InvalidInputError(f"mode={data['mode']!r} is invalid: use one of {', '.join(get_args(RetrievalMode))}")
            if data.get("use_graph") and data.get("memory") is None:
                raise InvalidInputError("use_graph=True needs memory=CogMemory(...): the graph lives in the memory")
            staged = [f for f in ("use_graph", "fusion", "compressor") if data.get(f) not in (None, False)]
            if data.get("mode") not in (None, "cascade") and staged:
                raise InvalidInputError(f"{', '.join(staged)} apply to mode='cascade', not mode={data['mode']!r}: "
                                        "drop them or use mode='cascade'")
            try:
                super().__init__(**data)
            except ValidationError as exc:  # any other field of the wrong type: still one of our errors
                for err in exc.errors():  # a damaged models folder or a bad config found while building: as it is
                    cause = (err.get("ctx") or {}).get("error")
                    if isinstance(cause, LangMemCogError) and not isinstance(cause, InvalidInputError):
                        raise cause from None
                raise InvalidInputError(f"invalid CogMemRetriever arguments: {exc}") from exc

    @field_validator("namespace")
    @classmethod
    def _check_namespace(cls, v: str) -> str:
        return validate_namespace(v)

    @model_validator(mode="after")
    def _check_stages(self) -> CogMemRetriever:
        if self.store is None:
            self.store = self.memory.store
        # Defaults not passed come from the store's config (CogMemConfig.retriever: k, max_tokens).
        if "k" not in self.model_fields_set:
            self.k = self.store.config.retriever.k
        if "max_tokens" not in self.model_fields_set:
            self.max_tokens = self.store.config.retriever.max_tokens
        if self.mode is None:
            if any(getattr(self, f) not in (None, False) for f in ("use_graph", "fusion", "compressor")):
                self.mode = "cascade"
            else:
                self.mode = self.memory.config.retriever.mode if self.memory is not None else "hybrid"
        if self.mode == "cascade":
            if self.use_graph is None:
                self.use_graph = self.memory is not None
            cfg = self.store.config
            if "fusion" not in self.model_fields_set:
                from langmem_cog.rank.defaults import default_scorer

                self.fusion = default_scorer(cfg.models_dir)
            if "compressor" not in self.model_fields_set:
                from langmem_cog.rank.defaults import default_compressor

                self.compressor = default_compressor(threads=cfg.rerank_threads, models_dir=cfg.models_dir,
                                                     backend=cfg.inference_backend, precision=cfg.rerank_precision,
                                                     cache_dir=cfg.resolved_cache_dir())
            if self.use_graph and self.memory is not None:
                _ = self.memory.retrieval  # built (imported, compiled) now, not inside the first query
        return self

    @classmethod
    def full(cls, memory: CogMemory, namespace: str, **kwargs: Any) -> CogMemRetriever:
        """The shipped cascade whatever ``memory.config.retriever.mode`` says (``mode="cascade"``).

        The cross-encoder scores on ``memory.config.rerank_threads`` torch threads.

        Raises:
            ModelNotFoundError: If the shipped reranker checkpoint is missing.
        """
        return cls(memory=memory, namespace=namespace, mode="cascade", **kwargs)

    @property
    def config_specs(self) -> list[ConfigurableFieldSpec]:
        """The ``configurable`` keys this retriever reads (:data:`CONFIGURABLE_KEYS`).

        Their defaults are ``None``: the retriever's own ``k`` / ``max_tokens`` (so two retrievers of
        one chain declare the same specs).
        """
        return [
            ConfigurableFieldSpec(id="k", annotation=int | None, name="k", default=None,
                                  description="How many documents CogMemRetriever returns (None: its own k)."),
            ConfigurableFieldSpec(id="max_tokens", annotation=int | None, name="max_tokens", default=None,
                                  description="Token budget of CogMemRetriever's documents (None: its own max_tokens)."),
        ]

    @staticmethod
    def _configured(config: RunnableConfig | None, kwargs: dict[str, Any]) -> RunnableConfig:
        """The run config, with its ``configurable`` ``k`` / ``max_tokens`` moved into ``kwargs``
        where the call did not pass them."""
        config = ensure_config(config)
        configurable = config.get("configurable") or {}
        for key in CONFIGURABLE_KEYS:
            if key not in kwargs and configurable.get(key) is not None:
                kwargs[key] = configurable[key]
        return config

    def invoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        """Retrieve documents for ``input`` (see the class docstring for the keyword arguments).

        ``k`` and ``max_tokens`` are also read from ``config["configurable"]``.
        """
        config = self._configured(config, kwargs)
        return super().invoke(input, config, **kwargs)

    async def ainvoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        """Async :meth:`invoke`."""
        config = self._configured(config, kwargs)
        return await super().ainvoke(input, config, **kwargs)

    @property
    def cascade_on(self) -> bool:
        """Whether this retriever runs the cascade (``mode == "cascade"``)."""
        return self.mode == "cascade"

    def _search(self, query: str, k: int | None, max_tokens: int | None, *, now: datetime | str | None = None,
                where: TurnFilter | None = None) -> list[Document]:
        k_eff = _check_k(self.k if k is None else k)
        budget = _check_budget(self.max_tokens if max_tokens is None else max_tokens)
        store = self.store
        assert store is not None  # set by the validator
        if self.missing_ok and not store.has_namespace(self.namespace):
            return []
        with store.reading(self.namespace):  # one freshness check for the query's reads (a Chroma server: one request)
            if self.cascade_on:
                from langmem_cog.rank.cascade import Cascade

                if self._cascade is None:  # built once: the operator loop's compiled graph is reused
                    self._cascade = Cascade(store=store, memory=self.memory, scorer=self.fusion,
                                            compressor=self.compressor, use_graph=bool(self.use_graph),
                                            settings=store.config.cascade)
                when = self.now if now is None else now
                docs = self._cascade.rank(self.namespace, query, k=k_eff, now=when, where=where).documents
            else:
                docs = self._plain(query, k_eff, where)
        return trim_to_budget(docs, budget)

    def _plain(self, query: str, k: int, where: TurnFilter | None) -> list[Document]:
        store = self.store
        assert store is not None
        filtered = where is not None and where.active
        fetch = max(store.count(self.namespace), 1) if filtered else k
        hits = store.search(self.namespace, query, k=fetch, mode=self.mode,  # type: ignore[arg-type]
                            lexical_weight=self.lexical_weight)
        docs: list[Document] = []
        for hit in hits:
            if filtered and not where.allows(hit.turn):  # type: ignore[union-attr]
                continue
            doc = scored_turn_to_document(hit)
            doc.metadata["rank"] = len(docs) + 1
            docs.append(doc)
            if len(docs) == k:
                break
        return docs

    @staticmethod
    def _filter(where: TurnFilter | None, kwargs: dict[str, Any]) -> TurnFilter | None:
        shortcuts = {key: kwargs.pop(key) for key in ("speaker", "start", "end", "exclude_ids") if key in kwargs}
        if kwargs:
            raise InvalidInputError(f"unknown search arguments {sorted(kwargs)}: use k, max_tokens, now, where, "
                                    "speaker, start, end or exclude_ids")
        if shortcuts:
            if where is not None:
                raise InvalidInputError("pass either where=TurnFilter(...) or speaker/start/end/exclude_ids, not both")
            return TurnFilter.build(**{k: v for k, v in shortcuts.items() if v is not None})
        return where

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        max_tokens: int | None = None,
        now: datetime | str | None = None,
        where: TurnFilter | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        return self._search(query, k, max_tokens, now=now, where=self._filter(where, kwargs))

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        max_tokens: int | None = None,
        now: datetime | str | None = None,
        where: TurnFilter | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        return await asyncio.to_thread(self._search, query, k, max_tokens, now=now, where=self._filter(where, kwargs))
