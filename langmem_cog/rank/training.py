"""Fine-tune the reranker: a cross-encoder on the packaged MiniLM, listwise and gold-only.

Each training example is one query's candidate list (the fused top-10, plus its gold turns when
the first stage missed them) with gold flags. The loss is the negative log of the softmax mass
on the gold candidates (``logsumexp(all) - logsumexp(gold)``), so only gold labels teach the
model: no teacher scores, no answer text. The head starts random on top of the bi-encoder's
transformer. The checkpoint is written in fp16 (about 45 MB for MiniLM-L6).

Nothing here reads benchmark files: callers (the CLI, the benchmark) build the examples from
their own train split.

Example:
    >>> ex = RerankExample(query="QUERY_TIME: 9. Where does Leo work?",
    ...                    docs=["MEMORY_TIME: 2. Leo: I work at the bakery.", "MEMORY_TIME: 3. Maya: Nice!"],
    ...                    gold=[True, False])
    >>> ex.n_gold
    1
"""

from __future__ import annotations

import json
import logging
import math
import numbers
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langmem_cog.checks import nonnegative_int, nonnegative_weight, positive_int, positive_number
from langmem_cog.errors import InvalidInputError
from langmem_cog.rank.cross_encoder import POOLINGS, load_backbone, pair_logits

__all__ = ["RerankExample", "TrainConfig", "train_cross_encoder", "uniform_loss", "usable_examples"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RerankExample:
    """One query's list: formatted query, formatted candidate texts, gold flags (aligned).

    ``prior`` optionally holds the first stage's score of each doc: with
    ``TrainConfig.prior_weight > 0`` the loss is taken on ``logit + prior_weight * prior``, so the
    cross-encoder learns what the first stage gets wrong rather than relearning what it knows.
    """

    query: str
    docs: Sequence[str]
    gold: Sequence[bool]
    prior: Sequence[float] | None = None

    def __post_init__(self) -> None:
        if len(self.docs) != len(self.gold):
            raise InvalidInputError(f"example has {len(self.docs)} docs but {len(self.gold)} gold flags: pass one flag per doc")
        if self.prior is not None and (len(self.prior) != len(self.docs) or not all(map(math.isfinite, self.prior))):
            raise InvalidInputError(
                f"example has {len(self.docs)} docs but prior {list(self.prior)[:12]!r}: pass one finite score per doc, or None"
            )

    @property
    def n_gold(self) -> int:
        return sum(bool(g) for g in self.gold)


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of :func:`train_cross_encoder`.

    ``freeze_layers`` keeps the embeddings and the first N transformer layers fixed (less backward
    work on CPU); ``max_queries`` trains on a seeded random subset of the lists; ``num_layers`` keeps
    only the backbone's first N transformer layers (a smaller, faster reranker; ``None``: all);
    ``prior_weight`` adds that many times each example's ``prior`` (the first-stage score) to the
    logits inside the loss (residual training; 0: the cross-encoder alone); ``pooling`` is the head's
    pooling (:data:`~langmem_cog.rank.cross_encoder.POOLINGS`; ``None``: the backbone's own), saved with
    the checkpoint so that scoring pools the same way.

    Raises:
        InvalidInputError: If a field is out of its range (``epochs`` and ``freeze_layers`` integers >= 0;
            ``lr`` a finite number above 0; ``weight_decay`` and ``prior_weight`` finite and >= 0;
            ``warmup`` 0 to 1; ``max_length``, ``queries_per_step``, ``threads``, ``max_queries`` and
            ``num_layers`` positive integers, the last three or ``None``; ``pooling`` one of
            :data:`~langmem_cog.rank.cross_encoder.POOLINGS` or ``None``).
    """

    epochs: int = 2
    lr: float = 5e-5
    weight_decay: float = 0.01
    warmup: float = 0.1
    max_length: int = 96
    queries_per_step: int = 4
    seed: int = 0
    threads: int | None = None
    freeze_layers: int = 0
    max_queries: int | None = None
    num_layers: int | None = None
    prior_weight: float = 0.0
    pooling: str | None = None

    def __post_init__(self) -> None:
        nonnegative_int(self.epochs, "epochs")  # 0: no step, the backbone written as it is
        positive_number(self.lr, "lr")
        nonnegative_weight(self.weight_decay, "weight_decay")
        if nonnegative_weight(self.warmup, "warmup") > 1:
            raise InvalidInputError(f"warmup={self.warmup!r} is invalid: pass the share of steps that warm up, 0 to 1")
        positive_int(self.max_length, "max_length")
        positive_int(self.queries_per_step, "queries_per_step")
        if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral):
            raise InvalidInputError(f"seed={self.seed!r} is invalid: pass an integer")
        positive_int(self.threads, "threads", allow_none=True)
        nonnegative_int(self.freeze_layers, "freeze_layers")
        positive_int(self.max_queries, "max_queries", allow_none=True)
        positive_int(self.num_layers, "num_layers", allow_none=True)
        nonnegative_weight(self.prior_weight, "prior_weight")
        if self.pooling is not None and self.pooling not in POOLINGS:
            raise InvalidInputError(f"pooling={self.pooling!r} is invalid: use one of {list(POOLINGS)}, or None")


def _freeze(model: Any, n_layers: int) -> None:
    """Freeze the embeddings and the first ``n_layers`` encoder layers (0: train everything)."""
    if n_layers <= 0:
        return
    base = getattr(model, model.base_model_prefix, None)
    if base is None or not hasattr(base, "encoder"):
        raise InvalidInputError(f"freeze_layers={n_layers}: this backbone has no BERT-style encoder; use 0")
    for p in base.embeddings.parameters():
        p.requires_grad = False
    for layer in base.encoder.layer[:n_layers]:
        for p in layer.parameters():
            p.requires_grad = False


def usable_examples(examples: Sequence[RerankExample]) -> list[RerankExample]:
    """The lists training learns from: those with both a gold and a non-gold candidate."""
    return [e for e in examples if 0 < e.n_gold < len(e.docs)]


def uniform_loss(examples: Sequence[RerankExample]) -> float:
    """The listwise loss of equal logits on the usable lists: what a reranker that learned nothing
    scores, so the bar its final loss must get under (``nan`` without usable lists).

    Example:
        >>> ex = RerankExample(query="q", docs=["a", "b", "c", "d"], gold=[True, False, True, False])
        >>> round(uniform_loss([ex]), 4)  # ln(4 candidates / 2 gold)
        0.6931
    """
    usable = usable_examples(examples)
    return sum(math.log(len(e.docs) / e.n_gold) for e in usable) / len(usable) if usable else math.nan


def train_cross_encoder(
    examples: Sequence[RerankExample],
    backbone: str | Path,
    out_dir: str | Path,
    config: TrainConfig | None = None,
    *,
    progress: Callable[[Iterable[Any], str, int], Iterable[Any]] | None = None,
    provenance: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train a cross-encoder from ``backbone`` on ``examples`` and save it to ``out_dir``.

    Args:
        examples: Training lists; those with no gold or no negative are skipped.
        backbone: A transformer directory (the packaged MiniLM, or a previous checkpoint to continue).
        out_dir: Where the fp16 checkpoint, tokenizer and ``training.json`` go.
        config: Hyper-parameters.
        progress: Optional progress wrapper over the steps.
        provenance: Extra facts recorded in ``training.json`` (command, data hash, ...).

    Returns:
        The ``training.json`` dict (examples used, steps, mean loss of the last epoch, the loss of
        equal logits on the same lists (``uniform_loss``: a final loss near it means nothing was
        learned), seconds).
    """
    import torch

    config = config or TrainConfig()
    usable = usable_examples(examples)
    if not usable:
        raise InvalidInputError("no training list has both a gold and a non-gold candidate: nothing to learn")
    rng = random.Random(config.seed)
    if config.max_queries is not None and len(usable) > config.max_queries:
        usable = rng.sample(usable, config.max_queries)
    torch.manual_seed(config.seed)
    prev_threads = torch.get_num_threads()
    if config.threads:
        torch.set_num_threads(config.threads)
    model, tok = load_backbone(backbone, num_layers=config.num_layers, pooling=config.pooling)
    _freeze(model, config.freeze_layers)
    model.train()
    steps_per_epoch = math.ceil(len(usable) / config.queries_per_step)
    total = steps_per_epoch * config.epochs
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config.lr,
                            weight_decay=config.weight_decay)
    warm = max(1, int(config.warmup * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else max(0.0, (total - s) / max(1, total - warm))
    )
    t0 = time.perf_counter()
    losses: list[float] = []
    step = 0
    try:
        for epoch in range(config.epochs):
            order = list(range(len(usable)))
            rng.shuffle(order)
            # Lists of similar length share a batch (less padding); batch order is still shuffled.
            order.sort(key=lambda i: sum(len(d) for d in usable[i].docs) // max(len(usable[i].docs), 1) // 40)
            batches = [order[i : i + config.queries_per_step] for i in range(0, len(order), config.queries_per_step)]
            rng.shuffle(batches)
            it: Iterable[Any] = progress(batches, f"epoch {epoch + 1}", len(batches)) if progress else batches
            epoch_losses: list[float] = []
            for batch in it:
                exs = [usable[i] for i in batch]
                firsts = [e.query for e in exs for _ in e.docs]
                seconds = [d for e in exs for d in e.docs]
                enc = tok(firsts, seconds, padding=True, truncation="longest_first",
                          max_length=config.max_length, return_tensors="pt")
                logits = pair_logits(model, enc)
                loss = logits.new_zeros(())
                start = 0
                for e in exs:
                    lg = logits[start : start + len(e.docs)]
                    if config.prior_weight and e.prior is not None:
                        lg = lg + config.prior_weight * torch.tensor(list(e.prior), dtype=lg.dtype)
                    mask = torch.tensor(list(e.gold), dtype=torch.bool)
                    loss = loss + torch.logsumexp(lg, 0) - torch.logsumexp(lg[mask], 0)
                    start += len(e.docs)
                loss = loss / len(exs)
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                step += 1
                epoch_losses.append(float(loss.detach()))
            losses = epoch_losses
            logger.info("epoch %d: mean loss %.4f", epoch + 1, sum(losses) / max(len(losses), 1))
    finally:
        if config.threads:
            torch.set_num_threads(prev_threads)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.to(torch.float16).save_pretrained(str(out), safe_serialization=True)
    tok.save_pretrained(str(out))
    report = {
        "backbone": str(backbone),
        "examples": len(usable),
        "skipped": len(examples) - len(usable),
        "steps": step,
        "final_epoch_loss": sum(losses) / max(len(losses), 1),
        "uniform_loss": uniform_loss(usable),
        "seconds": round(time.perf_counter() - t0, 1),
        "config": config.__dict__,
        "objective": "listwise gold-only softmax over the fused top-10 (+ missed gold)"
        + (f", on logit + {config.prior_weight} x first-stage score" if config.prior_weight else ""),
        **(provenance or {}),
    }
    (out / "training.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report
