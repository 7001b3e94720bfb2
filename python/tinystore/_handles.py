"""What the async and sync limits share: the handle, answers, window specs,
a run's argument check."""

from __future__ import annotations

from typing import Any, TypeVar, Union

from . import _native
from ._base import Key
from ._results import Allowance, WindowUsage
from ._time import Duration, from_millis

__all__ = ["Handle", "Rate", "allowance", "RunChecks"]

H = TypeVar("H", bound="Handle")


class Handle:
    """A rate limit, quota, counters or once over its native handle: its
    name, its branches and how it is shown (``_shown``: the module it is
    exported from)."""

    __slots__ = ("_n",)
    _shown = "tinystore"

    def __init__(self, native: Any) -> None:
        self._n = native

    @property
    def name(self) -> str:
        """The handle's name."""
        return str(self._n.name)

    def under(self: H, *owners: Key) -> H:
        """The branch of ``owners``: its keys are apart from the others."""
        return type(self)(self._n.under(*owners))

    def __repr__(self) -> str:
        return f"<{self._shown}.{type(self).__name__} {self.name!r}>"

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
            raise _native.refusal("run_needs_function", f"{type(fn).__name__} {fn!r}", native.name)
