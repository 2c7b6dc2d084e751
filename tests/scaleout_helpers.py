"""What the scale-out tests share: a worker process that answers JSON commands, and a Chroma server.

A test module runs itself with ``--worker`` as the worker (its own data directory, the shared
server); :class:`WorkerProcess` drives it over stdin / stdout (one JSON command a line; answers are
lines starting with ``@``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from langmem_cog.errors import StoreError

HERE = Path(__file__).resolve().parent


def serve(run: Any) -> None:
    """The worker's side: announce readiness, then answer each JSON command line with ``run(cmd)``
    (``{"ok": ...}``, or ``{"error": "Type: message", "trace": ...}``) until ``{"op": "quit"}``."""
    print("@" + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "quit":
            break
        try:
            out = {"ok": run(cmd)}
        except Exception as exc:  # reported to the test, which fails with it (the trace shows where)
            out = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
        print("@" + json.dumps(out), flush=True)


class WorkerProcess:
    """A worker process: ``script --worker --port PORT --data-dir DIR *extra``, its own data directory."""

    def __init__(self, script: str, port: int, data_dir: Path, *extra: str) -> None:
        self.data_dir = data_dir
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), str(HERE), env.get("PYTHONPATH", "")])
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", ANONYMIZED_TELEMETRY="False", OMP_NUM_THREADS="1")
        self.stderr = open(data_dir.parent / f"{data_dir.name}.stderr", "w+", encoding="utf-8")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, script, "--worker", "--port", str(port), "--data-dir", str(data_dir), *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=env,
        )

    def _answer(self) -> Any:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("@"):
                return json.loads(line[1:])
        self.stderr.seek(0)
        raise AssertionError(f"worker {self.data_dir.name} exited: {self.stderr.read()[-3000:]}")

    def wait_ready(self) -> None:
        assert self._answer() == {"ready": True}

    def send(self, **cmd: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def result(self) -> Any:
        out = self._answer()
        assert "error" not in out, f"worker {self.data_dir.name}: {out['error']}\n{out.get('trace', '')}"
        return out["ok"]

    def __call__(self, op: str, **cmd: Any) -> Any:
        self.send(op=op, **cmd)
        return self.result()

    def answer(self, op: str, **cmd: Any) -> dict[str, Any]:
        """The raw answer: ``{"ok": ...}`` or ``{"error": "Type: message", "trace": ...}``."""
        self.send(op=op, **cmd)
        return self._answer()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send(op="quit")
                self.proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()


@contextmanager
def running(made: dict[str, WorkerProcess]) -> Iterator[dict[str, WorkerProcess]]:
    """The workers once each is ready; each is closed at the end, whatever happened."""
    try:
        for w in made.values():
            w.wait_ready()
        yield made
    finally:
        for w in made.values():
            w.close()


def chroma_server_for(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[tuple[int, Path]]:
    """A ``chroma run`` on 127.0.0.1 (a free port) for a module (use in a fixture); skips when it cannot start."""
    from langmem_cog.bench.scale import chroma_server

    root = tmp_path_factory.mktemp(name)
    try:
        with chroma_server(root / "server", timeout_s=45) as (_host, port, _pid):
            yield port, root
    except StoreError as exc:  # raised on entry only: the CLI is missing or the server did not answer
        pytest.skip(f"no Chroma server for the scale-out tests: {exc}")
