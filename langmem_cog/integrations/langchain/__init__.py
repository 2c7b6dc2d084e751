"""LangChain integrations: a cited retriever tool and an LCEL RAG chain.

Import this package by its full name, ``langmem_cog.integrations.langchain``.
"""

from langmem_cog.integrations.langchain.rag import RAG_PROMPT, create_rag_chain
from langmem_cog.integrations.langchain.retriever_tool import CitedDocumentPrompt, create_memory_retriever_tool

__all__ = ["CitedDocumentPrompt", "RAG_PROMPT", "create_memory_retriever_tool", "create_rag_chain"]
