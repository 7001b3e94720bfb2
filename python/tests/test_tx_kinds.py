"""KV-16 across kinds: durable counters, quotas and once answers join a
transaction with buckets, all or nothing; flush_every counters, rate limits
and once.run are InvalidError inside one, saying why; the store writes
normally after each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import tinystore


class Declined(Exception):
    pass


async def kinds_with_data(
    store: tinystore.Store, attempts_at: int
) -> tuple[tinystore.Bucket[str], tinystore.Counters, tinystore.Quota, tinystore.Once[str]]:
    """One handle of each durable kind, with a code, a count and a kept answer."""
    codes = store.bucket("codes", str)
    attempts = store.counters("attempts")
    await codes.set("c-1", "ada")
    if attempts_at:
        await attempts.add("ada", attempts_at)
    sends = store.once("sends", str)
    await sends.run("old", lambda: "kept")
    return codes, attempts, store.quota("messages", daily="2/1d"), sends


async def still_writes(store: tinystore.Store) -> None:
    await store.bucket("codes", str).set("after", "x")
    await store.counters("attempts").add("after")
    await store.quota("messages", daily="2/1d").allow("after")
    assert await store.once("sends", str).run("after", lambda: "y") == "y"


async def test_kv16_tx_commits_a_take_a_count_a_use_and_an_answer_together(store: tinystore.Store) -> None:
    codes, attempts, plan, sends = await kinds_with_data(store, attempts_at=0)
    async with store.tx() as tx:
        assert await tx.with_(codes).take("c-1") == "ada"
        assert await tx.with_(attempts).add("ada") == 1
        assert await tx.with_(attempts).max("ada", 4) == 4
        assert await tx.with_(attempts).get("ada") == 4
        used = await tx.with_(plan).allow("ada")
        assert used.ok and used.left == 1
        assert (await tx.with_(plan).peek("ada")).left == 1
        assert await tx.with_(sends).get("old") == "kept"
        assert await tx.with_(sends).delete("old") is True
        # Others see nothing before the commit.
        assert await attempts.get("ada") == 0
        assert (await plan.peek("ada")).left == 2
    assert await codes.get("c-1") is None
    assert await attempts.get("ada") == 4
    assert (await plan.peek("ada")).left == 1
    assert await sends.get("old") is None
    await still_writes(store)


async def test_kv16_an_exception_rolls_back_every_kind(store: tinystore.Store) -> None:
    codes, attempts, plan, sends = await kinds_with_data(store, attempts_at=5)
    with pytest.raises(Declined):
        async with store.tx() as tx:
            await tx.with_(codes).take("c-1")
            await tx.with_(attempts).add("ada")
            await tx.with_(attempts).delete("ada")
            await tx.with_(plan).allow("ada", 2)
            await tx.with_(plan).refund("ada")
            await tx.with_(plan).reset("ada")
            await tx.with_(sends).delete("old")
            raise Declined()
    assert await codes.get("c-1") == "ada"
    assert await attempts.get("ada") == 5
    assert (await plan.peek("ada")).left == 2
    assert await sends.get("old") == "kept"
    await still_writes(store)


async def test_kv16_what_keeps_its_state_in_memory_is_invalid_inside_tx_saying_why(store: tinystore.Store) -> None:
    codes = store.bucket("codes", str)
    hits = store.counters("hits", flush_every="1s")
    logins = store.rate_limit("logins", rate="5/m")
    sends = store.once("sends", str)
    with pytest.raises(tinystore.InvalidError, match="once.run cannot run inside a transaction"):
        async with store.tx() as tx:
            await tx.with_(codes).set("inside", "x")
            with pytest.raises(tinystore.InvalidError, match="flush_every") as e:
                tx.with_(hits)
            assert e.value.bucket == "hits"
            with pytest.raises(tinystore.InvalidError, match="rate limit keeps its state in memory") as e:
                tx.with_(logins)
            assert e.value.bucket == "logins"
            await sends.run("k", lambda: "x")
    assert await codes.get("inside") is None
    assert await sends.get("k") is None
    await hits.add("k")
    assert (await logins.allow("k")).ok
    await still_writes(store)


def test_kv16_sync_tx_joins_every_durable_kind_and_refuses_the_rest(sync_store: tinystore.sync.Store) -> None:
    codes = sync_store.bucket("codes", str)
    attempts = sync_store.counters("attempts")
    plan = sync_store.quota("messages", daily="2/1d")
    sends = sync_store.once("sends", str)
    hits = sync_store.counters("hits", flush_every="1s")
    sends.run("old", lambda: "kept")
    with pytest.raises(Declined):
        with sync_store.tx() as tx:
            tx.with_(codes).set("c-1", "ada")
            assert tx.with_(attempts).add("ada") == 1
            assert tx.with_(plan).allow("ada").ok
            assert tx.with_(sends).delete("old") is True
            raise Declined()
    assert (codes.get("c-1"), attempts.get("ada"), plan.peek("ada").left) == (None, 0, 2)
    assert sends.get("old") == "kept"
    with sync_store.tx() as tx:
        tx.with_(codes).set("c-1", "ada")
        assert tx.with_(attempts).add("ada") == 1
        assert tx.with_(plan).allow("ada").left == 1
        assert tx.with_(sends).get("old") == "kept"
        with pytest.raises(tinystore.InvalidError, match="flush_every"):
            tx.with_(hits)
        with pytest.raises(tinystore.InvalidError, match="once.run cannot run inside a transaction"):
            sends.run("k", lambda: "x")
    assert (codes.get("c-1"), attempts.get("ada"), plan.peek("ada").left) == ("ada", 1, 1)
    attempts.add("ada")
    assert attempts.get("ada") == 2


def test_kv16_a_call_of_the_store_only_given_a_tx_is_refused_in_the_cores_text(
    sync_store: tinystore.sync.Store,
) -> None:
    hits = sync_store.counters("hits")
    hits.add("k", 2)
    with sync_store.tx() as tx:
        # The package has no counters' clear inside a transaction; the native
        # call given one refuses it as every language's binding does.
        with pytest.raises(tinystore.InvalidError, match="clear runs on the store, not in a transaction or view") as e:
            hits._n.clear(tx._n)  # type: ignore[arg-type]
        assert e.value.bucket == "hits"
    assert hits.get("k") == 2


def test_kv16_a_handle_of_another_store_is_refused_when_it_joins(
    sync_store: tinystore.sync.Store, tmp_path: Path
) -> None:
    codes = sync_store.bucket("codes", str)
    with tinystore.sync.open(tmp_path / "other") as other:
        their_codes, their_hits = other.bucket("codes", str), other.counters("hits")
        their_plan, their_sends = other.quota("messages", daily="2/1d"), other.once("sends", str)
        with sync_store.tx() as tx:
            # Each is refused at `with_`, before any call, in the core's text.
            joins: dict[str, Callable[[], object]] = {
                "codes": lambda: tx.with_(their_codes),
                "hits": lambda: tx.with_(their_hits),
                "messages": lambda: tx.with_(their_plan),
                "sends": lambda: tx.with_(their_sends),
            }
            for name, join in joins.items():
                with pytest.raises(tinystore.InvalidError, match="this handle is of another store") as e:
                    join()
                assert e.value.bucket == name
            tx.with_(codes).set("c-1", "ada")
        assert their_codes.get("c-1") is None
    assert codes.get("c-1") == "ada"
