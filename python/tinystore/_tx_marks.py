"""The transactions and runs of ``once`` the running code is inside.

A transaction holds its store's one writer while its block runs, so a
write of the same store through a handle outside the transaction, awaited
inside the block, would wait for the transaction, and the transaction for
it; a run of a key of ``once`` inside its own run would wait for itself.
The engine refuses such a call at once (``InvalidError``, with its message):
the native module hands it ``caller``, the context the running code is
in, with every call that may wait for the writer. A context variable, so it
follows a block across its awaits and into the tasks it starts, and not
into unrelated tasks, whose writes simply wait their turn.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from . import _native

__all__ = ["caller", "enter_tx", "running"]

caller: contextvars.ContextVar[_native.CallerContext | None] = contextvars.ContextVar(
    "tinystore_caller", default=None
)
"""The engine's record of what the running code is inside (None: nothing)."""


def _outer() -> _native.CallerContext:
    ctx = caller.get()
    return _native.CallerContext() if ctx is None else ctx


def enter_tx(tx: _native.Tx, by: int) -> contextvars.Token[_native.CallerContext | None]:
    """Puts the running code inside ``tx``, which the task (or thread) ``by`` opened."""
    return caller.set(_outer().inside_tx(tx, by))


@contextlib.contextmanager
def running(claim: _native.Claim) -> Iterator[_native.Claim]:
    """Runs the block inside the run ``claim`` holds; the run lets go,
    keeping nothing, if the block raises."""
    token = caller.set(_outer().inside_run(claim))
    try:
        yield claim
    except BaseException:
        claim.abandon()
        raise
    finally:
        caller.reset(token)
