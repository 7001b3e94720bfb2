"""A store in PostgreSQL, opened by its location: the same calls and answers
as a store in a directory (docs/postgres.md). Needs the server CI starts
(make pg-start; make exports TINYSTORE_TEST_PG)."""

from __future__ import annotations

import asyncio
import os

import pytest

import tinystore
from conftest import START


def location() -> str:
    server = os.environ.get("TINYSTORE_TEST_PG")
    if not server:
        pytest.fail(
            "the PostgreSQL tests need a server: run `make pg-start` (a cluster on 127.0.0.1:55432), then "
            "`export TINYSTORE_TEST_PG=postgres://postgres@127.0.0.1:55432/postgres`, or run them through make"
        )
    return f"{server}{'&' if '?' in server else '?'}schema=python_tests"


async def test_kv05_a_postgres_store_takes_once_and_judges_expiry_on_its_clock() -> None:
    async with tinystore.open(location(), clock=START) as store:
        codes = store.bucket("codes", int, ttl="15m")
        await codes.clear()
        await codes.set("c", 7)
        got = await asyncio.gather(*(codes.take("c") for _ in range(16)))
        assert sorted(got, key=lambda x: x is None) == [7] + [None] * 15
        await codes.set("d", 1)
        store.clock.advance("15m")
        assert await codes.get("d") is None
        hits = store.counters("hits")
        await hits.delete("k")
        assert await hits.add("k") == 1, "counters count on the shared rows"
