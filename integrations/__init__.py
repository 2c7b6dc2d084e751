"""Integrations of langmem-cog with LangGraph and LangChain.

* :mod:`integrations.langgraph`: agent memory tools (``search_memory``, ``remember``), a
  middleware for ``langchain.agents.create_agent``, a ``BaseStore`` adapter and the operator
  subgraph as a node of a parent agent graph.
* :mod:`integrations.langchain`: a retriever tool and an LCEL RAG chain.
* :mod:`integrations.evidence`: cited evidence (``[turn_id | speaker | date] text``) and filtered search.
* :mod:`integrations.offline`: a deterministic offline *stand-in* chat model for the examples and
  tests, and :func:`~integrations.offline.load_chat_model` (any LangChain chat model via
  ``LMC_CHAT_MODEL``).

The subpackages are named ``integrations.langgraph`` and ``integrations.langchain``; import them
by those full names (never put the ``integrations`` folder itself on ``sys.path``, or they would
shadow the real ``langgraph`` and ``langchain`` packages).

The LangGraph middleware and ``load_chat_model`` need the ``langchain`` package
(``pip install "langmem-cog[agents]"``); everything else needs only the core dependencies.
"""

__all__: list[str] = []
