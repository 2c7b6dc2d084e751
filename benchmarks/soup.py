"""Average the weights of cross-encoder checkpoints (a "model soup") into a copy of a models folder.

``langmem-cog train-models`` on LongMemEval alone cross-fits the blend weight: it fine-tunes one
checkpoint per fold (``WORK/folds/fold-K``) and a final one on every question (``WORK/reranker``), all
from the same backbone with the same settings. This script writes a models folder whose cross-encoder
is the element-wise mean of such checkpoints, everything else (``fusion.json``, ``cascade.json`` with
its blend weight) copied from the fitted folder, so that ``langmem-cog bench transfer --models OUT``
scores it as it scores the fit::

    python benchmarks/soup.py --models results/models-lme-s25 --out results/models-lme-s25soup \\
        results/W-lme-s25/reranker results/W-lme-s25/folds/fold-*

Every checkpoint must hold the same tensors (names and shapes); the tokenizer and config come from
the models folder's own ``reranker/``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

WEIGHTS = "model.safetensors"


def soup(checkpoints: list[Path]) -> dict[str, torch.Tensor]:
    """The element-wise mean of the checkpoints' floating-point tensors (others: the first one's)."""
    states = [load_file(str(c / WEIGHTS)) for c in checkpoints]
    first = states[0]
    for c, s in zip(checkpoints[1:], states[1:], strict=True):
        if s.keys() != first.keys() or any(s[k].shape != first[k].shape for k in first):
            raise SystemExit(f"{c} does not hold the same tensors as {checkpoints[0]}: a soup needs one architecture")
    return {k: torch.stack([s[k].double() for s in states]).mean(0).to(v.dtype) if v.is_floating_point() else v.clone()
            for k, v in first.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, required=True, help="a folder written by langmem-cog train-models")
    ap.add_argument("--out", type=Path, required=True, help="the models folder to write (must not exist)")
    ap.add_argument("checkpoints", nargs="+", type=Path, help="checkpoint folders, each with model.safetensors")
    args = ap.parse_args(argv)
    if args.out.exists():
        raise SystemExit(f"{args.out} exists: pass a new folder")
    state = soup(args.checkpoints)
    shutil.copytree(args.models, args.out)
    save_file(state, str(args.out / "reranker" / WEIGHTS), metadata={"format": "pt"})
    meta_path = args.out / "reranker" / "training.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["soup"] = [c.name if c.name != "reranker" else "final" for c in args.checkpoints]
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"{args.out}: the mean of {len(args.checkpoints)} checkpoints ({', '.join(meta['soup'])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
