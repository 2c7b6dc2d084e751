"""Shared fixtures: offline environment, stores over the fake embedder, unique namespaces.

Each ephemeral store has an in-memory Chroma database of its own (Chroma's ``EphemeralClient``
instances share one system per process; ``TurnStore`` gives each store a fresh database in it).
Tests still take namespaces from the ``ns`` fixture (a fresh uuid-based id), never a fixed one,
so that stores shared by a module (or one data directory) never mix tests.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["ANONYMIZED_TELEMETRY"] = "False"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import uuid  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from fakes import FakeEmbeddings  # noqa: E402

from langmem_cog.config import CogMemConfig  # noqa: E402
from langmem_cog.store import TurnStore  # noqa: E402


@pytest.fixture(autouse=True)
def _session_environment() -> Iterator[None]:
    """Each test starts from the session's environment: a test that runs the command line in-process
    (``langmem_cog.cli.main`` sets defaults such as ``HF_HUB_DISABLE_PROGRESS_BARS``) leaves nothing
    behind for the tests after it, whichever order or worker runs them."""
    saved = dict(os.environ)
    yield
    if dict(os.environ) != saved:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def benchmark_script() -> Callable[[str], object]:
    """Import a script of ``benchmarks/`` by its name (they are scripts, not a package)."""
    import importlib.util

    def load(name: str) -> object:
        path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"{name}_script", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


def unique_namespace(prefix: str = "ns") -> str:
    """A namespace id no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def ns() -> str:
    """A fresh namespace id."""
    return unique_namespace()


@pytest.fixture
def ns_factory() -> Callable[[str], str]:
    """Make more fresh namespace ids: ``ns_factory("other")``."""
    return unique_namespace


@pytest.fixture
def fake_embeddings() -> FakeEmbeddings:
    return FakeEmbeddings()


@pytest.fixture
def fake_store(fake_embeddings: FakeEmbeddings) -> TurnStore:
    """An in-memory store over the fake embedder (its own Chroma database: it sees no other store's turns)."""
    return TurnStore(CogMemConfig.preset("ephemeral"), embeddings=fake_embeddings)


@pytest.fixture
def persistent_store_factory(tmp_path: Path) -> Callable[..., TurnStore]:
    """Open a persistent store on ``tmp_path`` (call again to "reopen" the same data)."""

    def make(**overrides: object) -> TurnStore:
        cfg = CogMemConfig.preset("default", data_dir=tmp_path, **overrides)
        return TurnStore(cfg, embeddings=FakeEmbeddings())

    return make


SAMPLE_CONVERSATION = Path(__file__).resolve().parents[1] / "langmem_cog" / "data" / "sample_conversation.json"


@pytest.fixture(scope="module")
def two_conversations(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LoCoMo-schema file with two conversations (the bundled sample under two ids)."""
    import copy
    import json

    rec = json.loads(SAMPLE_CONVERSATION.read_text())[0]
    other = copy.deepcopy(rec)
    other["sample_id"] = "demo-2"
    path = tmp_path_factory.mktemp("data") / "two.json"
    path.write_text(json.dumps([rec, other]))
    return path
