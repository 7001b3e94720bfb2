"""Raw buckets and a bucket's own codec.

``store.bucket("codes", tinystore.Raw)`` reads every value as its row keeps
it, whatever type or language wrote it: ``None`` (nothing: a set member), an
``int`` (integers and bools) or ``bytes`` (text, bytes, float bits, uint64,
JSON; an empty string is ``b""``). What it writes, a bucket of the matching
type reads back.

``store.bucket("points", Point, codec=PointCodec())`` keeps values as the
bytes of the codec's ``encode`` and reads them with its ``decode``. A value
``decode`` refuses is ``CorruptError`` naming the bucket and key, and a
``take`` of it leaves it in place: the decode runs inside the take's write.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, Union

from . import _native
from ._codecs import Codec as _Codec
from ._codecs import Mismatch, _name
from .errors import InvalidError

__all__ = ["Raw", "RawValue", "Codec", "raw_codec", "custom_codec"]

T = TypeVar("T")

RawValue = Union[int, bytes, None]
"""A value of a raw bucket: ``None``, an ``int`` or ``bytes``."""


class Raw:
    """The type of a raw bucket: ``store.bucket(name, tinystore.Raw)``.

    Its values are ``RawValue``: ``None`` (a set member), an ``int`` or
    ``bytes``. It writes ``str`` as its UTF-8 bytes too, as a ``str`` bucket
    keeps it. ``get`` gives ``None`` for a missing key as for a set member;
    ``has`` or ``entry`` tell them apart.
    """

    def __new__(cls) -> Raw:  # pragma: no cover - a marker, never made
        raise TypeError("tinystore.Raw is a bucket's type, not a value: values are None, int or bytes")


class Codec(Protocol[T]):
    """A bucket's own codec: any object with these two methods."""

    def encode(self, value: T, /) -> bytes:
        """The bytes that keep ``value``; an exception is ``InvalidError`` and writes nothing."""
        ...

    def decode(self, data: bytes, /) -> T:
        """The value kept in ``data``; an exception is ``CorruptError``."""
        ...


_RAW = _Codec("raw", "Raw")


def raw_codec() -> _Codec:
    """The codec of ``tinystore.Raw``: rows cross as they are."""
    return _RAW


def custom_codec(bucket: str, tp: Any, codec: Any) -> _Codec:
    """Wraps a user's codec so that its failures carry what failed."""
    enc = getattr(codec, "encode", None)
    dec = getattr(codec, "decode", None)
    if not callable(enc) or not callable(dec):
        message = f"a codec is an object with encode(value) -> bytes and decode(bytes) -> value, not {type(codec).__name__}"
        raise InvalidError(message, bucket=bucket)

    def encode(value: Any) -> bytes:
        try:
            out = enc(value)
        except Exception as e:
            raise Mismatch(_native.codec_fault("encode", _why(e))) from None
        if isinstance(out, (bytearray, memoryview)):
            out = bytes(out)
        if not isinstance(out, bytes):
            raise Mismatch(_native.codec_fault("not_bytes", type(out).__name__))
        return out

    def decode(data: bytes) -> Any:
        try:
            return dec(data)
        except Exception as e:
            raise Mismatch(_native.codec_fault("decode", _why(e))) from None

    name = type(codec).__name__ if tp is Any else _name(tp)
    return _Codec("codec", name, encode, decode)


def _why(e: Exception) -> str:
    """What a codec's exception says, as every language's codec error gives
    it: its message, or its class when it has none."""
    return str(e) or type(e).__name__
