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
from bench import KEYS, awaited_gets, awaited_sets_64, keys, open_seeded, sync_gets  # noqa: E402


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
    sync_store, sb, loop, astore, ab = open_seeded(base, ks)
    rl = sync_store.rate_limit("api-sync", rate="1000000000/s")
    counter = [0]

    def sync_get() -> float:
        return sync_gets(sb, reads)

    def await_get() -> float:
        return awaited_gets(loop, ab, reads)

    def await_set_64() -> float:
        counter[0] += 1
        return awaited_sets_64(loop, ab, [f"w{counter[0]}:{i}" for i in range(64 * args.groups)])

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
