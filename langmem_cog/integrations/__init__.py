"""Integrations of langmem-cog with LangGraph and LangChain.

* :mod:`langmem_cog.integrations.langgraph`: agent memory tools (``search_memory``, ``remember``),
  a middleware for ``langchain.agents.create_agent``, a ``BaseStore`` adapter and the operator
  subgraph as a node of a parent agent graph.
* :mod:`langmem_cog.integrations.langchain`: a retriever tool and an LCEL RAG chain.
* :mod:`langmem_cog.integrations.evidence`: cited evidence (``[turn_id | speaker | date] text``)
  and filtered search.
* :mod:`langmem_cog.integrations.offline`: a deterministic offline *stand-in* chat model for the
  examples and tests, and :func:`~langmem_cog.integrations.offline.load_chat_model` (any LangChain
  chat model via ``LMC_CHAT_MODEL``).

They live inside the ``langmem_cog`` package, so an application's own ``integrations`` package
neither shadows them nor is shadowed by them. ``import langmem_cog`` does not import them; import
each by its full name, e.g. ``from langmem_cog.integrations.langgraph import CogMemoryMiddleware``.

The LangGraph middleware and ``load_chat_model`` need the ``langchain`` package
(``pip install "langmem-cog[agents]"``); everything else needs only the core dependencies.
"""

__all__: list[str] = []
