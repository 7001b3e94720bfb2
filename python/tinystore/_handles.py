"""What the async and sync limits share: answers, window specs, a run's argument check."""

from __future__ import annotations

from typing import Any, Union

from ._results import Allowance, WindowUsage
from ._time import Duration, from_millis
from .errors import InvalidError

__all__ = ["Rate", "allowance", "RunChecks"]

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


class RunChecks:
    """What a run of ``once`` checks of its arguments before it claims the key."""

    @staticmethod
    def check_fn(native: Any, fn: Any) -> None:
        """What a run calls must be callable: anything else is bad input (KV-18),
        refused before the key is claimed, not a TypeError from inside the run."""
        if not callable(fn):
            msg = f"a run needs a function to call, not {type(fn).__name__} {fn!r}"
            raise InvalidError(msg, bucket=native.name)
