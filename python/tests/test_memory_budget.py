"""The memory budget from Python: ``open(dir, memory=...)``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import tinystore
from tinystore import sync


def test_a_budget_below_one_mib_is_invalid_and_creates_nothing(tmp_path: Path) -> None:
    at = tmp_path / "store"
    with pytest.raises(tinystore.InvalidError) as e:
        sync.open(at, memory=1000)
    assert "memory budget 1000 bytes" in str(e.value)
    assert not at.exists()
    with pytest.raises(tinystore.InvalidError):
        sync.open(at, memory=-1)


def test_under_a_budget_racing_writes_and_reads_all_finish(tmp_path: Path) -> None:
    async def main() -> None:
        async with tinystore.open(tmp_path, memory=2 << 20) as store:
            blobs = store.bucket("blobs", bytes)
            value = b"x" * 600_000
            await asyncio.gather(*(blobs.set(f"k{i}", value) for i in range(16)))
            got = await asyncio.gather(*(blobs.get(f"k{i}") for i in range(16)))
            assert got == [value] * 16

    asyncio.run(main())


def test_a_transaction_under_a_budget_reads_and_writes(tmp_path: Path) -> None:
    # Inside a transaction a call takes what is free or is LimitError at
    # once (core/tests/memory_budget.rs holds the memory from outside to
    # show it); with the budget free, a transaction works as without one.
    with sync.open(tmp_path, memory=1 << 20) as store:
        texts = store.bucket("texts", str)
        texts.set("k", "v")
        with store.tx() as tx:
            tx.bucket(texts).set("big", "y" * 600_000)
            assert tx.bucket(texts).get("k") == "v"
        assert texts.get("big") == "y" * 600_000
