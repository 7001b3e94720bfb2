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
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, overload

from . import _native, _tx_marks
from ._loop import answering
from ._bucket_calls import AsyncBucketReads
from ._sync_tx import Tx as _SyncTx
from ._sync_tx import TxBucket as _SyncTxBucket
from ._sync_tx import ViewBucket as _SyncViewBucket
from ._sync_tx import _closed, _ViewBase
from ._tx_kinds import TxCounters, TxOnce, TxQuota
from .errors import ClosedError

if TYPE_CHECKING:
    from ._aio import Bucket
    from ._aio_limits import Counters, Once, Quota, RateLimit

__all__ = ["Transaction", "Tx", "TxBucket", "View", "ViewBucket"]

T = TypeVar("T")


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
        self._done: _native.Pending | None = None
        self._inside: contextvars.Token[_native.CallerContext | None] | None = None

    async def __aenter__(self) -> Tx:
        if self._tx is not None or self._done is not None:
            raise _closed("tx")  # one `async with` per store.tx()
        # The task is the caller: a task started inside a transaction may
        # open its own, which waits its turn.
        task = id(asyncio.current_task())
        self._store.refuse_tx(task)
        # Cancelled while it waits: not started, it never will; started
        # meanwhile, the session, dropped unseen, rolls back.
        ready, self._done = self._store.tx_then(asyncio.get_running_loop())
        native = await ready
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


class Tx(_SyncTx):
    """An open transaction: ``tx.bucket(b)`` gives bucket ``b``'s calls inside it.

    Everything written through it commits together when the ``async with``
    block ends, or not at all. Calls after the block are ``ClosedError``.
    Inside the block, a write of the same store through a handle outside the
    transaction is ``InvalidError`` at once: it would wait for this one to
    end. Starting another transaction of the same store in the same task is
    ``InvalidError`` too.
    """

    __slots__ = ()
    _shown = "tinystore"
    _asyncio = True

    def bucket(self, bucket: Bucket[T]) -> TxBucket[T]:  # type: ignore[override]
        """The calls of ``bucket`` (or a branch of it) inside this transaction::

            async with store.tx() as tx:
                left = await tx.bucket(stock).take("apples")
                await tx.bucket(orders).set(order_id, "apples")
        """
        return TxBucket(self, bucket._n)

    @overload  # type: ignore[override]
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
        the other languages: a bucket, durable counters, a quota or a once's
        answers, each call answering a completed future (see ``tinystore.sync.Tx.with_``)."""
        return _SyncTx.with_(self, handle)


class TxBucket(AsyncBucketReads[T], _SyncTxBucket[T]):
    """A bucket's calls inside a transaction: they see the transaction's own
    writes, and others see none of them before the commit. Each runs at once
    and returns a completed future (a bad argument raises where it is awaited)."""

    __slots__ = ()
    _shown = "tinystore"

    set = answering(_SyncTxBucket.set)  # type: ignore[assignment]
    create = answering(_SyncTxBucket.create)  # type: ignore[assignment]
    create_entry = answering(_SyncTxBucket.create_entry)  # type: ignore[assignment]
    take = answering(_SyncTxBucket.take)  # type: ignore[assignment]
    delete = answering(_SyncTxBucket.delete)  # type: ignore[assignment]
    expire = answering(_SyncTxBucket.expire)  # type: ignore[assignment]
    clear = answering(_SyncTxBucket.clear)  # type: ignore[assignment]


class View(_ViewBase):
    """One point in time of the store: use it as ``async with store.view() as v:``.

    ``v.bucket(b)`` reads bucket ``b`` as the file was at the view's first
    read, whatever commits meanwhile; it has no write calls. Reads renew
    nothing. Reads after the block are ``ClosedError``. Keep views short:
    the file keeps every page a view may still read.
    """

    __slots__ = ()
    _shown = "tinystore"

    async def __aenter__(self) -> View:
        return self._open()

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._close()

    def bucket(self, bucket: Bucket[T]) -> ViewBucket[T]:
        """The reads of ``bucket`` (or a branch of it) in this view."""
        return ViewBucket(self._opened(), bucket._n)

    with_ = bucket
    """The same as :meth:`bucket`, spelled as ``view.with(bucket)`` in the other languages."""


class ViewBucket(AsyncBucketReads[T], _SyncViewBucket[T]):
    """A bucket's reads in a view. Each runs at once and returns a completed future."""

    __slots__ = ()
    _shown = "tinystore"
