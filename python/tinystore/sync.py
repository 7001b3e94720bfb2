"""The synchronous API, for Flask, Django and scripts: the same names as the
asyncio API, without ``await``::

    from tinystore import sync as tinystore

    with tinystore.open("data") as store:
        codes = store.bucket("sign-in-codes", int, ttl="15m")
        codes.set(digest(code), user.id)

A write blocks its thread until it is durable, with the GIL released, so
other threads run and the writes of many threads commit together.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from types import TracebackType
from typing import Any, TypeVar, overload

from . import _native
from ._base import BucketBase, Key, StoreBase, open_native
from ._custom import Codec, Raw, RawValue
from .config import FromEnv
from .config import SyncConfig as Config
from .config import open_sync_config as open_config
from ._bucket_calls import BucketWrites
from ._results import Entry, Maintenance, _entry
from ._sync_limits import Counters, Once, Quota, RateLimit
from ._sync_tx import Transaction, Tx, TxBucket, View, ViewBucket
from ._time import Duration

__all__ = [
    "open",
    "open_config",
    "FromEnv",
    "Config",
    "Store",
    "Bucket",
    "RateLimit",
    "Quota",
    "Counters",
    "Once",
    "Transaction",
    "Tx",
    "TxBucket",
    "View",
    "ViewBucket",
]

T = TypeVar("T")


def open(
    dir: str | os.PathLike[str],
    *,
    clock: dt.datetime | None = None,
    memory: int | None = None,
    mmap_size: int | None = None,
    keep_read_locks: bool | None = None,
    share_with_group: bool | None = None,
) -> Store:
    """Opens the store in ``dir`` (created if needed); use it as ``with`` to close it.

    ``clock=datetime(...)`` gives the store a test clock (naive is UTC);
    ``memory=32 << 20`` a memory budget in bytes; ``mmap_size=0`` reads
    kv.db without mapping it; ``keep_read_locks=False`` has every read take
    and give back its lock as plain SQLite does; ``share_with_group=True``
    creates the store's files for its group as well as its owner (see
    ``tinystore.open``).
    """
    return Store(open_native(dir, clock, memory, mmap_size, keep_read_locks, share_with_group))


class Store(StoreBase[RateLimit, Quota, Counters]):
    """An open store, for synchronous code."""

    __slots__ = ()
    _limits = (RateLimit, Quota, Counters)

    @overload
    def bucket(
        self, name: str, type: type[Raw], *, ttl: Duration | None = None, idle: Duration | None = None
    ) -> Bucket[RawValue]: ...
    @overload
    def bucket(
        self,
        name: str,
        type: type[T],
        *,
        ttl: Duration | None = None,
        idle: Duration | None = None,
        codec: Codec[T] | None = None,
    ) -> Bucket[T]: ...
    @overload
    def bucket(self, name: str, type: None, *, ttl: Duration | None = None, idle: Duration | None = None) -> Bucket[None]: ...
    @overload
    def bucket(
        self, name: str, *, codec: Codec[T], ttl: Duration | None = None, idle: Duration | None = None
    ) -> Bucket[T]: ...
    @overload
    def bucket(self, name: str, *, ttl: Duration | None = None, idle: Duration | None = None) -> Bucket[Any]: ...
    @overload
    def bucket(
        self,
        name: str,
        type: object,
        *,
        ttl: Duration | None = None,
        idle: Duration | None = None,
        codec: Codec[Any] | None = None,
    ) -> Bucket[Any]: ...

    def bucket(
        self,
        name: str,
        type: Any = Any,
        *,
        ttl: Duration | None = None,
        idle: Duration | None = None,
        codec: Codec[Any] | None = None,
    ) -> Bucket[Any]:
        """The bucket ``name`` of values of ``type`` (see ``tinystore.Store.bucket``)."""
        return Bucket(self._bucket_native(name, type, ttl, idle, codec))

    @overload
    def once(self, name: str, type: type[T], *, keep: Duration | None = None) -> Once[T]: ...
    @overload
    def once(self, name: str, *, keep: Duration | None = None) -> Once[Any]: ...
    @overload
    def once(self, name: str, type: object, *, keep: Duration | None = None) -> Once[Any]: ...

    def once(self, name: str, type: Any = Any, *, keep: Duration | None = None) -> Once[Any]:
        """The once ``name``: answers of ``type`` kept for ``keep`` (a day unless set)::

            sends = store.once("sends", Sent, keep="1d")
        """
        return Once(self._once_native(name, type, keep))

    def tx(self) -> Transaction:
        """A transaction (KV-16): writes to several buckets that commit together or not at all::

            with store.tx() as tx:
                if tx.bucket(stock).take("apples") is None:
                    raise SoldOut()          # rolls back: nothing is written
                tx.bucket(orders).set(order_id, "apples")

        Entering blocks this thread (not others) until the writer's turn;
        leaving the block commits and returns once durable; an exception rolls
        back and propagates. Keep it short (it is rolled back after 10
        seconds), and inside it write to this store only through ``tx``.
        """
        self._check_open()
        return Transaction(self._n)

    def view(self) -> View:
        """A read snapshot (KV-16): ``with store.view() as v:`` and ``v.bucket(b).get(key)``
        read the file as it was at the view's first read. It has only reads."""
        self._check_open()
        return View(self._n)

    def maintain(self) -> Maintenance:
        """Flushes memory and deletes cleared and expired rows in bounded batches; says how many."""
        return Maintenance(*self._n.maintain())

    def close(self) -> None:
        """Writes what memory holds and closes the file; later calls are ``ClosedError``."""
        self._n.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class Bucket(BucketBase[T], BucketWrites[T]):
    """Keys and values of one type, with expiry, in branches of owners (synchronous).
    A write blocks its thread until it is durable."""

    __slots__ = ()

    def under(self, *owners: Key) -> Bucket[T]:
        """The branch of ``owners`` under this one."""
        return Bucket(self._n.under(*owners))

    def get(self, key: Key) -> T | None:
        """The value of a live key, or None. In an ``idle`` bucket the read renews the key."""
        # Its own body, without a scope to find: the hot path of sync reads.
        return self._n.get(key)

    def all(self) -> Iterator[Entry[T]]:
        """Every key of this branch, a page at a time, holding no snapshot between pages."""
        after = None
        while True:
            rows, after = self._n.list(after, _native.MAX_PAGE)
            for r in rows:
                yield _entry(r)
            if after is None:
                return
