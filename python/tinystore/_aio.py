"""The asyncio API: ``store = await tinystore.open("data")``.

Reads run inline: a point read is a few microseconds, so ``bucket.get(key)``
reads at once and returns an already-completed future; awaiting it never
waits for the loop, and ``gather`` of many reads creates no tasks.
Writes go to the store's writer and their futures are resolved from it,
so the writes of many coroutines commit together, one fsync per group.
Cancelling a coroutine whose write has not started yet means it never runs.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import os
from collections.abc import AsyncIterator, Callable, Coroutine, Generator
from types import TracebackType
from typing import Any, TypeVar, overload

from . import _native
from ._base import BucketBase, Key, StoreBase, open_native
from ._custom import Codec, Raw, RawValue
from ._bucket_calls import AsyncBucketReads, BucketWrites
from ._loop import awaited
from ._scopes import OnLoop
from ._results import Entry, Maintenance, _entry
from ._aio_limits import Counters, Once, Quota, RateLimit
from ._aio_tx import Transaction, View
from ._time import Duration

__all__ = ["open", "Opening", "Store", "Bucket"]

T = TypeVar("T")
_get_loop = asyncio.get_running_loop


def _mark_coroutine_function(f: Callable[..., Any]) -> None:
    """Marks a plain function that returns a coroutine as a coroutine function,
    for ``inspect.iscoroutinefunction`` (Python 3.12 on) and
    ``asyncio.iscoroutinefunction``, as its ``async def`` was."""
    mark = getattr(inspect, "markcoroutinefunction", None)
    if mark is not None:
        mark(f)
    marker = getattr(asyncio.coroutines, "_is_coroutine", None)
    if marker is not None:
        f._is_coroutine = marker  # type: ignore[attr-defined]


def open(
    dir: str | os.PathLike[str],
    *,
    clock: dt.datetime | None = None,
    memory: int | None = None,
    mmap_size: int | None = None,
    keep_read_locks: bool | None = None,
    share_with_group: bool | None = None,
) -> Opening:
    """Opens the store in ``dir`` (created if needed; the file is ``dir/kv.db``).

    Use it either way::

        store = await tinystore.open("data")
        async with tinystore.open("data") as store:
            ...

    ``clock=datetime(...)`` gives the store a test clock (a naive datetime is
    UTC): it stands still until ``store.clock.advance("16m")``, and nothing
    runs in the background until ``await store.maintain()``.

    ``memory=32 << 20`` gives the store a memory budget in bytes: a call holds
    the memory its value may need (a read the largest value, 1 MiB) and
    waits its turn while the budget is spent; inside ``store.tx()`` it is
    ``LimitError`` at once instead. At least 1 MiB.

    ``mmap_size`` is how many bytes of kv.db each reader maps into memory
    (1 GiB unless set; none with a memory budget). A mapped read costs no
    system call, so reads stay fast as the file grows past the page cache;
    the price is that a mapped page that cannot be read (a failing disk, or
    another process cutting kv.db short during a read) stops the process
    with SIGBUS instead of raising. ``mmap_size=0`` turns mapped reads off:
    for a store on a network filesystem, or where such a truncating process
    may exist. A non-negative int.

    ``keep_read_locks`` (on unless set; off with a test clock): a reader
    keeps its read-mark lock in ``kv.db-shm`` between reads while the file
    is quiet, which spares each read two system calls. It gives the lock
    back within milliseconds of another process's commit and before this
    store's writer begins. ``keep_read_locks=False`` has every read take and
    give back its lock, as plain SQLite does: for a program that runs a
    blocking checkpoint of kv.db itself and must not wait those
    milliseconds.

    ``share_with_group=True`` creates the store's directory 0770 and its
    files 0660, for processes of several users in one group; by default they
    are the owner's only (0700 and 0600), whatever the umask: anyone who can
    write ``kv.db-limits`` can reset every rate limit. Files that exist keep
    their permissions.
    """
    return Opening(dir, clock, memory, mmap_size, keep_read_locks, share_with_group)


class Opening:
    """An opening store: await it, or use it as ``async with``."""

    __slots__ = ("_options", "_store")

    def __init__(
        self,
        dir: str | os.PathLike[str],
        clock: dt.datetime | None,
        memory: int | None = None,
        mmap_size: int | None = None,
        keep_read_locks: bool | None = None,
        share_with_group: bool | None = None,
    ) -> None:
        self._options = (dir, clock, memory, mmap_size, keep_read_locks, share_with_group)
        self._store: Store | None = None

    async def _open(self) -> Store:
        return Store(open_native(*self._options))

    def __await__(self) -> Generator[Any, None, Store]:
        return self._open().__await__()

    async def __aenter__(self) -> Store:
        self._store = await self._open()
        return self._store

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._store is not None:
            await self._store.close()


class Store(StoreBase[RateLimit, Quota, Counters]):
    """An open store. Handles are opened from it; ``close`` writes what memory holds."""

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
        """The bucket ``name`` of values of ``type``.

        ``type`` is ``str``, ``bytes``, ``int``, ``float``, ``bool``, ``None``
        (a set: keys without values), or anything kept as JSON: a dataclass,
        a pydantic model, a TypedDict, ``list[...]``, ``dict[str, ...]``
        (``Any`` when not given). ``ttl`` gives each new key a lifetime;
        ``idle`` expires a key that long after it was last read or written
        (not both)::

            sessions = store.bucket("sessions", Session, idle="30d")

        ``tinystore.Raw`` reads and writes values as their rows keep them
        (``None``, ``int`` or ``bytes``), whatever type wrote them.
        ``codec=`` gives the bucket its own codec, an object with
        ``encode(value) -> bytes`` and ``decode(bytes) -> value``, in place of
        the choice by type.
        """
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

            async with store.tx() as tx:
                apples = await tx.bucket(stock).take("apples")
                if apples is None:
                    raise SoldOut()          # rolls back: nothing is written
                await tx.bucket(orders).set(order_id, "apples")
            # here the order and the take are both durable

        Entering waits for the writer's turn without blocking the loop. Calls
        through ``tx.bucket(b)`` (``tx.with_(b)`` is the same) see the
        transaction's own writes and nobody else's meanwhile; leaving the block
        commits and waits until it is durable; an exception rolls back and
        propagates. A transaction holds the store's writer: keep it short (it
        is rolled back after 10 seconds), and inside it do not await other
        writes of this store.
        """
        self._check_open()
        return Transaction(self._n)

    def view(self) -> View:
        """A read snapshot (KV-16): ``async with store.view() as v:`` and
        ``await v.bucket(b).get(key)`` read the file as it was at the view's
        first read, whatever commits meanwhile. It has only reads."""
        self._check_open()
        return View(self._n)

    async def maintain(self) -> Maintenance:
        """Flushes counters, rate limits and renewals, and deletes cleared and
        expired rows in bounded batches; says how many. A store with a test
        clock does this only when called."""
        return Maintenance(*self._n.maintain())

    async def close(self) -> None:
        """Writes what memory holds and closes the file; later calls are ``ClosedError``."""
        self._n.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


_set_with_options = awaited(BucketWrites.set)


class Bucket(OnLoop, AsyncBucketReads[T], BucketBase[T], BucketWrites[T]):
    """Keys and values of one type, with expiry, in branches of owners."""

    __slots__ = ()

    def under(self, *owners: Key) -> Bucket[T]:
        """The branch of ``owners`` under this one: ``sessions.under(user_id)``."""
        return Bucket(self._n.under(*owners))

    def get(self, key: Key) -> asyncio.Future[T | None]:  # type: ignore[override]
        """The value of a live key, or None. In an ``idle`` bucket the read renews the key.

        The read runs now, inline (a few microseconds), and the awaitable it
        returns is already complete: awaiting it never waits for the loop.
        """
        # Its own body, without a call around it: the hot path of reads.
        fut: asyncio.Future[T | None] = _get_loop().create_future()
        try:
            fut.set_result(self._n.get(key))
        except Exception as e:
            fut.set_exception(e)
        return fut

    async def all(self) -> AsyncIterator[Entry[T]]:
        """Every key of this branch, a page at a time, holding no snapshot between pages."""
        after = None
        while True:
            rows, after = self._n.list(after, _native.MAX_PAGE)
            for r in rows:
                yield _entry(r)
            if after is None:
                return

    # A write answers through the native module's awaitable, which gives the
    # write up when its task is cancelled before the write's group starts.
    def set(  # type: ignore[override]
        self,
        key: Key,
        value: T,
        *,
        ttl: Duration | None = None,
        expires_at: dt.datetime | None = None,
        if_version: str | None = None,
    ) -> Coroutine[Any, Any, str]:
        """Writes ``value`` and returns once it is durable, with its version.

        A new key gets the bucket's ``ttl``; a live key keeps its expiry unless
        ``ttl`` or ``expires_at`` replaces it. With ``if_version`` it writes only
        a live key at that version (else ``ConflictError``).
        """
        # Without options, the coroutine is the native module's own: the
        # write starts when it is first awaited, as in an ``async def``,
        # without a Python frame around it (the hot path of durable sets).
        if ttl is None and expires_at is None and if_version is None:
            return self._n.set_call(key, value)
        return _set_with_options(self, key, value, ttl=ttl, expires_at=expires_at, if_version=if_version)

    _mark_coroutine_function(set)

    create = awaited(BucketWrites.create)  # type: ignore[assignment]
    create_entry = awaited(BucketWrites.create_entry)  # type: ignore[assignment]
    take = awaited(BucketWrites.take)  # type: ignore[assignment]
    delete = awaited(BucketWrites.delete)  # type: ignore[assignment]
    expire = awaited(BucketWrites.expire)  # type: ignore[assignment]
    clear = awaited(BucketWrites.clear)  # type: ignore[assignment]
