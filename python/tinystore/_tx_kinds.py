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

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from . import _native
from ._base import Key
from ._handles import allowance
from ._loop import answering
from ._results import Allowance

__all__ = ["TxCounters", "TxQuota", "TxOnce", "SyncTxCounters", "SyncTxQuota", "SyncTxOnce", "kind_in_tx"]

T = TypeVar("T")
R = TypeVar("R")


class _Joined:
    """A handle of a kind inside a transaction: the transaction's calls, or
    ``ClosedError`` once it has ended (``check`` gives the error)."""

    __slots__ = ("_tx", "_h")

    def __init__(self, tx: Any, handle: Any) -> None:
        self._tx = tx
        self._h = handle

    @property
    def name(self) -> str:
        """The handle's name."""
        return str(self._h.name)

    def _call(self, call: Callable[[_native.Tx], R]) -> R:
        self._tx._check_open()
        return call(self._tx._n)


class SyncTxCounters(_Joined):
    """Durable counters inside a transaction (synchronous)."""

    def under(self, *owners: Key) -> SyncTxCounters:
        """The branch of ``owners``, in the same transaction."""
        return type(self)(self._tx, self._h.under(*owners))

    def add(self, key: Key, n: int = 1) -> int:
        """Adds ``n``; the new value, as the transaction sees it."""
        return self._call(lambda t: self._h.add(key, n, t))

    def max(self, key: Key, n: int) -> int:
        """Keeps the larger of the counter and ``n``; returns it."""
        return self._call(lambda t: self._h.max(key, n, t))

    def get(self, key: Key) -> int:
        """The counter as the transaction sees it: 0 when missing or expired."""
        return self._call(lambda t: self._h.get(key, t))

    def delete(self, key: Key) -> bool:
        """Deletes the counter; says whether a live one was there."""
        return self._call(lambda t: self._h.delete(key, t))


class SyncTxQuota(_Joined):
    """A quota inside a transaction (synchronous)."""

    def under(self, *owners: Key) -> SyncTxQuota:
        """The branch of ``owners``, in the same transaction."""
        return type(self)(self._tx, self._h.under(*owners))

    def allow(self, key: Key, n: int = 1) -> Allowance:
        """Counts ``n`` uses in every window or in none; commits with the transaction."""
        return allowance(self._call(lambda t: self._h.allow(key, n, t)))

    def refund(self, key: Key, n: int = 1) -> Allowance:
        """Gives ``n`` uses back to the windows that have not reset."""
        return allowance(self._call(lambda t: self._h.refund(key, n, t)))

    def peek(self, key: Key) -> Allowance:
        """The answer one use would get, as the transaction sees it."""
        return allowance(self._call(lambda t: self._h.peek(key, t)))

    def reset(self, key: Key) -> None:
        """Forgets the key."""
        self._call(lambda t: self._h.reset(key, t))


class SyncTxOnce(_Joined, Generic[T]):
    """A once's answers inside a transaction (synchronous): ``get`` and ``delete``."""

    def under(self, *owners: Key) -> SyncTxOnce[T]:
        """The branch of ``owners``, in the same transaction."""
        return type(self)(self._tx, self._h.under(*owners))

    def get(self, key: Key) -> T | None:
        """The answer kept for ``key`` as the transaction sees it, or None."""
        return self._call(lambda t: self._h.get(key, t))

    def delete(self, key: Key) -> bool:
        """Forgets the answer kept for ``key``; says whether one was kept."""
        return self._call(lambda t: self._h.delete(key, t))


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
