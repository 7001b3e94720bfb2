"""Buckets through the asyncio API: KV-1 to KV-10 as a Python user relies on them."""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import struct

import pytest

import tinystore
from conftest import START


async def kv01_int_and_text_are_one_key(store: tinystore.Store) -> None:
    b = store.bucket("b", str)
    await b.set(42, "x")
    assert await b.get("42") == "x"
    assert await b.get(b"42") == "x"
    await b.under(7).set("k", "owned")
    assert await b.under("7").get("k") == "owned"
    await b.set(-(2**200), "wide")
    assert await b.get(str(-(2**200))) == "wide"


async def test_kv01_int_and_text_are_one_key(store: tinystore.Store) -> None:
    await kv01_int_and_text_are_one_key(store)


async def test_kv01_bad_keys_are_invalid_and_name_the_bucket(store: tinystore.Store) -> None:
    b = store.bucket("codes", int)
    for bad in ["", 1.5, None, True, ["k"]]:
        with pytest.raises(tinystore.InvalidError) as e:
            await b.set(bad, 1)  # type: ignore[arg-type]
        assert e.value.bucket == "codes"
    with pytest.raises(tinystore.InvalidError) as e:
        await b.get("k" * 1100)
    assert e.value.bucket == "codes" and "1024" in str(e.value)
    assert await b.has("k") is False  # nothing was written


async def test_kv01_splits_never_collide_and_nul_round_trips(store: tinystore.Store) -> None:
    b = store.bucket("b", str)
    await b.under("a", "b").set("c", "nested")
    await b.under("a/b").set("c", "slash")
    await b.set("a\0b", "nul")
    assert await b.under("a", "b").get("c") == "nested"
    assert await b.under("a/b").get("c") == "slash"
    assert await b.get("a\0b") == "nul"
    assert [e.key for e in (await b.list()).entries] == ["a\0b"]


async def test_kv02_names_are_checked_and_keep_their_kind(store: tinystore.Store) -> None:
    for bad in ["", "Upper", "-x", "a" * 65, "sp ace"]:
        with pytest.raises(tinystore.InvalidError):
            store.bucket(bad, str)
    store.bucket("x", str)
    store.bucket("x", int)  # same kind of handle, another value type: allowed by name
    assert ("x", "values") in store.names()


@pytest.mark.parametrize(
    ("tp", "value"),
    [
        (str, "héllo"),
        (str, ""),
        (bytes, b"\x00\xff"),
        (bytes, b""),
        (int, -(2**63)),
        (int, 2**63 - 1),
        (float, 1.5),
        (float, float("inf")),
        (float, -0.0),
        (bool, True),
        (bool, False),
        (None, None),
        (dict, {"a": [1, 2.5, None, "x"]}),
    ],
)
async def test_kv03_values_come_back_as_their_type(store: tinystore.Store, tp: object, value: object) -> None:
    b: tinystore.Bucket[object] = store.bucket("v", tp)
    await b.set("k", value)
    got = await b.get("k") if tp is not None else await b.has("k")
    if tp is None:
        assert got is True
    else:
        assert type(got) is type(value) and got == value
    if tp is float:
        assert math.copysign(1, got) == math.copysign(1, value)  # type: ignore[arg-type]


async def test_kv03_nan_payload_comes_back_bit_for_bit(store: tinystore.Store) -> None:
    nan = struct.unpack(">d", bytes.fromhex("7ff8000000000123"))[0]
    b = store.bucket("f", float)
    await b.set("k", nan)
    assert struct.pack(">d", await b.get("k")) == bytes.fromhex("7ff8000000000123")


async def test_kv03_a_value_of_another_type_is_invalid_and_nothing_is_written(store: tinystore.Store) -> None:
    cases: list[tuple[object, object]] = [(int, "1"), (int, True), (int, 2**64), (str, b"x"), (bytes, "x"), (bool, 1), (float, "1.0"), (None, 0)]
    for tp, bad in cases:
        b: tinystore.Bucket[object] = store.bucket("typed", tp)
        with pytest.raises(tinystore.InvalidError) as e:
            await b.set("k", bad)
        assert e.value.bucket == "typed" and e.value.path == "k"
        assert isinstance(e.value, ValueError)
        assert not await b.has("k")


async def test_kv03_an_int_is_a_fine_float(store: tinystore.Store) -> None:
    b = store.bucket("f", float)
    await b.set("k", 3)
    assert await b.get("k") == 3.0 and type(await b.get("k")) is float


async def test_kv03_json_cannot_write_nan_and_over_1mib_is_limit(store: tinystore.Store) -> None:
    j = store.bucket("j", dict)
    with pytest.raises(tinystore.InvalidError):
        await j.set("k", {"x": float("nan")})
    big = store.bucket("big", bytes)
    with pytest.raises(tinystore.LimitError) as e:
        await big.set("k", b"x" * (1024 * 1024 + 1))
    assert e.value.bucket == "big"
    await big.set("k", b"x" * (1024 * 1024))
    assert len(await big.get("k") or b"") == 1024 * 1024


async def test_kv03_a_row_read_as_another_type_is_corrupt(store: tinystore.Store) -> None:
    await store.bucket("mixed", str).set("k", "text")
    with pytest.raises(tinystore.CorruptError) as e:
        await store.bucket("mixed", int).get("k")
    assert e.value.bucket == "mixed" and e.value.path == "k"


async def test_kv04_set_get_has_delete(store: tinystore.Store) -> None:
    b = store.bucket("b", str)
    assert await b.get("missing") is None
    assert await b.delete("missing") is False
    version = await b.set("k", "v")
    assert isinstance(version, str)
    assert await b.has("k") and await b.get("k") == "v"
    assert await b.delete("k") is True
    assert not await b.has("k") and await b.get("k") is None


async def test_kv05_take_one_of_64_racing_coroutines_gets_the_value(store: tinystore.Store) -> None:
    codes = store.bucket("codes", int)
    await codes.set("c", 7)
    got = await asyncio.gather(*(codes.take("c") for _ in range(64)))
    assert sorted(got, key=lambda x: x is None) == [7] + [None] * 63


async def test_kv05_a_value_that_does_not_decode_is_corrupt_and_stays(store: tinystore.Store) -> None:
    await store.bucket("t", str).set("k", "not json")
    with pytest.raises(tinystore.CorruptError):
        await store.bucket("t", list[int]).take("k")
    with pytest.raises(tinystore.CorruptError):
        await store.bucket("t", int).take("k")
    assert await store.bucket("t", str).get("k") == "not json"


async def test_kv06_ttl_expires_on_the_test_clock(store: tinystore.Store) -> None:
    codes = store.bucket("codes", int, ttl="15m")
    await codes.set("c", 1)
    entry = await codes.entry("c")
    assert entry is not None and entry.expires_at == START + dt.timedelta(minutes=15)
    store.clock.advance("14m")
    await codes.set("c", 2)  # a later set keeps a live key's expiry
    store.clock.advance("1m")
    assert await codes.get("c") is None
    assert await codes.take("c") is None and not await codes.has("c")
    assert await codes.expire("c", "1h") is False
    assert await codes.create("c", 3) is True  # create claims an expired key


async def test_kv06_own_ttl_and_expires_at_replace_the_buckets(store: tinystore.Store) -> None:
    b = store.bucket("b", str, ttl="1h")
    await b.set("a", "x", ttl=dt.timedelta(minutes=5))
    await b.set("p", "x", expires_at=START - dt.timedelta(seconds=1))
    assert (await b.entry("a")).expires_at == START + dt.timedelta(minutes=5)  # type: ignore[union-attr]
    assert await b.get("p") is None  # in the past: absent at once
    with pytest.raises(tinystore.InvalidError):
        await b.set("x", "x", ttl="5m", expires_at=START)
    with pytest.raises(tinystore.InvalidError):
        store.bucket("both", str, ttl="1h", idle="1h")
    with pytest.raises(tinystore.InvalidError) as e:
        store.bucket("bad", str, ttl="90mins")
    assert "90mins" in str(e.value)


async def test_kv07_idle_read_renews_and_list_does_not(store: tinystore.Store) -> None:
    sessions = store.bucket("sessions", str, idle="30d")
    await sessions.set("s", "web")
    await sessions.set("quiet", "web")
    store.clock.advance("29d")
    assert await sessions.get("s") == "web"  # asks for a renewal
    assert [e.key for e in (await sessions.list()).entries] == ["quiet", "s"]
    assert (await store.maintain()).renewed == 1
    store.clock.advance("2d")
    assert await sessions.get("s") == "web"
    assert await sessions.get("quiet") is None


async def test_kv08_clear_removes_the_branch_and_nothing_beside(store: tinystore.Store) -> None:
    sessions = store.bucket("sessions", str)
    await sessions.under(1).set("a", "x")
    await sessions.under(1, "dev").set("b", "x")
    await sessions.under(12).set("c", "x")
    await sessions.under(1).clear()
    assert not await sessions.under(1).has("a")
    assert not await sessions.under(1, "dev").has("b")
    assert await sessions.under(12).get("c") == "x"
    await sessions.under(1).set("a", "new")
    assert await sessions.under(1).get("a") == "new"


async def test_kv09_list_pages_in_key_order_with_a_cursor(store: tinystore.Store) -> None:
    b = store.bucket("b", int)
    keys = [f"k{i:03}" for i in range(250)]
    await asyncio.gather(*(b.set(k, i) for i, k in enumerate(keys)))
    seen: list[str] = []
    after = None
    while True:
        page = await b.list(after=after, limit=100)
        seen += [e.key for e in page.entries]  # type: ignore[misc]
        if page.next is None:
            break
        after = page.next
    assert seen == keys
    assert [e.key async for e in b.all()] == keys
    with pytest.raises(tinystore.InvalidError):
        await b.list(limit=1001)


async def test_kv10_versions_and_if_version(store: tinystore.Store) -> None:
    b = store.bucket("b", str)
    v1 = await b.set("k", "a")
    entry = await b.entry("k")
    assert entry is not None and entry.version == v1 and entry.value == "a" and entry.key == "k"
    v2 = await b.set("k", "b", if_version=v1)
    assert v2 != v1
    with pytest.raises(tinystore.ConflictError) as e:
        await b.set("k", "c", if_version=v1)
    assert e.value.bucket == "b" and e.value.path == "k" and e.value.code == "CONFLICT"
    with pytest.raises(tinystore.ConflictError):
        await b.delete("k", if_version=v1)
    assert await b.take("k", if_version=v2) == "b"
    await b.set("k", "again")
    assert (await b.entry("k")).version not in (v1, v2)  # type: ignore[union-attr]
    assert await b.create("k", "no") is False and await b.get("k") == "again"


async def test_kv10_two_writers_with_one_version_exactly_one_wins(store: tinystore.Store) -> None:
    b = store.bucket("b", int)
    v = await b.set("k", 0)
    results = await asyncio.gather(*(b.set("k", i, if_version=v) for i in range(1, 9)), return_exceptions=True)
    assert sum(not isinstance(r, BaseException) for r in results) == 1
    assert all(isinstance(r, tinystore.ConflictError) for r in results if isinstance(r, BaseException))


async def test_kv10_expire_sets_a_new_expiry(store: tinystore.Store) -> None:
    b = store.bucket("b", str)
    await b.set("k", "v")
    assert await b.expire("k", START + dt.timedelta(hours=2)) is True
    assert (await b.entry("k")).expires_at == START + dt.timedelta(hours=2)  # type: ignore[union-attr]
    assert await b.expire("k", "10m") is True
    store.clock.advance("10m")
    assert await b.get("k") is None
