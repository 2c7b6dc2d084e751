"""Graph persistence by journal: commits append operations, loads replay them, snapshots compact."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_graph_store import NS, TableExtractor, story, turns_for

from langmem_cog.errors import StoreError
from langmem_cog.graph.store import GraphMemory, _extraction_from_payload, _extraction_payload, graphs_equal


def _files(mem: GraphMemory) -> tuple[Path, Path]:
    path = mem.path(NS)
    assert path is not None
    return path, path.with_name(path.stem + ".journal")


def _snapshot_then_journal(tmp_path: Path) -> GraphMemory:
    """The first turn in the snapshot, the others in the journal."""
    table = list(story().values())
    mem = GraphMemory(tmp_path)
    mem.apply(NS, table[:1])
    mem.commit(NS)
    mem.apply(NS, table[1:])
    mem.commit(NS)
    return mem


def test_extractions_round_trip_through_the_journal_format() -> None:
    for ex in story().values():
        assert _extraction_from_payload(_extraction_payload(ex)) == ex


def test_the_journal_format_is_that_of_the_extractions_as_dicts() -> None:
    """The payload walks the dataclasses itself; it equals ``dataclasses.asdict`` encoded, key for key, on the
    rule extractor's output for the bundled sample (events, claims, times, tuples)."""
    import dataclasses
    import json

    from langmem_cog import load_locomo
    from langmem_cog.data import sample_path
    from langmem_cog.graph.rules import RuleExtractor
    from langmem_cog.graph.store import _encode

    extractions = RuleExtractor().extract(load_locomo(sample_path())[0].turns)
    assert any(ex.events for ex in extractions) and any(ex.claims for ex in extractions)
    for ex in extractions:
        payload = _extraction_payload(ex)
        assert json.dumps(payload) == json.dumps(_encode(dataclasses.asdict(ex)))
        assert _extraction_from_payload(payload) == ex


def test_commits_append_to_the_journal_and_a_fresh_load_replays_it(tmp_path: Path) -> None:
    table = list(story().values())
    mem = GraphMemory(tmp_path)
    mem.apply(NS, table[:1])
    mem.commit(NS)  # no snapshot yet: the first commit writes one
    snapshot, journal = _files(mem)
    first = snapshot.stat()
    assert snapshot.exists() and not journal.exists()
    for ex in table[1:]:
        mem.apply(NS, [ex])
        mem.commit(NS)
    mem.consolidate(NS)
    mem.commit(NS)
    assert journal.exists() and len(journal.read_text().splitlines()) == len(table)  # 3 applies + 1 consolidate
    assert snapshot.stat().st_mtime_ns == first.st_mtime_ns  # the snapshot was not rewritten
    again = GraphMemory(tmp_path)
    assert graphs_equal(again.graph(NS), mem.graph(NS))
    assert mem.commit(NS) == snapshot and len(journal.read_text().splitlines()) == len(table)  # nothing pending


def test_a_reconcile_that_changes_nothing_journals_nothing(tmp_path: Path) -> None:
    mem = GraphMemory(tmp_path)
    mem.apply(NS, list(story().values()))  # apply reconciles the claim groups it touched
    mem.commit(NS)
    snapshot, journal = _files(mem)
    before = snapshot.stat().st_mtime_ns
    counts = mem.reconcile(NS)
    assert sum(counts.values()) > 0  # the story has claims: reconcile did look at them
    assert mem.commit(NS) == snapshot and not journal.exists() and snapshot.stat().st_mtime_ns == before
    G = mem.graph(NS)
    claim = next(n for n, d in G.nodes(data=True) if d.get("status"))
    G.nodes[claim]["status"] = "STALE-BY-HAND"  # reconcile repairs it, and that is journalled
    mem.reconcile(NS)
    mem.commit(NS)
    assert journal.exists() and '"reconcile"' in journal.read_text()
    assert graphs_equal(GraphMemory(tmp_path).graph(NS), mem.graph(NS))


def test_the_journal_is_compacted_into_the_snapshot_when_it_outgrows_it(tmp_path: Path) -> None:
    mem = GraphMemory(tmp_path, journal_ratio=0.01, journal_min_bytes=0)
    table = list(story().values())
    mem.apply(NS, table[:1])
    mem.commit(NS)
    mem.apply(NS, table[1:2])
    mem.commit(NS)  # the journal line is larger than 1% of the snapshot: rewritten at once
    snapshot, journal = _files(mem)
    assert not journal.exists()
    assert graphs_equal(GraphMemory(tmp_path).graph(NS), mem.graph(NS))
    every = GraphMemory(tmp_path / "b", journal_ratio=0)
    every.apply(NS, table)
    every.commit(NS)
    every.apply(NS, table[:1])  # re-applying a turn replaces its records
    every.commit(NS)
    assert not _files(every)[1].exists()


def test_a_journal_slower_to_replay_than_a_snapshot_is_folded_into_one(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit writes a snapshot instead of appending once the journal would take longer to replay than a
    snapshot takes to write (and ``journal_seconds``): times from a fake clock, each apply taking 5 s."""
    import langmem_cog.graph.journal as journal_module
    import langmem_cog.graph.store as store

    clock = [0.0]

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            return clock[0]

    def slow(*args: object, **kwargs: object) -> object:
        clock[0] += 5.0
        return real(*args, **kwargs)

    real = store.apply_extractions
    monkeypatch.setattr(store, "time", Clock)
    monkeypatch.setattr(store, "apply_extractions", slow)
    monkeypatch.setattr(journal_module, "apply_extractions", slow)  # the replay of a load
    table = list(story().values())

    def run(folder: Path, seconds: float | None, commits: int) -> list[bool]:
        mem = GraphMemory(folder, journal_seconds=seconds)  # journal_min_bytes: the byte rule stays out of it
        mem.apply(NS, table[:1])
        mem.commit(NS)  # the first snapshot (written in no time on this clock)
        journal = []
        for ex in table[1 : 1 + commits]:
            mem.apply(NS, [ex])
            mem.commit(NS)
            journal.append(_files(mem)[1].exists())
        assert graphs_equal(GraphMemory(folder).graph(NS), mem.graph(NS))
        return journal

    assert run(tmp_path / "a", 1.0, 1) == [False]  # 5 s to replay > 1 s: folded into the snapshot at once
    assert run(tmp_path / "b", 12.0, 3) == [True, True, False]  # 5, 10, then 15 s > 12 s
    assert run(tmp_path / "c", None, 3) == [True, True, True]  # off: the byte rule alone
    # A fresh memory counts the replay of the journal it loads: 10 s, then 15 s with its own apply.
    fresh = GraphMemory(tmp_path / "b2", journal_seconds=None)
    fresh.apply(NS, table[:1])
    fresh.commit(NS)
    for ex in table[1:3]:
        fresh.apply(NS, [ex])
        fresh.commit(NS)
    loaded = GraphMemory(tmp_path / "b2", journal_seconds=12.0)
    loaded.graph(NS)
    loaded.apply(NS, table[3:4])
    loaded.commit(NS)
    assert not _files(loaded)[1].exists()
    assert graphs_equal(GraphMemory(tmp_path / "b2").graph(NS), loaded.graph(NS))


def test_a_torn_last_entry_is_skipped_and_the_next_commit_rewrites_the_snapshot(tmp_path: Path) -> None:
    table = list(story().values())
    mem = GraphMemory(tmp_path)
    mem.apply(NS, table[:2])
    mem.commit(NS)
    mem.apply(NS, table[2:3])
    mem.commit(NS)
    snapshot, journal = _files(mem)
    with journal.open("a", encoding="utf-8") as fh:
        fh.write('{"seq": 9, "op": "apply", "extr')  # a crash mid-append
    again = GraphMemory(tmp_path)
    assert graphs_equal(again.graph(NS), mem.graph(NS))
    again.apply(NS, table[3:])
    again.commit(NS)
    assert not journal.exists()  # compacted: the torn entry is gone
    assert set(GraphMemory(tmp_path).graph(NS).graph["turns"]) == set(story())


def test_a_snapshot_written_before_the_journal_was_removed_does_not_replay_twice(tmp_path: Path) -> None:
    table = list(story().values())
    mem = GraphMemory(tmp_path)
    mem.apply(NS, table[:1])
    mem.commit(NS)
    for ex in table[1:]:
        mem.apply(NS, [ex])
        mem.commit(NS)
    snapshot, journal = _files(mem)
    kept = journal.read_text()
    mem.save(NS)  # full snapshot at the journal's last seq, journal removed ...
    journal.write_text(kept)  # ... as if the process died before removing it
    again = GraphMemory(tmp_path)
    assert graphs_equal(again.graph(NS), mem.graph(NS))


def test_deleting_turns_rewrites_the_snapshot_so_their_records_leave_the_disk(tmp_path: Path) -> None:
    mem = _snapshot_then_journal(tmp_path)
    snapshot, journal = _files(mem)
    assert "works as a nurse" in journal.read_text()
    mem.delete_turns(NS, ["D1:2"])
    mem.commit(NS)
    assert not journal.exists() and "works as a nurse" not in snapshot.read_text()
    assert graphs_equal(GraphMemory(tmp_path).graph(NS), mem.graph(NS))
    assert mem.forget(NS) and not snapshot.exists()


def test_forget_removes_the_journal_too(tmp_path: Path) -> None:
    mem = _snapshot_then_journal(tmp_path)
    snapshot, journal = _files(mem)
    assert journal.exists()
    assert mem.forget(NS)
    assert not journal.exists() and not snapshot.exists()
    assert GraphMemory(tmp_path).graph(NS).number_of_nodes() == 0


def test_an_unknown_journal_operation_is_a_store_error_with_the_fix(tmp_path: Path) -> None:
    mem = GraphMemory(tmp_path)
    mem.apply(NS, list(story().values())[:1])
    mem.commit(NS)
    _, journal = _files(mem)
    journal.write_text('{"seq": 1, "op": "drop_everything"}\n')
    with pytest.raises(StoreError, match="unknown operation 'drop_everything'.*rebuild"):
        GraphMemory(tmp_path).graph(NS)
    journal.write_text('{"seq": 1, "op": "apply", "extractions": [{"turn_id": "x"}]}\n')
    with pytest.raises(StoreError, match="entry 1 is malformed"):
        GraphMemory(tmp_path).graph(NS)


def test_a_journal_left_without_its_snapshot_is_ignored_and_replaced(tmp_path: Path) -> None:
    mem = _snapshot_then_journal(tmp_path)
    snapshot, journal = _files(mem)
    snapshot.unlink()  # as if forget died between its two unlinks
    again = GraphMemory(tmp_path)
    assert again.graph(NS).number_of_nodes() == 0
    again.apply(NS, list(story().values())[:1])
    again.commit(NS)
    assert snapshot.exists() and not journal.exists()


@pytest.mark.parametrize("damage", ["none", "garbage-snapshot", "garbage-journal"])
def test_a_rebuild_in_a_fresh_memory_replaces_the_files_without_reading_them(tmp_path: Path, damage: str) -> None:
    """Issue 21, defect 4: rebuild() then save() failed on a damaged file with the very StoreError
    whose message recommended them. A crash between the new snapshot and the journal's removal must
    not replay the old journal onto the rebuilt graph either: its entries are numbered below it."""
    table = story()
    mem = _snapshot_then_journal(tmp_path)
    snapshot, journal = _files(mem)
    if damage == "garbage-snapshot":
        snapshot.write_bytes(b"\xff garbage")
    elif damage == "garbage-journal":
        journal.write_bytes(journal.read_bytes() + b'{"seq": 9, "op": "apply", "extractions": 5}\n')
    old_journal = journal.read_bytes()
    fresh = GraphMemory(tmp_path)
    kept = dict(list(table.items())[:2])  # rebuild from fewer turns than the journal holds
    rebuilt = fresh.rebuild(NS, turns_for(kept), TableExtractor(kept))
    assert fresh.save(NS) == snapshot and not journal.exists()
    assert graphs_equal(GraphMemory(tmp_path).graph(NS), rebuilt)
    journal.write_bytes(old_journal)  # as if the process died before the old journal was removed
    assert graphs_equal(GraphMemory(tmp_path).graph(NS), rebuilt)
