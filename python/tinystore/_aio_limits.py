"""Rate limits, quotas, counters and ``once`` for asyncio."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar, Union

from . import _native, _tx_marks
from ._base import Key
from ._handles import RunChecks, allowance
from ._loop import completions
from ._results import Allowance

__all__ = ["RateLimit", "Quota", "Counters", "Once"]

T = TypeVar("T")
_get_loop = asyncio.get_running_loop
_Cancelled = asyncio.CancelledError


class RateLimit:
    """A rate limit (GCRA): ``rate`` requests per span, ``burst`` at once.

    State lives in memory and reaches the file every second, so ``allow`` is
    answered inline, without a write. A refusal is an answer, never an error.
    """

    __slots__ = ("_n",)

    def __init__(self, native: _native.RateLimit) -> None:
        self._n = native

    @property
    def name(self) -> str:
        """The rate limit's name."""
        return self._n.name

    def under(self, *owners: Key) -> RateLimit:
        """The branch of ``owners``: its keys are limited apart from the others."""
        return RateLimit(self._n.under(*owners))

    def allow(self, key: Key, n: int = 1) -> asyncio.Future[Allowance]:
        """Takes ``n`` requests or none: ``ok``, ``left`` and ``retry_at``. More than the burst is ``InvalidError``.

        Answered inline from memory: the returned awaitable is already complete."""
        fut: asyncio.Future[Allowance] = _get_loop().create_future()
        try:
            fut.set_result(allowance(self._n.allow(key, n)))
        except Exception as e:
            fut.set_exception(e)
        return fut

    def peek(self, key: Key) -> asyncio.Future[Allowance]:
        """The answer one request would get now, counting nothing."""
        fut: asyncio.Future[Allowance] = _get_loop().create_future()
        try:
            fut.set_result(allowance(self._n.peek(key)))
        except Exception as e:
            fut.set_exception(e)
        return fut

    def reset(self, key: Key) -> asyncio.Future[None]:
        """Forgets the key: its next request has the full burst."""
        fut: asyncio.Future[None] = _get_loop().create_future()
        try:
            self._n.reset(key)
            fut.set_result(None)
        except Exception as e:
            fut.set_exception(e)
        return fut

    def __repr__(self) -> str:
        return f"<tinystore.RateLimit {self.name!r}>"


class Quota:
    """A quota: named windows (``session="100/5h", weekly="300/7d"``) that reset on their own.

    ``allow`` counts in every window or in none, in one durable write.
    """

    __slots__ = ("_n",)

    def __init__(self, native: _native.Quota) -> None:
        self._n = native

    @property
    def name(self) -> str:
        """The quota's name."""
        return self._n.name

    def under(self, *owners: Key) -> Quota:
        """The branch of ``owners``."""
        return Quota(self._n.under(*owners))

    async def allow(self, key: Key, n: int = 1) -> Allowance:
        """Counts ``n`` uses in every window, or in none; ``windows`` gives each window's use."""
        loop = _get_loop()
        fut = loop.create_future()
        ticket = self._n.allow_then(completions(loop), fut, key, n)
        try:
            return allowance(await fut)
        except _Cancelled:
            ticket.cancel()
            raise

    def peek(self, key: Key) -> asyncio.Future[Allowance]:
        """The answer one use would get now, counting nothing (read inline)."""
        fut: asyncio.Future[Allowance] = _get_loop().create_future()
        try:
            fut.set_result(allowance(self._n.peek(key)))
        except Exception as e:
            fut.set_exception(e)
        return fut

    async def refund(self, key: Key, n: int = 1) -> Allowance:
        """Gives ``n`` uses back to the windows that have not reset since (the work failed)."""
        loop = _get_loop()
        fut = loop.create_future()
        ticket = self._n.refund_then(completions(loop), fut, key, n)
        try:
            return allowance(await fut)
        except _Cancelled:
            ticket.cancel()
            raise

    async def reset(self, key: Key) -> None:
        """Forgets the key: every window starts again at its next use."""
        loop = _get_loop()
        fut = loop.create_future()
        ticket = self._n.reset_then(completions(loop), fut, key)
        try:
            await fut
        except _Cancelled:
            ticket.cancel()
            raise

    def __repr__(self) -> str:
        return f"<tinystore.Quota {self.name!r}>"


class Counters:
    """Integer counters: ``add`` returns the new value; a missing counter is 0."""

    __slots__ = ("_n",)

    def __init__(self, native: _native.Counters) -> None:
        self._n = native

    @property
    def name(self) -> str:
        """The counters' name."""
        return self._n.name

    def under(self, *owners: Key) -> Counters:
        """The branch of ``owners``."""
        return Counters(self._n.under(*owners))

    async def add(self, key: Key, n: int = 1) -> int:
        """Adds ``n`` (which may be negative); returns the new value. Past int64 is ``LimitError``."""
        loop = _get_loop()
        fut = loop.create_future()
        ticket = self._n.add_then(completions(loop), fut, key, n)
        try:
            return await fut
        except _Cancelled:
            ticket.cancel()
            raise

    async def max(self, key: Key, n: int) -> int:
        """Keeps the larger of the counter and ``n``; returns it."""
        loop = _get_loop()
        fut = loop.create_future()
        ticket = self._n.max_then(completions(loop), fut, key, n)
        try:
            return await fut
        except _Cancelled:
            ticket.cancel()
            raise

    def get(self, key: Key) -> asyncio.Future[int]:
        """The counter's value: 0 when missing or expired (read inline)."""
        fut: asyncio.Future[int] = _get_loop().create_future()
        try:
            fut.set_result(self._n.get(key))
        except Exception as e:
            fut.set_exception(e)
        return fut

    async def delete(self, key: Key) -> bool:
        """Deletes the counter; says whether a live one was there."""
        loop = _get_loop()
        fut = loop.create_future()
        ticket = self._n.delete_then(completions(loop), fut, key)
        try:
            return await fut
        except _Cancelled:
            ticket.cancel()
            raise

    async def clear(self) -> None:
        """Deletes every counter of this branch and of the branches under it."""
        loop = _get_loop()
        fut = loop.create_future()
        ticket = self._n.clear_then(completions(loop), fut)
        try:
            await fut
        except _Cancelled:
            ticket.cancel()
            raise

    def __repr__(self) -> str:
        return f"<tinystore.Counters {self.name!r}>"


Work = Callable[[], Union[Awaitable[T], T]]


class Once(Generic[T]):
    """Runs a function once per key and keeps its answer for ``keep`` (a day unless set)."""

    __slots__ = ("_n",)

    def __init__(self, native: _native.Once) -> None:
        self._n = native

    @property
    def name(self) -> str:
        """The once's name."""
        return self._n.name

    def under(self, *owners: Key) -> Once[T]:
        """The branch of ``owners``."""
        return Once(self._n.under(*owners))

    async def run(self, key: Key, fn: Work[T]) -> T:
        """The answer kept for ``key``, or ``await fn()`` and keep what it returns.

        A second run of the key while the first runs, in this event loop or
        another process, waits for the first (without blocking the loop) and
        returns its answer. If ``fn`` raises, nothing is kept and the next run
        runs again. A run of the key inside its own ``fn`` is ``InvalidError``.
        """
        RunChecks.check_fn(self._n, fn)
        loop = _get_loop()
        fut = loop.create_future()
        self._n.begin_then(completions(loop), fut, key)
        # Cancelled while waiting: a claim that arrives later is dropped, which lets the key go.
        kept, got = await fut
        if kept:
            return got
        claim = got
        token = _tx_marks.enter_run(claim)
        try:
            value = fn()
            if inspect.isawaitable(value):
                value = await value
        except BaseException:
            claim.abandon()
            raise
        finally:
            _tx_marks.caller.reset(token)
        done = loop.create_future()
        claim.keep_then(completions(loop), done, value)
        await done  # cancelled here, the answer is still kept
        return value

    def get(self, key: Key) -> asyncio.Future[T | None]:
        """The answer kept for ``key``, or None (read inline)."""
        fut: asyncio.Future[T | None] = _get_loop().create_future()
        try:
            fut.set_result(self._n.get(key))
        except Exception as e:
            fut.set_exception(e)
        return fut

    async def delete(self, key: Key) -> bool:
        """Forgets the answer kept for ``key`` (the next run runs again); says whether one was kept."""
        loop = _get_loop()
        fut = loop.create_future()
        ticket = self._n.delete_then(completions(loop), fut, key)
        try:
            return await fut
        except _Cancelled:
            ticket.cancel()
            raise

    def __repr__(self) -> str:
        return f"<tinystore.Once {self.name!r}>"


