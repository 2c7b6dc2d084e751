"""Tests of the Turn record: validation, error types and messages, memory text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from langmem_cog.errors import InvalidInputError, InvalidNamespaceError, LangMemCogError
from langmem_cog.graph.resolve import normalize_name
from langmem_cog.records import (
    MAX_TEXT_CHARS,
    Turn,
    make_turn,
    nameable,
    split_text,
    storable_speaker,
    storable_text,
    validate_namespace,
)

TS = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def fields(**overrides):
    base = dict(id="t1", namespace="alice", speaker="Ann", text="I adopted a puppy", timestamp=TS)
    base.update(overrides)
    return base


class TestValidTurn:
    def test_defaults_are_filled_in(self):
        t = make_turn(**fields())
        assert (t.conversation_id, t.session_id, t.position, t.metadata) == ("default", "0", 0, {})

    def test_memory_text_is_speaker_colon_text(self):
        t = make_turn(**fields(speaker="Caroline", text="I went to a support group."))
        assert t.memory_text == "Caroline: I went to a support group."

    def test_speaker_is_stripped(self):
        assert make_turn(**fields(speaker="  Ann  ")).memory_text == "Ann: I adopted a puppy"

    def test_non_utc_timezone_is_kept(self):
        tz = timezone(timedelta(hours=5, minutes=30))
        t = make_turn(**fields(timestamp=datetime(2024, 1, 1, 9, tzinfo=tz)))
        assert t.timestamp.utcoffset() == timedelta(hours=5, minutes=30)

    def test_text_of_exactly_max_chars_is_accepted(self):
        assert len(make_turn(**fields(text="a" * MAX_TEXT_CHARS)).text) == MAX_TEXT_CHARS

    def test_turn_is_frozen(self):
        t = make_turn(**fields())
        with pytest.raises(ValidationError):
            t.text = "changed"  # type: ignore[misc]

    def test_scalar_metadata_is_accepted(self):
        meta = {"s": "x", "i": 1, "f": 1.5, "b": True}
        assert make_turn(**fields(metadata=meta)).metadata == meta

    @pytest.mark.parametrize("ns", ["a", "user-42", "u_1.x:y@z", "A" * 128, "0abc"])
    def test_valid_namespaces(self, ns):
        assert validate_namespace(ns) == ns
        assert make_turn(**fields(namespace=ns)).namespace == ns


class TestInvalidTurn:
    @pytest.mark.parametrize(
        ("overrides", "field_name"),
        [
            ({"timestamp": datetime(2024, 1, 1, 12, 0)}, "timestamp"),
            ({"text": ""}, "text"),
            ({"text": "   \n\t "}, "text"),
            ({"text": "hello\x00world"}, "text"),
            ({"text": "a" * (MAX_TEXT_CHARS + 1)}, "text"),
            ({"id": ""}, "id"),
            ({"id": "   "}, "id"),
            ({"id": "a\nb"}, "id"),
            ({"id": "a\x7fb"}, "id"),
            ({"id": "x" * 257}, "id"),
            ({"session_id": "s\t1"}, "session_id"),
            ({"conversation_id": "c\x01"}, "conversation_id"),
            ({"speaker": ""}, "speaker"),
            ({"speaker": "An\nn"}, "speaker"),
            ({"speaker": "!!!"}, "speaker"),
            ({"speaker": "🙂"}, "speaker"),
            ({"speaker": "—"}, "speaker"),
            ({"position": -1}, "position"),
            ({"metadata": {"k": [1, 2]}}, "metadata"),
        ],
    )
    def test_make_turn_names_the_bad_field(self, overrides, field_name):
        with pytest.raises(InvalidInputError) as info:
            make_turn(**fields(**overrides))
        assert field_name in str(info.value)
        assert isinstance(info.value, ValueError)
        assert isinstance(info.value, LangMemCogError)

    def test_naive_timestamp_message_says_how_to_fix(self):
        with pytest.raises(InvalidInputError, match="naive"):
            make_turn(**fields(timestamp=datetime(2024, 1, 1)))

    def test_too_long_text_message_gives_the_limit(self):
        with pytest.raises(InvalidInputError, match=str(MAX_TEXT_CHARS)):
            make_turn(**fields(text="a" * (MAX_TEXT_CHARS + 1)))

    def test_missing_field_is_named(self):
        f = fields()
        del f["speaker"]
        with pytest.raises(InvalidInputError, match="speaker"):
            make_turn(**f)

    def test_extra_field_is_rejected(self):
        with pytest.raises(InvalidInputError, match="colour"):
            make_turn(**fields(colour="red"))

    def test_message_names_the_turn_id(self):
        with pytest.raises(InvalidInputError, match="'my-id'"):
            make_turn(**fields(id="my-id", text=""))

    @pytest.mark.parametrize(
        "ns",
        ["", " ", "a b", "../x", "/etc", "x/y", "-lead", ".hidden", "A" * 129, "tab\tns", "nul\x00", "é"],
    )
    def test_bad_namespace_strings(self, ns):
        with pytest.raises(InvalidNamespaceError) as info:
            make_turn(**fields(namespace=ns))
        assert "namespace" in str(info.value)
        assert isinstance(info.value, InvalidInputError)
        assert isinstance(info.value, ValueError)
        with pytest.raises(InvalidNamespaceError):
            validate_namespace(ns)

    @pytest.mark.parametrize("ns", [None, 42, b"bytes", ["a"]])
    def test_non_str_namespace(self, ns):
        with pytest.raises(InvalidNamespaceError):
            validate_namespace(ns)

    @pytest.mark.parametrize("ns", [42, b"bytes", ["a"]])
    def test_make_turn_with_non_str_namespace(self, ns):
        with pytest.raises(InvalidInputError, match="namespace"):
            make_turn(**fields(namespace=ns))

    def test_make_turn_with_none_namespace(self):
        with pytest.raises(InvalidInputError, match="namespace"):
            make_turn(**fields(namespace=None))

    def test_direct_construction_raises_pydantic_validation_error(self):
        # Turn(...) itself raises pydantic's error, which is also a ValueError.
        with pytest.raises(ValueError):
            Turn(**fields(text=""))


class TestSpeakersTheGraphCanKey:
    """Issue 20, defect 3: a speaker without letters or digits was stored, then every write failed."""

    @pytest.mark.parametrize("speaker", ["🙂", "!!!", "—", "...", "_", "\u0301", "🙂 🙃"])
    def test_is_refused_at_the_door_with_a_fix(self, speaker):
        with pytest.raises(InvalidInputError, match="no letters or digits") as info:
            make_turn(**fields(speaker=speaker))
        assert "storable_speaker" in str(info.value)
        assert make_turn(**fields(speaker=storable_speaker(speaker))).speaker == storable_speaker(speaker)

    @pytest.mark.parametrize(
        "name", ["Ann", "Zoë", "Montréal", "R2-D2", "李雷", "①", "ℌ", "Mel's", "'s", "The", "🙂", "!!!", "—", "_", " ", "x_"]
    )
    def test_nameable_agrees_with_the_graph(self, name):
        assert nameable(name) == bool(normalize_name(name))

    def test_storable_speaker(self):
        assert storable_speaker("  Ann ") == "Ann"
        assert storable_speaker("🙂") == "🙂 (U+1F642)" != storable_speaker("🙃")
        assert storable_speaker("!!!") == "!!! (U+0021 U+0021 U+0021)"
        assert storable_speaker("\x01\x02", default="assistant") == "assistant"
        assert storable_speaker(None) == "user"
        assert len(storable_speaker("a" * 500)) == 256
        assert len(storable_speaker("!" * 500)) < 256


class TestStorableText:
    def test_storable_text_removes_nul_and_lone_surrogates(self):
        assert storable_text("a\x00b\udc80c\n") == "abc\n"

    def test_split_text_cuts_at_whitespace_within_the_limit(self):
        text = "alpha beta gamma delta"
        assert split_text(text, limit=11) == ["alpha beta", "gamma delta"]
        assert split_text("x" * 25, limit=10) == ["x" * 10, "x" * 10, "x" * 5]
        assert split_text("fits", limit=10) == ["fits"] and split_text("   ", limit=10) == []
        with pytest.raises(InvalidInputError):
            split_text("x", limit=0)


@pytest.mark.parametrize("bad", ["alice\n", "alice\r\n"])
def test_a_trailing_newline_is_no_namespace(bad) -> None:
    with pytest.raises(InvalidNamespaceError):
        validate_namespace(bad)


def test_a_trailing_newline_is_no_turn_id() -> None:
    with pytest.raises(InvalidInputError, match="id"):
        make_turn(**fields(id="t1\n"))
