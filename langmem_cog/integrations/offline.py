"""A deterministic offline *stand-in* chat model, and :func:`load_chat_model`.

:class:`OfflineEvidenceChatModel` is **not a language model**. It lets the examples and tests run
offline, with no API key, while exercising the real agent machinery (tool calls, middleware,
LangGraph graphs). Its rules:

* a question (``?`` or a wh-word first) with a ``search_memory``-like tool bound: call that tool
  with the question as the query;
* a message starting with "remember" with a ``remember`` tool bound: call it with the rest;
* otherwise answer: for a question, quote the cited evidence line (from the system prompt or
  the tool results since the last user message) sharing the most content words with the
  question, preferring what people said over what the assistant said; for a statement, "Noted."

Use a real model by setting ``LMC_CHAT_MODEL`` (e.g. ``openai:gpt-4o-mini``; any
``init_chat_model`` spec) and the provider's key; :func:`load_chat_model` reads it.

Example:
    >>> from langchain_core.messages import HumanMessage, SystemMessage
    >>> model = OfflineEvidenceChatModel()
    >>> msgs = [SystemMessage("Evidence:\\n[t7 | user | 2024-01-02] My dog is called Rex."),
    ...         HumanMessage("What is my dog called?")]
    >>> model.invoke(msgs).content
    'From memory: My dog is called Rex. [t7 | user | 2024-01-02]'
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from langmem_cog.integrations.evidence import parse_evidence_line

__all__ = ["OfflineEvidenceChatModel", "load_chat_model", "CHAT_MODEL_ENV", "NO_MEMORY_ANSWER"]

#: Environment variable naming a real chat model for :func:`load_chat_model` (``provider:model``).
CHAT_MODEL_ENV = "LMC_CHAT_MODEL"
#: What the stand-in says when no evidence shares a content word with the question.
NO_MEMORY_ANSWER = "I don't have anything in memory about that."

_WORD = re.compile(r"[a-z0-9]+")
_WH = {"what", "who", "whom", "whose", "when", "where", "which", "why", "how", "do", "does", "did", "is",
       "are", "was", "were", "can", "could", "have", "has"}
_STOP = {
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "about", "from", "by",
    "is", "are", "was", "were", "be", "been", "am", "do", "does", "did", "have", "has", "had", "i", "me", "my",
    "you", "your", "we", "our", "it", "its", "he", "she", "his", "her", "they", "them", "their", "this", "that",
    "what", "who", "whom", "whose", "when", "where", "which", "why", "how", "can", "could", "would", "should",
    "will", "there", "so", "not", "no", "yes", "any", "some", "tell", "know", "remember", "called", "name",
}
_SEARCH_HINTS = ("search", "memory", "recall", "retriev")


def _words(text: str) -> set[str]:
    out = set()
    for w in _WORD.findall(text.lower()):
        if w in _STOP or (len(w) < 3 and not w.isdigit()):
            continue
        out.add(w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w)
    return out


def _is_question(text: str) -> bool:
    words = _WORD.findall(text.lower())
    return text.rstrip().endswith("?") or bool(words and words[0] in _WH and len(words) > 2)


def _tool_names(tools: Sequence[Mapping[str, Any]] | None) -> list[str]:
    names = []
    for t in tools or ():
        fn = t.get("function", t) if isinstance(t, Mapping) else {}
        if isinstance(fn, Mapping) and fn.get("name"):
            names.append(str(fn["name"]))
    return names


def _call_id(messages: Sequence[BaseMessage], name: str, text: str) -> str:
    digest = hashlib.sha1(f"{len(messages)}:{name}:{text}".encode()).hexdigest()[:12]
    return f"call_{digest}"


class OfflineEvidenceChatModel(BaseChatModel):
    """Stand-in chat model: answers by quoting cited evidence; calls memory tools by simple rules.

    Deterministic, offline, no weights. Meant for examples and tests only; see the module docs.

    Attributes:
        assistant_names: Speakers whose evidence lines are used only when nothing else matches.
    """

    assistant_names: tuple[str, ...] = ("assistant", "ai")

    @property
    def _llm_type(self) -> str:
        return "langmem-cog-offline-stand-in"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools (their names drive the tool-calling rules)."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._reply(messages, _tool_names(kwargs.get("tools")))
        return ChatResult(generations=[ChatGeneration(message=message)])

    # ------------------------------------------------------------------ rules
    def _reply(self, messages: Sequence[BaseMessage], tools: list[str]) -> AIMessage:
        last_human = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=None)
        if last_human is None:
            return AIMessage(content="Hello! Tell me something to remember, or ask me about the past.")
        question = messages[last_human].text.strip()
        since = messages[last_human + 1 :]
        if not any(isinstance(m, ToolMessage) for m in since):
            call = self._tool_call(messages, question, tools)
            if call is not None:
                return AIMessage(content="", tool_calls=[call])
        if not _is_question(question):
            return AIMessage(content="Noted.")
        lines: list[str] = []
        for m in messages:
            if isinstance(m, SystemMessage):
                lines += m.text.splitlines()
        for m in since:
            if isinstance(m, ToolMessage):
                lines += m.text.splitlines()
        return AIMessage(content=self._answer(question, lines))

    def _tool_call(self, messages: Sequence[BaseMessage], text: str, tools: list[str]) -> dict[str, Any] | None:
        if text.lower().startswith("remember") and "remember" in tools:
            fact = re.sub(r"^remember( that)?[:,]?\s*", "", text, flags=re.IGNORECASE).strip() or text
            return {"name": "remember", "args": {"text": fact}, "id": _call_id(messages, "remember", fact),
                    "type": "tool_call"}
        if _is_question(text):
            search = next((n for n in tools if n != "remember" and any(h in n.lower() for h in _SEARCH_HINTS)), None)
            if search is not None:
                return {"name": search, "args": {"query": text}, "id": _call_id(messages, search, text),
                        "type": "tool_call"}
        return None

    def _answer(self, question: str, lines: Sequence[str]) -> str:
        want = _words(question)
        best: tuple[tuple[int, int, int], str] | None = None
        for i, line in enumerate(lines):
            parsed = parse_evidence_line(line)
            if parsed is None:
                continue
            turn_id, speaker, day, text = parsed
            overlap = len(want & _words(text))
            if overlap == 0:
                continue
            key = (-overlap, int(speaker.casefold() in self.assistant_names), i)
            if best is None or key < best[0]:
                best = (key, f"From memory: {text} [{turn_id} | {speaker} | {day}]")
        return best[1] if best is not None else NO_MEMORY_ANSWER


def load_chat_model(spec: str | None = None, *, environ: Mapping[str, str] | None = None, **kwargs: Any) -> BaseChatModel:
    """The chat model for the examples: ``spec``, else ``$LMC_CHAT_MODEL``, else the offline stand-in.

    Args:
        spec: An ``init_chat_model`` spec such as ``"openai:gpt-4o-mini"``; ``"offline"`` (or
            nothing) means :class:`OfflineEvidenceChatModel`.
        environ: The environment to read (``os.environ`` when ``None``).
        **kwargs: Passed to ``init_chat_model`` (e.g. ``temperature=0``).

    Returns:
        The chat model.

    Example:
        >>> type(load_chat_model(environ={})).__name__
        'OfflineEvidenceChatModel'
    """
    env = os.environ if environ is None else environ
    spec = spec or env.get(CHAT_MODEL_ENV) or "offline"
    if spec == "offline":
        return OfflineEvidenceChatModel()
    from langchain.chat_models import init_chat_model

    return init_chat_model(spec, **kwargs)
