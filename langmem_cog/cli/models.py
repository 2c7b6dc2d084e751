"""The commands that make or install models: ``train-models`` (alias ``train-reranker``: fit the shipped
fusion scorer and cross-encoder), ``models install`` and ``models manifest``."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
from pathlib import Path

from langmem_cog.cli._common import progress
from langmem_cog.cli.bench import default_longmemeval
from langmem_cog.errors import LangMemCogError


def cmd_train_models(args: argparse.Namespace) -> int:
    import shlex
    import tempfile

    from langmem_cog.bench.locomo import default_locomo_path
    from langmem_cog.bench.recipe import SHIPPED_RECIPE, PoolSource, refit_fusion, train_models

    paths = {"locomo": Path(args.locomo) if args.locomo else default_locomo_path(),
             "longmemeval": Path(args.longmemeval) if args.longmemeval else default_longmemeval()}
    datasets: dict[str, Path] = {}
    for name in args.datasets:
        path = paths[name]
        if path is None:
            raise LangMemCogError(f"no {name} data at ../shared/data: pass --{name} PATH")
        datasets[name] = path
    recipe = dataclasses.replace(
        SHIPPED_RECIPE,
        drop_features=tuple(args.drop_features) if args.drop_features is not None else SHIPPED_RECIPE.drop_features,
        l2=args.l2 if args.l2 is not None else SHIPPED_RECIPE.l2,
        fit_fusion=SHIPPED_RECIPE.fit_fusion and not args.prior,
        pair_positions=SHIPPED_RECIPE.pair_positions if args.pair_positions is None else args.pair_positions == "on",
        name_speakers=SHIPPED_RECIPE.name_speakers if args.name_speakers is None else args.name_speakers,
        same_role=SHIPPED_RECIPE.same_role if args.same_role is None else args.same_role == "on",
        blend_rule=args.blend_rule or SHIPPED_RECIPE.blend_rule,
        blend_scale=args.blend_scale or SHIPPED_RECIPE.blend_scale,
        score_max_length=args.score_max_length or SHIPPED_RECIPE.score_max_length,
        list_depth=args.list_depth or SHIPPED_RECIPE.list_depth,
        train=dataclasses.replace(SHIPPED_RECIPE.train, **{
            name: value for name, value in (("freeze_layers", args.freeze_layers), ("epochs", args.epochs),
                                            ("lr", args.lr), ("max_length", args.max_length),
                                            ("prior_weight", args.prior_weight), ("num_layers", args.num_layers))
            if value is not None}))
    command = " ".join(shlex.quote(a) for a in ["langmem-cog", *sys.argv[1:]]).replace(str(Path.home()), "~")
    pools = PoolSource(args.pool_cache_dir, args.lme_limit)
    if args.fusion_only:
        done = refit_fusion(datasets, args.out, recipe=recipe, pools=pools, command=command, progress=progress)
        print(f"refitted the fusion scorer on {done['trained_on']}; kept the cross-encoder and blend; wrote {args.out}")
        return 0
    with contextlib.ExitStack() as stack:  # no --work-dir: the checkpoints go to a folder removed after
        work = Path(args.work_dir) if args.work_dir else Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="lmc-models-")))
        report = train_models(datasets, args.out, recipe=recipe, work_dir=work, pools=pools, command=command,
                              progress=progress, reuse=args.reuse)
    print(f"trained on {report['trained_on']}: {report.get('examples')} lists, {report.get('steps')} steps, "
          f"{report.get('seconds', 0):.0f} s; last-epoch loss {report.get('final_epoch_loss', float('nan')):.4f} "
          f"(uniform {report.get('uniform_loss', float('nan')):.4f}); blend weight {report.get('cross_encoder_weight')} "
          f"(held-out MRR {json.dumps(report.get('tune_mrr'))}); wrote {args.out}")
    return 0


def cmd_models_install(args: argparse.Namespace) -> int:
    from langmem_cog.embeddings import install_mpnet

    path = install_mpnet(Path(args.target) if args.target else None)
    print(f"all-mpnet-base-v2 installed at {path}")
    return 0


def cmd_models_manifest(args: argparse.Namespace) -> int:
    from langmem_cog.rank.manifest import check_models, write_manifest

    if args.check:
        check_models(args.folder)
        print(f"{args.folder}: every file matches its manifest")
        return 0
    path = write_manifest(args.folder)
    print(f"wrote {path}")
    return 0


def _positive_rate(text: str) -> float:
    """An argparse type: a learning rate, checked as :class:`TrainConfig` checks it (a finite number above 0)."""
    from langmem_cog.checks import positive_number

    try:
        return positive_number(float(text), "--lr")
    except ValueError as exc:  # float() of a non-number, or InvalidInputError (also a ValueError)
        raise argparse.ArgumentTypeError(f"{text!r}: pass a finite rate above 0, such as 2e-4") from exc


def _nonnegative_weight(text: str) -> float:
    """An argparse type: a finite weight >= 0."""
    from langmem_cog.checks import nonnegative_weight

    try:
        return nonnegative_weight(float(text), "--prior-weight")
    except ValueError as exc:  # float() of a non-number, or InvalidInputError (also a ValueError)
        raise argparse.ArgumentTypeError(f"{text!r}: pass a finite weight of 0 or more, such as 1.0") from exc


def _token_limit(text: str) -> int:
    """An argparse type: a cross-encoder pair's token limit, 8 to 512 (what the packaged MiniLM takes)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer: pass a token limit such as 96") from None
    if not 8 <= value <= 512:
        raise argparse.ArgumentTypeError(f"{text!r}: pass a token limit from 8 to 512, such as 96")
    return value


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``train-models``, ``models install`` and ``models manifest``."""
    tr = sub.add_parser("train-models", aliases=["train-reranker"],
                        help="fit the shipped fusion scorer and cross-encoder (the shipped recipe) on LoCoMo and "
                             "LongMemEval-S dev together, or on one of them (leave-one-dataset-out); never run by "
                             "install or the demo")
    tr.add_argument("--datasets", nargs="+", choices=["locomo", "longmemeval"], default=["locomo", "longmemeval"],
                    help="the labelled datasets fitted on (default: both; one of them to leave the other out)")
    tr.add_argument("--locomo", help="LoCoMo JSON (default: ../shared/data/locomo/locomo10.json)")
    tr.add_argument("--longmemeval", help="LongMemEval JSON(.gz) (default: ../shared/data/longmemeval/longmemeval_s_dev.json.gz)")
    tr.add_argument("--lme-limit", type=int, default=None, help="only the first N LongMemEval questions (bit-reversed order)")
    tr.add_argument("--out", default="langmem_cog/models", help="models folder to write (default: the package's)")
    tr.add_argument("--work-dir", help="where the cross-encoder trains (default: a temporary folder)")
    tr.add_argument("--pool-cache-dir", help="read / write the labelled pools here (DATASET-pools[-N].pkl)")
    tr.add_argument("--reuse", action="store_true", help="reuse a checkpoint in --work-dir trained on the same pools")
    tr.add_argument("--fusion-only", action="store_true",
                    help="refit only the fusion scorer of the models folder --out, in place; keep its cross-encoder "
                         "and blend (for a change to the candidate stage that the cross-encoder does not see)")
    tr.add_argument("--drop-features", nargs="*",
                    help="features (or groups: a feature family such as graph, style, context, or nontransfer) held at zero (default: the "
                         "recipe's, nontransfer; pass none to fit every feature)")
    tr.add_argument("--l2", type=float, default=None, help="the fusion scorer's L2 penalty (default: the recipe's)")
    tr.add_argument("--prior", action="store_true",
                    help="keep the untrained fusion prior and fit the cross-encoder alone")
    tr.add_argument("--pair-positions", choices=["on", "off"], default=None,
                    help="the cross-encoder's pairs carry the turns' positions (QUERY_TIME / MEMORY_TIME; default: "
                         "the recipe's)")
    tr.add_argument("--name-speakers", type=float, default=None, metavar="SHARE",
                    help="share of the assistant-chat training lists told as chats between two named people "
                         "(0-1; default: the recipe's)")
    tr.add_argument("--same-role", choices=["on", "off"], default=None,
                    help="tell each assistant-chat training list within its gold's role (user or assistant): the "
                         "cross-encoder learns what a turn says, not who said it (default: the recipe's, off)")
    from langmem_cog.bench.blend import BLEND_RULES
    from langmem_cog.rank.compressor import SCALES

    tr.add_argument("--blend-rule", choices=list(BLEND_RULES), default=None,
                    help="how held-out MRR picks the cross-encoder's blend weight: one_se (the smallest weight within "
                         "one standard error of the best) or best (default: the recipe's, one_se)")
    tr.add_argument("--blend-scale", choices=list(SCALES), default=None,
                    help="how the cross-encoder's and the first stage's scores are put on one scale before the "
                         "blend: z (z-scores within the top 10) or center (centred logits, each model's spread "
                         "kept; default: the recipe's, center)")
    tr.add_argument("--freeze-layers", type=int, choices=range(0, 7), default=None, metavar="N",
                    help="keep the cross-encoder's embeddings and first N transformer layers fixed while it trains "
                         "(default: the recipe's)")
    tr.add_argument("--epochs", type=int, choices=range(1, 11), default=None, metavar="N",
                    help="passes over the cross-encoder's training lists (default: the recipe's)")
    tr.add_argument("--lr", type=_positive_rate, default=None,
                    help="the cross-encoder's peak learning rate (default: the recipe's)")
    tr.add_argument("--max-length", type=_token_limit, default=None, metavar="N",
                    help="token limit of each (question, turn) pair while the cross-encoder trains (default: the "
                         "recipe's; it scores at the recipe's score_max_length)")
    tr.add_argument("--score-max-length", type=_token_limit, default=None, metavar="N",
                    help="token limit of each pair when the cross-encoder scores (held-out blend choice and the "
                         "shipped cascade.json; default: the recipe's)")
    tr.add_argument("--prior-weight", type=_nonnegative_weight, default=None, metavar="W",
                    help="residual training: the cross-encoder's loss is taken on its logit plus W x the fused "
                         "first-stage score (0: the cross-encoder alone; default: the recipe's)")
    tr.add_argument("--num-layers", type=int, choices=range(1, 25), default=None, metavar="N",
                    help="keep the backbone's first N transformer layers in the cross-encoder, 1 to the backbone's "
                         "depth (the packaged MiniLM has 6; default: the recipe's, 4)")
    tr.add_argument("--list-depth", type=int, choices=range(1, 101), default=None, metavar="N",
                    help="how deep each cross-encoder training list reaches into the fused ranking, 1-100 (the "
                         "compressor reorders the top 10; default: the recipe's)")
    tr.set_defaults(func=cmd_train_models)
    models = sub.add_parser("models", help="install optional local models, or write or check a models folder's manifest").add_subparsers(dest="models", required=True)
    inst = models.add_parser("install", help="install a model from its PyPI part packages")
    inst.add_argument("name", choices=["mpnet"], help="the model to install (mpnet: all-mpnet-base-v2)")
    inst.add_argument("--target", help="model directory (default: ~/.local/share/langmem-cog/models/...)")
    inst.set_defaults(func=cmd_models_install)
    man = models.add_parser("manifest", help="list a models folder's files with their sizes and SHA-256 in its "
                                             "manifest.json (train-models writes one), or --check them")
    man.add_argument("folder", help="the models folder")
    man.add_argument("--check", action="store_true", help="check the files against the manifest instead of writing it")
    man.set_defaults(func=cmd_models_manifest)
