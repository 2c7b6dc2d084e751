"""The memory inspector's JSON API and HTTP server, without a browser (fake embedder)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from fakes import FakeEmbeddings

from langmem_cog import CogMemConfig, make_turn
from langmem_cog.graph.schema import ClaimStatus, EdgeType, NodeType
from langmem_cog.loaders import LoCoMoConversation
from langmem_cog.memory import CogMemory
from langmem_cog.ui import InspectorAPI, make_server, sample_conversation, serve_in_thread
from langmem_cog.ui.api import locomo_conversations

CLIMBING = [
    "I went climbing at the gym yesterday.",
    "I love the new gym, honestly.",
    "I went climbing again yesterday with Sam.",
    "Nice weather today.",
    "I went climbing yesterday, my forearms hurt.",
    "I hate the gym now, honestly.",
    "<img src=x onerror=alert(1)> is what I typed into the form.",
]


@pytest.fixture
def memory() -> CogMemory:
    return CogMemory(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())


@pytest.fixture
def api(memory: CogMemory) -> InspectorAPI:
    return InspectorAPI(memory)


def climbing_turns(ns: str) -> list[Any]:
    start = datetime(2023, 3, 1, tzinfo=UTC)
    return [make_turn(id=f"t{i}", namespace=ns, speaker="Leo", text=text, position=i,
                      timestamp=start + timedelta(days=3 * i)) for i, text in enumerate(CLIMBING)]


@pytest.fixture
def climbing(api: InspectorAPI, ns: str) -> str:
    """A namespace where Leo climbs three times in two weeks (a consolidated fact) and changes his mind."""
    api.memory.add_turns(climbing_turns(ns))
    api.memory.consolidate(ns)
    return ns


@pytest.fixture
def sample(api: InspectorAPI, ns: str) -> LoCoMoConversation:
    """The bundled sample conversation, loaded into a fresh namespace."""
    conv = sample_conversation()
    turns = [t.model_copy(update={"namespace": ns}) for t in conv.turns]
    conv = LoCoMoConversation(sample_id=ns, speakers=conv.speakers, turns=turns, qa=conv.qa)
    assert api.add_conversation(conv) == len(turns)
    return conv


def ok(api: InspectorAPI, path: str, **params: Any) -> dict[str, Any]:
    status, body = api.handle(path, params)
    assert status == 200, body
    return body


# ---------------------------------------------------------------------------- search
def test_search_returns_trace_grounded_evidence_and_raw_hits(api: InspectorAPI, sample: LoCoMoConversation) -> None:
    qa = next(q for q in sample.qa if q["question"] == "What is Leo allergic to?")
    r = ok(api, "/api/search", ns=sample.sample_id, q=qa["question"], k="5")
    assert r["intent"] and r["trace"][0]["operator"] == "anchor"
    assert all({"step", "operator", "args", "n_results", "top", "ms"} <= set(t) for t in r["trace"])
    assert r["gold"] == qa["evidence"]
    ids = [e["turn_id"] for e in r["evidence"]]
    assert set(qa["evidence"]) & set(ids), "the gold turn is grounded"
    assert [e["rank"] for e in r["evidence"]] == list(range(1, len(ids) + 1)) and len(ids) <= 5
    assert r["n_evidence"] >= len(ids)
    by_id = {t.id: t for t in sample.turns}
    for e in r["evidence"] + r["raw"]:
        assert e["text"] == by_id[e["turn_id"]].text and e["speaker"] == by_id[e["turn_id"]].speaker
    assert len(r["raw"]) == 5
    assert [h["score"] for h in r["raw"]] == sorted((h["score"] for h in r["raw"]), reverse=True)
    json.dumps(r, allow_nan=False)  # plain JSON


def test_search_of_an_unlisted_question_has_no_gold_and_respects_now(api: InspectorAPI, climbing: str) -> None:
    r = ok(api, "/api/search", ns=climbing, q="What did Leo do last week?", now="2023-03-16")
    assert r["gold"] is None and r["now"] == "2023-03-16"
    assert r["time_window"] is not None and r["intent"] == "TEMPORAL"


@pytest.mark.parametrize(
    ("params", "status", "needle"),
    [
        ({}, 400, "'ns' is required"),
        ({"ns": "bad ns!", "q": "x"}, 400, "invalid namespace"),
        ({"ns": "{ns}"}, 400, "'q' is required"),
        ({"ns": "{ns}", "q": "   "}, 400, "'q' is required"),
        ({"ns": "{ns}", "q": "x" * 2001}, 400, "2001 characters"),
        ({"ns": "{ns}", "q": "x", "now": "last tuesday"}, 400, "ISO date"),
        ({"ns": "{ns}", "q": "x", "k": "0"}, 400, "out of range"),
        ({"ns": "{ns}", "q": "x", "k": "ten"}, 400, "not an integer"),
        ({"ns": "{ns}", "q": ["a", "b"]}, 400, "given 2 times"),
        ({"ns": "never-written-ns", "q": "x"}, 404, "holds no turns"),
    ],
)
def test_search_validates_its_parameters(api: InspectorAPI, climbing: str, params: dict[str, Any], status: int,
                                         needle: str) -> None:
    params = {k: (v.format(ns=climbing) if isinstance(v, str) else v) for k, v in params.items()}
    before = api.memory.store.count(climbing)
    got, body = api.handle("/api/search", params)
    assert (got, needle in body["error"]) == (status, True), body
    assert api.memory.store.count(climbing) == before  # bad input never touches stored data


def test_unknown_endpoint_lists_the_real_ones(api: InspectorAPI) -> None:
    status, body = api.handle("/api/nope", {})
    assert status == 404 and "/api/search" in body["error"]


# ---------------------------------------------------------------------------- graph and timeline
def test_graph_view_shows_claims_with_speaker_and_status_and_facts_with_support(api: InspectorAPI, climbing: str) -> None:
    g = ok(api, "/api/graph", ns=climbing)
    G = api.memory.graph(climbing)
    for t in NodeType:
        assert g["counts"][str(t)] == sum(1 for _, d in G.nodes(data=True) if d["type"] == t)
    assert sum(g["edges"].values()) == G.number_of_edges()
    assert g["claims"], "the opinions about the gym are claims"
    for c in g["claims"]:
        node = G.nodes[c["id"]]
        assert c["speaker"] == G.nodes[node["source"]]["name"] == "Leo"
        assert c["status"] in set(ClaimStatus) and c["status"] == node["status"]
    superseding = [c for c in g["claims"] if c["supersedes"]]
    assert superseding and all(G.has_edge(c["id"], old, key=EdgeType.SUPERSEDES)
                               for c in superseding for old in c["supersedes"])
    consolidated = [f for f in g["facts"] if f["consolidated"]]
    assert consolidated
    for f in consolidated:
        support = {v for _, v, k in G.out_edges(f["id"], keys=True) if k == EdgeType.SUPPORTED_BY}
        assert {e["id"] for e in f["supported_by"]} == support and len(support) >= 3
        assert all(e["turns"] and set(e["turns"]) <= set(f["turns"]) for e in f["supported_by"])


def test_graph_limit_truncates_lists_but_not_counts(api: InspectorAPI, climbing: str) -> None:
    g = ok(api, "/api/graph", ns=climbing, limit="1")
    assert all(len(g[key]) <= 1 for key in ("persons", "concepts", "events", "claims", "facts"))
    assert "events" in g["truncated"] and g["counts"]["Event"] > 1
    assert api.handle("/api/graph", {"ns": climbing, "limit": "-3"})[0] == 400


def test_timeline_follows_next_edges_and_shows_the_turns(api: InspectorAPI, climbing: str) -> None:
    t = ok(api, "/api/timeline", ns=climbing, person="leo")  # names match case-insensitively
    G = api.memory.graph(climbing)
    assert t["person"] == {"id": "person:leo", "name": "Leo"}
    ids = [e["id"] for e in t["events"]]
    participated = {v for _, v, k in G.out_edges("person:leo", keys=True) if k == EdgeType.PARTICIPATED_IN}
    assert set(ids) == participated and t["linked"] == len(ids)
    assert all(G.has_edge(a, b, key=EdgeType.NEXT) for a, b in zip(ids, ids[1:], strict=False))
    texts = {tt.id: tt.text for tt in api.memory.store.get_turns(climbing)}
    for e in t["events"]:
        assert [q["turn_id"] for q in e["evidence"]] == e["turns"]
        assert all(q["text"] == texts[q["turn_id"]] for q in e["evidence"])
    assert any(f["consolidated"] for f in t["facts"])
    assert ok(api, "/api/timeline", ns=climbing, person="person:leo")["events"] == t["events"]


def test_timeline_errors(api: InspectorAPI, climbing: str) -> None:
    status, body = api.handle("/api/timeline", {"ns": climbing, "person": "Zed"})
    assert status == 404 and "Leo" in body["error"]
    status, body = api.handle("/api/timeline", {"ns": climbing})
    assert status == 400 and "'person' is required" in body["error"]


# ---------------------------------------------------------------------------- loading
def test_namespaces_and_reloading_a_conversation(api: InspectorAPI, sample: LoCoMoConversation) -> None:
    listed = {n["namespace"]: n for n in ok(api, "/api/namespaces")["namespaces"]}
    entry = listed[sample.sample_id]
    assert entry["turns"] == len(sample.turns)
    assert entry["examples"] == [q["question"] for q in sample.qa]
    assert api.add_conversation(sample) == 0  # same turns: reused, not re-ingested
    shorter = LoCoMoConversation(sample_id=sample.sample_id, speakers=sample.speakers, turns=sample.turns[:10], qa=[])
    assert api.add_conversation(shorter) == 10  # other turns: the namespace is replaced
    assert api.memory.store.count(sample.sample_id) == 10


def test_locomo_conversations_picks_by_id(tmp_path: Path) -> None:
    sample = resources.files("langmem_cog") / "data" / "sample_conversation.json"
    with resources.as_file(sample) as path:
        assert [c.sample_id for c in locomo_conversations(str(path), ["demo-1"])] == ["demo-1"]
        with pytest.raises(ValueError, match="no conversation"):
            locomo_conversations(str(path), ["conv-404"])


# ---------------------------------------------------------------------------- HTTP
@pytest.fixture
def server(api: InspectorAPI, climbing: str) -> Iterator[Any]:
    srv = make_server(api, port=0)
    serve_in_thread(srv)
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def request(srv: Any, path: str, host: str | None = None, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    h, port = srv.server_address[:2]
    conn = http.client.HTTPConnection(h, port, timeout=30)
    headers = {"Host": host} if host else {}
    conn.request(method, path, headers=headers)
    res = conn.getresponse()
    out = res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
    conn.close()
    return out


def test_http_serves_the_page_and_the_api(server: Any, climbing: str) -> None:
    status, headers, body = request(server, "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in headers["content-security-policy"] and headers["x-content-type-options"] == "nosniff"
    assert b'id="q"' in body and b"/app.js" in body
    status, headers, body = request(server, "/api/search?" + urlencode({"ns": climbing, "q": "Where does Leo climb?"}))
    assert status == 200 and headers["content-type"].startswith("application/json")
    assert json.loads(body)["evidence"]
    status, _, body = request(server, "/api/search?" + urlencode({"ns": climbing}))
    assert status == 400 and "'q' is required" in json.loads(body)["error"]
    assert request(server, "/etc/passwd")[0] == 404
    status, headers, body = request(server, "/app.js", method="HEAD")
    assert status == 200 and body == b"" and int(headers["content-length"]) > 0


def test_http_refuses_foreign_host_headers(server: Any) -> None:
    """DNS rebinding: a page on another site must not read a loopback-bound inspector."""
    status, _, body = request(server, "/api/namespaces", host="attacker.example:80")
    assert status == 403 and "localhost" in json.loads(body)["error"]
    assert request(server, "/api/namespaces", host=f"localhost:{server.server_address[1]}")[0] == 200


def test_markup_in_turns_is_data_not_html(server: Any, climbing: str) -> None:
    _, _, body = request(server, "/api/search?" + urlencode({"ns": climbing, "q": "img onerror form typed"}))
    texts = [e["text"] for e in json.loads(body)["raw"]]
    assert CLIMBING[-1] in texts  # returned verbatim as JSON text; the page writes it with textContent
    script = (resources.files("langmem_cog.ui") / "static" / "app.js").read_text(encoding="utf-8")
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "document.write" not in script


def test_make_server_validates_port(api: InspectorAPI) -> None:
    with pytest.raises(ValueError, match="port"):
        make_server(api, port=70000)


# ---------------------------------------------------------------------------- CLI
@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["ui", "--conversation", "conv-26"], "--load-locomo"),
        (["ui", "--ephemeral", "--data-dir", "somewhere"], "exclude each other"),
    ],
)
def test_cli_ui_rejects_bad_flag_combinations(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    from langmem_cog.cli import main

    assert main(argv) == 2
    assert needle in capsys.readouterr().err


def test_cli_ui_serves_a_store(tmp_path: Path) -> None:
    """``langmem-cog ui --data-dir`` in a subprocess: it prints its URL and answers the API."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(Path.cwd())}
    proc = subprocess.Popen(
        [sys.executable, "-m", "langmem_cog.cli", "ui", "--data-dir", str(tmp_path), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "memory inspector on http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() else "")
        url = line.split(" on ", 1)[1].split()[0]
        host, port = url.removeprefix("http://").rstrip("/").rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        conn.request("GET", "/api/namespaces")
        res = conn.getresponse()
        assert res.status == 200 and json.loads(res.read()) == {"namespaces": []}
        conn.close()
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
