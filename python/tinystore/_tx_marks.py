"""Which stores' transactions the running code is inside.

A transaction holds its store's one writer while its block runs, so a
write of the same store through a handle outside the transaction, awaited
inside the block, would wait for the transaction, and the transaction for
it. The native module refuses such a write at once (``InvalidError``, with
the engine's message) when ``inside`` holds the store's directory. A context
variable, so it follows the block across its awaits and into the tasks it
starts, and not into unrelated tasks, whose writes simply wait their turn.
"""

from __future__ import annotations

import contextvars

__all__ = ["inside"]

inside: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("tinystore_inside_tx", default=frozenset())
"""The directories of the stores whose open transactions the running code is inside."""
