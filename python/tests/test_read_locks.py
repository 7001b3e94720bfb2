"""Whether readers keep their read-mark lock between reads:
``open(dir, keep_read_locks=...)`` (``Options::keep_read_locks``)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

import pytest

import tinystore
from tinystore import sync

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/locks")

# SQLite's WAL read marks are bytes 123 to 127 of kv.db-shm (its locks
# start at byte 120; the read marks are locks 3 to 7).
READ_MARKS = range(123, 128)


def read_mark_locked(shm: Path) -> bool:
    """Whether this process holds a lock on one of ``shm``'s read marks."""
    inode, pid = os.stat(shm).st_ino, os.getpid()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        # "1: POSIX  ADVISORY  READ 4242 fd:01:1234 123 123"
        if len(fields) < 8 or fields[1] != "POSIX" or int(fields[4]) != pid:
            continue
        if int(fields[5].rsplit(":", 1)[1]) != inode:
            continue
        start, end = int(fields[6]), fields[7]
        last = READ_MARKS.stop if end == "EOF" else int(end)
        if start < READ_MARKS.stop and last >= READ_MARKS.start:
            return True
    return False


def locked_after_reads(at: Path, seconds: float, **options: Any) -> bool:
    """Reads one key of a quiet store for up to ``seconds``, looking after
    each read for a read-mark lock this process still holds."""
    with sync.open(at, **options) as store:
        b = store.bucket("b", str)
        b.set("k", "v")
        shm = at / "kv.db-shm"
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            assert b.get("k") == "v"
            if read_mark_locked(shm):
                return True
        return False


def test_a_quiet_store_keeps_its_read_lock_between_reads_unless_told_not_to(tmp_path: Path) -> None:
    # A lock is kept once the file has been quiet for 20 ms: well inside 5 s.
    assert locked_after_reads(tmp_path / "kept", 5.0)
    assert not locked_after_reads(tmp_path / "plain", 0.3, keep_read_locks=False)


async def test_the_async_open_takes_keep_read_locks(tmp_path: Path) -> None:
    async with tinystore.open(tmp_path, keep_read_locks=False) as store:
        b = store.bucket("b", int)
        await b.set("k", 1)
        # Past the 20 ms a quiet file needs before a lock is kept.
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            assert await b.get("k") == 1
            assert not read_mark_locked(tmp_path / "kv.db-shm")


@pytest.mark.parametrize("bad", [0, 1, "no", 1.0])
def test_a_bad_keep_read_locks_is_invalid_names_the_option_and_writes_nothing(
    refused_untouched: Callable[..., None], bad: Any
) -> None:
    refused_untouched("keep_read_locks", keep_read_locks=bad)
