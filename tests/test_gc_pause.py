"""``loading.gc_paused``: the collector paused while a structure is built, and a large one handed to the oldest
generation at once (no young collections scanning it), a small one left to the collector as usual."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from langmem_cog.loading import SPLICE_OBJECTS, gc_paused


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector on, no frozen objects, before and after the test."""
    was = gc.isenabled()
    gc.unfreeze()
    gc.enable()
    yield
    gc.unfreeze()
    if was:
        gc.enable()
    else:
        gc.disable()


def generation_of(obj: object) -> int | None:
    return next((g for g in range(3) if any(o is obj for o in gc.get_objects(generation=g))), None)


def test_a_large_structure_goes_to_the_oldest_generation(collector: None) -> None:
    with gc_paused():
        assert not gc.isenabled()
        built = [[i] for i in range(SPLICE_OBJECTS + 1000)]
    assert gc.isenabled()
    assert generation_of(built[-1]) == 2 and generation_of(built) == 2
    assert gc.get_freeze_count() == 0


def test_a_small_structure_stays_young(collector: None) -> None:
    gc.collect()
    with gc_paused():
        built = [[i] for i in range(100)]
    assert gc.isenabled() and generation_of(built[-1]) == 0


def test_objects_the_application_froze_stay_frozen(collector: None) -> None:
    kept = [[1], [2]]
    gc.freeze()
    frozen = gc.get_freeze_count()
    with gc_paused():
        built = [[i] for i in range(SPLICE_OBJECTS + 1000)]
    assert generation_of(kept[0]) is None  # still in the permanent generation: nothing was unfrozen
    # the count falls only by frozen objects that other threads (a test's leftover worker) free meanwhile
    assert frozen // 2 < gc.get_freeze_count() <= frozen
    assert generation_of(built[-1]) in (0, 1, 2) and gc.isenabled()


def test_an_application_that_turned_the_collector_off_keeps_it_off(collector: None) -> None:
    gc.disable()
    with gc_paused():
        built = [[i] for i in range(SPLICE_OBJECTS + 1000)]
    assert not gc.isenabled() and built
