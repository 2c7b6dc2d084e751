"""A data directory records the embedder its vectors come from; opening it with another is a named error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fakes import FakeEmbeddings
from langchain_core.embeddings import DeterministicFakeEmbedding

from langmem_cog import CogMemConfig, TurnStore
from langmem_cog.embeddings import LocalSentenceEmbeddings, resolve_model_path
from langmem_cog.errors import ConfigError, StoreError
from langmem_cog.storage.identity import DATA_DIR_FORMAT, DATA_DIR_MANIFEST


def _cls_pooled_copy(tmp_path: Path) -> Path:
    """The packaged MiniLM with CLS pooling instead of mean pooling (the same weights and dimension)."""
    source = resolve_model_path("minilm")
    copy = tmp_path / "minilm-cls"
    for root, _, names in os.walk(source):
        for name in names:
            rel = (Path(root) / name).relative_to(source)
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            (copy / rel).symlink_to(Path(root) / name)
    pooling = copy / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text(encoding="utf-8"))
    pooling.unlink()
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(config), encoding="utf-8")
    return copy


def test_a_data_dir_opened_with_another_pooling_of_the_same_model_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    mean = LocalSentenceEmbeddings(resolve_model_path("minilm"))
    TurnStore(CogMemConfig(data_dir=data), embeddings=mean)
    manifest = json.loads((data / DATA_DIR_MANIFEST).read_text(encoding="utf-8"))
    assert manifest["format"] == DATA_DIR_FORMAT and manifest["embedder"]["pooling"]["pooling_mode_mean_tokens"]
    TurnStore(CogMemConfig(data_dir=data), embeddings=LocalSentenceEmbeddings(resolve_model_path("minilm")))
    with pytest.raises(ConfigError) as info:
        TurnStore(CogMemConfig(data_dir=data), embeddings=LocalSentenceEmbeddings(_cls_pooled_copy(tmp_path)))
    message = str(info.value)
    assert "mean_tokens pooling" in message and "cls_token pooling" in message and "new data directory" in message


def test_the_precision_is_recorded_but_does_not_refuse(tmp_path: Path) -> None:
    data = tmp_path / "data"
    TurnStore(CogMemConfig(data_dir=data), embeddings=LocalSentenceEmbeddings(resolve_model_path("minilm"),
                                                                             backend="torch", precision="fp32"))
    TurnStore(CogMemConfig(data_dir=data), embeddings=LocalSentenceEmbeddings(resolve_model_path("minilm")))


def test_another_langchain_embeddings_class_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    TurnStore(CogMemConfig(data_dir=data), embeddings=FakeEmbeddings())
    with pytest.raises(ConfigError, match="DeterministicFakeEmbedding"):
        TurnStore(CogMemConfig(data_dir=data), embeddings=DeterministicFakeEmbedding(size=16))


def test_a_newer_format_or_an_unreadable_manifest_is_named(tmp_path: Path) -> None:
    data = tmp_path / "data"
    TurnStore(CogMemConfig(data_dir=data), embeddings=FakeEmbeddings())
    path = data / DATA_DIR_MANIFEST
    record = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**record, "format": DATA_DIR_FORMAT + 1}), encoding="utf-8")
    with pytest.raises(ConfigError, match="newer langmem-cog"):
        TurnStore(CogMemConfig(data_dir=data), embeddings=FakeEmbeddings())
    path.write_text('{"format": 1, "embed', encoding="utf-8")
    with pytest.raises(StoreError, match=DATA_DIR_MANIFEST):
        TurnStore(CogMemConfig(data_dir=data), embeddings=FakeEmbeddings())


def test_an_ephemeral_store_writes_no_manifest(tmp_path: Path) -> None:
    TurnStore(CogMemConfig.preset("ephemeral", data_dir=tmp_path / "data"), embeddings=FakeEmbeddings())
    assert not (tmp_path / "data" / DATA_DIR_MANIFEST).exists()
