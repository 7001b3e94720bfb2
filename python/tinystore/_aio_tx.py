"""Transactions and snapshots for asyncio (KV-16).

``async with store.tx() as tx:`` waits for the writer's turn without
blocking the loop (the writer answers a future, as it answers writes), then
every call through ``tx.bucket(b)`` runs inside the transaction and sees its
own writes. The writer lends this transaction its connection while it is
open, so each call runs inline on the loop's thread, like a read: it
returns an already-completed future. Leaving the block commits and waits until the
commit is durable; an exception rolls everything back and propagates.

``async with store.view() as v:`` reads one point in time.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime as dt
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar, overload

from . import _native, _tx_marks
from ._base import Key
from ._loop import completions
from ._results import Entry, Page, _entry
from ._time import Duration, opt_millis
from ._tx_kinds import TxCounters, TxOnce, TxQuota, kind_in_tx
from .errors import ClosedError

if TYPE_CHECKING:
    from ._aio import Bucket
    from ._aio_limits import Counters, Once, Quota, RateLimit

__all__ = ["Transaction", "Tx", "TxBucket", "View", "ViewBucket"]

T = TypeVar("T")
R = TypeVar("R")


def _now(call: Callable[[], R]) -> asyncio.Future[R]:
    """Runs ``call`` now and gives its answer (or its exception) as a completed future."""
    fut: asyncio.Future[R] = asyncio.get_running_loop().create_future()
    try:
        fut.set_result(call())
    except Exception as e:
        fut.set_exception(e)
    return fut


def _retrieve(fut: asyncio.Future[Any]) -> None:
    # The commit's future of a transaction that rolled back or never
    # started carries an error nobody awaits: mark it seen.
    if not fut.cancelled():
        fut.exception()


def _closed(what: str) -> ClosedError:
    return ClosedError(f"the {what} has ended")


class Transaction:
    """A transaction to come: use it as ``async with store.tx() as tx:``.

    Entering waits for the writer's turn without blocking the loop and gives
    a :class:`Tx`. Leaving the block normally commits and returns once the
    commit is durable; an exception rolls back (nothing is written) and
    propagates. Cancelling the task while it waits for its turn gives the
    turn up.
    """

    __slots__ = ("_store", "_tx", "_done", "_inside")

    def __init__(self, store: _native.Store) -> None:
        self._store = store
        self._tx: Tx | None = None
        self._done: asyncio.Future[None] | None = None
        self._inside: contextvars.Token[_native.CallerContext | None] | None = None

    async def __aenter__(self) -> Tx:
        if self._tx is not None or self._done is not None:
            raise _closed("transaction")  # one `async with` per store.tx()
        # The task is the caller: a task started inside a transaction may
        # open its own, which waits its turn.
        task = id(asyncio.current_task())
        self._store.refuse_tx(task)
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[_native.Tx] = loop.create_future()
        done: asyncio.Future[None] = loop.create_future()
        done.add_done_callback(_retrieve)
        self._done = done
        ticket = self._store.tx_then(completions(loop), ready, done)
        try:
            native = await ready
        except asyncio.CancelledError:
            # Not started: it never will. Started meanwhile: the session,
            # dropped unseen, rolls back.
            ticket.cancel()
            raise
        self._tx = Tx(native)
        self._inside = _tx_marks.enter_tx(native, task)
        return self._tx

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        tx, done = self._tx, self._done
        assert tx is not None and done is not None
        tx._ended = True
        try:
            if self._inside is not None:
                _tx_marks.caller.reset(self._inside)
        except ValueError:
            pass  # left in another context than it was entered in: nothing to undo here
        if et is not None:
            tx._n.rollback()
            return
        try:
            tx._n.commit()
        except ClosedError:
            # The writer ended it first (it was open too long): its reason is in `done`.
            await done
            raise
        await done


class Tx:
    """An open transaction: ``tx.bucket(b)`` gives bucket ``b``'s calls inside it.

    Everything written through it commits together when the ``async with``
    block ends, or not at all. Calls after the block are ``ClosedError``.
    Inside the block, a write of the same store through a handle outside the
    transaction is ``InvalidError`` at once: it would wait for this one to
    end. Starting another transaction of the same store in the same task is
    ``InvalidError`` too.
    """

    __slots__ = ("_n", "_ended")

    def __init__(self, native: _native.Tx) -> None:
        self._n = native
        self._ended = False

    def bucket(self, bucket: Bucket[T]) -> TxBucket[T]:
        """The calls of ``bucket`` (or a branch of it) inside this transaction::

            async with store.tx() as tx:
                left = await tx.bucket(stock).take("apples")
                await tx.bucket(orders).set(order_id, "apples")
        """
        return TxBucket(self, bucket._n)

    @overload
    def with_(self, handle: Bucket[T]) -> TxBucket[T]: ...
    @overload
    def with_(self, handle: Counters) -> TxCounters: ...
    @overload
    def with_(self, handle: Quota) -> TxQuota: ...
    @overload
    def with_(self, handle: Once[T]) -> TxOnce[T]: ...
    @overload
    def with_(self, handle: RateLimit) -> NoReturn: ...

    def with_(self, handle: Any) -> Any:
        """``handle`` inside this transaction, spelled as ``tx.with(handle)`` in
        the other languages: a bucket (as :meth:`bucket`), durable counters, a
        quota or a once's answers (``get``, ``delete``), all committed or rolled
        back together. Counters with ``flush_every`` and rate limits keep their
        state in memory and are ``InvalidError`` here, saying so."""
        joined = kind_in_tx(self, handle, True)
        return self.bucket(handle) if joined is None else joined

    def _check_open(self) -> None:
        if self._ended:
            raise _closed("transaction")

    def __repr__(self) -> str:
        return f"<tinystore.Tx{' ended' if self._ended else ''}>"


class TxBucket(Generic[T]):
    """A bucket's calls inside a transaction: they see the transaction's own
    writes, and others see none of them before the commit. Each runs at once
    and returns a completed future (a bad argument raises where it is awaited)."""

    __slots__ = ("_tx", "_b")

    def __init__(self, tx: Tx, bucket: _native.Bucket) -> None:
        self._tx = tx
        self._b = bucket

    @property
    def name(self) -> str:
        """The bucket's name."""
        return self._b.name

    def under(self, *owners: Key) -> TxBucket[T]:
        """The branch of ``owners`` under this one, in the same transaction."""
        return TxBucket(self._tx, self._b.under(*owners))

    def _run(self, call: Callable[[_native.Tx], R]) -> asyncio.Future[R]:
        tx = self._tx
        if tx._ended:
            err = _closed("transaction")

            def closed(_: _native.Tx) -> R:
                raise err

            call = closed
        return _now(lambda: call(tx._n))

    def get(self, key: Key) -> asyncio.Future[T | None]:
        """The value of a live key as the transaction sees it, or None. Renews nothing."""
        return self._run(lambda n: self._b.get(key, scope=n))

    def entry(self, key: Key) -> asyncio.Future[Entry[T] | None]:
        """The value with its version and expiry as the transaction sees it, or None."""

        def call(n: _native.Tx) -> Entry[T] | None:
            row = self._b.entry(key, scope=n)
            return None if row is None else _entry(row)

        return self._run(call)

    def has(self, key: Key) -> asyncio.Future[bool]:
        """Whether a live key is there, as the transaction sees it."""
        return self._run(lambda n: self._b.has(key, scope=n))

    def list(self, *, after: Key | None = None, limit: int | None = None) -> asyncio.Future[Page[T]]:
        """One page of this branch's own keys as the transaction sees them."""

        def call(n: _native.Tx) -> Page[T]:
            rows, nxt = self._b.list(after, limit, n)
            return Page([_entry(r) for r in rows], nxt)

        return self._run(call)

    def set(
        self,
        key: Key,
        value: T,
        *,
        ttl: Duration | None = None,
        expires_at: dt.datetime | None = None,
        if_version: str | None = None,
    ) -> asyncio.Future[str]:
        """Writes ``value`` in the transaction; gives its version (as ``Bucket.set``)."""
        return self._run(lambda n: self._b.set(key, value, ttl, opt_millis(expires_at), if_version, n))

    def create(
        self, key: Key, value: T, *, ttl: Duration | None = None, expires_at: dt.datetime | None = None
    ) -> asyncio.Future[bool]:
        """Writes ``value`` only if the key is absent; says whether it did."""
        return self._run(lambda n: self._b.create(key, value, ttl, opt_millis(expires_at), n))

    def take(self, key: Key, *, if_version: str | None = None) -> asyncio.Future[T | None]:
        """Reads and deletes the key in the transaction; None when absent."""
        return self._run(lambda n: self._b.take(key, if_version, n))

    def delete(self, key: Key, *, if_version: str | None = None) -> asyncio.Future[bool]:
        """Deletes the key in the transaction; says whether a live key was there."""
        return self._run(lambda n: self._b.delete(key, if_version, n))

    def expire(
        self, key: Key, when: Duration | dt.datetime, *, if_version: str | None = None
    ) -> asyncio.Future[bool]:
        """Gives a live key a new expiry, ``"1h"`` from now or at a datetime; says whether it was there."""
        if isinstance(when, dt.datetime):
            return self._run(lambda n: self._b.expire(key, None, opt_millis(when), if_version, n))
        return self._run(lambda n: self._b.expire(key, when, None, if_version, n))

    def clear(self) -> asyncio.Future[None]:
        """Removes this branch and every branch under it, in the transaction."""
        return self._run(lambda n: self._b.clear(n))

    def __repr__(self) -> str:
        return f"<tinystore.TxBucket {self.name!r}>"


class View:
    """One point in time of the store: use it as ``async with store.view() as v:``.

    ``v.bucket(b)`` reads bucket ``b`` as the file was at the view's first
    read, whatever commits meanwhile; it has no write calls. Reads renew
    nothing. Reads after the block are ``ClosedError``. Keep views short:
    the file keeps every page a view may still read.
    """

    __slots__ = ("_store", "_n")

    def __init__(self, store: _native.Store) -> None:
        self._store = store
        self._n: _native.View | None = None

    async def __aenter__(self) -> View:
        if self._n is not None:
            raise _closed("view")
        self._n = self._store.view()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._n is not None:
            self._n.close()

    def bucket(self, bucket: Bucket[T]) -> ViewBucket[T]:
        """The reads of ``bucket`` (or a branch of it) in this view."""
        if self._n is None:
            raise _closed("view")
        return ViewBucket(self._n, bucket._n)

    with_ = bucket
    """The same as :meth:`bucket`, spelled as ``view.with(bucket)`` in the other languages."""

    def __repr__(self) -> str:
        return "<tinystore.View>"


class ViewBucket(Generic[T]):
    """A bucket's reads in a view. Each runs at once and returns a completed future."""

    __slots__ = ("_v", "_b")

    def __init__(self, view: _native.View, bucket: _native.Bucket) -> None:
        self._v = view
        self._b = bucket

    @property
    def name(self) -> str:
        """The bucket's name."""
        return self._b.name

    def under(self, *owners: Key) -> ViewBucket[T]:
        """The branch of ``owners`` under this one, in the same view."""
        return ViewBucket(self._v, self._b.under(*owners))

    def get(self, key: Key) -> asyncio.Future[T | None]:
        """The value of a live key in the view, or None."""
        return _now(lambda: self._b.get(key, scope=self._v))

    def entry(self, key: Key) -> asyncio.Future[Entry[T] | None]:
        """The value with its version and expiry in the view, or None."""

        def call() -> Entry[T] | None:
            row = self._b.entry(key, scope=self._v)
            return None if row is None else _entry(row)

        return _now(call)

    def has(self, key: Key) -> asyncio.Future[bool]:
        """Whether a live key is there in the view."""
        return _now(lambda: self._b.has(key, scope=self._v))

    def list(self, *, after: Key | None = None, limit: int | None = None) -> asyncio.Future[Page[T]]:
        """One page of this branch's own keys in the view."""

        def call() -> Page[T]:
            rows, nxt = self._b.list(after, limit, self._v)
            return Page([_entry(r) for r in rows], nxt)

        return _now(call)

    def __repr__(self) -> str:
        return f"<tinystore.ViewBucket {self.name!r}>"
