"""The commands that write and delete a store's memory: ``ingest`` (LoCoMo, LongMemEval or a JSONL chat
file), ``list``, ``forget`` and ``purge-server``."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from langmem_cog.cli._common import (
    DATA_DIR_HELP,
    CLIError,
    command_config,
    counted,
    list_hint,
    progress,
    require_namespace,
    store_location,
    valid_namespace,
)
from langmem_cog.errors import LangMemCogError

#: JSONL roles stored under a fixed speaker name; the roles in ``_SKIPPED_ROLES`` are not stored, and any
#: other role fails the file (a name belongs in ``"speaker"``).
_ROLE_SPEAKERS = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant"}
_SKIPPED_ROLES = {"system", "tool", "function", "developer"}
_JSONL_EXAMPLE = '{"role": "user", "content": "I moved to Lisbon", "timestamp": "2024-05-01T09:30:00Z"}'


def _parse_timestamp(value: Any, where: str) -> Any:
    """An ISO 8601 date or date-time as an aware datetime (naive ones are UTC)."""
    from datetime import UTC, datetime

    if not isinstance(value, str):
        raise CLIError(f"{where}: 'timestamp' must be an ISO 8601 string such as 2024-05-01T09:30:00+00:00, "
                        f"got {type(value).__name__}")
    try:
        ts = datetime.fromisoformat(value.strip())
    except ValueError:
        raise CLIError(f"{where}: timestamp {value!r} is not ISO 8601 (e.g. 2024-05-01 or "
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
        CLIError: If a line is not a JSON object of the format; the message names the line.
    """
    import hashlib
    from datetime import UTC, datetime, timedelta

    from langmem_cog.loaders import message_turn_id
    from langmem_cog.records import make_turn, split_text, storable_speaker, storable_text

    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()  # a byte-order mark is not content
    except UnicodeDecodeError as exc:
        raise CLIError(f"FILE {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise CLIError(f"FILE {path} cannot be read: {exc.strerror or exc}") from None
    rows: list[tuple[int, dict[str, Any]]] = []
    skipped = 0
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path} line {n}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CLIError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); each line must be one "
                            f"object such as {_JSONL_EXAMPLE}") from None
        if not isinstance(obj, dict):
            raise CLIError(f"{where}: expected a JSON object such as {_JSONL_EXAMPLE}, got a {type(obj).__name__}")
        who = obj.get("speaker", obj.get("role"))
        if not isinstance(who, str) or not who.strip():
            raise CLIError(f"{where}: needs a 'role' or 'speaker' string (e.g. \"role\": \"user\")")
        if "speaker" not in obj and who.strip().lower() in _SKIPPED_ROLES:
            skipped += 1
            continue
        if "speaker" not in obj and who.strip().lower() not in _ROLE_SPEAKERS:
            raise CLIError(f"{where}: unknown role {who.strip()!r}: use \"role\" user/human or assistant/ai "
                            f"({', '.join(sorted(_SKIPPED_ROLES))} lines are skipped), or \"speaker\": "
                            f"{json.dumps(who.strip())} to store the line under that name")
        text = obj.get("content", obj.get("text"))
        if not isinstance(text, str) or not text.strip():
            raise CLIError(f"{where}: needs a non-empty 'content' (or 'text') string")
        rows.append((n, obj))
    # Timestamps: as given; a line without one gets the previous line's plus a second (lines before
    # the first timestamp: that timestamp minus a second per line; none at all: the ingest time).
    given = [_parse_timestamp(o["timestamp"], f"{path} line {n}") if o.get("timestamp") is not None else None
             for n, o in rows]
    first = next(((i, ts) for i, ts in enumerate(given) if ts is not None), None)
    stamps: list[datetime] = []
    for i, ts in enumerate(given):
        if ts is None:
            try:
                if first is None:
                    ts = datetime.now(UTC) + timedelta(seconds=i)
                elif i < first[0]:
                    ts = first[1] - timedelta(seconds=first[0] - i)
                else:
                    ts = stamps[-1] + timedelta(seconds=1)
            except OverflowError:
                near = "next" if first is not None and i < first[0] else "previous"
                raise CLIError(f"{path} line {rows[i][0]}: has no timestamp, and the {near} line's is too close to the "
                               "limit of what a timestamp can hold to count a second from it: give this line a "
                               "timestamp") from None
        stamps.append(ts)
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
            raise CLIError(f"{where}: id {base_id!r} is already used on line {seen[base_id]}: ids must be unique")
        seen[base_id] = n
        parts = split_text(text)
        if not parts:
            raise CLIError(f"{where}: 'content' holds no storable text")
        for j, part in enumerate(parts, 1):
            try:
                turns.append(make_turn(
                    id=base_id if len(parts) == 1 else f"{base_id}#{j}", namespace=namespace,
                    conversation_id=namespace, session_id=session, speaker=speaker, text=part, timestamp=ts,
                    position=len(turns),
                    metadata={} if len(parts) == 1 else {"message_id": base_id, "part": j, "parts": len(parts)}))
            except LangMemCogError as exc:
                raise CLIError(f"{where}: {exc}") from None
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
        raise CLIError(f"FILE {exc}{hint}") from None
    first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
    found = "locomo" if "conversation" in first else "longmemeval" if "haystack_sessions" in first else None
    if given is None and found is None:
        raise CLIError(f"cannot tell the format of FILE {path}: pass --format locomo, longmemeval or jsonl")
    if given is not None and found not in (None, given):
        raise CLIError(f"FILE {path} looks like {found}, not {given}: fix --format (or leave it out)")
    if not isinstance(data, list) or not data:
        raise CLIError(f"FILE {path}: expected a non-empty JSON list of {given or found} records")
    return given or str(found), data


def _ingest_groups(path: Path, args: argparse.Namespace) -> tuple[str, list[tuple[str, list[Any]]], int, bool]:
    """The format of ``path``, its turns grouped by namespace, the lines skipped for their role, and
    whether a JSONL file's timestamps come from the file (see :func:`_jsonl_turns`)."""
    from langmem_cog.loaders import locomo_turns, longmemeval_turns

    fmt, data = _detect_format(path, args.format)
    for opt, wanted in (("conversation", "locomo"), ("question_id", "longmemeval"), ("limit", "longmemeval")):
        if getattr(args, opt) and fmt != wanted:
            raise CLIError(f"--{opt.replace('_', '-')} applies to {wanted} files only; FILE {path} is {fmt}")
    ns = valid_namespace(args.namespace, "--namespace") if args.namespace else None
    if fmt == "jsonl":
        if ns is None:
            raise CLIError("--namespace is required for a JSONL file: pass --namespace NAME (e.g. user-42)")
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
            raise CLIError(f"{option} {missing[0]!r} is not in FILE {path} (its ids: {shown})")
        records = [r for r in records if str(r.get(key)) in set(chosen)]
    if args.limit is not None:
        if args.limit < 1:
            raise CLIError(f"--limit {args.limit} is invalid: pass a positive number of questions")
        records = records[: args.limit]
    if ns is not None and len(records) != 1:
        raise CLIError(f"--namespace names one namespace but FILE {path} has {len(records)} "
                        f"{'conversations' if fmt == 'locomo' else 'questions'}: pick one with {option} ID, "
                        "or leave --namespace out (each gets its own id as namespace)")
    groups = []
    for rec in records:
        try:
            turns = locomo_turns(rec, namespace=ns) if fmt == "locomo" else longmemeval_turns(rec, namespace=ns)[0]
        except LangMemCogError as exc:
            raise CLIError(f"FILE {path}: {exc}") from None
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
        raise CLIError(f"FILE {path} does not exist" if not path.exists() else f"FILE {path} is not a file")
    if args.batch_size < 1:
        raise CLIError(f"--batch-size {args.batch_size} is invalid: pass a positive number of turns")
    fmt, groups, skipped_roles, dated = _ingest_groups(path, args)
    if not any(turns for _, turns in groups):  # checked before the store is opened: nothing is written
        why = ("its records hold no turns" if fmt != "jsonl"
               else f"only system/tool lines: {skipped_roles} skipped" if skipped_roles else "it has no message lines")
        hint = "; a line to store needs \"role\" user or assistant, or a \"speaker\"" if fmt == "jsonl" else ""
        raise CLIError(f"FILE {path} holds no turn to store ({why}): nothing was ingested{hint}", exit_code=1)
    # Plain retrieval while ingesting: the cascade would embed the graph's node texts now, for a
    # query in this process, and the CLI asks none.
    cfg = command_config(args, must_exist=False).model_copy(update={"retriever": RetrieverSettings(mode="hybrid")})
    memory = CogMemory(cfg)
    where = store_location(cfg)
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
        for t in progress(new, desc=f"ingest {ns}", total=len(new)) if new else ():
            batch.append(t)
            if len(batch) >= args.batch_size:
                (memory.store.add_turns if args.no_graph else memory.add_turns)(batch)
                batch = []
        if batch:
            (memory.store.add_turns if args.no_graph else memory.add_turns)(batch)
        if new and not args.no_graph:
            memory.consolidate(ns)
        total_new += len(new)
        print(f"{ns}: {counted(len(new), 'turn')} ingested" + (f", {len(present)} already stored (skipped)"
                                                              if present else ""))
    if skipped_roles:
        print(f"skipped {counted(skipped_roles, 'system/tool line')} (only user, assistant and named speakers "
              "are stored)")
    print(f"{counted(total_new, 'turn')} into {counted(len(groups), 'namespace')} of {where} ({fmt})")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """``list``: the namespaces of a store with their turn counts."""
    from langmem_cog import TurnStore

    cfg = command_config(args, must_exist=True)
    store = TurnStore(cfg)
    rows = [(ns, store.count(ns)) for ns in store.namespaces()]
    where = store_location(cfg)
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
    print(f"{counted(len(rows), 'namespace')}, {counted(sum(n for _, n in rows), 'turn')} in {where}")
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    """``forget``: delete a namespace (raw turns, BM25 index, graph, files), or some of its turns."""
    from langmem_cog.memory import CogMemory

    cfg = command_config(args, must_exist=True)
    memory = CogMemory(cfg)
    ns = valid_namespace(args.namespace, "NAMESPACE")
    where = store_location(cfg)
    if args.turn:
        require_namespace(memory.store, ns, where, option="NAMESPACE", exit_code=1)
        wanted = list(dict.fromkeys(args.turn))
        n = memory.delete_turns(ns, wanted)
        if n == 0:
            raise CLIError(f"namespace {ns!r} holds none of the --turn ids {', '.join(map(repr, wanted))}", 1)
        print(f"forgot {n} of the {len(wanted)} --turn ids of namespace {ns!r} (raw store, BM25 index, graph); "
              f"{memory.store.count(ns)} turns left in {where}")
        return 0
    turns = memory.store.count(ns) if memory.store.has_namespace(ns) else 0
    nodes = memory.graphs.graph(ns).number_of_nodes()
    if not memory.forget(ns):
        raise CLIError(f"namespace {ns!r} does not exist in {where}: check NAMESPACE and --data-dir "
                        f"({list_hint(where)} shows the stored namespaces)", 1)
    print(f"forgot namespace {ns!r}: {counted(turns, 'turn')}, their BM25 index and the graph "
          f"({counted(nodes, 'node')}) removed from {where}")
    return 0


def cmd_purge_server(args: argparse.Namespace) -> int:
    """``purge-server``: deleted text out of a stopped Chroma server's directory (its log, free pages, HNSW slots)."""
    from langmem_cog.chroma_files import purge_chroma_dir

    r = purge_chroma_dir(args.path)
    print(f"purged {args.path}: {counted(r.superseded_records, 'deleted record')} and "
          f"{counted(r.dropped_collection_records, 'record')} of dropped collections removed from the log, "
          f"{counted(r.hnsw_bytes_zeroed, 'byte')} of unused HNSW slots zeroed, "
          f"chroma.sqlite3 {r.bytes_before:,} -> {r.bytes_after:,} bytes; the server may start again")
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``ingest``, ``list``, ``forget`` and ``purge-server``."""
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
    ing.add_argument("--data-dir", help=DATA_DIR_HELP + "; created if missing")
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
    lst.add_argument("--data-dir", help=DATA_DIR_HELP)
    lst.add_argument("--json", action="store_true",
                     help='print a JSON list of {"namespace": ..., "turns": ...} instead of a table')
    lst.set_defaults(func=cmd_list)

    fg = sub.add_parser("forget", help="delete a namespace (raw turns, BM25 index, graph, files), or some of its "
                                       "turns; asks no question")
    fg.add_argument("namespace", metavar="NAMESPACE", help="the namespace to delete (`langmem-cog list` shows them)")
    fg.add_argument("--turn", action="append", metavar="ID",
                    help="delete only this turn id, and what the graph derived from it alone (repeatable)")
    fg.add_argument("--data-dir", help=DATA_DIR_HELP)
    fg.set_defaults(func=cmd_forget)

    ps = sub.add_parser("purge-server", help="remove deleted turns' text from a Chroma server's directory (its log, "
                                             "free pages, unused HNSW slots); run on the server's host, server stopped")
    ps.add_argument("--path", required=True, help="the directory the server runs on (chroma run --path DIR)")
    ps.set_defaults(func=cmd_purge_server)
