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
import re
import sys
import time
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


class _CLIError(LangMemCogError):
    """A command-line failure whose message names the option or argument to fix.

    Args:
        message: The one-line message printed after ``langmem-cog: error:``.
        exit_code: What :func:`main` returns (2: a usage error; 1: the command ran and failed).
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _version() -> str:
    """The installed package version (``importlib.metadata``), else the source tree's ``__version__``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("langmem-cog")
    except PackageNotFoundError:  # running from a source tree that is not installed
        from langmem_cog import __version__

        return __version__


def _config(args: argparse.Namespace, *, must_exist: bool) -> Any:
    """The config of a command: ``LANGMEM_COG_*`` variables, then ``--data-dir``.

    Args:
        args: The parsed arguments (``data_dir`` is read when present).
        must_exist: Refuse a data folder that does not exist (commands that only read or delete).

    Returns:
        The :class:`~langmem_cog.config.CogMemConfig`.

    Raises:
        _CLIError: If the data folder is a file, or is missing and ``must_exist`` is set.
    """
    from langmem_cog import CogMemConfig

    cfg = CogMemConfig.from_env()
    given = getattr(args, "data_dir", None)
    if given:
        cfg = cfg.model_copy(update={"data_dir": Path(given)})
    if cfg.chroma_mode != "persistent":
        return cfg
    where = cfg.resolved_data_dir()
    origin = ("" if given else " (from LANGMEM_COG_DATA_DIR; --data-dir overrides it)" if os.environ.get("LANGMEM_COG_DATA_DIR")
              else " (the default; --data-dir or LANGMEM_COG_DATA_DIR moves it)")
    if where.exists() and not where.is_dir():
        raise _CLIError(f"--data-dir {where} is a file, not a folder{origin}: pass the folder that holds the store")
    if must_exist and not where.is_dir():
        raise _CLIError(f"--data-dir {where} does not exist{origin}: pass the folder `langmem-cog ingest` "
                        "wrote to, or ingest something first")
    return cfg


def _list_hint(where: str) -> str:
    """The ``langmem-cog list`` command that shows the namespaces of the store at ``where``."""
    import shlex

    return f"`langmem-cog list --data-dir {shlex.quote(where)}`" if Path(where).is_absolute() else "`langmem-cog list`"


def _count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: ``_count(2, "turn")`` is ``"2 turns"``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _where(cfg: Any) -> str:
    """Where a config's store lives, for messages: its absolute data folder, or its Chroma server."""
    if cfg.chroma_mode == "persistent":
        return str(cfg.resolved_data_dir().resolve())
    return f"the Chroma server at {cfg.chroma_host}:{cfg.chroma_port}"


def _valid_namespace(namespace: str, option: str) -> str:
    """``namespace`` if it is a valid namespace id; otherwise a usage error that names ``option``."""
    from langmem_cog.errors import InvalidNamespaceError
    from langmem_cog.records import validate_namespace

    try:
        return validate_namespace(namespace)
    except InvalidNamespaceError as exc:
        raise _CLIError(f"{option}: {exc}") from None


def _require_namespace(store: Any, namespace: str, where: str, *, option: str = "--namespace",
                       exit_code: int = 2) -> None:
    """Fail with a message naming ``option`` unless the store holds ``namespace``."""
    if not store.has_namespace(_valid_namespace(namespace, option)):
        raise _CLIError(f"namespace {namespace!r} holds no turns in {where}: check {option} and --data-dir "
                        f"({_list_hint(where)} shows the stored namespaces)", exit_code)


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
#: ``search --system``: the names the benchmarks use for the two retrieval paths, as ``--mode`` values.
_SEARCH_SYSTEMS = {"hybrid": "hybrid", "full": "cascade"}


def cmd_search(args: argparse.Namespace) -> int:
    """``search``: the top ``-k`` turns of one namespace for a query (or, with ``--trace``, the operator loop)."""
    from langmem_cog import CogMemRetriever, TurnStore

    cfg = _config(args, must_exist=True)
    ns = _valid_namespace(args.namespace, "--namespace")
    if args.k < 1:
        raise _CLIError(f"-k {args.k} is invalid: pass a positive number of turns")
    if args.now is not None:
        from langmem_cog.filters import parse_time

        try:
            parse_time(args.now)
        except LangMemCogError:
            raise _CLIError(f"--now {args.now!r} is not an ISO date or datetime: pass e.g. 2023-05-08") from None
    mode = args.mode
    if args.system:
        wanted = _SEARCH_SYSTEMS[args.system]
        if mode is not None and mode != wanted:
            raise _CLIError(f"--system {args.system} and --mode {mode} disagree: pass one of them "
                            f"(--system {args.system} is --mode {wanted})")
        mode = wanted
    where = _where(cfg)
    if args.trace:
        return _search_trace(cfg, args, where)
    mode = mode or cfg.retriever.mode
    if mode == "cascade":
        from langmem_cog.memory import CogMemory

        memory = CogMemory(cfg)
        _require_namespace(memory.store, ns, where)
        memory.sync_graph(ns)  # a namespace written by the raw store alone gets its graph here
        retriever = CogMemRetriever(memory=memory, namespace=ns, k=args.k, missing_ok=False,
                                    mode=mode, now=args.now)
    else:
        store = TurnStore(cfg)
        _require_namespace(store, ns, where)
        retriever = CogMemRetriever(store=store, namespace=ns, k=args.k, missing_ok=False, mode=mode)
    for row in _search_rows(retriever.invoke(args.query)):
        print(row)
    return 0


#: ``search``'s note under rows that the claim rules placed away from their place by score.
_CLAIM_RULE = ("claim rule: the cascade puts a current claim before the claim it superseded, and someone else's "
               "opinion after the turn of the person a question names, whatever their scores")
#: ``search``'s note under a row placed first as a person's later word on the matter.
_LATER_WORD = ("later word: for a question about a state now, the cascade puts the same person's later turn on the "
               "matter (one that echoes a leading turn, from another session) first, whatever its score")
_REACTION = ("reaction: for a question about what a named person thinks, the cascade puts that person's stance on "
             "what someone else told (the turn most like a leading turn of the other's) first, whatever its score")
_PLACED = {"later_word": ("placed as the later word", _LATER_WORD), "reaction": ("placed as the reaction", _REACTION)}


def _search_rows(docs: Sequence[Any]) -> list[str]:
    """The lines ``search`` prints for the retriever's documents, in the retriever's order.

    Each row shows its rank in that order, the turn id, time, speaker, claim status (metadata
    ``claim_status``, where the graph holds a claim from the turn), stage and the score that ordered
    it: ``rerank`` for a turn the cross-encoder reordered, else the first-stage ``score``. A row away
    from its place by that score also shows the place, and which rule placed it (metadata
    ``placed_by``: the later word on the matter, or the holder's reaction; else, where it holds a
    claim, the claim rule); a note on each rule that placed a row then follows the rows.
    """
    def ordering(m: dict[str, Any]) -> tuple[int, float]:
        # The cross-encoder's head comes before the tail it left in first-stage order.
        return (0, -m["relevance_score"]) if m.get("reranked") else (1, -m["score"])

    by_score = sorted(range(len(docs)), key=lambda i: ordering(docs[i].metadata))
    place = {i: p for p, i in enumerate(by_score, 1)}
    rows, claim_moved, placed = [], False, []
    for rank, d in enumerate(docs, 1):
        m = d.metadata
        score = f"rerank {m['relevance_score']:.3f}" if m.get("reranked") else f"score {m['score']:.3f}"
        status = f"  [{m['claim_status']}]" if m.get("claim_status") else ""
        note = ""
        if place[rank - 1] != rank:
            rule = _PLACED.get(str(m.get("placed_by")))
            if rule is not None and rule[1] not in placed:
                placed.append(rule[1])
            claim_moved |= bool(status) and rule is None
            why = f"; {rule[0]})" if rule is not None else "; placed by the claim rule)" if status else ")"
            note = f"  (#{place[rank - 1]} by score{why}"
        rows.append(f"{rank:>3}. [{m['turn_id']}] {m['timestamp']}  {m['speaker']}{status}  {m['stage']}  "
                    f"{score}{note}\n     {d.page_content}")
    return [*rows, *([_CLAIM_RULE] if claim_moved else []), *placed]


def _search_trace(cfg: Any, args: argparse.Namespace, where: str) -> int:
    """``search --trace``: run the operator loop and print its route, steps and grounded turns."""
    from langmem_cog.graph.loop import GraphRetrieval
    from langmem_cog.graph.operators import node_text
    from langmem_cog.memory import CogMemory

    if args.max_steps < 2:
        raise _CLIError(f"--max-steps {args.max_steps} is invalid: pass at least 2 operator steps (anchor, then ground)")
    memory = CogMemory(cfg)
    ns = args.namespace
    _require_namespace(memory.store, ns, where)
    memory.sync_graph(ns)  # a namespace written by the raw store alone gets its graph here
    # Loaded before the traced query, so the first step's time is the operator's own.
    t0 = time.perf_counter()
    memory.store.embed_texts([args.query])
    t1 = time.perf_counter()
    G = memory.graph(ns)
    embedded = memory.node_vectors.warm(node_text(G, n) for n in G.nodes)
    print(f"models loaded in {(t1 - t0) * 1000:.1f} ms; {_count(embedded, 'graph node text')} embedded in "
          f"{(time.perf_counter() - t1) * 1000:.1f} ms (before the traced query)")
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


# ---------------------------------------------------------------------------- ingest, list, forget
#: JSONL roles stored under a fixed speaker name; the roles in ``_SKIPPED_ROLES`` are not stored, and any
#: other role fails the file (a name belongs in ``"speaker"``).
_ROLE_SPEAKERS = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant"}
_SKIPPED_ROLES = {"system", "tool", "function", "developer"}
_JSONL_EXAMPLE = '{"role": "user", "content": "I moved to Lisbon", "timestamp": "2024-05-01T09:30:00Z"}'


def _parse_timestamp(value: Any, where: str) -> Any:
    """An ISO 8601 date or date-time as an aware datetime (naive ones are UTC)."""
    from datetime import UTC, datetime

    if not isinstance(value, str):
        raise _CLIError(f"{where}: 'timestamp' must be an ISO 8601 string such as 2024-05-01T09:30:00+00:00, "
                        f"got {type(value).__name__}")
    try:
        ts = datetime.fromisoformat(value.strip())
    except ValueError:
        raise _CLIError(f"{where}: timestamp {value!r} is not ISO 8601 (e.g. 2024-05-01 or "
                        "2024-05-01T09:30:00+00:00)") from None
    return ts if ts.tzinfo is not None and ts.utcoffset() is not None else ts.replace(tzinfo=UTC)


def _jsonl_turns(path: Path, namespace: str) -> tuple[list[Any], int, bool]:
    """The turns of a JSONL file of chat messages (the format is in the ``ingest`` help).

    Every line is checked before anything is written: a bad line fails the whole file.

    Args:
        path: The JSONL file.
        namespace: The namespace of the turns (also their conversation id).

    Returns:
        The turns in file order (positions from 0), the number of lines skipped for their role, and
        whether their timestamps come from the file (at least one line has one) rather than the
        ingest time.

    Raises:
        _CLIError: If a line is not a JSON object of the format; the message names the line.
    """
    import hashlib
    from datetime import UTC, datetime, timedelta

    from langmem_cog.loaders import message_turn_id
    from langmem_cog.records import make_turn, split_text, storable_speaker, storable_text

    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()  # a byte-order mark is not content
    except UnicodeDecodeError as exc:
        raise _CLIError(f"FILE {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise _CLIError(f"FILE {path} cannot be read: {exc.strerror or exc}") from None
    rows: list[tuple[int, dict[str, Any]]] = []
    skipped = 0
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path} line {n}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _CLIError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); each line must be one "
                            f"object such as {_JSONL_EXAMPLE}") from None
        if not isinstance(obj, dict):
            raise _CLIError(f"{where}: expected a JSON object such as {_JSONL_EXAMPLE}, got a {type(obj).__name__}")
        who = obj.get("speaker", obj.get("role"))
        if not isinstance(who, str) or not who.strip():
            raise _CLIError(f"{where}: needs a 'role' or 'speaker' string (e.g. \"role\": \"user\")")
        if "speaker" not in obj and who.strip().lower() in _SKIPPED_ROLES:
            skipped += 1
            continue
        if "speaker" not in obj and who.strip().lower() not in _ROLE_SPEAKERS:
            raise _CLIError(f"{where}: unknown role {who.strip()!r}: use \"role\" user/human or assistant/ai "
                            f"({', '.join(sorted(_SKIPPED_ROLES))} lines are skipped), or \"speaker\": "
                            f"{json.dumps(who.strip())} to store the line under that name")
        text = obj.get("content", obj.get("text"))
        if not isinstance(text, str) or not text.strip():
            raise _CLIError(f"{where}: needs a non-empty 'content' (or 'text') string")
        rows.append((n, obj))
    # Timestamps: as given; a line without one gets the previous line's plus a second (lines before
    # the first timestamp: that timestamp minus a second per line; none at all: the ingest time).
    given = [_parse_timestamp(o["timestamp"], f"{path} line {n}") if o.get("timestamp") is not None else None
             for n, o in rows]
    first = next(((i, ts) for i, ts in enumerate(given) if ts is not None), None)
    base = datetime.now(UTC) if first is None else first[1] - timedelta(seconds=first[0])
    stamps, prev = [], base - timedelta(seconds=1)
    for ts in given:
        prev = ts if ts is not None else prev + timedelta(seconds=1)
        stamps.append(prev)
    turns: list[Any] = []
    seen: dict[str, int] = {}
    for (n, obj), ts in zip(rows, stamps, strict=True):
        where = f"{path} line {n}"
        raw_who = str(obj.get("speaker", obj.get("role"))).strip()
        speaker = storable_speaker(raw_who if "speaker" in obj else _ROLE_SPEAKERS[raw_who.lower()])
        text = storable_text(str(obj.get("content", obj.get("text"))))
        session = "0" if obj.get("session") is None else str(obj["session"])
        digest = hashlib.sha256(f"{session}\0{speaker}\0{text}".encode()).hexdigest()[:12]
        base_id = message_turn_id(obj.get("id")) or f"line{n}-{digest}"  # stable: a re-ingest finds it stored
        if base_id in seen:
            raise _CLIError(f"{where}: id {base_id!r} is already used on line {seen[base_id]}: ids must be unique")
        seen[base_id] = n
        parts = split_text(text)
        if not parts:
            raise _CLIError(f"{where}: 'content' holds no storable text")
        for j, part in enumerate(parts, 1):
            try:
                turns.append(make_turn(
                    id=base_id if len(parts) == 1 else f"{base_id}#{j}", namespace=namespace,
                    conversation_id=namespace, session_id=session, speaker=speaker, text=part, timestamp=ts,
                    position=len(turns),
                    metadata={} if len(parts) == 1 else {"message_id": base_id, "part": j, "parts": len(parts)}))
            except LangMemCogError as exc:
                raise _CLIError(f"{where}: {exc}") from None
    return turns, skipped, first is not None


def _detect_format(path: Path, given: str | None) -> tuple[str, Any]:
    """The format of an ingest file (``--format``, else from its name and content) and its parsed
    JSON (``None`` for JSONL)."""
    from langmem_cog.loaders import read_json

    if given == "jsonl" or (given is None and path.name.lower().endswith(".jsonl")):
        return "jsonl", None
    try:
        data = read_json(path)
    except LangMemCogError as exc:
        hint = f"; check --format {given}" if given else "; for a JSONL file of chat messages pass --format jsonl"
        raise _CLIError(f"FILE {exc}{hint}") from None
    first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
    found = "locomo" if "conversation" in first else "longmemeval" if "haystack_sessions" in first else None
    if given is None and found is None:
        raise _CLIError(f"cannot tell the format of FILE {path}: pass --format locomo, longmemeval or jsonl")
    if given is not None and found not in (None, given):
        raise _CLIError(f"FILE {path} looks like {found}, not {given}: fix --format (or leave it out)")
    if not isinstance(data, list) or not data:
        raise _CLIError(f"FILE {path}: expected a non-empty JSON list of {given or found} records")
    return given or str(found), data


def _ingest_groups(path: Path, args: argparse.Namespace) -> tuple[str, list[tuple[str, list[Any]]], int, bool]:
    """The format of ``path``, its turns grouped by namespace, the lines skipped for their role, and
    whether a JSONL file's timestamps come from the file (see :func:`_jsonl_turns`)."""
    from langmem_cog.loaders import locomo_turns, longmemeval_turns

    fmt, data = _detect_format(path, args.format)
    for opt, wanted in (("conversation", "locomo"), ("question_id", "longmemeval"), ("limit", "longmemeval")):
        if getattr(args, opt) and fmt != wanted:
            raise _CLIError(f"--{opt.replace('_', '-')} applies to {wanted} files only; FILE {path} is {fmt}")
    ns = _valid_namespace(args.namespace, "--namespace") if args.namespace else None
    if fmt == "jsonl":
        if ns is None:
            raise _CLIError("--namespace is required for a JSONL file: pass --namespace NAME (e.g. user-42)")
        turns, skipped, dated = _jsonl_turns(path, ns)
        return fmt, [(ns, turns)], skipped, dated
    key, option = ("sample_id", "--conversation") if fmt == "locomo" else ("question_id", "--question-id")
    records = [r for r in data if isinstance(r, dict)]
    ids = [str(r.get(key)) for r in records]
    chosen = args.conversation if fmt == "locomo" else args.question_id
    if chosen:
        missing = [c for c in chosen if c not in ids]
        if missing:
            shown = ", ".join(ids[:8]) + (", ..." if len(ids) > 8 else "")
            raise _CLIError(f"{option} {missing[0]!r} is not in FILE {path} (its ids: {shown})")
        records = [r for r in records if str(r.get(key)) in set(chosen)]
    if args.limit is not None:
        if args.limit < 1:
            raise _CLIError(f"--limit {args.limit} is invalid: pass a positive number of questions")
        records = records[: args.limit]
    if ns is not None and len(records) != 1:
        raise _CLIError(f"--namespace names one namespace but FILE {path} has {len(records)} "
                        f"{'conversations' if fmt == 'locomo' else 'questions'}: pick one with {option} ID, "
                        "or leave --namespace out (each gets its own id as namespace)")
    groups = []
    for rec in records:
        try:
            turns = locomo_turns(rec, namespace=ns) if fmt == "locomo" else longmemeval_turns(rec, namespace=ns)[0]
        except LangMemCogError as exc:
            raise _CLIError(f"FILE {path}: {exc}") from None
        if turns:
            groups.append((turns[0].namespace, turns))
    return fmt, groups, 0, True


#: A JSONL line's default id: ``line<N>-<12 hex digits>`` (``#<part>`` for a message split in parts).
_DEFAULT_JSONL_ID = re.compile(r"(?P<base>line\d+-[0-9a-f]{12})(?P<part>#\d+)?")


def _distinct_from_stored(memory: Any, namespace: str, turns: list[Any]) -> list[Any]:
    """``turns`` with each default id that the namespace holds for a message of another time renamed.

    A default id names a line by its number, session, speaker and text, so the same line of another
    day's file ("Good morning!" on line 1) has the same id. Where the stored turn's timestamp differs
    from the line's (the file's own), the line is another message: its id gets ``~<8 hex digits>`` of
    its time, and it is stored beside the earlier one instead of being skipped.
    """
    import hashlib

    stored = {t.id: t for t in memory.store.get_turns(namespace, [t.id for t in turns])}
    out = []
    for t in turns:
        m = _DEFAULT_JSONL_ID.fullmatch(t.id)
        old = stored.get(t.id)
        if m is not None and old is not None and old.timestamp != t.timestamp:
            stamp = hashlib.sha256(t.timestamp.isoformat().encode()).hexdigest()[:8]
            base = f"{m['base']}~{stamp}"
            meta = {**t.metadata, "message_id": base} if "message_id" in t.metadata else t.metadata
            t = t.model_copy(update={"id": f"{base}{m['part'] or ''}", "metadata": meta})
        out.append(t)
    return out


def cmd_ingest(args: argparse.Namespace) -> int:
    """``ingest``: write a LoCoMo, LongMemEval or JSONL file's turns into a persistent store."""
    from langmem_cog.config import RetrieverSettings
    from langmem_cog.memory import CogMemory

    path = Path(args.file)
    if not path.is_file():
        raise _CLIError(f"FILE {path} does not exist" if not path.exists() else f"FILE {path} is not a file")
    if args.batch_size < 1:
        raise _CLIError(f"--batch-size {args.batch_size} is invalid: pass a positive number of turns")
    fmt, groups, skipped_roles, dated = _ingest_groups(path, args)
    if not any(turns for _, turns in groups):  # checked before the store is opened: nothing is written
        why = ("its records hold no turns" if fmt != "jsonl"
               else f"only system/tool lines: {skipped_roles} skipped" if skipped_roles else "it has no message lines")
        hint = "; a line to store needs \"role\" user or assistant, or a \"speaker\"" if fmt == "jsonl" else ""
        raise _CLIError(f"FILE {path} holds no turn to store ({why}): nothing was ingested{hint}", exit_code=1)
    # Plain retrieval while ingesting: the cascade would embed the graph's node texts now, for a
    # query in this process, and the CLI asks none.
    cfg = _config(args, must_exist=False).model_copy(update={"retriever": RetrieverSettings(mode="hybrid")})
    memory = CogMemory(cfg)
    where = _where(cfg)
    total_new = 0
    for ns, turns in groups:
        if args.replace and memory.forget(ns):
            print(f"{ns}: forgot the namespace's earlier turns (--replace)")
        if fmt == "jsonl" and dated and memory.store.has_namespace(ns):
            turns = _distinct_from_stored(memory, ns, turns)
        present = ({t.id for t in memory.store.get_turns(ns, [t.id for t in turns])}
                   if memory.store.has_namespace(ns) else set())
        new = [t for t in turns if t.id not in present]
        start = memory.store.count(ns) if fmt == "jsonl" and memory.store.has_namespace(ns) else 0
        if start:  # appended after the turns the namespace already holds
            new = [t.model_copy(update={"position": start + i}) for i, t in enumerate(new)]
        batch: list[Any] = []
        for t in _progress(new, desc=f"ingest {ns}", total=len(new)) if new else ():
            batch.append(t)
            if len(batch) >= args.batch_size:
                (memory.store.add_turns if args.no_graph else memory.add_turns)(batch)
                batch = []
        if batch:
            (memory.store.add_turns if args.no_graph else memory.add_turns)(batch)
        if new and not args.no_graph:
            memory.consolidate(ns)
        total_new += len(new)
        print(f"{ns}: {_count(len(new), 'turn')} ingested" + (f", {len(present)} already stored (skipped)"
                                                              if present else ""))
    if skipped_roles:
        print(f"skipped {_count(skipped_roles, 'system/tool line')} (only user, assistant and named speakers "
              "are stored)")
    print(f"{_count(total_new, 'turn')} into {_count(len(groups), 'namespace')} of {where} ({fmt})")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """``list``: the namespaces of a store with their turn counts."""
    from langmem_cog import TurnStore

    cfg = _config(args, must_exist=True)
    store = TurnStore(cfg)
    rows = [(ns, store.count(ns)) for ns in store.namespaces()]
    where = _where(cfg)
    if args.json:
        print(json.dumps([{"namespace": ns, "turns": n} for ns, n in rows]))
        return 0
    if not rows:
        print(f"no namespaces in {where} (add some with `langmem-cog ingest`)")
        return 0
    width = max(len("namespace"), *(len(ns) for ns, _ in rows))
    print(f"{'namespace':<{width}}  {'turns':>7}")
    for ns, n in rows:
        print(f"{ns:<{width}}  {n:>7}")
    print(f"{_count(len(rows), 'namespace')}, {_count(sum(n for _, n in rows), 'turn')} in {where}")
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    """``forget``: delete a namespace (raw turns, BM25 index, graph, files), or some of its turns."""
    from langmem_cog.memory import CogMemory

    cfg = _config(args, must_exist=True)
    memory = CogMemory(cfg)
    ns = _valid_namespace(args.namespace, "NAMESPACE")
    where = _where(cfg)
    if args.turn:
        _require_namespace(memory.store, ns, where, option="NAMESPACE", exit_code=1)
        wanted = list(dict.fromkeys(args.turn))
        n = memory.delete_turns(ns, wanted)
        if n == 0:
            raise _CLIError(f"namespace {ns!r} holds none of the --turn ids {', '.join(map(repr, wanted))}", 1)
        print(f"forgot {n} of the {len(wanted)} --turn ids of namespace {ns!r} (raw store, BM25 index, graph); "
              f"{memory.store.count(ns)} turns left in {where}")
        return 0
    turns = memory.store.count(ns) if memory.store.has_namespace(ns) else 0
    nodes = memory.graphs.graph(ns).number_of_nodes()
    if not memory.forget(ns):
        raise _CLIError(f"namespace {ns!r} does not exist in {where}: check NAMESPACE and --data-dir "
                        f"({_list_hint(where)} shows the stored namespaces)", 1)
    print(f"forgot namespace {ns!r}: {_count(turns, 'turn')}, their BM25 index and the graph "
          f"({_count(nodes, 'node')}) removed from {where}")
    return 0


def cmd_purge_server(args: argparse.Namespace) -> int:
    """``purge-server``: deleted text out of a stopped Chroma server's directory (its log, free pages, HNSW slots)."""
    from langmem_cog.chroma_files import purge_chroma_dir

    r = purge_chroma_dir(args.path)
    print(f"purged {args.path}: {_count(r.superseded_records, 'deleted record')} and "
          f"{_count(r.dropped_collection_records, 'record')} of dropped collections removed from the log, "
          f"{_count(r.hnsw_bytes_zeroed, 'byte')} of unused HNSW slots zeroed, "
          f"chroma.sqlite3 {r.bytes_before:,} -> {r.bytes_after:,} bytes; the server may start again")
    return 0


# ---------------------------------------------------------------------------- bench
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
            config=config, work_dir=args.work_dir, reuse=args.reuse, latency_sample=args.latency_sample, progress=_progress))
    else:
        run = run_locomo(
            data,
            system=args.system,
            embedder=args.embedder,
            seeds=args.seeds,
            split=args.split,
            progress=_progress,
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


def cmd_train_models(args: argparse.Namespace) -> int:
    import shlex
    import tempfile

    from langmem_cog.bench.locomo import default_locomo_path
    from langmem_cog.bench.recipe import SHIPPED_RECIPE, PoolSource, train_models

    paths = {"locomo": Path(args.locomo) if args.locomo else default_locomo_path(),
             "longmemeval": Path(args.longmemeval) if args.longmemeval else _default_longmemeval()}
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
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="lmc-models-"))
    command = " ".join(shlex.quote(a) for a in ["langmem-cog", *sys.argv[1:]]).replace(str(Path.home()), "~")
    report = train_models(datasets, args.out, recipe=recipe, work_dir=work,
                          pools=PoolSource(args.pool_cache_dir, args.lme_limit), command=command, progress=_progress,
                          reuse=args.reuse)
    print(f"trained on {report['trained_on']}: {report.get('examples')} lists, {report.get('steps')} steps, "
          f"{report.get('seconds', 0):.0f} s; last-epoch loss {report.get('final_epoch_loss', float('nan')):.4f} "
          f"(uniform {report.get('uniform_loss', float('nan')):.4f}); blend weight {report.get('cross_encoder_weight')} "
          f"(held-out MRR {json.dumps(report.get('tune_mrr'))}); wrote {args.out}")
    return 0


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
                      haystacks=args.haystacks, config=cfg, max_seq_length=args.max_seq_length, progress=_progress)
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
    res = run_ingest(args.on, data, limit=args.limit, data_dir=args.data_dir, progress=_progress,
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
                        precision=args.rerank_precision, progress=_progress)
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
                           progress=_progress, on_row=on_row)
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
    result = run_scale(work, targets, embedder=args.embedder, progress=_progress)
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


# ---------------------------------------------------------------------------- ui
def cmd_ui(args: argparse.Namespace) -> int:
    """``ui``: load the sample or LoCoMo conversations if asked, then serve the memory inspector."""
    from langmem_cog import CogMemConfig
    from langmem_cog.memory import CogMemory
    from langmem_cog.ui import InspectorAPI, locomo_conversations, make_server, sample_conversation
    from langmem_cog.ui.server import check_token

    cfg = CogMemConfig.preset("ephemeral") if args.ephemeral else CogMemConfig.from_env()
    if args.data_dir:
        if args.ephemeral:
            raise LangMemCogError("--data-dir and --ephemeral exclude each other: pick one")
        cfg = cfg.model_copy(update={"data_dir": Path(args.data_dir)})
    if args.conversation and not args.load_locomo:
        raise LangMemCogError("--conversation needs --load-locomo PATH")
    convs = [sample_conversation()] if args.demo else []
    if args.data_dir and not convs and not args.load_locomo and not Path(args.data_dir).is_dir():
        raise LangMemCogError(f"--data-dir {args.data_dir} is not an existing store: pass a store's folder "
                              "(or add --demo or --load-locomo PATH to load one into it)")
    if args.load_locomo:
        if not Path(args.load_locomo).is_file():
            raise LangMemCogError(f"--load-locomo {args.load_locomo} is not a file: pass the path of locomo10.json")
        picked = locomo_conversations(args.load_locomo, args.conversation)
        convs += picked if args.conversation else picked[:1]
    if args.no_auth and args.token is not None:
        raise LangMemCogError("--token and --no-auth exclude each other: pick one")
    # --token is visible to other local users (ps); LANGMEM_COG_UI_TOKEN is not. Neither: a random token.
    token = None if args.no_auth else args.token if args.token is not None else os.environ.get("LANGMEM_COG_UI_TOKEN") or None
    if token is not None:
        check_token(token)  # before opening the store: a bad token fails at once
    api = InspectorAPI(CogMemory(cfg), max_steps=args.max_steps)
    try:  # bind before loading: a busy port fails in a second, not after the ingestion
        server = make_server(api, host=args.host, port=args.port, token=token, auth=not args.no_auth)
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


class _Command(argparse.ArgumentParser):
    """The parser of a subcommand: an argument it does not know is reported with its own usage
    (``langmem-cog search: error: unrecognized arguments: --bogus``, exit code 2), not the top level's."""

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        parsed, extra = super().parse_known_args(*args, **kwargs)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed, extra


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``langmem-cog``."""
    from langmem_cog.bench.systems import system_names

    p = argparse.ArgumentParser(prog="langmem-cog", description="Long-term memory for LangChain/LangGraph agents.")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}",
                   help="print the installed langmem-cog version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Command)
    data_dir_help = ("the store's folder (default: $LANGMEM_COG_DATA_DIR, else $XDG_DATA_HOME/langmem-cog or "
                     "~/.local/share/langmem-cog)")

    demo = sub.add_parser("demo", help="ingest the bundled sample conversation and answer questions about it")
    demo.add_argument("--data-dir", help=data_dir_help)
    demo.add_argument("-k", type=int, default=3, help="evidence turns per question")
    demo.add_argument("--mode", choices=["cascade", "hybrid", "dense", "lexical"], default=None,
                      help="retrieval path (default: the config's, the shipped cascade; LANGMEM_COG_RETRIEVAL)")
    demo.set_defaults(func=cmd_demo)

    search = sub.add_parser("search", help="search one namespace of a store")
    search.add_argument("query", help="the question or search text")
    search.add_argument("--namespace", required=True, help="the namespace to search (`langmem-cog list` shows them)")
    search.add_argument("--data-dir", help=data_dir_help)
    search.add_argument("-k", type=int, default=5, help="how many turns to print (default: 5)")
    search.add_argument("--trace", action="store_true",
                        help="answer with the graph operator loop and print its intent, steps and grounded turns "
                             "(--mode and --system do not apply)")
    search.add_argument("--mode", choices=["cascade", "hybrid", "dense", "lexical"], default=None,
                        help="retrieval path (default: the config's, the shipped cascade; LANGMEM_COG_RETRIEVAL)")
    search.add_argument("--system", choices=sorted(_SEARCH_SYSTEMS), default=None,
                        help="the benchmarks' name of the retrieval path: hybrid (= --mode hybrid: dense + BM25) "
                             "or full (= --mode cascade: graph, fusion scorer, cross-encoder rerank)")
    search.add_argument("--now", help="when the question is asked (ISO date), for 'last month'")
    search.add_argument("--max-steps", type=int, default=5, help="with --trace: operator step budget (at least 2)")
    search.set_defaults(func=cmd_search)

    ing = sub.add_parser(
        "ingest", help="add a LoCoMo, LongMemEval or JSONL chat file to a store (a progress bar on stderr)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Add the turns of FILE to a persistent store: raw turns (Chroma + BM25), then the graph.\n\n"
                    "Formats (--format, else *.jsonl is jsonl and a JSON file is recognised by its records):\n"
                    "  locomo       LoCoMo JSON: each conversation goes into the namespace of its sample_id\n"
                    "               (--conversation picks some; --namespace renames a single one)\n"
                    "  longmemeval  LongMemEval JSON[.gz]: each question's haystack into the namespace of its\n"
                    "               question_id (--question-id / --limit pick some; --namespace renames a single one)\n"
                    "  jsonl        chat messages, one JSON object per line, into --namespace (required):\n"
                    "                 " + _JSONL_EXAMPLE + "\n"
                    "               \"role\" (user/human, assistant/ai; system and tool lines are skipped, any\n"
                    "               other role fails the file) or\n"
                    "               \"speaker\" (a name, kept as is); \"content\" or \"text\"; optional \"timestamp\"\n"
                    "               (ISO 8601, UTC if it has no offset; a line without one: the previous line's\n"
                    "               plus 1 s), \"id\" (the turn id; default line<N>-<hash>), \"session\" (default \"0\").\n"
                    "               Blank lines are skipped; any bad line fails the file before anything is written.\n\n"
                    "Turns whose id the namespace already holds are skipped, so ingesting a file twice adds nothing;\n"
                    "a line without \"id\" that matches a stored message of another time is stored as a new one.")
    ing.add_argument("file", metavar="FILE", help="the LoCoMo / LongMemEval JSON[.gz] or chat JSONL file")
    ing.add_argument("--format", choices=["locomo", "longmemeval", "jsonl"], default=None,
                     help="the file's format (default: jsonl for *.jsonl, else recognised from the JSON records)")
    ing.add_argument("--namespace", help="the namespace to write (required for jsonl; for locomo / longmemeval "
                                         "only with one conversation / question, default: its own id)")
    ing.add_argument("--data-dir", help=data_dir_help + "; created if missing")
    ing.add_argument("--conversation", action="append", metavar="ID",
                     help="locomo: ingest only this sample_id (repeatable; default: every conversation)")
    ing.add_argument("--question-id", action="append", metavar="ID",
                     help="longmemeval: ingest only this question's haystack (repeatable; default: every question)")
    ing.add_argument("--limit", type=int, default=None, metavar="N",
                     help="longmemeval: only the first N questions (after --question-id)")
    ing.add_argument("--replace", action="store_true",
                     help="forget each target namespace first (default: keep it and skip turns already stored)")
    ing.add_argument("--no-graph", action="store_true",
                     help="write the raw turns only (faster); the graph is built on the namespace's first "
                          "cascade search")
    ing.add_argument("--batch-size", type=int, default=256, metavar="N",
                     help="turns per write (default: 256)")
    ing.set_defaults(func=cmd_ingest)

    lst = sub.add_parser("list", help="list a store's namespaces and their turn counts")
    lst.add_argument("--data-dir", help=data_dir_help)
    lst.add_argument("--json", action="store_true",
                     help='print a JSON list of {"namespace": ..., "turns": ...} instead of a table')
    lst.set_defaults(func=cmd_list)

    fg = sub.add_parser("forget", help="delete a namespace (raw turns, BM25 index, graph, files), or some of its "
                                       "turns; asks no question")
    fg.add_argument("namespace", metavar="NAMESPACE", help="the namespace to delete (`langmem-cog list` shows them)")
    fg.add_argument("--turn", action="append", metavar="ID",
                    help="delete only this turn id, and what the graph derived from it alone (repeatable)")
    fg.add_argument("--data-dir", help=data_dir_help)
    fg.set_defaults(func=cmd_forget)

    ps = sub.add_parser("purge-server", help="remove deleted turns' text from a Chroma server's directory (its log, "
                                             "free pages, unused HNSW slots); run on the server's host, server stopped")
    ps.add_argument("--path", required=True, help="the directory the server runs on (chroma run --path DIR)")
    ps.set_defaults(func=cmd_purge_server)

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
    _precision_arg(tf, "rerank")
    tf.set_defaults(func=cmd_bench_transfer)
    cmp_ = bench.add_parser("compare", help="paired bootstrap of two rows files (B - A)")
    cmp_.add_argument("a", help="rows JSONL of system A (the baseline)")
    cmp_.add_argument("b", help="rows JSONL of system B (compared with A on the same questions)")
    cmp_.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples (default: 10000)")
    cmp_.add_argument("--seed", type=int, default=0, help="random seed of the bootstrap (default: 0)")
    cmp_.set_defaults(func=cmd_bench_compare)

    ui = sub.add_parser("ui", help="serve the memory inspector (search trace, graph, timelines) on a local web page")
    ui.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    ui.add_argument("--port", type=int, default=8765, help="port (default: 8765; 0 picks a free one)")
    ui.add_argument("--data-dir", help="the store to inspect (default: $LANGMEM_COG_DATA_DIR, else "
                                       "~/.local/share/langmem-cog)")
    ui.add_argument("--ephemeral", action="store_true", help="keep everything in memory (nothing is written)")
    ui.add_argument("--demo", action="store_true", help="first load the bundled sample conversation (namespace demo-1)")
    ui.add_argument("--load-locomo", metavar="PATH", help="first load a conversation of a LoCoMo JSON file")
    ui.add_argument("--conversation", action="append", metavar="ID",
                    help="with --load-locomo: the sample_id to load (repeatable; default: the file's first)")
    ui.add_argument("--max-steps", type=int, default=5, help="operator step budget of the search trace")
    ui.add_argument("--token", help="access token the API requires (default: $LANGMEM_COG_UI_TOKEN, else a random one "
                                    "printed in the address; a token given here is visible to other local users in ps)")
    ui.add_argument("--no-auth", action="store_true",
                    help="no access token (loopback only): any local user or process can then read every namespace")
    ui.set_defaults(func=cmd_ui)

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
    models = sub.add_parser("models", help="install optional local models").add_subparsers(dest="models", required=True)
    inst = models.add_parser("install", help="install a model from its PyPI part packages")
    inst.add_argument("name", choices=["mpnet"], help="the model to install (mpnet: all-mpnet-base-v2)")
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
        message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())  # one line
        print(f"langmem-cog: error: {message}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)
    except KeyboardInterrupt:
        print("langmem-cog: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
