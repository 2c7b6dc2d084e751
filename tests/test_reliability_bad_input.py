"""Bad input: property-based fuzzing of the public ingestion and search API.

Whatever is passed (empty, whitespace, 1 MB or control-character texts, None, wrong
types, invalid or naive timestamps, duplicate ids, hostile or unknown namespaces), the
call either succeeds or raises a :class:`~langmem_cog.errors.LangMemCogError` subclass
whose message says what to fix, and a rejected call leaves the store exactly as it was
(turns, BM25 index, graph). The long runs are behind the ``reliability`` marker.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from fakes import FakeEmbeddings, make_turns
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langmem_cog import CogMemConfig
from langmem_cog.errors import LangMemCogError
from langmem_cog.memory import CogMemory
from langmem_cog.records import Turn, make_turn
from langmem_cog.retriever import CogMemRetriever

#: Words a message that says what to fix contains (at least one).
FIX_WORDS = (
    "use", "pass", "give", "add", "check", "delete", "skip", "split", "strip", "build",
    "shorten", "decode", "must", "first", "should", "expected", "input should", "field required",
)

QUICK = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
LONG = settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))

T0 = datetime(2024, 1, 1, tzinfo=UTC)

garbage = st.one_of(
    st.none(), st.integers(), st.floats(allow_nan=True), st.booleans(), st.binary(max_size=20),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.just(object()),
)
texts = st.one_of(
    st.just(""), st.just(" \t\n "), st.just("x" * 1_000_000), st.just("a\x00b"), st.just("ok \ud800 lone"),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x1F), min_size=1, max_size=20),
    st.text(max_size=60), st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=60),
    st.text(alphabet=st.characters(categories=["Cs", "Cc", "Zs"]), min_size=1, max_size=10),
    garbage,
)
timestamps = st.one_of(
    st.datetimes(timezones=st.none()),  # naive
    st.datetimes(timezones=st.just(UTC)),
    st.datetimes(timezones=st.just(timezone(timedelta(hours=-7)))),
    st.just("2024-01-01"), st.just("not a date"), st.just("2024-13-45T99:00:00Z"), garbage,
)
ids = st.one_of(st.just("t0"), st.just(""), st.just(" "), st.just("a\nb"), st.just("x" * 300), st.text(max_size=12), garbage)
namespaces = st.one_of(
    st.just("__NS__"), st.just("unknown-ns"), st.just(""), st.just("a b"), st.just("' OR 1=1"), st.just("x" * 200),
    st.text(max_size=12), garbage,
)
speakers = st.one_of(st.just("Ann"), st.just(""), st.just("a\x01b"), st.just("y" * 300), st.text(max_size=12), garbage)


def _fields(draw_ns: Any, ns: str, **kw: Any) -> dict[str, Any]:
    out = {k: v for k, v in kw.items() if v is not _MISSING}
    if "namespace" in out and out["namespace"] == "__NS__":
        out["namespace"] = ns
    return out


_MISSING = object()
maybe = lambda s: st.one_of(st.just(_MISSING), s)  # noqa: E731 - a missing field is bad input too


def _snapshot(mem: CogMemory, ns: str) -> tuple:
    store = mem.store
    turns = tuple(store.get_turns(ns)) if store.has_namespace(ns) else ()
    lex = tuple(store._spaces.lexical_index(ns).ids) if store.has_namespace(ns) else ()
    G = mem.graph(ns)
    return turns, lex, tuple(sorted(G.graph.get("turns", {}))), G.number_of_nodes(), G.number_of_edges()


def _assert_good_error(exc: BaseException) -> None:
    assert isinstance(exc, LangMemCogError), f"{type(exc).__name__} escaped: {exc}"
    msg = str(exc).lower()
    assert len(msg) > 15 and any(w in msg for w in FIX_WORDS), f"unhelpful message: {exc}"


def _call(fn: Any, *args: Any, **kw: Any) -> Any:
    try:
        return fn(*args, **kw)
    except Exception as exc:  # checked: must be ours, with a useful message
        _assert_good_error(exc)
        return exc


@pytest.fixture(scope="module")
def mem() -> CogMemory:
    return CogMemory(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())


@pytest.fixture(scope="module")
def base_ns(mem: CogMemory) -> str:
    ns = f"fuzz-{uuid.uuid4().hex[:8]}"
    mem.add_turns(make_turns(ns, ["I adopted a puppy called Rex", "My sister paints sunsets", "I run marathons"]))
    return ns


def _fuzz_make_turn_and_add(mem: CogMemory, base_ns: str, data: st.DataObject) -> None:
    fields = _fields(
        None, base_ns,
        id=data.draw(maybe(ids)), namespace=data.draw(maybe(namespaces)), speaker=data.draw(maybe(speakers)),
        text=data.draw(maybe(texts)), timestamp=data.draw(maybe(timestamps)),
        position=data.draw(maybe(st.one_of(st.integers(-5, 5), garbage))),
        metadata=data.draw(maybe(st.one_of(st.dictionaries(st.text(max_size=5), st.one_of(st.text(max_size=5), garbage), max_size=3), garbage))),
        conversation_id=data.draw(maybe(ids)),
    )
    before = _snapshot(mem, base_ns)
    turn = _call(make_turn, **fields)
    if isinstance(turn, Turn):
        # Valid turns: adding is all or nothing (a duplicate id is rejected, the store unchanged).
        extra = data.draw(st.sampled_from(["single", "dup_in_call", "with_garbage"]))
        batch: Any = {"single": [turn], "dup_in_call": [turn, turn], "with_garbage": [turn, None]}[extra]
        got = _call(mem.add_turns, batch)
        if isinstance(got, BaseException):
            if turn.namespace == base_ns:
                assert _snapshot(mem, base_ns) == before
            else:
                assert not mem.store.has_namespace(turn.namespace) or turn.id in {
                    t.id for t in mem.store.get_turns(turn.namespace)
                }
        else:
            assert got == [turn.id]
            stored = mem.store.get_turns(turn.namespace, [turn.id])
            assert stored and stored[0].text == turn.text
            mem.delete_turns(turn.namespace, [turn.id])  # back to the base state
    assert _snapshot(mem, base_ns) == before


def _fuzz_store_calls(mem: CogMemory, base_ns: str, data: st.DataObject) -> None:
    before = _snapshot(mem, base_ns)
    store = mem.store
    call = data.draw(st.sampled_from(["add", "search", "delete", "get", "retriever", "forget_ids", "count"]))
    ns = data.draw(namespaces)
    ns = base_ns if ns == "__NS__" else ns
    if call == "add":
        _call(mem.add_turns, data.draw(st.one_of(garbage, st.lists(garbage, max_size=3), st.text(max_size=5))))
    elif call == "search":
        _call(
            store.search, ns, data.draw(texts), k=data.draw(st.one_of(st.integers(-3, 30), garbage)),
            mode=data.draw(st.one_of(st.sampled_from(["hybrid", "dense", "lexical", "bogus"]), garbage)),
        )
    elif call == "delete":
        bad_ids = data.draw(st.one_of(garbage, st.text(max_size=5), st.lists(garbage, min_size=1, max_size=3)))
        _call(mem.delete_turns, ns, bad_ids)
    elif call == "get":
        _call(store.get_turns, ns)
    elif call == "count":
        _call(store.count, ns)
    elif call == "forget_ids":
        # None is forget's documented "the whole namespace", not garbage.
        bad_ids = st.one_of(garbage.filter(lambda x: x is not None), st.lists(garbage, min_size=1, max_size=3))
        _call(mem.forget, ns, data.draw(bad_ids))
    else:
        # The constructor's own validation is covered by the test below.
        query = data.draw(texts)
        res = _call(lambda: CogMemRetriever(store=store, namespace=base_ns, k=3).invoke(query))
        if isinstance(res, list):
            assert all(d.metadata["turn_id"] for d in res)
    if ns == base_ns or call != "forget_ids":
        assert _snapshot(mem, base_ns) == before


@QUICK
@given(data=st.data())
def test_fuzz_make_turn_and_add(mem: CogMemory, base_ns: str, data: st.DataObject) -> None:
    _fuzz_make_turn_and_add(mem, base_ns, data)


@QUICK
@given(data=st.data())
def test_fuzz_store_calls(mem: CogMemory, base_ns: str, data: st.DataObject) -> None:
    _fuzz_store_calls(mem, base_ns, data)


@pytest.mark.reliability
@LONG
@given(data=st.data())
def test_fuzz_make_turn_and_add_long(mem: CogMemory, base_ns: str, data: st.DataObject) -> None:
    _fuzz_make_turn_and_add(mem, base_ns, data)


@pytest.mark.reliability
@LONG
@given(data=st.data())
def test_fuzz_store_calls_long(mem: CogMemory, base_ns: str, data: st.DataObject) -> None:
    _fuzz_store_calls(mem, base_ns, data)


# ---------------------------------------------------------------------- named cases (always run)
@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"text": ""}, "empty"),
        ({"text": "   \n\t"}, "empty"),
        ({"text": "x" * 1_000_000}, "split"),
        ({"text": "a\x00b"}, "nul"),
        ({"text": "bad \ud800"}, "unicode"),
        ({"text": None}, "text"),
        ({"text": 42}, "text"),
        ({"timestamp": datetime(2024, 1, 1)}, "naive"),
        ({"timestamp": "yesterday"}, "timestamp"),
        ({"timestamp": None}, "timestamp"),
        ({"id": ""}, "id"),
        ({"id": None}, "id"),
        ({"namespace": "bad ns"}, "namespace"),
        ({"namespace": None}, "namespace"),
        ({"speaker": ""}, "speaker"),
        ({"metadata": {"k": [1, 2]}}, "metadata"),
    ],
)
def test_each_bad_field_gets_a_named_error(fields: dict[str, Any], needle: str) -> None:
    base = {"id": "t1", "namespace": "n1", "speaker": "Ann", "text": "hi", "timestamp": T0}
    with pytest.raises(LangMemCogError) as info:
        make_turn(**{**base, **fields})
    _assert_good_error(info.value)
    assert needle in str(info.value).lower()


def test_rejected_batches_write_nothing(mem: CogMemory, ns: str) -> None:
    mem.add_turns(make_turns(ns, ["first turn", "second turn"]))
    before = _snapshot(mem, ns)
    good = make_turns(ns, ["third turn"], id_prefix="n")
    for bad in (
        [*good, None],
        [*good, *good],
        [*good, make_turns(ns, ["dup of t0"])[0]],
        "not a list",
        None,
        [{"id": "x"}],
    ):
        with pytest.raises(LangMemCogError) as info:
            mem.add_turns(bad)  # type: ignore[arg-type]
        _assert_good_error(info.value)
        assert _snapshot(mem, ns) == before
    assert mem.add_turns(good) == ["n0"]


def test_unknown_namespace_is_named_and_creates_nothing(mem: CogMemory, ns_factory) -> None:
    ghost = ns_factory("ghost")
    with pytest.raises(LangMemCogError) as info:
        mem.store.search(ghost, "anything")
    _assert_good_error(info.value)
    assert ghost in str(info.value) and not mem.store.has_namespace(ghost)
    assert mem.delete_turns(ghost, ["t0"]) == 0 and not mem.store.has_namespace(ghost)


def test_retriever_with_a_bad_namespace_raises_our_error(mem: CogMemory) -> None:
    with pytest.raises(LangMemCogError):
        CogMemRetriever(store=mem.store, namespace="", k=3)
