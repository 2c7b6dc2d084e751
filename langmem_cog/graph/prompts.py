"""Every prompt of langmem-cog, each beside the pydantic schema of its output.

Prompts are ``langchain_core`` prompt templates, so they work with any chat model;
each output schema can be passed to ``model.with_structured_output(...)``, or, for
models without structured output, the reply text can be parsed with
:func:`parse_json_output`.

* ``EXTRACTION_PROMPT`` -> :class:`ExtractionOutput`: turns to PEC2F records (``LLMExtractor``);
  ``EXTRACTION_RETRY`` is appended when an answer was invalid.
* ``CONSOLIDATION_PROMPT`` -> :class:`ConsolidatedFactOutput`: a Fact from repeated events.
* ``ROUTER_PROMPT`` -> :class:`RouterOutput`: a question's intent and time window (operator loop).
* ``SUFFICIENCY_PROMPT`` -> :class:`SufficiencyOutput`: is the evidence enough to answer (operator loop)?

Design of the extraction prompt: the system message defines the five PEC2F record
types and the rules that matter most for memory quality (an opinion is a *claim
attributed to its speaker*, never a fact; relative dates are resolved against the
date printed on each turn, never "today"; only the turn ids shown may be cited;
names, not pronouns), then shows one worked example whose JSON answer doubles as
the output format, so the same prompt serves structured-output models and plain
text models. The human message lists the batch, one ``[turn_id] (YYYY-MM-DD)
Speaker: text`` line per turn, and repeats the valid ids.

Example:
    >>> from datetime import datetime, timezone
    >>> from langmem_cog.records import Turn
    >>> turn = Turn(id="D1:3", namespace="n", speaker="Caroline", text="I went to a support group yesterday.",
    ...             timestamp=datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc))
    >>> messages = EXTRACTION_PROMPT.format_messages(**extraction_prompt_inputs([turn]))
    >>> [m.type for m in messages]
    ['system', 'human']
    >>> print(messages[1].content.splitlines()[1])
    [D1:3] (2023-05-08) Caroline: I went to a support group yesterday.
    >>> parse_json_output('```json\\n{"sufficient": true, "reason": "the date is stated"}\\n```',
    ...                   SufficiencyOutput).sufficient
    True
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any, Literal, TypeVar

from langchain_core.exceptions import OutputParserException
from langchain_core.prompts import ChatPromptTemplate, PromptTemplate
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from langmem_cog.records import Turn

__all__ = [
    # extraction
    "EXTRACTION_SYSTEM",
    "EXTRACTION_PROMPT",
    "EXTRACTION_RETRY",
    "EventOutput",
    "FactOutput",
    "ClaimOutput",
    "ConceptOutput",
    "ExtractionOutput",
    "format_turns",
    "extraction_prompt_inputs",
    # consolidation
    "CONSOLIDATION_PROMPT",
    "ConsolidatedFactOutput",
    # operator loop
    "Intent",
    "ROUTER_PROMPT",
    "RouterOutput",
    "SUFFICIENCY_PROMPT",
    "SufficiencyOutput",
    # parsing
    "parse_json_output",
]

ModelT = TypeVar("ModelT", bound=BaseModel)

_NULL_WORDS = frozenset({"", "null", "none", "n/a", "na", "unknown", "nil"})


def _none_if_blank(value: Any) -> Any:
    """Map ``""``, ``"null"``, ``"none"``, ... to ``None`` (models write null many ways)."""
    if isinstance(value, str) and value.strip().casefold() in _NULL_WORDS:
        return None
    return value.strip() if isinstance(value, str) else value


def _check_iso(value: str | None) -> str | None:
    """Accept an ISO date or datetime (``YYYY-MM-DD[THH:MM[:SS][+HH:MM]]``), else raise ``ValueError``."""
    if value is None:
        return None
    try:
        date.fromisoformat(value)
    except ValueError:
        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{value!r} is not an ISO date (YYYY-MM-DD) or datetime; use null if unknown") from None
    return value


def _escape_braces(text: str) -> str:
    """Escape ``{`` and ``}`` for an f-string prompt template."""
    return text.replace("{", "{{").replace("}", "}}")


# =========================================================================== extraction


class _RecordOutput(BaseModel):
    """Fields shared by every extracted record."""

    model_config = ConfigDict(extra="ignore")

    source_turn_id: str = Field(description="Id of the turn the record comes from, exactly as shown in brackets.")

    @field_validator("source_turn_id", mode="before")
    @classmethod
    def _clean_turn_id(cls, v: Any) -> Any:
        if isinstance(v, int | float) and not isinstance(v, bool):
            v = str(v)
        if isinstance(v, str):
            v = v.strip()
            if v.startswith("[") and v.endswith("]"):
                v = v[1:-1].strip()
        return v


def _str_list(v: Any) -> Any:
    """``None`` -> ``[]``, a lone string -> ``[string]``; blanks removed."""
    if v is None:
        return []
    if isinstance(v, str):
        v = [v]
    if isinstance(v, list | tuple):
        return [x.strip() if isinstance(x, str) else x for x in v if not (isinstance(x, str) and not x.strip())]
    return v


class EventOutput(_RecordOutput):
    """An event as the model writes it: something a person did, does or will do."""

    text: str = Field(description='Short description of what happened, e.g. "went to a support group".')
    participants: list[str] = Field(
        default_factory=list, description="Names of the people taking part, the speaker first (names, not pronouns)."
    )
    time_text: str | None = Field(
        default=None, description='The time expression as written in the turn ("yesterday"), or null.'
    )
    date: str | None = Field(
        default=None,
        description="Absolute ISO date YYYY-MM-DD of the event, resolved against the turn's date, or null.",
    )
    concepts: list[str] = Field(
        default_factory=list, description="Names of places, things, organisations, activities the event involves."
    )

    @field_validator("participants", "concepts", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> Any:
        return _str_list(v)

    @field_validator("time_text", "date", mode="before")
    @classmethod
    def _nulls(cls, v: Any) -> Any:
        return _none_if_blank(v)


class FactOutput(_RecordOutput):
    """A stable, self-reported attribute of a person (job, home, pet, allergy, habit, lasting preference)."""

    subject: str = Field(description="The person the fact is about (a name).")
    predicate: str = Field(
        description="Short snake_case relation: is, works_as, has, likes, dislikes, allergic_to, lives_in, habit, ...; "
                    "a state a later statement replaces: lives_in, works_at, works_as, studies, drives, diet, relationship"
    )
    object: str = Field(description='The value, e.g. "shellfish".')
    text: str = Field(description="The fact as one sentence.")


class ClaimOutput(_RecordOutput):
    """An opinion, evaluation or belief, attributed to the person who holds it."""

    source: str = Field(description="Who holds the opinion: the speaker, or a person the speaker names.")
    target: str = Field(description="What the opinion is about (a person, thing, place, event, idea).")
    predicate: str = Field(default="opinion", description="opinion (evaluation), belief or preference.")
    polarity: Literal[-1, 0, 1] = Field(description="1 positive, -1 negative, 0 neutral or mixed.")
    timestamp: str | None = Field(
        default=None, description="ISO date the opinion was held, only if the turn says another time; else null."
    )
    content: str = Field(description="The opinion as said.")

    @field_validator("timestamp", mode="before")
    @classmethod
    def _nulls(cls, v: Any) -> Any:
        return _none_if_blank(v)

    @field_validator("polarity", mode="before")
    @classmethod
    def _coerce_polarity(cls, v: Any) -> Any:
        if isinstance(v, bool):
            return v
        if isinstance(v, int | float):
            return (v > 0) - (v < 0)
        if isinstance(v, str):
            word = v.strip().casefold()
            words = {"positive": 1, "+1": 1, "1": 1, "negative": -1, "-1": -1, "neutral": 0, "mixed": 0, "0": 0}
            if word in words:
                return words[word]
        return v


class ConceptOutput(_RecordOutput):
    """A named place, organisation, thing, work, activity or topic."""

    name: str = Field(description='Surface name, e.g. "Little Fern".')
    kind: str = Field(default="thing", description="One of place, organization, thing, topic, activity, work.")


class ExtractionOutput(BaseModel):
    """What the model returns for one batch of turns: four lists of records, each citing its turn.

    Example:
        >>> out = ExtractionOutput.model_validate({"events": [], "facts": [], "concepts": [],
        ...     "claims": [{"source_turn_id": "[D1:2]", "source": "Maya", "target": "running",
        ...                 "polarity": "negative", "content": "I hate running"}]})
        >>> out.claims[0].source_turn_id, out.claims[0].polarity, out.claims[0].predicate
        ('D1:2', -1, 'opinion')
    """

    model_config = ConfigDict(extra="ignore")

    events: list[EventOutput] = Field(description="Events, in turn order.")
    facts: list[FactOutput] = Field(description="Stable facts about people.")
    claims: list[ClaimOutput] = Field(description="Opinions, each attributed to its holder.")
    concepts: list[ConceptOutput] = Field(description="Named concepts mentioned.")

    @field_validator("events", "facts", "claims", "concepts", mode="before")
    @classmethod
    def _null_is_empty(cls, v: Any) -> Any:
        return [] if v is None else v


_EXAMPLE_TURNS = (
    "[S1:1] (2023-05-08) Maya: I went to Little Fern yesterday with Tom. Honestly, their coffee is overrated.\n"
    "[S1:2] (2023-05-08) Tom: Ha! I'm a nurse, so after night shifts any coffee is good coffee."
)
_EXAMPLE_OUTPUT = json.dumps(
    {
        "events": [
            {
                "source_turn_id": "S1:1",
                "text": "went to Little Fern with Tom",
                "participants": ["Maya", "Tom"],
                "time_text": "yesterday",
                "date": "2023-05-07",
                "concepts": ["Little Fern"],
            }
        ],
        "facts": [
            {
                "source_turn_id": "S1:2",
                "subject": "Tom",
                "predicate": "works_as",
                "object": "nurse",
                "text": "Tom works as a nurse.",
            }
        ],
        "claims": [
            {
                "source_turn_id": "S1:1",
                "source": "Maya",
                "target": "Little Fern coffee",
                "predicate": "opinion",
                "polarity": -1,
                "timestamp": None,
                "content": "their coffee is overrated",
            }
        ],
        "concepts": [{"source_turn_id": "S1:1", "name": "Little Fern", "kind": "place"}],
    },
    ensure_ascii=False,
)

#: The system message of :data:`EXTRACTION_PROMPT` (plain text, braces not escaped).
EXTRACTION_SYSTEM = f"""You build the long-term memory of a conversational agent. From the conversation turns \
you are given, extract records for a PEC2F graph: Person, Event, Concept, Claim, Fact.

Record types:
- events: something a person did, does or will do ("went to a support group"). participants: the names of the \
people taking part, the speaker first. time_text: the time expression exactly as written in the turn \
("yesterday", "last Friday"), or null. date: the absolute date YYYY-MM-DD of the event, or null if the turn gives \
no time. concepts: names of the places, things, organisations and activities involved.
- facts: stable attributes of a person that the turns state as true: job, home, family, pets, allergies, habits, \
lasting likes and dislikes ("Tom works as a nurse"). subject: the person's name. predicate: a short snake_case \
relation (is, works_as, has, likes, dislikes, allergic_to, lives_in, habit, favorite, ...). object: the value. \
text: the fact as one sentence. A state that a later statement replaces takes one of these predicates, also when \
the turn tells of the change without naming the state ("the movers dropped the last boxes in Leith" is lives_in \
Leith; "my first shift at the bakery" is works_at the bakery): lives_in (home), works_at (employer), works_as \
(job or role), studies (school or course), drives (vehicle), diet (vegetarian, keto, "eats meat", ...), \
relationship (single, married, "with <name>", ...). A state of someone the speaker talks about takes that \
person as subject.
- claims: opinions, evaluations, beliefs and judgements. An opinion is a claim attributed to the person who holds \
it, never a fact: "Maya: their coffee is overrated" is a claim by Maya about the coffee, not a fact about the \
coffee. source: who holds the opinion (the speaker, or a person the speaker names). target: what it is about. \
predicate: opinion, belief or preference. polarity: 1 positive, -1 negative, 0 neutral or mixed. timestamp: the \
ISO date the opinion was held if the turn places it at another time ("I used to love it"), else null. content: \
the opinion as said.
- concepts: named places, organisations, things, works, activities and topics. name: the name as written. kind: \
one of place, organization, thing, topic, activity, work.

Rules:
- Every record has source_turn_id: the id in square brackets of the turn it comes from. Use only the turn ids \
given; never invent or alter one.
- Each turn shows its date in parentheses. Resolve relative dates ("yesterday", "last week", "two days ago", \
"next month") against the date of that turn, never against today: "yesterday" in a turn dated 2023-05-08 is \
2023-05-07.
- Write names, not pronouns: "I" and "me" are the speaker of the turn.
- Extract only what the turns say; add no world knowledge and do not guess. Greetings and small talk give no \
records. Use empty lists when there is nothing to extract.
- Reply with one JSON object with the keys events, facts, claims and concepts, and nothing else.

Example turns:
{_EXAMPLE_TURNS}

Example answer:
{_EXAMPLE_OUTPUT}"""

_EXTRACTION_HUMAN = """Turns, one per line as [turn_id] (date) Speaker: text:
{turns}

Valid turn ids: {turn_ids}
Extract the records of these turns as one JSON object."""

#: Turns -> PEC2F records. Input variables: ``turns`` (see :func:`format_turns`) and ``turn_ids``
#: (comma-separated); build both with :func:`extraction_prompt_inputs`. Output: :class:`ExtractionOutput`.
EXTRACTION_PROMPT = ChatPromptTemplate.from_messages(
    [("system", _escape_braces(EXTRACTION_SYSTEM)), ("human", _EXTRACTION_HUMAN)]
)

#: Appended as a human message when an answer was unusable. Input variables: ``error``, ``turn_ids``.
EXTRACTION_RETRY = PromptTemplate.from_template(
    "Your previous answer could not be used: {error}\n\n"
    "Answer again with one JSON object with the keys events, facts, claims and concepts, exactly as described, "
    "citing only these turn ids: {turn_ids}."
)

_LINE_BREAKS = re.compile(r"\s*[\r\n\u2028\u2029]+\s*")


def format_turns(turns: Iterable[Turn]) -> str:
    """Render turns as the ``[turn_id] (YYYY-MM-DD) Speaker: text`` lines of :data:`EXTRACTION_PROMPT`.

    The date is the turn's local date (in its timestamp's timezone). Line breaks inside a
    text are folded to ``" / "`` so one turn is always one line (a turn cannot fake another).

    Args:
        turns: The turns, in order.

    Returns:
        One line per turn.

    Example:
        >>> from datetime import datetime, timezone
        >>> t = Turn(id="t1", namespace="n", speaker="Ann", text="Hi\\nI moved to Oslo.",
        ...          timestamp=datetime(2024, 3, 1, 9, tzinfo=timezone.utc))
        >>> format_turns([t])
        '[t1] (2024-03-01) Ann: Hi / I moved to Oslo.'
    """
    return "\n".join(
        f"[{t.id}] ({t.timestamp.date().isoformat()}) {t.speaker}: {_LINE_BREAKS.sub(' / ', t.text.strip())}"
        for t in turns
    )


def extraction_prompt_inputs(turns: Sequence[Turn]) -> dict[str, str]:
    """The input variables of :data:`EXTRACTION_PROMPT` for a batch of turns.

    Example:
        >>> from datetime import datetime, timezone
        >>> t = Turn(id="t1", namespace="n", speaker="Ann", text="I moved to Oslo.",
        ...          timestamp=datetime(2024, 3, 1, tzinfo=timezone.utc))
        >>> extraction_prompt_inputs([t])["turn_ids"]
        't1'
    """
    return {"turns": format_turns(turns), "turn_ids": ", ".join(t.id for t in turns)}


# =========================================================================== consolidation


class ConsolidatedFactOutput(BaseModel):
    """A Fact written from several events that repeat one pattern.

    Example:
        >>> msgs = CONSOLIDATION_PROMPT.format_messages(
        ...     person="Leo", concept="climbing", count=2,
        ...     events="- (2023-03-13) went climbing\\n- (2023-04-08) went climbing at the gym")
        >>> print(msgs[1].content.splitlines()[0])
        Person: Leo
    """

    model_config = ConfigDict(extra="ignore")

    text: str = Field(
        description='One third-person sentence stating the habit, e.g. "Leo regularly goes climbing (3 times '
        'between 13 Mar 2023 and 8 Apr 2023)."'
    )


#: Repeated events -> one Fact sentence (for the graph store's consolidation). Input variables:
#: ``person`` (a name), ``concept`` (what the events share), ``count`` (number of events) and
#: ``events`` (one ``- (YYYY-MM-DD) description`` line per event, oldest first).
#: Output: :class:`ConsolidatedFactOutput`.
CONSOLIDATION_PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "You maintain a person's long-term memory. Several events of one person involve the same topic. "
            "Write ONE short sentence, in the third person and present tense and using the person's name, "
            "stating the habit these events support, how many times and between which dates, in the style of "
            '"Leo regularly goes climbing (3 times between 13 Mar 2023 and 8 Apr 2023)." State only what the '
            "events support: no guesses, no opinions. Reply with one JSON object: "
            '{{"text": "..."}}.',
        ),
        ("human", "Person: {person}\nTopic: {concept}\nEvents involving the topic ({count}, oldest first):\n{events}"),
    ]
)


# =========================================================================== operator loop

#: Question intents of the operator loop.
Intent = Literal["COMPARE", "BELIEF", "TEMPORAL", "DETAIL", "OTHER"]


class RouterOutput(BaseModel):
    """The intent of a question and the time window it restricts to, if any.

    Example:
        >>> RouterOutput.model_validate({"intent": "temporal", "time_window_start": "2023-05-01",
        ...                              "time_window_end": None}).intent
        'TEMPORAL'
    """

    model_config = ConfigDict(extra="ignore")

    intent: Intent = Field(description="COMPARE, BELIEF, TEMPORAL, DETAIL or OTHER.")
    time_window_start: str | None = Field(default=None, description="ISO date the question's window starts, or null.")
    time_window_end: str | None = Field(default=None, description="ISO date the question's window ends, or null.")

    @field_validator("intent", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.strip().upper() if isinstance(v, str) else v

    @field_validator("time_window_start", "time_window_end", mode="before")
    @classmethod
    def _iso(cls, v: Any) -> Any:
        v = _none_if_blank(v)
        return _check_iso(v) if isinstance(v, str) else v


#: Question -> intent and time window. Input variables: ``question`` and ``today`` (ISO date the
#: question is asked, used to resolve "last month"). Output: :class:`RouterOutput`.
ROUTER_PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "You route questions about a person's conversation history to the right memory search. Classify the "
            "question's intent:\n"
            '- COMPARE: compares people or things, or asks what they share ("What do Maya and Tom both like?").\n'
            '- BELIEF: asks what someone thinks, feels, prefers or believes ("What does Maya think of running?").\n'
            '- TEMPORAL: asks when something happened, how long ago, or in what order ("When did Tom move?").\n'
            '- DETAIL: asks for a specific fact or detail ("What is Tom\'s job?").\n'
            "- OTHER: anything else.\n"
            'If the question restricts to a period ("in May 2023", "last summer"), give its first and last day '
            "as ISO dates YYYY-MM-DD in time_window_start and time_window_end, resolving relative expressions "
            "against today's date; otherwise null. Reply with one JSON object: "
            '{{"intent": "...", "time_window_start": null, "time_window_end": null}}.',
        ),
        ("human", "Today is {today}.\nQuestion: {question}"),
    ]
)


class SufficiencyOutput(BaseModel):
    """Whether the evidence gathered so far answers the question."""

    model_config = ConfigDict(extra="ignore")

    sufficient: bool = Field(description="true if the evidence is enough to answer the question.")
    reason: str = Field(default="", description="One sentence: what answers it, or what is missing.")


#: Question + evidence -> is it enough? Input variables: ``question`` and ``evidence`` (one
#: item per line). Output: :class:`SufficiencyOutput`.
SUFFICIENCY_PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "You check whether retrieved memory is enough to answer a question. Judge only from the evidence "
            "given, not from world knowledge. An opinion in the evidence is only the opinion of the person who "
            "holds it. Answer sufficient=true only if the evidence states what the question asks; otherwise "
            "false, and say in reason what is missing (a person, a date, a detail). Reply with one JSON object: "
            '{{"sufficient": true, "reason": "..."}}.',
        ),
        ("human", "Question: {question}\n\nEvidence:\n{evidence}"),
    ]
)


# =========================================================================== parsing

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)


def parse_json_output(text: str, schema: type[ModelT]) -> ModelT:
    """Parse a model's text reply into ``schema``: for models without structured output.

    Strips ``<think>`` blocks and Markdown code fences (```` ```json ````), parses the JSON
    object (or the outermost ``{...}`` in surrounding prose), then validates it.

    Args:
        text: The reply text.
        schema: The pydantic model to validate against.

    Returns:
        The validated model.

    Raises:
        OutputParserException: If no JSON object can be read, or it does not match
            ``schema`` (a ``ValueError``); its ``observation`` says which, in words fit to
            show the model when asking again.

    Example:
        >>> parse_json_output('Sure! {"text": "Maya runs most weekends."}', ConsolidatedFactOutput).text
        'Maya runs most weekends.'
        >>> try:
        ...     parse_json_output("no idea", ConsolidatedFactOutput)
        ... except ValueError as exc:
        ...     print(type(exc).__name__, "-", exc.observation)
        OutputParserException - the reply holds no JSON object: 'no idea'
    """
    if not isinstance(text, str):
        raise _parse_error(f"expected the reply text as a str, got {type(text).__name__}", None)
    body = _THINK.sub("", text).strip()
    fenced = _FENCE.search(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as first:
        start, end = body.find("{"), body.rfind("}")
        opened = start != -1 and body[start + 1 :].lstrip()[:1] == '"'  # '{"events": ...' begun
        if start == -1 or (end <= start and not opened):
            raise _parse_error(f"the reply holds no JSON object: {text[:200]!r}", text) from None
        if end <= start:
            raise _parse_error("the reply's JSON object is cut off (it never closes): allow the model more output "
                               f"tokens or send fewer turns a call; it ends {text[-120:]!r}", text) from None
        try:
            data = json.loads(body[start : end + 1])
        except json.JSONDecodeError:
            raise _parse_error(f"the reply is not valid JSON: {first}", text) from None
    if not isinstance(data, dict):
        raise _parse_error(f"expected a JSON object, got a JSON {type(data).__name__}: {text[:200]!r}", text)
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise _parse_error(f"the JSON does not match {schema.__name__}: {exc}", text) from None


def _parse_error(message: str, llm_output: str | None) -> OutputParserException:
    """An ``OutputParserException`` whose ``observation`` is the bare message (to show a model)."""
    return OutputParserException(message, observation=message, llm_output=llm_output)
