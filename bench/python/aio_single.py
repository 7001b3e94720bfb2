"""One call at a time from asyncio against the same call from the sync API,
and a hot-key rate limit from both against the ``limits`` package.

What a request handler does: it awaits one store call and goes on. Each
round times a durable ``take`` and a durable ``set`` awaited one at a time
from an asyncio task and the same calls from the sync API (each API on a
store of its own, on one disk), every call's own time kept for the p50;
then ``allow`` on one hot key from both APIs and the ``limits`` package's
moving window (in memory, on many keys: on one hot key at this rate its
list of timestamps grows without bound, see peers.py). The rounds
alternate the contenders; the report gives the medians and their ratios.

    make bench-aio                      # 9 rounds, with limits installed
    python aio_single.py --rounds 15
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
from typing import Any

import benchinfo
import tinystore

VALUE = os.urandom(100)


def main() -> None:
    ap = benchinfo.parser(__doc__, rounds=9)
    ap.add_argument("--writes", type=int, default=300, help="durable writes per round and contender")
    ap.add_argument("--allows", type=int, default=50_000, help="allow calls per round and contender")
    ap.add_argument("--limit-keys", type=int, default=10_000, help="keys the limits package spreads over")
    benchinfo.run(ap, "tinystore-aio-", report)


def report(args: argparse.Namespace, base: str) -> None:
    meta = benchinfo.machine()
    benchinfo.header("Python: asyncio against the sync API, one call at a time", meta)
    # A store each: two stores on one file would wait on each other's
    # write lock (the rate limits' flush, a checkpoint).
    sync_store = tinystore.sync.open(os.path.join(base, "sync"))
    sb = sync_store.bucket("single", bytes)
    srl = sync_store.rate_limit("api-sync", rate="1000000000/s")
    loop = asyncio.new_event_loop()
    astore = loop.run_until_complete(tinystore.open(os.path.join(base, "aio")))
    ab = astore.bucket("single", bytes)
    arl = astore.rate_limit("api-aio", rate="1000000000/s")
    counter = [0]

    def fresh() -> list[str]:
        """Keys present in both stores, for a round's takes."""
        counter[0] += 1
        ks = [f"r{counter[0]}:{i}" for i in range(args.writes)]
        for k in ks:
            sb.set(k, VALUE)

        async def seed() -> None:
            await asyncio.gather(*(ab.set(k, VALUE) for k in ks))

        loop.run_until_complete(seed())
        return ks

    # Each durable call's own time too, round by round: the p50 a request
    # handler sees.
    took: dict[str, list[list[float]]] = {}

    def new_keys() -> list[str]:
        counter[0] += 1
        return [f"n{counter[0]}:{i}" for i in range(args.writes)]

    def sync_calls(name: str, call: Any, keys: Any) -> float:
        ks, times, clock = keys(), [], time.perf_counter
        took.setdefault(name, []).append(times)

        def go() -> int:
            for k in ks:
                t = clock()
                call(k)
                times.append(clock() - t)
            return len(ks)

        return benchinfo.timed(go)

    def aio_calls(name: str, call: Any, keys: Any) -> float:
        ks, times, clock = keys(), [], time.perf_counter
        took.setdefault(name, []).append(times)

        async def go() -> int:
            for k in ks:
                t = clock()
                await call(k)
                times.append(clock() - t)
            return len(ks)

        return benchinfo.timed(lambda: loop.run_until_complete(go()))

    def sync_allow() -> float:
        allow = srl.allow
        return benchinfo.timed(lambda: sum(1 for _ in range(args.allows) if allow("hot").ok))

    def aio_allow() -> float:
        allow = arl.allow

        async def go() -> int:
            return sum([1 for _ in range(args.allows) if (await allow("hot")).ok])

        return benchinfo.timed(lambda: loop.run_until_complete(go()))

    measures: dict[str, Any] = {
        "sync take (durable)": lambda: sync_calls("sync take", sb.take, fresh),
        "asyncio take (durable), 1 in flight": lambda: aio_calls("asyncio take", ab.take, fresh),
        "sync set (durable)": lambda: sync_calls("sync set", lambda k: sb.set(k, VALUE), new_keys),
        "asyncio set (durable), 1 in flight": lambda: aio_calls("asyncio set", lambda k: ab.set(k, VALUE), new_keys),
        "sync allow, one hot key": sync_allow,
        "asyncio allow, one hot key": aio_allow,
    }
    peer = moving_window(args)
    if peer is not None:
        measures["limits moving window, many keys"] = peer
    rows = benchinfo.run_rounds(args.rounds, measures)
    benchinfo.table(rows)
    print()
    p50 = {name: statistics.median([t for r in rounds for t in r]) * 1e6 for name, rounds in took.items()}
    print("| one durable call, every round | p50 µs |")
    print("|---|---:|")
    for name, v in p50.items():
        print(f"| {name} | {v:,.0f} |")
    print()
    r = rows
    ratios = [
        ("asyncio take time / sync take time", r["sync take (durable)"] / r["asyncio take (durable), 1 in flight"],
         "<= 1.1"),
        ("asyncio set time / sync set time", r["sync set (durable)"] / r["asyncio set (durable), 1 in flight"],
         "<= 1.1"),
        ("asyncio take p50 / sync take p50", p50["asyncio take"] / p50["sync take"], "<= 1.1"),
        ("asyncio set p50 / sync set p50", p50["asyncio set"] / p50["sync set"], "<= 1.1"),
        ("asyncio take p50 / sync take p50, paired", paired(took["asyncio take"], took["sync take"]), "<= 1.1"),
        ("asyncio set p50 / sync set p50, paired", paired(took["asyncio set"], took["sync set"]), "<= 1.1"),
        ("asyncio allow time / sync allow time", r["sync allow, one hot key"] / r["asyncio allow, one hot key"], ""),
    ]
    if peer is not None:
        ratios.append(("asyncio allow rate / limits moving window rate",
                       r["asyncio allow, one hot key"] / r["limits moving window, many keys"], ">= 1.5"))
        ratios.append(("sync allow rate / limits moving window rate",
                       r["sync allow, one hot key"] / r["limits moving window, many keys"], ""))
    benchinfo.ratios(ratios)
    benchinfo.save("python-aio-single", meta, {"aio_single": {
        "title": "Python: asyncio against the sync API, one call at a time", "rows": rows, "ratios": ratios}})
    loop.run_until_complete(astore.close())
    loop.close()
    sync_store.close()


def paired(ours: list[list[float]], peer: list[list[float]]) -> float:
    """The median over the rounds of each round's p50 ratio: the two sides
    of a round run seconds apart, so the pair cancels the drift of the
    disk's fsync from round to round."""
    return statistics.median(statistics.median(o) / statistics.median(p) for o, p in zip(ours, peer))


def moving_window(args: argparse.Namespace) -> Any:
    """The ``limits`` package's moving window in memory, as peers.py runs it;
    None when the package is not installed (the report then leaves it out)."""
    try:
        import limits
        from limits import storage, strategies
    except ImportError:
        print("# limits is not installed: its row is left out (make bench-aio installs it)")
        return None
    lim = strategies.MovingWindowRateLimiter(storage.MemoryStorage())
    item = limits.parse("1000000/second")
    rnd = random.Random(3)
    many = [f"ip:{rnd.randrange(args.limit_keys)}" for _ in range(args.allows)]
    return lambda: benchinfo.timed(lambda: sum(1 for k in many if lim.hit(item, k)))


if __name__ == "__main__":
    main()
