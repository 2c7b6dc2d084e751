"""State statements: a turn that tells a state in other words is found for a question about that state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langmem_cog import CogMemConfig, CogMemRetriever
from langmem_cog.errors import InvalidInputError
from langmem_cog.memory import CogMemory
from langmem_cog.rank import slots
from langmem_cog.rank.cascade import Cascade
from langmem_cog.rank.features import CandidatePool
from langmem_cog.rank.questions import asked_state
from langmem_cog.rank.slots import STATE_FLOOR, STATE_STATEMENTS, STATE_WEIGHT, StateStatements, state_lift
from langmem_cog.records import make_turn

T0 = datetime(2024, 1, 1, 9, tzinfo=UTC)


def test_every_state_the_questions_name_has_statements() -> None:
    for question in ("Where does Jo live?", "What does Jo do for work?", "Which college is Jo at?",
                     "What does Jo drive?", "Is Jo vegetarian?", "Is Jo dating anyone?", "Does Jo have a dog?",
                     "Does Jo still smoke?"):
        state = asked_state(question)
        assert state is not None and state[0] in STATE_STATEMENTS, question


def test_match_is_a_z_score_of_the_asked_persons_turns_only_and_lifts_above_the_floor() -> None:
    statements = StateStatements.embed(DeterministicFakeEmbedding(size=16))
    vectors = np.asarray(DeterministicFakeEmbedding(size=16).embed_documents(
        ["I moved house.", "I moved house.", "Nice day.", "Lovely rain."]))
    score = statements.match("lives_in", vectors, np.array([True, False, True, True]))
    assert score[0] > 0 and score[1] == 0.0 and score[2] < 0  # the same text, but not the asked person's
    fused = np.array([1.0, 3.0, 5.0, 7.0])
    lift = state_lift(fused, np.array([STATE_FLOOR + 2.0, 0.0, -1.0, STATE_FLOOR]))
    assert lift.tolist() == pytest.approx([STATE_WEIGHT * np.std(fused) * 2.0, 0.0, 0.0, 0.0])
    assert statements.match("lives_in", vectors[:1], np.array([True])).tolist() == [0.0]  # one turn: no spread
    with pytest.raises(InvalidInputError, match="unknown"):
        statements.match("owns_boat", vectors, np.ones(4, dtype=bool))
    with pytest.raises(InvalidInputError, match="one flag per vector"):
        statements.match("lives_in", vectors, np.ones(3, dtype=bool))


def test_a_pool_rejects_misaligned_state_matches() -> None:
    turn = make_turn(id="t", namespace="n", speaker="Jo", text="hi", timestamp=T0)
    with pytest.raises(InvalidInputError, match="state matches"):
        CandidatePool(turns=[turn], dense=np.zeros(1), lexical=np.zeros(1), state_match=np.zeros(2))


FILLER = ["did you watch the match on sunday", "my sister says hi, she is baking bread again",
          "the weather here is miserable, rain all week", "i finally fixed the kitchen tap, only took two hours",
          "we should plan something for the holidays", "the dog ate a sock and survived, somehow",
          "reading a thriller about a lighthouse keeper", "coffee machine at the office broke again",
          "i started a pottery class on tuesday nights", "got a flu shot, arm is sore",
          "my phone screen cracked when i dropped it", "the new neighbours play drums at seven in the morning"]


def _move() -> list[tuple[int, str, str]]:
    """Nia tells of her flat without the word "live", and months later of her first night in a cottage."""
    rows = [(0, "Nia", "Got the keys to a little flat above the bakery on Church Street, I wake up to the smell of bread"),
            (0, "Cal", "Sounds lovely, I'd eat a loaf a day")]
    rows += [(30 * (1 + i // 4), "Cal" if i % 2 else "Nia", line) for i, line in enumerate(FILLER)]
    rows += [(200, "Nia", "First night in the cottage in Hexham done! Boxes everywhere and I can't find the kettle."),
             (200, "Cal", "Hexham! Send pictures of the garden")]
    return rows


def _memory(rows: list[tuple[int, str, str]], namespace: str) -> CogMemory:
    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    memory.add_turns([make_turn(id=f"t{i}", namespace=namespace, speaker=who, text=text,
                                timestamp=T0 + timedelta(days=day), position=i, session_id=f"s{day}")
                      for i, (day, who, text) in enumerate(rows)])
    return memory


def test_a_home_told_without_the_questions_words_answers_where_someone_lived(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _move()
    memory = _memory(rows, "move")
    new = f"t{len(rows) - 2}"
    cascade = Cascade(store=memory.store, memory=memory)
    pool, _ = cascade.candidates("move", "Where does Nia live now?")
    assert pool.state_match is not None
    at = {t.id: i for i, t in enumerate(pool.turns)}
    assert min(pool.state_match[at["t0"]], pool.state_match[at[new]]) > 1.0  # both homes, in other words
    assert pool.state_match[at["t1"]] == 0.0  # Cal's turn: not Nia's state
    assert cascade.candidates("move", "What did Nia read?")[0].state_match is None  # no state asked
    assert cascade.candidates("move", "Where does Nia live?")[0].state_match is not None  # the simple present: now
    assert cascade.candidates("move", "Where has Nia lived?")[0].state_match is None  # a history: no time asked
    assert cascade.candidates("move", "How does Nia feel about her new house?")[0].state_match is None  # a stance
    question = "Where was Nia living at first?"
    retriever = CogMemRetriever(memory=memory, namespace="move", k=5, now=T0 + timedelta(days=210))
    assert retriever.invoke(question)[0].metadata["turn_id"] == "t0"
    monkeypatch.setattr(slots, "STATE_WEIGHT", 0.0)  # without the statements another turn of Nia's leads
    plain = CogMemRetriever(memory=memory, namespace="move", k=5, now=T0 + timedelta(days=210))
    assert plain.invoke(question)[0].metadata["turn_id"] != "t0"
