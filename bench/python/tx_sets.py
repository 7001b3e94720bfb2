"""Sets inside one transaction: 6,400 sets of fresh keys in one ``tx`` of
the sync API, and of the asyncio API, against the same sets as single
``execute`` calls inside one ``BEGIN IMMEDIATE ... COMMIT`` of ``sqlite3``
(WAL, synchronous=FULL, 100-byte values). The contenders alternate round
by round; each figure is the median µs a set (the commit included), and the
ratio is TinyStore's time over sqlite3's.

    python tx_sets.py                 # 9 rounds
    python tx_sets.py --rounds 15
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import sqlite3
import time

import benchinfo
import tinystore
import tinystore.sync

SETS = 6_400
VALUE = os.urandom(100)
_fresh = itertools.count()


def fresh_keys() -> list[str]:
    """New keys for every round and contender, so each set inserts."""
    base = next(_fresh)
    return [f"k:{base:04}:{i:05}" for i in range(SETS)]


def per_set(fn: object) -> float:
    """µs a set of ``fn``, which writes SETS keys."""
    t = time.perf_counter()
    fn()  # type: ignore[operator]
    return (time.perf_counter() - t) * 1e6 / SETS


def main() -> None:
    benchinfo.run(benchinfo.parser(__doc__, rounds=9), "tinystore-txsets-", report)


def report(args: argparse.Namespace, base: str) -> None:
    meta = benchinfo.machine()
    benchinfo.header("Python: 6,400 sets in one transaction against sqlite3", meta)
    db = sqlite3.connect(os.path.join(base, "plain.db"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID")
    sync_store = tinystore.sync.open(os.path.join(base, "sync"))
    sync_bucket = sync_store.bucket("b", bytes)
    loop = asyncio.new_event_loop()

    async def open_async() -> tuple[tinystore.Store, tinystore.Bucket[bytes]]:
        s = await tinystore.open(os.path.join(base, "async"))
        return s, s.bucket("b", bytes)

    async_store, async_bucket = loop.run_until_complete(open_async())

    def plain() -> None:
        ks = fresh_keys()
        db.execute("BEGIN IMMEDIATE")
        for k in ks:
            db.execute("INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)", (k, VALUE))
        db.execute("COMMIT")

    def sync_tx() -> None:
        ks = fresh_keys()
        with sync_store.tx() as tx:
            b = tx.bucket(sync_bucket)
            for k in ks:
                b.set(k, VALUE)

    def async_tx() -> None:
        ks = fresh_keys()

        async def run() -> None:
            async with async_store.tx() as tx:
                b = tx.bucket(async_bucket)
                for k in ks:
                    await b.set(k, VALUE)

        loop.run_until_complete(run())

    rows = benchinfo.run_rounds(
        args.rounds,
        {
            "sqlite3, one transaction": lambda: per_set(plain),
            "tinystore sync tx": lambda: per_set(sync_tx),
            "tinystore asyncio tx": lambda: per_set(async_tx),
        },
    )
    benchinfo.table(rows, "µs a set")
    peer = rows["sqlite3, one transaction"]
    ratios = [
        ("sync tx set / sqlite3 set (time)", rows["tinystore sync tx"] / peer, ""),
        ("asyncio tx set / sqlite3 set (time)", rows["tinystore asyncio tx"] / peer, ""),
    ]
    benchinfo.ratios(ratios)
    benchinfo.save("python-tx-sets", meta, {"tx_sets": {"rows": rows, "ratios": ratios}})
    loop.run_until_complete(async_store.close())
    sync_store.close()


if __name__ == "__main__":
    main()
