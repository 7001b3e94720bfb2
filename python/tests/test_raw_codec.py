"""Raw buckets (KV-3: a row read as it keeps a value, whatever type wrote it,
and raw rows read back by the typed bucket) and a bucket's own codec (a value
it cannot decode is ``CorruptError`` and a take keeps it, KV-5)."""

from __future__ import annotations

import dataclasses
import math
import struct
import threading
from pathlib import Path
from typing import Any

import pytest

import tinystore
from tinystore import sync


@dataclasses.dataclass
class Session:
    user_id: int
    device: str


async def kv03_write_every_type(store: tinystore.Store) -> None:
    await store.bucket("text", str).set("a", "héllo")
    await store.bucket("text", str).set("empty", "")
    await store.bucket("blobs", bytes).set("a", b"\x00\xff")
    await store.bucket("ints", int).set("a", -7)
    await store.bucket("flags", bool).set("a", True)
    await store.bucket("floats", float).set("a", -0.0)
    await store.bucket("set", None).set("a", None)
    await store.bucket("sessions", Session).under(7).set("t", Session(7, "web"))


async def test_kv03_raw_reads_what_every_type_wrote(store: tinystore.Store) -> None:
    await kv03_write_every_type(store)

    def raw(name: str) -> tinystore.Bucket[tinystore.RawValue]:
        return store.bucket(name, tinystore.Raw)

    assert await raw("text").get("a") == "héllo".encode()
    # An empty string is empty bytes, not nothing.
    assert await raw("text").get("empty") == b""
    assert await raw("blobs").get("a") == b"\x00\xff"
    assert await raw("ints").get("a") == -7
    assert await raw("flags").get("a") == 1
    assert await raw("floats").get("a") == struct.pack(">d", -0.0)
    member = await raw("set").entry("a")
    assert member is not None and member.value is None
    assert await raw("set").entry("missing") is None
    assert await raw("sessions").under(7).get("t") == b'{"userId":7,"device":"web"}'
    page = await raw("text").list()
    assert [(e.key, e.value) for e in page.entries] == [("a", "héllo".encode()), ("empty", b"")]


async def test_kv03_raw_rows_read_back_by_the_typed_bucket(store: tinystore.Store) -> None:
    def raw(name: str) -> tinystore.Bucket[tinystore.RawValue]:
        return store.bucket(name, tinystore.Raw)

    await raw("ints").set("a", 42)
    await raw("text").set("a", b"hi")
    await raw("text").set("empty", b"")
    text_too: Any = raw("text")  # a str is written as its UTF-8 bytes, as a str bucket keeps it
    await text_too.set("str", "typed as text")
    await raw("flags").set("a", 0)
    await raw("floats").set("a", struct.pack(">d", math.inf))
    await raw("big").set("a", (2**64 - 2).to_bytes(8, "big"))
    await raw("set").set("a", None)
    await raw("sessions").set("s", b'{"user_id":1,"device":"cli"}')

    assert await store.bucket("ints", int).get("a") == 42
    text = store.bucket("text", str)
    assert await text.get("a") == "hi"
    assert await text.get("empty") == ""
    assert await text.get("str") == "typed as text"
    assert await store.bucket("flags", bool).get("a") is False
    assert await store.bucket("floats", float).get("a") == math.inf
    assert await store.bucket("set", None).has("a")
    assert await store.bucket("sessions", Session).get("s") == Session(1, "cli")
    # The bytes of a uint64 as other languages keep it: raw reads them back alike.
    assert await raw("big").take("a") == (2**64 - 2).to_bytes(8, "big")
    assert not await raw("big").has("a")
    # A raw row of another kind than the type's is Corrupt, naming the key.
    with pytest.raises(tinystore.CorruptError) as e:
        await store.bucket("text", int).get("a")
    assert (e.value.bucket, e.value.path) == ("text", "a")


async def test_kv18_raw_bucket_refuses_other_values(store: tinystore.Store) -> None:
    raw = store.bucket("r", tinystore.Raw)
    with pytest.raises(tinystore.InvalidError, match="float"):
        await raw.set("a", 1.5)  # type: ignore[arg-type]
    with pytest.raises(tinystore.InvalidError) as e:
        await raw.set("a", 2**64)
    assert e.value.message == f"the integer {2**64} is outside int64, the integers a row keeps"
    assert not await raw.has("a")


def test_kv03_raw_in_the_sync_api(sync_store: sync.Store) -> None:
    sync_store.bucket("codes", int).set("a", 5)
    raw = sync_store.bucket("codes", tinystore.Raw)
    assert raw.get("a") == 5
    raw.set("b", 6)
    assert sync_store.bucket("codes", int).get("b") == 6


class PointText:
    """Points kept as the text "x,y"."""

    def encode(self, p: tuple[int, int]) -> bytes:
        if p[0] < -1000:
            raise ValueError("x is out of range")
        return f"{p[0]},{p[1]}".encode()

    def decode(self, data: bytes) -> tuple[int, int]:
        if data == b"boom":
            raise RuntimeError("the codec broke")
        x, y = data.decode().split(",")
        return int(x), int(y)


async def test_codec_replaces_the_choice_by_type(store: tinystore.Store) -> None:
    points = store.bucket("points", tuple[int, int], codec=PointText())
    await points.under("map").set("home", (3, -4))
    assert await points.under("map").get("home") == (3, -4)
    raw = store.bucket("points", tinystore.Raw)
    assert await raw.under("map").get("home") == b"3,-4"
    with pytest.raises(tinystore.InvalidError, match="out of range") as e:
        await points.set("far", (-5000, 0))
    assert (e.value.bucket, e.value.path) == ("points", "far")
    assert not await raw.has("far")
    async with store.tx() as tx:
        assert await tx.bucket(points.under("map")).take("home") == (3, -4)
        await tx.bucket(points).set("work", (1, 2))
    assert await raw.get("work") == b"1,2"


async def test_kv05_codec_that_cannot_decode_is_corrupt_and_take_keeps_the_value(store: tinystore.Store) -> None:
    points = store.bucket("points", tuple[int, int], codec=PointText())
    raw = store.bucket("points", tinystore.Raw)
    await raw.under("u").set("bad", b"not a point")
    await raw.set("int", 5)
    await raw.set("boom", b"boom")

    with pytest.raises(tinystore.CorruptError) as e:
        await points.under("u").get("bad")
    assert (e.value.bucket, e.value.path) == ("points", "u/bad")
    with pytest.raises(tinystore.CorruptError) as e:
        await points.under("u").take("bad")
    assert (e.value.bucket, e.value.path) == ("points", "u/bad")
    assert await raw.under("u").get("bad") == b"not a point"
    with pytest.raises(tinystore.CorruptError):
        await points.take("int")
    assert await raw.get("int") == 5
    with pytest.raises(tinystore.CorruptError, match="the codec broke"):
        await points.take("boom")
    assert await raw.get("boom") == b"boom"
    # Inside a transaction as well, and the transaction still commits.
    async with store.tx() as tx:
        with pytest.raises(tinystore.CorruptError):
            await tx.bucket(points.under("u")).take("bad")
        await tx.bucket(points).set("ok", (0, 0))
    assert await raw.under("u").get("bad") == b"not a point"
    assert await points.get("ok") == (0, 0)


def test_kv05_codec_take_keeps_the_value_in_the_sync_api(sync_store: sync.Store) -> None:
    points = sync_store.bucket("points", tuple[int, int], codec=PointText())
    sync_store.bucket("points", tinystore.Raw).set("bad", b"nope")
    with pytest.raises(tinystore.CorruptError):
        points.take("bad")
    assert sync_store.bucket("points", tinystore.Raw).get("bad") == b"nope"
    points.set("p", (1, 1))
    assert points.take("p") == (1, 1)


def test_kv18_a_codec_without_encode_and_decode_is_invalid(sync_store: sync.Store) -> None:
    with pytest.raises(tinystore.InvalidError, match="codec") as e:
        sync_store.bucket("points", int, codec=object())  # type: ignore[call-overload]
    assert e.value.bucket == "points"


@pytest.mark.parametrize(
    "marker", ["<!-- raw example -->", "<!-- codec example -->", "<!-- claim example -->", "<!-- cancel example -->"]
)
def test_readme_examples_run(marker: str) -> None:
    """The Raw, Codecs, claim and cancel examples of the README run as written."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = readme.split(marker, 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    # Each example calls asyncio.run itself: run it in a thread with no loop.
    done: list[BaseException | None] = []

    def run() -> None:
        try:
            exec(compile(block, f"README.md {marker}", "exec"), {"__name__": "readme"})
            done.append(None)
        except BaseException as e:  # noqa: BLE001 - handed to the test below
            done.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join(60)
    assert done == [None], done
