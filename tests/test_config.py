"""The configuration: storage and models in ``CogMemConfig``, one nested settings object per other concern."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

import langmem_cog
from langmem_cog.config import NESTED_FIELDS, CogMemConfig, RetrieverSettings, SearchSettings
from langmem_cog.errors import ConfigError


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
    unread = [f for f in model.model_fields if f not in ("search", "retriever")
              and not re.search(rf"\.{f}\b", source)]
    assert unread == []


def test_exported_graphs_live_under_the_data_dir_the_user_chose(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from langmem_cog.runtime import onnx_cache_dir

    monkeypatch.delenv("LANGMEM_COG_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert onnx_cache_dir() == tmp_path / "xdg" / "langmem-cog" / "cache" / "onnx"
    monkeypatch.setenv("LANGMEM_COG_DATA_DIR", str(tmp_path / "mine"))  # nothing written outside it
    assert onnx_cache_dir() == tmp_path / "mine" / "cache" / "onnx"


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
