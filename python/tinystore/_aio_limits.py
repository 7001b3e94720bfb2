"""Rate limits, quotas, counters and ``once`` for asyncio."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar, Union

from . import _native
from ._base import Key
from ._tx_marks import running
from ._handles import Handle, RunChecks, allowance
from . import _sync_limits as _sync
from ._loop import answered, answering, awaited
from ._scopes import OnLoop
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


class Quota(OnLoop, _sync.Quota):
    """A quota: named windows (``session="100/5h", weekly="300/7d"``) that reset on their own.

    ``allow`` counts in every window or in none, in one durable write.
    """

    __slots__ = ()
    _shown = "tinystore"

    allow = awaited(_sync.Quota.allow)  # type: ignore[assignment]
    peek = answering(_sync.Quota.peek)  # type: ignore[assignment]
    refund = awaited(_sync.Quota.refund)  # type: ignore[assignment]
    reset = awaited(_sync.Quota.reset)  # type: ignore[assignment]


class Counters(OnLoop, _sync.Counters):
    """Integer counters: ``add`` returns the new value; a missing counter is 0."""

    __slots__ = ()
    _shown = "tinystore"

    add = awaited(_sync.Counters.add)  # type: ignore[assignment]
    max = awaited(_sync.Counters.max)  # type: ignore[assignment]
    get = answering(_sync.Counters.get)  # type: ignore[assignment]
    delete = awaited(_sync.Counters.delete)  # type: ignore[assignment]
    clear = awaited(_sync.Counters.clear)  # type: ignore[assignment]


Work = Callable[[], Union[Awaitable[T], T]]


class Once(OnLoop, _sync.Once[T]):
    """Runs a function once per key and keeps its answer for ``keep`` (a day unless set)."""

    __slots__ = ()
    _shown = "tinystore"

    async def run(self, key: Key, fn: Work[T]) -> T:  # type: ignore[override]
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

    get = answering(_sync.Once.get)  # type: ignore[assignment]
    delete = awaited(_sync.Once.delete)  # type: ignore[assignment]
