"""Durable overwrites of keys that exist, in a bucket with a ttl: what a store
of sessions writes, from asyncio with 64 writes in flight.

100,000 keys are present; each run overwrites 6,400 random ones of them with
new 100-byte values, against sqlite3 upserting the same writes 64 a
transaction by hand into a table with the same expiry column and the index
a sweep of expired rows needs, keeping a live row's expiry as TinyStore
does, and against ``redis-benchmark`` SET with ``appendfsync always`` and 64
connections when ``redis-server`` is on the PATH. Every file is opened again
before each run; the runs alternate, and the report gives the ratio of the
medians (``bench/src/bin/overwrites.rs`` is the same measure in Rust).

    python overwrites.py              # 7 rounds
    python overwrites.py --rounds 11
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import socket
import sqlite3
import statistics
import subprocess
import tempfile
import time

import benchinfo
import tinystore

KEYS = 100_000
WRITES = 6_400
DEPTH = 64
TTL = "30d"
TTL_MS = 30 * 86_400_000


def key(n: int) -> str:
    return f"session:{n:08}"


def value(run: int, n: int) -> bytes:
    """New bytes every write: SQLite skips a page whose row is rewritten byte for byte."""
    return f"{run:016x}{n:016x}".encode().ljust(100, b".")


def picks(run: int) -> list[int]:
    """The random keys of run `run`, the same for every contender."""
    out, x = [], (run * 0x9E3779B97F4A7C15) | 1
    for _ in range(WRITES):
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        out.append(x % KEYS)
    return out


def raw_open(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL, expires INTEGER) WITHOUT ROWID")
    db.execute("CREATE INDEX IF NOT EXISTS kv_expiry ON kv (expires) WHERE expires IS NOT NULL")
    return db


UPSERT = (
    "INSERT INTO kv (k, v, expires) VALUES (?, ?, ?) "
    "ON CONFLICT (k) DO UPDATE SET v = excluded.v, "
    "expires = CASE WHEN kv.expires > ?4 THEN kv.expires ELSE excluded.expires END"
)


def raw_fill(path: str) -> None:
    db = raw_open(path)
    now = int(time.time() * 1000)
    db.execute("BEGIN")
    db.executemany(UPSERT, [(key(n).encode(), value(0, n), now + TTL_MS, now) for n in range(KEYS)])
    db.execute("COMMIT")
    db.close()


def raw_run(path: str, run: int) -> float:
    """The peer: 64 upserts a transaction, one fsync each."""
    db = raw_open(path)
    ks = picks(run)
    t = time.perf_counter()
    for i in range(0, WRITES, DEPTH):
        now = int(time.time() * 1000)
        db.execute("BEGIN IMMEDIATE")
        db.executemany(
            UPSERT, [(key(k).encode(), value(run, i + j), now + TTL_MS, now) for j, k in enumerate(ks[i : i + DEPTH])]
        )
        db.execute("COMMIT")
    took = time.perf_counter() - t
    db.close()
    return WRITES / took


async def ours_fill(path: str) -> None:
    async with tinystore.open(path) as store:
        b = store.bucket("sessions", bytes, ttl=TTL)
        for i in range(0, KEYS, 1024):
            await asyncio.gather(*(b.set(key(n), value(0, n)) for n in range(i, min(KEYS, i + 1024))))


async def ours_run(path: str, run: int) -> float:
    """TinyStore: 64 coroutines, each overwriting its share in turn."""
    async with tinystore.open(path) as store:
        b = store.bucket("sessions", bytes, ttl=TTL)
        ks = picks(run)

        async def writer(w: int) -> None:
            for i in range(w, WRITES, DEPTH):
                await b.set(key(ks[i]), value(run, i))

        t = time.perf_counter()
        await asyncio.gather(*(writer(w) for w in range(DEPTH)))
        return WRITES / (time.perf_counter() - t)


class Redis:
    """redis-server with appendfsync always, on a free loopback port."""

    def __init__(self, base: str) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.dir = os.path.join(base, "redis")
        os.mkdir(self.dir)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
             "--appendonly", "yes", "--appendfsync", "always", "--save", ""],
            stdout=subprocess.DEVNULL,
        )
        for _ in range(200):
            if self._cli("PING") == "PONG":
                break
            time.sleep(0.05)  # the server is starting: there is no event to wait on
        self.bench(KEYS)  # most of the 100,000 keys are there before the first run

    def _cli(self, *args: str) -> str:
        p = subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True)
        return p.stdout.strip()

    def bench(self, n: int) -> float:
        """SET of random keys among 100,000, 64 connections, 100-byte values."""
        args = ["redis-benchmark", "-p", str(self.port), "-t", "set", "-n", str(n), "-c", str(DEPTH), "-d", "100",
                "-r", str(KEYS), "-q"]
        out = subprocess.run(args, capture_output=True, text=True).stdout
        m = re.search(r"SET: ([\d.]+) requests per second", out)
        if m is None:
            raise RuntimeError(f"redis-benchmark said: {out!r}")
        return float(m.group(1))

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    meta = benchinfo.machine()
    benchinfo.header("Python: overwrites with a ttl, 64 in flight, against sqlite3 and Redis", meta)
    base = tempfile.mkdtemp(prefix="tinystore-overwrites-")
    redis = Redis(base) if shutil.which("redis-server") and shutil.which("redis-benchmark") else None
    try:
        ts_dir, raw_path = os.path.join(base, "ts"), os.path.join(base, "raw.db")
        asyncio.run(ours_fill(ts_dir))
        raw_fill(raw_path)
        runs = iter(range(1, 1_000_000))
        measures = {
            "tinystore": lambda: asyncio.run(ours_run(ts_dir, next(runs))),
            "sqlite3 by hand": lambda: raw_run(raw_path, next(runs)),
        }
        if redis:
            measures["redis always"] = lambda: redis.bench(WRITES)
        medians = benchinfo.run_rounds(args.rounds, measures)
        for name, m in medians.items():
            print(f"{name:16} median {m:9.0f} overwrites/s")
        print(f"ratio tinystore / sqlite3 by hand: {medians['tinystore'] / medians['sqlite3 by hand']:.2f}")
        if redis:
            print(f"ratio tinystore / redis always: {medians['tinystore'] / medians['redis always']:.2f}")
        else:
            print("redis: left out (no redis-server and redis-benchmark on the PATH)")
    finally:
        if redis:
            redis.close()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
