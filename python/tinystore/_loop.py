"""Where the answers of writes reach an asyncio loop.

Each loop gets one native pair of queues. Writes made during one iteration
of the loop go to the store's writer together at its end (``flush``), so
that they commit as one group. Answers come back through a socket watched
with ``add_reader``: the writer thread queues them without taking the GIL
and wakes the loop once per batch, and the loop resolves the futures on its
own thread.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar, cast

from ._native import Completions

__all__ = ["completions", "answered", "answering", "awaited"]

R = TypeVar("R")
P = ParamSpec("P")

_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Completions] = weakref.WeakKeyDictionary()
_last: tuple[asyncio.AbstractEventLoop | None, Completions | None] = (None, None)


def completions(loop: asyncio.AbstractEventLoop) -> Completions:
    """The completion queue of ``loop``, registered with it on first use."""
    global _last
    last_loop, last = _last
    if last_loop is loop and last is not None:
        return last
    found = _by_loop.get(loop)
    if found is None:
        found = Completions(weakref.ref(loop))
        loop.add_reader(found.fileno(), found.drain)
        _by_loop[loop] = found
    _last = (loop, found)
    return found


def answered(call: Callable[..., R], *args: Any) -> asyncio.Future[R]:
    """Runs ``call(*args)`` now, inline, and gives its answer (or its
    exception) as a completed future: awaiting it never waits for the loop."""
    fut: asyncio.Future[R] = asyncio.get_running_loop().create_future()
    try:
        fut.set_result(call(*args))
    except Exception as e:
        fut.set_exception(e)
    return fut


def answering(call: Callable[P, R]) -> Callable[P, asyncio.Future[R]]:
    """``call`` for asyncio: it runs now, inline, and its answer (or its
    exception) is given as a completed future, as ``answered`` gives it. The
    calls of a transaction and of a view are their synchronous calls so
    answered."""

    @functools.wraps(call)
    def run(*args: P.args, **kwargs: P.kwargs) -> asyncio.Future[R]:
        return answered(functools.partial(call, *args, **kwargs))

    return run


def awaited(call: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """``call`` for asyncio where it answers an awaitable of its answer (a
    native write given the running loop as its scope): a coroutine that
    makes the call when first awaited, as an ``async def`` does, so that a
    coroutine never awaited writes nothing. The store's bucket's writes are
    the synchronous ones so awaited."""

    @functools.wraps(call)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return await cast(Awaitable[R], call(*args, **kwargs))

    return run
