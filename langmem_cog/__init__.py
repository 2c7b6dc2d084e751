"""langmem-cog: long-term memory for LangChain and LangGraph agents.

Raw turns are stored in Chroma with a BM25 index beside them; ``CogMemory`` adds the
PEC2F graph. ``CogMemRetriever`` retrieves by hybrid search, or (``CogMemRetriever.full``)
through the whole cascade: raw + graph candidates, learned fusion, protected cross-encoder rerank.

Example:
    >>> from langmem_cog import CogMemConfig, CogMemRetriever, TurnStore, load_locomo
    >>> from langmem_cog.data import sample_path
    >>> store = TurnStore(CogMemConfig.preset("ephemeral"))  # doctest: +SKIP
    >>> conv = load_locomo(sample_path())[0]  # doctest: +SKIP
    >>> store.add_turns(conv.turns)  # doctest: +SKIP
    >>> CogMemRetriever(store=store, namespace=conv.sample_id, k=3).invoke("Who is Pickle?")  # doctest: +SKIP
"""

from langmem_cog.config import CogMemConfig
from langmem_cog.errors import LangMemCogError
from langmem_cog.loaders import load_locomo, load_longmemeval, turns_from_messages
from langmem_cog.memory import CogMemory
from langmem_cog.records import Turn, make_turn
from langmem_cog.retriever import CogMemRetriever
from langmem_cog.store import TurnStore

__version__ = "0.1.0"

__all__ = [
    "CogMemConfig",
    "CogMemRetriever",
    "CogMemory",
    "LangMemCogError",
    "Turn",
    "TurnStore",
    "load_locomo",
    "load_longmemeval",
    "make_turn",
    "turns_from_messages",
]
