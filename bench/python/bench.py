"""Benchmark of the Python API of TinyStore KV against hand-written sqlite3
and against diskcache (run with `make bench-python`; not part of `make test`).

Each measure runs in rounds that alternate between the engines, so that a
noisy neighbour slows all of them alike; the report gives each engine's
median over the rounds and the ratios the targets are stated in:

- async get within 2x, and sync get within 1.5x, of a plain sqlite3 point read;
- get faster than diskcache's get;
- durable sets with 64 coroutines in flight at least 80% of the same sets
  batched by hand 64 per transaction in sqlite3 with synchronous=FULL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import sys
from collections.abc import Callable
from typing import Any

import benchinfo
import tinystore

try:
    import diskcache
except ImportError:  # the report says it was left out
    diskcache = None

# Gets are timed over 100,000 keys, as in every language's bench
# workloads (the get curve to 1,000,000 is peers.py's).
KEYS = 100_000
VALUE = os.urandom(100)


def keys(n: int) -> list[str]:
    return [f"user:{i:06}" for i in range(n)]


def open_seeded(base: str, ks: list[str]) -> tuple[Any, Any, asyncio.AbstractEventLoop, Any, Any]:
    """The sync and the asyncio store on one directory, with ``ks`` written:
    (sync store, its bucket, the loop, the asyncio store, its bucket)."""
    sync_store = tinystore.sync.open(os.path.join(base, "ts"))
    loop = asyncio.new_event_loop()
    astore = loop.run_until_complete(tinystore.open(os.path.join(base, "ts")))
    ab = astore.bucket("bench", bytes)

    async def seed() -> None:
        for i in range(0, KEYS, 256):
            await asyncio.gather(*(ab.set(k, VALUE) for k in ks[i : i + 256]))

    loop.run_until_complete(seed())
    return sync_store, sync_store.bucket("bench", bytes), loop, astore, ab


def sync_gets(sb: Any, reads: list[str]) -> float:
    """Seconds for the sync point gets of ``reads``."""
    g = sb.get
    return benchinfo.timed(lambda: sum(1 for k in reads if g(k) is not None))


def awaited_gets(loop: asyncio.AbstractEventLoop, ab: Any, reads: list[str]) -> float:
    """Seconds for the point gets of ``reads``, each awaited alone."""

    async def go() -> int:
        n = 0
        for k in reads:
            if await ab.get(k) is not None:
                n += 1
        return n

    return benchinfo.timed(lambda: loop.run_until_complete(go()))


def awaited_sets_64(loop: asyncio.AbstractEventLoop, ab: Any, ws: list[str]) -> float:
    """Seconds for durable sets of ``ws`` by 64 coroutines, each writing its
    share in turn: 64 writes in flight."""

    async def go() -> int:
        async def writer(mine: list[str]) -> None:
            for k in mine:
                await ab.set(k, VALUE)

        await asyncio.gather(*(writer(ws[w::64]) for w in range(64)))
        return len(ws)

    return benchinfo.timed(lambda: loop.run_until_complete(go()))


class Sqlite:
    """The hand-written baseline: one table, WAL, synchronous=FULL, prepared point reads."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID")

    def get(self, k: str) -> Any:
        row = self.db.execute("SELECT v FROM kv WHERE k = ?", (k,)).fetchone()
        return None if row is None else row[0]

    def set_one(self, k: str, v: bytes) -> None:
        """One durable write: its own transaction."""
        self.db.execute("INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)", (k, v))

    def set_batch(self, items: list[tuple[str, bytes]]) -> None:
        """Writes batched by hand: one transaction, one fsync."""
        self.db.execute("BEGIN IMMEDIATE")
        self.db.executemany("INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)", items)
        self.db.execute("COMMIT")


def main() -> None:
    ap = benchinfo.parser(__doc__, rounds=7)
    ap.add_argument("--reads", type=int, default=20_000, help="point reads per round")
    ap.add_argument("--sets", type=int, default=200, help="sets with 1 in flight per round")
    ap.add_argument("--groups", type=int, default=300, help="groups of 64 sets per round")
    benchinfo.run(ap, "tinystore-bench-", report)


def report(args: argparse.Namespace, base: str) -> None:
    meta = benchinfo.machine()
    benchinfo.header("Python: tinystore against sqlite3 and diskcache", meta)
    ks = keys(KEYS)
    rnd = random.Random(7)
    lite = Sqlite(os.path.join(base, "plain.db"))
    lite.set_batch([(k, VALUE) for k in ks])
    dc = diskcache.Cache(os.path.join(base, "diskcache")) if diskcache else None
    if dc is not None:
        for k in ks:
            dc.set(k, VALUE)

    sync_store, sb, loop, astore, ab = open_seeded(base, ks)

    reads = [rnd.choice(ks) for _ in range(args.reads)]

    def sqlite_get() -> float:
        g = lite.get
        return benchinfo.timed(lambda: sum(1 for k in reads if g(k) is not None))

    def sync_get() -> float:
        return sync_gets(sb, reads)

    def async_get_1() -> float:
        return awaited_gets(loop, ab, reads)

    def async_get_64() -> float:
        async def go() -> int:
            n = 0
            for i in range(0, len(reads), 64):
                got = await asyncio.gather(*(ab.get(k) for k in reads[i : i + 64]))
                n += len(got)
            return n

        return benchinfo.timed(lambda: loop.run_until_complete(go()))

    measures: dict[str, Callable[[], float]] = {
        "sqlite3 point read": sqlite_get,
        "tinystore sync get": sync_get,
        "tinystore await get (1 in flight)": async_get_1,
        "tinystore await get (64 in flight)": async_get_64,
    }
    if dc is not None:
        dget = dc.get
        measures["diskcache get"] = lambda: benchinfo.timed(lambda: sum(1 for k in reads if dget(k) is not None))
    gets = benchinfo.run_rounds(args.rounds, measures)

    counter = [0]

    def fresh(n: int) -> list[str]:
        counter[0] += 1
        return [f"w{counter[0]}:{i}" for i in range(n)]

    def sqlite_set_1() -> float:
        ws = fresh(args.sets)
        return benchinfo.timed(lambda: [lite.set_one(k, VALUE) for k in ws] and len(ws))

    def async_set_1() -> float:
        ws = fresh(args.sets)

        async def go() -> int:
            for k in ws:
                await ab.set(k, VALUE)
            return len(ws)

        return benchinfo.timed(lambda: loop.run_until_complete(go()))

    def sqlite_set_64() -> float:
        ws = fresh(64 * args.groups)

        def go() -> int:
            for i in range(0, len(ws), 64):
                lite.set_batch([(k, VALUE) for k in ws[i : i + 64]])
            return len(ws)

        return benchinfo.timed(go)

    def async_set_64() -> float:
        return awaited_sets_64(loop, ab, fresh(64 * args.groups))

    set_measures: dict[str, Callable[[], float]] = {
        "sqlite3 set, own transaction (1 in flight)": sqlite_set_1,
        "tinystore await set (1 in flight)": async_set_1,
        "sqlite3 sets batched 64 per transaction": sqlite_set_64,
        "tinystore await set (64 in flight)": async_set_64,
    }
    if dc is not None:

        def dc_set_1() -> float:
            ws = fresh(args.sets)
            return benchinfo.timed(lambda: [dc.set(k, VALUE) for k in ws] and len(ws))

        set_measures["diskcache set (1 in flight)"] = dc_set_1
    sets = benchinfo.run_rounds(args.rounds, set_measures)
    g1, w1 = astore._n.group_stats()
    print(f"# tinystore writer, whole run (seeding, 1 and 64 in flight): {w1} writes in {g1} commits")
    print(f"# Python {sys.version.split()[0]}, tinystore {tinystore.__version__}, sqlite3 {sqlite3.sqlite_version}, "
          f"diskcache {getattr(diskcache, '__version__', 'not installed')}; {args.rounds} rounds, medians")
    print(f"# files in {base}")
    print()
    print("| measure | ops/s | µs/op |")
    print("|---|---:|---:|")
    for name, v in {**gets, **sets}.items():
        print(f"| {name} | {v:,.0f} | {1e6 / v:,.1f} |")
    print()
    base_read = gets["sqlite3 point read"]
    ratios = [
        ("await get (1 in flight) time / sqlite3 point read time", base_read / gets["tinystore await get (1 in flight)"], "<= 2.0"),
        ("await get (64 in flight) time / sqlite3 point read time", base_read / gets["tinystore await get (64 in flight)"], "<= 2.0"),
        ("sync get time / sqlite3 point read time", base_read / gets["tinystore sync get"], "<= 1.5"),
    ]
    if dc is not None:
        ratios.append(("sync get time / diskcache get time", gets["diskcache get"] / gets["tinystore sync get"], "< 1.0"))
        ratios.append(("await get time / diskcache get time", gets["diskcache get"] / gets["tinystore await get (1 in flight)"], "< 1.0"))
    ratios.append((
        "await set (64 in flight) rate / sqlite3 batched 64 rate",
        sets["tinystore await set (64 in flight)"] / sets["sqlite3 sets batched 64 per transaction"],
        ">= 0.8",
    ))
    ratios.append((
        "await set (1 in flight) rate / sqlite3 own-transaction rate",
        sets["tinystore await set (1 in flight)"] / sets["sqlite3 set, own transaction (1 in flight)"],
        "",
    ))
    benchinfo.ratios(ratios)
    title = f"Python {sys.version.split()[0]}: gets and durable sets against sqlite3 and diskcache"
    benchinfo.save("python-bench", meta, {"gets_sets": {"title": title, "rows": {**gets, **sets}, "ratios": ratios}})
    loop.run_until_complete(astore.close())
    loop.close()
    sync_store.close()
    if dc is not None:
        dc.close()


if __name__ == "__main__":
    main()
