"""The configuration: storage and models in ``CogMemConfig``, one nested settings object per other concern."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError

import langmem_cog
from langmem_cog.config import (
    NESTED_FIELDS,
    CascadeSettings,
    CogMemConfig,
    RetrieverSettings,
    SearchSettings,
    default_cache_dir,
)
from langmem_cog.errors import ConfigError, InvalidInputError


def test_defaults_and_nesting() -> None:
    cfg = CogMemConfig()
    assert cfg.search == SearchSettings() and cfg.retriever == RetrieverSettings()
    assert (cfg.retriever.mode, cfg.retriever.k, cfg.retriever.max_tokens) == ("cascade", 10, None)
    assert (cfg.search.fusion, cfg.search.lexical_weight) == ("zscore", 1.0)
    assert CogMemConfig(retriever={"mode": "hybrid", "k": 4}).retriever == RetrieverSettings(mode="hybrid", k=4)


def test_nested_settings_are_frozen_and_checked() -> None:
    with pytest.raises(ValidationError):
        CogMemConfig().search.lexical_weight = 2.0  # type: ignore[misc]
    with pytest.raises(ValidationError):
        RetrieverSettings(mode="graph")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        SearchSettings(candidates=0)


@pytest.mark.parametrize("name", sorted(NESTED_FIELDS))
def test_a_nested_field_passed_flat_names_where_it_belongs(name: str) -> None:
    group, field = NESTED_FIELDS[name]
    with pytest.raises(ConfigError, match=rf"pass {group}=\w+Settings\({field}="):
        CogMemConfig.preset("ephemeral", **{name: 3})
    with pytest.raises(ValidationError, match=f"{name!r} is not a field of CogMemConfig"):
        CogMemConfig(**{name: 3})


def test_from_env_sets_the_retriever_mode_and_keeps_the_rest() -> None:
    cfg = CogMemConfig.from_env("ephemeral", environ={"LANGMEM_COG_RETRIEVAL": " hybrid ",
                                                      "LANGMEM_COG_EMBED_PRECISION": "fp32"})
    assert (cfg.retriever.mode, cfg.embed_precision, cfg.chroma_mode) == ("hybrid", "fp32", "ephemeral")
    assert cfg.search == SearchSettings()
    with pytest.raises(ConfigError):
        CogMemConfig.from_env(environ={"LANGMEM_COG_RETRIEVAL": "graph"})


@pytest.mark.parametrize("model", [CogMemConfig, SearchSettings, RetrieverSettings])
def test_every_setting_is_read_by_the_library(model: type) -> None:
    """A field no library code reads is a setting that does nothing (``config.py`` itself not counted)."""
    root = Path(langmem_cog.__file__).parent
    source = "\n".join(p.read_text(encoding="utf-8") for p in root.rglob("*.py") if p.name != "config.py")
    unread = [f for f in model.model_fields if f not in ("search", "retriever", "cascade")
              and not re.search(rf"\.{f}\b", source)]
    assert unread == []


def test_exported_graphs_live_under_the_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The cache directory is computed when used: ``$XDG_CACHE_HOME/langmem-cog`` else ``~/.cache/langmem-cog``;
    the data directory's variable does not move it."""
    from langmem_cog.runtime import onnx_cache_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("LANGMEM_COG_DATA_DIR", str(tmp_path / "data"))
    assert default_cache_dir() == CogMemConfig().resolved_cache_dir() == tmp_path / "xdg" / "langmem-cog"
    assert onnx_cache_dir() == tmp_path / "xdg" / "langmem-cog" / "onnx"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert onnx_cache_dir() == tmp_path / "home" / ".cache" / "langmem-cog" / "onnx"
    mine = CogMemConfig(cache_dir=tmp_path / "mine")
    assert onnx_cache_dir(mine.resolved_cache_dir()) == onnx_cache_dir(mine.cache_dir) == tmp_path / "mine" / "onnx"
    assert CogMemConfig(cache_dir="~/c").resolved_cache_dir() == tmp_path / "home" / "c"


def test_from_env_reads_the_cache_dir() -> None:
    cfg = CogMemConfig.from_env("ephemeral", environ={"LANGMEM_COG_CACHE_DIR": "/srv/lmc-cache",
                                                      "LANGMEM_COG_DATA_DIR": "/srv/lmc-data"})
    assert (cfg.cache_dir, cfg.data_dir) == (Path("/srv/lmc-cache"), Path("/srv/lmc-data"))
    assert CogMemConfig.from_env(environ={}).cache_dir is None
    assert CogMemConfig.from_env(environ={"LANGMEM_COG_CACHE_DIR": ""}).cache_dir is None


def test_importing_the_library_reads_no_setting_from_the_environment() -> None:
    """No module of the package reads an environment variable at import (the defaults are computed when used)."""
    code = textwrap.dedent("""
        import json, os, sys
        root = os.path.join(sys.argv[1], "langmem_cog")
        reads = []

        class Spy(dict):
            def _note(self, key):
                f = sys._getframe(2)
                while f is not None and os.path.basename(f.f_code.co_filename) in ("os.py", "<frozen os>"):
                    f = f.f_back
                if f is not None and os.path.abspath(f.f_code.co_filename).startswith(root):
                    reads.append(f"{key} ({os.path.relpath(f.f_code.co_filename, root)}:{f.f_lineno})")

            def get(self, key, default=None):
                self._note(key)
                return super().get(key, default)

            def __getitem__(self, key):
                self._note(key)
                return super().__getitem__(key)

            def __contains__(self, key):
                self._note(key)
                return super().__contains__(key)

        os.environ = Spy(os.environ)
        import langmem_cog, langmem_cog.config, langmem_cog.runtime, langmem_cog.embeddings, langmem_cog.rank.defaults
        print(json.dumps(reads))
    """)
    root = Path(langmem_cog.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1", "LANGMEM_COG_CACHE_DIR": "/nowhere"}
    proc = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=300,
                          env=env, cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_the_cascade_sizes_are_a_frozen_checked_part_of_the_config() -> None:
    cfg = CogMemConfig()
    assert cfg.cascade == CascadeSettings()
    # today's sizes, which the shipped models were chosen with: every ranking stays as it was
    assert dataclasses.astuple(cfg.cascade) == (10, 8, 50, 2000, 200)
    assert CogMemConfig(cascade={"rerank_depth": 20}).cascade == CascadeSettings(rerank_depth=20)
    sizes = CascadeSettings(raw_protect=0, pool_cut=50)
    assert CogMemConfig.preset("ephemeral", cascade=sizes).cascade is sizes
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.cascade.rerank_depth = 3  # type: ignore[misc]
    with pytest.raises(ConfigError, match="override cascade: .*rerank_depth=0 is invalid: pass a positive"):
        CogMemConfig.preset("ephemeral", cascade={"rerank_depth": 0})
    with pytest.raises(ConfigError, match="cascade.depth"):
        CogMemConfig.preset("ephemeral", cascade={"depth": 5})
    with pytest.raises(InvalidInputError, match="raw_protect=-1"):
        CascadeSettings(raw_protect=-1)
    with pytest.raises(ValidationError, match="pool_cut=0"):
        CogMemConfig(cascade={"pool_cut": 0})


@pytest.mark.parametrize(("env", "needles"), [
    ({"LANGMEM_COG_RETRIEVAL": "bogus", "LANGMEM_COG_DATA_DIR": "/tmp/x"}, ("retriever.mode", "fix LANGMEM_COG_RETRIEVAL")),
    ({"LANGMEM_COG_CHROMA_URL": "http://h:abc"}, ("port", "fix LANGMEM_COG_CHROMA_URL")),
    ({"LANGMEM_COG_CHROMA_URL": "http://h:99999"}, ("port", "fix LANGMEM_COG_CHROMA_URL")),
    ({"LANGMEM_COG_CHROMA_URL": "http://h:0"}, ("port",)),
    ({"LANGMEM_COG_CHROMA_URL": "https://h:443"}, ("TLS is not supported",)),
    ({"LANGMEM_COG_CHROMA_URL": "http://h:8001/tenant/x"}, ("without a path",)),
    ({"LANGMEM_COG_RERANK_PRECISION": "int4"}, ("rerank_precision", "fix LANGMEM_COG_RERANK_PRECISION")),
])
def test_a_bad_environment_variable_is_named(env: dict[str, str], needles: tuple[str, ...]) -> None:
    with pytest.raises(ConfigError) as info:
        CogMemConfig.from_env(environ=env)
    assert all(n in str(info.value) for n in needles), str(info.value)
    assert "PosixPath" not in str(info.value)  # says what to fix, not the config's internals


def test_a_good_chroma_url_and_padded_values_are_read() -> None:
    cfg = CogMemConfig.from_env(environ={"LANGMEM_COG_CHROMA_URL": " http://127.0.0.1:8001/ ",
                                         "LANGMEM_COG_EMBEDDER": "minilm "})
    assert (cfg.chroma_mode, cfg.chroma_host, cfg.chroma_port, cfg.embedder) == ("http", "127.0.0.1", 8001, "minilm")
    with pytest.raises(ConfigError, match="unknown preset"):
        CogMemConfig.preset(["default"])  # type: ignore[arg-type]
