"""The synchronous API: the same names without await, for Flask, Django and scripts."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import pytest

import tinystore
from conftest import START, racing


def test_kv04_sync_set_get_has_delete(sync_store: tinystore.sync.Store) -> None:
    b = sync_store.bucket("b", str, ttl="15m")
    v = b.set("k", "v")
    assert b.get("k") == "v" and b.has("k")
    entry = b.entry("k")
    assert entry is not None and entry.version == v and entry.expires_at == START + dt.timedelta(minutes=15)
    assert b.delete("k") and not b.has("k") and b.get("k") is None
    assert b.create("k", "1") and not b.create("k", "2") and b.get("k") == "1"
    assert b.expire("k", dt.timedelta(minutes=1))
    sync_store.clock.advance("1m")
    assert b.get("k") is None


def test_kv05_sync_take_one_of_16_racing_threads_gets_it(sync_store: tinystore.sync.Store) -> None:
    codes = sync_store.bucket("codes", int)
    codes.set("c", 99)
    got = racing(16, lambda _: codes.take("c"))
    assert sorted(got, key=lambda x: x is None) == [99] + [None] * 15


def test_kv15_sync_writes_of_many_threads_commit_together(sync_store: tinystore.sync.Store) -> None:
    b = sync_store.bucket("b", int)
    b.set("warm", 0)
    g0, w0 = sync_store._n.group_stats()

    def writer(i: int) -> None:
        for j in range(4):
            b.set(f"k{i}-{j}", j)

    racing(32, writer)
    g, w = sync_store._n.group_stats()
    assert w - w0 == 128
    assert g - g0 < 128  # the GIL is released while a write waits, so threads share commits


def test_kv08_sync_branches_list_and_all(sync_store: tinystore.sync.Store) -> None:
    b = sync_store.bucket("b", int)
    for i in range(5):
        b.under("u1").set(i, i)
    b.under("u2").set("x", 0)
    page = b.under("u1").list(limit=2)
    assert [e.key for e in page.entries] == ["0", "1"] and page.next == "1"
    assert [e.value for e in b.under("u1").all()] == [0, 1, 2, 3, 4]
    b.under("u1").clear()
    assert list(b.under("u1").all()) == [] and b.under("u2").get("x") == 0
    assert repr(b.under("u2")) == "<tinystore.Bucket 'b' under u2>"


def test_kv17_sync_maintain_and_clock(sync_store: tinystore.sync.Store) -> None:
    b = sync_store.bucket("b", int, ttl="1m")
    b.set("k", 1)
    sync_store.clock.advance("2m")
    assert sync_store.maintain().expired == 1


def test_kv19_sync_closed(tmp_path: Path) -> None:
    store = tinystore.sync.open(tmp_path)
    b = store.bucket("b", int)
    store.close()
    with pytest.raises(tinystore.ClosedError):
        b.get("k")
    with pytest.raises(tinystore.ClosedError):
        b.set("k", 1)


def test_kv19_sync_and_async_share_one_file(tmp_path: Path) -> None:
    import asyncio

    with tinystore.sync.open(tmp_path) as s:
        s.bucket("b", str).set("k", "from sync")

    async def read() -> str | None:
        async with tinystore.open(tmp_path) as a:
            return await a.bucket("b", str).get("k")

    assert asyncio.run(read()) == "from sync"


def test_kv12_kv13_kv14_sync_limits(sync_store: tinystore.sync.Store) -> None:
    guesses = sync_store.rate_limit("guesses", rate="2/m")
    assert [guesses.allow("ip").ok for _ in range(3)] == [True, True, False]
    messages = sync_store.quota("messages", session="1/5h", weekly="3/7d")
    assert messages.allow(1).ok and not messages.allow(1).ok
    assert messages.refund(1).windows["weekly"].used == 0
    views = sync_store.counters("views")
    assert views.add("p") == 1 and views.add("p", 2) == 3 and views.get("p") == 3


def test_kv11_sync_once_runs_once_across_threads(sync_store: tinystore.sync.Store) -> None:
    sends = sync_store.once("sends", int)
    started = threading.Event()
    release = threading.Event()
    calls: list[int] = []

    def slow() -> int:
        calls.append(1)
        started.set()
        release.wait(10)
        return 41

    results: list[int] = []
    first = threading.Thread(target=lambda: results.append(sends.run("k", slow)))
    first.start()
    started.wait(10)
    second = threading.Thread(target=lambda: results.append(sends.run("k", slow)))
    second.start()
    release.set()
    first.join()
    second.join()
    assert results == [41, 41] and calls == [1]

    def nested() -> int:
        return sends.run("n", nested)

    with pytest.raises(tinystore.InvalidError):
        sends.run("n", nested)
    assert sends.get("n") is None
