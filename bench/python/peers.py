"""TinyStore KV from Python against the peers that bench.py does not
measure: Redis (a local redis-server, durable with ``appendfsync always``
and with ``everysec``, through redis-py; and redis-benchmark as a reference
point), the ``limits`` package for rate limiting, and two questions of the
engine: how a get's cost grows from 10,000 to 1,000,000 keys, and the file
size per stored session. Run with ``make bench-peers`` (never in CI).

Every figure is the median of several rounds in which the contenders
alternate, reported as a ratio, under a header with the machine, the command
and the load average. Durability is stated per contender: TinyStore writes
return after an fsync (WAL, ``synchronous=FULL``); Redis ``always`` fsyncs
the AOF before answering a write, ``everysec`` once a second (a crash loses
up to a second of acknowledged writes); ``limits`` keeps its counters in
process memory only, as TinyStore's rate limits do between flushes.

    python peers.py                 # everything, full sizes
    python peers.py --short         # a quick check that it all runs
    python peers.py --only redis    # one section: redis, limits, curve, size
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
from typing import Any

import benchinfo
import tinystore

VALUE = os.urandom(100)
SECTIONS = ("redis", "limits", "curve", "size")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """A redis-server of our own on a free port, its AOF in ``base``."""

    def __init__(self, base: str, fsync: str) -> None:
        self.fsync = fsync
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix=f"redis-{fsync}-", dir=base)
        exe = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.proc = subprocess.Popen(
            [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir, "--appendonly", "yes",
             "--appendfsync", fsync, "--save", "", "--logfile", os.path.join(self.dir, "log")],
            stdout=subprocess.DEVNULL,
        )
        import redis

        self.client = redis.Redis(port=self.port)
        for _ in range(100):
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        self.version = str(self.client.info("server")["redis_version"])

    def aof_bytes(self) -> int:
        total = 0
        for root, _, files in os.walk(self.dir):
            total += sum(os.path.getsize(os.path.join(root, f)) for f in files if f != "log")
        return total

    def stop(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait(timeout=20)


# A GCRA rate limit in Redis, as a Lua script run atomically by the server:
# the theoretical arrival time of the next request is kept per key.
GCRA = """
local emission = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
if tat - now > tolerance then return 0 end
redis.call('SET', KEYS[1], tat + emission, 'PX', math.ceil((tat + emission - now) / 1000) + 1)
return 1
"""


def redis_benchmark(port: int, clients: int, n: int) -> float:
    """redis-benchmark's SET rate at ``clients`` connections, 100-byte values."""
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-c", str(clients), "-n", str(n), "-t", "set", "-d", "100",
         "-r", "1000000", "-q", "--csv"],
        check=True, capture_output=True, text=True,
    ).stdout
    for line in out.splitlines():
        cells = [c.strip('"') for c in line.split(",")]
        if cells and cells[0] == "SET":
            return float(cells[1])
    raise RuntimeError(f"redis-benchmark said: {out}")


def section_redis(args: argparse.Namespace, base: str) -> dict[str, Any]:
    import redis.asyncio

    servers = {f: RedisServer(base, f) for f in ("always", "everysec")}
    try:
        ks = [f"user:{i:07}" for i in range(args.keys)]
        rnd = random.Random(7)
        reads = [rnd.choice(ks) for _ in range(args.reads)]
        store = tinystore.sync.open(os.path.join(base, "ts-redis"))
        sb = store.bucket("bench", bytes)
        for i in range(0, len(ks), 5000):
            with store.tx() as tx:
                tb = tx.bucket(sb)
                for k in ks[i : i + 5000]:
                    tb.set(k, VALUE)
        loop = asyncio.new_event_loop()
        astore = loop.run_until_complete(tinystore.open(os.path.join(base, "ts-redis")))
        ab = astore.bucket("bench", bytes)
        for srv in servers.values():
            pipe = srv.client.pipeline(transaction=False)
            for i, k in enumerate(ks):
                pipe.set(k, VALUE)
                if i % 5000 == 4999:
                    pipe.execute()
            pipe.execute()
        r = servers["everysec"].client
        aclients = {f: redis.asyncio.Redis(port=s.port, max_connections=64) for f, s in servers.items()}
        counter = [0]

        def fresh(n: int) -> list[str]:
            counter[0] += 1
            return [f"w{counter[0]}:{i}" for i in range(n)]

        def sets_64(put: Any, n: int) -> float:
            ws = fresh(n)

            async def go() -> int:
                async def writer(mine: list[str]) -> None:
                    for k in mine:
                        await put(k, VALUE)

                await asyncio.gather(*(writer(ws[w::64]) for w in range(64)))
                return len(ws)

            return benchinfo.timed(lambda: loop.run_until_complete(go()))

        def sets_1(put: Any, n: int) -> float:
            ws = fresh(n)

            async def go() -> int:
                for k in ws:
                    await put(k, VALUE)
                return len(ws)

            return benchinfo.timed(lambda: loop.run_until_complete(go()))

        rl = store.rate_limit("gcra", rate="1000000/s")
        script = r.register_script(GCRA)
        hot_reads = args.reads // 2

        measures = {
            "tinystore sync get": lambda: benchinfo.timed(lambda: sum(1 for k in reads if sb.get(k) is not None)),
            "redis-py get (loopback)": lambda: benchinfo.timed(lambda: sum(1 for k in reads if r.get(k) is not None)),
            "tinystore await set, 1 in flight": lambda: sets_1(ab.set, args.sets),
            "redis always, await set, 1 in flight": lambda: sets_1(aclients["always"].set, args.sets),
            "redis everysec, await set, 1 in flight": lambda: sets_1(aclients["everysec"].set, args.sets),
            "tinystore await set, 64 in flight": lambda: sets_64(ab.set, 64 * args.groups),
            "redis always, await set, 64 connections": lambda: sets_64(aclients["always"].set, 64 * args.groups),
            "redis everysec, await set, 64 connections": lambda: sets_64(aclients["everysec"].set, 64 * args.groups),
            "redis-benchmark SET, always, 64 connections": lambda: redis_benchmark(
                servers["always"].port, 64, 64 * args.groups * 4),
            "redis-benchmark SET, everysec, 64 connections": lambda: redis_benchmark(
                servers["everysec"].port, 64, 64 * args.groups * 4),
            "tinystore rate limit allow, one hot key": lambda: benchinfo.timed(
                lambda: sum(1 for _ in range(hot_reads) if rl.allow("hot").ok)),
            "redis GCRA script, one hot key": lambda: benchinfo.timed(
                lambda: sum(1 for _ in range(hot_reads) if script(keys=["gcra:hot"], args=[1, 1_000_000_000_000]))),
        }
        rows = benchinfo.run_rounds(args.rounds, measures)
        version = servers["always"].version
        for c in aclients.values():
            loop.run_until_complete(c.aclose())
        loop.run_until_complete(astore.close())
        loop.close()
        store.close()
    finally:
        for s in servers.values():
            s.stop()
    ratios = [
        ("sync get rate / redis-py get rate", rows["tinystore sync get"] / rows["redis-py get (loopback)"], "> 1 (ahead)"),
        ("sets 64 in flight / redis-benchmark always at 64 connections",
         rows["tinystore await set, 64 in flight"] / rows["redis-benchmark SET, always, 64 connections"], "> 1 (ahead)"),
        ("sets 64 in flight / redis-py always at 64 connections",
         rows["tinystore await set, 64 in flight"] / rows["redis always, await set, 64 connections"], "> 1"),
        ("sets 64 in flight / redis-py everysec at 64 connections (unequal durability)",
         rows["tinystore await set, 64 in flight"] / rows["redis everysec, await set, 64 connections"], "for reference"),
        ("set 1 in flight / redis always 1 in flight",
         rows["tinystore await set, 1 in flight"] / rows["redis always, await set, 1 in flight"], ""),
        ("rate limit allow / redis GCRA script", rows["tinystore rate limit allow, one hot key"]
         / rows["redis GCRA script, one hot key"], ">= 10"),
    ]
    return {"title": f"Redis {version} (AOF always and everysec) over loopback, {args.keys:,} keys",
            "rows": rows, "ratios": ratios}


def section_limits(args: argparse.Namespace, base: str) -> dict[str, Any]:
    import limits
    from limits import storage, strategies

    store = tinystore.sync.open(os.path.join(base, "ts-limits"))
    ours = store.rate_limit("api", rate="1000000/s")
    item = limits.parse("1000000/second")
    peers = {
        "fixed window": strategies.FixedWindowRateLimiter(storage.MemoryStorage()),
        "moving window": strategies.MovingWindowRateLimiter(storage.MemoryStorage()),
    }
    if hasattr(strategies, "SlidingWindowCounterRateLimiter"):
        peers["sliding window counter"] = strategies.SlidingWindowCounterRateLimiter(storage.MemoryStorage())
    rnd = random.Random(3)
    many = [f"ip:{rnd.randrange(args.limit_keys)}" for _ in range(args.reads)]
    hot = ["ip:hot"] * args.reads

    def ours_on(keys: list[str]) -> float:
        return benchinfo.timed(lambda: sum(1 for k in keys if ours.allow(k).ok))

    def peer_on(lim: Any, keys: list[str]) -> float:
        return benchinfo.timed(lambda: sum(1 for k in keys if lim.hit(item, k)))

    measures = {"tinystore allow, one hot key": lambda: ours_on(hot),
                f"tinystore allow, {args.limit_keys:,} keys": lambda: ours_on(many)}
    for name, lim in peers.items():
        # The moving window keeps a timestamp per request: on one hot key at
        # this rate it grows without bound, so it runs on the many keys only.
        if name != "moving window":
            measures[f"limits {name}, one hot key"] = lambda lim=lim: peer_on(lim, hot)
        measures[f"limits {name}, {args.limit_keys:,} keys"] = lambda lim=lim: peer_on(lim, many)
    rows = benchinfo.run_rounds(args.rounds, measures)
    store.close()
    best_hot = max(v for k, v in rows.items() if k.startswith("limits") and "hot" in k)
    best_many = max(v for k, v in rows.items() if k.startswith("limits") and "hot" not in k)
    ratios = [
        ("allow, hot key / fastest limits strategy", rows["tinystore allow, one hot key"] / best_hot, "> 1 (ahead)"),
        (f"allow, {args.limit_keys:,} keys / fastest limits strategy",
         rows[f"tinystore allow, {args.limit_keys:,} keys"] / best_many, "> 1 (ahead)"),
    ]
    return {"title": f"limits {getattr(limits, '__version__', '?')} in memory", "rows": rows, "ratios": ratios}


def section_curve(args: argparse.Namespace, base: str) -> dict[str, Any]:
    """A random point get over small and large stores: does its cost grow?"""
    sizes = [int(x) for x in args.curve.split(",")]
    rows: dict[str, float] = {}
    measures = {}
    opened = []
    for n in sizes:
        ks = [hashlib.sha256(str(i).encode()).hexdigest()[:24] for i in range(n)]
        d = os.path.join(base, f"curve-{n}")
        s = tinystore.sync.open(d)
        b = s.bucket("bench", bytes)
        for i in range(0, n, 10_000):
            with s.tx() as tx:
                tb = tx.bucket(b)
                for k in ks[i : i + 10_000]:
                    tb.set(k, VALUE)
        lite = sqlite3.connect(os.path.join(d, "plain.db"), isolation_level=None)
        lite.execute("PRAGMA journal_mode=WAL")
        lite.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID")
        lite.execute("BEGIN")
        lite.executemany("INSERT INTO kv VALUES (?, ?)", ((k, VALUE) for k in ks))
        lite.execute("COMMIT")
        rnd = random.Random(n)
        reads = [rnd.choice(ks) for _ in range(args.reads)]
        misses = [k + "x" for k in reads[: args.reads // 2]]
        opened.append((s, lite))

        def get(reads: list[str] = reads, g: Any = b.get) -> float:
            return benchinfo.timed(lambda: sum(1 for k in reads if g(k) is not None or True))

        def plain(reads: list[str] = reads, c: sqlite3.Connection = lite) -> float:
            q = "SELECT v FROM kv WHERE k = ?"
            return benchinfo.timed(lambda: sum(1 for k in reads if c.execute(q, (k,)).fetchone() is not None or True))

        measures[f"tinystore get hit, {n:,} keys"] = get
        measures[f"tinystore get miss, {n:,} keys"] = lambda m=misses, g=b.get: benchinfo.timed(
            lambda: sum(1 for k in m if g(k) is None))
        measures[f"sqlite3 point read, {n:,} keys"] = plain
    rows = benchinfo.run_rounds(args.rounds, measures)
    for s, lite in opened:
        s.close()
        lite.close()
    small, large = sizes[0], sizes[-1]
    ratios = [
        (f"tinystore get time, {large:,} / {small:,} keys",
         rows[f"tinystore get hit, {small:,} keys"] / rows[f"tinystore get hit, {large:,} keys"], "<= 1.5"),
        (f"tinystore miss time, {large:,} / {small:,} keys",
         rows[f"tinystore get miss, {small:,} keys"] / rows[f"tinystore get miss, {large:,} keys"], "<= 1.5"),
        (f"sqlite3 read time, {large:,} / {small:,} keys (the floor)",
         rows[f"sqlite3 point read, {small:,} keys"] / rows[f"sqlite3 point read, {large:,} keys"], ""),
    ]
    return {"title": f"the cost of a get from {small:,} to {large:,} keys (sync API)", "rows": rows, "ratios": ratios}


@dataclasses.dataclass
class Session:
    """A session's value, as the example chat keeps it."""

    user_id: int
    device: str


def dir_bytes(d: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def section_size(args: argparse.Namespace, base: str) -> dict[str, Any]:
    """Bytes on disk per stored session, each written as the example chat writes it:
    under the user, keyed by the 32-byte digest of the token, idle 30 days."""
    n = args.sessions
    tokens = [(i % (n // 3 + 1), hashlib.sha256(f"token{i}".encode()).digest()) for i in range(n)]
    d = os.path.join(base, "size-ts")
    s = tinystore.sync.open(d)
    sessions = s.bucket("sessions", Session, idle="30d")
    for i in range(0, n, 5000):
        with s.tx() as tx:
            for user, digest in tokens[i : i + 5000]:
                tx.bucket(sessions.under(user)).set(digest, Session(user_id=user, device="web"))
    s.close()  # checkpoints the WAL into kv.db
    ours = dir_bytes(d)
    lite_path = os.path.join(base, "size-plain.db")
    lite = sqlite3.connect(lite_path, isolation_level=None)
    lite.execute("PRAGMA journal_mode=WAL")
    lite.execute("CREATE TABLE sessions (user INTEGER, token BLOB, v TEXT, expires INTEGER, "
                 "PRIMARY KEY (user, token)) WITHOUT ROWID")
    lite.execute("BEGIN")
    lite.executemany("INSERT INTO sessions VALUES (?, ?, ?, ?)",
                     ((u, t, f'{{"user_id": {u}, "device": "web"}}', 1_800_000_000_000) for u, t in tokens))
    lite.execute("COMMIT")
    lite.close()
    rows = {"tinystore kv.db": ours / n, "sqlite3 table by hand (WITHOUT ROWID)": os.path.getsize(lite_path) / n}
    if shutil.which("redis-server"):
        srv = RedisServer(base, "everysec")
        try:
            before = int(srv.client.info("memory")["used_memory"])
            pipe = srv.client.pipeline(transaction=False)
            for i, (u, t) in enumerate(tokens):
                pipe.set(f"sessions:{u}:".encode() + t, f'{{"user_id": {u}, "device": "web"}}', ex=30 * 86400)
                if i % 5000 == 4999:
                    pipe.execute()
            pipe.execute()
            srv.client.bgrewriteaof()
            time.sleep(1)
            for _ in range(100):
                if int(srv.client.info("persistence")["aof_rewrite_in_progress"]) == 0:
                    break
                time.sleep(0.1)
            rows["redis memory (used_memory)"] = (int(srv.client.info("memory")["used_memory"]) - before) / n
            rows["redis AOF on disk, rewritten"] = srv.aof_bytes() / n
        finally:
            srv.stop()
    ratios = [("tinystore / sqlite3 by hand, bytes per session",
               rows["tinystore kv.db"] / rows["sqlite3 table by hand (WITHOUT ROWID)"], "")]
    return {"title": f"bytes per stored session ({n:,} sessions of {n // 3 + 1:,} users)", "rows": rows,
            "ratios": ratios, "unit": "bytes/session"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--short", action="store_true", help="small sizes and 3 rounds: checks that it runs")
    ap.add_argument("--only", choices=SECTIONS, action="append", help="run only these sections")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--keys", type=int, default=100_000, help="keys for the Redis gets")
    ap.add_argument("--reads", type=int, default=20_000, help="calls per round of a read or allow")
    ap.add_argument("--sets", type=int, default=300, help="sets 1 in flight per round")
    ap.add_argument("--groups", type=int, default=300, help="groups of 64 sets per round (as bench.py)")
    ap.add_argument("--limit-keys", type=int, default=100_000)
    ap.add_argument("--curve", default="10000,1000000", help="store sizes for the get curve")
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--dir", default=None, help="where the files go (a real disk: fsync must cost)")
    args = ap.parse_args()
    if args.short:
        args.rounds, args.keys, args.reads, args.sets, args.groups = 3, 10_000, 3_000, 50, 5
        args.limit_keys, args.curve, args.sessions = 10_000, "10000,100000", 10_000
    meta = benchinfo.machine()
    meta["sqlite3"] = sqlite3.sqlite_version
    meta["tinystore"] = tinystore.__version__
    benchinfo.header("Python peers: Redis, limits, the get curve, bytes per session", meta)
    base = tempfile.mkdtemp(prefix="tinystore-peers-", dir=args.dir or os.path.dirname(os.path.abspath(__file__)))
    results: dict[str, Any] = {}
    try:
        for name in args.only or SECTIONS:
            if name in ("redis",) and not shutil.which("redis-server"):
                print(f"\n## {name}: skipped, redis-server is not installed (make bench-peers installs it)")
                continue
            sec = globals()[f"section_{name}"](args, base)
            results[name] = sec
            how = "one run, sizes are not noisy" if "unit" in sec else f"{args.rounds} alternating rounds, medians"
            print(f"\n## {sec['title']}: {how}")
            benchinfo.table(sec["rows"], sec.get("unit", "ops/s"))
            print()
            benchinfo.ratios(sec["ratios"])
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print()
    benchinfo.save("python-peers" + ("-short" if args.short else ""), meta, results, merge=bool(args.only))


if __name__ == "__main__":
    main()
