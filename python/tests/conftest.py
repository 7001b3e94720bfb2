"""Fixtures: stores on a test clock in a fresh directory."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

import tinystore

T = TypeVar("T")

START = dt.datetime(2026, 10, 20, 9, 0, tzinfo=dt.timezone.utc)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[tinystore.Store]:
    """An async store with a test clock at START."""
    async with tinystore.open(tmp_path / "data", clock=START) as s:
        yield s


@pytest.fixture
def sync_store(tmp_path: Path) -> Iterator[tinystore.sync.Store]:
    """A sync store with a test clock at START."""
    with tinystore.sync.open(tmp_path / "data", clock=START) as s:
        yield s


@pytest.fixture
def refused_untouched(tmp_path: Path) -> Callable[..., None]:
    """Checks that ``sync.open`` and ``await tinystore.open`` with ``options``
    are ``InvalidError`` naming ``name``, create nothing in a fresh
    directory, and leave an existing store's files byte for byte as they were."""

    def check(name: str, **options: Any) -> None:
        fresh = tmp_path / "fresh"
        with pytest.raises(tinystore.InvalidError, match=name):
            tinystore.sync.open(fresh, **options)
        assert not fresh.exists()

        async def open_async() -> None:
            await tinystore.open(fresh, **options)

        with pytest.raises(tinystore.InvalidError, match=name):
            asyncio.run(open_async())
        assert not fresh.exists()

        existing = tmp_path / "existing"
        with tinystore.sync.open(existing) as store:
            store.bucket("b", str).set("k", "v")
        before = {p.name: p.read_bytes() for p in existing.iterdir()}
        with pytest.raises(tinystore.InvalidError, match=name):
            tinystore.sync.open(existing, **options)
        assert {p.name: p.read_bytes() for p in existing.iterdir()} == before

    return check


def racing(n: int, call: Callable[[int], T]) -> list[T]:
    """What ``call(i)`` answered on each of ``n`` threads, started together
    behind one barrier, in the order they finished."""
    barrier = threading.Barrier(n)
    got: list[T] = []

    def run(i: int) -> None:
        barrier.wait()
        got.append(call(i))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got
