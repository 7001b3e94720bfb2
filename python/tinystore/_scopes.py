"""Where a native call runs and how its answer comes back: the one thing
the sync and the asyncio API do differently.

Every handle's calls are written once, in the sync API's classes, each
passing the native call its scope: ``_in()`` for reads (None: the store
itself, or a native ``Tx`` or ``View``) and ``_writes_in()`` for writes,
and handing a write's answer to ``_after`` with what to make of it. The
asyncio API's store handles are those classes with ``OnLoop`` first: their
writes run with the running loop as their scope, where the native call
answers an awaitable, and ``_loop.awaited`` turns each into a coroutine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["Scoped", "OnLoop"]

R = TypeVar("R")


class Scoped:
    """The scopes of a sync handle's calls: the store itself, blocking."""

    __slots__ = ()

    def _in(self) -> Any:
        """The scope of the native reads: None is the store itself."""
        return None

    def _writes_in(self) -> Any:
        """The scope of the native writes: where the reads run."""
        return self._in()

    def _after(self, answer: Any, then: Callable[[Any], R]) -> R:
        """``then`` of a native write's answer."""
        return then(answer)


class OnLoop(Scoped):
    """The scopes of an asyncio store handle's calls: reads inline, writes
    answered through the running loop."""

    __slots__ = ()

    def _writes_in(self) -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    def _after(self, answer: Any, then: Callable[[Any], R]) -> Any:
        return _then(answer, then)


async def _then(answer: Awaitable[Any], then: Callable[[Any], R]) -> R:
    return then(await answer)
