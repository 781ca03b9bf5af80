"""The steady cycle's collector pause: off within, back as it was after, also when the body raises."""

from __future__ import annotations

import gc
import weakref

import pytest

from recommender.incremental.quiet_gc import collector_paused


def test_the_collector_is_off_within_and_on_again_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_failing_body_turns_it_on_again_and_a_collector_that_was_off_stays_off() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("read failed")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_reference_cycle_made_within_is_collected_after_it() -> None:
    class Node:
        other: object = None

    with collector_paused():
        a, b = Node(), Node()
        a.other, b.other = b, a
        ref = weakref.ref(a)
        del a, b
        assert ref() is not None  # a cycle: reference counting alone does not free it
    gc.collect()
    assert ref() is None
