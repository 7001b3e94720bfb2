"""KV-16: an exception in the user's code inside a transaction, a run of
``once``, a codec or a completion rolls back what it was part of, goes on to
the caller, and leaves the store writing, for this process and another."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tinystore


class Boom(Exception):
    pass


class BoomCodec:
    """Encodes by raising; decodes the bytes as text."""

    def encode(self, value: str) -> bytes:
        raise Boom("encode")

    def decode(self, data: bytes) -> str:
        raise Boom("decode")


def another_process_writes(directory: Path) -> None:
    """A second process opens the store, writes and exits; it would fail with
    ``database is locked`` if this process still held the write lock."""
    script = textwrap.dedent(
        """
        import sys
        import tinystore
        with tinystore.sync.open(sys.argv[1]) as s:
            s.bucket("from-child", int).set("k", 7)
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(directory)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


async def still_writes(store: tinystore.Store, directory: Path) -> None:
    after = store.bucket("after", int)
    await after.set("plain", 3)
    async with store.tx() as tx:
        await tx.bucket(after).set("in-tx", 4)
    assert (await after.get("plain"), await after.get("in-tx")) == (3, 4)
    another_process_writes(directory)
    assert await store.bucket("from-child", int).get("k") == 7


async def test_kv16_an_exception_in_tx_rolls_back_and_the_store_keeps_writing(
    store: tinystore.Store, tmp_path: Path
) -> None:
    b = store.bucket("b", int)
    await b.set("kept", 1)
    with pytest.raises(Boom):
        async with store.tx() as tx:
            await tx.bucket(b).set("inside", 2)
            await tx.bucket(b).delete("kept")
            raise Boom()
    assert await b.get("inside") is None
    assert await b.get("kept") == 1
    await still_writes(store, tmp_path / "data")


def test_kv16_an_exception_in_a_sync_tx_rolls_back_and_the_store_keeps_writing(
    sync_store: tinystore.sync.Store, tmp_path: Path
) -> None:
    b = sync_store.bucket("b", int)
    with pytest.raises(Boom):
        with sync_store.tx() as tx:
            tx.bucket(b).set("inside", 2)
            raise Boom()
    assert b.get("inside") is None
    b.set("after", 3)
    with sync_store.tx() as tx:
        tx.bucket(b).set("in-tx", 4)
    assert (b.get("after"), b.get("in-tx")) == (3, 4)
    another_process_writes(tmp_path / "data")


async def test_kv16_an_exception_in_once_run_keeps_nothing_and_the_store_keeps_writing(
    store: tinystore.Store, tmp_path: Path
) -> None:
    sends = store.once("sends", str)

    def fails() -> str:
        raise Boom()

    with pytest.raises(Boom):
        await sends.run("m-1", fails)
    assert await sends.get("m-1") is None
    assert await sends.run("m-1", lambda: "sent") == "sent"
    await still_writes(store, tmp_path / "data")


async def test_kv16_a_raising_codec_inside_tx_rolls_back_and_the_store_keeps_writing(
    store: tinystore.Store, tmp_path: Path
) -> None:
    plain = store.bucket("plain", int)
    coded = store.bucket("coded", str, codec=BoomCodec())
    with pytest.raises(tinystore.InvalidError):
        async with store.tx() as tx:
            await tx.bucket(plain).set("inside", 1)
            await tx.bucket(coded).set("k", "v")
    assert await plain.get("inside") is None
    await still_writes(store, tmp_path / "data")


async def test_kv16_a_raising_completion_leaves_the_store_writing(store: tinystore.Store, tmp_path: Path) -> None:
    b = store.bucket("b", int)
    ran = asyncio.Event()

    def raising(_: asyncio.Future[str]) -> None:
        ran.set()
        raise Boom("completion")

    write = asyncio.ensure_future(b.set("k", 1))
    write.add_done_callback(raising)
    await write
    await ran.wait()
    assert await b.get("k") == 1
    await still_writes(store, tmp_path / "data")
