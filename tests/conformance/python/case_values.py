"""The values, keys and durations of the language-neutral cases (conformance
and interchange) as the Python API takes and gives them: shared by the
Python conformance runner and the Python agent.

Values of a case are encoded as in ``tests/conformance/README.md`` ("Values
by type"); this module turns them into the Python values a typed bucket
keeps, and compares what a bucket gives back with them, bit for bit for
floats and by value (with JSON's types) for JSON.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

JSON = Any
"""The Python type of a ``json`` case value: whatever ``json.loads`` gives
(dicts, lists, str, int, float, bool, None), kept as compact JSON."""

TYPES: dict[str, Any] = {
    "string": str,
    "bytes": bytes,
    "int": int,
    "float": float,
    "bool": bool,
    "set": None,
    "json": JSON,
}
"""The Python type a bucket of each case type is opened with."""


class UnknownInCase(Exception):
    """A case names an operation, kind, type or field this runner does not
    know: the case fails, so that nothing is skipped in silence."""


def bucket_type(name: str) -> Any:
    """The Python type a bucket of the case type ``name`` holds."""
    try:
        return TYPES[name]
    except KeyError:
        raise UnknownInCase(f"the Python API has no bucket type for the case type {name!r}") from None


def text(v: Any) -> str:
    """A key or owner of a case as text (an integer is its decimal spelling)."""
    if isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if isinstance(v, dict) and "repeat" in v:
        return str(v["repeat"]) * int(v["times"])
    raise UnknownInCase(f"not a key or owner: {v!r}")


def key(v: Any) -> str | int:
    """A key or owner of a case as the API takes it: an integer stays an
    integer, so that the API's own ``42`` is ``"42"`` is exercised."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return text(v)


def float_of(v: Any) -> float:
    """A float of a case: a number, ``{"float": "-0" | "NaN" | "Infinity" | "-Infinity"}`` or ``{"bits": hex}``."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, dict) and "bits" in v:
        return struct.unpack(">d", bytes.fromhex(v["bits"].rjust(16, "0")))[0]
    if isinstance(v, dict) and "float" in v:
        special = {"-0": -0.0, "NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
        if v["float"] in special:
            return special[v["float"]]
    raise UnknownInCase(f"not a float value: {v!r}")


def float_bits(f: float) -> bytes:
    """A float's eight bytes, to compare NaN payloads and -0 bit for bit."""
    return struct.pack(">d", f)


def value(ty: str, v: Any) -> Any:
    """The Python value a bucket of case type ``ty`` is given for the case value ``v``."""
    if ty == "string":
        if isinstance(v, str):
            return v
        if isinstance(v, dict) and "repeat" in v:
            return text(v)
    elif ty == "bytes":
        if isinstance(v, dict) and "hex" in v:
            return bytes.fromhex(v["hex"]) * int(v.get("times", 1))
    elif ty == "int":
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if isinstance(v, dict) and "int" in v:
            return int(v["int"])
    elif ty == "uint64":
        if isinstance(v, dict) and "uint64" in v:
            return int(v["uint64"])
    elif ty == "float":
        return float_of(v)
    elif ty == "bool":
        if isinstance(v, bool):
            return v
    elif ty == "set":
        if v is None:
            return None
    elif ty == "json":
        return v
    raise UnknownInCase(f"not a {ty} value: {v!r}")


def same_json(a: Any, b: Any) -> bool:
    """JSON equality with JSON's types: ``1``, ``1.0`` and ``true`` differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def same_value(ty: str, expected: Any, got: Any) -> bool:
    """Whether ``got``, read from a bucket of case type ``ty``, is the case value ``expected``."""
    if ty == "json":
        return same_json(expected, got)
    if ty == "float":
        return isinstance(got, float) and float_bits(got) == float_bits(float_of(expected))
    want = value(ty, expected)
    return type(got) is type(want) and got == want


_PART = re.compile(r"(\d+)(ms|w|d|h|m|s)")
_MS = {"w": 604_800_000, "d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000, "ms": 1}


def millis(span: str) -> int:
    """A duration of a case (``"1h30m"``, ``"-1s"``) in milliseconds.

    The API takes duration text itself; the runner needs the number only to
    compare an expiry or a retry time with the store's clock, and to turn
    ``expires_in`` into the time the API's ``expires_at`` takes.
    """
    sign = -1 if span.startswith("-") else 1
    body = span.lstrip("-")
    parts = _PART.findall(body)
    if not parts or "".join(n + u for n, u in parts) != body:
        raise UnknownInCase(f"not a duration: {span!r}")
    return sign * sum(int(n) * _MS[u] for n, u in parts)


def short(v: Any, limit: int = 80) -> str:
    """A value for a message, cut to ``limit`` characters."""
    r = repr(v)
    return r if len(r) <= limit else r[: limit - 1] + "…"
