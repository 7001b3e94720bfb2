"""A write awaited alone from asyncio (KV-4, KV-15), as a request handler
makes one: answered, it is durable and every other process sees it, each
in a commit of its own; waiting for another process's write lock, it never
makes the loop wait with it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import tinystore
from conftest import START
from test_writes import lock_held

READ_BACK = """
import sys, tinystore.sync
with tinystore.sync.open(sys.argv[1]) as s:
    print(s.bucket("b", {"str": str, "int": int}[sys.argv[3]]).get(sys.argv[2]))
"""


def read_in_another_process(dir: Path, key: str, kind: type = str) -> str:
    """What another process reads of ``key`` in bucket ``b`` of ``kind``."""
    args = [sys.executable, "-c", READ_BACK, str(dir), key, kind.__name__]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


async def test_kv04_a_lone_awaited_write_is_seen_by_another_process_once_answered(tmp_path: Path) -> None:
    store = await tinystore.open(tmp_path, clock=START)
    b = store.bucket("b", str)
    groups, writes = store._n.group_stats()
    for i in range(5):
        await b.set(f"k{i}", f"v{i}")
    # Each write awaited alone is a group of its own: nothing waited for it.
    assert store._n.group_stats() == (groups + 5, writes + 5)
    # While this store stays open, with no write of its since the answer.
    assert read_in_another_process(tmp_path, "k4") == "v4"
    assert await b.take("k4") == "v4"
    assert read_in_another_process(tmp_path, "k4") == "None"
    await store.close()


async def test_kv15_a_lone_write_never_makes_the_loop_wait_for_another_process(
    store: tinystore.Store, tmp_path: Path
) -> None:
    b = store.bucket("b", int)
    await b.set("warm", 0)
    with lock_held(tmp_path / "data"):  # the fixture's store
        write = asyncio.ensure_future(b.set("k", 1))
        # The loop keeps turning, and reading, while the write waits for the
        # lock: a loop stuck on the lock would have given up on the write
        # (the busy timeout) before these turns ran, since only this task
        # lets the other process go.
        for _ in range(100):
            await asyncio.sleep(0)
        assert await b.get("warm") == 0
        assert not write.done()
    assert isinstance(await write, str)
    assert await b.get("k") == 1
    # And the next lone write commits as ever.
    await b.set("after", 2)
    assert read_in_another_process(tmp_path / "data", "after", int) == "2"
