"""A damaged models folder is a named error naming the file, before any ranking; never a silent fallback."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes import FakeEmbeddings

from langmem_cog import CogMemConfig, CogMemRetriever, TurnStore
from langmem_cog.errors import DamagedModelError, LangMemCogError, ModelNotFoundError
from langmem_cog.rank.defaults import default_scorer, load_blend_settings, models_path
from langmem_cog.rank.manifest import MANIFEST, check_models, write_manifest
from langmem_cog.rank.scorer import FusionScorer


@pytest.fixture
def models(tmp_path: Path) -> Path:
    """A copy of the shipped models folder."""
    return Path(shutil.copytree(models_path(), tmp_path / "models"))


def retriever_over(folder: Path, tmp_path: Path) -> CogMemRetriever:
    store = TurnStore(CogMemConfig(data_dir=tmp_path / "data", models_dir=folder), embeddings=FakeEmbeddings())
    return CogMemRetriever(store=store, namespace="n", mode="cascade")


def test_the_shipped_folder_matches_its_manifest() -> None:
    check_models(models_path())
    listed = set(json.loads((models_path() / MANIFEST).read_text(encoding="utf-8"))["files"])
    assert {"fusion.json", "cascade.json", "reranker/model.safetensors", "reranker/tokenizer.json"} <= listed


def _remove(name: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).unlink()


def _truncate(name: str) -> Callable[[Path], None]:
    def cut(folder: Path) -> None:
        data = (folder / name).read_bytes()
        (folder / name).write_bytes(data[: len(data) // 2])

    return cut


def _alter_in_place(folder: Path) -> None:  # the same size, another weight
    path = folder / "fusion.json"
    text = path.read_text(encoding="utf-8")
    i = next(i for i, c in enumerate(text) if c.isdigit() and c != "9")
    path.write_text(text[:i] + "9" + text[i + 1:], encoding="utf-8")


@pytest.mark.parametrize(
    ("damage", "error", "needles"),
    [
        (_remove("fusion.json"), ModelNotFoundError, ("fusion.json", "is missing", "reinstall")),
        (_remove("cascade.json"), ModelNotFoundError, ("cascade.json", "is missing")),
        (_remove("reranker/tokenizer.json"), ModelNotFoundError, ("tokenizer.json", "is missing")),
        (_remove(MANIFEST), ModelNotFoundError, ("manifest.json", "is missing", "train-models")),
        (_truncate("reranker/model.safetensors"), DamagedModelError, ("model.safetensors", "truncated")),
        (_truncate("fusion.json"), DamagedModelError, ("fusion.json", "truncated")),
        (_alter_in_place, DamagedModelError, ("fusion.json", "SHA-256")),
        (_truncate(MANIFEST), DamagedModelError, ("manifest.json", "JSON")),
    ],
)
def test_a_damaged_models_folder_is_named_before_any_ranking(
    models: Path, tmp_path: Path, damage: Callable[[Path], None], error: type[LangMemCogError],
    needles: tuple[str, ...],
) -> None:
    damage(models)
    with pytest.raises(error) as info:
        retriever_over(models, tmp_path)
    assert all(n in str(info.value) for n in needles), str(info.value)
    with pytest.raises(error):
        default_scorer(models)
    with pytest.raises(error):
        load_blend_settings(models)


def test_non_finite_fusion_weights_are_named_even_in_a_listed_folder(models: Path, tmp_path: Path) -> None:
    path = models / "fusion.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["weights"][0] = float("nan")
    path.write_text(json.dumps(data), encoding="utf-8")
    write_manifest(models)  # the folder lists the file as it is now: only its content is wrong
    with pytest.raises(DamagedModelError, match="fusion.json holds non-finite weights"):
        retriever_over(models, tmp_path)


def test_a_fusion_json_that_is_no_scorer_names_the_file(models: Path) -> None:
    (models / "fusion.json").write_text('{"weights": [1, 2]}', encoding="utf-8")
    write_manifest(models)
    with pytest.raises(DamagedModelError, match=r"fusion\.json is not a fusion scorer"):
        default_scorer(models)


def test_a_whole_folder_ranks_and_a_folder_without_a_listed_file_falls_back_aloud(
    models: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert retriever_over(models, tmp_path).fusion is not None
    declared = Path(shutil.copytree(models, tmp_path / "declared"))  # a folder is read once per process: another
    (declared / "fusion.json").unlink()
    write_manifest(declared)  # a folder that declares no fusion scorer
    with caplog.at_level("WARNING"):
        scorer = default_scorer(declared)
    untrained = FusionScorer.untrained()
    assert scorer.features == untrained.features and (scorer.weights == untrained.weights).all()
    assert "has no fusion.json" in caplog.text


def test_write_manifest_needs_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="no models folder"):
        write_manifest(tmp_path / "nowhere")
    with pytest.raises(ModelNotFoundError, match="no models folder"):
        check_models(tmp_path / "nowhere")


def test_the_manifest_command_writes_and_checks(models: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from langmem_cog.cli import main

    assert main(["models", "manifest", "--check", str(models)]) == 0
    assert "every file matches its manifest" in capsys.readouterr().out
    (models / "cascade.json").unlink()
    assert main(["models", "manifest", "--check", str(models)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "cascade.json is missing" in err
    assert main(["models", "manifest", str(models)]) == 0  # the folder as it is now
    assert "cascade.json" not in json.loads((models / MANIFEST).read_text(encoding="utf-8"))["files"]
    assert main(["models", "manifest", "--check", str(models)]) == 0
