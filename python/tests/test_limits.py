"""Rate limits (KV-12), quotas (KV-13), counters (KV-14) and once (KV-11) through asyncio."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from pathlib import Path
from typing import NoReturn

import pytest

import tinystore
from conftest import START


class HeldRun:
    """A run's function that says it has started, waits to be released,
    then fails with ``RuntimeError(message)``."""

    def __init__(self, message: str) -> None:
        self.started, self.release = asyncio.Event(), asyncio.Event()
        self.message = message

    async def __call__(self) -> NoReturn:
        self.started.set()
        await self.release.wait()
        raise RuntimeError(self.message)


async def test_kv12_rate_limit_lets_the_burst_through_then_refills(store: tinystore.Store) -> None:
    guesses = store.rate_limit("sign-in-guesses", rate="5/m", burst=5)
    answers = [await guesses.allow("10.0.0.1") for _ in range(6)]
    assert [a.ok for a in answers] == [True] * 5 + [False]
    assert [a.left for a in answers[:5]] == [4, 3, 2, 1, 0]
    refused = answers[5]
    assert refused.retry_at == START + dt.timedelta(seconds=12) and refused.windows == {}
    assert (await guesses.allow("10.0.0.2")).ok  # another key has its own burst
    store.clock.advance("12s")
    assert (await guesses.peek("10.0.0.1")).ok
    assert (await guesses.allow("10.0.0.1")).ok
    assert not (await guesses.allow("10.0.0.1")).ok


async def test_kv12_peek_counts_nothing_and_reset_forgets(store: tinystore.Store) -> None:
    limit = store.rate_limit("api", rate="2/s")
    first = await limit.peek("k")
    assert first.ok and await limit.peek("k") == first  # a peek counts nothing
    assert (await limit.allow("k", 2)).ok
    assert not (await limit.peek("k")).ok
    await limit.reset("k")
    assert (await limit.allow("k")).left == 1
    with pytest.raises(tinystore.InvalidError) as e:
        await limit.allow("k", 3)
    assert e.value.bucket == "api"
    assert (await limit.under("tenant").allow("k")).left == 1


async def test_kv12_bad_rates_are_invalid(store: tinystore.Store) -> None:
    for bad in ["5", "5/mins", "0/m", "/m", 5]:
        with pytest.raises(tinystore.InvalidError):
            store.rate_limit("r", rate=bad)  # type: ignore[arg-type]
    with pytest.raises(tinystore.InvalidError):
        store.rate_limit("r", rate="5/m", burst=0)
    assert (await store.rate_limit("pair", rate=(3, dt.timedelta(seconds=1))).allow("k")).left == 2


async def test_kv13_quota_counts_in_every_window_or_none(store: tinystore.Store) -> None:
    messages = store.quota("messages", session="2/5h", weekly="3/7d")
    assert (await messages.allow(7)).ok and (await messages.allow(7)).ok
    refused = await messages.allow(7)
    assert not refused.ok and refused.left == 0
    assert refused.retry_at == START + dt.timedelta(hours=5)
    weekly = refused.windows["weekly"]
    assert (weekly.used, weekly.limit, weekly.left) == (2, 3, 1)
    assert weekly.resets_at == START + dt.timedelta(days=7)
    store.clock.advance("5h")
    used = await messages.allow(7)
    assert used.ok and used.windows["weekly"].left == 0 and used.windows["session"].used == 1
    refused = await messages.allow(7)  # the weekly window is full: the session window is not used up
    assert not refused.ok and refused.windows["session"].used == 1
    assert refused.retry_at == START + dt.timedelta(days=7)


async def test_kv13_refund_peek_reset(store: tinystore.Store) -> None:
    q = store.quota("ai", daily="3/1d")
    await q.allow("u", 3)
    assert (await q.refund("u")).windows["daily"].used == 2
    assert (await q.refund("u", 3)).windows["daily"].used == 0  # never below zero
    assert (await q.peek("u")).left == 3
    await q.allow("u")
    await q.reset("u")
    assert (await q.peek("u")).windows["daily"].used == 0
    with pytest.raises(tinystore.InvalidError):
        await q.allow("u", 4)


async def test_kv13_racing_allows_pass_exactly_the_limit(store: tinystore.Store) -> None:
    q = store.quota("ai", daily="10/1d")
    answers = await asyncio.gather(*(q.allow("u") for _ in range(64)))
    assert sum(a.ok for a in answers) == 10


async def test_kv13_bad_windows_are_invalid(store: tinystore.Store) -> None:
    with pytest.raises(tinystore.InvalidError):
        store.quota("q")
    with pytest.raises(tinystore.InvalidError) as e:
        store.quota("q", Daily="1/d")
    assert e.value.bucket == "q"
    with pytest.raises(tinystore.InvalidError):
        store.quota("q", **{f"w{i}": "1/d" for i in range(9)})
    with pytest.raises(tinystore.InvalidError) as e:
        store.quota("q", daily="often")
    assert "daily" in str(e.value)


async def test_kv14_counters_add_max_get_delete(store: tinystore.Store) -> None:
    views = store.counters("views")
    assert await views.get("p") == 0
    assert await views.add("p") == 1
    assert await views.add("p", 5) == 6
    assert await views.add("p", -2) == 4
    assert await views.max("p", 3) == 4 and await views.max("p", 9) == 9
    assert await views.delete("p") is True and await views.get("p") == 0
    await views.add(2**63 - 1 - 5, 1)  # an int key is its decimal spelling
    await views.add("big", 2**63 - 1)
    with pytest.raises(tinystore.LimitError):
        await views.add("big", 1)
    assert await views.get("big") == 2**63 - 1
    with pytest.raises(tinystore.InvalidError):
        await views.add("p", 1.5)  # type: ignore[arg-type]
    await views.under("u").add("x")
    await views.clear()
    assert await views.under("u").get("x") == 0


async def test_kv14_64_racing_adds_count_exactly(store: tinystore.Store) -> None:
    views = store.counters("views")
    results = await asyncio.gather(*(views.add("p") for _ in range(64)))
    assert sorted(results) == list(range(1, 65)) and await views.get("p") == 64


async def test_kv14_ttl_starts_at_the_first_add_and_does_not_slide(store: tinystore.Store) -> None:
    daily = store.counters("daily", ttl="1d")
    await daily.add("u")
    store.clock.advance("23h")
    assert await daily.add("u") == 2
    store.clock.advance("1h")
    assert await daily.get("u") == 0


async def test_kv14_flush_every_counters_reach_the_file_by_maintain(tmp_path: Path) -> None:
    async with tinystore.open(tmp_path, clock=START) as store:
        hits = store.counters("hits", flush_every="1s")
        assert [await hits.add("p") for _ in range(3)] == [1, 2, 3]
        assert (await store.maintain()).flushed == 1
    async with tinystore.open(tmp_path, clock=START) as again:
        assert await again.counters("hits", flush_every="1s").get("p") == 3


@dataclasses.dataclass
class Sent:
    id: int


async def test_kv11_a_second_run_in_the_same_loop_waits_for_the_first(store: tinystore.Store) -> None:
    sends = store.once("sends", Sent, keep="1d")
    calls = 0
    started, release = asyncio.Event(), asyncio.Event()

    async def save() -> Sent:
        nonlocal calls
        calls += 1
        started.set()
        await release.wait()  # the loop stays free while the run is under way
        return Sent(id=41)

    first = asyncio.ensure_future(sends.run("k7q2", save))
    second = asyncio.ensure_future(sends.run("k7q2", save))
    # Each run asks for its key before its first await, in task order: once
    # the first's fn runs, the second has asked too, after it.
    await started.wait()
    assert not second.done()
    release.set()
    assert await first == Sent(41) and await second == Sent(41)
    assert calls == 1
    assert await sends.get("k7q2") == Sent(41)
    assert await sends.run("k7q2", save) == Sent(41) and calls == 1


async def test_kv11_an_error_keeps_nothing_and_the_waiter_runs_its_own(store: tinystore.Store) -> None:
    sends = store.once("sends", Sent)
    fails = HeldRun("the database was down")

    async def works() -> Sent:
        return Sent(7)

    first = asyncio.ensure_future(sends.run("k", fails))
    second = asyncio.ensure_future(sends.run("k", works))
    await fails.started.wait()  # the first runs; the second asked after it and waits
    assert not second.done()
    fails.release.set()
    with pytest.raises(RuntimeError):
        await first
    assert await second == Sent(7)
    assert await sends.get("k") == Sent(7)


async def test_kv11_a_run_inside_its_own_run_is_invalid(store: tinystore.Store) -> None:
    sends = store.once("sends", int)

    async def outer() -> int:
        with pytest.raises(tinystore.InvalidError) as e:
            await sends.run("k", inner)
        assert e.value.bucket == "sends" and e.value.path == "k"
        return await sends.run("other", inner)  # another key is fine

    async def inner() -> int:
        return 1

    assert await sends.run("k", outer) == 1


async def test_kv11_keep_get_delete_and_expiry(store: tinystore.Store) -> None:
    sends = store.once("sends", str, keep="1h")

    async def answer() -> str:
        return "a"

    assert await sends.run("k", answer) == "a"
    assert await sends.delete("k") is True and await sends.get("k") is None
    await sends.run("k", answer)
    store.clock.advance("1h")
    assert await sends.get("k") is None


async def test_kv11_an_answer_that_does_not_fit_keeps_nothing(store: tinystore.Store) -> None:
    sends = store.once("sends", Sent)

    async def wrong() -> Sent:
        return {"id": 1}  # type: ignore[return-value]

    with pytest.raises(tinystore.InvalidError):
        await sends.run("k", wrong)

    async def right() -> Sent:
        return Sent(2)

    assert await sends.run("k", right) == Sent(2)


async def test_kv11_a_cancelled_waiter_leaves_the_key_runnable(store: tinystore.Store) -> None:
    sends = store.once("sends", int)
    slow = HeldRun("failed")
    first = asyncio.ensure_future(sends.run("k", slow))
    waiter = asyncio.ensure_future(sends.run("k", slow))
    await slow.started.wait()  # the first runs; the waiter asked after it and waits
    waiter.cancel()
    slow.release.set()
    with pytest.raises(RuntimeError):
        await first
    with pytest.raises(asyncio.CancelledError):
        await waiter

    async def one() -> int:
        return 1

    assert await asyncio.wait_for(sends.run("k", one), 5) == 1


async def test_kv11_the_answer_is_kept_when_the_caller_goes_away_after_fn(store: tinystore.Store) -> None:
    sends = store.once("sends", int)
    returned = asyncio.Event()

    async def work() -> int:
        returned.set()
        return 5

    task = asyncio.ensure_future(sends.run("k", work))
    await returned.wait()
    task.cancel()  # fn has returned; the keep is on its way
    with pytest.raises(asyncio.CancelledError):
        await task

    async def again() -> int:
        return 6

    assert await asyncio.wait_for(sends.run("k", again), 5) == 5
