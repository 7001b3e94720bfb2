"""How much of kv.db the readers map: ``open(dir, mmap_size=...)``."""

from __future__ import annotations

import sys
from pathlib import Path
from collections.abc import Callable
from typing import Any

import pytest

import tinystore
from tinystore import sync


def mapped(db: Path) -> bool:
    """Whether this process maps ``db`` itself (Linux: /proc/self/maps; its
    ``-shm`` file is mapped either way)."""
    path = str(db.resolve())
    return any(line.split(maxsplit=5)[5:] == [path] for line in Path("/proc/self/maps").read_text().splitlines())


def write_and_read_all(at: Path, **options: Any) -> bool:
    """Writes 3000 values of 2 kB (the file outgrows its WAL and is
    checkpointed), reads every one twice, and says whether kv.db is mapped."""
    with sync.open(at, **options) as store:
        b = store.bucket("b", str)
        with store.tx() as tx:
            for i in range(3000):
                tx.bucket(b).set(f"k{i}", f"{i}:" + "v" * 2000)
        for _ in range(2):
            assert all(b.get(f"k{i}") == f"{i}:" + "v" * 2000 for i in range(3000))
        return mapped(at / "kv.db")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_a_store_opened_with_mmap_size_0_reads_without_mapping_the_file(tmp_path: Path) -> None:
    assert not write_and_read_all(tmp_path / "plain", mmap_size=0)
    # The default maps: the check above can tell the two apart.
    assert write_and_read_all(tmp_path / "mapped")


async def test_the_async_open_takes_mmap_size(tmp_path: Path) -> None:
    async with tinystore.open(tmp_path, mmap_size=0) as store:
        b = store.bucket("b", int)
        await b.set("k", 1)
        assert await b.get("k") == 1


@pytest.mark.parametrize("bad", [-1, 1 << 64, 1.5, "1GiB", "0", True])
def test_a_bad_mmap_size_is_invalid_names_the_option_and_writes_nothing(
    refused_untouched: Callable[..., None], bad: Any
) -> None:
    refused_untouched("mmap_size", mmap_size=bad)


@pytest.mark.parametrize(("option", "n"), [("mmap_size", -1), ("memory", -1), ("mmap_size", 1 << 64)])
def test_a_size_past_0_to_2_64_is_the_cores_one_text(tmp_path: Path, option: str, n: int) -> None:
    options: dict[str, Any] = {option: n}
    with pytest.raises(tinystore.InvalidError) as e:
        sync.open(tmp_path / "store", **options)
    assert str(e.value) == (
        f"invalid: the store option {option} is {n}: a size in bytes is a whole number from 0 to 2^64-1;"
        " nothing was opened"
    )
    assert not (tmp_path / "store").exists()
