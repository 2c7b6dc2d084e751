"""The ONNX Runtime backend: the same numbers as torch, exported once into a keyed cache, repaired if damaged."""

from __future__ import annotations

import numpy as np
import pytest

from langmem_cog import runtime
from langmem_cog.embeddings import LocalSentenceEmbeddings, resolve_model_path
from langmem_cog.errors import InvalidInputError
from langmem_cog.rank.cross_encoder import LocalCrossEncoder, default_reranker_path

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

TEXTS = [
    "What is Leo allergic to?",
    "Leo: I am allergic to shellfish.",
    "",
    "Ünïcode, 東京 and 🙂 " * 60,  # longer than the model's 256 tokens: truncated alike
    "Maya: I love running now, it clears my head before work.",
]
PAIRS = [
    ("QUERY_TIME: 9. What is Leo allergic to?", "MEMORY_TIME: 3. Leo: I am allergic to shellfish."),
    ("QUERY_TIME: 9. What is Leo allergic to?", "MEMORY_TIME: 5. Maya: I love running now."),
    ("QUERY_TIME: 9. Does Maya like running?", "MEMORY_TIME: 1. Maya: I hate running. " * 20),
]


def test_onnx_vectors_equal_sentence_transformers_and_a_query_runs_on_one_thread(monkeypatch):
    seen: list[int | None] = []
    real = runtime.onnx_session

    def spy(*args, **kwargs):
        seen.append(kwargs.get("threads"))
        return real(*args, **kwargs)

    monkeypatch.setattr(runtime, "onnx_session", spy)
    fast = LocalSentenceEmbeddings(resolve_model_path("minilm"), precision="fp32")
    slow = LocalSentenceEmbeddings(resolve_model_path("minilm"), backend="torch")
    assert fast.backend == "onnx" and slow.precision == "fp32"
    batch = fast.embed_array(TEXTS)
    one = fast.embed_array(TEXTS[:1])
    assert np.abs(batch - slow.embed_array(TEXTS)).max() < 1e-5
    assert np.abs(one[0] - batch[0]).max() < 1e-5
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    assert seen == [None, 1]  # the batch on the default threads, the one text on single_threads
    fast.embed_array(TEXTS[:1])
    assert seen == [None, 1]  # sessions are kept by the encoder


def test_onnx_cross_encoder_scores_equal_torch():
    fast = LocalCrossEncoder(default_reranker_path(), max_length=64)
    slow = LocalCrossEncoder(default_reranker_path(), max_length=64, backend="torch")
    assert fast.backend == "onnx" and "backend='onnx'" in repr(fast)
    assert np.abs(np.array(fast.score(PAIRS)) - np.array(slow.score(PAIRS))).max() < 1e-4
    assert fast.score([]) == []
    assert [fast.score([p])[0] for p in PAIRS] == pytest.approx(fast.score(PAIRS), abs=1e-4)


def test_int8_runs_on_both_backends_and_tracks_fp32():
    fp32 = np.array(LocalCrossEncoder(default_reranker_path(), max_length=64).score(PAIRS))
    for backend in ("onnx", "torch"):
        q = LocalCrossEncoder(default_reranker_path(), max_length=64, quantize=True, backend=backend)
        assert q.backend == backend and "quantize=True" in repr(q)
        b = np.array(q.score(PAIRS))
        assert np.all(np.isfinite(b)) and np.abs(b - fp32).max() < np.ptp(fp32) / 3
        assert list(np.argsort(b)) == list(np.argsort(fp32))  # these three pairs are far apart


def test_the_int8_graph_is_derived_from_the_fp32_export_and_cached_under_its_own_key(tiny_bert, counted_build,
                                                                                     tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    build, builds = counted_build
    monkeypatch.setattr(runtime, "_SESSIONS", {})
    fp32 = runtime.onnx_session(tiny_bert, kind="hidden", build=build, threads=1, cache_dir=cache)
    int8 = runtime.onnx_session(tiny_bert, kind="hidden", build=build, threads=1, cache_dir=cache, int8=True)
    assert builds == [1]  # the int8 graph is quantised from the cached fp32 file, not exported again
    assert int8 is not fp32
    assert runtime.onnx_session(tiny_bert, kind="hidden", build=build, threads=1, cache_dir=cache, int8=True) is int8
    assert sorted(p.name.split("-")[1:-1] for p in cache.iterdir()) == [["hidden"], ["hidden", "int8"]]
    ops = {n.op_type for n in __import__("onnx").load(str(runtime._file(int8))).graph.node}
    assert "DynamicQuantizeLinear" in ops or "MatMulInteger" in ops
    enc = {"input_ids": [[101, 5, 7, 102]], "attention_mask": [[1, 1, 1, 1]]}
    a, b = runtime.run_session(fp32, enc), runtime.run_session(int8, enc)
    assert a.shape == b.shape and np.isfinite(b).all()


def test_the_per_item_graph_gives_each_batch_item_its_lone_vector(tiny_bert, counted_build, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    build, builds = counted_build
    monkeypatch.setattr(runtime, "_SESSIONS", {})
    int8 = runtime.onnx_session(tiny_bert, kind="hidden", build=build, threads=1, cache_dir=cache, int8=True)
    items = runtime.onnx_session(tiny_bert, kind="hidden", build=build, threads=1, cache_dir=cache, int8=True,
                                 per_item=True)
    assert builds == [1] and items is not int8  # derived from the cached int8 file
    assert sorted(p.name.split("-")[1:-1] for p in cache.iterdir()) == [["hidden"], ["hidden", "int8"],
                                                                       ["hidden", "int8", "items"]]
    ops = {n.op_type for n in __import__("onnx").load(str(runtime._file(items))).graph.node}
    assert "DynamicQuantizeLinear" not in ops and {"QuantizeLinear", "MatMulInteger"} <= ops
    rows = np.random.default_rng(0).integers(1, 200, size=(6, 9))
    rows[3] = 199  # items whose activations span other ranges than their neighbours'
    batch = runtime.run_session(items, {"input_ids": rows, "attention_mask": np.ones_like(rows)})
    for row, got in zip(rows, batch, strict=True):
        alone = runtime.run_session(int8, {"input_ids": row[None], "attention_mask": np.ones_like(row[None])})[0]
        assert np.array_equal(got, alone)
    per_call = runtime.run_session(int8, {"input_ids": rows, "attention_mask": np.ones_like(rows)})
    assert not np.array_equal(per_call, batch)  # the per-call graph's batch items share one scale
    with pytest.raises(InvalidInputError, match="per_item=True .* needs int8=True"):
        runtime.onnx_session(tiny_bert, kind="hidden", build=build, threads=1, cache_dir=cache, per_item=True)


def test_backend_names_and_a_missing_runtime(monkeypatch):
    with pytest.raises(InvalidInputError, match="backend='gpu' is unknown"):
        runtime.resolve_backend("gpu")
    with pytest.raises(InvalidInputError, match="backend='gpu' is unknown"):
        LocalSentenceEmbeddings(resolve_model_path("minilm"), backend="gpu")
    monkeypatch.setattr(runtime, "onnx_available", lambda: False)
    assert runtime.resolve_backend("auto") == "torch"
    with pytest.raises(InvalidInputError, match="pip install onnxruntime onnx"):
        runtime.resolve_backend("onnx")
    assert LocalSentenceEmbeddings(resolve_model_path("minilm")).backend == "torch"


@pytest.fixture
def tiny_bert(tmp_path):
    """A 2-layer BERT with random weights (exports in a fraction of a second)."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    path = tmp_path / "tiny"
    BertModel(BertConfig(vocab_size=200, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=32)).eval().save_pretrained(path)
    return path


def _hidden(path):
    from transformers import BertModel

    model = BertModel.from_pretrained(str(path)).eval()

    class Hidden(__import__("torch").nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    return Hidden()


@pytest.fixture
def counted_build(tiny_bert):
    """A ``build`` callable for ``onnx_session`` over the tiny BERT, and the list it appends to per call."""
    builds: list[int] = []

    def build():
        builds.append(1)
        return _hidden(tiny_bert)

    return build, builds


def test_the_export_is_cached_by_key_and_a_changed_checkpoint_exports_again(tiny_bert, counted_build, tmp_path,
                                                                            monkeypatch):
    import torch

    cache = tmp_path / "cache"
    build, builds = counted_build
    monkeypatch.setattr(runtime, "_SESSIONS", {})
    s = runtime.onnx_session(tiny_bert, kind="hidden", build=build, threads=1, cache_dir=cache)
    assert runtime.onnx_session(tiny_bert, kind="hidden", build=build, threads=1, cache_dir=cache) is s
    enc = {"input_ids": [[101, 5, 7, 102, 0]], "attention_mask": [[1, 1, 1, 1, 0]], "token_type_ids": [[0] * 5]}
    out = runtime.run_session(s, enc)
    with torch.no_grad():
        ref = _hidden(tiny_bert)(*(torch.tensor(enc[k]) for k in runtime.INPUT_NAMES)).numpy()
    assert out.shape == (1, 5, 16) and np.abs(out - ref).max() < 1e-5
    monkeypatch.setattr(runtime, "_SESSIONS", {})  # a new process: the file is reused, nothing is built
    runtime.onnx_session(tiny_bert, kind="hidden", build=build, threads=1, cache_dir=cache)
    assert builds == [1]
    weights = next(tiny_bert.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes())  # a retrained checkpoint: new mtime, new key
    runtime.onnx_session(tiny_bert, kind="hidden", build=build, threads=1, cache_dir=cache)
    assert builds == [1, 1] and len(list(cache.iterdir())) == 2


def test_a_damaged_cached_graph_is_exported_again(tiny_bert, tmp_path, monkeypatch, caplog):
    cache = tmp_path / "cache"
    monkeypatch.setattr(runtime, "_SESSIONS", {})
    runtime.onnx_session(tiny_bert, kind="hidden", build=lambda: _hidden(tiny_bert), threads=1, cache_dir=cache)
    (target,) = cache.glob("*/model.onnx")
    target.write_bytes(b"not an onnx graph")
    monkeypatch.setattr(runtime, "_SESSIONS", {})
    s = runtime.onnx_session(tiny_bert, kind="hidden", build=lambda: _hidden(tiny_bert), threads=1, cache_dir=cache)
    assert "exporting it again" in caplog.text
    assert runtime.run_session(s, {"input_ids": [[101, 102]], "attention_mask": [[1, 1]]}).shape == (1, 2, 16)


def test_the_config_chooses_the_backend_of_every_model(monkeypatch):
    from langmem_cog.config import CogMemConfig
    from langmem_cog.memory import CogMemory
    from langmem_cog.retriever import CogMemRetriever

    assert CogMemConfig().inference_backend == "auto"
    cfg = CogMemConfig.from_env("ephemeral", environ={"LANGMEM_COG_INFERENCE_BACKEND": "torch"})
    assert cfg.inference_backend == "torch"
    memory = CogMemory(cfg)
    retriever = CogMemRetriever(memory=memory, namespace="runtime-test")
    assert memory.store.embeddings.backend == "torch"
    assert retriever.compressor.cross_encoder.backend == "torch"
    assert retriever.compressor.cross_encoder.quantize is False  # rerank_precision auto: fp32 on torch
    auto = CogMemRetriever(memory=CogMemory(CogMemConfig.preset("ephemeral")), namespace="runtime-test")
    assert auto.store.embeddings.backend == "onnx" and auto.compressor.cross_encoder.backend == "onnx"
    assert auto.compressor.cross_encoder.quantize is True  # and int8 on ONNX Runtime


def test_the_config_chooses_the_rerank_precision():
    from langmem_cog.config import CogMemConfig
    from langmem_cog.errors import ConfigError
    from langmem_cog.memory import CogMemory
    from langmem_cog.rank.defaults import default_compressor
    from langmem_cog.retriever import CogMemRetriever

    assert CogMemConfig().rerank_precision == "auto"
    cfg = CogMemConfig.from_env("ephemeral", environ={"LANGMEM_COG_RERANK_PRECISION": "fp32"})
    assert cfg.rerank_precision == "fp32"
    ce = CogMemRetriever(memory=CogMemory(cfg), namespace="runtime-test").compressor.cross_encoder
    assert ce.quantize is False and ce.backend == "onnx"
    # auto: int8 where the cross-encoder runs on ONNX Runtime, fp32 on torch
    assert default_compressor(backend="onnx").cross_encoder.quantize is True
    assert default_compressor(backend="torch").cross_encoder.quantize is False
    with pytest.raises(ConfigError, match="rerank_precision"):
        CogMemConfig.from_env("ephemeral", environ={"LANGMEM_COG_RERANK_PRECISION": "int4"})
    with pytest.raises(InvalidInputError, match="precision='bf16' is unknown"):
        default_compressor(precision="bf16")


def test_an_unwritable_cache_exports_for_the_process_instead(tiny_bert, tmp_path, monkeypatch, caplog):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")  # the cache dir lies under a file: mkdir fails
    monkeypatch.setattr(runtime, "_SESSIONS", {})
    s = runtime.onnx_session(tiny_bert, kind="hidden", build=lambda: _hidden(tiny_bert), threads=1,
                             cache_dir=blocked / "cache")
    assert "exporting to" in caplog.text
    assert runtime.run_session(s, {"input_ids": [[101, 102]], "attention_mask": [[1, 1]]}).shape == (1, 2, 16)


def test_the_config_chooses_the_embed_precision_and_int8_vectors_track_fp32():
    from langmem_cog.config import CogMemConfig
    from langmem_cog.errors import ConfigError
    from langmem_cog.memory import CogMemory

    assert CogMemConfig().embed_precision == "auto"
    assert CogMemory(CogMemConfig.preset("ephemeral")).store.embeddings.precision == "int8"  # auto, on ONNX Runtime
    cfg = CogMemConfig.from_env("ephemeral", environ={"LANGMEM_COG_EMBED_PRECISION": "int8"})
    assert cfg.embed_precision == "int8"
    emb = CogMemory(cfg).store.embeddings
    assert emb.precision == "int8" and emb.backend == "onnx"
    fp32_cfg = CogMemConfig.from_env("ephemeral", environ={"LANGMEM_COG_EMBED_PRECISION": "fp32"})
    fp32 = CogMemory(fp32_cfg).store.embeddings
    assert fp32.precision == "fp32" and fp32.backend == "onnx"
    a, b = emb.embed_array(TEXTS), fp32.embed_array(TEXTS)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    cos = (a * b).sum(1)
    assert cos.min() > 0.9 and not np.allclose(a, b, atol=1e-4)  # int8 arithmetic, close to fp32's
    assert a[0] @ a[1] > a[0] @ a[4]  # the question still prefers its answer to the other turn
    # Each int8 vector is a function of its text alone: not of the batch, its order or its padding.
    assert np.array_equal(emb.embed_array(TEXTS[::-1])[::-1], a)
    assert all(np.array_equal(np.asarray(emb.embed_query(t), dtype=np.float32), row) for t, row in zip(TEXTS, a, strict=True))
    with pytest.raises(ConfigError, match="embed_precision"):
        CogMemConfig.from_env("ephemeral", environ={"LANGMEM_COG_EMBED_PRECISION": "int4"})
    with pytest.raises(InvalidInputError, match="precision='bf16' is invalid"):
        LocalSentenceEmbeddings(resolve_model_path("minilm"), precision="bf16")
    with pytest.raises(ConfigError, match="ONNX Runtime only"):
        LocalSentenceEmbeddings(resolve_model_path("minilm"), backend="torch", precision="int8")
    torch_auto = LocalSentenceEmbeddings(resolve_model_path("minilm"), backend="torch")  # auto: fp32 off ONNX Runtime
    assert torch_auto.precision == "fp32" and np.abs(torch_auto.embed_array(TEXTS) - b).max() < 1e-5


@pytest.fixture
def tiny_models(tmp_path):
    """A tiny sentence-transformers embedder and a models folder whose reranker is a tiny cross-encoder
    (2-layer BERTs with random weights over a 16-word vocabulary: each exports in a fraction of a second)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel, BertTokenizerFast

    try:
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:  # older sentence-transformers
        from sentence_transformers.models import Pooling, Transformer
    from sentence_transformers import SentenceTransformer

    from langmem_cog.rank.manifest import write_manifest

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "what", "is", "leo", "allergic", "to", "i", "am", "shellfish",
             "the", "a"]
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt"))
    config = {"vocab_size": len(words), "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
              "intermediate_size": 32, "max_position_embeddings": 64}
    torch.manual_seed(0)
    bert, reranker = tmp_path / "bert", tmp_path / "models" / "reranker"
    BertModel(BertConfig(**config)).eval().save_pretrained(bert)
    BertForSequenceClassification(BertConfig(**config, num_labels=1)).eval().save_pretrained(reranker)
    for path in (bert, reranker):
        tokenizer.save_pretrained(path)
    (tmp_path / "models" / "cascade.json").write_text('{"max_length": 32}', encoding="utf-8")
    write_manifest(tmp_path / "models")  # a models folder lists its files
    embedder = tmp_path / "embedder"
    SentenceTransformer(modules=[Transformer(str(bert)), Pooling(16, pooling_mode="mean")]).save(str(embedder))
    return embedder, tmp_path / "models"


def test_a_configs_cache_dir_is_where_every_exported_graph_lands(tiny_models, tmp_path, monkeypatch):
    """The embedder and the cross-encoder a config builds export under ``<cache_dir>/onnx``; nothing goes to
    the default cache directory."""
    from langmem_cog.config import CogMemConfig
    from langmem_cog.records import make_turn
    from langmem_cog.retriever import CogMemRetriever
    from langmem_cog.store import TurnStore

    embedder, models = tiny_models
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "default-cache"))
    monkeypatch.setattr(runtime, "_SESSIONS", {})
    cfg = CogMemConfig.preset("ephemeral", embedder=str(embedder), models_dir=models, cache_dir=tmp_path / "mine",
                              context_vectors=False)
    store = TurnStore(cfg)
    store.add_turns([make_turn(id=f"t{i}", namespace="cache-test", speaker="Leo", text=text, position=i,
                               session_id="1", timestamp="2024-05-01T12:00:00Z")
                     for i, text in enumerate(["i am allergic to shellfish", "what is the a"])])
    retriever = CogMemRetriever(store=store, namespace="cache-test", mode="cascade")
    docs = retriever.invoke("what is leo allergic to", k=2)
    assert sorted(d.metadata["turn_id"] for d in docs) == ["t0", "t1"]
    exported = (tmp_path / "mine" / "onnx").glob("*/model.onnx")
    kinds = {p.parent.name.split("-", 1)[1].rsplit("-", 1)[0] for p in exported}
    assert {"hidden", "pair_logit"} <= kinds, kinds  # the embedder's and the cross-encoder's graphs (and int8 ones)
    assert retriever.compressor.cross_encoder.cache_dir == tmp_path / "mine"
    assert not (tmp_path / "default-cache").exists()


def test_quantising_reads_a_private_copy_so_processes_sharing_a_cache_never_see_each_others_files(
        tiny_bert, counted_build, tmp_path, monkeypatch):
    import onnx

    cache = tmp_path / "cache"
    build, _ = counted_build
    monkeypatch.setattr(runtime, "_SESSIONS", {})
    fp32 = runtime._file(runtime.onnx_session(tiny_bert, kind="hidden", build=build, threads=1, cache_dir=cache))
    written: list[str] = []
    real = onnx.shape_inference.infer_shapes_path

    def spy(source, output="", *args, **kwargs):
        written.append(output)
        return real(source, output, *args, **kwargs)

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes_path", spy)
    target = cache / "int8-copy" / "model.onnx"
    runtime.quantize_int8(fp32, target)
    # ORT writes its shape-inferred copy beside the file it reads: that is never the shared cached file's folder
    assert written and all(__import__("pathlib").Path(w).parent != fp32.parent for w in written)
    assert sorted(p.name for p in fp32.parent.iterdir()) == ["export.lock", "model.onnx"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["model.onnx"]  # the private folder is gone
    assert onnx.load(str(target)).graph.node


def test_processes_exporting_one_key_together_all_get_a_working_graph(tiny_bert, tmp_path):
    import subprocess
    import sys
    import textwrap

    cache = tmp_path / "cache"
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(__import__("pathlib").Path(__file__).parent)!r})
        import time
        import onnx
        from langmem_cog import runtime
        from test_runtime import _hidden
        load = onnx.load
        onnx.load = lambda *a, **k: (time.sleep(0.5), load(*a, **k))[1]  # a slow disk: the processes' steps overlap
        s = runtime.onnx_session({str(tiny_bert)!r}, kind="hidden", build=lambda: _hidden({str(tiny_bert)!r}),
                                 threads=1, cache_dir={str(cache)!r}, int8=True)
        print(runtime.run_session(s, {{"input_ids": [[101, 102]], "attention_mask": [[1, 1]]}}).shape)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err[-2000:] for _, err in results]
    assert all(out.strip() == "(1, 2, 16)" for out, _ in results)
    assert not any("cannot write the ONNX cache" in err or "exporting it again" in err for _, err in results)
    entries = sorted(p.name.split("-")[1:-1] for p in cache.iterdir())
    assert entries == [["hidden"], ["hidden", "int8"]]  # one folder per key, each with its graph and no stray files
    assert all(sorted(q.name for q in e.iterdir()) == ["export.lock", "model.onnx"] for e in cache.iterdir())


@pytest.mark.parametrize("model", ["minilm", "reranker"])
def test_the_file_tokenizer_gives_the_tokens_and_padding_of_transformers(model):
    from transformers import AutoTokenizer

    path = resolve_model_path("minilm") if model == "minilm" else default_reranker_path()
    theirs = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    ours = runtime.FileTokenizer(path)
    texts = [*TEXTS, *(q for q, _ in PAIRS), *(m for _, m in PAIRS), "Ça va? naïve café — “quotes”", "İstanbul ﬁ",
             "a\tb\nc \u200b d", "x" * 2000, " "]
    for length in (8, 64, 256):
        a = theirs(texts, truncation=True, max_length=length)
        b = ours(texts, truncation=True, max_length=length)
        assert {k: a[k] for k in a} == {k: b[k] for k in a}
        a = theirs(texts, texts[::-1], truncation="longest_first", max_length=length)
        b = ours(texts, texts[::-1], truncation="longest_first", max_length=length)
        assert {k: a[k] for k in a} == {k: b[k] for k in a}
        padded_a, padded_b = theirs.pad(dict(a), return_tensors="np"), ours.pad(b)
        assert all(np.array_equal(padded_a[k], padded_b[k]) for k in padded_a)
    assert ours(["a b c d e f"], truncation=False)["input_ids"] == theirs(["a b c d e f"])["input_ids"]
    with pytest.raises(InvalidInputError, match="pair texts"):
        ours(["a", "b"], ["c"])
    with pytest.raises(InvalidInputError, match="only_second"):
        ours(["a"], ["b"], truncation="only_second")


def test_a_damaged_tokenizer_file_is_a_named_error_naming_it(tmp_path):
    from langmem_cog.errors import DamagedModelError, ModelNotFoundError

    with pytest.raises(ModelNotFoundError, match="no tokenizer.json"):
        runtime.FileTokenizer(tmp_path)
    text = (default_reranker_path() / "tokenizer.json").read_text(encoding="utf-8")
    (tmp_path / "tokenizer.json").write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(DamagedModelError, match="tokenizer.json is not a readable tokenizer"):
        runtime.FileTokenizer(tmp_path)


def test_a_process_whose_graphs_are_exported_embeds_and_reranks_without_importing_torch():
    """With the ONNX graphs in the cache, the embedder and the cross-encoder read their files and run:
    importing torch, transformers, sentence-transformers and onnx (seconds) is left to an export."""
    import subprocess
    import sys
    import textwrap

    warm = textwrap.dedent("""
        from langmem_cog import CogMemConfig
        from langmem_cog.embeddings import config_embedder
        from langmem_cog.rank.cross_encoder import LocalCrossEncoder, default_reranker_path
        config = CogMemConfig.preset("ephemeral")
        reranker = LocalCrossEncoder(default_reranker_path(), max_length=64, quantize=True)
        emb = config_embedder(config)
        emb.embed_documents(["one text", "two texts of one length", "two texts of one width"])
        vector = emb.embed_query("Does Dana like running now?")
        print(len(vector), emb.dimension, len(reranker.score([("q", "m"), ("a", "b c")])))
        import sys
        print(sorted(m for m in ("torch", "transformers", "sentence_transformers", "onnx") if m in sys.modules))
    """)
    outputs = []
    for _ in range(2):  # the first run exports what the cache lacks; the second only reads
        run = subprocess.run([sys.executable, "-c", warm], capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        outputs.append(run.stdout.strip().splitlines())
    assert outputs[1] == ["384 384 2", "[]"], outputs
