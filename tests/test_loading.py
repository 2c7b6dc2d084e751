"""Models load once per process, safely from many threads, and quietly (the app's logging stays the app's).

The process-level tests run a fresh Python (``sys.executable``) on this checkout: a race between
first imports, and what the library does to logging on its first use, only show in a new process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from langmem_cog import loading as loading_module
from langmem_cog.loading import load_once

ROOT = Path(__file__).resolve().parents[1]
THREADS = 8

#: One fact and one question per user; every user asks about their own pet.
USERS = {
    "alice": ("My dog is called Rex.", "What is my dog called?"),
    "bob": ("My cat is called Tom.", "What is my cat called?"),
    "carol": ("My parrot is called Polly.", "What is my parrot called?"),
    "dave": ("My rabbit is called Bunny.", "What is my rabbit called?"),
}

# Stores each user's fact (and a second turn) in a persistent memory, as an app's earlier process did.
STORE = """
import sys
from datetime import datetime, timezone
from langmem_cog import CogMemConfig, make_turn
from langmem_cog.memory import CogMemory

users = {users!r}
memory = CogMemory(CogMemConfig(data_dir=sys.argv[1]))
for user, (fact, _) in users.items():
    texts = [fact, "I started a new job at the library last week."]
    memory.add_turns([make_turn(id=f"{{user}}-{{i}}", namespace=user, speaker="user", text=text, position=i,
                                session_id="1", timestamp=datetime(2024, 5, 1, 12, i, tzinfo=timezone.utc))
                      for i, text in enumerate(texts)])
"""


def run_python(code: str, *args: str, home: Path, cache: Path | None = None,
               timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh Python on this checkout, offline, with ``home`` as the default data dir and
    ``cache`` as ``$XDG_CACHE_HOME`` (``None``: this process's, so the exported ONNX graphs are shared)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False",
           "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT), "LANGMEM_COG_DATA_DIR": str(home)}
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    for key in ("LANGMEM_COG_RETRIEVAL", "LANGMEM_COG_CHROMA_URL", "LMC_CHAT_MODEL"):
        env.pop(key, None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty default data dir. The ONNX graphs exported from the packaged models are shared with this
    process through the default cache directory, which the inherited environment leaves where it is."""
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


@pytest.fixture
def counted_loading(monkeypatch: pytest.MonkeyPatch) -> threading.Semaphore:
    """A permit per call that has entered (or waits for) the load lock."""
    entered = threading.Semaphore(0)
    real = loading_module.loading

    @contextmanager
    def counting(**kwargs: bool) -> Iterator[None]:
        entered.release()
        with real(**kwargs):
            yield

    monkeypatch.setattr(loading_module, "loading", counting)
    return entered


def _await_callers(entered: threading.Semaphore) -> None:
    for _ in range(THREADS):  # this call's permit and one per other thread, each waiting for the lock
        assert entered.acquire(timeout=120), "a thread never reached the load lock"


def test_threads_asking_together_wait_for_one_load_and_share_it(counted_loading: threading.Semaphore) -> None:
    calls: list[object] = []

    def load() -> object:
        _await_callers(counted_loading)
        calls.append(object())
        return calls[-1]

    key = ("test-model", uuid.uuid4().hex)
    with ThreadPoolExecutor(THREADS) as pool:
        got = list(pool.map(lambda _: load_once(key, load), range(THREADS)))
    assert len(calls) == 1 and all(g is calls[0] for g in got)
    assert load_once(key, load) is calls[0]


def test_a_failed_load_raises_in_every_waiter_and_a_later_call_loads_again(
        counted_loading: threading.Semaphore) -> None:
    calls: list[int] = []

    def failing() -> str:
        _await_callers(counted_loading)
        calls.append(1)
        raise OSError("the model file is locked")

    key = ("test-model", uuid.uuid4().hex)
    with ThreadPoolExecutor(THREADS) as pool:
        errors = [f.exception() for f in [pool.submit(load_once, key, failing) for _ in range(THREADS)]]
    assert len(calls) == 1  # the waiters did not load again
    assert all(isinstance(e, OSError) and "locked" in str(e) for e in errors)
    assert load_once(key, lambda: "model") == "model"
    assert load_once(key, failing) == "model"


def test_a_model_load_turns_progress_bars_off_and_restores_the_apps_choice() -> None:
    from huggingface_hub import utils as hub
    from transformers.utils import logging as hf_logging

    before = hf_logging.is_progress_bar_enabled(), hub.are_progress_bars_disabled()
    try:
        for enabled in (True, False):
            (hf_logging.enable_progress_bar if enabled else hf_logging.disable_progress_bar)()
            with loading_module.loading(models=True):
                assert not hf_logging.is_progress_bar_enabled() and hub.are_progress_bars_disabled()
            assert (hf_logging.is_progress_bar_enabled(), hub.are_progress_bars_disabled()) == (enabled, not enabled)
    finally:
        (hf_logging.enable_progress_bar if before[0] else hf_logging.disable_progress_bar)()
        (hub.disable_progress_bars if before[1] else hub.enable_progress_bars)()


def test_retrievers_built_and_queried_from_many_threads_in_a_fresh_process(home: Path) -> None:
    # Nothing is loaded before the threads start: each builds its retriever (the cross-encoder), stores its
    # user's turns (the embedder) and asks its first question, all at once.
    code = f"""
    import json, threading
    from concurrent.futures import ThreadPoolExecutor
    from datetime import datetime, timezone
    from langmem_cog import CogMemConfig, CogMemRetriever, make_turn
    from langmem_cog.memory import CogMemory

    users = {USERS!r}
    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    names = [f"{{user}}-{{i}}" for i in range({THREADS} // len(users)) for user in users]

    def question(name):
        return users[name.split("-")[0]][1]

    def turns(name):
        texts = ["I started a new job at the library last week.", users[name.split("-")[0]][0],
                 "We watched a film on Sunday."]
        return [make_turn(id=f"{{name}}:{{i}}", namespace=name, speaker="user", text=text, position=i, session_id="1",
                          timestamp=datetime(2024, 5, 1, 12, i, tzinfo=timezone.utc)) for i, text in enumerate(texts)]

    def ranking(retriever):
        return [d.metadata["turn_id"] for d in retriever.invoke(question(retriever.namespace))]

    start = threading.Barrier(len(names))

    def first_request(name):
        start.wait()
        try:
            retriever = CogMemRetriever(memory=memory, namespace=name)
            memory.add_turns(turns(name))
            return ranking(retriever)
        except Exception as exc:
            return f"{{type(exc).__name__}}: {{exc}}"

    with ThreadPoolExecutor(len(names)) as pool:
        together = list(pool.map(first_request, names))
    alone = [ranking(CogMemRetriever(memory=memory, namespace=name)) for name in names]
    print(json.dumps({{"names": names, "together": together, "alone": alone}}))
    """
    proc = run_python(code, home=home)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(out["names"]) == THREADS
    assert out["together"] == out["alone"], f"concurrent first requests differ:\n{out['together']}\n{proc.stderr[-3000:]}"
    assert all(ranking[0] == f"{name}:1" for name, ranking in zip(out["names"], out["alone"], strict=True))


def test_concurrent_users_of_an_agent_after_a_restart_all_get_their_memory(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    stored = run_python(STORE.format(users=USERS), str(data), home=home)
    assert stored.returncode == 0, stored.stderr[-4000:]
    code = f"""
    import asyncio, json, logging, sys
    from langchain.agents import create_agent
    from langmem_cog.integrations.langgraph import CogMemoryMiddleware, MemoryContext
    from langmem_cog.integrations.offline import OfflineEvidenceChatModel
    from langmem_cog import CogMemConfig
    from langmem_cog.memory import CogMemory

    class Recording(OfflineEvidenceChatModel):
        systems: dict = {{}}

        def _generate(self, messages, *args, **kwargs):
            question = [m.text for m in messages if m.type == "human"][-1]
            self.systems[question] = "\\n".join(m.text for m in messages if m.type == "system")
            return super()._generate(messages, *args, **kwargs)

    problems = []

    class Problems(logging.Handler):
        def emit(self, record):
            problems.append(record.getMessage())

    logging.getLogger().addHandler(Problems(level=logging.WARNING))
    users = {USERS!r}
    model = Recording()
    memory = CogMemory(CogMemConfig(data_dir=sys.argv[1]))
    agent = create_agent(model, middleware=[CogMemoryMiddleware(memory, k=3)], context_schema=MemoryContext)

    async def main():
        return await asyncio.gather(*[agent.ainvoke({{"messages": [("user", question)]}},
                                                    context=MemoryContext(user_id=user))
                                      for user, (_, question) in users.items()])

    outs = asyncio.run(main())
    print(json.dumps({{"systems": model.systems, "answers": [o["messages"][-1].text for o in outs],
                      "problems": problems}}))
    """
    proc = run_python(code, str(data), home=home)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["problems"] == [], proc.stderr[-4000:]
    for (user, (fact, question)), answer in zip(USERS.items(), out["answers"], strict=True):
        system = out["systems"][question]
        assert fact in system, f"{user}'s model call got no memory:\n{system}"
        assert not [f for u, (f, _) in USERS.items() if u != user and f in system]
        assert fact in answer


def test_the_library_leaves_the_apps_logging_and_stderr_alone(tmp_path: Path) -> None:
    home, cache = tmp_path / "home", tmp_path / "cache"  # an empty cache: the models are exported and quantised here
    code = """
    import json, logging, sys
    from datetime import datetime, timezone
    from langmem_cog import CogMemConfig, CogMemRetriever, make_turn
    from langmem_cog.memory import CogMemory

    def turn(i, text):
        return make_turn(id=f"t{i}", namespace="alice", speaker="user", text=text, position=i, session_id="1",
                         timestamp=datetime(2024, 5, 1, 12, i, tzinfo=timezone.utc))

    memory = CogMemory(CogMemConfig(data_dir=sys.argv[1]))
    memory.add_turns([turn(0, "My dog is called Rex."), turn(1, "I started a new job at the library.")])
    retriever = CogMemRetriever(memory=memory, namespace="alice")
    first = retriever.invoke("What is my dog called?")
    logging.basicConfig(level=logging.INFO, format="APP %(message)s")
    logging.getLogger("app").info("configured")
    memory.add_turns([turn(2, "My cat is called Tom.")])
    second = retriever.invoke("What is my cat called?")
    handlers = logging.getLogger().handlers
    print(json.dumps({"first": first[0].metadata["turn_id"], "second": second[0].metadata["turn_id"],
                      "handlers": [getattr(h.formatter, "_fmt", None) for h in handlers]}))
    """
    proc = run_python(code, str(tmp_path / "data"), home=home, cache=cache)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert list((cache / "langmem-cog" / "onnx").glob("*-int8-*")), "the quantisation path did not run"
    assert (out["first"], out["second"]) == ("t0", "t2")
    assert out["handlers"] == ["APP %(message)s"]  # root holds the app's handler, only
    err = proc.stderr
    assert "APP configured" in err.splitlines()
    for noise in ("DEBUG:bm25s", "Building index", "Loading weights", "WARNING:root", "INFO:root"):
        assert noise not in err, f"{noise!r} on stderr:\n{err[-3000:]}"
