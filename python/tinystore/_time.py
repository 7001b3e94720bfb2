"""Times and durations as the store keeps them: milliseconds since the epoch."""

from __future__ import annotations

import datetime as dt
from typing import Union

from ._native import Store as _NativeStore

__all__ = ["Duration", "Clock", "to_millis", "from_millis"]

Duration = Union[str, dt.timedelta]
"""A span of time: text as ``"15m"``, ``"30d"``, ``"1h30m"`` (units w d h m s ms,
largest first, each once) or a ``datetime.timedelta``."""

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MS = dt.timedelta(milliseconds=1)


def to_millis(when: dt.datetime) -> int:
    """A datetime as ms since the epoch. A naive datetime is taken as UTC."""
    if not isinstance(when, dt.datetime):
        from .errors import InvalidError

        raise InvalidError(f"a time must be a datetime, not {type(when).__name__}")
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return (when - _EPOCH) // _MS


def from_millis(ms: int) -> dt.datetime:
    """ms since the epoch as an aware UTC datetime."""
    return _EPOCH + ms * _MS


def opt_millis(when: dt.datetime | None) -> int | None:
    """``to_millis`` of an optional time."""
    return None if when is None else to_millis(when)


class Clock:
    """The store's clock. Expiry, rate limits and quotas are judged on it.

    A store opened with ``clock=datetime(...)`` has a test clock: it stands
    still until ``advance`` or ``set`` moves it, and never moves back.
    """

    __slots__ = ("_n",)

    def __init__(self, native: _NativeStore) -> None:
        self._n = native

    @property
    def manual(self) -> bool:
        """Whether this is a test clock (the store then runs nothing in the background)."""
        return self._n.is_manual()

    def now(self) -> dt.datetime:
        """The store's time now, as an aware UTC datetime."""
        return from_millis(self._n.clock_now())

    def advance(self, by: Duration) -> dt.datetime:
        """Moves a test clock forward by ``by`` (``"16m"`` or a timedelta); returns the new time."""
        return from_millis(self._n.clock_advance(by))

    def set(self, to: dt.datetime) -> None:
        """Sets a test clock to ``to``, which must not be before its time now."""
        self._n.clock_set(to_millis(to))

    def __repr__(self) -> str:
        return f"<tinystore.Clock {self.now().isoformat()}{' (test)' if self.manual else ''}>"
