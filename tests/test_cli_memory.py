"""The memory-management commands of the CLI: ``ingest``, ``list``, ``forget``, ``search --system``,
``--version``, and their error messages (one line on stderr naming the option, exit code 2 for usage
errors, 1 for a namespace ``forget`` cannot find, never a traceback).

Every store is built over the fake embedder (no model is loaded), except the ``--version`` check in
a subprocess, which loads nothing.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from fakes import FakeEmbeddings

from langmem_cog.cli import build_parser, main
from langmem_cog.config import CogMemConfig
from langmem_cog.store import TurnStore

SAMPLE = Path(__file__).resolve().parents[1] / "langmem_cog" / "data" / "sample_conversation.json"

CHAT = [
    {"role": "user", "content": "I adopted a beagle named Pickle last week", "timestamp": "2024-05-01T09:30:00Z"},
    {"role": "assistant", "content": "Congratulations! Beagles are lovely dogs."},
    {"speaker": "Maya", "text": "I started training for a half marathon", "session": "2", "id": "m-1"},
]


@pytest.fixture(autouse=True)
def fake_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every store the CLI builds gets the fake embedder (no model is loaded)."""
    monkeypatch.setattr("langmem_cog.embeddings.resolve_embedder", lambda *a, **k: FakeEmbeddings())
    monkeypatch.delenv("LANGMEM_COG_CHROMA_URL", raising=False)
    monkeypatch.delenv("LANGMEM_COG_RETRIEVAL", raising=False)


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str, *needles: str) -> None:
    """``err`` holds one ``langmem-cog: error:`` line with every needle (progress bars aside), no traceback."""
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("langmem-cog: error:")]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_ingest_list_search_forget_a_jsonl_chat(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chat = write_jsonl(tmp_path / "chat.jsonl", CHAT)
    store = tmp_path / "store"
    code, out, err = run(["ingest", str(chat), "--namespace", "user-42", "--data-dir", str(store)], capsys)
    assert code == 0, err
    assert "user-42: 3 turns ingested" in out and "(jsonl)" in out
    assert "ingest user-42" in err  # the progress bar, on stderr

    code, out, _ = run(["list", "--data-dir", str(store)], capsys)
    assert code == 0
    assert any(ln.split() == ["user-42", "3"] for ln in out.splitlines()), out
    assert "1 namespace, 3 turns in" in out
    assert run(["list", "--data-dir", str(store), "--json"], capsys)[1].strip() == \
        json.dumps([{"namespace": "user-42", "turns": 3}])

    code, out, _ = run(["search", "--data-dir", str(store), "--namespace", "user-42", "--system", "hybrid", "-k", "1",
                        "beagle named Pickle"], capsys)
    assert code == 0
    assert "user: I adopted a beagle named Pickle last week" in out and out.count("score") == 1

    # ingesting the same file again adds nothing (ids are stable)
    code, out, _ = run(["ingest", str(chat), "--namespace", "user-42", "--data-dir", str(store)], capsys)
    assert code == 0 and "user-42: 0 turns ingested, 3 already stored (skipped)" in out

    code, out, _ = run(["forget", "user-42", "--data-dir", str(store)], capsys)
    assert code == 0
    assert "forgot namespace 'user-42': 3 turns" in out and str(store.resolve()) in out
    code, out, _ = run(["list", "--data-dir", str(store)], capsys)
    assert code == 0 and "user-42" not in out and "no namespaces" in out

    code, _, err = run(["forget", "user-42", "--data-dir", str(store)], capsys)
    assert code == 1
    assert_one_line_error(err, "namespace 'user-42' does not exist", "NAMESPACE", "--data-dir", "langmem-cog list")


def test_jsonl_turn_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"role": "system", "content": "be brief"}, "", *CHAT, {"role": "human", "content": "and a cat"}]
    chat = write_jsonl(tmp_path / "chat.jsonl", rows)
    code, out, err = run(["ingest", str(chat), "--namespace", "u1", "--data-dir", str(tmp_path / "s")], capsys)
    assert code == 0, err
    assert "u1: 4 turns ingested" in out and "skipped 1 system/tool line " in out
    turns = TurnStore(CogMemConfig(data_dir=tmp_path / "s"), embeddings=FakeEmbeddings()).get_turns("u1")
    assert [t.speaker for t in turns] == ["user", "assistant", "Maya", "user"]
    assert [t.session_id for t in turns] == ["0", "0", "2", "0"]
    assert [t.position for t in turns] == [0, 1, 2, 3]
    assert turns[2].id == "m-1" and turns[0].id.startswith("line3-")
    # a line without a timestamp: the previous line's plus a second
    assert [t.timestamp.isoformat() for t in turns] == [
        "2024-05-01T09:30:00+00:00", "2024-05-01T09:30:01+00:00", "2024-05-01T09:30:02+00:00",
        "2024-05-01T09:30:03+00:00"]


def test_the_same_line_of_another_days_file_is_another_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def day(d: int, said: str) -> list[object]:
        return [{"role": "user", "content": "Good morning!", "timestamp": f"2024-05-0{d}T09:00:00Z"},
                {"role": "user", "content": said, "timestamp": f"2024-05-0{d}T09:01:00Z"}]

    store = ["--namespace", "daily", "--data-dir", str(tmp_path / "s")]
    d1 = write_jsonl(tmp_path / "d1.jsonl", day(1, "I bought a red bike."))
    d2 = tmp_path / "d2.jsonl"
    d2.write_text("\ufeff" + "".join(json.dumps(r) + "\n" for r in day(2, "I sold the red bike.")), encoding="utf-8")
    assert run(["ingest", str(d1), *store], capsys)[0] == 0
    code, out, err = run(["ingest", str(d2), *store], capsys)  # a byte-order mark is not content
    assert code == 0, err
    assert "daily: 2 turns ingested" in out and "skipped" not in out
    for f in (d1, d2):  # each file again: nothing new
        code, out, _ = run(["ingest", str(f), *store], capsys)
        assert "daily: 0 turns ingested, 2 already stored (skipped)" in out
    turns = TurnStore(CogMemConfig(data_dir=tmp_path / "s"), embeddings=FakeEmbeddings()).get_turns("daily")
    assert sorted((t.timestamp.day, t.text) for t in turns) == [
        (1, "Good morning!"), (1, "I bought a red bike."), (2, "Good morning!"), (2, "I sold the red bike.")]
    assert len({t.id for t in turns}) == 4 and [t.position for t in sorted(turns, key=lambda t: t.timestamp)] == [0, 1, 2, 3]


def test_jsonl_without_namespace_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chat = write_jsonl(tmp_path / "chat.jsonl", CHAT)
    code, out, err = run(["ingest", str(chat), "--data-dir", str(tmp_path / "s")], capsys)
    assert code == 2 and out == ""
    assert_one_line_error(err, "--namespace is required for a JSONL file")
    assert not (tmp_path / "s").exists()  # nothing was written


@pytest.mark.parametrize(
    ("bad_line", "needles"),
    [
        ('{"role": "user", "content": ', ("line 2", "not valid JSON")),
        ('["user", "hello"]', ("line 2", "expected a JSON object", "got a list")),
        ('{"role": "user"}', ("line 2", "'content' (or 'text')")),
        ('{"content": "hi"}', ("line 2", "'role' or 'speaker'")),
        ('{"role": "user", "content": "hi", "timestamp": "last tuesday"}', ("line 2", "not ISO 8601")),
        ('{"role": "user", "content": "hi", "id": "m-1"}', ("line 2", "'m-1'", "line 1")),
        ('{"role": "robot", "content": "beep"}', ("line 2", "unknown role 'robot'", "user/human",
                                                  '"speaker": "robot"')),
    ],
)
def test_a_malformed_jsonl_line_is_named(bad_line: str, needles: tuple[str, ...], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    chat = write_jsonl(tmp_path / "chat.jsonl", [{"role": "user", "content": "hello", "id": "m-1"}, bad_line])
    code, _, err = run(["ingest", str(chat), "--namespace", "u1", "--data-dir", str(tmp_path / "s")], capsys)
    assert code == 2
    assert_one_line_error(err, "chat.jsonl", *needles)
    assert not (tmp_path / "s").exists()  # a bad line fails the file before anything is written


@pytest.mark.parametrize(
    ("rows", "needles"),
    [
        ([{"role": "user", "content": "hi", "timestamp": "9999-12-31T23:59:59Z"}, {"role": "user", "content": "later"}],
         ("line 2", "no timestamp", "previous line's")),
        ([{"role": "user", "content": "first"}, {"role": "user", "content": "hi", "timestamp": "0001-01-01T00:00:00Z"}],
         ("line 1", "no timestamp", "next line's")),
    ],
)
def test_an_undated_line_beside_the_last_time_there_is_is_named(rows: list[object], needles: tuple[str, ...],
                                                                 tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    chat = write_jsonl(tmp_path / "chat.jsonl", rows)
    code, _, err = run(["ingest", str(chat), "--namespace", "u1", "--data-dir", str(tmp_path / "s")], capsys)
    assert code == 2
    assert_one_line_error(err, "chat.jsonl", *needles)
    assert not (tmp_path / "s").exists()  # nothing was written


def test_ingest_locomo_and_longmemeval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = json.loads(SAMPLE.read_text(encoding="utf-8"))[0]
    other = copy.deepcopy(rec)
    other["sample_id"] = "demo-2"
    two = tmp_path / "two.json"
    two.write_text(json.dumps([rec, other]), encoding="utf-8")
    store = str(tmp_path / "s")
    code, _, err = run(["ingest", str(two), "--namespace", "mine", "--data-dir", store], capsys)
    assert code == 2
    assert_one_line_error(err, "--namespace", "2 conversations", "--conversation")
    code, _, err = run(["ingest", str(two), "--conversation", "nope", "--data-dir", store], capsys)
    assert code == 2
    assert_one_line_error(err, "--conversation 'nope'", "demo-1, demo-2")
    code, out, err = run(["ingest", str(two), "--conversation", "demo-2", "--namespace", "mine", "--no-graph",
                          "--data-dir", store], capsys)
    assert code == 0, err
    assert "mine: 105 turns ingested" in out and "(locomo)" in out

    lme = [{"question_id": f"q{i}", "question_type": "single-session-user", "question": "What dog?",
            "question_date": "2023/05/30 (Tue) 10:00", "answer": "beagle",
            "haystack_dates": ["2023/05/20 (Sat) 10:00"], "haystack_session_ids": [f"s{i}"],
            "haystack_sessions": [[{"role": "user", "content": "I got a beagle", "has_answer": True},
                                   {"role": "assistant", "content": "Nice"}]]} for i in (1, 2)]
    lme_file = tmp_path / "lme.json"
    lme_file.write_text(json.dumps(lme), encoding="utf-8")
    code, out, err = run(["ingest", str(lme_file), "--question-id", "q2", "--data-dir", store], capsys)
    assert code == 0, err
    assert "q2: 2 turns ingested" in out and "(longmemeval)" in out
    code, _, err = run(["ingest", str(lme_file), "--conversation", "q1", "--data-dir", store], capsys)
    assert code == 2
    assert_one_line_error(err, "--conversation applies to locomo files only")

    out = run(["list", "--data-dir", store, "--json"], capsys)[1]
    assert json.loads(out) == [{"namespace": "mine", "turns": 105}, {"namespace": "q2", "turns": 2}]
    code, out, _ = run(["forget", "mine", "--turn", "D1:1", "--turn", "nope", "--data-dir", store], capsys)
    assert code == 0 and "forgot 1 of the 2 --turn ids" in out and "104 turns left" in out


def test_search_system_maps_to_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chat = write_jsonl(tmp_path / "chat.jsonl", CHAT)
    store = str(tmp_path / "s")
    assert run(["ingest", str(chat), "--namespace", "u1", "--data-dir", store], capsys)[0] == 0
    code, _, err = run(["search", "--data-dir", store, "--namespace", "u1", "--system", "full", "--mode", "hybrid",
                        "dog"], capsys)
    assert code == 2
    assert_one_line_error(err, "--system full and --mode hybrid disagree", "--mode cascade")
    # agreeing options are fine
    code, out, _ = run(["search", "--data-dir", store, "--namespace", "u1", "--system", "hybrid", "--mode", "hybrid",
                        "-k", "2", "marathon training"], capsys)
    assert code == 0 and "Maya: I started training for a half marathon" in out
    code, _, err = run(["search", "--data-dir", store, "--namespace", "nobody", "--system", "hybrid", "hi"], capsys)
    assert code == 2
    assert_one_line_error(err, "namespace 'nobody' holds no turns", "--namespace", "langmem-cog list")
    assert "TurnStore" not in err  # the CLI names its own options, not Python APIs
    for argv, needles in ((["--now", "notadate"], ("--now 'notadate'", "2023-05-08")),
                          (["--trace", "--max-steps", "1"], ("--max-steps 1", "at least 2"))):
        code, _, err = run(["search", "--data-dir", store, "--namespace", "u1", *argv, "dog"], capsys)
        assert code == 2
        assert_one_line_error(err, *needles)


@pytest.mark.parametrize(("system", "mode"), [("hybrid", "hybrid"), ("full", "cascade")])
def test_search_system_runs_the_named_mode(system: str, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    seen: dict[str, object] = {}

    class SpyRetriever:
        def __init__(self, **kwargs: object) -> None:
            seen.update(kwargs)

        def invoke(self, query: str) -> list[object]:
            return []

    chat = write_jsonl(tmp_path / "chat.jsonl", CHAT)
    store = str(tmp_path / "s")
    assert run(["ingest", str(chat), "--namespace", "u1", "--data-dir", store], capsys)[0] == 0
    monkeypatch.setattr("langmem_cog.CogMemRetriever", SpyRetriever)
    assert run(["search", "--data-dir", store, "--namespace", "u1", "--system", system, "dog"], capsys)[0] == 0
    assert seen["mode"] == mode and seen["namespace"] == "u1"


def _doc(turn_id: str, score: float, *, rerank: float | None = None, claim: str | None = None,
         placed_by: str | None = None, state: str | None = None) -> object:
    from langchain_core.documents import Document

    meta = {"turn_id": turn_id, "timestamp": "2024-05-01T09:30:00+00:00", "speaker": "Maya", "stage": "raw+graph",
            "score": score, "reranked": rerank is not None,
            "relevance_score": rerank if rerank is not None else -9.0}  # the compressor's tail gets a stand-in
    if claim:
        meta["claim_status"] = claim
    if placed_by:
        meta["placed_by"] = placed_by
    if state:
        meta["fact_status"] = state
    return Document(page_content=f"Maya: turn {turn_id}", metadata=meta)


@pytest.mark.parametrize(
    ("docs", "notes"),
    [  # the claim rule put the current claim first and the superseded one after it
        ([_doc("t5", 0.1, rerank=0.167, claim="CURRENT"), _doc("t4", 0.9, rerank=1.804),
          _doc("t1", 0.5, rerank=0.553, claim="SUPERSEDED"), _doc("t9", 0.7)],
         ["(#3 by score; placed by the claim rule)", "(#1 by score)", "(#2 by score; placed by the claim rule)", ""]),
        # in score order (a tail after the reranked head, scored by the first stage): nothing to explain
        ([_doc("t4", 0.9, rerank=1.804), _doc("t5", 0.1, rerank=0.167, claim="CURRENT"), _doc("t9", 0.7)],
         ["", "", ""]),
        # a person's later word on the matter, placed first from below the head
        ([_doc("t8", 0.2, placed_by="later_word"), _doc("t4", 0.9, rerank=1.804), _doc("t5", 0.1, rerank=0.167)],
         ["(#3 by score; placed as the later word)", "(#1 by score)", "(#2 by score)"]),
        # the holder's reaction to someone else's news, placed first
        ([_doc("t7", 0.3, placed_by="reaction"), _doc("t4", 0.9, rerank=1.804)],
         ["(#2 by score; placed as the reaction)", "(#1 by score)"]),
        # hybrid search's first place, the holder's own opinion, kept first
        ([_doc("t3", 0.4, placed_by="hybrid_stance"), _doc("t4", 0.9, rerank=1.804)],
         ["(#2 by score; placed as hybrid's stance)", "(#1 by score)"]),
        # the graph's value of the state asked about, placed first; the old value's turn says it was replaced
        ([_doc("t6", 0.2, placed_by="state_value", state="CURRENT"), _doc("t2", 0.9, rerank=1.2, state="SUPERSEDED")],
         ["(#2 by score; placed as the state's value)", "(#1 by score)"]),
    ],
)
def test_search_rows_show_rank_speaker_claim_status_and_moves(docs: list[object], notes: list[str], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    class SpyRetriever:
        def __init__(self, **kwargs: object) -> None:
            pass

        def invoke(self, query: str) -> list[object]:
            return docs

    chat = write_jsonl(tmp_path / "chat.jsonl", CHAT)
    store = str(tmp_path / "s")
    assert run(["ingest", str(chat), "--namespace", "u1", "--data-dir", store], capsys)[0] == 0
    monkeypatch.setattr("langmem_cog.CogMemRetriever", SpyRetriever)
    code, out, _ = run(["search", "--data-dir", store, "--namespace", "u1", "--system", "full", "running"], capsys)
    assert code == 0
    rows = [ln for ln in out.splitlines() if ln.lstrip()[:1].isdigit()]
    assert len(rows) == len(docs)
    for rank, (row, doc, note) in enumerate(zip(rows, docs, notes, strict=True), 1):
        m = doc.metadata
        assert row.startswith(f"{rank:>3}. [{m['turn_id']}] ") and "  Maya" in row and "raw+graph" in row
        assert ("[CURRENT]" in row or "[SUPERSEDED]" in row) == ("claim_status" in m)
        assert "claim_status" not in m or f"  Maya  [{m['claim_status']}]  " in row
        assert ("[state " in row) == ("fact_status" in m) and ("fact_status" not in m or f"[state {m['fact_status']}]" in row)
        # a reranked turn shows the score that ordered it; the tail, its first-stage score (never the stand-in)
        assert (f"rerank {m['relevance_score']:.3f}" if m["reranked"] else f"score {m['score']:.3f}") in row
        assert row.endswith(note) and ("by score" in row) == bool(note)
    assert ("claim rule: the cascade puts a current claim before the claim it superseded" in out) == \
        any("claim rule" in n for n in notes)
    assert ("later word: for a question about a state now" in out) == any("later word" in n for n in notes)
    assert ("reaction: for a question about what a named person thinks" in out) == any("reaction" in n for n in notes)
    assert ("state's value: for a question about a person's state" in out) == any("state's value" in n for n in notes)


def test_trace_loads_the_models_before_the_traced_query(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from langmem_cog.graph.loop import GraphRetrieval
    from langmem_cog.graph.operators import node_text

    embedder = FakeEmbeddings()
    monkeypatch.setattr("langmem_cog.embeddings.resolve_embedder", lambda *a, **k: embedder)
    chat = write_jsonl(tmp_path / "chat.jsonl", CHAT)
    store = str(tmp_path / "s")
    assert run(["ingest", str(chat), "--namespace", "u1", "--data-dir", store], capsys)[0] == 0
    seen: dict[str, int] = {}
    real_run = GraphRetrieval.run

    def spy_run(self: GraphRetrieval, namespace: str, query: str, **kwargs: object) -> object:
        # When the traced query starts, the embedder has run and every node text has its vector.
        G = self.memory.graph(namespace)
        seen.update(calls=embedder.calls, nodes=len(G),
                    unembedded=self.memory.node_vectors.warm(node_text(G, n) for n in G.nodes))
        return real_run(self, namespace, query, **kwargs)

    monkeypatch.setattr(GraphRetrieval, "run", spy_run)
    embedder.calls = 0
    code, out, err = run(["search", "--data-dir", store, "--namespace", "u1", "--trace", "half marathon"], capsys)
    assert code == 0, err
    assert seen["calls"] > 0 and seen["nodes"] > 0 and seen["unembedded"] == 0
    lines = out.splitlines()
    # `ingest` runs plain retrieval: the first search embeds the node texts and stores them beside the graph.
    assert lines[0].startswith("models loaded in ") and f"{seen['nodes']} graph node texts ready" in lines[0]
    assert f"(0 read from disk, {seen['nodes']} embedded;" in lines[0]
    assert lines[1].startswith("intent: ") and any(ln.startswith("step 1 ") for ln in lines)
    embedder.calls = 0
    code, out, err = run(["search", "--data-dir", store, "--namespace", "u1", "--trace", "half marathon"], capsys)
    assert code == 0, err
    assert f"({seen['nodes']} read from disk, 0 embedded;" in out.splitlines()[0]  # the next process reads them


@pytest.mark.parametrize(
    ("rows", "why"),
    [
        ([], "it has no message lines"),
        (["", "   "], "it has no message lines"),
        ([{"role": "system", "content": "be brief"}, {"role": "tool", "content": "{}"}],
         "only system/tool lines: 2 skipped"),
    ],
)
def test_a_jsonl_with_nothing_to_store_ingests_nothing(rows: list[object], why: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s"
    empty = write_jsonl(tmp_path / "empty.jsonl", rows)
    code, out, err = run(["ingest", str(empty), "--namespace", "u1", "--data-dir", str(store)], capsys)
    assert code == 1 and out == ""
    assert_one_line_error(err, "empty.jsonl holds no turn to store", why, "nothing was ingested", '"speaker"')
    assert not store.exists()  # nothing was written
    # into a store that holds other turns: `list` shows what it held before, and no u1
    chat = write_jsonl(tmp_path / "chat.jsonl", CHAT)
    assert run(["ingest", str(chat), "--namespace", "other", "--data-dir", str(store)], capsys)[0] == 0
    code, _, err = run(["ingest", str(empty), "--namespace", "u1", "--data-dir", str(store)], capsys)
    assert code == 1
    assert_one_line_error(err, "nothing was ingested")
    assert json.loads(run(["list", "--data-dir", str(store), "--json"], capsys)[1]) == [
        {"namespace": "other", "turns": len(CHAT)}]


def test_a_locomo_file_without_turns_ingests_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = json.loads(SAMPLE.read_text(encoding="utf-8"))[0]
    rec["conversation"] = {"speaker_a": "Maya", "speaker_b": "Leo"}
    path = tmp_path / "bare.json"
    path.write_text(json.dumps([rec]), encoding="utf-8")
    code, out, err = run(["ingest", str(path), "--data-dir", str(tmp_path / "s")], capsys)
    assert code == 1 and out == ""
    assert_one_line_error(err, "bare.json holds no turn to store", "its records hold no turns", "nothing was ingested")
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["search", "--bogus", "x", "--namespace", "u1", "q"], "langmem-cog search"),
        (["ingest", "chat.jsonl", "--namespace", "u1", "--bogus"], "langmem-cog ingest"),
        (["bench", "locomo", "--bogus"], "langmem-cog bench locomo"),
        (["bench", "--bogus", "locomo"], "langmem-cog bench"),
        (["train-reranker", "--bogus"], "langmem-cog train-models"),
        (["--bogus", "list"], "langmem-cog"),
    ],
)
def test_an_unknown_option_is_reported_by_its_command(argv: list[str], command: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {command} [-h]")  # the usage of the command the option follows
    assert f"\n{command}: error: unrecognized arguments: --bogus" in err


@pytest.mark.parametrize("command", [["list"], ["forget", "u1"], ["search", "--namespace", "u1", "hi"]])
def test_a_missing_data_dir_is_named(command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere"
    code, _, err = run([*command, "--data-dir", str(missing)], capsys)
    assert code == 2
    assert_one_line_error(err, f"--data-dir {missing} does not exist")
    assert not missing.exists()


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["ingest", "{tmp}/missing.jsonl", "--namespace", "u1"], ("FILE", "missing.jsonl does not exist")),
        (["ingest", "{tmp}/chat.jsonl", "--namespace", "bad ns"], ("--namespace", "invalid namespace")),
        (["ingest", "{tmp}/chat.jsonl", "--namespace", "u1", "--format", "locomo"], ("--format locomo",)),
        (["ingest", "{tmp}/chat.jsonl", "--namespace", "u1", "--batch-size", "0"], ("--batch-size 0",)),
        (["forget", "bad ns", "--data-dir", "{tmp}"], ("NAMESPACE", "invalid namespace")),
        (["search", "--namespace", "u1", "-k", "0", "--data-dir", "{tmp}", "hi"], ("-k 0",)),
    ],
)
def test_usage_errors_name_the_option(argv: list[str], needles: tuple[str, ...], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(tmp_path / "chat.jsonl", CHAT)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    if "--data-dir" not in argv:
        argv += ["--data-dir", str(tmp_path / "s")]
    code, _, err = run(argv, capsys)
    assert code == 2
    assert_one_line_error(err, *needles)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"langmem-cog {version('langmem-cog')}"


def test_version_of_the_installed_command() -> None:
    exe = Path(sys.executable).parent / "langmem-cog"
    if not exe.exists():
        pytest.skip("no langmem-cog script beside this interpreter")
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"langmem-cog {version('langmem-cog')}"


def _actions(parser: argparse.ArgumentParser, path: str = "langmem-cog"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, f"{path} {name}")
        else:
            yield path, action


def test_every_option_has_help() -> None:
    missing = [f"{path}: {'/'.join(a.option_strings) or a.dest}" for path, a in _actions(build_parser()) if not a.help]
    assert missing == []
