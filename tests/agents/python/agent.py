"""The Python agent of the cross-language tests, over the public asyncio API
of ``tinystore``. Commands and what they print are in
``tests/interchange/README.md`` and ``tests/processes/README.md``; the Rust
agent (``tests/agents/rust``) is the reference.

    python agent.py COMMAND DIR [ARGS...]
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import struct
import sys
from pathlib import Path
from typing import Any

import tinystore

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "conformance" / "python"))

from case_values import bucket_type, same_value, short, text, value  # noqa: E402

import handbook  # noqa: E402  (beside this file)
import limits  # noqa: E402  (beside this file)

FIXTURE = ROOT / "tests" / "interchange" / "values.json"


def say(line: str) -> None:
    """One line of output, flushed at once: the driver reads lines while the agent runs."""
    print(line, flush=True)


def fixture() -> list[dict[str, Any]]:
    return json.loads(FIXTURE.read_text())


def bucket(store: tinystore.Store, ty: str, owner: str) -> tinystore.Bucket[Any]:
    """The bucket ``ix-<type>`` under ``owner``.

    The package has no uint64 type, so ``ix-uint64`` is a bytes bucket and
    the agent writes and reads the eight big-endian bytes a uint64 row holds
    (the core's ``Raw::uint64``).
    """
    tp = bytes if ty == "uint64" else bucket_type(ty)
    return store.bucket(f"ix-{ty}", tp).under(owner)


def to_python(ty: str, v: Any) -> Any:
    """An item's value as the agent's bucket of that type keeps it."""
    if ty == "uint64":
        return struct.pack(">Q", value(ty, v))
    return value(ty, v)


def same(ty: str, expected: Any, got: Any) -> bool:
    if ty == "uint64":
        return isinstance(got, bytes) and len(got) == 8 and struct.unpack(">Q", got)[0] == value(ty, expected)
    return same_value(ty, expected, got)


async def start_line() -> None:
    """Waits for the start time cross.py gives every racer (CROSS_START_AT_MS),
    so that agents of slow-starting languages race too."""
    at = int(os.environ.get("CROSS_START_AT_MS", "0"))
    if at:
        await asyncio.sleep(max(0.0, at / 1000 - time.time()))


async def ix_write(store: tinystore.Store, owner: str) -> bool:
    for item in fixture():
        ty = item["type"]
        await bucket(store, ty, owner).set(text(item["key"]), to_python(ty, item["value"]))
    say("ok")
    return True


def expected(item: dict[str, Any], owner: str) -> Any:
    """What the writer of ``owner``'s branch wrote for an item. JS numbers carry no
    NaN payload, so the JS agents (``node``, ``bun``) write a NaN marked
    ``"js": "NaN"`` as JS's own NaN, 7ff8000000000000 (tests/conformance/README.md)."""
    v = item["value"]
    if owner in ("node", "bun") and isinstance(v, dict) and v.get("js") == "NaN":
        return {"bits": "7ff8000000000000"}
    return v


async def ix_read(store: tinystore.Store, owner: str) -> bool:
    items = fixture()
    bad = 0
    for item in items:
        ty, key = item["type"], text(item["key"])
        e = await bucket(store, ty, owner).entry(key)
        if e is None or not same(ty, expected(item, owner), e.value):
            bad += 1
            say(f"MISMATCH {owner} {ty} {key!r}: got {None if e is None else short(e.value)}")
    types = list(dict.fromkeys(i["type"] for i in items))
    for ty in types:
        want = sorted(text(i["key"]).encode() for i in items if i["type"] == ty)
        page = await bucket(store, ty, owner).list(limit=1000)
        got = [k if isinstance(k, bytes) else k.encode() for k in (e.key for e in page.entries)]
        if got != want:
            bad += 1
            say(f"MISMATCH {owner} {ty} list order: got {got!r}, want {want!r}")
    if bad == 0:
        say(f"ok {len(items)}")
    return bad == 0


async def once_run(store: tinystore.Store, key: str, hold_ms: int, answer: str, hang: bool) -> bool:
    once = store.once("race-once", str, keep="1d")

    async def work() -> str:
        if hang:
            say("running")
            while True:
                await asyncio.sleep(3600)
        say("ran")
        await asyncio.sleep(hold_ms / 1000)
        return answer

    got = await once.run(key, work)
    say(f"answer {got}")
    return True


async def ix_raw_copy(src: tinystore.Store, dst_dir: str, owner: str) -> bool:
    """Copies OWNER's interchange rows from ``src`` to the store in ``dst_dir``
    through raw buckets, as they are (see the Rust agent's raw_copy.rs)."""
    n = nulls = ints = blobs = empty = size = 0
    async with tinystore.open(dst_dir) as dst:
        for ty in sorted({item["type"] for item in fixture()}):
            to = dst.bucket(f"ix-{ty}", tinystore.Raw).under(owner)
            async for e in src.bucket(f"ix-{ty}", tinystore.Raw).under(owner).all():
                if e.value is None:
                    nulls += 1
                elif isinstance(e.value, int):
                    ints += 1
                else:
                    blobs += 1
                    empty += e.value == b""
                    size += len(e.value)
                await to.set(e.key, e.value)
                n += 1
    say(f"copied {n} null={nulls} int={ints} bytes={blobs} empty={empty} size={size}")
    return True


async def run(args: list[str]) -> bool:
    cmd = args[0] if args else ""
    dir = args[1] if len(args) > 1 else "data"

    def arg(i: int) -> str:
        return args[i] if len(args) > i else ""

    def num(i: int) -> int:
        return int(arg(i)) if arg(i).isdigit() else 0

    async with tinystore.open(dir) as store:
        if cmd in limits.COMMANDS:
            return await limits.run(store, cmd, arg, say, start_line)
        if cmd == "ix-write":
            return await ix_write(store, arg(2))
        if cmd == "ix-read":
            return await ix_read(store, arg(2))
        if cmd in ("hb-write", "hb-read", "hb-take"):
            run_hb = {"hb-write": handbook.write, "hb-read": handbook.read, "hb-take": handbook.take}[cmd]
            return await run_hb(store, arg(2), int(arg(3)))
        if cmd == "ix-raw-copy":
            return await ix_raw_copy(store, arg(2), arg(3))
        if cmd == "clear-writes":
            b = store.bucket("race-clear", str).under("b")
            await start_line()
            end = time.time() + num(3) / 1000
            i = 0
            while time.time() < end:
                key = f"{arg(2)}{i}"
                t0 = int(time.time() * 1000)
                await b.set(key, "new")
                say(f"wrote {key} {t0} {int(time.time() * 1000)}")
                i += 1
            say("done")
            return True
        if cmd == "take-setup":
            b = store.bucket("race-take", str)
            for r in range(num(2)):
                await b.set(f"r{r}", "prize")
            say("ready")
            return True
        if cmd == "take-rounds":
            b = store.bucket("race-take", str)
            await start_line()
            for r in range(num(2)):
                if await b.take(f"r{r}") is not None:
                    say(f"won {r}")
            return True
        if cmd in ("once-run", "once-hang"):
            return await once_run(store, arg(2), num(3), arg(4), cmd == "once-hang")
        if cmd == "quota-allows":
            q = store.quota("race-quota", daily="10/1d")
            await start_line()
            passed = 0
            for _ in range(num(2)):
                passed += (await q.allow("u")).ok
            say(f"passed {passed}")
            return True
        if cmd == "counter-adds":
            c = store.counters("race-counter")
            await start_line()
            for _ in range(num(2)):
                await c.add("k", 1)
            say("done")
            return True
        if cmd == "counter-get":
            say(f"value {await store.counters('race-counter').get('k')}")
            return True
        print(f"python agent: unknown command {cmd!r}", file=sys.stderr)
        return False


def main() -> int:
    try:
        return 0 if asyncio.run(run(sys.argv[1:])) else 1
    except tinystore.Error as e:
        print(f"python agent: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
