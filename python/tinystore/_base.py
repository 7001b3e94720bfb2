"""What the async and the sync API share: opening handles, names, keys."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Generic, TypeVar, Union

from . import _native
from ._bucket_calls import BucketReads
from ._codecs import Codec, codec_for
from ._custom import Raw, custom_codec, raw_codec
from ._time import Clock, Duration, to_millis
from .errors import InvalidError

if TYPE_CHECKING:
    from ._handles import Handle, Rate

__all__ = ["Key", "StoreBase", "BucketBase"]

T = TypeVar("T")
_R = TypeVar("_R", bound="Handle")
_Q = TypeVar("_Q", bound="Handle")
_C = TypeVar("_C", bound="Handle")

Key = Union[str, bytes, int]
"""A key or an owner: text, bytes, or an integer (its decimal spelling: ``42`` and ``"42"`` are one key)."""


def open_native(
    dir: str | os.PathLike[str],
    clock: Any,
    memory: Any = None,
    mmap_size: Any = None,
    keep_read_locks: Any = None,
    share_with_group: Any = None,
) -> _native.Store:
    """Opens the native store; ``clock`` (a datetime) makes it a test store,
    ``memory`` (bytes) gives it a memory budget, ``mmap_size`` (bytes) sets
    how much of kv.db each reader maps, ``keep_read_locks`` (a bool)
    whether readers keep their read-mark lock between reads,
    ``share_with_group`` (a bool) whether the files it creates are their
    group's too. Bad options are refused before anything is opened or
    created."""
    if not isinstance(dir, (str, os.PathLike)):
        raise InvalidError(f"a store opens a directory (str or path), not {type(dir).__name__}")
    if keep_read_locks is not None and not isinstance(keep_read_locks, bool):
        raise InvalidError(f"keep_read_locks is True or False, not {keep_read_locks!r}")
    if share_with_group is not None and not isinstance(share_with_group, bool):
        raise InvalidError(f"share_with_group is True or False, not {share_with_group!r}")
    return _native.Store(
        os.fspath(dir),
        None if clock is None else to_millis(clock),
        memory,
        mmap_size,
        keep_read_locks,
        share_with_group,
    )


def codec_of(name: str, tp: Any) -> Codec:
    """The codec of a handle's type; a type that cannot be kept is ``InvalidError``."""
    if tp is Raw:
        return raw_codec()
    try:
        return codec_for(tp)
    except TypeError as e:
        raise InvalidError(str(e), bucket=name) from None


def _invalid(name: str, message: str) -> InvalidError:
    return InvalidError(message, bucket=name)


def _check_name(name: Any) -> str:
    """A handle name must be text: another type is bad input (KV-18), not a TypeError."""
    if not isinstance(name, str):
        message = f"a handle name must be text, not {type(name).__name__} {name!r}"
        raise InvalidError(message)
    return name


class StoreBase(Generic[_R, _Q, _C]):
    """The parts of a store that do not wait: handles, the clock, names. Its
    API's classes of rate limits, quotas and counters are ``_limits``."""

    __slots__ = ("_n", "_clock", "__weakref__")
    _limits: tuple[type[_R], type[_Q], type[_C]]

    def __init__(self, native: _native.Store) -> None:
        self._n = native
        self._clock = Clock(native)

    @property
    def clock(self) -> Clock:
        """The store's clock; a test clock moves with ``advance`` and ``set``."""
        return self._clock

    @property
    def dir(self) -> str:
        """The store's directory."""
        return os.fspath(self._n.dir())

    @property
    def closed(self) -> bool:
        """Whether the store is closed."""
        return self._n.is_closed()

    def names(self) -> list[tuple[str, str]]:
        """Every handle name in the file, with its kind (``"values"``, ``"quota"``, ...)."""
        return self._n.names()

    def rate_limit(self, name: str, *, rate: Rate, burst: int | None = None) -> _R:
        """The rate limit ``name``: ``rate`` requests per span (``"5/m"``), at most ``burst``
        at once (the rate's count when not given)::

            guesses = store.rate_limit("sign-in-guesses", rate="5/m", burst=5)
        """
        return self._limits[0](self._rate_limit_native(name, rate, burst))

    def quota(self, name: str, /, **windows: Rate) -> _Q:
        """The quota ``name`` with one to eight windows, each a name and a rate::

            messages = store.quota("messages", session="100/5h", weekly="300/7d")
        """
        return self._limits[1](self._quota_native(name, windows))

    def counters(self, name: str, *, ttl: Duration | None = None, flush_every: Duration | None = None) -> _C:
        """The counters ``name``. ``ttl`` starts at a counter's first add and does not slide;
        ``flush_every`` keeps counts in memory and writes them every period (a crash loses at most one)."""
        return self._limits[2](self._counters_native(name, ttl, flush_every))

    def _bucket_native(
        self, name: str, tp: Any, ttl: Duration | None, idle: Duration | None, custom: Any = None
    ) -> _native.Bucket:
        name = _check_name(name)
        codec = codec_of(name, tp) if custom is None else custom_codec(name, tp, custom)
        return _native.Bucket(self._n, name, codec, ttl, idle)

    def _rate_limit_native(self, name: str, rate: Any, burst: Any) -> _native.RateLimit:
        name = _check_name(name)
        if burst is not None and (not isinstance(burst, int) or isinstance(burst, bool)):
            raise _invalid(name, f"burst must be an int, not {burst!r}")
        return _native.RateLimit(self._n, name, rate, burst)

    def _quota_native(self, name: str, windows: dict[str, Any]) -> _native.Quota:
        # The core refuses a quota of no windows, or of more than eight.
        return _native.Quota(self._n, _check_name(name), list(windows.items()))

    def _counters_native(self, name: str, ttl: Duration | None, flush_every: Duration | None) -> _native.Counters:
        name = _check_name(name)
        return _native.Counters(self._n, name, ttl, flush_every)

    def _once_native(self, name: str, tp: Any, keep: Duration | None) -> _native.Once:
        name = _check_name(name)
        codec = codec_of(name, tp)
        return _native.Once(self._n, name, codec, keep)

    def _check_open(self) -> None:
        if self._n.is_closed():
            raise _native.refusal("store_closed")

    def __repr__(self) -> str:
        return f"<tinystore.{type(self).__qualname__} {self.dir!r}{' closed' if self.closed else ''}>"


class BucketBase(BucketReads[T]):
    """The parts of a store's bucket that do not wait: its owners and branches."""

    __slots__ = ("_n",)

    def __init__(self, native: _native.Bucket) -> None:
        self._n = native

    @property
    def owners(self) -> list[str | bytes]:
        """The owners of this branch, outermost first."""
        return self._n.owners

    def under(self, *owners: Key) -> Any:
        """The branch of ``owners`` under this one: ``sessions.under(user_id)``.

        Branches nest; ``clear()`` on a branch removes it and every branch under it.
        """
        return type(self)(self._n.under(*owners))

    def __repr__(self) -> str:
        path = "/".join(str(o) for o in self.owners)
        return f"<tinystore.{type(self).__qualname__} {self.name!r}{' under ' + path if path else ''}>"
