"""LangGraph integrations: memory tools, an agent middleware, a ``BaseStore`` adapter, the
operator subgraph inside a parent agent graph.

Import this package by its full name, ``langmem_cog.integrations.langgraph``. The middleware needs the
``langchain`` package (``langmem-cog[agents]``) and is imported lazily.
"""

from __future__ import annotations

from typing import Any

from langmem_cog.integrations.langgraph.graph import build_memory_agent_graph
from langmem_cog.integrations.langgraph.store import CogMemStore
from langmem_cog.integrations.langgraph.tools import (
    MemoryContext,
    create_memory_tools,
    namespace_from_context,
    remember_text,
)

__all__ = [
    "CogMemStore",
    "CogMemoryMiddleware",
    "MemoryContext",
    "build_memory_agent_graph",
    "create_memory_tools",
    "namespace_from_context",
    "remember_text",
]


def __getattr__(name: str) -> Any:
    if name == "CogMemoryMiddleware":
        from langmem_cog.integrations.langgraph.middleware import CogMemoryMiddleware

        return CogMemoryMiddleware
    raise AttributeError(name)
