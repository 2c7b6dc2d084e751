"""An :class:`~langmem_cog.graph.schema.Extractor` backed by any LangChain chat model.

:class:`LLMExtractor` sends batches of turns to a chat model with
:data:`~langmem_cog.graph.prompts.EXTRACTION_PROMPT` and maps the answer
(:class:`~langmem_cog.graph.prompts.ExtractionOutput`) to the schema's dataclasses,
one :class:`~langmem_cog.graph.schema.Extraction` per turn.

How a batch is processed:

1. Chit-chat turns ("hi!", "thanks, bye") get an empty extraction without any model
   call. The filter is ``is_chitchat`` of ``langmem_cog.graph.rules`` when that
   module provides one, else the small local :func:`_is_chitchat`.
2. The remaining turns are grouped by conversation (``namespace``, ``conversation_id``)
   and cut into batches of ``batch_size`` consecutive turns, one model call each.
3. Models that implement ``with_structured_output`` get the schema directly; others are
   asked for JSON text, parsed with :func:`~langmem_cog.graph.prompts.parse_json_output`
   (code fences stripped, then validated).
4. An invalid answer (bad JSON, wrong shape, no tool call) is retried up to
   ``max_retries`` times; the retry repeats the conversation, the bad answer and
   :data:`~langmem_cog.graph.prompts.EXTRACTION_RETRY` with the validation error.
   When retries run out, or the model call itself fails, :class:`ExtractionError` is
   raised naming the turn ids; with ``on_error="skip"`` a warning is logged and the
   batch's turns get empty extractions instead (they stay stored; once the model works,
   :meth:`~langmem_cog.memory.CogMemory.rebuild_graph` extracts the namespace again).
5. Records citing a turn id outside the batch are dropped (warning). A claim whose
   ``source`` is neither its turn's speaker nor a name written in its turn is attributed
   to the speaker of its turn, and a claim dated after its turn is dated by its turn. A
   fact whose subject, or an event participant who, is neither the turn's speaker nor
   named in the turn is dropped (an opinion written as a fact, a made-up person). Dates: an ISO ``date`` from the model wins;
   otherwise ``time_text`` is resolved with :func:`~langmem_cog.timeparse.resolve_time_expressions`
   against the turn's timestamp. All datetimes are timezone-aware.

LangGraph's control-flow exceptions (``GraphBubbleUp``: interrupts, parent commands)
are never caught.

Example:
    >>> from datetime import datetime, timezone
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> from langmem_cog.records import Turn
    >>> reply = ('```json\\n{"events": [{"source_turn_id": "D1:3", "text": "went to a support group",'
    ...          ' "participants": ["Caroline"], "time_text": "yesterday", "date": null, "concepts": []}],'
    ...          ' "facts": [], "claims": [], "concepts": []}\\n```')
    >>> extractor = LLMExtractor(FakeListChatModel(responses=[reply]))
    >>> turn = Turn(id="D1:3", namespace="n", speaker="Caroline", text="I went to a support group yesterday.",
    ...             timestamp=datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc))
    >>> [extraction] = extractor.extract([turn])
    >>> event = extraction.events[0]
    >>> event.text, event.participants, event.start.date().isoformat(), extraction.persons
    ('went to a support group', ('Caroline',), '2023-05-07', ['Caroline'])
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime, timedelta, tzinfo
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from langgraph.errors import GraphBubbleUp
from pydantic import BaseModel, ValidationError

from langmem_cog.errors import ExtractionError, InvalidInputError
from langmem_cog.graph.prompts import (
    EXTRACTION_PROMPT,
    EXTRACTION_RETRY,
    ClaimOutput,
    EventOutput,
    ExtractionOutput,
    extraction_prompt_inputs,
    parse_json_output,
)
from langmem_cog.graph.reconcile import state_predicate
from langmem_cog.graph.schema import (
    ExtractedClaim,
    ExtractedConcept,
    ExtractedEvent,
    ExtractedFact,
    Extraction,
)
from langmem_cog.records import Turn
from langmem_cog.timeparse import TimeMention, resolve_time_expressions

__all__ = ["LLMExtractor", "OnError"]

logger = logging.getLogger(__name__)

#: What to do with a batch the model cannot extract: raise :class:`ExtractionError`, or log and skip it.
OnError = Literal["raise", "skip"]

#: Longest error text shown to the model when asking again (characters).
_MAX_ERROR_CHARS = 1500
#: Longest invalid answer repeated back to the model when asking again (characters).
_MAX_ECHO_CHARS = 8000

_CONCEPT_KINDS = frozenset({"place", "organization", "thing", "topic", "activity", "work"})
_KIND_ALIASES = {
    "organisation": "organization", "org": "organization", "company": "organization", "group": "organization",
    "location": "place", "city": "place", "country": "place", "venue": "place",
    "object": "thing", "item": "thing", "product": "thing",
    "hobby": "activity", "sport": "activity",
    "book": "work", "film": "work", "movie": "work", "song": "work", "artwork": "work",
    "subject": "topic", "idea": "topic",
}  # fmt: skip
_FIRST_PERSON = frozenset({"i", "me", "my", "myself", "mine", "we", "us", "our", "ourselves", "speaker", "the speaker"})
_OTHER_PRONOUNS = frozenset(
    {"you", "your", "yourself", "he", "him", "his", "she", "her", "they", "them", "their", "it",
     "someone", "somebody", "everyone", "everybody", "people", "user", "assistant", "unknown"}
)  # fmt: skip


# --------------------------------------------------------------------------- chit-chat filter

_CHITCHAT_WORDS = frozenset(
    """
    hi hello hey heya hiya howdy yo sup hiii heyy greetings
    thanks thank thx ty tysm cheers welcome np problem anytime
    ok okay okey kk k sure alright cool great nice awesome amazing wonderful lovely fantastic
    wow oh ooh ah aw aww hmm hm um uh yay omg
    lol haha hah hahaha hehe lmao rofl xd
    bye goodbye byebye see ya cya later soon take care talk catch you u again
    good morning afternoon evening night gn gm
    how are is it going doing what's whats up i'm im you're fine well too so much very
    glad to hear that the a and for all of course me really
    """.split()  # noqa: SIM905
)
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def _is_chitchat(text: str) -> bool:
    """Whether a turn is pure small talk (greeting, thanks, farewell, laughter, acknowledgement).

    Local fallback for ``langmem_cog.graph.rules.is_chitchat``. Conservative:
    a turn is chit-chat only if it has at most 8 words and every word is small talk, or
    it has no word at all (emoji, punctuation). "Yes" and "no" are not small talk: they
    answer questions.

    Example:
        >>> [_is_chitchat(t) for t in ("Hi! How are you?", "Thanks, bye!", "😂", "No.", "I hate running")]
        [True, True, True, False, False]
    """
    words = _WORD.findall(text.casefold().replace("\u2019", "'"))
    if not words:
        return True
    return len(words) <= 8 and all(w in _CHITCHAT_WORDS for w in words)


def _chitchat_filter() -> Callable[[str], bool]:
    """The shared ``is_chitchat`` of the rule extractor when it exists, else :func:`_is_chitchat`.

    Looked up at call time: the rule extractor may be added, or import this module, later.
    """
    try:
        from langmem_cog.graph.rules import is_chitchat
    except ImportError:
        return _is_chitchat
    return is_chitchat if callable(is_chitchat) else _is_chitchat


# --------------------------------------------------------------------------- helpers


class _InvalidOutput(Exception):
    """The model answered, but the answer is unusable (worth asking again)."""

    def __init__(self, message: str, raw_text: str | None) -> None:
        super().__init__(message)
        self.message = message
        self.raw_text = raw_text


def _describe(exc: BaseException) -> str:
    """A short, model-readable description of a parsing or validation error."""
    text = getattr(exc, "observation", None) or str(exc)
    text = "\n".join(line for line in str(text).splitlines()
                     if not line.strip().startswith(("For troubleshooting", "For further information visit")))
    return text.strip()[:_MAX_ERROR_CHARS] or type(exc).__name__


def _message_text(message: Any) -> str:
    """The text of a chat model's reply (string content or text content blocks)."""
    if isinstance(message, str):
        return message
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return str(content)


def _coerce_output(result: Any) -> ExtractionOutput:
    """Turn whatever a structured-output runnable returned into an :class:`ExtractionOutput`."""
    if isinstance(result, ExtractionOutput):
        return result
    if result is None:
        raise _InvalidOutput("no structured answer was returned (no tool call); call the extraction tool (a model "
                             "that answers in text instead needs LLMExtractor(structured_output=False))", None)
    try:
        if isinstance(result, BaseModel):
            return ExtractionOutput.model_validate(result.model_dump())
        if isinstance(result, dict):
            return ExtractionOutput.model_validate(result)
    except ValidationError as exc:
        raise _InvalidOutput(f"the answer does not match ExtractionOutput: {_describe(exc)}", None) from exc
    if isinstance(result, str | BaseMessage):
        text = _message_text(result)
        try:
            return parse_json_output(text, ExtractionOutput)
        except ValueError as exc:
            raise _InvalidOutput(_describe(exc), text) from exc
    raise _InvalidOutput(f"expected an ExtractionOutput, got {type(result).__name__}", None)


def _attach(naive: datetime, tz: tzinfo | None) -> datetime:
    """Give a naive datetime the timezone ``tz`` (pytz zones need ``localize``)."""
    localize = getattr(tz, "localize", None)
    if callable(localize):
        return localize(naive)  # type: ignore[no-any-return]
    return naive.replace(tzinfo=tz)


_YEAR = re.compile(r"^(\d{4})$")
_YEAR_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


def _parse_iso(value: str, reference: datetime) -> tuple[datetime, datetime | None] | None:
    """``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD`` or an ISO datetime, as ``(start, end)`` in the reference's zone.

    Dates give the half-open interval of the year / month / day; a datetime gives
    ``(instant, None)`` (naive ones take the reference's timezone). ``None`` if unreadable.
    """
    tz = reference.tzinfo
    value = value.strip()
    try:
        if m := _YEAR.match(value):
            y = int(m.group(1))
            return _attach(datetime(y, 1, 1), tz), _attach(datetime(y + 1, 1, 1), tz)
        if m := _YEAR_MONTH.match(value):
            y, mo = int(m.group(1)), int(m.group(2))
            nxt = datetime(y + mo // 12, mo % 12 + 1, 1)
            return _attach(datetime(y, mo, 1), tz), _attach(nxt, tz)
        if len(value) == 10:
            d = date.fromisoformat(value)
            start = datetime(d.year, d.month, d.day)
            return _attach(start, tz), _attach(start + timedelta(days=1), tz)
        dt = datetime.fromisoformat(value)
    except (ValueError, OverflowError):
        return None
    return (dt if dt.tzinfo is not None and dt.utcoffset() is not None else _attach(dt, tz)), None


def _norm_space(text: str) -> str:
    return " ".join(text.casefold().split())


def _resolve_time_text(time_text: str, turn: Turn) -> TimeMention | None:
    """Resolve the model's time expression against the turn's timestamp.

    The expression is first looked for in the turn's own text, where the sentence's
    tense is known ("I'm going on Friday" is the next Friday); failing that it is
    resolved on its own.
    """
    wanted = _norm_space(time_text)
    if not wanted:
        return None
    for mention in resolve_time_expressions(turn.text, turn.timestamp):
        found = _norm_space(mention.text)
        if found == wanted or found in wanted or wanted in found:
            return mention
    mentions = resolve_time_expressions(time_text, turn.timestamp)
    return mentions[0] if mentions else None


def _snake(text: str) -> str:
    return re.sub(r"[^\w]+", "_", text.strip().casefold()).strip("_")


def _dedupe(names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for name in names:
        key = name.casefold()
        if name and key not in seen:
            seen.add(key)
            out.append(name)
    return out


# --------------------------------------------------------------------------- the extractor


class LLMExtractor:
    """Extract PEC2F records from turns with a LangChain chat model.

    Implements the :class:`~langmem_cog.graph.schema.Extractor` protocol. The instance
    holds no per-call state, so one extractor can serve concurrent calls if the model can.

    Args:
        model: Any LangChain chat model (``BaseChatModel``), or a runnable taking a list of
            messages and returning a message.
        batch_size: Turns per model call (all from one conversation). Default 8.
        max_retries: How many times to ask again after an invalid answer. Default 2
            (so at most 3 calls per batch). Failures of the model call itself (network,
            rate limit) are not retried here: configure retries on the model client.
        on_error: ``"raise"`` (default): raise :class:`~langmem_cog.errors.ExtractionError`
            when a batch fails. ``"skip"``: log a warning and give the batch's turns empty
            extractions, so one bad batch does not stop the ingestion of the others.
        structured_output: ``None`` (default): use ``model.with_structured_output`` when the
            model implements it, else parse JSON text. ``True``: require it. ``False``: always
            parse JSON text (for models whose tool calling is unreliable).
        skip_chitchat: Give small-talk turns empty extractions without calling the model.
        max_concurrency: Batches run at once by :meth:`aextract` (``extract`` is sequential).

    Raises:
        InvalidInputError: If an argument is invalid, or ``structured_output=True`` and the
            model does not implement ``with_structured_output``.

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> extractor = LLMExtractor(FakeListChatModel(responses=["{}"]), batch_size=4)
        >>> extractor.batch_size, extractor.uses_structured_output
        (4, False)
    """

    def __init__(
        self,
        model: BaseChatModel | Runnable[Any, Any],
        *,
        batch_size: int = 8,
        max_retries: int = 2,
        on_error: OnError = "raise",
        structured_output: bool | None = None,
        skip_chitchat: bool = True,
        max_concurrency: int = 4,
    ) -> None:
        if not isinstance(model, Runnable):
            raise InvalidInputError(
                f"model must be a LangChain chat model (BaseChatModel) or runnable, got {type(model).__name__}"
            )
        for name, value, low in (("batch_size", batch_size, 1), ("max_retries", max_retries, 0),
                                 ("max_concurrency", max_concurrency, 1)):  # fmt: skip
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise InvalidInputError(f"{name} must be an integer >= {low}, got {value!r}")
        if on_error not in ("raise", "skip"):
            raise InvalidInputError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
        if structured_output not in (None, True, False):
            raise InvalidInputError(f"structured_output must be None, True or False, got {structured_output!r}")
        self.model = model
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.on_error: OnError = on_error
        self.skip_chitchat = skip_chitchat
        self.max_concurrency = max_concurrency
        self._structured: Runnable[Any, Any] | None = None
        if structured_output is not False:
            try:
                self._structured = model.with_structured_output(ExtractionOutput)  # type: ignore[union-attr]
            except (NotImplementedError, AttributeError, ValueError) as exc:
                if structured_output:
                    raise InvalidInputError(
                        f"{type(model).__name__} does not implement with_structured_output ({exc}); "
                        "pass structured_output=None or False to parse JSON replies instead"
                    ) from None
                logger.debug("%s has no structured output; parsing JSON replies", type(model).__name__)

    @property
    def uses_structured_output(self) -> bool:
        """Whether answers come from ``model.with_structured_output`` (else JSON text is parsed)."""
        return self._structured is not None

    def __repr__(self) -> str:
        return (
            f"LLMExtractor(model={type(self.model).__name__}, batch_size={self.batch_size}, "
            f"max_retries={self.max_retries}, on_error={self.on_error!r}, "
            f"structured_output={self.uses_structured_output})"
        )

    # ----------------------------------------------------------------- public API

    def extract(self, turns: Sequence[Turn]) -> list[Extraction]:
        """One :class:`Extraction` per turn, in input order.

        Args:
            turns: The turns (any conversations; batches never mix conversations).

        Returns:
            The extractions; chit-chat turns (and, with ``on_error="skip"``, turns of
            failed batches) have empty ones.

        Raises:
            InvalidInputError: If ``turns`` is not a sequence of :class:`Turn`, or holds one
                turn id twice in a namespace.
            ExtractionError: If a batch fails (see ``on_error``); its ``turn_ids`` attribute
                and message name the batch's turns.
        """
        turns, results, batches = self._plan(turns)
        for batch in batches:
            for i, extraction in zip(batch, self._run_batch([turns[i] for i in batch]), strict=True):
                results[i] = extraction
        return results

    async def aextract(self, turns: Sequence[Turn]) -> list[Extraction]:
        """Async :meth:`extract` (``ainvoke``), running up to ``max_concurrency`` batches at once.

        When one batch raises, the batches still running are cancelled.
        """
        turns, results, batches = self._plan(turns)
        if not batches:
            return results
        gate = asyncio.Semaphore(self.max_concurrency)

        async def run(batch: list[int]) -> list[Extraction]:
            async with gate:
                return await self._arun_batch([turns[i] for i in batch])

        tasks = [asyncio.ensure_future(run(batch)) for batch in batches]
        try:
            outputs = await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        for batch, extractions in zip(batches, outputs, strict=True):
            for i, extraction in zip(batch, extractions, strict=True):
                results[i] = extraction
        return results

    # ----------------------------------------------------------------- planning

    def _plan(self, turns: Sequence[Turn]) -> tuple[list[Turn], list[Extraction], list[list[int]]]:
        """Validate, pre-fill empty extractions, and cut the non-chit-chat turns into batches of indexes."""
        if isinstance(turns, str | bytes) or not isinstance(turns, Sequence | Iterable):
            raise InvalidInputError(f"turns must be a sequence of Turn, got {type(turns).__name__}")
        turns = list(turns)
        seen: set[tuple[str, str]] = set()
        for i, turn in enumerate(turns):
            if not isinstance(turn, Turn):
                raise InvalidInputError(f"turns[{i}] must be a Turn, got {type(turn).__name__}")
            key = (turn.namespace, turn.id)
            if key in seen:
                raise InvalidInputError(
                    f"turn id {turn.id!r} appears twice in namespace {turn.namespace!r}: pass each turn once"
                )
            seen.add(key)
        results = [_empty(turn) for turn in turns]
        is_chitchat = _chitchat_filter() if self.skip_chitchat else None
        groups: dict[tuple[str, str], list[int]] = {}
        skipped = 0
        for i, turn in enumerate(turns):
            if is_chitchat is not None and is_chitchat(turn.text):
                skipped += 1
                continue
            groups.setdefault((turn.namespace, turn.conversation_id), []).append(i)
        if skipped:
            logger.debug("skipped %d chit-chat turn(s) without calling the model", skipped)
        size = self.batch_size
        batches = [idx[k : k + size] for idx in groups.values() for k in range(0, len(idx), size)]
        return turns, results, batches

    # ----------------------------------------------------------------- one batch

    def _run_batch(self, batch: list[Turn]) -> list[Extraction]:
        attempts = _Attempts(self, batch)
        while attempts.result is None:
            try:
                output = self._invoke(attempts.messages)
            except Exception as exc:
                attempts.fail(exc)
            else:
                attempts.result = self._to_extractions(batch, output)
        return attempts.result

    async def _arun_batch(self, batch: list[Turn]) -> list[Extraction]:
        attempts = _Attempts(self, batch)
        while attempts.result is None:
            try:
                output = await self._ainvoke(attempts.messages)
            except Exception as exc:
                attempts.fail(exc)
            else:
                attempts.result = self._to_extractions(batch, output)
        return attempts.result

    def _invoke(self, messages: list[BaseMessage]) -> ExtractionOutput:
        """One model call; raises :class:`_InvalidOutput` for an unusable answer."""
        if self._structured is not None:
            try:
                result = self._structured.invoke(messages)
            except ValueError as exc:  # OutputParserException, ValidationError, JSON errors
                raise _InvalidOutput(_describe(exc), None) from exc
            return _coerce_output(result)
        return self._parse_reply(self.model.invoke(messages))

    async def _ainvoke(self, messages: list[BaseMessage]) -> ExtractionOutput:
        """Async :meth:`_invoke`."""
        if self._structured is not None:
            try:
                result = await self._structured.ainvoke(messages)
            except ValueError as exc:
                raise _InvalidOutput(_describe(exc), None) from exc
            return _coerce_output(result)
        return self._parse_reply(await self.model.ainvoke(messages))

    @staticmethod
    def _parse_reply(reply: Any) -> ExtractionOutput:
        text = _message_text(reply)
        try:
            return parse_json_output(text, ExtractionOutput)
        except ValueError as exc:
            raise _InvalidOutput(_describe(exc), text) from exc

    def _retry_messages(
        self, base: list[BaseMessage], bad: _InvalidOutput, batch: list[Turn], attempt: int
    ) -> list[BaseMessage]:
        """The first request, the invalid answer (if it was text) and a request to fix it."""
        ids = ", ".join(t.id for t in batch)
        if attempt <= self.max_retries:
            logger.info("invalid extraction for turns %s (attempt %d), asking again: %s", ids, attempt, bad.message)
        extra: list[BaseMessage] = []
        if bad.raw_text:
            extra.append(AIMessage(content=bad.raw_text[:_MAX_ECHO_CHARS]))
        extra.append(HumanMessage(content=EXTRACTION_RETRY.format(error=bad.message, turn_ids=ids)))
        return [*base, *extra]

    def _failed(self, batch: list[Turn], exc: BaseException, attempts: int) -> list[Extraction]:
        """Raise :class:`ExtractionError` for the batch, or (``on_error="skip"``) log and return empties."""
        ids = [t.id for t in batch]
        joined = ", ".join(ids)
        if isinstance(exc, _InvalidOutput):
            reason = f"no valid answer after {attempts} attempt(s); last error: {exc.message}"
        else:
            reason = f"the model call failed: {type(exc).__name__}: {exc}"
        message = f"LLM extraction failed for turns {joined}: {reason}"
        if self.on_error == "skip":
            logger.warning("%s; skipping these turns (on_error='skip'): they stay stored, without graph records "
                           "until CogMemory.rebuild_graph(namespace) extracts them again", message)
            return [_empty(t) for t in batch]
        error = ExtractionError(f"{message}. Pass on_error='skip' to skip such batches.")
        error.turn_ids = tuple(ids)  # type: ignore[attr-defined]
        raise error from exc

    # ----------------------------------------------------------------- mapping

    def _to_extractions(self, batch: list[Turn], output: ExtractionOutput) -> list[Extraction]:
        """Map a validated answer to one :class:`Extraction` per turn of the batch."""
        by_id = {t.id: t for t in batch}
        by_folded: dict[str, Turn | None] = {}
        for t in batch:  # case-insensitive fallback, only when unambiguous
            by_folded[t.id.casefold()] = None if t.id.casefold() in by_folded else t
        extractions = {t.id: _empty(t) for t in batch}
        speakers = {t.speaker.casefold(): t.speaker for t in batch}
        texts = [t.text for t in batch]
        unknown: list[str] = []

        def turn_of(turn_id: str) -> Turn | None:
            turn = by_id.get(turn_id) or by_folded.get(turn_id.casefold())
            if turn is None:
                unknown.append(turn_id)
            return turn

        for ev in output.events:
            if (turn := turn_of(ev.source_turn_id)) is not None:
                self._add_event(extractions[turn.id], ev, turn, speakers)
        for fact in output.facts:
            if (turn := turn_of(fact.source_turn_id)) is None:
                continue
            subject = _person(fact.subject, turn, speakers) or ""
            predicate, obj, text = state_predicate(_snake(fact.predicate)), fact.object.strip(), fact.text.strip()
            if not (subject and predicate and obj):
                logger.debug("dropped an incomplete fact of turn %s: %r", turn.id, fact)
                continue
            if not _in_turn(subject, turn):  # an opinion written as a fact about "running", or a made-up person
                logger.info("turn %s: dropped a fact whose subject %r is neither its speaker nor named in it",
                            turn.id, fact.subject)
                continue
            extractions[turn.id].facts.append(
                ExtractedFact(subject=subject, predicate=predicate, object=obj,
                              text=text or f"{subject} {predicate.replace('_', ' ')} {obj}", source_turn_id=turn.id)
            )  # fmt: skip
        for claim in output.claims:
            if (turn := turn_of(claim.source_turn_id)) is not None:
                self._add_claim(extractions[turn.id], claim, turn, speakers, texts)
        for concept in output.concepts:
            if (turn := turn_of(concept.source_turn_id)) is None:
                continue
            kind = _concept_kind(concept.kind)
            name = concept.name.strip()
            if name and kind is not None:
                _add_concept(extractions[turn.id], name, kind)
        if unknown:
            logger.warning(
                "dropped %d record(s) citing turn ids outside the batch (%s); valid ids: %s",
                len(unknown), ", ".join(sorted(set(unknown))[:10]), ", ".join(by_id),
            )  # fmt: skip

        for turn in batch:
            ext = extractions[turn.id]
            for event in ext.events:  # make sure every concept an event names exists as a concept
                for name in event.concepts:
                    _add_concept(ext, name, "thing")
            if ext.events or ext.facts or ext.claims or ext.concepts:
                names = [turn.speaker]
                names += [p for event in ext.events for p in event.participants]
                names += [c.source for c in ext.claims]
                ext.persons = _dedupe(names)
        return [extractions[t.id] for t in batch]

    @staticmethod
    def _add_event(ext: Extraction, ev: EventOutput, turn: Turn, speakers: dict[str, str]) -> None:
        text = ev.text.strip()
        if not text:
            logger.debug("dropped an event without text from turn %s", turn.id)
            return
        participants = _dedupe(p for p in (_person(name, turn, speakers) for name in ev.participants)
                               if p and _in_turn(p, turn))
        if not participants:
            participants = [turn.speaker]
        elif turn.speaker in participants:
            participants.remove(turn.speaker)
            participants.insert(0, turn.speaker)
        start: datetime | None = None
        end: datetime | None = None
        interval = _parse_iso(ev.date, turn.timestamp) if ev.date else None
        if ev.date and interval is None:
            logger.debug("turn %s: unreadable event date %r, resolving time_text instead", turn.id, ev.date)
        if interval is not None:
            start, end = interval
        elif ev.time_text:
            mention = _resolve_time_text(ev.time_text, turn)
            if mention is not None:
                start, end = mention.start, mention.end
        ext.events.append(
            ExtractedEvent(
                text=text,
                participants=tuple(participants),
                source_turn_id=turn.id,
                start=start,
                end=end,
                time_text=ev.time_text,
                concepts=tuple(_dedupe(c for c in ev.concepts if c)),
            )
        )

    @staticmethod
    def _add_claim(ext: Extraction, claim: ClaimOutput, turn: Turn, speakers: dict[str, str], texts: list[str]) -> None:
        target = claim.target.strip()
        if not target:
            logger.debug("dropped a claim without target from turn %s", turn.id)
            return
        source = _claim_source(claim.source, turn, speakers, texts)
        timestamp = turn.timestamp
        if claim.timestamp:
            interval = _parse_iso(claim.timestamp, turn.timestamp)
            if interval is not None:
                timestamp = interval[0]
            elif (mention := _resolve_time_text(claim.timestamp, turn)) is not None:
                timestamp = mention.start
            if timestamp > turn.timestamp:  # an opinion is held when said or before, never later
                logger.info("turn %s: a claim dated %s, after its turn, is dated by its turn", turn.id, claim.timestamp)
                timestamp = turn.timestamp
        ext.claims.append(
            ExtractedClaim(
                source=source,
                target=target,
                predicate=_snake(claim.predicate) or "opinion",
                polarity=int(claim.polarity),
                content=claim.content.strip() or turn.text,
                source_turn_id=turn.id,
                sentiment=float(claim.polarity),
                timestamp=timestamp,
            )
        )



class _Attempts:
    """One batch's calls to the model: the messages of the next call, and the outcome once there is one.

    An invalid answer is sent back to the model with what was wrong, up to ``max_retries`` times;
    any other failure ends the batch at once (:meth:`LLMExtractor._failed`: raise, or skip).
    """

    def __init__(self, extractor: LLMExtractor, batch: list[Turn]) -> None:
        self.extractor, self.batch = extractor, batch
        self.base = EXTRACTION_PROMPT.format_messages(**extraction_prompt_inputs(batch))
        self.messages: list[BaseMessage] = self.base
        self.attempt = 1
        self.result: list[Extraction] | None = None

    def fail(self, exc: Exception) -> None:
        """Take a failed call: ask again after an invalid answer, else end the batch (re-raises
        ``GraphBubbleUp``, LangGraph's control flow, untouched)."""
        if isinstance(exc, GraphBubbleUp):
            raise exc
        if isinstance(exc, _InvalidOutput) and self.attempt <= self.extractor.max_retries:
            self.messages = self.extractor._retry_messages(self.base, exc, self.batch, self.attempt)
            self.attempt += 1
            return
        self.result = self.extractor._failed(self.batch, exc, self.attempt)


def _empty(turn: Turn) -> Extraction:
    return Extraction(turn_id=turn.id, speaker=turn.speaker, timestamp=turn.timestamp)


def _person(name: str, turn: Turn, speakers: dict[str, str]) -> str | None:
    """A participant / subject name: first-person pronouns are the speaker, other pronouns dropped."""
    name = name.strip()
    key = name.casefold()
    if not name or key in _OTHER_PRONOUNS:
        return None
    if key in _FIRST_PERSON:
        return turn.speaker
    return speakers.get(key, name)


def _named_in(name: str, texts: list[str]) -> bool:
    """Whether ``name`` is written, capitalised, as a whole word in one of the texts."""
    pattern = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.IGNORECASE)
    return any(m.group(0)[:1].isupper() for text in texts for m in pattern.finditer(text))


def _in_turn(name: str, turn: Turn) -> bool:
    """Whether ``name`` can be a person of the turn: its speaker, or written capitalised in the turn and
    not a word the rule extractor knows is no name ("Running is boring": an activity, not a person)."""
    from langmem_cog.graph.rules.lexicon import ACTIVITY_SET, COMMON, NOT_NAMES

    key = name.casefold()
    if key == turn.speaker.casefold():
        return True
    return key not in NOT_NAMES and key not in COMMON and key not in ACTIVITY_SET and _named_in(name, [turn.text])


def _claim_source(raw: str, turn: Turn, speakers: dict[str, str], texts: list[str]) -> str:
    """The holder of a claim: the turn's speaker, or a person named in the claim's own turn ("Tom thinks
    ..."), else the turn's speaker (``texts``, the batch's, are not evidence for another turn's claim)."""
    name = raw.strip()
    key = name.casefold()
    if not name or key in _FIRST_PERSON or key == turn.speaker.casefold():
        return turn.speaker
    if key not in _OTHER_PRONOUNS and _named_in(name, [turn.text]):
        return speakers.get(key, name)
    logger.info(
        "turn %s: claim source %r is not a speaker or named person; attributed to %s", turn.id, raw, turn.speaker
    )
    return turn.speaker


def _concept_kind(kind: str) -> str | None:
    """Normalise a concept kind; ``None`` for persons (they are Person nodes, not concepts)."""
    key = _snake(kind)
    if key in ("person", "people", "human"):
        return None
    key = _KIND_ALIASES.get(key, key)
    return key if key in _CONCEPT_KINDS else "thing"


def _add_concept(ext: Extraction, name: str, kind: str) -> None:
    folded = name.casefold()
    if all(c.name.casefold() != folded for c in ext.concepts):
        ext.concepts.append(ExtractedConcept(name=name, source_turn_id=ext.turn_id, kind=kind))
