"""The answers of calls: entries, pages, maintenance, allowances."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any, Generic, TypeVar

from ._time import from_millis

__all__ = ["Entry", "Created", "Page", "Maintenance", "Allowance", "WindowUsage"]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class Entry(Generic[T]):
    """A key with its value, version and expiry."""

    key: str | bytes
    """The key, without its owners (``str``, or ``bytes`` when not UTF-8)."""
    value: T
    """The value, of the bucket's type."""
    version: str
    """The revision that wrote the value; pass it back as ``if_version``."""
    expires_at: dt.datetime | None
    """When the key expires (aware, UTC), or None."""


def _entry(row: tuple[Any, Any, str, int | None]) -> Entry[Any]:
    key, value, version, expires = row
    return Entry(key, value, version, None if expires is None else from_millis(expires))


@dataclasses.dataclass(frozen=True, slots=True)
class Created(Generic[T]):
    """What ``create_entry`` did: whether it wrote, and the key's entry either way."""

    written: bool
    """Whether the key was absent (or expired) and now holds the value given."""
    entry: Entry[T]
    """The entry written (the value given, its version and expiry), or the
    live one found; its ``version`` is the claim to pass as ``if_version``."""


def _created(answer: tuple[bool, tuple[Any, Any, str, int | None]]) -> Created[Any]:
    written, row = answer
    return Created(written, _entry(row))


@dataclasses.dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing."""

    entries: list[Entry[T]]
    """The entries, in the byte order of their keys."""
    next: str | bytes | None
    """Pass as ``after`` for the next page; None when this was the last."""


@dataclasses.dataclass(frozen=True, slots=True)
class Maintenance:
    """What one maintenance pass did."""

    flushed: int
    """Keys of counters and rate limits written from memory."""
    renewed: int
    """Idle keys whose renewal was written."""
    cleared: int
    """Rows deleted because a clear hid them."""
    expired: int
    """Expired rows deleted."""
    more: bool
    """Whether rows were left for the next pass."""


@dataclasses.dataclass(frozen=True, slots=True)
class WindowUsage:
    """One window of a quota."""

    used: int
    limit: int
    left: int
    resets_at: dt.datetime | None
    """When the window resets (aware, UTC); None when it has not started."""


@dataclasses.dataclass(frozen=True, slots=True)
class Allowance:
    """The answer of a rate limit or a quota: never an exception for a refusal."""

    ok: bool
    """Whether the uses were taken."""
    left: int
    """Uses left now (for a quota, the least over its windows)."""
    retry_at: dt.datetime | None
    """When a refused call would pass (aware, UTC); None when ``ok``."""
    windows: dict[str, WindowUsage] = dataclasses.field(default_factory=dict)
    """A quota's windows by name (empty for a rate limit)."""
