"""Transactions and snapshots (KV-16), async and sync."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

import tinystore

from conftest import START, racing


class SoldOut(Exception):
    pass


async def test_kv16_all_or_nothing_across_two_buckets_with_a_raised_error(store: tinystore.Store) -> None:
    stock = store.bucket("stock", int)
    orders = store.bucket("orders", str)
    await stock.set("apples", 3)
    with pytest.raises(SoldOut):
        async with store.tx() as tx:
            assert await tx.bucket(stock).take("apples") == 3
            await tx.bucket(orders).set("o-1", "apples")
            raise SoldOut()
    assert await stock.get("apples") == 3, "the take rolled back"
    assert await orders.get("o-1") is None, "the other bucket's write rolled back"

    async with store.tx() as tx:
        assert await tx.with_(stock).take("apples") == 3
        await tx.with_(orders).set("o-1", "apples")
    # Leaving the block waited for the commit: both are there, together.
    assert await stock.get("apples") is None
    assert await orders.get("o-1") == "apples"


async def test_kv16_a_tx_reads_its_own_writes_and_others_see_none_before_commit(store: tinystore.Store) -> None:
    b = store.bucket("b", int)
    await b.set("gone", 1)
    async with store.tx() as tx:
        t = tx.bucket(b)
        await t.set("k", 7)
        assert await t.get("k") == 7
        assert await t.has("k")
        assert await t.delete("gone") is True
        assert await t.get("gone") is None
        e = await t.entry("k")
        assert e is not None and (e.key, e.value) == ("k", 7)
        assert [x.key for x in (await t.list()).entries] == ["k"]
        assert await t.create("k", 8) is False
        assert await t.expire("k", "1h") is True
        # Outside the transaction nothing has changed yet.
        assert await b.get("k") is None
        assert await b.get("gone") == 1
        # Bad input raises where awaited, names the input, and the tx goes on.
        with pytest.raises(tinystore.InvalidError) as err:
            await t.set("k2", "not an int")  # type: ignore[arg-type]
        assert err.value.bucket == "b"
        await t.under("u").set("k3", 3)
    assert await b.get("k") == 7
    assert await b.get("gone") is None
    assert await b.get("k2") is None
    assert await b.under("u").get("k3") == 3


async def test_kv16_two_concurrent_txs_taking_the_last_item_exactly_one_gets_it(store: tinystore.Store) -> None:
    stock = store.bucket("stock", int)
    orders = store.bucket("orders", str)
    await stock.set("last", 1)

    async def buy(who: str) -> bool:
        async with store.tx() as tx:
            await asyncio.sleep(0)  # let the other buyer start meanwhile
            if await tx.bucket(stock).take("last") is None:
                return False
            await tx.bucket(orders).set(who, "last")
            return True

    got = await asyncio.gather(buy("ann"), buy("bob"))
    assert sorted(got) == [False, True]
    page = await orders.list()
    assert [e.key for e in page.entries] == (["ann"] if got[0] else ["bob"])
    assert await stock.get("last") is None


async def test_kv16_waiting_for_the_writer_does_not_block_the_loop(store: tinystore.Store) -> None:
    b = store.bucket("b", int)
    first_in = asyncio.Event()
    release = asyncio.Event()
    second_in = asyncio.Event()

    async def first() -> None:
        async with store.tx() as tx:
            await tx.bucket(b).set("k", 1)
            first_in.set()
            await release.wait()

    async def second() -> None:
        async with store.tx() as tx:
            second_in.set()
            assert await tx.bucket(b).get("k") == 1, "it starts after the first committed"
            await tx.bucket(b).set("k", 2)

    t1 = asyncio.create_task(first())
    await first_in.wait()
    t2 = asyncio.create_task(second())
    for _ in range(20):  # the loop keeps turning while the second waits for its turn
        await asyncio.sleep(0)
    assert not second_in.is_set()
    release.set()
    await asyncio.gather(t1, t2)
    assert await b.get("k") == 2


async def test_kv16_cancelled_while_waiting_for_its_turn_writes_nothing(store: tinystore.Store) -> None:
    b = store.bucket("b", int)
    first_in = asyncio.Event()
    release = asyncio.Event()

    async def first() -> None:
        async with store.tx():
            first_in.set()
            await release.wait()

    async def second() -> None:
        async with store.tx() as tx:
            await tx.bucket(b).set("k", 2)

    t1 = asyncio.create_task(first())
    await first_in.wait()
    t2 = asyncio.create_task(second())
    await asyncio.sleep(0)
    t2.cancel()
    release.set()
    await t1
    with pytest.raises(asyncio.CancelledError):
        await t2
    await b.set("j", 1)  # the writer goes on
    assert (await b.get("k"), await b.get("j")) == (None, 1)


async def test_kv16_view_sees_one_snapshot_while_a_write_commits(store: tinystore.Store) -> None:
    b = store.bucket("b", int)
    await b.set("a", 1)
    async with store.view() as v:
        vb = v.bucket(b)
        assert await vb.get("a") == 1
        await b.set("a", 2)
        await b.set("c", 3)
        assert await vb.get("a") == 1
        assert not await vb.has("c")
        assert [e.key for e in (await vb.list()).entries] == ["a"]
        e = await vb.entry("a")
        assert e is not None and e.value == 1
        assert not hasattr(vb, "set") and not hasattr(vb, "take"), "a view has only reads"
    assert await b.get("a") == 2


async def test_kv16_handle_after_the_end_is_closed(store: tinystore.Store) -> None:
    b = store.bucket("b", int)
    async with store.tx() as tx:
        t = tx.bucket(b)
        await t.set("k", 1)
    ended = "has ended: use its handles inside its function"
    with pytest.raises(tinystore.ClosedError, match=f"the transaction {ended}"):
        await t.get("k")
    with pytest.raises(tinystore.ClosedError, match=f"the transaction {ended}"):
        await tx.bucket(b).set("k", 2)
    with pytest.raises(SoldOut):
        async with store.tx() as tx2:
            t2 = tx2.bucket(b)
            raise SoldOut()
    with pytest.raises(tinystore.ClosedError, match=f"the transaction {ended}"):
        await t2.set("k", 3)
    async with store.view() as v:
        vb = v.bucket(b)
    with pytest.raises(tinystore.ClosedError, match=f"the view {ended}"):
        await vb.get("k")
    assert await b.get("k") == 1


async def test_kv16_a_failed_commit_raises_from_the_block(store: tinystore.Store) -> None:
    b = store.bucket("b", int)
    store._n.fail_next_commit_for_tests()
    with pytest.raises(tinystore.OutcomeUnknownError):
        async with store.tx() as tx:
            await tx.bucket(b).set("k", 1)
    async with store.tx() as tx:  # the store goes on
        await tx.bucket(b).set("k", 2)
    assert await b.get("k") == 2


async def test_kv16_a_tx_inside_a_tx_of_the_same_store_is_invalid_not_a_wait(store: tinystore.Store) -> None:
    b = store.bucket("b", int)
    async with store.tx() as tx:
        with pytest.raises(tinystore.InvalidError):
            async with store.tx():
                pass
        await tx.bucket(b).set("k", 1)
    async with store.tx() as tx:  # after the block, a new one starts
        assert await tx.bucket(b).get("k") == 1


def test_kv16_sync_a_tx_inside_a_tx_of_the_same_store_is_invalid(sync_store: tinystore.sync.Store) -> None:
    b = sync_store.bucket("b", int)
    with sync_store.tx() as tx:
        with pytest.raises(tinystore.InvalidError):
            with sync_store.tx():
                pass
        tx.bucket(b).set("k", 1)
    with sync_store.tx() as tx:
        assert tx.bucket(b).get("k") == 1


def test_kv16_sync_all_or_nothing_and_own_writes(sync_store: tinystore.sync.Store) -> None:
    stock = sync_store.bucket("stock", int)
    orders = sync_store.bucket("orders", str)
    stock.set("apples", 3)
    with pytest.raises(SoldOut):
        with sync_store.tx() as tx:
            assert tx.bucket(stock).take("apples") == 3
            assert tx.bucket(stock).get("apples") is None, "it reads its own take"
            tx.bucket(orders).set("o-1", "apples")
            raise SoldOut()
    assert (stock.get("apples"), orders.get("o-1")) == (3, None)
    with sync_store.tx() as tx:
        tx.bucket(stock).take("apples")
        tx.bucket(orders).set("o-1", "apples")
        assert orders.get("o-1") is None, "others see nothing before the commit"
    assert (stock.get("apples"), orders.get("o-1")) == (None, "apples")
    with pytest.raises(tinystore.ClosedError):
        tx.bucket(orders).get("o-1")


def test_kv16_sync_two_threads_taking_the_last_item_exactly_one_gets_it(sync_store: tinystore.sync.Store) -> None:
    stock = sync_store.bucket("stock", int)
    stock.set("last", 1)

    def buy(_: int) -> int | None:
        with sync_store.tx() as tx:
            return tx.bucket(stock).take("last")

    got = racing(2, buy)
    assert sorted(got, key=lambda x: x is None) == [1, None]


def test_kv16_sync_view_sees_one_snapshot(sync_store: tinystore.sync.Store) -> None:
    b = sync_store.bucket("b", int)
    b.set("a", 1)
    with sync_store.view() as v:
        assert v.bucket(b).get("a") == 1
        b.set("a", 2)
        assert v.bucket(b).get("a") == 1
        assert [e.key for e in v.bucket(b).list().entries] == ["a"]
    with pytest.raises(tinystore.ClosedError):
        v.bucket(b).get("a")
    assert b.get("a") == 2


_INSIDE = "inside a transaction through a handle outside it"


async def test_kv16_a_write_through_an_outside_handle_awaited_inside_tx_is_invalid_at_once(
    store: tinystore.Store, tmp_path: Path
) -> None:
    b = store.bucket("b", int)
    hits = store.counters("hits")
    async with tinystore.open(tmp_path / "other", clock=START) as other:
        elsewhere = other.bucket("b", int)
        started = time.monotonic()
        async with store.tx() as tx:
            for write in (b.set("k", 1), b.set("k", 1, ttl="1h"), b.delete("k"), hits.add("k")):
                with pytest.raises(tinystore.InvalidError, match=_INSIDE):
                    await write
            await asyncio.sleep(0)
            with pytest.raises(tinystore.InvalidError, match=_INSIDE):
                await b.under("x").take("k")  # after an await too
            # Another store's writer is free, and the transaction's own handles write.
            await elsewhere.set("k", 1)
            await tx.bucket(b).set("k", 2)
        assert time.monotonic() - started < 5, "refused at once, not after the transaction's limit"
    assert await b.get("k") == 2
    # Other tasks' writes wait their turn, and the store writes after the block.
    await b.set("k", 3)
    assert await b.get("k") == 3


def test_kv16_sync_a_write_through_an_outside_handle_inside_tx_is_invalid_at_once(
    sync_store: tinystore.sync.Store,
) -> None:
    b = sync_store.bucket("b", int)
    started = time.monotonic()
    with sync_store.tx() as tx:
        with pytest.raises(tinystore.InvalidError, match=_INSIDE):
            b.set("k", 1)
        tx.bucket(b).set("k", 2)
    assert time.monotonic() - started < 5
    assert b.get("k") == 2
    b.set("k", 3)
    assert b.get("k") == 3


async def test_kv16_a_view_holds_its_snapshot_at_most_five_seconds(store: tinystore.Store) -> None:
    b = store.bucket("b", int)
    await b.set("k", 1)
    async with store.view() as v:
        assert await v.bucket(b).get("k") == 1
        store.clock.advance("5001ms")
        with pytest.raises(tinystore.LimitError, match="open longer than 5s") as e:
            await v.bucket(b).get("k")
        assert e.value.bucket == "b"
    # A new view reads again, and the store writes.
    async with store.view() as v:
        assert await v.bucket(b).get("k") == 1
    await b.set("k", 2)
