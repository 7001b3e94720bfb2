"""The errors of TinyStore: one base class and one subclass per kind.

Every language has the same kinds. An error about one key names the bucket
and the path of owners and key (``.bucket``, ``.path``; ``.key`` is the same
path, as TypeScript's ``what.key`` spells it). A missing key is never an
error: reads answer ``None``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Error",
    "InvalidError",
    "LimitError",
    "ConflictError",
    "CorruptError",
    "ClosedError",
    "OutcomeUnknownError",
    "IoError",
    "CallCancelledError",
]


_BY_CODE: dict[str, type[Error]] = {}


class Error(Exception):
    """Any error of TinyStore.

    Attributes:
        code: the stable code of the kind, as every language spells it
            (``"INVALID"``, ``"CONFLICT"``, ...).
        message: what went wrong, without the bucket and path.
        bucket: the handle (bucket, rate limit, quota, once, counters) the
            error is about, if one is.
        path: the owners and key the error is about, as ``owner/owner/key``.
    """

    code: str = "ERROR"

    def __init_subclass__(cls, code: str = "", **kwargs: Any) -> None:
        # Each kind's class is the one `_from_native` builds for its code.
        super().__init_subclass__(**kwargs)
        if code:
            cls.code = code
            _BY_CODE[code] = cls

    def __init__(
        self,
        message: str,
        *,
        bucket: str | None = None,
        path: str | None = None,
        text: str | None = None,
    ) -> None:
        if text is None:
            # The core renders every error's text, so that one made here
            # reads as one the engine raised: "invalid: ... (bucket b, key k)".
            from . import _native

            text = _native.error_text(self.code, message, bucket, path)
        super().__init__(text)
        self.message = message
        self.bucket = bucket
        self.path = path

    @property
    def key(self) -> str | None:
        """The owners and key the error is about (the same as ``path``)."""
        return self.path


class InvalidError(Error, ValueError, code="INVALID"):
    """Bad input: a name, key, value, duration, rate, option or type. Nothing was written."""


class LimitError(Error, code="LIMIT"):
    """A bound was reached: a value over 1 MiB, a counter past int64, a full memory bound."""


class ConflictError(Error, code="CONFLICT"):
    """A version check failed: the key is absent, expired or at another version."""


class CorruptError(Error, code="CORRUPT"):
    """A stored value does not read as the handle's type, or the file is damaged."""


class ClosedError(Error, code="CLOSED"):
    """The store is closed."""


class OutcomeUnknownError(Error, code="OUTCOME_UNKNOWN"):
    """A group's commit failed: the write may or may not be in the file. Read before writing again."""


class IoError(Error, code="IO"):
    """The file system or SQLite failed; nothing of the call was written."""


class CallCancelledError(Error, code="CANCELLED"):
    """The call was given up before its write started; nothing was written."""


def _from_native(code: str, text: str, message: str, bucket: str | None, path: str | None) -> Error:
    """Builds the exception of a core error (called by the native module)."""
    cls = _BY_CODE.get(code, Error)
    return cls(message, bucket=bucket, path=path, text=text)
