"""ONNX Runtime for the local transformer models: exported by our own code, cached on disk, never downloaded.

A one-query forward pass of a small BERT on a CPU is dominated by eager PyTorch's per-operator
overhead, not by arithmetic: MiniLM-L6 embeds one short query in about 19 ms through
``SentenceTransformer.encode`` and in about 8 ms through ONNX Runtime (2 cores); the 4-layer
cross-encoder scores ten 64-token pairs in 120 ms against 98 ms. The fp32 graph computes what torch
computes (vectors agree to ~1e-7, logits to ~1e-5), so rankings do not change.

:func:`onnx_session` exports a checkpoint's forward pass with ``torch.onnx`` the first time it is
needed (from the weights on disk, in a few seconds), keeps the ``.onnx`` file under
``<cache_dir>/<key>/model.onnx`` and opens an ``onnxruntime.InferenceSession`` on it. The key
hashes the checkpoint's file names, sizes and modification times, the export kind and the torch /
onnxruntime versions: a retrained checkpoint exports again. The graphs live under the cache
directory's ``onnx/`` folder (:func:`onnx_cache_dir`): ``CogMemConfig.cache_dir`` for everything a config
builds, else :func:`~langmem_cog.config.default_cache_dir` (``$XDG_CACHE_HOME/langmem-cog`` or
``~/.cache/langmem-cog``).

Backends (:data:`BACKENDS`): ``onnx``, ``torch``, or ``auto`` (``onnx`` when ``onnxruntime`` and
``onnx`` import, else ``torch``).

Once a graph is exported, running it needs neither torch nor transformers: :class:`FileTokenizer` runs a
checkpoint's ``tokenizer.json`` with the ``tokenizers`` library, and the sessions' threads and cache keys
are found without importing torch (:func:`default_threads`). Importing torch, transformers and
sentence-transformers costs a process about 2-3 s on 2 cores before its first query.

Example:
    >>> resolve_backend("torch")
    'torch'
    >>> resolve_backend("tensorflow")
    Traceback (most recent call last):
    ...
    langmem_cog.errors.InvalidInputError: backend='tensorflow' is unknown: use one of ('auto', 'onnx', 'torch')
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from langmem_cog.errors import DamagedModelError, InvalidInputError, ModelNotFoundError
from langmem_cog.loading import load_once, loading
from langmem_cog.locking import exclusive_file

__all__ = ["BACKENDS", "INPUT_NAMES", "FileTokenizer", "default_threads", "onnx_available", "onnx_cache_dir",
           "onnx_session", "quantize_int8", "quantize_per_item", "resolve_backend", "run_session"]

logger = logging.getLogger(__name__)

#: The inference backends of the local models.
BACKENDS = ("auto", "onnx", "torch")
#: The exported graphs' inputs (BERT-style token ids, attention mask, segment ids), all int64.
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
#: Bumped when the export itself changes, so that cached files of an older export are not reused.
_EXPORT_VERSION = "1"

_SESSIONS: dict[tuple[str, int], Any] = {}
_FILES: dict[int, Path] = {}


def onnx_available() -> bool:
    """Whether ONNX Runtime imports and the ``onnx`` package (which ``torch.onnx`` needs to export, and the
    int8 quantisation to rewrite a graph) is installed (tried once per process, under
    :func:`~langmem_cog.loading.loading`). ``onnx`` is only looked up, not imported: a process whose graphs
    are exported already never needs it, and importing it took 0.4-0.9 s of every process start."""
    return load_once("onnx-available", _onnx_usable)


def _onnx_usable() -> bool:
    if importlib.util.find_spec("onnx") is None:
        return False
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_backend(backend: str) -> str:
    """``onnx`` or ``torch`` for a backend name (``auto``: ``onnx`` when available).

    Raises:
        InvalidInputError: If ``backend`` is not one of :data:`BACKENDS`, or is ``onnx`` and ONNX
            Runtime or ``onnx`` is not installed.
    """
    if backend not in BACKENDS:
        raise InvalidInputError(f"backend={backend!r} is unknown: use one of {BACKENDS}")
    if backend == "torch":
        return "torch"
    if onnx_available():
        return "onnx"
    if backend == "onnx":
        raise InvalidInputError("backend='onnx' needs onnxruntime and onnx: pip install onnxruntime onnx, or use 'torch'")
    return "torch"


def onnx_cache_dir(cache_dir: str | Path | None = None) -> Path:
    """Where exported graphs are kept: ``<cache_dir>/onnx``.

    Args:
        cache_dir: The cache directory (``CogMemConfig.cache_dir``); ``None``:
            :func:`~langmem_cog.config.default_cache_dir`, computed when called, never at import.

    Example:
        >>> onnx_cache_dir("/tmp/lmc-cache").as_posix()
        '/tmp/lmc-cache/onnx'
    """
    from langmem_cog.config import default_cache_dir

    return (Path(cache_dir) if cache_dir else default_cache_dir()).expanduser() / "onnx"


def default_threads() -> int:
    """Intra-op threads when none are asked for: torch's setting when torch is imported, else
    ``OMP_NUM_THREADS`` (what torch starts with) when set, else the CPUs this process may run on."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return int(torch.get_num_threads())
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) > 0:
        return int(omp)
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity is not None else (os.cpu_count() or 1))


@functools.cache
def _torch_version() -> str:
    """torch's version, from its package metadata when torch is not imported (importing it costs ~1.5 s); the
    metadata's first read costs ~50 ms, so it is read once."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return str(torch.__version__)
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return "none"


def _key(path: Path, kind: str) -> str:
    import onnxruntime

    h = hashlib.sha256(f"{kind}|{_EXPORT_VERSION}|{_torch_version()}|{onnxruntime.__version__}".encode())
    files = sorted(p for p in path.rglob("*") if p.is_file())
    if not files:
        raise ModelNotFoundError(f"no model files in {path}: pass a checkpoint directory")
    for p in files:
        st = p.stat()
        h.update(f"|{p.relative_to(path)}|{st.st_size}|{st.st_mtime_ns}".encode())
    return f"{path.name}-{kind}-{h.hexdigest()[:16]}"


@contextmanager
def _replacing(target: Path) -> Iterator[Path]:
    """A temporary path beside ``target`` to write to; it replaces ``target`` when the block ends
    without error, so a reader never opens a half-written file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    yield tmp
    os.replace(tmp, target)


def _export(module: Any, target: Path) -> None:
    """Write ``module``'s forward pass (token ids in, one float array out) to ``target`` atomically."""
    import warnings

    import torch

    sample = {
        "input_ids": torch.tensor([[1, 2, 3, 4], [1, 2, 3, 0]]),  # small ids: any vocabulary holds them
        "attention_mask": torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]]),
        "token_type_ids": torch.zeros((2, 4), dtype=torch.long),
    }
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUT_NAMES}
    with _replacing(target) as tmp, warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer notices about Python conditions on shapes we always feed alike
        torch.onnx.export(module.eval(), tuple(sample[n] for n in INPUT_NAMES), str(tmp), input_names=list(INPUT_NAMES),
                          output_names=["output"], dynamic_axes={**axes, "output": {0: "batch"}}, opset_version=17,
                          dynamo=False)


def onnx_session(path: str | Path, *, kind: str, build: Callable[[], Any], threads: int | None = None,
                 cache_dir: str | Path | None = None, int8: bool = False, per_item: bool = False) -> Any:
    """An ONNX Runtime session on a checkpoint's forward pass, exported on first use.

    Args:
        path: The checkpoint directory (its files key the cache).
        kind: What is exported (``hidden``: last hidden states; ``pair_logit``: one logit per pair).
        build: Returns the torch module to export (called only when the cache has no file for the key).
            Its ``forward`` takes ``input_ids``, ``attention_mask``, ``token_type_ids``.
        threads: ONNX Runtime intra-op threads (``None``: torch's current setting).
        cache_dir: The folder exported files are kept in, ``<key>/model.onnx`` each (default:
            :func:`onnx_cache_dir`, the default cache directory's ``onnx/``).
        int8: Run the graph with its weight matrices in int8 (:func:`quantize_int8`, derived from
            the fp32 export and cached beside it under its own key).
        per_item: With ``int8``, quantise activations per batch item (:func:`quantize_per_item`,
            derived from the int8 graph and cached under its own key): a batch of texts of one
            length gives each the vector it gets alone.

    Returns:
        An ``onnxruntime.InferenceSession`` (shared by every caller with the same file and threads).

    Raises:
        ModelNotFoundError: If ``path`` holds no files.
        InvalidInputError: If ``per_item`` is set without ``int8``.
    """
    if per_item and not int8:
        raise InvalidInputError("per_item=True quantises activations per batch item: it needs int8=True")
    with loading():  # onnxruntime and torch import under the load lock too
        path = Path(path).resolve()
        key = _key(path, f"{kind}-int8-items" if per_item else f"{kind}-int8" if int8 else kind)
        target = (Path(cache_dir).expanduser() if cache_dir else onnx_cache_dir()) / key / "model.onnx"
        if threads is None:
            threads = default_threads()
        n_threads: int = threads

        def build_file(t: Path) -> None:
            if per_item:  # derived from the int8 file
                quantize_per_item(_file(onnx_session(path, kind=kind, build=build, threads=threads,
                                                     cache_dir=cache_dir, int8=True)), t)
            elif int8:  # quantised from the fp32 export, which is needed (and opened) only here
                quantize_int8(_file(onnx_session(path, kind=kind, build=build, threads=threads, cache_dir=cache_dir)), t)
            else:
                _export(build(), t)

        def open_session() -> Any:
            import onnxruntime as ort

            file = target
            if not file.exists():
                try:
                    # another process exporting the same key: wait for it, then use its file
                    with exclusive_file(target.parent / "export.lock"):
                        if not file.exists():
                            logger.info("exporting %s (%s) to ONNX at %s", path, kind, file)
                            build_file(file)
                except OSError as exc:  # a read-only home: export for this process only
                    file = Path(tempfile.mkdtemp(prefix="lmc-onnx-")) / key / "model.onnx"
                    logger.warning("cannot write the ONNX cache (%s); exporting to %s for this process", exc, file)
                    build_file(file)
            options = ort.SessionOptions()
            options.intra_op_num_threads = n_threads
            options.inter_op_num_threads = 1
            # Idle threads sleep instead of spinning: a spinning pool would slow the torch and Chroma work beside it.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            try:
                session = ort.InferenceSession(str(file), options, providers=["CPUExecutionProvider"])
            except Exception as exc:  # a damaged or foreign file under the key: export again once
                logger.warning("could not open the exported graph %s (%s); exporting it again", file, exc)
                build_file(file)
                session = ort.InferenceSession(str(file), options, providers=["CPUExecutionProvider"])
            _FILES[id(session)] = file
            return session

        # Keyed by the cache path even if the export had to go elsewhere; threads asking together share one session.
        return load_once((str(target), threads), open_session, store=_SESSIONS)


def _file(session: Any) -> Path:
    """The ``.onnx`` file a session of :func:`onnx_session` runs."""
    return _FILES[id(session)]


def quantize_int8(source: Path, target: Path) -> None:
    """Write ``source``'s graph with int8 weight matrices to ``target`` atomically.

    ONNX Runtime's dynamic quantisation of every ``MatMul`` with a constant weight: weights per
    output channel in int8, activations quantised per call. ``reduce_range`` keeps the weights to 7 bits,
    which CPUs without VNNI (AVX2's 16-bit accumulating ``vpmaddubsw``) need to avoid saturation. On
    the shipped 4-layer cross-encoder (2 cores): ten 64-token pairs in ~73 ms instead of ~105 ms;
    logits move by up to ~0.9 (their spread is ~1.3), so rankings move a little (docs/BENCHMARKS.md).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    hint = _DropHint("pre-processing before quantization")  # ORT's advice for static quantisation, on the root logger
    logging.getLogger().addFilter(hint)
    target.parent.mkdir(parents=True, exist_ok=True)
    # ORT writes a shape-inferred copy beside its input (``model-inferred.onnx``) and deletes it after reading:
    # two processes quantising one cached file would read each other's half-written copy, or find it gone. So
    # the input is linked (or copied) into a folder of this call's own first.
    private = Path(tempfile.mkdtemp(prefix=".quantize-", dir=target.parent))
    try:
        own = private / "model.onnx"
        try:
            os.link(source, own)
        except OSError:  # another file system, or no hard links: a copy
            shutil.copyfile(source, own)
        with _replacing(target) as tmp:
            quantize_dynamic(str(own), str(tmp), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"],
                             per_channel=True, reduce_range=True)
    finally:
        logging.getLogger().removeFilter(hint)
        shutil.rmtree(private, onerror=lambda _f, where, exc: logger.warning(
            "could not remove the temporary file %s: %s", where, exc[1]))


def quantize_per_item(source: Path, target: Path) -> None:
    """Write ``source``'s int8 graph (:func:`quantize_int8`) to ``target`` with activations quantised
    per batch item instead of per call, atomically.

    ``DynamicQuantizeLinear`` takes one scale and zero point for the whole tensor, so in a batch a
    text's vector depends on the texts beside it. Here each becomes its per-item equivalent: the
    minimum and maximum of each item (``ReduceMin``/``ReduceMax`` over all but the batch axis), the
    scale and zero point computed from them as ``DynamicQuantizeLinear`` computes them, and
    ``QuantizeLinear`` along the batch axis (the same rounding kernel). ``MatMulInteger`` accepts only
    one zero point for its input, so it runs without one and each item's zero point times the weight
    matrix's column sums is taken off in int32 afterwards: exact integer arithmetic. A batch of texts
    of one length (no padding) then gives every text the vector the per-call graph gives it alone, bit
    for bit (``tests/test_embeddings.py``). Per call this graph runs about 20 operators more per
    quantised layer, so it pays only on batches of short texts (:data:`~langmem_cog.embeddings.INT8_BATCH_MAX_TOKENS`).

    Raises:
        ValueError: If a quantised input is not a 3-D ``(batch, tokens, features)`` tensor.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    inferred = onnx.shape_inference.infer_shapes(model).graph  # read for ranks only: scales change shape here
    ranks = {v.name: len(v.type.tensor_type.shape.dim) for v in [*inferred.value_info, *inferred.input]}
    weights = {t.name: t for t in graph.initializer}
    const: dict[str, np.ndarray] = {"zero": np.array(0.0, np.float32), "one": np.array(1.0, np.float32),
             "qmax": np.array(255.0, np.float32), "flat": np.array([-1], np.int64)}
    added = [numpy_helper.from_array(v, f"per_item/{k}") for k, v in const.items()]
    zero, one, qmax, flat = (f"per_item/{k}" for k in const)
    item_zero_point: dict[str, str] = {}  # a quantised tensor's zero point -> its per-item int32 copy
    nodes: list[Any] = []

    def node(op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], **attrs))
        return output

    for n in graph.node:
        if n.op_type == "DynamicQuantizeLinear":
            x, (q, scale, zp), p = n.input[0], n.output, f"{n.output[0]}/per_item"
            if ranks.get(x) != 3:
                raise ValueError(f"{x} is not a (batch, tokens, features) tensor: cannot quantise it per item")
            lo = node("Min", [node("ReduceMin", [x], f"{p}/min", axes=[1, 2], keepdims=1), zero], f"{p}/lo")
            hi = node("Max", [node("ReduceMax", [x], f"{p}/max", axes=[1, 2], keepdims=1), zero], f"{p}/hi")
            # scale = (hi - lo) / 255, or 1 where hi == lo; zero point = round(clip(-lo / scale, 0, 255))
            step = node("Div", [node("Sub", [hi, lo], f"{p}/range"), qmax], f"{p}/step")
            node("Where", [node("Equal", [hi, lo], f"{p}/flat_range"), one, step], scale)
            neg = node("Sub", [zero, node("Div", [lo, scale], f"{p}/lo_steps")], f"{p}/neg_lo_steps")
            zp_float = node("Round", [node("Clip", [neg, zero, qmax], f"{p}/zp_clipped")], f"{p}/zp_float")
            node("Cast", [zp_float], zp, to=TensorProto.UINT8)
            node("QuantizeLinear", [x, node("Reshape", [scale, flat], f"{p}/scales"),
                                    node("Reshape", [zp, flat], f"{p}/zero_points")], q, axis=0)
            item_zero_point[zp] = node("Cast", [zp_float], f"{p}/zp_int", to=TensorProto.INT32)
        elif n.op_type == "MatMulInteger" and len(n.input) > 2 and n.input[2] in item_zero_point:
            a, w, a_zp, w_zp = n.input
            w_int = numpy_helper.to_array(weights[w]).astype(np.int32) - numpy_helper.to_array(weights[w_zp]).astype(np.int32)
            colsum = f"{w}/per_item_colsum"
            added.append(numpy_helper.from_array(w_int.sum(axis=0).astype(np.int32), colsum))
            out = n.output[0]
            raw = node("MatMulInteger", [a, w, "", w_zp], f"{out}/no_zero_point")
            node("Sub", [raw, node("Mul", [item_zero_point[a_zp], colsum], f"{out}/zero_point_term")], out)
        else:
            nodes.append(n)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(added)
    with _replacing(target) as tmp:
        onnx.save(model, str(tmp))


class _DropHint(logging.Filter):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


def run_session(session: Any, enc: Mapping[str, Any]) -> np.ndarray:
    """Run an exported graph on tokenizer output (lists or arrays; missing segment ids are zeros).

    Only the inputs the graph declares are fed (a model without segment ids exports without them).
    """
    ids = np.asarray(enc["input_ids"], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.asarray(enc["attention_mask"], dtype=np.int64)}
    feeds["token_type_ids"] = (np.asarray(enc["token_type_ids"], dtype=np.int64) if "token_type_ids" in enc
                               else np.zeros_like(ids))
    wanted = {i.name for i in session.get_inputs()}
    return np.asarray(session.run(None, {k: v for k, v in feeds.items() if k in wanted})[0])


class FileTokenizer:
    """A checkpoint's ``tokenizer.json`` run by the ``tokenizers`` library, for the calls the ONNX paths make.

    It gives the ids, segment ids and attention masks of transformers' fast tokenizer for the same files,
    without importing transformers (which imports torch). Calls: ``tok(texts)`` or ``tok(texts, pairs)``
    with ``truncation=True`` or ``"longest_first"`` and ``max_length``, no padding; then
    ``tok.pad(features, return_tensors="np")`` pads to the longest row on the right. Safe to share between
    threads.

    Args:
        path: The checkpoint directory (``tokenizer.json``; ``tokenizer_config.json`` names the padding
            token, ``[PAD]`` when it does not).

    Raises:
        ModelNotFoundError: If ``path`` has no ``tokenizer.json``.
        DamagedModelError: If it cannot be read as a tokenizer (truncated, say).

    Example:
        >>> from langmem_cog.embeddings import resolve_model_path
        >>> tok = FileTokenizer(resolve_model_path("minilm"))  # doctest: +SKIP
        >>> tok.pad(tok(["hi there", "hi"], truncation=True, max_length=8))["input_ids"].tolist()  # doctest: +SKIP
        [[101, 7632, 2045, 102], [101, 7632, 102, 0]]
    """

    def __init__(self, path: str | Path) -> None:
        from tokenizers import Tokenizer

        file = self._file = Path(path) / "tokenizer.json"
        if not file.is_file():
            raise ModelNotFoundError(f"no tokenizer.json in {path}: reinstall the model, or use its directory")
        try:
            self._base = Tokenizer.from_file(str(file))
        except Exception as exc:  # the tokenizers library raises a bare Exception for a file it cannot read
            raise DamagedModelError(f"{file} is not a readable tokenizer ({exc}): reinstall the model (for the "
                                    "shipped models, reinstall langmem-cog or run `make models`)") from exc
        config_file = Path(path) / "tokenizer_config.json"
        config = json.loads(config_file.read_text(encoding="utf-8")) if config_file.is_file() else {}
        pad = config.get("pad_token") or "[PAD]"
        pad = pad.get("content", "[PAD]") if isinstance(pad, dict) else str(pad)
        self.pad_token_id = int(self._base.token_to_id(pad) or 0)
        self.pad_token_type_id = int(config.get("pad_token_type_id") or 0)
        self._sized: dict[int | None, Any] = {}
        self._lock = threading.Lock()

    def _truncating(self, max_length: int | None) -> Any:
        """The tokenizer truncating to ``max_length`` tokens (longest first), one per length: the first length
        asked for gets the tokenizer read at init, each other one a copy read from the file (~20 ms)."""
        with self._lock:
            tok = self._sized.get(max_length)
            if tok is None:
                if self._sized:
                    from tokenizers import Tokenizer

                    tok = Tokenizer.from_file(str(self._file))
                else:
                    tok = self._base
                tok.no_padding()
                if max_length is None:
                    tok.no_truncation()
                else:
                    tok.enable_truncation(max_length, strategy="longest_first")
                self._sized[max_length] = tok
            return tok

    def __call__(self, text: list[str], text_pair: list[str] | None = None, *, truncation: bool | str = False,
                 max_length: int | None = None) -> dict[str, list[list[int]]]:
        """Token ids, segment ids and attention masks of ``text`` (or of its pairs with ``text_pair``), with
        the special tokens, unpadded.

        Raises:
            InvalidInputError: For a truncation other than ``True`` / ``"longest_first"`` / ``False``, or
                pairs of two lengths.
        """
        if truncation not in (True, False, "longest_first"):
            raise InvalidInputError(f"truncation={truncation!r} is not supported: use True or 'longest_first'")
        if text_pair is not None and len(text_pair) != len(text):
            raise InvalidInputError(f"{len(text)} texts and {len(text_pair)} pair texts: pass as many of each")
        tok = self._truncating(int(max_length) if truncation and max_length is not None else None)
        encodings = tok.encode_batch(list(text) if text_pair is None else list(zip(text, text_pair, strict=True)))
        return {"input_ids": [e.ids for e in encodings], "token_type_ids": [e.type_ids for e in encodings],
                "attention_mask": [e.attention_mask for e in encodings]}

    def pad(self, features: Mapping[str, list[list[int]]], return_tensors: str = "np") -> dict[str, np.ndarray]:
        """``features`` padded on the right to their longest row, as int64 arrays.

        Raises:
            InvalidInputError: For ``return_tensors`` other than ``"np"``.
        """
        if return_tensors != "np":
            raise InvalidInputError(f"return_tensors={return_tensors!r} is not supported: use 'np'")
        fill = {"input_ids": self.pad_token_id, "token_type_ids": self.pad_token_type_id, "attention_mask": 0}
        rows = features["input_ids"]
        width = max((len(r) for r in rows), default=0)
        out = {}
        for name, values in features.items():
            arr = np.full((len(rows), width), fill.get(name, 0), dtype=np.int64)
            for i, row in enumerate(values):
                arr[i, : len(row)] = row
            out[name] = arr
        return out
