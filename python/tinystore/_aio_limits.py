"""Rate limits, quotas, counters and ``once`` for asyncio."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar, Union

from . import _native
from ._base import Key
from ._tx_marks import running
from ._handles import Handle, RunChecks, allowance
from ._loop import answered
from ._results import Allowance

__all__ = ["RateLimit", "Quota", "Counters", "Once"]

T = TypeVar("T")
_get_loop = asyncio.get_running_loop
_answered = _native.Pending.answered
_failed = _native.Pending.failed


class RateLimit(Handle):
    """A rate limit (GCRA): ``rate`` requests per span, ``burst`` at once.

    State lives in memory and reaches the file every second, so ``allow`` is
    answered inline, without a write. A refusal is an answer, never an error.
    """

    __slots__ = ()
    _n: _native.RateLimit

    def allow(self, key: Key, n: int = 1) -> Awaitable[Allowance]:
        """Takes ``n`` requests or none: ``ok``, ``left`` and ``retry_at``. More than the burst is ``InvalidError``.

        Answered inline from memory: the returned awaitable (a future of the
        running loop) is already complete."""
        # A native answer given already, not an asyncio.Future: no future
        # to make and complete, and awaiting it returns the answer at once.
        try:
            return _answered(allowance(self._n.allow(key, n)))
        except Exception as e:
            return _failed(e)

    def peek(self, key: Key) -> asyncio.Future[Allowance]:
        """The answer one request would get now, counting nothing."""
        return answered(lambda: allowance(self._n.peek(key)))

    def reset(self, key: Key) -> asyncio.Future[None]:
        """Forgets the key: its next request has the full burst."""
        return answered(self._n.reset, key)


class Quota(Handle):
    """A quota: named windows (``session="100/5h", weekly="300/7d"``) that reset on their own.

    ``allow`` counts in every window or in none, in one durable write.
    """

    __slots__ = ()
    _n: _native.Quota

    async def allow(self, key: Key, n: int = 1) -> Allowance:
        """Counts ``n`` uses in every window, or in none; ``windows`` gives each window's use."""
        return allowance(await self._n.allow(key, n, _get_loop()))

    def peek(self, key: Key) -> asyncio.Future[Allowance]:
        """The answer one use would get now, counting nothing (read inline)."""
        return answered(lambda: allowance(self._n.peek(key)))

    async def refund(self, key: Key, n: int = 1) -> Allowance:
        """Gives ``n`` uses back to the windows that have not reset since (the work failed)."""
        return allowance(await self._n.refund(key, n, _get_loop()))

    async def reset(self, key: Key) -> None:
        """Forgets the key: every window starts again at its next use."""
        await self._n.reset(key, _get_loop())


class Counters(Handle):
    """Integer counters: ``add`` returns the new value; a missing counter is 0."""

    __slots__ = ()
    _n: _native.Counters

    async def add(self, key: Key, n: int = 1) -> int:
        """Adds ``n`` (which may be negative); returns the new value. Past int64 is ``LimitError``."""
        return await self._n.add(key, n, _get_loop())

    async def max(self, key: Key, n: int) -> int:
        """Keeps the larger of the counter and ``n``; returns it."""
        return await self._n.max(key, n, _get_loop())

    def get(self, key: Key) -> asyncio.Future[int]:
        """The counter's value: 0 when missing or expired (read inline)."""
        return answered(self._n.get, key)

    async def delete(self, key: Key) -> bool:
        """Deletes the counter; says whether a live one was there."""
        return await self._n.delete(key, _get_loop())

    async def clear(self) -> None:
        """Deletes every counter of this branch and of the branches under it."""
        await self._n.clear(_get_loop())


Work = Callable[[], Union[Awaitable[T], T]]


class Once(Handle, Generic[T]):
    """Runs a function once per key and keeps its answer for ``keep`` (a day unless set)."""

    __slots__ = ()
    _n: _native.Once

    async def run(self, key: Key, fn: Work[T]) -> T:
        """The answer kept for ``key``, or ``await fn()`` and keep what it returns.

        A second run of the key while the first runs, in this event loop or
        another process, waits for the first (without blocking the loop) and
        returns its answer. If ``fn`` raises, nothing is kept and the next run
        runs again. A run of the key inside its own ``fn`` is ``InvalidError``.
        """
        RunChecks.check_fn(self._n, fn)
        loop = _get_loop()
        # Cancelled while waiting: a claim that arrives later is dropped, which lets the key go.
        kept, got = await self._n.begin(key, loop)
        if kept:
            return got
        with running(got) as claim:
            value = fn()
            if inspect.isawaitable(value):
                value = await value
        await claim.keep(value, loop)  # cancelled here, the answer is still kept
        return value

    def get(self, key: Key) -> asyncio.Future[T | None]:
        """The answer kept for ``key``, or None (read inline)."""
        return answered(self._n.get, key)

    async def delete(self, key: Key) -> bool:
        """Forgets the answer kept for ``key`` (the next run runs again); says whether one was kept."""
        return await self._n.delete(key, _get_loop())
