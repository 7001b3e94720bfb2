"""Transactions and snapshots for synchronous code (KV-16).

``with store.tx() as tx:`` blocks its thread (with the GIL released) until
the writer's turn comes; calls through ``tx.bucket(b)`` run inside the
transaction and see its own writes; leaving the block commits and returns
once the commit is durable, and an exception rolls back and propagates.
``with store.view() as v:`` reads one point in time.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar, overload

from . import _native
from ._base import Key
from ._bucket_calls import BucketReads, BucketWrites
from ._tx_kinds import SyncTxCounters, SyncTxOnce, SyncTxQuota, kind_in_tx
from .errors import Error

if TYPE_CHECKING:
    from ._sync_limits import Counters, Once, Quota, RateLimit
    from .sync import Bucket

__all__ = ["Transaction", "Tx", "TxBucket", "View", "ViewBucket"]

T = TypeVar("T")
_B = TypeVar("_B", bound="TxBucket[Any]")
_V = TypeVar("_V", bound="ViewBucket[Any]")
_W = TypeVar("_W", bound="_ViewBase")


def _closed(what: str) -> Error:
    return _native.refusal(f"{what}_ended")


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
            raise _closed("tx")  # one `with` per store.tx()
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
    _shown = "tinystore.sync"
    _asyncio = False  # whether its kinds answer completed futures (see kind_in_tx)

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
        joined = kind_in_tx(self, handle, self._asyncio)
        return self.bucket(handle) if joined is None else joined

    def _check_open(self) -> None:
        if self._ended:
            raise _closed("tx")

    def __repr__(self) -> str:
        return f"<{self._shown}.Tx{' ended' if self._ended else ''}>"


class TxBucket(BucketWrites[T]):
    """A bucket's calls inside a transaction: they see the transaction's own
    writes, and others see none of them before the commit. Reads renew nothing."""

    __slots__ = ("_tx", "_n")
    _shown = "tinystore.sync"

    def __init__(self, tx: _Tx, bucket: _native.Bucket) -> None:
        self._tx = tx
        self._n = bucket

    def _in(self) -> _native.Tx:
        if self._tx._ended:
            raise _closed("tx")
        return self._tx._n

    def under(self: _B, *owners: Key) -> _B:
        """The branch of ``owners`` under this one, in the same transaction."""
        return type(self)(self._tx, self._n.under(*owners))

    def __repr__(self) -> str:
        return f"<{self._shown}.TxBucket {self.name!r}>"


class _ViewBase:
    """What a view of either API does: open once, close, name its scope."""

    __slots__ = ("_store", "_n")
    _shown = "tinystore.sync"

    def __init__(self, store: _native.Store) -> None:
        self._store = store
        self._n: _native.View | None = None

    def _open(self: _W) -> _W:
        if self._n is not None:
            raise _closed("view")  # one block per store.view()
        self._n = self._store.view()
        return self

    def _close(self) -> None:
        if self._n is not None:
            self._n.close()

    def _opened(self) -> _native.View:
        if self._n is None:
            raise _closed("view")
        return self._n

    def __repr__(self) -> str:
        return f"<{self._shown}.View>"


class View(_ViewBase):
    """One point in time of the store: use it as ``with store.view() as v:``.

    ``v.bucket(b)`` reads bucket ``b`` as the file was at the view's first
    read, whatever commits meanwhile; it has no write calls. Reads renew
    nothing. Reads after the block are ``ClosedError``.
    """

    __slots__ = ()

    def __enter__(self) -> View:
        return self._open()

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self._close()

    def bucket(self, bucket: Bucket[T]) -> ViewBucket[T]:
        """The reads of ``bucket`` (or a branch of it) in this view."""
        return ViewBucket(self._opened(), bucket._n)

    with_ = bucket
    """The same as :meth:`bucket`, spelled as ``view.with(bucket)`` in the other languages."""


class ViewBucket(BucketReads[T]):
    """A bucket's reads in a view, as the file was at the view's first read. Reads renew nothing."""

    __slots__ = ("_v", "_n")
    _shown = "tinystore.sync"

    def __init__(self, view: _native.View, bucket: _native.Bucket) -> None:
        self._v = view
        self._n = bucket

    def _in(self) -> _native.View:
        return self._v

    def under(self: _V, *owners: Key) -> _V:
        """The branch of ``owners`` under this one, in the same view."""
        return type(self)(self._v, self._n.under(*owners))

    def __repr__(self) -> str:
        return f"<{self._shown}.ViewBucket {self.name!r}>"
