"""Counters, quotas and ``once`` answers inside a transaction (KV-16).

``tx.with_(handle)`` takes every durable kind: a bucket, durable counters
(``add``, ``max``, ``get``, ``delete``), a quota (``allow``, ``refund``,
``peek``, ``reset``) and a once's answers (``get``, ``delete``); they commit
or roll back with everything else in the transaction. What keeps its state
in memory is ``InvalidError`` at once, with the engine's reason: counters
with ``flush_every`` and rate limits. A run of ``once`` inside a
transaction is ``InvalidError`` too (its claim and its answer are writes of
their own).

The asyncio classes answer completed futures, as ``TxBucket`` does; the
``Sync`` ones answer values.
"""

from __future__ import annotations

from typing import Any, TypeVar

from . import _native
from ._base import Key
from ._handles import Handle
from ._loop import answering
from ._scopes import Scoped
from ._sync_limits import CounterCalls, OnceCalls, Quota

__all__ = ["TxCounters", "TxQuota", "TxOnce", "SyncTxCounters", "SyncTxQuota", "SyncTxOnce", "kind_in_tx"]

T = TypeVar("T")
J = TypeVar("J", bound="_Joined")


class _Joined(Handle, Scoped):
    """A handle of a kind inside a transaction: its calls, each in the
    transaction, or ``ClosedError`` once it has ended."""

    __slots__ = ("_tx",)
    _shown = __name__

    def __init__(self, tx: Any, handle: Any) -> None:
        super().__init__(handle)
        self._tx = tx

    def _in(self) -> _native.Tx:
        self._tx._check_open()
        return self._tx._n

    def under(self: J, *owners: Key) -> J:
        """The branch of ``owners``, in the same transaction."""
        return type(self)(self._tx, self._n.under(*owners))


class SyncTxCounters(_Joined, CounterCalls):
    """Durable counters inside a transaction (synchronous)."""

    __slots__ = ()


class SyncTxQuota(_Joined, Quota):
    """A quota inside a transaction (synchronous)."""

    __slots__ = ()


class SyncTxOnce(_Joined, OnceCalls[T]):
    """A once's answers inside a transaction (synchronous): ``get`` and ``delete``."""

    __slots__ = ()


class TxCounters(SyncTxCounters):
    """Durable counters inside a transaction: each call runs at once and
    returns a completed future."""

    add = answering(SyncTxCounters.add)  # type: ignore[assignment]
    max = answering(SyncTxCounters.max)  # type: ignore[assignment]
    get = answering(SyncTxCounters.get)  # type: ignore[assignment]
    delete = answering(SyncTxCounters.delete)  # type: ignore[assignment]


class TxQuota(SyncTxQuota):
    """A quota inside a transaction: each call returns a completed future."""

    allow = answering(SyncTxQuota.allow)  # type: ignore[assignment]
    refund = answering(SyncTxQuota.refund)  # type: ignore[assignment]
    peek = answering(SyncTxQuota.peek)  # type: ignore[assignment]
    reset = answering(SyncTxQuota.reset)  # type: ignore[assignment]


class TxOnce(SyncTxOnce[T]):
    """A once's answers inside a transaction: each call returns a completed future."""

    get = answering(SyncTxOnce.get)  # type: ignore[assignment]
    delete = answering(SyncTxOnce.delete)  # type: ignore[assignment]


def kind_in_tx(tx: Any, handle: Any, asyncio_api: bool) -> Any:
    """``handle`` (counters, a quota or a once) inside the transaction
    ``tx``, or ``InvalidError`` at once for what cannot join one. A bucket
    is the caller's; None for a handle of no kind here."""
    native = getattr(handle, "_n", None)
    if isinstance(native, (_native.Bucket, _native.Counters, _native.Quota, _native.Once, _native.RateLimit)):
        tx._n.check_joins(native)  # raises the engine's reason for what cannot join
    if isinstance(native, _native.Counters):
        return (TxCounters if asyncio_api else SyncTxCounters)(tx, native)
    if isinstance(native, _native.Quota):
        return (TxQuota if asyncio_api else SyncTxQuota)(tx, native)
    if isinstance(native, _native.Once):
        return (TxOnce if asyncio_api else SyncTxOnce)(tx, native)
    return None
