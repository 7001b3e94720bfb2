"""Transactions and snapshots for synchronous code (KV-16).

``with store.tx() as tx:`` blocks its thread (with the GIL released) until
the writer's turn comes; calls through ``tx.bucket(b)`` run inside the
transaction and see its own writes; leaving the block commits and returns
once the commit is durable, and an exception rolls back and propagates.
``with store.view() as v:`` reads one point in time.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, NoReturn, Protocol, TypeVar, overload

from . import _native
from ._base import Key
from ._results import Created, Entry, Page, _created, _entry
from ._time import Duration, opt_millis
from ._tx_kinds import SyncTxCounters, SyncTxOnce, SyncTxQuota, kind_in_tx
from .errors import ClosedError

if TYPE_CHECKING:
    from ._sync_limits import Counters, Once, Quota, RateLimit
    from .sync import Bucket

__all__ = ["Transaction", "Tx", "TxBucket", "View", "ViewBucket"]

T = TypeVar("T")
R = TypeVar("R")
_B = TypeVar("_B", bound="TxBucket[Any]")
_V = TypeVar("_V", bound="ViewBucket[Any]")


def _closed(what: str) -> ClosedError:
    return ClosedError(f"the {what} has ended")


class _Tx(Protocol):
    """What a transaction's buckets need of it, in either API."""

    _n: _native.Tx
    _ended: bool


class Transaction:
    """A transaction to come: use it as ``with store.tx() as tx:``.

    Entering blocks until the writer's turn and gives a :class:`Tx`; leaving
    the block normally commits and returns once the commit is durable; an
    exception rolls back (nothing is written) and propagates.
    """

    __slots__ = ("_store", "_tx")

    def __init__(self, store: _native.Store) -> None:
        self._store = store
        self._tx: Tx | None = None

    def __enter__(self) -> Tx:
        if self._tx is not None:
            raise _closed("transaction")  # one `with` per store.tx()
        # The engine refuses one inside another of this thread's.
        self._tx = Tx(self._store.tx())
        return self._tx

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        tx = self._tx
        assert tx is not None
        tx._ended = True
        if et is not None:
            tx._n.rollback()
            return
        tx._n.commit_wait()


class Tx:
    """An open transaction: ``tx.bucket(b)`` gives bucket ``b``'s calls inside it.

    Everything written through it commits together when the ``with`` block
    ends, or not at all. Calls after the block are ``ClosedError``. Inside
    the block, a write of the same store from the same thread through a
    handle outside the transaction is ``InvalidError`` at once: it would
    wait for this one to end. Starting another transaction of the same
    store in the same thread is ``InvalidError`` too.
    """

    __slots__ = ("_n", "_ended")

    def __init__(self, native: _native.Tx) -> None:
        self._n = native
        self._ended = False

    def bucket(self, bucket: Bucket[T]) -> TxBucket[T]:
        """The calls of ``bucket`` (or a branch of it) inside this transaction::

            with store.tx() as tx:
                left = tx.bucket(stock).take("apples")
                tx.bucket(orders).set(order_id, "apples")
        """
        return TxBucket(self, bucket._n)

    @overload
    def with_(self, handle: Bucket[T]) -> TxBucket[T]: ...
    @overload
    def with_(self, handle: Counters) -> SyncTxCounters: ...
    @overload
    def with_(self, handle: Quota) -> SyncTxQuota: ...
    @overload
    def with_(self, handle: Once[T]) -> SyncTxOnce[T]: ...
    @overload
    def with_(self, handle: RateLimit) -> NoReturn: ...

    def with_(self, handle: Any) -> Any:
        """``handle`` inside this transaction, spelled as ``tx.with(handle)`` in
        the other languages: a bucket (as :meth:`bucket`), durable counters, a
        quota or a once's answers (``get``, ``delete``), all committed or rolled
        back together. Counters with ``flush_every`` and rate limits keep their
        state in memory and are ``InvalidError`` here, saying so."""
        joined = kind_in_tx(self, handle, False)
        return self.bucket(handle) if joined is None else joined

    def _check_open(self) -> None:
        if self._ended:
            raise _closed("transaction")

    def __repr__(self) -> str:
        return f"<tinystore.sync.Tx{' ended' if self._ended else ''}>"


class TxBucket(Generic[T]):
    """A bucket's calls inside a transaction: they see the transaction's own
    writes, and others see none of them before the commit."""

    __slots__ = ("_tx", "_b")
    _shown = "tinystore.sync"

    def __init__(self, tx: _Tx, bucket: _native.Bucket) -> None:
        self._tx = tx
        self._b = bucket

    @property
    def name(self) -> str:
        """The bucket's name."""
        return self._b.name

    def under(self: _B, *owners: Key) -> _B:
        """The branch of ``owners`` under this one, in the same transaction."""
        return type(self)(self._tx, self._b.under(*owners))

    def _run(self, call: Callable[[_native.Tx], R]) -> R:
        if self._tx._ended:
            raise _closed("transaction")
        return call(self._tx._n)

    def get(self, key: Key) -> T | None:
        """The value of a live key as the transaction sees it, or None. Renews nothing."""
        return self._run(lambda n: self._b.get(key, scope=n))

    def entry(self, key: Key) -> Entry[T] | None:
        """The value with its version and expiry as the transaction sees it, or None."""
        row = self._run(lambda n: self._b.entry(key, scope=n))
        return None if row is None else _entry(row)

    def has(self, key: Key) -> bool:
        """Whether a live key is there, as the transaction sees it."""
        return self._run(lambda n: self._b.has(key, scope=n))

    def list(self, *, after: Key | None = None, limit: int | None = None) -> Page[T]:
        """One page of this branch's own keys as the transaction sees them."""
        rows, nxt = self._run(lambda n: self._b.list(after, limit, n))
        return Page([_entry(r) for r in rows], nxt)

    def set(
        self,
        key: Key,
        value: T,
        *,
        ttl: Duration | None = None,
        expires_at: dt.datetime | None = None,
        if_version: str | None = None,
    ) -> str:
        """Writes ``value`` in the transaction; returns its version (as ``Bucket.set``)."""
        return self._run(lambda n: self._b.set(key, value, ttl, opt_millis(expires_at), if_version, n))

    def create(self, key: Key, value: T, *, ttl: Duration | None = None, expires_at: dt.datetime | None = None) -> bool:
        """Writes ``value`` only if the key is absent; says whether it did."""
        return self._run(lambda n: self._b.create(key, value, ttl, opt_millis(expires_at), n))

    def create_entry(
        self, key: Key, value: T, *, ttl: Duration | None = None, expires_at: dt.datetime | None = None
    ) -> Created[T]:
        """``create`` in the transaction, answering the entry written or found (as ``Bucket.create_entry``)."""
        return _created(self._run(lambda n: self._b.create_entry(key, value, ttl, opt_millis(expires_at), n)))

    def take(self, key: Key, *, if_version: str | None = None) -> T | None:
        """Reads and deletes the key in the transaction; None when absent."""
        return self._run(lambda n: self._b.take(key, if_version, n))

    def delete(self, key: Key, *, if_version: str | None = None) -> bool:
        """Deletes the key in the transaction; says whether a live key was there."""
        return self._run(lambda n: self._b.delete(key, if_version, n))

    def expire(self, key: Key, when: Duration | dt.datetime, *, if_version: str | None = None) -> bool:
        """Gives a live key a new expiry, ``"1h"`` from now or at a datetime; says whether it was there."""
        if isinstance(when, dt.datetime):
            return self._run(lambda n: self._b.expire(key, None, opt_millis(when), if_version, n))
        return self._run(lambda n: self._b.expire(key, when, None, if_version, n))

    def clear(self) -> None:
        """Removes this branch and every branch under it, in the transaction."""
        self._run(lambda n: self._b.clear(n))

    def __repr__(self) -> str:
        return f"<{self._shown}.TxBucket {self.name!r}>"


class View:
    """One point in time of the store: use it as ``with store.view() as v:``.

    ``v.bucket(b)`` reads bucket ``b`` as the file was at the view's first
    read, whatever commits meanwhile; it has no write calls. Reads renew
    nothing. Reads after the block are ``ClosedError``.
    """

    __slots__ = ("_store", "_n")

    def __init__(self, store: _native.Store) -> None:
        self._store = store
        self._n: _native.View | None = None

    def __enter__(self) -> View:
        if self._n is not None:
            raise _closed("view")
        self._n = self._store.view()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
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
        return "<tinystore.sync.View>"


class ViewBucket(Generic[T]):
    """A bucket's reads in a view."""

    __slots__ = ("_v", "_b")
    _shown = "tinystore.sync"

    def __init__(self, view: _native.View, bucket: _native.Bucket) -> None:
        self._v = view
        self._b = bucket

    @property
    def name(self) -> str:
        """The bucket's name."""
        return self._b.name

    def under(self: _V, *owners: Key) -> _V:
        """The branch of ``owners`` under this one, in the same view."""
        return type(self)(self._v, self._b.under(*owners))

    def get(self, key: Key) -> T | None:
        """The value of a live key in the view, or None."""
        return self._b.get(key, scope=self._v)

    def entry(self, key: Key) -> Entry[T] | None:
        """The value with its version and expiry in the view, or None."""
        row = self._b.entry(key, scope=self._v)
        return None if row is None else _entry(row)

    def has(self, key: Key) -> bool:
        """Whether a live key is there in the view."""
        return self._b.has(key, scope=self._v)

    def list(self, *, after: Key | None = None, limit: int | None = None) -> Page[T]:
        """One page of this branch's own keys in the view."""
        rows, nxt = self._b.list(after, limit, self._v)
        return Page([_entry(r) for r in rows], nxt)

    def __repr__(self) -> str:
        return f"<{self._shown}.ViewBucket {self.name!r}>"
