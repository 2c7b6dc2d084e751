"""benchmarks/chitchat.py: pairs of people chosen by size, turned into LoCoMo's schema (a made-up corpus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langmem_cog.loaders import load_locomo


def _conversation(start: str, senders: list[str], n_groups: int) -> dict:
    groups = []
    for i in range(n_groups):
        sender = senders[i % len(senders)]
        groups.append([{"text": f"message {i} part one", "sender": sender, "timestamp": start},
                       {"text": "  ", "sender": sender, "timestamp": start},
                       {"text": "part two", "sender": sender, "timestamp": start}])
    return {"messages": groups, "prompt": "", "ratings": {}, "start": start}


@pytest.fixture
def corpus() -> dict:
    out = {}
    # the one eligible pair: 10 conversations, 45 turns each (450 turns), stored out of time order
    for day in range(10, 0, -1):
        out[f"ab-{day}"] = _conversation(f"2018-05-{day:02d}T13:05:00Z", ["b", "a"], 45)
    for day in range(1, 10):  # too few conversations
        out[f"ac-{day}"] = _conversation(f"2018-05-{day:02d}T09:00:00Z", ["a", "c"], 60)
    for day in range(1, 11):  # too few turns
        out[f"de-{day}"] = _conversation(f"2018-05-{day:02d}T09:00:00Z", ["d", "e"], 3)
    out["abc"] = _conversation("2018-05-01T09:00:00Z", ["a", "b", "c"], 500)  # three people
    return out


def test_only_pairs_of_the_right_size_are_chosen_and_sessions_follow_time(corpus: dict, benchmark_script) -> None:
    cc = benchmark_script("chitchat")
    samples = cc.conversations(corpus)
    assert [s["sample_id"] for s in samples] == ["cc-1"]
    sample = samples[0]
    assert sample["source_keys"] == [f"ab-{day}" for day in range(1, 11)]
    conv = sample["conversation"]
    assert (conv["speaker_a"], conv["speaker_b"]) == ("Avery", "Blake")  # sorted sender ids: a, b
    assert conv["session_1_date_time"] == "1:05 pm on 1 May, 2018"
    first = conv["session_1"][0]
    assert first == {"speaker": "Blake", "dia_id": "D1:1", "text": "message 0 part one part two"}
    assert len(conv["session_10"]) == 45 and "session_11" not in conv


def test_build_writes_a_file_the_locomo_loader_reads(corpus: dict, tmp_path: Path, benchmark_script) -> None:
    cc = benchmark_script("chitchat")
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps({"qa": [
        {"sample_id": "cc-1", "question": "What did Blake say first?", "answer": "message 0",
         "evidence": ["D1:1"], "category": 4}]}))
    out = tmp_path / "cc.json"
    assert cc.build(corpus, questions, out) == 1
    [conv] = load_locomo(out)
    assert len(conv.turns) == 450
    assert conv.qa[0]["evidence"] == ["D1:1"]


def test_build_refuses_evidence_that_is_no_turn(corpus: dict, tmp_path: Path, benchmark_script) -> None:
    cc = benchmark_script("chitchat")
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps({"qa": [
        {"sample_id": "cc-1", "question": "?", "answer": "", "evidence": ["D11:1"], "category": 4}]}))
    with pytest.raises(SystemExit, match="D11:1"):
        cc.build(corpus, questions, tmp_path / "cc.json")
    assert not (tmp_path / "cc.json").exists()
