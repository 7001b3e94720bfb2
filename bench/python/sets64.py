"""The one benchmark figure that the Python binding's write path decides,
alone and short: durable sets with 64 coroutines in flight against the same
sets batched by hand 64 per transaction in sqlite3 (bench.py's peer: WAL,
synchronous=FULL, new keys every round, 100-byte values).

    python sets64.py                    # 7 rounds of 30 groups, alternating; the ratio
    python sets64.py --rounds 15        # more rounds
    python sets64.py --only-tinystore 20000

``--only-tinystore N`` writes N keys at 64 in flight and nothing else, for
``valgrind --tool=callgrind --separate-threads=yes``: the difference between
two sizes (say 20000 and 2000), divided by the difference in writes, is the
instructions a write costs on the loop's thread and on the writer's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time

import tinystore
from bench import KEYS, VALUE, Sqlite, keys


async def write_64_in_flight(bucket: tinystore.Bucket[bytes], ws: list[str]) -> None:
    """64 coroutines, each writing its share in turn: 64 writes in flight."""

    async def writer(mine: list[str]) -> None:
        for k in mine:
            await bucket.set(k, VALUE)

    await asyncio.gather(*(writer(ws[w::64]) for w in range(64)))


def only_tinystore(n: int, base: str) -> None:
    async def go() -> None:
        store = await tinystore.open(os.path.join(base, "ts"))
        await write_64_in_flight(store.bucket("bench", bytes), [f"w:{i}" for i in range(n)])
        groups, writes = store._n.group_stats()
        print(f"{writes} writes in {groups} commits")
        await store.close()

    asyncio.run(go())


def ratio(rounds: int, groups: int, base: str) -> None:
    ks = keys(KEYS)
    lite = Sqlite(os.path.join(base, "plain.db"))
    lite.set_batch([(k, VALUE) for k in ks])
    loop = asyncio.new_event_loop()
    store = loop.run_until_complete(tinystore.open(os.path.join(base, "ts")))
    bucket = store.bucket("bench", bytes)
    for i in range(0, KEYS, 256):
        loop.run_until_complete(write_64_in_flight(bucket, ks[i : i + 256]))
    counter = [0]

    def fresh() -> list[str]:
        counter[0] += 1
        return [f"w{counter[0]}:{i}" for i in range(64 * groups)]

    def sqlite_batched() -> float:
        ws = fresh()
        t = time.perf_counter()
        for i in range(0, len(ws), 64):
            lite.set_batch([(k, VALUE) for k in ws[i : i + 64]])
        return len(ws) / (time.perf_counter() - t)

    def tinystore_64() -> float:
        ws = fresh()
        t = time.perf_counter()
        loop.run_until_complete(write_64_in_flight(bucket, ws))
        return len(ws) / (time.perf_counter() - t)

    lite_rates, ts_rates = [], []
    for r in range(rounds):
        if r % 2:
            ts_rates.append(tinystore_64())
            lite_rates.append(sqlite_batched())
        else:
            lite_rates.append(sqlite_batched())
            ts_rates.append(tinystore_64())
    lite_med, ts_med = statistics.median(lite_rates), statistics.median(ts_rates)
    groups_done, writes_done = store._n.group_stats()
    print(
        f"sqlite3 batched 64: {lite_med:,.0f}/s ({1e6 / lite_med:.1f} us); "
        f"tinystore 64 in flight: {ts_med:,.0f}/s ({1e6 / ts_med:.1f} us); "
        f"ratio {ts_med / lite_med:.3f} (target >= 0.8); {rounds} rounds of {groups} groups, medians; "
        f"{writes_done} writes in {groups_done} commits; load {os.getloadavg()[0]:.2f}"
    )
    loop.run_until_complete(store.close())
    loop.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--groups", type=int, default=30, help="groups of 64 sets per round")
    ap.add_argument("--only-tinystore", type=int, default=None, metavar="N", help="N sets at 64 in flight, no peer")
    ap.add_argument("--dir", default=None, help="where the files go (a real disk: fsync must cost)")
    args = ap.parse_args()
    base = tempfile.mkdtemp(prefix="tinystore-sets64-", dir=args.dir or os.path.dirname(os.path.abspath(__file__)))
    try:
        if args.only_tinystore is not None:
            only_tinystore(args.only_tinystore, base)
        else:
            ratio(args.rounds, args.groups, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
