"""Tests of the LoCoMo, LongMemEval and LangChain-message loaders."""

from __future__ import annotations

import copy
import gzip
import json
import logging
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langmem_cog.errors import InvalidInputError, InvalidNamespaceError
from langmem_cog.loaders import (
    load_locomo,
    load_longmemeval,
    locomo_turns,
    longmemeval_turns,
    message_turn_id,
    parse_locomo_date,
    parse_longmemeval_date,
    turns_from_messages,
)
from langmem_cog.records import MAX_TEXT_CHARS
from langmem_cog.store import TurnStore

SAMPLE = Path(__file__).resolve().parents[1] / "langmem_cog" / "data" / "sample_conversation.json"


# ---------------------------------------------------------------------- LoCoMo
@pytest.fixture(scope="module")
def sample():
    (conv,) = load_locomo(SAMPLE)
    return conv


class TestLoCoMoSample:
    def test_shape(self, sample):
        assert sample.sample_id == "demo-1"
        assert sample.speakers == ("Maya", "Leo")
        assert len(sample.turns) == 105
        assert len(sample.qa) == 14

    def test_ids_and_positions(self, sample):
        ids = [t.id for t in sample.turns]
        assert ids[:3] == ["D1:1", "D1:2", "D1:3"]
        assert ids[-1] == "D6:18"
        assert len(set(ids)) == len(ids)
        assert [t.position for t in sample.turns] == list(range(105))
        for t in sample.turns:
            session, _, _ = t.id[1:].partition(":")
            assert t.session_id == session

    def test_timestamps_aware_and_increasing(self, sample):
        stamps = [t.timestamp for t in sample.turns]
        assert all(s.tzinfo is not None and s.utcoffset() is not None for s in stamps)
        assert all(a < b for a, b in zip(stamps, stamps[1:], strict=False))
        assert stamps[0] == datetime(2023, 3, 14, 19, 42, tzinfo=UTC)
        assert stamps[1] - stamps[0] == timedelta(seconds=1)

    def test_namespace_and_metadata(self, sample):
        t = sample.turns[0]
        assert t.namespace == t.conversation_id == "demo-1"
        assert t.metadata["session_date"] == "7:42 pm on 14 March, 2023"
        assert t.speaker in sample.speakers

    def test_namespace_prefix(self):
        (conv,) = load_locomo(SAMPLE, namespace_prefix="tenant1.")
        assert {t.namespace for t in conv.turns} == {"tenant1.demo-1"}
        assert conv.turns[0].conversation_id == "demo-1"

    def test_qa_evidence_points_at_turns(self, sample):
        ids = {t.id for t in sample.turns}
        assert all(set(q["evidence"]) <= ids for q in sample.qa)


def tiny_locomo() -> dict:
    return {
        "sample_id": "conv-9",
        "conversation": {
            "speaker_a": "A",
            "speaker_b": "B",
            "session_10_date_time": "9:00 am on 2 January, 2024",
            "session_10": [{"speaker": "A", "dia_id": "D10:1", "text": "tenth session"}],
            "session_2_date_time": "1:56 pm on 8 May, 2023",
            "session_2": [
                {"speaker": "A", "dia_id": "D2:1", "text": "hello"},
                {"speaker": "B", "dia_id": "D2:2", "text": "", "blip_caption": "a photo of a dog"},
            ],
            "session_3": [],
        },
        "qa": [],
    }


class TestLoCoMoSynthetic:
    def test_sessions_sorted_numerically_and_captions_kept(self):
        turns = locomo_turns(tiny_locomo())
        assert [t.id for t in turns] == ["D2:1", "D2:2", "D10:1"]
        assert turns[1].text == "(no text)"
        assert turns[1].metadata["blip_caption"] == "a photo of a dog"
        assert turns[2].timestamp == datetime(2024, 1, 2, 9, 0, tzinfo=UTC)

    def test_gz_file(self, tmp_path):
        path = tmp_path / "locomo.json.gz"
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            json.dump([tiny_locomo()], fh)
        (conv,) = load_locomo(path)
        assert len(conv.turns) == 3

    def test_parse_locomo_date(self):
        assert parse_locomo_date("12:05 am on 1 February, 2024") == datetime(2024, 2, 1, 0, 5, tzinfo=UTC)
        with pytest.raises(InvalidInputError, match="yesterday"):
            parse_locomo_date("yesterday")

    @pytest.mark.parametrize(
        "mutate",
        [
            lambda r: r["conversation"].pop("session_2_date_time"),
            lambda r: r["conversation"].__setitem__("session_2_date_time", "8 May 2023"),
            lambda r: r.__setitem__("sample_id", "bad id/with slash"),
            lambda r: r.pop("conversation"),
            lambda r: r["conversation"]["session_2"][0].pop("dia_id"),
            lambda r: r["conversation"]["session_2"][0].pop("speaker"),
            lambda r: r["conversation"]["session_2"].__setitem__(0, "not a dict"),
            lambda r: r.__setitem__("conversation", ["not", "a", "dict"]),
        ],
        ids=["no-date", "bad-date", "bad-namespace", "no-conversation", "no-dia-id", "no-speaker",
             "turn-not-dict", "conversation-not-dict"],
    )
    def test_malformed_record_raises(self, tmp_path, mutate):
        rec = copy.deepcopy(tiny_locomo())
        mutate(rec)
        path = tmp_path / "bad.json"
        path.write_text(json.dumps([rec]), encoding="utf-8")
        with pytest.raises(InvalidInputError):
            load_locomo(path)

    @pytest.mark.parametrize(
        "content", [b"{not json", b'{"a": 1}', b"[1, 2]", b'"text"', b"\xff\xfe\x00garbage"],
        ids=["invalid-json", "not-a-list", "list-of-ints", "string", "binary"],
    )
    def test_malformed_file_raises(self, tmp_path, content):
        path = tmp_path / "bad.json"
        path.write_bytes(content)
        with pytest.raises(InvalidInputError):
            load_locomo(path)

    def test_missing_file_raises(self, tmp_path):
        with pytest.raises(InvalidInputError, match="does not exist"):
            load_locomo(tmp_path / "nope.json")

    def test_corrupt_gz_raises(self, tmp_path):
        path = tmp_path / "bad.json.gz"
        path.write_bytes(b"definitely not gzip")
        with pytest.raises(InvalidInputError):
            load_locomo(path)

    def test_non_dict_record_to_locomo_turns(self):
        with pytest.raises(InvalidInputError):
            locomo_turns(["not", "a", "record"])  # type: ignore[arg-type]


# ---------------------------------------------------------------------- LongMemEval
def lme_record(qid: str = "q_001") -> dict:
    return {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": "What did I name my dog?",
        "question_date": "2023/06/01 (Thu) 10:00",
        "answer": "Pickle",
        "answer_session_ids": ["s_b"],
        # listed out of date order on purpose
        "haystack_dates": ["2023/05/20 (Sat) 18:30", "2023/04/10 (Mon) 23:07"],
        "haystack_session_ids": ["s_b", "s_a"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "I adopted a dog and named her Pickle.", "has_answer": True},
                {"role": "assistant", "content": "What a lovely name!"},
            ],
            [
                {"role": "user", "content": "Can you suggest a pasta recipe?"},
                {"role": "assistant", "content": "   "},
                {"role": "assistant", "content": "Try cacio e pepe."},
            ],
        ],
    }


class TestLongMemEval:
    @pytest.mark.parametrize("suffix", [".json", ".json.gz"])
    def test_load(self, tmp_path, suffix):
        path = tmp_path / f"lme{suffix}"
        data = json.dumps([lme_record(), lme_record("q_002_abs")])
        if suffix.endswith(".gz"):
            with gzip.open(path, "wt", encoding="utf-8") as fh:
                fh.write(data)
        else:
            path.write_text(data, encoding="utf-8")
        q, q_abs = load_longmemeval(path)
        # sessions sorted by date: s_a (April) before s_b (May); the blank turn is skipped
        assert [t.id for t in q.turns] == ["s_a:0", "s_a:2", "s_b:0", "s_b:1"]
        assert [t.position for t in q.turns] == [0, 1, 2, 3]
        stamps = [t.timestamp for t in q.turns]
        assert all(a < b for a, b in zip(stamps, stamps[1:], strict=False))
        assert all(s.tzinfo is not None for s in stamps)
        assert q.gold_turn_ids == ["s_b:0"]
        assert q.answer_session_ids == ["s_b"]
        assert q.question_date == datetime(2023, 6, 1, 10, 0, tzinfo=UTC)
        assert [t.speaker for t in q.turns] == ["user", "assistant", "user", "assistant"]
        assert q.turns[0].namespace == "q_001" and q.turns[0].conversation_id == "q_001"
        assert not q.is_abstention
        assert q_abs.is_abstention and q_abs.question_id == "q_002_abs"

    def test_limit(self, tmp_path):
        path = tmp_path / "lme.json"
        path.write_text(json.dumps([lme_record("a1"), lme_record("a2"), lme_record("a3")]), encoding="utf-8")
        assert [q.question_id for q in load_longmemeval(path, limit=2)] == ["a1", "a2"]

    def test_a_session_listed_twice_is_kept_once_at_its_first_date(self):
        rec = lme_record()
        for key in ("haystack_dates", "haystack_session_ids", "haystack_sessions"):
            rec[key] = [*rec[key], rec[key][0]]
        rec["haystack_dates"][-1] = "2023/07/01 (Sat) 09:00"
        turns, _ = longmemeval_turns(rec)
        ids = [t.id for t in turns]
        assert len(ids) == len(set(ids)) == 4
        assert [t.position for t in turns] == [0, 1, 2, 3]

    def test_question_id_is_sanitised_into_a_namespace(self):
        turns, _ = longmemeval_turns(lme_record("q 1/2"))
        assert turns[0].namespace == "q_1_2"

    def test_parse_date(self):
        assert parse_longmemeval_date("2023/04/10 (Mon) 23:07") == datetime(2023, 4, 10, 23, 7, tzinfo=UTC)
        assert parse_longmemeval_date("2023/04/10 23:07").hour == 23
        with pytest.raises(InvalidInputError):
            parse_longmemeval_date("10 April 2023")

    @pytest.mark.parametrize(
        "mutate",
        [
            lambda r: r.__setitem__("haystack_dates", ["not a date", "2023/04/10 (Mon) 23:07"]),
            lambda r: r["haystack_dates"].pop(),
            lambda r: r.pop("haystack_sessions"),
            lambda r: r.pop("question_id"),
            lambda r: r.__setitem__("question_date", "soon"),
            lambda r: r["haystack_sessions"][0].__setitem__(0, "not a dict"),
        ],
        ids=["bad-date", "length-mismatch", "no-sessions", "no-question-id", "bad-question-date", "turn-not-dict"],
    )
    def test_malformed_record_raises(self, tmp_path, mutate):
        rec = lme_record()
        mutate(rec)
        path = tmp_path / "bad.json"
        path.write_text(json.dumps([rec]), encoding="utf-8")
        with pytest.raises(InvalidInputError):
            load_longmemeval(path)

    def test_not_a_list_raises(self, tmp_path):
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(lme_record()), encoding="utf-8")
        with pytest.raises(InvalidInputError, match="list"):
            load_longmemeval(path)

    def test_non_dict_record_raises(self, tmp_path):
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(["q_001"]), encoding="utf-8")
        with pytest.raises(InvalidInputError):
            load_longmemeval(path)


# ---------------------------------------------------------------------- LangChain messages
START = datetime(2024, 2, 1, 12, 0, tzinfo=UTC)


class TestMessages:
    def test_roles_skip_system_and_tool(self):
        msgs = [
            SystemMessage("You are helpful."),
            HumanMessage("I moved to Lisbon"),
            AIMessage("Nice! How do you like it?"),
            ToolMessage("tool output", tool_call_id="call-1"),
            HumanMessage("I love it"),
        ]
        turns = turns_from_messages(msgs, namespace="u1", start=START)
        assert [t.speaker for t in turns] == ["user", "assistant", "user"]
        assert [t.text for t in turns] == ["I moved to Lisbon", "Nice! How do you like it?", "I love it"]
        assert all(t.id.startswith("default:0:") for t in turns) and len({t.id for t in turns}) == 3
        assert [t.position for t in turns] == [0, 1, 2]
        assert [t.timestamp for t in turns] == [START + timedelta(seconds=i) for i in range(3)]
        assert {t.namespace for t in turns} == {"u1"}

    def test_options(self):
        msgs = [HumanMessage("hi", id="m-1"), AIMessage("hello", name="Bot"), HumanMessage("   ")]
        turns = turns_from_messages(
            msgs, namespace="u1", conversation_id="c7", session_id="s2", start=START,
            start_position=10, id_prefix="x-", speaker_names={"human": "Alice"},
        )
        assert turns[0].id == "m-1" and turns[1].id.startswith("x-")
        assert [t.speaker for t in turns] == ["Alice", "Bot"]
        assert [t.position for t in turns] == [10, 11]
        assert {(t.conversation_id, t.session_id) for t in turns} == {("c7", "s2")}

    def test_multimodal_content_keeps_the_text(self):
        msg = HumanMessage(content=[{"type": "text", "text": "look at this"},
                                    {"type": "image_url", "image_url": {"url": "http://x/y.png"}}])
        (turn,) = turns_from_messages([msg], namespace="u1", start=START)
        assert turn.text == "look at this"

    def test_default_start_is_now_and_aware(self):
        (turn,) = turns_from_messages([HumanMessage("hi")], namespace="u1")
        assert turn.timestamp.tzinfo is not None
        assert abs(datetime.now(UTC) - turn.timestamp) < timedelta(minutes=5)

    def test_naive_start_raises(self):
        with pytest.raises(InvalidInputError, match="naive"):
            turns_from_messages([HumanMessage("hi")], namespace="u1", start=datetime(2024, 1, 1))

    def test_bad_namespace_raises(self):
        with pytest.raises(InvalidNamespaceError):
            turns_from_messages([HumanMessage("hi")], namespace="../x", start=START)

    @pytest.mark.parametrize(
        "messages", ["a string", b"bytes", 42, [42], [None], [b"hi"], [{"foo": 1}], [("bogus", "hi")], [("a", "b", "c")]]
    )
    def test_malformed_messages_raise(self, messages):
        with pytest.raises(InvalidInputError, match="message"):
            turns_from_messages(messages, namespace="u1", start=START)

    def test_twice_on_one_namespace_gives_new_ids(self, fake_store: TurnStore, ns: str):
        # Issue 20, defect 4: default ids restarted at default:0:0 and the second add raised DuplicateTurnError.
        msgs = [HumanMessage("I moved to Lisbon"), AIMessage("Nice!")]
        first = turns_from_messages(msgs, namespace=ns, start=START)
        second = turns_from_messages(msgs, namespace=ns, start=START)
        assert fake_store.add_turns(first) and fake_store.add_turns(second)
        assert fake_store.count(ns) == 4
        ids = [t.id for t in first + second]
        assert len(set(ids)) == 4 and all(uuid.UUID(i.removeprefix("default:0:")) for i in ids)

    def test_a_message_id_is_the_turn_id(self):
        (turn,) = turns_from_messages([HumanMessage("hi", id="run-7")], namespace="u1", start=START)
        assert turn.id == "run-7" == message_turn_id("run-7")
        (odd,) = turns_from_messages([HumanMessage("hi", id="x" * 300)], namespace="u1", start=START)
        assert odd.id == message_turn_id("x" * 300) and odd.id.startswith("msg-")

    def test_accepts_what_langchain_accepts(self):
        msgs = [("user", "I moved to Lisbon"), {"role": "assistant", "content": "Nice!", "id": "a-1"},
                "I love it", ("system", "be brief"), {"role": "tool", "content": "x", "tool_call_id": "c"},
                ["human", "And the food"]]
        turns = turns_from_messages(msgs, namespace="u1", start=START)
        assert [(t.speaker, t.text) for t in turns] == [("user", "I moved to Lisbon"), ("assistant", "Nice!"),
                                                       ("user", "I love it"), ("user", "And the food")]
        assert turns[1].id == "a-1"

    def test_long_text_becomes_several_turns_keeping_the_message_id(self, caplog):
        text = "word " * 50_000  # 250,000 characters
        with caplog.at_level(logging.WARNING, logger="langmem_cog.loaders"):
            turns = turns_from_messages([HumanMessage(text, id="m1"), AIMessage("ok", id="m2")], namespace="u1",
                                        start=START, start_position=5)
        assert [t.id for t in turns] == ["m1#1", "m1#2", "m1#3", "m2"]
        assert all(len(t.text) <= MAX_TEXT_CHARS for t in turns)
        assert " ".join(t.text for t in turns[:3]) == text.strip()
        assert [t.metadata.get("part") for t in turns] == [1, 2, 3, None]
        assert [t.position for t in turns] == [5, 6, 7, 8]
        assert "stored as 3 turns" in caplog.text

    def test_unstorable_characters_are_removed_with_a_warning(self, caplog):
        with caplog.at_level(logging.WARNING, logger="langmem_cog.loaders"):
            turns = turns_from_messages([HumanMessage("a\x00b\ud800c", id="n1"), HumanMessage("\x00")],
                                        namespace="u1", start=START)
        assert [t.text for t in turns] == ["abc"]
        assert "removed 2 characters" in caplog.text

    def test_speaker_names_without_letters_get_their_code_points(self, caplog):
        with caplog.at_level(logging.WARNING, logger="langmem_cog.loaders"):
            turns = turns_from_messages([HumanMessage("hi", name="!!!"), HumanMessage("yo"), AIMessage("hey")],
                                        namespace="u1", start=START, speaker_names={"human": "🙂"})
        assert [t.speaker for t in turns] == ["!!! (U+0021 U+0021 U+0021)", "🙂 (U+1F642)", "assistant"]
        assert "stored as '🙂 (U+1F642)'" in caplog.text

    def test_empty(self):
        assert turns_from_messages([], namespace="u1", start=START) == []
