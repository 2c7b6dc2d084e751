"""The memory inspector's JSON API and HTTP server, without a browser (fake embedder)."""

from __future__ import annotations

import http.client
import json
import logging
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from fakes import FakeEmbeddings

from langmem_cog import CogMemConfig, make_turn
from langmem_cog.graph.schema import ClaimStatus, EdgeType, NodeType
from langmem_cog.loaders import LoCoMoConversation
from langmem_cog.memory import CogMemory
from langmem_cog.ui import InspectorAPI, make_server, sample_conversation, serve_in_thread
from langmem_cog.ui.api import locomo_conversations
from langmem_cog.ui.server import check_token, new_token

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


DEFAULT = object()


def request(srv: Any, path: str, host: str | None = None, method: str = "GET",
            token: Any = DEFAULT) -> tuple[int, dict[str, str], bytes]:
    """One request; ``token``: sent as ``Authorization: Bearer`` (default: the server's; ``None``: no header)."""
    h, port = srv.server_address[:2]
    conn = http.client.HTTPConnection(h, port, timeout=30)
    headers = {"Host": host} if host else {}
    token = srv.token if token is DEFAULT else token
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
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
    for method in ("POST", "PUT", "DELETE"):  # read-only: a JSON error like every other
        status, headers, body = request(server, "/api/namespaces", method=method)
        assert status == 405 and headers["content-type"].startswith("application/json")
        assert "read-only" in json.loads(body)["error"]


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


# ---------------------------------------------------------------------------- access token
def test_http_api_needs_the_token(server: Any, climbing: str) -> None:
    """Loopback is not a boundary between local users: every /api request needs the server's token."""
    token = server.token
    assert len(token) >= 32 and server.url == f"{server.base_url}?token={token}"
    search = "/api/search?" + urlencode({"ns": climbing, "q": "Where does Leo climb?"})
    for path in ("/api/namespaces", f"/api/graph?ns={climbing}", f"/api/timeline?ns={climbing}&person=Leo", search,
                 "/api/nope"):
        status, headers, body = request(server, path, token=None)
        assert status == 401, path
        assert headers["content-type"].startswith("application/json") and headers["www-authenticate"].startswith("Bearer")
        error = json.loads(body)["error"]
        assert "access token" in error and climbing not in body.decode()
        assert request(server, path, token=token + "x")[0] == 401  # a wrong token
        assert request(server, path, token=token[:-1])[0] == 401  # a prefix of it
    assert request(server, "/api/namespaces", method="HEAD", token=None)[0] == 401
    # The header, or the token query parameter (which is not handed to the endpoint as a parameter).
    status, _, body = request(server, "/api/namespaces")
    assert status == 200 and climbing in [n["namespace"] for n in json.loads(body)["namespaces"]]
    status, _, body = request(server, search + "&" + urlencode({"token": token}), token=None)
    assert status == 200 and json.loads(body)["evidence"]
    assert request(server, f"/api/namespaces?token={token}&token={token}", token=None)[0] == 401  # given twice
    assert request(server, f"/api/namespaces?token={token}", token="wrong-but-sent-as-header")[0] == 401
    h, port = server.server_address[:2]
    conn = http.client.HTTPConnection(h, port, timeout=30)
    conn.request("GET", "/api/namespaces", headers={"Authorization": f"Basic {token}"})  # not a bearer token
    assert conn.getresponse().status == 401
    conn.close()
    # The static page needs no token: it holds no data (the script fetches it with the token).
    for path in ("/", "/app.js", "/style.css"):
        status, _, body = request(server, path, token=None)
        assert status == 200 and climbing.encode() not in body and b"Leo" not in body
    # The Host check still comes first, token or not.
    assert request(server, "/api/namespaces", host="attacker.example:80")[0] == 403


def test_the_token_is_kept_out_of_the_log(server: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="langmem_cog.ui.server"):
        assert request(server, f"/?token={server.token}", token=None)[0] == 200
        assert request(server, f"/api/namespaces?token={server.token}", token=None)[0] == 200
        deadline = time.monotonic() + 10  # the handler thread logs after the response is sent
        while caplog.text.count("<token>") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert caplog.text.count("<token>") >= 2 and server.token not in caplog.text


def test_no_auth_serves_without_a_token_and_warns(api: InspectorAPI, climbing: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="langmem_cog.ui.server"):
        srv = make_server(api, port=0, auth=False)
    serve_in_thread(srv)
    try:
        assert srv.token is None and srv.url == srv.base_url and "?token" not in srv.url
        assert "WITHOUT an access token" in caplog.text
        status, _, body = request(srv, "/api/namespaces", token=None)
        assert status == 200 and climbing in [n["namespace"] for n in json.loads(body)["namespaces"]]
        assert request(srv, "/api/namespaces", host="attacker.example:80", token=None)[0] == 403
    finally:
        srv.shutdown()
        srv.server_close()


def test_token_settings(api: InspectorAPI) -> None:
    given = "a-token-of-my-own_0123"
    srv = make_server(api, port=0, token=given)
    try:
        assert srv.token == given and srv.url.endswith(f"/?token={given}")
    finally:
        srv.server_close()
    a, b = new_token(), new_token()
    assert a != b and len(a) == 32 and check_token(a) == a
    for bad in ("short", "", "has space in it 0123", "é" * 20, "x" * 15, "\n" + "x" * 20, 12345678901234567):
        with pytest.raises(ValueError, match="at least 16"):
            make_server(api, port=0, token=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 16"):
        check_token(None)
    with pytest.raises(ValueError, match="exclude each other"):
        make_server(api, port=0, token=given, auth=False)
    with pytest.raises(ValueError, match="loopback address only"):
        make_server(api, host="0.0.0.0", port=0, auth=False)  # noqa: S104 - refused before binding


# ---------------------------------------------------------------------------- GETs write nothing
def listing(root: Path) -> dict[str, Any]:
    """Every path under ``root`` with its size and modification time (``dir`` for directories)."""
    out: dict[str, Any] = {}
    for p in sorted(root.rglob("*")):
        st = p.stat()
        out[str(p.relative_to(root))] = "dir" if p.is_dir() else (st.st_size, st.st_mtime_ns, st.st_ino)
    return out


@pytest.fixture
def disk(tmp_path: Path, ns: str) -> Iterator[tuple[InspectorAPI, Any, Path]]:
    """An inspector over a persistent store (graph files under ``data_dir/graph``), served over HTTP."""
    memory = CogMemory(CogMemConfig.preset("default", data_dir=tmp_path), embeddings=FakeEmbeddings())
    memory.add_turns(climbing_turns(ns))
    memory.consolidate(ns)
    api = InspectorAPI(memory)
    srv = make_server(api, port=0)
    serve_in_thread(srv)
    try:
        yield api, srv, tmp_path
    finally:
        srv.shutdown()
        srv.server_close()


def test_gets_write_nothing_when_the_graph_is_in_step(disk: tuple[InspectorAPI, Any, Path], ns: str) -> None:
    api, srv, root = disk
    before = listing(root)
    status, _, body = request(srv, f"/api/graph?ns={ns}")
    g = json.loads(body)
    assert status == 200 and g["rebuilt"] is False and g["note"] is None
    assert g["counts"]["Fact"] >= 1 and sum(g["edges"].values()) == api.memory.graph(ns).number_of_edges()
    assert listing(root) == before


@pytest.mark.parametrize("deleted", ["snapshot", "snapshot and journal", "whole graph directory"])
def test_gets_do_not_recreate_a_deleted_graph_file(disk: tuple[InspectorAPI, Any, Path], ns: str, deleted: str) -> None:
    """Issue #21 defect 7: ``GET /api/graph`` used to repair a deleted graph and save it again."""
    api, srv, root = disk
    path = api.memory.graphs.path(ns)
    assert path is not None and path.parent == root / "graph" and path.exists()
    journal = path.with_suffix(".journal")
    if deleted == "whole graph directory":
        shutil.rmtree(path.parent)
    else:
        path.unlink()
        if deleted == "snapshot and journal":
            journal.unlink(missing_ok=True)
    before = listing(root)
    search = "/api/search?" + urlencode({"ns": ns, "q": "Where does Leo climb?"})
    for _ in range(2):  # the first GET rebuilds in memory, the second reuses that
        status, _, body = request(srv, f"/api/graph?ns={ns}")
        g = json.loads(body)
        assert status == 200 and g["rebuilt"] is True and "nothing was written" in g["note"]
        assert g["claims"] and any(f["consolidated"] for f in g["facts"])  # the same graph, rebuilt from the turns
        status, _, body = request(srv, f"/api/timeline?ns={ns}&person=Leo")
        assert status == 200 and json.loads(body)["events"] and json.loads(body)["rebuilt"] is True
        status, _, body = request(srv, search)
        assert status == 200 and json.loads(body)["evidence"]
        assert request(srv, f"/api/graph?ns={ns}", method="HEAD")[0] == 200
        assert request(srv, "/api/namespaces")[0] == 200
        assert listing(root) == before, "a GET wrote to the data directory"
    assert not path.exists()


# ---------------------------------------------------------------------------- CLI
@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["ui", "--conversation", "conv-26"], "--load-locomo"),
        (["ui", "--ephemeral", "--data-dir", "somewhere"], "exclude each other"),
        (["ui", "--ephemeral", "--token", "short"], "at least 16"),
        (["ui", "--ephemeral", "--token", ""], "at least 16"),
        (["ui", "--ephemeral", "--no-auth", "--token", "a-token-of-my-own_0123"], "exclude each other"),
        (["ui", "--data-dir", "/nonexistent/lmc-store"], "--data-dir /nonexistent/lmc-store is not an existing store"),
        (["ui", "--ephemeral", "--load-locomo", "/nonexistent.json"], "--load-locomo /nonexistent.json is not a file"),
    ],
)
def test_cli_ui_rejects_bad_flag_combinations(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    from langmem_cog.cli import main

    assert main(argv) == 2
    assert needle in capsys.readouterr().err


@pytest.mark.parametrize("auth", ["generated", "env", "no-auth"])
def test_cli_ui_serves_a_store(tmp_path: Path, auth: str) -> None:
    """``langmem-cog ui --data-dir`` in a subprocess: it prints its URL (with the token) and answers the API."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(Path.cwd())}
    env.pop("LANGMEM_COG_UI_TOKEN", None)
    argv = [sys.executable, "-m", "langmem_cog.cli", "ui", "--data-dir", str(tmp_path), "--port", "0"]
    if auth == "env":
        env["LANGMEM_COG_UI_TOKEN"] = "token-from-the-environment"
    if auth == "no-auth":
        argv.append("--no-auth")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "memory inspector on http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() else "")
        url = urlsplit(line.split(" on ", 1)[1].split()[0])
        token = parse_qs(url.query).get("token", [None])[0]
        if auth == "generated":
            assert token is not None and len(token) == 32
        elif auth == "env":
            assert token == "token-from-the-environment" and "token-from-the-environment" not in " ".join(argv)
        else:
            assert token is None and url.query == ""

        def get(path: str, token: str | None) -> tuple[int, Any]:
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
            conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
            res = conn.getresponse()
            out = res.status, json.loads(res.read())
            conn.close()
            return out

        assert get("/api/namespaces", token) == (200, {"namespaces": []})
        if token is not None:
            status, body = get("/api/namespaces", None)
            assert status == 401 and "access token" in body["error"]
            assert get(f"/api/namespaces?token={token}", None)[0] == 200
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert ("WITHOUT an access token" in err) == (auth == "no-auth")
