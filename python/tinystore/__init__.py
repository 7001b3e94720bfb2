"""TinyStore KV: an application's current state in one SQLite file.

Sessions, one-time codes, rate limits, plan quotas, counters and the answers
of requests sent twice, in ``kv.db`` inside a directory, with expiry that
needs no cleanup job::

    import tinystore

    async with tinystore.open("data") as store:
        codes = store.bucket("sign-in-codes", int, ttl="15m")
        await codes.set(digest(code), user.id)
        user_id = await codes.take(digest(code))  # None if wrong, used or expired

``tinystore.sync`` has the same API without ``await``.
"""

from __future__ import annotations

from . import _logs, errors, sync
from ._aio import Bucket, Opening, Store, open
from ._aio_limits import Counters, Once, Quota, RateLimit
from ._aio_tx import Transaction, Tx, TxBucket, View, ViewBucket
from ._base import Key
from ._custom import Codec, Raw, RawValue
from ._handles import Rate
from ._results import Allowance, Created, Entry, Maintenance, Page, WindowUsage
from ._time import Clock, Duration
from .config import Config, FromEnv, Source, open_config
from .errors import (
    CallCancelledError,
    ClosedError,
    ConflictError,
    CorruptError,
    Error,
    InvalidError,
    IoError,
    LimitError,
    OutcomeUnknownError,
)

__all__ = [
    "open",
    "open_config",
    "FromEnv",
    "Config",
    "Source",
    "Opening",
    "Store",
    "Bucket",
    "RateLimit",
    "Quota",
    "Counters",
    "Once",
    "Transaction",
    "Tx",
    "TxBucket",
    "View",
    "ViewBucket",
    "Rate",
    "Clock",
    "Duration",
    "Key",
    "Raw",
    "RawValue",
    "Codec",
    "Entry",
    "Created",
    "Page",
    "Maintenance",
    "Allowance",
    "WindowUsage",
    "Error",
    "InvalidError",
    "LimitError",
    "ConflictError",
    "CorruptError",
    "ClosedError",
    "OutcomeUnknownError",
    "IoError",
    "CallCancelledError",
    "errors",
    "sync",
]

__version__ = "0.1.0"

_logs.start()
