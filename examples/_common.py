"""What the examples share: the offline environment, the memory, the chat model.

The sample data is ``langmem_cog.data.sample_path()``.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from langmem_cog import CogMemConfig
from langmem_cog.integrations.offline import CHAT_MODEL_ENV, OfflineEvidenceChatModel, load_chat_model
from langmem_cog.memory import CogMemory


def offline_env() -> None:
    """Never reach a model hub or send telemetry (set before any model loads)."""
    for key, value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("ANONYMIZED_TELEMETRY", "False"),
                       ("TOKENIZERS_PARALLELISM", "false"), ("HF_HUB_DISABLE_PROGRESS_BARS", "1")):
        os.environ.setdefault(key, value)
    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)


def make_memory(data_dir: str | Path | None = None, *, embeddings: Embeddings | None = None,
                embedder: str | None = None) -> CogMemory:
    """A persistent memory under ``data_dir``, or an in-memory one when it is ``None``."""
    offline_env()
    if data_dir is None:
        cfg = CogMemConfig.preset("ephemeral")
    else:
        cfg = CogMemConfig.preset("default", data_dir=Path(data_dir).expanduser())
    if embedder:
        cfg = cfg.model_copy(update={"embedder": embedder})
    return CogMemory(cfg, embeddings=embeddings)


def chat_model(spec: str | None, model: BaseChatModel | None = None) -> BaseChatModel:
    """The given model, else ``spec`` / ``$LMC_CHAT_MODEL``, else the offline stand-in; says which."""
    chosen = model or load_chat_model(spec)
    if isinstance(chosen, OfflineEvidenceChatModel):
        print(f"(model: offline STAND-IN that quotes the best-matching memory, not an LLM; set {CHAT_MODEL_ENV}="
              "provider:model, e.g. openai:gpt-4o-mini, for a real one)")
    else:
        print(f"(model: {type(chosen).__name__})")
    return chosen


def add_common_args(parser: Any) -> None:
    parser.add_argument("--model", default=None,
                        help=f"init_chat_model spec, e.g. openai:gpt-4o-mini (default: ${CHAT_MODEL_ENV} or the offline stand-in)")
    parser.add_argument("--embedder", default=None, help="minilm (default, packaged), mpnet or a model directory")


def fail(exc: Exception) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return 2
