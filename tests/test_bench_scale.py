"""The scale bench: replayed turns, the measured points, the plot, graph-store timings and a Chroma server."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeEmbeddings

from langmem_cog.bench.scale import (
    ScaleTargets,
    ScaleWorkload,
    bench_graph_stores,
    chroma_server,
    plot_scale,
    run_scale,
    scale_turns,
)
from langmem_cog.config import CogMemConfig
from langmem_cog.embeddings import CachedEmbeddings
from langmem_cog.errors import InvalidInputError
from langmem_cog.loaders import load_locomo
from langmem_cog.store import TurnStore

SAMPLE = Path(__file__).resolve().parents[1] / "langmem_cog" / "data" / "sample_conversation.json"


def test_replayed_turns_get_fresh_ids_and_later_dates() -> None:
    pool = load_locomo(SAMPLE)[0].turns
    turns = list(scale_turns(pool, 2 * len(pool) + 3, "scale-x"))
    assert len({t.id for t in turns}) == len(turns)
    assert {t.namespace for t in turns} == {"scale-x"}
    first, again = turns[0], turns[len(pool)]
    assert again.text == first.text and again.id == f"r1.{first.id}"
    assert (again.timestamp - first.timestamp).days == 365
    assert [t.id for t in scale_turns(pool, 5, "scale-x", start=3)] == [t.id for t in turns[3:5]]
    with pytest.raises(InvalidInputError):
        list(scale_turns([], 3, "scale-x"))


def test_run_scale_measures_every_size_and_plots(tmp_path: Path) -> None:
    n = len(load_locomo(SAMPLE)[0].turns)
    result = run_scale(ScaleWorkload(sizes=[2 * n, n // 2], locomo=SAMPLE, unique=n, queries=3, batch=25),
                       embeddings=FakeEmbeddings(), workdir=tmp_path)
    (mode,) = result["modes"]
    assert mode["mode"] == "embedded" and [p["turns"] for p in mode["points"]] == [n // 2, 2 * n]
    for p in mode["points"]:
        assert set(p["latency_ms"]) == {"dense", "bm25", "hybrid"} and p["ingest_turns_per_s"] > 0
        assert p["disk_mb"] > 0 and p["rss_mb"] > 0 and p["graph_nodes"] > 0
        assert p["freshness_check_ms"] is None  # embedded: no server to check
    assert result["cache"]["hits"] >= n  # the replay reused the pool's vectors
    with pytest.raises(InvalidInputError, match="server only"):
        ScaleTargets(embedded=False)
    with pytest.raises(InvalidInputError, match="positive turn counts"):
        ScaleWorkload(sizes=[0, 10])
    with pytest.raises(InvalidInputError, match="unknown systems"):
        ScaleWorkload(systems=("dense", "graph"))
    pytest.importorskip("matplotlib")
    png = plot_scale(result, tmp_path / "scale.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_graph_store_timings_cover_file_and_basestore(tmp_path: Path) -> None:
    rows = bench_graph_stores([20], locomo=SAMPLE, workdir=tmp_path, repeats=2)
    assert {r["backend"] for r in rows} == {"file", "inmemory"}
    assert all(r["nodes"] > 0 and r["save_ms"]["p50"] > 0 for r in rows)


def test_cached_embeddings_embed_each_text_once() -> None:
    inner = FakeEmbeddings()
    emb = CachedEmbeddings(inner, max_items=2)
    a = emb.embed_array(["x y", "x y", "z"])
    assert (a[0] == a[1]).all() and inner.calls == 2 and (emb.hits, emb.misses) == (1, 2)
    emb.embed_documents(["w"])  # evicts the least recently used
    assert len(emb._cache) == 2


@pytest.mark.slow
def test_turn_store_against_a_chroma_server(tmp_path: Path, ns: str) -> None:
    with chroma_server(tmp_path / "srv") as (host, port, _pid):
        cfg = CogMemConfig.preset("server", chroma_host=host, chroma_port=port, data_dir=tmp_path / "data")
        store = TurnStore(cfg, embeddings=FakeEmbeddings())
        turns = [t.model_copy(update={"namespace": ns}) for t in load_locomo(SAMPLE)[0].turns[:30]]
        store.add_turns(turns)
        assert store.count(ns) == 30 and ns in store.namespaces()
        reopened = TurnStore(cfg, embeddings=FakeEmbeddings())
        hits = reopened.search(ns, turns[3].text, k=3)
        assert hits[0].turn.id == turns[3].id
        assert reopened.delete_turns(ns, [turns[3].id]) == 1 and reopened.count(ns) == 29
