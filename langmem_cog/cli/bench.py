"""``langmem-cog bench ...``: the benchmarks of :mod:`langmem_cog.bench`, imported inside each command
(the library never imports them)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from langmem_cog.cli._common import progress
from langmem_cog.errors import LangMemCogError


def _write_json(path: str | None, obj: Any) -> None:
    """Write ``obj`` as indented JSON to ``path`` (its folder made), if a path is given."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(obj, indent=2, default=str) + "\n", encoding="utf-8")


def cmd_bench_locomo(args: argparse.Namespace) -> int:
    from langmem_cog.bench.locomo import default_locomo_path, run_locomo, write_outputs
    from langmem_cog.bench.systems import get_system
    from langmem_cog.config import CogMemConfig

    data = Path(args.data) if args.data else default_locomo_path()
    if data is None:
        raise LangMemCogError("no LoCoMo data found at ../shared/data: pass --data PATH/TO/locomo10.json")
    config = CogMemConfig.preset("ephemeral", embed_precision=args.embed_precision, rerank_precision=args.rerank_precision)
    if get_system(args.system, "locomo").kind == "cascade":
        from langmem_cog.bench.cascade import CascadeFit, CascadeRun, ScoreSettings, run_cascade
        from langmem_cog.rank.training import TrainConfig

        train = TrainConfig(epochs=args.epochs, max_length=args.max_length, threads=args.threads,
                            freeze_layers=args.freeze_layers, max_queries=args.max_queries, lr=args.lr,
                            num_layers=args.num_layers, prior_weight=args.prior_weight, pooling=args.pooling)
        fit = CascadeFit(train=train, reranker_init=args.reranker_init, tune_queries=args.tune_queries,
                         fit_rest=args.fit_rest,
                         drop_features=tuple(args.drop_features.split(",")) if args.drop_features else (),
                         score=ScoreSettings(quantize=args.int8, max_length=args.score_max_length,
                                             threads=args.score_threads))
        run = run_cascade(data, args.system, fit=fit, run=CascadeRun(
            seeds=args.seeds, split=args.split, embedder=args.embedder, pool_cache=args.pool_cache,
            config=config, work_dir=args.work_dir, reuse=args.reuse, latency_sample=args.latency_sample, progress=progress))
    else:
        run = run_locomo(
            data,
            system=args.system,
            embedder=args.embedder,
            seeds=args.seeds,
            split=args.split,
            progress=progress,
            config=config,
        )
    write_outputs(run, args.out, args.rows)
    _print_summary(run.summary)
    for stage, p in (run.summary.get("latency_by_stage_ms") or {}).items():
        print(f"  {stage}: p50 {p['p50']:.1f} ms  p95 {p['p95']:.1f} ms")
    if "compressor_vs_input" in run.summary:
        print("compressor vs its input ranking:\n" + run.summary["compressor_vs_input"]["report"])
    return 0


def _print_summary(s: dict[str, Any]) -> None:
    f, sd = s["full"], s["std"]
    print(f"system={s['system']} embedder={s['embedder']} split={s['split']} n_rows={s['n_rows']}")
    print(
        "FULL  MRR {:.4f} ± {:.4f}  H@1 {:.4f} ± {:.4f}  R@10 {:.4f} ± {:.4f}  Hit@10 {:.4f} ± {:.4f}".format(
            f["mrr"], sd["mrr"], f["h1"], sd["h1"], f["r10"], sd["r10"], f["hit10"], sd["hit10"]
        )
    )
    for seed, m in s["per_seed"].items():
        print(f"  seed {seed:>3}: MRR {m['mrr']:.4f}  H@1 {m['h1']:.4f}  R@10 {m['r10']:.4f}  (n={m['n']})")
    for cat, m in sorted(s["per_category"].items()):
        print(f"  cat {cat}: MRR {m['mrr']:.4f}  H@1 {m['h1']:.4f}  R@10 {m['r10']:.4f}  (n={m['n']})")
    lat = s["latency_ms"]
    print(f"latency p50 {lat['p50']:.1f} ms  p95 {lat['p95']:.1f} ms   ingest {s['ingest_turns_per_s']:.0f} turns/s")
    if "params" in s:
        print(f"params: {json.dumps(s['params'])}")
    if "graph" in s:
        g = s["graph"]
        print(f"graph loop: {g['questions_run']} questions, gold grounded for {g['grounded_any_gold']:.4f} of rows "
              f"(the rest rank None, MRR 0), {g['mean_grounded_turns']:.1f} turns grounded and "
              f"{g['mean_steps']:.2f} steps per question; intents {json.dumps(g['intents'])}")
        for op, p in g["step_latency_ms"].items():
            print(f"  step {op:<9} p50 {p['p50']:.1f} ms  p95 {p['p95']:.1f} ms")


def cmd_bench_probe(args: argparse.Namespace) -> int:
    from langmem_cog.bench.memset import KINDS, run_memset
    from langmem_cog.bench.probe import run_retriever_probe
    from langmem_cog.config import CogMemConfig
    from langmem_cog.memory import CogMemory

    cfg = CogMemConfig.preset("ephemeral", models_dir=Path(args.models) if args.models else None,
                              rerank_precision=args.rerank_precision)
    memory = CogMemory(cfg)
    res = run_memset(memory=memory, mode=args.mode, split=args.split, folder=args.set)
    print(f"attribution-and-currency set, {res['mode']}, {res['split']} half ({', '.join(res['samples'])}); "
          "every turn of a conversation a candidate:")
    for kind in KINDS:
        r = res["by_kind"][kind]
        counterpart = {"record": "opinion", "belief": "record", "now": "old state", "before": "new state"}[kind]
        print(f"  {kind:<7} n={r['n']:<4} H@1 {r['h1']:.3f}  MRR {r['mrr']:.3f}  gold in top 10 {r['gold_in_10']:.3f}"
              f"  {counterpart} first {r['other_first']:.3f}")
    if args.rows:
        Path(args.rows).parent.mkdir(parents=True, exist_ok=True)
        Path(args.rows).write_text("".join(json.dumps(d) + "\n" for d in res["details"]), encoding="utf-8")
    if args.pairs:
        pairs = run_retriever_probe(cfg, mode=args.mode)
        print(f"pair probe, {pairs['mode']} ({pairs['pairs']} pairs, each question's pool its pair's two turns): "
              f"record questions H@1 {pairs['record_h1']:.3f}, belief questions H@1 {pairs['belief_h1']:.3f}")
    return 0


def cmd_bench_latency(args: argparse.Namespace) -> int:
    from langmem_cog.bench.latency import run_latency
    from langmem_cog.config import CogMemConfig

    data = _dataset_path(args.on, args.data)
    cfg = CogMemConfig.preset("ephemeral", models_dir=Path(args.models) if args.models else None,
                              rerank_precision=args.rerank_precision, embed_precision=args.embed_precision)
    res = run_latency(args.on, data, questions=args.questions, conversations=args.conversations,
                      haystacks=args.haystacks, config=cfg, max_seq_length=args.max_seq_length, progress=progress)
    _write_json(args.out, res)
    f, q = res["first_query_ms"], res["query_ms"]
    print(f"{res['mode']} on {args.on} ({res['n_turns']} turns, models: {res['models']}): first query after ingest "
          f"p50 {f['p50']:.1f} ms p95 {f['p95']:.1f} ms ({len(res['first_query_raw_ms'])} namespaces); "
          f"{res['n_queries']} queries p50 {q['p50']:.1f} ms p95 {q['p95']:.1f} ms")
    return 0


def cmd_bench_ingest(args: argparse.Namespace) -> int:
    from langmem_cog.bench.ingest import run_ingest
    from langmem_cog.config import CogMemConfig

    data = _dataset_path(args.on, args.data)
    res = run_ingest(args.on, data, limit=args.limit, data_dir=args.data_dir, progress=progress,
                     config=CogMemConfig(embed_precision=args.embed_precision))
    _write_json(args.out, res)
    shares = "  ".join(f"{k} {v:.0%}" for k, v in res["shares"].items())
    print(f"ingest {args.on}: {res['turns']} turns in {res['units']} calls, {res['turns_per_s']:.1f} turns/s end to "
          f"end ({res['backend']} {res['precision']}); plain fp32 encode {res['reference_turns_per_s']:.1f} turns/s; ratio "
          f"{res['ratio']:.2f}; time: {shares}")
    return 0


def cmd_bench_transfer(args: argparse.Namespace) -> int:
    from langmem_cog.bench.locomo import write_outputs
    from langmem_cog.bench.transfer import run_transfer

    data = _dataset_path(args.on, args.data)
    runs = run_transfer(args.models, args.on, data, pool_cache=args.pool_cache, lme_limit=args.lme_limit,
                        precision=args.rerank_precision, raw_protect=args.raw_protect, progress=progress)
    for name, run in runs.items():
        write_outputs(run, args.out.replace("{system}", name) if args.out else None,
                      args.rows.replace("{system}", name) if args.rows else None)
        f = run.summary["full"]
        extra = (f"  turn recall_all@10 {f['turn_recall_all@10']:.4f}" if "turn_recall_all@10" in f else
                 f"  H@1 {f['h1']:.4f}  R@10 {f['r10']:.4f}  Hit@10 {f['hit10']:.4f}")
        print(f"{name:<8} on {args.on} ({run.summary['n_questions']} questions): MRR {f['mrr']:.4f}{extra}")
    for key in ("compressor_vs_input", "graph_contribution", "vs_hybrid"):
        if key in runs["default"].summary:
            print(runs["default"].summary[key]["report"])
    return 0


def _dataset_path(on: str, given: str | None) -> Path:
    """``--data``, else the dataset ``on`` (``locomo`` / ``longmemeval``) under ../shared/data."""
    from langmem_cog.bench.locomo import default_locomo_path

    data = Path(given) if given else (default_locomo_path() if on == "locomo" else default_longmemeval())
    if data is None:
        raise LangMemCogError(f"no {on} data at ../shared/data: pass --data PATH")
    return data


def default_longmemeval() -> Path | None:
    """LongMemEval-S dev beside the LoCoMo data under ../shared/data (``None`` where it is absent)."""
    from langmem_cog.bench.locomo import default_locomo_path

    loc = default_locomo_path()
    if loc is None:
        return None
    p = loc.parent.parent / "longmemeval" / "longmemeval_s_dev.json.gz"
    return p if p.exists() else None


def cmd_bench_graph(args: argparse.Namespace) -> int:
    from langmem_cog.bench.graph import run_graph_bench
    from langmem_cog.bench.locomo import default_locomo_path

    data = Path(args.data) if args.data else default_locomo_path()
    if data is None:
        raise LangMemCogError("no LoCoMo data found at ../shared/data: pass --data PATH/TO/locomo10.json")
    s = run_graph_bench(data, embedder=args.embedder, probe=not args.no_probe, progress=progress)
    _write_json(args.out, s)
    print(f"{s['n_turns']} turns of {s['n_conversations']} conversations: {s['turns_per_s']:.0f} turns/s "
          "(extraction + graph update + consolidation)")
    print("nodes: " + ", ".join(f"{k} {v}" for k, v in s["nodes_by_type"].items()))
    print("edges: " + ", ".join(f"{k} {v}" for k, v in s["edges_by_type"].items()))
    print(f"evidence coverage: {s['evidence_coverage']:.4f} of {s['n_evidence_turns']} QA evidence turns")
    print(f"reconciliation: {json.dumps(s['reconciliation'])}")
    print(f"consolidation: {json.dumps(s['consolidation'])}")
    if "probe" in s:
        p = s["probe"]
        print(f"attribution probe ({p['pairs']} pairs, {p['embedder']}): flat error {p['flat_error']:.3f}, "
              f"typed graph error {p['typed_error']:.3f} (fallbacks {p['typed_fallbacks']})")
    return 0


def cmd_bench_longmemeval(args: argparse.Namespace) -> int:
    from langmem_cog.bench.locomo import write_outputs
    from langmem_cog.bench.longmemeval import (
        LmeSelection,
        LmeVectors,
        default_longmemeval_path,
        run_longmemeval,
        summarize_lme,
    )
    from langmem_cog.config import CogMemConfig

    if args.summarize_rows:
        return _summarize_lme_rows(args)
    data = Path(args.data) if args.data else default_longmemeval_path()
    if data is None:
        raise LangMemCogError("no LongMemEval data found at ../shared/data: pass --data PATH/TO/longmemeval_s_dev.json.gz")
    multi = len(args.system) > 1
    for opt in ("out", "rows"):
        if multi and getattr(args, opt) and "{system}" not in getattr(args, opt):
            raise LangMemCogError(f"--{opt} must contain '{{system}}' when several systems run (e.g. results/lme-{{system}}.json)")
    rows_paths = {s: Path(args.rows.format(system=s)) for s in args.system} if args.rows else {}
    if args.resume and not rows_paths:
        raise LangMemCogError("--resume needs --rows: it skips the questions already in the rows files")
    earlier: dict[str, list[dict[str, Any]]] = {s: [] for s in args.system}
    for s, p in rows_paths.items():  # rows are appended as they are scored: a long run that stops keeps them
        p.parent.mkdir(parents=True, exist_ok=True)
        if args.resume and p.exists():
            earlier[s] = [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
        else:
            p.write_text("", encoding="utf-8")
    done = set.intersection(*({r["sample_id"] for r in rows} for rows in earlier.values()))
    for s, p in rows_paths.items():  # keep only questions every system scored; the rest run again
        earlier[s] = [r for r in earlier[s] if r["sample_id"] in done]
        p.write_text("".join(json.dumps(r) + "\n" for r in earlier[s]), encoding="utf-8")

    def on_row(system: str, row: dict[str, Any]) -> None:
        if system in rows_paths:
            with rows_paths[system].open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")

    runs = run_longmemeval(data, systems=args.system, selection=LmeSelection(limit=args.limit, skip=done),
                           config=CogMemConfig.preset("ephemeral", embedder=args.embedder),
                           vectors=LmeVectors(max_seq_length=args.max_seq_length, cache=args.embedding_cache),
                           progress=progress, on_row=on_row)
    for system, run in runs.items():
        if earlier[system]:  # metrics over every row; speed figures are this run's own
            run.summary.update(summarize_lme([*earlier[system], *run.rows]))
            run.summary["resumed_rows"] = len(earlier[system])
        write_outputs(run, args.out.format(system=system) if args.out else None, None)
        _print_lme(system, run.summary)
    return 0


def _summarize_lme_rows(args: argparse.Namespace) -> int:
    from langmem_cog.bench.compare import load_rows
    from langmem_cog.bench.longmemeval import rescore_rows, summarize_lme

    rows = rescore_rows(load_rows(args.summarize_rows))
    summary = {"system": Path(args.summarize_rows).stem, "rows_file": args.summarize_rows, "embedder": "?",
               "max_seq_length": None, "n_turns": sum(r.get("n_turns", 0) for r in rows),
               "session_exact": all(r["session_exact"] for r in rows), **summarize_lme(rows)}
    _write_json(args.out, summary)
    _print_lme(summary["system"], summary)
    return 0


def _print_lme(system: str, s: dict[str, Any]) -> None:
    f = s["full"]
    print(f"system={system} embedder={s['embedder']} max_seq_length={s['max_seq_length']} "
          f"questions={s['n_rows']} turns={s['n_turns']}")
    for level in ("turn", "session"):
        print(f"  {level:<7} " + "  ".join(f"{m}@{k} {f[f'{level}_{m}@{k}']:.4f}"
                                         for m in ("recall_any", "recall_all", "ndcg") for k in (5, 10)))
    print(f"  MRR {f['mrr']:.4f}")
    for t, m in s["per_type"].items():
        print(f"  {t:<26} turn R_all@10 {m['turn_recall_all@10']:.4f}  session R_all@10 "
              f"{m['session_recall_all@10']:.4f}  MRR {m['mrr']:.4f}  (n={m['n']})")
    if "latency_ms" in s:
        lat = s["latency_ms"]
        print(f"  latency p50 {lat['p50']:.1f} ms  p95 {lat['p95']:.1f} ms   "
              f"ingest {s['ingest_turns_per_s']:.0f} turns/s")


def cmd_bench_scale(args: argparse.Namespace) -> int:
    from langmem_cog.bench.scale import ScaleTargets, ScaleWorkload, bench_graph_stores, plot_scale, run_scale

    work = ScaleWorkload(sizes=args.turns, unique=args.unique, queries=args.queries, batch=args.batch,
                         extractor=not args.no_extractor)
    targets = ScaleTargets(embedded=not args.server_only, chroma_url=args.chroma_url, start_server=args.start_server)
    result = run_scale(work, targets, embedder=args.embedder, progress=progress)
    if args.graph_store_turns:
        result["graph_stores"] = bench_graph_stores(args.graph_store_turns, postgres_url=args.postgres_url)
    _write_json(args.out, result)
    if args.plot:
        plot_scale(result, args.plot)
    print(f"unique pool {result['unique_turns']} turns, cold embedding {result['embed_cold_turns_per_s']:.0f} turns/s "
          f"({result['embedder']}); cache {json.dumps(result['cache'])}; load {result['load_avg_1m']:.1f} "
          f"on {result['cpu_count']} cores")
    for m in result["modes"]:
        for p in m["points"]:
            lat = "  ".join(f"{s} p50 {v['p50']:.1f} p95 {v['p95']:.1f}" for s, v in p["latency_ms"].items())
            srv = f" + server {p['server_rss_mb']:.0f}" if p["server_rss_mb"] else ""
            if p.get("freshness_check_ms"):
                c = p["freshness_check_ms"]
                lat += f"  (freshness check p50 {c['p50']:.1f} p95 {c['p95']:.1f}, inside each)"
            print(f"{m['mode']:<8} {p['turns']:>7} turns ({p['search_path']}): ingest {p['ingest_turns_per_s']:.0f} "
                  f"turns/s  {lat} ms  RSS {p['rss_mb']:.0f} MiB (+{p['rss_growth_mb']:.0f}){srv}  disk {p['disk_mb']:.0f} MiB")
    for g in result.get("graph_stores", []):
        print(f"graph store {g['backend']:<9} {g['turns']:>6} turns ({g['nodes']} nodes, {g['snapshot_kb']:.0f} KiB): "
              f"save p50 {g['save_ms']['p50']:.1f} ms  load p50 {g['load_ms']['p50']:.1f} ms")
    return 0


def cmd_bench_compare(args: argparse.Namespace) -> int:
    from langmem_cog.bench.compare import compare_rows, load_rows

    res = compare_rows(load_rows(args.a), load_rows(args.b), resamples=args.resamples, seed=args.seed)
    print(res.format(label_a=Path(args.a).stem, label_b=Path(args.b).stem))
    return 0


def _precision_arg(parser: argparse.ArgumentParser, model: str) -> None:
    """``--embed-precision`` or ``--rerank-precision`` (``CogMemConfig.embed_precision`` / ``rerank_precision``)."""
    if model == "embed":
        from langmem_cog.embeddings import PRECISIONS

        parser.add_argument("--embed-precision", choices=list(PRECISIONS), default="auto",
                            help="the embedder's arithmetic (default: CogMemConfig's, auto: int8 on ONNX Runtime, "
                                 "else fp32)")
        return
    parser.add_argument("--rerank-precision", choices=["auto", "fp32", "int8"], default="auto",
                        help="the cross-encoder's arithmetic (default: CogMemConfig's, auto: int8 on ONNX Runtime, "
                             "else fp32)")


def _system_help(dataset: str) -> str:
    """One line per benchmark system of ``dataset``, for ``--system``'s help."""
    from langmem_cog.bench.systems import SYSTEMS, system_names

    return "; ".join(f"{name}: {SYSTEMS[name].help}" for name in system_names(dataset))


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``bench`` and its subcommands (``locomo``, ``graph``, ``longmemeval``, ``scale``, ``probe``,
    ``latency``, ``ingest``, ``transfer``, ``compare``)."""
    from langmem_cog.bench.systems import system_names

    bench = sub.add_parser("bench", help="benchmarks").add_subparsers(dest="bench", required=True)
    loc = bench.add_parser("locomo", help="the published LoCoMo retrieval protocol")
    loc.add_argument("--system", default="hybrid", choices=system_names("locomo"),
                     help="the system to score (default: hybrid): " + _system_help("locomo"))
    loc.add_argument("--embedder", default="minilm", help="minilm, mpnet or a model directory")
    loc.add_argument("--seeds", type=int, nargs="+", default=[7, 11, 23, 31, 47],
                     help="split seeds: each holds out conversations as test (default: 7 11 23 31 47)")
    loc.add_argument("--data", help="a JSON file in LoCoMo's schema (default: ../shared/data/locomo/locomo10.json)")
    loc.add_argument("--split", default="seeds", choices=["seeds", "all"],
                     help="seeds: score the test conversations of each --seeds split; all: every question once")
    loc.add_argument("--out", help="summary JSON path")
    loc.add_argument("--rows", help="rows JSONL path (cascade systems also write ROWS.input.jsonl: the compressor's input)")
    loc.add_argument("--pool-cache", help="cascade systems: pickle of the candidate pools (read if present, else written)")
    loc.add_argument("--epochs", type=int, default=1, help="full: cross-encoder epochs per seed (0: score with --reranker-init as it is)")
    loc.add_argument("--freeze-layers", type=int, default=3, help="full: cross-encoder layers kept fixed")
    loc.add_argument("--max-queries", type=int, default=600, help="full: training lists per seed (seeded subset)")
    loc.add_argument("--max-length", type=int, default=96, help="full: cross-encoder token limit per pair")
    loc.add_argument("--threads", type=int, default=None, help="full: torch threads while training")
    loc.add_argument("--reranker-init", help="full: start each seed's cross-encoder from this checkpoint")
    loc.add_argument("--lr", type=float, default=5e-5, help="full: cross-encoder learning rate")
    loc.add_argument("--num-layers", type=int, default=None,
                     help="full: keep only the first N transformer layers of the cross-encoder (faster; default all)")
    loc.add_argument("--tune-queries", type=int, default=150,
                     help="full: held-out train questions (unseen by the cross-encoder) that choose the blend weight")
    loc.add_argument("--fit-rest", action="store_true",
                     help="full: the cross-encoder also trains on the train questions after the tune ones "
                          "(all but those)")
    loc.add_argument("--latency-sample", type=int, default=200, help="cascade systems: questions timed end to end")
    loc.add_argument("--work-dir", help="full: where per-seed checkpoints are written")
    loc.add_argument("--int8", action="store_true", help="full: score the fitted cross-encoders in int8; full-zeroshot: the shipped one in int8 "
                          "whatever --rerank-precision says")
    loc.add_argument("--reuse", action="store_true", help="full: reuse per-seed checkpoints already in --work-dir")
    loc.add_argument("--score-max-length", type=int, default=None,
                     help="full: token limit per pair when scoring (default: --max-length, the training limit)")
    loc.add_argument("--score-threads", type=int, default=None,
                     help="full: torch threads while the cross-encoder scores (default: torch's; the first stage keeps "
                          "OMP_NUM_THREADS)")
    loc.add_argument("--prior-weight", type=float, default=0.0,
                     help="full: train the cross-encoder on logit + W x first-stage score (residual; 0: alone)")
    loc.add_argument("--pooling", choices=["cls", "mean"], default=None,
                     help="full: the cross-encoder head's pooling when fine-tuning (default: the init checkpoint's)")
    loc.add_argument("--drop-features", help="cascade systems: comma-separated features held at zero ('graph': all graph ones)")
    _precision_arg(loc, "embed")
    _precision_arg(loc, "rerank")
    loc.set_defaults(func=cmd_bench_locomo)
    gb = bench.add_parser("graph", help="PEC2F graph: throughput, counts, evidence coverage, attribution probe")
    gb.add_argument("--data", help="a JSON file in LoCoMo's schema (default: ../shared/data/locomo/locomo10.json)")
    gb.add_argument("--embedder", default="minilm", help="embedder of the attribution probe")
    gb.add_argument("--no-probe", action="store_true", help="skip the attribution probe")
    gb.add_argument("--out", help="summary JSON path")
    gb.set_defaults(func=cmd_bench_graph)
    lme = bench.add_parser("longmemeval", help="LongMemEval retrieval: turn and session recall/NDCG, MRR")
    lme.add_argument("--system", nargs="+", default=["hybrid"], choices=system_names("longmemeval"),
                     help="one or more systems, one shared ingest (default: hybrid): " + _system_help("longmemeval"))
    lme.add_argument("--data", help="LongMemEval JSON[.gz] (default: ../shared/data/longmemeval/longmemeval_s_dev.json.gz)")
    lme.add_argument("--embedder", default="minilm", help="minilm, mpnet or a model directory")
    lme.add_argument("--limit", type=int, help="score N questions spread over the file (default: all, in that spread order)")
    lme.add_argument("--max-seq-length", type=int, help="truncate embedded turns to N tokens (default: the model's)")
    lme.add_argument("--out", help="summary JSON path ('{system}' is replaced by the system name)")
    lme.add_argument("--rows", help="rows JSONL path, written as rows are scored ('{system}' as in --out)")
    lme.add_argument("--resume", action="store_true",
                     help="keep the rows already in the --rows files and run only the questions missing from them")
    lme.add_argument("--embedding-cache", metavar="NPZ",
                     help="turn vectors read at the start and saved as the run goes (a rerun skips the model)")
    lme.add_argument("--summarize-rows", metavar="ROWS",
                     help="summarise an existing rows file instead of running (metrics recomputed from its top 50)")
    lme.set_defaults(func=cmd_bench_longmemeval)
    sc = bench.add_parser("scale", help="one namespace grown to N turns: ingest, latency, memory, disk")
    sc.add_argument("--turns", type=int, nargs="+", default=[1_000, 10_000, 100_000],
                    help="namespace sizes measured (default: 1000 10000 100000)")
    sc.add_argument("--chroma-url", help="also measure against this Chroma server (http://HOST:PORT)")
    sc.add_argument("--start-server", action="store_true", help="also measure against `chroma run` started on loopback")
    sc.add_argument("--server-only", action="store_true",
                    help="measure only the server (--chroma-url or --start-server), not the embedded store")
    sc.add_argument("--embedder", default="minilm", help="minilm, mpnet or a model directory")
    sc.add_argument("--unique", type=int, default=8_000, help="real turns before replays start (embeddings cached)")
    sc.add_argument("--queries", type=int, default=50, help="timed LoCoMo questions per system and size")
    sc.add_argument("--batch", type=int, default=1_000, help="turns per add_turns call")
    sc.add_argument("--no-extractor", action="store_true", help="ingest without the rule extractor and graph")
    sc.add_argument("--graph-store-turns", type=int, nargs="*", default=[],
                    help="also time graph snapshot save/load (file, InMemoryStore, Postgres) for graphs of N turns")
    sc.add_argument("--postgres-url", help="PostgresStore connection string for --graph-store-turns")
    sc.add_argument("--out", help="result JSON path")
    sc.add_argument("--plot", help="PNG path of the cost-versus-size plot")
    sc.set_defaults(func=cmd_bench_scale)
    pr = bench.add_parser("probe", help="attribution and currency through the default retriever: the set's "
                          "record, belief, now and before questions over whole conversations (H@1, MRR)")
    pr.add_argument("--split", choices=["dev", "test", "all"], default="dev",
                    help="which half of the set's conversations (tune on dev; score test once per change)")
    pr.add_argument("--set", help="the set's folder (default: benchmarks/data/memset of this checkout)")
    pr.add_argument("--rows", help="write one JSON line per question (gold and counterpart ranks) here")
    pr.add_argument("--pairs", action="store_true",
                    help="also run the bundled pair probe (each question's pool: its pair's two turns)")
    pr.add_argument("--mode", choices=["cascade", "hybrid", "dense", "lexical"], default=None,
                    help="retrieval path (default: the default retriever's)")
    pr.add_argument("--models", help="models folder (default: the shipped models)")
    _precision_arg(pr, "rerank")
    pr.set_defaults(func=cmd_bench_probe)
    lat = bench.add_parser("latency", help="latency of the default retriever on the live path (first query after "
                           "an ingest, and warm queries)")
    lat.add_argument("--on", required=True, choices=["locomo", "longmemeval"], help="the dataset to time on")
    lat.add_argument("--data", help="the dataset file (default: ../shared/data/...)")
    lat.add_argument("--questions", type=int, default=200, help="LoCoMo: questions timed")
    lat.add_argument("--conversations", type=int, default=2, help="LoCoMo: conversations ingested")
    lat.add_argument("--haystacks", type=int, default=5, help="LongMemEval: haystacks ingested and asked")
    lat.add_argument("--models", help="models folder (default: the shipped models)")
    lat.add_argument("--max-seq-length", type=int, default=None, help="embedder truncation (default: the model's)")
    lat.add_argument("--out", help="summary JSON path")
    _precision_arg(lat, "rerank")
    _precision_arg(lat, "embed")
    lat.set_defaults(func=cmd_bench_latency)
    ing = bench.add_parser("ingest", help="cold ingest into a persistent data dir, graph on: turns/s end to end, "
                           "the time's shares, and plain fp32 encoding of the same texts")
    ing.add_argument("--on", required=True, choices=["locomo", "longmemeval"], help="the dataset to ingest")
    ing.add_argument("--data", help="the dataset file (default: ../shared/data/...)")
    ing.add_argument("--limit", type=int, default=None,
                     help="conversations (LoCoMo, default 10) or haystacks (LongMemEval, default 20)")
    ing.add_argument("--data-dir", help="ingest here (default: a temporary directory, removed after)")
    ing.add_argument("--out", help="summary JSON path")
    _precision_arg(ing, "embed")
    ing.set_defaults(func=cmd_bench_ingest)
    tf = bench.add_parser("transfer", help="the default retriever with a models folder, on every question of a "
                          "dataset (leave-one-dataset-out: models fitted on the other one)")
    tf.add_argument("--models", help="models folder of `langmem-cog train-models` (default: the shipped models)")
    tf.add_argument("--on", required=True, choices=["locomo", "longmemeval"],
                    help="the dataset scored (the one the models were not fitted on)")
    tf.add_argument("--data", help="the dataset file (default: ../shared/data/...)")
    tf.add_argument("--pool-cache", help="labelled pools (read if present, else written)")
    tf.add_argument("--lme-limit", type=int, default=None, help="only the first N LongMemEval questions")
    tf.add_argument("--out", help="summary JSON of the default retriever ({system} is replaced for each run)")
    tf.add_argument("--rows", help="rows JSONL ({system}: default, input, and hybrid where recorded)")
    tf.add_argument("--raw-protect", type=int, default=None, metavar="N",
                    help="how many of plain hybrid search's best turns the reranked top 10 keeps (default: the "
                         "config's, 8; 0: the plain fused order)")
    _precision_arg(tf, "rerank")
    tf.set_defaults(func=cmd_bench_transfer)
    cmp_ = bench.add_parser("compare", help="paired bootstrap of two rows files (B - A)")
    cmp_.add_argument("a", help="rows JSONL of system A (the baseline)")
    cmp_.add_argument("b", help="rows JSONL of system B (compared with A on the same questions)")
    cmp_.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples (default: 10000)")
    cmp_.add_argument("--seed", type=int, default=0, help="random seed of the bootstrap (default: 0)")
    cmp_.set_defaults(func=cmd_bench_compare)
