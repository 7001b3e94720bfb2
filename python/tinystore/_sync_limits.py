"""Rate limits, quotas, counters and ``once`` for synchronous code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from . import _native
from ._base import Key
from ._tx_marks import running
from ._handles import Handle, RunChecks, allowance
from ._results import Allowance
from ._scopes import Scoped

__all__ = ["RateLimit", "Quota", "Counters", "Once", "CounterCalls", "OnceCalls"]

T = TypeVar("T")


class RateLimit(Handle):
    """A rate limit (GCRA), answered from memory (synchronous)."""

    __slots__ = ()
    _shown = "tinystore.sync"
    _n: _native.RateLimit

    def allow(self, key: Key, n: int = 1) -> Allowance:
        """Takes ``n`` requests or none: ``ok``, ``left`` and ``retry_at``."""
        return allowance(self._n.allow(key, n))

    def peek(self, key: Key) -> Allowance:
        """The answer one request would get now, counting nothing."""
        return allowance(self._n.peek(key))

    def reset(self, key: Key) -> None:
        """Forgets the key."""
        self._n.reset(key)


class Quota(Handle, Scoped):
    """A quota of named windows (synchronous): named windows
    (``session="100/5h", weekly="300/7d"``) that reset on their own."""

    __slots__ = ()
    _shown = "tinystore.sync"
    _n: _native.Quota

    def allow(self, key: Key, n: int = 1) -> Allowance:
        """Counts ``n`` uses in every window, or in none, in one durable
        write; ``windows`` gives each window's use."""
        return self._after(self._n.allow(key, n, self._writes_in()), allowance)

    def peek(self, key: Key) -> Allowance:
        """The answer one use would get now, counting nothing."""
        return allowance(self._n.peek(key, self._in()))

    def refund(self, key: Key, n: int = 1) -> Allowance:
        """Gives ``n`` uses back to the windows that have not reset since (the work failed)."""
        return self._after(self._n.refund(key, n, self._writes_in()), allowance)

    def reset(self, key: Key) -> None:
        """Forgets the key: every window starts again at its next use."""
        return self._n.reset(key, self._writes_in())


class CounterCalls(Handle, Scoped):
    """The calls of counters that a transaction has too."""

    __slots__ = ()
    _n: _native.Counters

    def add(self, key: Key, n: int = 1) -> int:
        """Adds ``n`` (which may be negative); returns the new value. Past int64 is ``LimitError``."""
        return self._n.add(key, n, self._writes_in())

    def max(self, key: Key, n: int) -> int:
        """Keeps the larger of the counter and ``n``; returns it."""
        return self._n.max(key, n, self._writes_in())

    def get(self, key: Key) -> int:
        """The counter's value: 0 when missing or expired."""
        return self._n.get(key, self._in())

    def delete(self, key: Key) -> bool:
        """Deletes the counter; says whether a live one was there."""
        return self._n.delete(key, self._writes_in())


class Counters(CounterCalls):
    """Integer counters: ``add`` returns the new value; a missing counter is 0 (synchronous)."""

    __slots__ = ()
    _shown = "tinystore.sync"

    def clear(self) -> None:
        """Deletes every counter of this branch and of the branches under it."""
        return self._n.clear(self._writes_in())


class OnceCalls(Handle, Scoped, Generic[T]):
    """The calls of a once that a transaction has too: its answers."""

    __slots__ = ()
    _n: _native.Once

    def get(self, key: Key) -> T | None:
        """The answer kept for ``key``, or None."""
        return self._n.get(key, self._in())

    def delete(self, key: Key) -> bool:
        """Forgets the answer kept for ``key`` (the next run runs again); says whether one was kept."""
        return self._n.delete(key, self._writes_in())


class Once(OnceCalls[T]):
    """Runs a function once per key and keeps its answer (synchronous)."""

    __slots__ = ()
    _shown = "tinystore.sync"

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
