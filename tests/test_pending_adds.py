"""A graph that lacks only the turns an add in progress is extracting is left to that add; a graph left
behind by a crash (its add's process gone) is repaired as before."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fakes import FakeEmbeddings, make_turns

from langmem_cog import CogMemConfig, CogMemory
from langmem_cog.graph import pending
from langmem_cog.graph.rules.extractor import RuleExtractor
from langmem_cog.storage.chroma import collection_name

TEXTS = ["I adopted a puppy called Rex", "Rex loves the lake near our house", "My sister lives in Lisbon"]


def _memory(path: Path, extractor: object | None = None) -> CogMemory:
    return CogMemory(CogMemConfig(data_dir=path), embeddings=FakeEmbeddings(), extractor=extractor)


def _graph_turns(memory: CogMemory, ns: str) -> set[str]:
    return set(memory.graph(ns).graph.get("turns", ()))


class _SlowExtractor(RuleExtractor):
    """Waits for a signal before extracting: an add whose graph step is still to come."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.go = threading.Event(), threading.Event()

    def extract(self, turns):  # type: ignore[no-untyped-def]
        self.started.set()
        assert self.go.wait(60)
        return super().extract(turns)


def test_a_graph_behind_only_by_an_add_in_progress_is_left_to_it(tmp_path: Path, ns: str,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    _memory(tmp_path).add_turns(make_turns(ns, TEXTS[:1]))
    slow = _SlowExtractor()
    writer = _memory(tmp_path, slow)
    adding = threading.Thread(target=writer.add_turns, args=(make_turns(ns, TEXTS[1:], id_prefix="n"),))
    adding.start()
    try:
        assert slow.started.wait(60)  # the raw turns are stored, their records not yet
        other = _memory(tmp_path)  # another reader of the data directory
        with caplog.at_level(logging.INFO, logger="langmem_cog"):
            assert other.sync_graph(ns) is False
            other._check_graph(ns)
        assert "out of step" not in caplog.text and "rebuilding" not in caplog.text
        assert ns not in other._checked  # looked at again on its next use
        assert _graph_turns(other, ns) == {"t0"}  # nothing written by the reader
    finally:
        slow.go.set()
        adding.join(60)
    assert not list((tmp_path / pending.PENDING_DIR).glob("*.json"))  # the marker went with the add
    again = _memory(tmp_path)
    assert again.sync_graph(ns) is False
    assert _graph_turns(again, ns) == {"t0", "n0", "n1"}


def test_a_marker_of_a_process_that_exited_does_not_hold_the_repair_back(tmp_path: Path, ns: str) -> None:
    memory = _memory(tmp_path)
    memory.store.add_turns(make_turns(ns, TEXTS))  # raw turns without their graph, as a crash leaves them
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    folder = tmp_path / pending.PENDING_DIR
    folder.mkdir(parents=True)
    marker = folder / f"{collection_name(ns)}.{gone.stdout.strip()}.dead.json"
    marker.write_text(json.dumps({"namespace": ns, "pid": int(gone.stdout), "ids": ["t0", "t1", "t2"]}))
    assert memory.sync_graph(ns) is True
    assert _graph_turns(memory, ns) == {"t0", "t1", "t2"}
    assert not marker.exists()


def test_a_failed_graph_step_removes_its_marker(tmp_path: Path, ns: str) -> None:
    class Failing(RuleExtractor):
        def extract(self, turns):  # type: ignore[no-untyped-def]
            raise RuntimeError("the model is down")

    with pytest.raises(Exception, match="the model is down"):
        _memory(tmp_path, Failing()).add_turns(make_turns(ns, TEXTS))
    assert not list((tmp_path / pending.PENDING_DIR).glob("*.json"))
    repaired = _memory(tmp_path)
    assert repaired.sync_graph(ns) is True  # stored, without their graph: repaired on the next use
    assert _graph_turns(repaired, ns) == {"t0", "t1", "t2"}
