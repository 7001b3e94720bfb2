"""Fixtures: stores on a test clock in a fresh directory."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import tinystore

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
