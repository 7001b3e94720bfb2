"""Rate limits, quotas, counters and ``once`` for synchronous code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from . import _native
from ._base import Key
from ._tx_marks import running
from ._handles import Handle, RunChecks, allowance
from ._results import Allowance

__all__ = ["RateLimit", "Quota", "Counters", "Once"]

T = TypeVar("T")


class _Allowing(Handle):
    """What a rate limit and a quota both answer with an ``Allowance`` (synchronous)."""

    __slots__ = ()
    _shown = "tinystore.sync"

    def allow(self, key: Key, n: int = 1) -> Allowance:
        """Takes ``n`` (requests of a rate limit, uses of every window of a
        quota, durably) or none: ``ok``, ``left``, ``retry_at`` and each window's use."""
        return allowance(self._n.allow(key, n))

    def peek(self, key: Key) -> Allowance:
        """The answer one more would get now, counting nothing."""
        return allowance(self._n.peek(key))

    def reset(self, key: Key) -> None:
        """Forgets the key."""
        self._n.reset(key)


class RateLimit(_Allowing):
    """A rate limit (GCRA), answered from memory (synchronous)."""

    __slots__ = ()
    _n: _native.RateLimit


class Quota(_Allowing):
    """A quota of named windows (synchronous)."""

    __slots__ = ()
    _n: _native.Quota

    def refund(self, key: Key, n: int = 1) -> Allowance:
        """Gives ``n`` uses back to the windows that have not reset since."""
        return allowance(self._n.refund(key, n))


class Counters(Handle):
    """Integer counters (synchronous)."""

    __slots__ = ()
    _shown = "tinystore.sync"
    _n: _native.Counters

    def add(self, key: Key, n: int = 1) -> int:
        """Adds ``n``; returns the new value."""
        return self._n.add(key, n)

    def max(self, key: Key, n: int) -> int:
        """Keeps the larger of the counter and ``n``; returns it."""
        return self._n.max(key, n)

    def get(self, key: Key) -> int:
        """The counter's value: 0 when missing or expired."""
        return self._n.get(key)

    def delete(self, key: Key) -> bool:
        """Deletes the counter; says whether a live one was there."""
        return self._n.delete(key)

    def clear(self) -> None:
        """Deletes every counter of this branch and of the branches under it."""
        self._n.clear()


class Once(Handle, Generic[T]):
    """Runs a function once per key and keeps its answer (synchronous)."""

    __slots__ = ()
    _shown = "tinystore.sync"
    _n: _native.Once

    def run(self, key: Key, fn: Callable[[], T]) -> T:
        """The answer kept for ``key``, or ``fn()`` kept. A run of the key
        elsewhere (another thread or process) is waited for, with the GIL
        released. If ``fn`` raises, nothing is kept."""
        RunChecks.check_fn(self._n, fn)
        kept, got = self._n.begin(key)
        if kept:
            return got
        with running(got) as claim:
            value = fn()
        claim.keep(value)
        return value

    def get(self, key: Key) -> T | None:
        """The answer kept for ``key``, or None."""
        return self._n.get(key)

    def delete(self, key: Key) -> bool:
        """Forgets the answer kept for ``key``; says whether one was kept."""
        return self._n.delete(key)
