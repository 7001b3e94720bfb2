"""What the async and sync limits share: answers, window specs, run marks."""

from __future__ import annotations

import contextvars
from typing import Any, Union

from ._results import Allowance, WindowUsage
from ._time import Duration, from_millis
from .errors import InvalidError

__all__ = ["Rate", "allowance", "RunMarks"]

Rate = Union[str, "tuple[int, Duration]"]
"""A rate: text as ``"5/m"``, ``"100/5h"``, ``"300/7d"``, or a ``(count, duration)`` pair."""


def allowance(row: tuple[bool, int, int | None, dict[str, tuple[int, int, int, int | None]]]) -> Allowance:
    """An allowance from the native module's tuple."""
    ok, left, retry, windows = row
    return Allowance(
        ok,
        left,
        None if retry is None else from_millis(retry),
        {
            name: WindowUsage(used, limit, wleft, None if resets is None else from_millis(resets))
            for name, (used, limit, wleft, resets) in windows.items()
        },
    )


_running: contextvars.ContextVar[frozenset[tuple[int, str, bytes]]] = contextvars.ContextVar(
    "tinystore_once_running", default=frozenset()
)


class RunMarks:
    """The runs of ``once`` under way in this task (and the tasks it starts):
    a run of one of them from inside itself would wait for itself forever."""

    @staticmethod
    def check(native: Any, store_id: int, key: Any) -> tuple[int, str, bytes]:
        mark = (store_id, native.name, native.mark(key))
        if mark in _running.get():
            path = native.path_text(key)
            msg = "a run of this key inside its own run would wait for itself"
            raise InvalidError(msg, bucket=native.name, path=path)
        return mark

    @staticmethod
    def check_fn(native: Any, fn: Any) -> None:
        """What a run calls must be callable: anything else is bad input (KV-18),
        refused before the key is claimed, not a TypeError from inside the run."""
        if not callable(fn):
            msg = f"a run needs a function to call, not {type(fn).__name__} {fn!r}"
            raise InvalidError(msg, bucket=native.name)

    @staticmethod
    def enter(mark: tuple[int, str, bytes]) -> contextvars.Token[frozenset[tuple[int, str, bytes]]]:
        return _running.set(_running.get() | {mark})

    @staticmethod
    def leave(token: contextvars.Token[frozenset[tuple[int, str, bytes]]]) -> None:
        _running.reset(token)
