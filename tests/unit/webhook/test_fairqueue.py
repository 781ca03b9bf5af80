"""Large reviews are decided smallest first (webhook.fairqueue): 300 kB never queues behind 5 MB ones."""

from __future__ import annotations

import anyio
import pytest

from webhook.fairqueue import SmallestFirst


async def _order(capacity: int, sizes: list[int], cancel: int | None = None) -> list[int]:
    limiter, done = SmallestFirst(capacity), []
    hold = anyio.Event()

    async def one(size: int, scope: anyio.CancelScope | None = None) -> None:
        with scope or anyio.CancelScope():
            async with limiter.slot(size):
                await hold.wait()
                done.append(size)

    async with anyio.create_task_group() as tg:
        scopes = {size: anyio.CancelScope() for size in sizes}
        for size in sizes:
            tg.start_soon(one, size, scopes[size])
            await anyio.sleep(0.01)  # arrive in this order
        if cancel is not None:
            scopes[cancel].cancel()
            await anyio.sleep(0.01)
        assert limiter.waiting == len(sizes) - capacity - (cancel is not None)
        hold.set()
    return done


def test_waiting_reviews_go_smallest_first_after_the_one_being_decided() -> None:
    heavy = 4_850_000
    assert anyio.run(_order, 1, [heavy, heavy + 1, heavy + 2, heavy + 3, 301_000]) == [
        heavy, 301_000, heavy + 1, heavy + 2, heavy + 3,
    ]  # fmt: skip


def test_a_waiter_that_gives_up_leaves_the_queue() -> None:
    assert anyio.run(_order, 1, [9, 5, 3, 7], 3) == [9, 5, 7]


def test_two_slots_run_two_at_once() -> None:
    assert anyio.run(_order, 2, [9, 8, 5, 3]) == [9, 8, 3, 5]


def test_a_capacity_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        SmallestFirst(0)
