"""A full disk, for real: a small tmpfs under the data directory (issue 21, disk full).

Chroma's embedded database does not fail cleanly when the disk fills during a write: on a 4 MiB
tmpfs, ``add_turns`` failed with ``Error in compaction`` and the undo of the failed write then hung
in ``Collection.delete``. ``CogMemConfig.min_free_mb`` makes ``add_turns`` refuse a write that
would leave the disk nearly full, before anything is written. Here a worker process fills a 24 MiB
tmpfs until the store refuses; then, with the tmpfs grown, a new process finds exactly the
acknowledged turns, and the refused call, retried as is, completes.

Mounting needs root (or CAP_SYS_ADMIN); elsewhere the test is skipped. Each worker runs under a
timeout, so a hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

WORKER = r"""
import json, sys
sys.path.insert(0, {tests!r})
from fakes import FakeEmbeddings, make_turns
from langmem_cog import CogMemConfig
from langmem_cog.errors import LangMemCogError
from langmem_cog.memory import CogMemory

data, phase, batch = sys.argv[1], sys.argv[2], 50
memory = CogMemory(CogMemConfig(data_dir=data, min_free_mb=16), embeddings=FakeEmbeddings())
texts = [f"Ann wrote note {{i}} about the lake trip, the canoes and the grand weather, tea at {{i * 7}}"
         for i in range(6000)]
turns = make_turns("full", texts)
out = {{"acked": 0, "refused": None, "raw": [], "retry_refused": None}}
if phase == "fill":
    for i in range(0, len(turns), batch):
        try:
            memory.add_turns(turns[i : i + batch])
        except LangMemCogError as exc:
            out["refused"] = [i, type(exc).__name__, str(exc)]
            try:
                memory.add_turns(turns[i : i + batch])  # an identical retry on the still full disk
            except LangMemCogError as again:
                out["retry_refused"] = type(again).__name__
            break
        except Exception as exc:  # must not happen: every failure is a LangMemCogError
            out["raw"].append(repr(exc)[:300])
            break
        out["acked"] = i + batch
else:
    acked = int(phase)
    out["count_before"] = memory.store.count("full")
    memory.add_turns(turns[acked : acked + batch])  # the refused call, retried as is
    out["count_after"] = memory.store.count("full")
    hit = memory.store.search("full", f"note {{acked + batch - 1}}", k=1, mode="lexical")
    out["last_found"] = hit[0].turn.id if hit else None
    out["last_id"] = turns[acked + batch - 1].id
print(json.dumps(out))
"""


def _run(script: Path, *args: str) -> dict:
    proc = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def small_disk(tmp_path: Path):
    mount = tmp_path / "disk"
    mount.mkdir()
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)], check=True,
                       capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot mount a tmpfs here ({exc}): needs root or CAP_SYS_ADMIN")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=30)


def test_a_full_disk_refuses_before_writing_and_the_retry_completes_after_space_is_freed(small_disk, tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(tests=str(TESTS)), encoding="utf-8")
    data = str(small_disk / "data")
    filled = _run(script, data, "fill")
    assert filled["raw"] == []  # no raw exception on the way
    assert filled["refused"] is not None, "the 24 MiB disk never filled"
    at, kind, message = filled["refused"]
    assert kind == "StoreError" and "min_free_mb" in message and "Nothing was written" in message
    assert filled["retry_refused"] == "StoreError"
    assert filled["acked"] == at and at > 0
    print(f"\ndisk full (24 MiB tmpfs): {at} turns acknowledged, then refused: {message}")
    subprocess.run(["mount", "-o", "remount,size=96m", str(small_disk)], check=True, timeout=30)
    after = _run(script, data, str(at))
    assert after["count_before"] == at  # every acknowledged turn, and nothing of the refused call
    assert after["count_after"] == at + 50
    assert after["last_found"] == after["last_id"]
