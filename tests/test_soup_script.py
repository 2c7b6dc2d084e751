"""benchmarks/soup.py: the mean of checkpoints' weights, refused across architectures."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file


def _checkpoint(folder: Path, **tensors: torch.Tensor) -> Path:
    folder.mkdir(parents=True)
    save_file(tensors, str(folder / "model.safetensors"))
    return folder


def test_soup_averages_float_tensors_and_keeps_integer_ones(tmp_path: Path, benchmark_script) -> None:
    soup = benchmark_script("soup").soup
    a = _checkpoint(tmp_path / "a", w=torch.tensor([1.0, 2.0]), ids=torch.tensor([0, 1]))
    b = _checkpoint(tmp_path / "b", w=torch.tensor([3.0, 6.0]), ids=torch.tensor([0, 1]))
    state = soup([a, b])
    assert state["w"].tolist() == [2.0, 4.0] and state["w"].dtype == torch.float32
    assert state["ids"].tolist() == [0, 1] and state["ids"].dtype == torch.int64


def test_soup_refuses_checkpoints_of_different_shapes(tmp_path: Path, benchmark_script) -> None:
    soup = benchmark_script("soup").soup
    a = _checkpoint(tmp_path / "a", w=torch.zeros(2))
    b = _checkpoint(tmp_path / "b", w=torch.zeros(3))
    with pytest.raises(SystemExit, match="same tensors"):
        soup([a, b])
