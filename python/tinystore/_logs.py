"""The engine's warnings in Python's ``logging``, under the logger ``tinystore``.

The engine writes its records (memory at 80%, a full memory refusing new
keys, a failed maintenance, a config value left out, a failed release of a
``once`` claim) from its own threads. They wait in the engine's queue, and
one daemon thread here takes them, without the GIL while it waits, and logs
each through ``logging.getLogger("tinystore")`` (``tinystore.limit_store``
for the limit store's), so that the usual handlers, levels and filters
apply.
"""

from __future__ import annotations

import atexit
import logging
import threading

from . import _native

#: How long the pump waits for a record before it looks again.
_WAIT = 1.0


_stopping = threading.Event()


def _pump() -> None:
    while not _stopping.is_set():
        for level, name, message in _native.next_logs(256, _WAIT):
            logging.getLogger(name).log(level, "%s", message)


def _stop(pump: threading.Thread) -> None:
    # Before the interpreter finalizes: a thread that came back from the
    # engine then would be torn down in the middle of a call.
    _stopping.set()
    _native.stop_logs()
    pump.join(_WAIT * 2)


def start() -> None:
    """Starts forwarding, once per process; a logger set first keeps the records."""
    if _native.forward_logs():
        pump = threading.Thread(target=_pump, name="tinystore-logs", daemon=True)
        pump.start()
        atexit.register(_stop, pump)
