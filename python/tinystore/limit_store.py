"""A limit store for app frameworks, on ``kv.db``.

Where a framework keeps its limit counts (sign-ins, password resets, codes
sent), shared by every process that opens the same store, with no Redis. It
is the ``LimitStore`` contract (``shared``, ``update(keys, apply)``,
``read(keys)``, ``sweep()``) in Python's idiom::

    import tinystore
    from tinystore.limit_store import LimitEntry, limit_store

    store = await tinystore.open("data")
    limits = limit_store(store, max_entries=200_000)

    def count(entries, now):
        e = entries.get("sign-in:ada")
        return {"sign-in:ada": LimitEntry((e.value if e else 0) + 1, e.expires_at if e else now + 60_000)}

    await limits.update(["sign-in:ada"], count)

Given a ``tinystore.sync`` store, ``limit_store`` gives the same store
without ``await``. Every rule (keys stored as their SHA-256, versions checked
at commit, expiry on the store's clock, the bound, the 2 s deadline, 64
calls in flight) is the engine's; this module converts values and calls
``apply``. The filling and full lines go to the ``tinystore.limit_store``
logger, with ``extra={"kind": "limit-store-filling"}`` (a warning) or
``"limit-store-full"`` (an error).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Protocol, Union, cast, overload

from . import _native
from ._aio import Store as _AsyncStore
from .errors import Error
from .sync import Store as _SyncStore

__all__ = ["LimitEntry", "Changes", "Apply", "LimitStore", "SyncLimitStore", "limit_store", "LOGGER"]

LOGGER = logging.getLogger("tinystore.limit_store")
"""Where the ``limit-store-filling`` warning and the ``limit-store-full`` error go."""

@dataclass(frozen=True)
class LimitEntry:
    """One entry: a JSON value (at most 4 KB of JSON) and when it expires."""

    value: Any
    """Anything ``json.dumps`` writes."""
    expires_at: int
    """When the entry expires, in ms since the epoch on the store's clock."""


Changes = Optional[Mapping[str, Optional[LimitEntry]]]
"""What ``apply`` returns: the new entry of each key to change, ``None`` to
delete it; keys left out are kept. Returning ``None`` changes nothing."""

Apply = Callable[[Mapping[str, LimitEntry], int], Changes]
"""``apply(entries, now)``: the live entries of the keys (a key without one is
absent) and the store's clock in ms. It may run more than once when another
process changed a key meanwhile; only its last run is written."""

_Native = tuple[str, int] | None
_Returned = tuple[str, Optional[tuple[Optional[str], Optional[str], float]]]


class _NativeUpdate(Protocol):
    def entries(self) -> list[_Native]: ...
    def now(self) -> int: ...
    def cancel(self) -> None: ...
    def take_events(self) -> list[tuple[str, str, bool]]: ...
    def commit(self, changes: list[_Returned], running: Any = None) -> Any: ...


class _NativeLimitStore(Protocol):
    max_entries: int
    name: str

    def read(self, keys: list[str]) -> list[_Native]: ...
    def begin(self, keys: list[str]) -> _NativeUpdate: ...
    def sweep(self, running: Any = None) -> Any: ...


def _open_native(store: Any, max_entries: int | None, name: str | None) -> _NativeLimitStore:
    return cast(_NativeLimitStore, _native.LimitStore(store._n, max_entries, name))


def _refused(word: str, got: object, name: str, key: str | None = None) -> Error:
    """The core's refusal of a type the limit store ``name`` does not take."""
    return _native.refusal(word, _shown(got), name, key)


def _shown(got: object) -> str:
    return f"{type(got).__name__} {got!r}"[:200]


def _keys(native: _NativeLimitStore, keys: Sequence[str]) -> list[str]:
    if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
        raise _refused("limit_keys", keys, native.name)
    for k in keys:
        if not isinstance(k, str):
            raise _refused("limit_key", k, native.name)
    return list(keys)


def _entries(keys: list[str], raw: list[_Native]) -> dict[str, LimitEntry]:
    out: dict[str, LimitEntry] = {}
    for k, e in zip(keys, raw):
        if e is not None:
            out[k] = LimitEntry(json.loads(e[0]), e[1])
    return out


def _returned(name: str, changes: Changes) -> list[_Returned]:
    """What ``apply`` returned, as the core takes it: ``(key, None)`` deletes,
    ``(key, (json_text, None, expires_at))`` writes, ``(key, (None, why,
    expires_at))`` is a value ``json.dumps`` refused. The core checks the
    keys and the expiry."""
    if changes is None:
        return []
    if not isinstance(changes, Mapping):
        raise _refused("limit_changes", changes, name)
    out: list[_Returned] = []
    for key, entry in changes.items():
        if not isinstance(key, str):
            raise _refused("limit_changed_key", key, name)
        if entry is None:
            out.append((key, None))
            continue
        if not isinstance(entry, LimitEntry):
            raise _refused("limit_entry", entry, name, key)
        at = entry.expires_at
        if isinstance(at, bool) or not isinstance(at, (int, float)):
            raise _refused("limit_expiry", at, name, key)
        try:
            text, why = json.dumps(entry.value, separators=(",", ":"), allow_nan=False), None
        except (TypeError, ValueError) as e:
            text, why = None, str(e)
        out.append((key, (text, why, _ms(at))))
    return out


def _ms(at: int | float) -> float:
    try:
        return float(at)
    except OverflowError:
        return float("inf") if at > 0 else float("-inf")


def _run_apply(u: _NativeUpdate, name: str, keys: list[str], apply: Apply) -> list[_Returned]:
    """One run of ``apply`` on the update's entries; the update is given up if it raises."""
    try:
        return _returned(name, apply(_entries(keys, u.entries()), u.now()))
    except BaseException:
        u.cancel()
        raise


def _begin(native: _NativeLimitStore, keys: Sequence[str], apply: Apply) -> tuple[list[str], _NativeUpdate]:
    if not callable(apply):
        raise _native.refusal("update_needs_function", _shown(apply), native.name)
    names = _keys(native, keys)
    return names, native.begin(names)


def _log(events: list[tuple[str, str, bool]]) -> None:
    for kind, message, is_error in events:
        LOGGER.log(logging.ERROR if is_error else logging.WARNING, "%s: %s", kind, message, extra={"kind": kind})


class _Handle:
    """What both flavours of the limit store share: the native handle and its bound."""

    __slots__ = ("_n",)

    shared = True
    """True: every process that opens the same ``kv.db`` sees the same entries."""

    def __init__(self, native: _NativeLimitStore) -> None:
        self._n = native

    @property
    def max_entries(self) -> int:
        """The bound on live entries."""
        return self._n.max_entries

    def _read(self, keys: Sequence[str]) -> dict[str, LimitEntry]:
        names = _keys(self._n, keys)
        return _entries(names, self._n.read(names))


class LimitStore(_Handle):
    """The limit store for asyncio code: ``limit_store(store)`` of a ``tinystore.Store``."""

    __slots__ = ()

    async def update(self, keys: Sequence[str], apply: Apply) -> dict[str, LimitEntry]:
        """Atomically: reads the live entries of ``keys``, calls ``apply(entries, now)``
        and writes what it returns (``None`` deletes), with no other update to these
        keys in between, across processes. Returns the keys' live entries after it.

        Raises (the framework's "unavailable") ``LimitError`` when the store is full
        and a key is new, or 64 calls are in flight; ``OutcomeUnknownError`` when no
        answer came within 2 s; ``InvalidError`` or ``LimitError`` for a bad entry
        (nothing written); and whatever ``apply`` raised.
        """
        names, u = _begin(self._n, keys, apply)
        loop = asyncio.get_running_loop()
        try:
            while True:
                if await u.commit(_run_apply(u, self._n.name, names, apply), loop):
                    return _entries(names, u.entries())
        finally:
            _log(u.take_events())

    async def read(self, keys: Sequence[str]) -> dict[str, LimitEntry]:
        """The live entries of ``keys``, judged on the store's clock."""
        return self._read(keys)

    async def sweep(self) -> int:
        """Removes expired entries; returns how many went."""
        return cast(int, await self._n.sweep(asyncio.get_running_loop()))


class SyncLimitStore(_Handle):
    """The limit store for threads: ``limit_store(store)`` of a ``tinystore.sync.Store``.

    A call blocks its thread with the GIL released.
    """

    __slots__ = ()

    def update(self, keys: Sequence[str], apply: Apply) -> dict[str, LimitEntry]:
        """As :meth:`LimitStore.update`, blocking."""
        names, u = _begin(self._n, keys, apply)
        try:
            while not u.commit(_run_apply(u, self._n.name, names, apply)):
                pass
            return _entries(names, u.entries())
        finally:
            _log(u.take_events())

    def read(self, keys: Sequence[str]) -> dict[str, LimitEntry]:
        """The live entries of ``keys``, judged on the store's clock."""
        return self._read(keys)

    def sweep(self) -> int:
        """Removes expired entries; returns how many went."""
        return self._n.sweep()


@overload
def limit_store(store: _AsyncStore, *, max_entries: int | None = None, name: str | None = None) -> LimitStore: ...
@overload
def limit_store(store: _SyncStore, *, max_entries: int | None = None, name: str | None = None) -> SyncLimitStore: ...
def limit_store(
    store: Union[_AsyncStore, _SyncStore], *, max_entries: int | None = None, name: str | None = None
) -> Union[LimitStore, SyncLimitStore]:
    """The limit store of an open store: ``max_entries`` bounds the live entries
    (1,000,000 by default); ``name`` is what its rows live under (``limit-store``).
    Two stores opened on one directory, in one process or in several, are two
    handles on the same entries.
    """
    if isinstance(store, _AsyncStore):
        return LimitStore(_open_native(store, max_entries, name))
    if isinstance(store, _SyncStore):
        return SyncLimitStore(_open_native(store, max_entries, name))
    raise _refused("limit_store", store, name if name is not None else _native.LimitStore.default_name())
