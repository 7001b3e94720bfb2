"""One build's side of a before/after comparison (bench/builds/compare.py):
the Python workloads of `make bench` that a binding change can slow, run in
this process against whichever `tinystore` package PYTHONPATH names, printed
as one JSON line of ops per second.

The workloads are bench.py's (a sync and an awaited point get of an existing
key among 100,000, durable awaited sets with 64 coroutines in flight) and
aio_single.py's (sync `allow` on one hot key), with their keys and values.
Each is timed ``--reps`` times, interleaved, and the median kept.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
from collections.abc import Callable

import tinystore

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import benchinfo  # noqa: E402
from bench import KEYS, VALUE, keys  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--reads", type=int, default=20_000, help="point gets per rep")
    ap.add_argument("--groups", type=int, default=100, help="groups of 64 sets per rep")
    ap.add_argument("--allows", type=int, default=20_000, help="allow calls per rep")
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    with benchinfo.scratch("tinystore-builds-", args.dir) as base:
        print(json.dumps(run(args, base)))


def run(args: argparse.Namespace, base: str) -> dict[str, object]:
    ks = keys(KEYS)
    rnd = random.Random(7)
    reads = [rnd.choice(ks) for _ in range(args.reads)]
    sync_store = tinystore.sync.open(os.path.join(base, "ts"))
    sb = sync_store.bucket("bench", bytes)
    loop = asyncio.new_event_loop()
    astore = loop.run_until_complete(tinystore.open(os.path.join(base, "ts")))
    ab = astore.bucket("bench", bytes)

    async def seed() -> None:
        for i in range(0, KEYS, 256):
            await asyncio.gather(*(ab.set(k, VALUE) for k in ks[i : i + 256]))

    loop.run_until_complete(seed())
    rl = sync_store.rate_limit("api-sync", rate="1000000000/s")
    counter = [0]

    def sync_get() -> float:
        g = sb.get
        return benchinfo.timed(lambda: sum(1 for k in reads if g(k) is not None))

    def await_get() -> float:
        async def go() -> int:
            n = 0
            for k in reads:
                if await ab.get(k) is not None:
                    n += 1
            return n

        return benchinfo.timed(lambda: loop.run_until_complete(go()))

    def await_set_64() -> float:
        counter[0] += 1
        ws = [f"w{counter[0]}:{i}" for i in range(64 * args.groups)]

        async def go() -> int:
            async def writer(mine: list[str]) -> None:
                for k in mine:
                    await ab.set(k, VALUE)

            await asyncio.gather(*(writer(ws[w::64]) for w in range(64)))
            return len(ws)

        return benchinfo.timed(lambda: loop.run_until_complete(go()))

    def sync_allow() -> float:
        allow = rl.allow
        return benchinfo.timed(lambda: sum(1 for _ in range(args.allows) if allow("hot").ok))

    measures: dict[str, Callable[[], float]] = {
        "sync get": sync_get,
        "await get (1 in flight)": await_get,
        "await set (64 in flight)": await_set_64,
        "sync allow, one hot key": sync_allow,
    }
    seen: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(args.reps):
        for name, measure in measures.items():
            seen[name].append(measure())
    loop.run_until_complete(astore.close())
    loop.close()
    sync_store.close()
    return {
        "package": os.path.dirname(os.path.abspath(tinystore.__file__)),
        "rates": {name: statistics.median(v) for name, v in seen.items()},
    }


if __name__ == "__main__":
    main()
