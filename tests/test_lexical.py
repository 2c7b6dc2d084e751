"""Tests of the per-namespace BM25 index and its JSON-lines log."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from langmem_cog.errors import DuplicateTurnError, InvalidInputError
from langmem_cog.lexical import LexicalIndex, tokenize

DOCS = {
    "a": "I love running marathons in the spring",
    "b": "The cat sleeps on the warm windowsill",
    "c": "My sister adopted a puppy called Rex",
    "d": "We painted the kitchen blue last weekend",
}


def filled(path=None) -> LexicalIndex:
    idx = LexicalIndex(path)
    idx.add(list(DOCS), list(DOCS.values()))
    return idx


class TestTokenize:
    def test_stems_and_drops_stopwords(self):
        assert tokenize("The kids were painting sunsets") == ["kid", "paint", "sunset"]

    def test_lower_cases(self):
        assert tokenize("MARATHON Marathon marathon") == ["marathon"] * 3

    def test_inflections_share_a_stem(self):
        assert tokenize("running")[0] == tokenize("runs")[0] == "run"

    def test_only_stopwords_gives_nothing(self):
        assert tokenize("the and of a") == []

    def test_punctuation_is_dropped(self):
        assert tokenize("cats!!! ... dogs?") == ["cat", "dog"]


class TestAddSearchDelete:
    def test_search_finds_the_matching_doc(self):
        idx = filled()
        assert idx.search("runner ran marathon", 1)[0][0] == "a"
        assert idx.search("puppy", 4)[0][0] == "c"

    def test_search_returns_only_positive_scores_best_first(self):
        idx = filled()
        hits = idx.search("kitchen puppy", 10)
        assert {h[0] for h in hits} == {"c", "d"}
        assert all(s > 0 for _, s in hits)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)

    def test_search_with_unknown_words_is_empty(self):
        assert filled().search("zebra xylophone", 3) == []

    def test_search_on_empty_index(self):
        idx = LexicalIndex()
        assert idx.search("anything", 5) == []
        ids, sc = idx.scores("anything")
        assert ids == [] and sc.shape == (0,)

    def test_len_contains_ids(self):
        idx = filled()
        assert len(idx) == 4
        assert "a" in idx and "zz" not in idx
        assert idx.ids == list(DOCS)

    def test_duplicate_id_across_calls_raises_and_keeps_index(self):
        idx = filled()
        with pytest.raises(DuplicateTurnError, match="'a'"):
            idx.add(["e", "a"], ["new doc", "other"])
        assert len(idx) == 4 and "e" not in idx

    def test_mismatched_lengths_raise(self):
        with pytest.raises(InvalidInputError):
            LexicalIndex().add(["a", "b"], ["only one"])

    def test_delete_removes_from_search(self):
        idx = filled()
        assert idx.delete(["c", "nope"]) == 1
        assert "c" not in idx
        assert all(h[0] != "c" for h in idx.search("puppy Rex", 4))

    def test_delete_unknown_ids_returns_zero(self):
        assert filled().delete(["x", "y"]) == 0

    def test_add_after_search_rebuilds(self):
        idx = filled()
        assert idx.search("giraffe", 3) == []
        idx.add(["e"], ["A giraffe at the zoo"])
        assert idx.search("giraffe", 3)[0][0] == "e"

    def test_scores_are_aligned_with_ids(self):
        idx = filled()
        ids, sc = idx.scores("puppy")
        assert len(ids) == len(sc) == 4
        best = ids[int(np.argmax(sc))]
        assert best == "c"
        assert all(s == 0 for i, s in zip(ids, sc, strict=True) if i != "c")

    def test_scores_for_follows_the_given_order(self):
        idx = filled()
        ids, sc = idx.scores("puppy kitchen")
        by_id = dict(zip(ids, sc.tolist(), strict=True))
        order = ["d", "zz", "c", "a"]
        got = idx.scores_for("puppy kitchen", order)
        assert got.tolist() == pytest.approx([by_id["d"], 0.0, by_id["c"], by_id["a"]])

    def test_unknown_query_words_score_zero(self):
        ids, sc = filled().scores("zebra")
        assert len(ids) == 4 and not sc.any()

    def test_doc_of_only_stopwords_can_be_indexed(self):
        idx = LexicalIndex()
        idx.add(["s", "t"], ["the and of", "a puppy"])
        assert idx.search("puppy", 2) == [("t", pytest.approx(idx.search("puppy", 2)[0][1]))]

    def test_ties_break_by_insertion_order(self):
        idx = LexicalIndex()
        idx.add(["x", "y", "z"], ["apple pie", "apple pie", "apple pie"])
        assert [h[0] for h in idx.search("apple", 3)] == ["x", "y", "z"]


class TestPersistence:
    def test_round_trip_through_the_log(self, tmp_path):
        path = tmp_path / "lex" / "ns.jsonl"
        idx = filled(path)
        assert path.exists()
        again = LexicalIndex(path)
        assert again.ids == idx.ids
        assert again.search("marathon", 1)[0][0] == "a"

    def test_log_lines_are_json_ops(self, tmp_path):
        path = tmp_path / "ns.jsonl"
        filled(path)
        ops = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert [o["op"] for o in ops] == ["add"] * 4
        assert ops[0]["id"] == "a" and ops[0]["tokens"] == tokenize(DOCS["a"])

    def test_torn_last_line_is_ignored(self, tmp_path, caplog):
        path = tmp_path / "ns.jsonl"
        filled(path)
        with path.open("a", encoding="utf-8") as fh:
            fh.write('{"op": "add", "id": "torn", "tok')
        with caplog.at_level(logging.WARNING, logger="langmem_cog.lexical"):
            again = LexicalIndex(path)
        assert again.ids == list(DOCS)
        assert "torn" in caplog.text

    def test_corrupt_middle_line_is_skipped(self, tmp_path):
        path = tmp_path / "ns.jsonl"
        filled(path)
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        lines.insert(1, "not json\n")
        path.write_text("".join(lines), encoding="utf-8")
        assert LexicalIndex(path).ids == list(DOCS)

    @pytest.mark.parametrize(
        "bad",
        [b"\xff\xfe not utf-8", b"[1,2,3]", b'{"op":"add"}', b'{"op":"del","ids":5}', b'{"op":"add","id":"x","tokens":["zqxsecret",1]}',
         b'{"op":"add","id":7,"tokens":[]}', b'{"op":"rename"}', b"42", b"[" * 100_000],
    )
    def test_a_malformed_line_is_skipped_with_a_warning_and_the_log_rewritten(self, tmp_path, caplog, bad):
        # Issue 21 (defect 3): such lines raised UnicodeDecodeError, AttributeError, KeyError or TypeError.
        path = tmp_path / "ns.jsonl"
        filled(path)
        lines = path.read_bytes().splitlines(keepends=True)
        lines.insert(2, bad + b"\n")
        path.write_bytes(b"".join(lines))
        with caplog.at_level(logging.WARNING, logger="langmem_cog.lexical"):
            again = LexicalIndex(path)
        assert again.ids == list(DOCS)
        assert "line 3" in caplog.text and "raw store" in caplog.text
        assert "zqxsecret" not in caplog.text  # names the fields, never the turns' words
        assert bad not in path.read_bytes()  # rewritten without it
        assert [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines()] == list(DOCS)

    def test_a_damaged_line_loses_only_its_document(self, tmp_path, caplog):
        path = tmp_path / "ns.jsonl"
        filled(path)
        data = bytearray(path.read_bytes())
        data[data.index(b"windowsil")] = 0xFF  # document b's line is no longer UTF-8
        path.write_bytes(bytes(data))
        with caplog.at_level(logging.WARNING, logger="langmem_cog.lexical"):
            assert LexicalIndex(path).ids == ["a", "c", "d"]  # the store re-adds b from Chroma
        assert "corrupt line 2" in caplog.text

    def test_delete_compacts_so_the_text_leaves_the_file(self, tmp_path):
        path = tmp_path / "ns.jsonl"
        idx = filled(path)
        canary = "zqxcanaryword"
        idx.add(["secret"], [f"my password is {canary}"])
        assert canary.encode() in path.read_bytes()
        assert idx.delete(["secret"]) == 1
        assert canary.encode() not in path.read_bytes()
        assert not list(tmp_path.glob("*.tmp"))
        again = LexicalIndex(path)
        assert again.ids == list(DOCS)
        assert again.search(canary, 1) == []

    def test_delete_after_reload_compacts(self, tmp_path):
        path = tmp_path / "ns.jsonl"
        filled(path)
        again = LexicalIndex(path)
        again.delete(["b"])
        assert LexicalIndex(path).ids == ["a", "c", "d"]
        assert b"windowsil" not in path.read_bytes()

    def test_clear_removes_the_file(self, tmp_path):
        path = tmp_path / "ns.jsonl"
        idx = filled(path)
        idx.clear()
        assert not path.exists() and len(idx) == 0
        assert idx.search("marathon", 1) == []

    def test_in_memory_index_writes_nothing(self, tmp_path, monkeypatch):
        monkeypatch.chdir(tmp_path)
        idx = filled(None)
        idx.delete(["a"])
        idx.clear()
        assert list(tmp_path.iterdir()) == []

    def test_add_after_a_torn_line_is_not_lost(self, tmp_path):
        # A crash leaves a torn last line; the next append must not glue onto it.
        path = tmp_path / "ns.jsonl"
        filled(path)
        with path.open("a", encoding="utf-8") as fh:
            fh.write('{"op": "add", "id": "torn", "tok')
        again = LexicalIndex(path)
        again.add(["e"], ["A giraffe at the zoo"])
        reloaded = LexicalIndex(path)
        assert reloaded.ids == [*DOCS, "e"]
        assert reloaded.search("giraffe", 1)[0][0] == "e"


# ------------------------------------------------------------------ the bulk build equals bm25s's own
@pytest.mark.parametrize("seed", range(4))
def test_the_bulk_build_scores_bit_for_bit_as_bm25s_index(seed: int) -> None:
    import random

    import bm25s

    from langmem_cog.lexical import build_bm25

    rng = random.Random(seed)
    words = [f"w{i}" for i in range(rng.choice([3, 40, 400]))]
    corpus = [[rng.choice(words) for _ in range(rng.randint(1, 30))] for _ in range(rng.choice([1, 7, 300]))]
    k1, b = rng.choice([(0.9, 0.4), (1.2, 0.75), (1.5, 0.0)])
    ref = bm25s.BM25(k1=k1, b=b)
    ref.index(corpus, show_progress=False)
    bulk = build_bm25(corpus, k1=k1, b=b)
    assert set(bulk.vocab_dict) == set(ref.vocab_dict)
    for _ in range(50):
        query = rng.sample(words, min(len(words), rng.randint(1, 5)))
        assert np.array_equal(bulk.get_scores(query), ref.get_scores(query)), query


def test_an_index_grown_by_adds_and_deletes_scores_as_one_built_at_once() -> None:
    """The token ids are coded once per document across builds; deletes (an id may return with other words)
    start the coding over."""
    from langmem_cog.lexical import build_bm25

    grown = LexicalIndex()
    texts = {f"d{i}": f"red fox number {i} jumps over the lazy dog {i % 7} times" for i in range(40)}
    items = list(texts.items())
    for start in range(0, 40, 10):
        grown.add([k for k, _ in items[start:start + 10]], [v for _, v in items[start:start + 10]])
        grown.scores("fox jumps")  # a build after each add
    grown.delete(["d39"])
    grown.add(["d39"], ["a blue whale sings"])
    grown.add(["e1"], ["the whale and the fox"])
    for query in ("fox jumps", "whale", "lazy dog 3"):
        ids, got = grown.scores(query)
        once = build_bm25([grown._docs[i] for i in ids], k1=grown.k1, b=grown.b)
        known = [t for t in tokenize(query) if t in once.vocab_dict]
        assert np.array_equal(got, once.get_scores(known)), query
