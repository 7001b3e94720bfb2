"""The calls of a bucket, written once for every place a bucket is used: on
the store, in a transaction and in a view, synchronous or asyncio. Each
passes the native call the scope it runs in (see ``_scopes``), and the
core decides the rest.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Generic, TypeVar

from . import _native
from ._loop import answering
from ._scopes import Scoped
from ._results import Created, Entry, Page, _created, _entry
from ._time import Duration, opt_millis

if TYPE_CHECKING:
    from ._base import Key

__all__ = ["BucketReads", "BucketWrites", "AsyncBucketReads"]

T = TypeVar("T")


def _expiry(when: Duration | dt.datetime) -> tuple[Duration | None, int | None]:
    """The native ``(ttl, expires_at_ms)`` of an ``expire``: a span from now or a datetime."""
    return (None, opt_millis(when)) if isinstance(when, dt.datetime) else (when, None)


class BucketReads(Scoped, Generic[T]):
    """A bucket's reads, answered as values."""

    __slots__ = ()
    _n: _native.Bucket

    @property
    def name(self) -> str:
        """The bucket's name."""
        return self._n.name

    def get(self, key: Key) -> T | None:
        """The value of a live key, or None. In an ``idle`` bucket a read on the
        store renews the key; one in a transaction or a view renews nothing."""
        return self._n.get(key, self._in())

    def entry(self, key: Key) -> Entry[T] | None:
        """The value with its version and expiry, or None."""
        row = self._n.entry(key, self._in())
        return None if row is None else _entry(row)

    def has(self, key: Key) -> bool:
        """Whether a live key is there."""
        return self._n.has(key, self._in())

    def list(self, *, after: Key | None = None, limit: int | None = None) -> Page[T]:
        """One page of this branch's own keys, in the byte order of their text
        (``limit`` 1 to 1000, 100 when not given). Renews nothing."""
        rows, nxt = self._n.list(after, limit, self._in())
        return Page([_entry(r) for r in rows], nxt)


class BucketWrites(BucketReads[T]):
    """A bucket's reads and writes, answered as values once durable (inside
    a transaction: at once, durable with its commit)."""

    __slots__ = ()

    def set(
        self,
        key: Key,
        value: T,
        *,
        ttl: Duration | None = None,
        expires_at: dt.datetime | None = None,
        if_version: str | None = None,
    ) -> str:
        """Writes ``value``; returns its version. A new key gets the bucket's
        ``ttl``; a live key keeps its expiry unless ``ttl`` or ``expires_at``
        replaces it. With ``if_version`` it writes only a live key at that
        version (else ``ConflictError``)."""
        return self._n.set(key, value, ttl, opt_millis(expires_at), if_version, self._writes_in())

    def create(self, key: Key, value: T, *, ttl: Duration | None = None, expires_at: dt.datetime | None = None) -> bool:
        """Writes ``value`` only if the key is absent (or expired); says whether it did."""
        return self._n.create(key, value, ttl, opt_millis(expires_at), self._writes_in())

    def create_entry(
        self, key: Key, value: T, *, ttl: Duration | None = None, expires_at: dt.datetime | None = None
    ) -> Created[T]:
        """``create``, answering the entry as well: the one written or the live one found.
        Its ``entry.version`` is the claim a later write binds to with ``if_version``."""
        return self._after(self._n.create(key, value, ttl, opt_millis(expires_at), self._writes_in(), True), _created)

    def take(self, key: Key, *, if_version: str | None = None) -> T | None:
        """Reads and deletes the key in one write: of racing callers exactly one gets the value."""
        return self._n.take(key, if_version, self._writes_in())

    def delete(self, key: Key, *, if_version: str | None = None) -> bool:
        """Deletes the key; says whether a live key was there. A missing key is fine."""
        return self._n.delete(key, if_version, self._writes_in())

    def expire(self, key: Key, when: Duration | dt.datetime, *, if_version: str | None = None) -> bool:
        """Gives a live key a new expiry, ``"1h"`` from now or at a datetime; says whether it was there."""
        return self._n.expire(key, *_expiry(when), if_version, self._writes_in())

    def clear(self) -> None:
        """Removes this branch and every branch under it, for every reader at once."""
        return self._n.clear(self._writes_in())


class AsyncBucketReads(BucketReads[T]):
    """A bucket's reads for asyncio: each runs now, inline (a few
    microseconds), and returns an already-completed future, so awaiting it
    never waits for the loop (a bad argument raises where it is awaited)."""

    __slots__ = ()

    get = answering(BucketReads.get)  # type: ignore[assignment]
    entry = answering(BucketReads.entry)  # type: ignore[assignment]
    has = answering(BucketReads.has)  # type: ignore[assignment]
    list = answering(BucketReads.list)  # type: ignore[assignment]
