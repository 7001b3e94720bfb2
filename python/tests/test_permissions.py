"""Who may read and write a new store's files: its owner only, or its group
too with ``open(dir, share_with_group=True)`` (KV-19): anyone who can write
kv.db-limits can reset every rate limit."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import tinystore
from tinystore import sync


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The usual umask, which lets 0644 files through; the process's own,
    so it is put back after the test."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def modes(at: Path) -> dict[str, int]:
    """The permission bits of the store's directory, kv.db and its WAL."""
    return {name: stat.S_IMODE(os.stat(at / name).st_mode) for name in (".", "kv.db", "kv.db-wal")}


def modes_of_a_used_store(at: Path, **options: Any) -> dict[str, int]:
    """Opens a store in ``at``, writes a key (which makes the WAL), and
    returns the modes while it is open."""
    with sync.open(at, **options) as store:
        store.bucket("b", str).set("k", "v")
        return modes(at)


def test_kv19_a_new_stores_files_are_its_owners_only_or_its_groups_with_share_with_group(
    tmp_path: Path, umask_022: None
) -> None:
    assert modes_of_a_used_store(tmp_path / "own" / "data") == {".": 0o700, "kv.db": 0o600, "kv.db-wal": 0o600}
    assert modes_of_a_used_store(tmp_path / "shared", share_with_group=True) == {
        ".": 0o770,
        "kv.db": 0o660,
        "kv.db-wal": 0o660,
    }
    assert modes_of_a_used_store(tmp_path / "unshared", share_with_group=False)["kv.db"] == 0o600


async def test_kv19_the_async_open_takes_share_with_group(tmp_path: Path, umask_022: None) -> None:
    at = tmp_path / "shared"
    async with tinystore.open(at, share_with_group=True) as store:
        await store.bucket("b", int).set("k", 1)
        assert modes(at) == {".": 0o770, "kv.db": 0o660, "kv.db-wal": 0o660}


@pytest.mark.parametrize("bad", [0, 1, "yes", 1.0])
def test_kv19_a_bad_share_with_group_is_invalid_names_the_option_and_writes_nothing(
    refused_untouched: Callable[..., None], bad: Any
) -> None:
    refused_untouched("share_with_group", share_with_group=bad)
