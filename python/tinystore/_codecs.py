"""Values by a handle's type.

Scalars (``str``, ``bytes``, ``int``, ``float``, ``bool``, ``None`` for sets)
are handed to the native module, which maps them onto rows with the core's
one mapping, so that every language reads what every other wrote. Every other
type is JSON, written and read here: dataclasses, pydantic models, TypedDicts,
``list[...]``, ``dict[str, ...]``, unions, enums, dates and ``Any``. A value
is checked against the type when it is written (``InvalidError``) and read
back into the same type (``CorruptError`` when the row no longer fits).

A dataclass's fields are named in its JSON as the core names a struct's
(``_native.json_field_name``): ``user_id`` as ``userId``, as TypeScript and Go
name it, and a field reads from either name. A TypedDict's keys and a
pydantic model's fields are kept as they are written.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import json
import types
import typing
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from . import _native

__all__ = ["Codec", "codec_for"]

_Fn = Callable[[Any], Any]

_SCALARS: dict[Any, str] = {
    str: "str",
    bytes: "bytes",
    int: "int",
    float: "float",
    bool: "bool",
    None: "none",
    type(None): "none",
}


@dataclasses.dataclass(frozen=True)
class Codec:
    """How a handle's values cross to the native module."""

    kind: str
    """``str``, ``bytes``, ``int``, ``float``, ``bool``, ``none`` or ``json``."""
    type_name: str
    encode: Callable[[Any], bytes] | None = None
    decode: Callable[[bytes], Any] | None = None


class Mismatch(ValueError):
    """A value that does not fit its type, with where inside it."""

    def __init__(self, what: str, where: tuple[str, ...] = ()) -> None:
        super().__init__(what)
        self.what = what
        self.where = where

    def inside(self, step: str) -> Mismatch:
        return Mismatch(self.what, (step, *self.where))

    def __str__(self) -> str:
        if not self.where:
            return self.what
        return f"{''.join(self.where).lstrip('.')}: {self.what}"


class _NotJson(Mismatch):
    """A value JSON cannot write: the core's fault of that word, with where inside it."""

    def __init__(self, word: str, detail: str, where: tuple[str, ...] = ()) -> None:
        super().__init__(_native.codec_fault(word, detail), where)
        self.word = word
        self.detail = detail

    def inside(self, step: str) -> Mismatch:
        return _NotJson(self.word, self.detail, (step, *self.where))


def _name(tp: Any) -> str:
    if tp is None or tp is type(None):
        return "None"
    if isinstance(tp, type):
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def _got(value: Any) -> str:
    return f"got {type(value).__name__}"


_cache: dict[Any, Codec] = {}


def codec_for(tp: Any) -> Codec:
    """The codec of values of type ``tp`` (cached per type)."""
    try:
        return _cache[tp]
    except (KeyError, TypeError):
        pass
    codec = _build(tp)
    try:
        _cache[tp] = codec
    except TypeError:
        pass  # an unhashable type annotation: built again next time
    return codec


def _is_pydantic(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "model_validate_json") and hasattr(tp, "model_dump_json")


def _build(tp: Any) -> Codec:
    try:
        kind = _SCALARS.get(tp)
    except TypeError:
        kind = None
    name = _name(tp)
    if kind is not None:
        return Codec(kind, name)
    if _is_pydantic(tp):
        return _pydantic_codec(tp, name)
    dump = _dumper(tp)
    load = _loader(tp)

    def encode(value: Any) -> bytes:
        try:
            data = dump(value)
            return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        except _NotJson:
            raise
        except Mismatch as e:
            raise Mismatch(_native.codec_fault("value_type", str(e), name)) from None
        except ValueError as e:  # NaN or infinity: JSON cannot write it
            raise _NotJson("json_encode", str(e)) from None

    def decode(raw: bytes) -> Any:
        try:
            data = json.loads(raw)
        except ValueError as e:
            raise Mismatch(_native.codec_fault("json_decode", str(e))) from None
        try:
            return load(data)
        except Mismatch as e:
            raise Mismatch(_native.codec_fault("row_type", str(e), name)) from None

    return Codec("json", name, encode, decode)


def _pydantic_codec(tp: Any, name: str) -> Codec:
    def encode(value: Any) -> bytes:
        if not isinstance(value, tp):
            raise Mismatch(_native.codec_fault("value_type", _got(value), name))
        try:
            return value.model_dump_json().encode()
        except Exception as e:  # pydantic's serialization errors
            raise _NotJson("json_encode", str(e)) from None

    def decode(raw: bytes) -> Any:
        try:
            return tp.model_validate_json(raw)
        except Exception as e:  # pydantic.ValidationError
            raise Mismatch(_native.codec_fault("row_type", str(e), name)) from None

    return Codec("json", name, encode, decode)


# ---- writing: a Python value of a type to JSON data, checked ----


def _dumper(tp: Any) -> _Fn:
    tp = _unwrap(tp)
    if tp is Any or tp is object:
        return _dump_any
    if tp is bytes:
        return _no_bytes
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _dump_enum(tp)
    if tp in _DATES:
        return _dump_date(tp)
    if tp is uuid.UUID or tp is decimal.Decimal:
        return _dump_str_of(tp)
    if _is_pydantic(tp):
        return _dump_pydantic(tp)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _dump_dataclass(tp)
    return _plain(tp) or _composed(tp, _DUMP)


class _Side(NamedTuple):
    """One direction's functions for the types composed of other types."""

    build: Callable[[Any], _Fn]
    typeddict: Callable[[Any], _Fn]
    literal: Callable[[tuple[Any, ...]], _Fn]
    sequence: Callable[[Any, Any], _Fn]
    fixed: Callable[[tuple[Any, ...]], _Fn]
    mapping: Callable[[Any, Any], _Fn]


def _composed(tp: Any, side: _Side) -> _Fn:
    """The function of a TypedDict, a union, a literal, a sequence, a tuple or
    a mapping, made by ``side``; any other type cannot be kept."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if typing.is_typeddict(tp):
        return side.typeddict(tp)
    if origin in (typing.Union, types.UnionType):
        return _union(args, side.build)
    if origin is typing.Literal:
        return side.literal(args)
    if origin in (list, set, frozenset) or (origin is not None and origin in _SEQUENCES):
        return side.sequence(args[0] if args else Any, origin)
    if origin is tuple:
        return side.fixed(args)
    if origin in (dict,) or (origin is not None and origin in _MAPPINGS):
        return side.mapping(args[0] if args else str, args[1] if args else Any)
    if tp in (list, set, frozenset, tuple):
        return side.sequence(Any, tp)
    if tp is dict:
        return side.mapping(str, Any)
    raise TypeError(f"tinystore cannot keep values of type {_name(tp)}")


_DATES = (dt.datetime, dt.date, dt.time)
_SEQUENCES = (Sequence, typing.Sequence, typing.List, typing.Set, typing.FrozenSet)  # noqa: UP006
_MAPPINGS = (Mapping, typing.Mapping, typing.Dict)  # noqa: UP006


def _unwrap(tp: Any) -> Any:
    while True:
        if typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif hasattr(tp, "__supertype__"):  # NewType
            tp = tp.__supertype__
        else:
            return tp


def _check(ok: Callable[[Any], bool], name: str) -> _Fn:
    def dump(v: Any) -> Any:
        if not ok(v):
            raise Mismatch(f"expected {name}, {_got(v)}")
        return v

    return dump


def _check_none(v: Any) -> Any:
    if v is not None:
        raise Mismatch(f"expected None, {_got(v)}")
    return None


def _dump_float(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise Mismatch(f"expected float, {_got(v)}")
    return float(v)


# The values JSON keeps as they are: checked alike on writing and reading.
_PLAIN: tuple[tuple[Any, _Fn], ...] = (
    (type(None), _check_none),
    (bool, _check(lambda v: type(v) is bool, "bool")),
    (int, _check(lambda v: isinstance(v, int) and not isinstance(v, bool), "int")),
    (float, _dump_float),
    (str, _check(lambda v: isinstance(v, str), "str")),
)


def _plain(tp: Any) -> _Fn | None:
    """The check of a type JSON keeps as it is (``None`` for ``NoneType``), or None."""
    tp = type(None) if tp is None else tp
    return next((fn for t, fn in _PLAIN if tp is t), None)


def _no_bytes(v: Any) -> Any:
    raise _NotJson("json_type", "bytes")


def _dump_enum(tp: type[enum.Enum]) -> _Fn:
    def dump(v: Any) -> Any:
        if not isinstance(v, tp):
            raise Mismatch(f"expected {tp.__name__}, {_got(v)}")
        return v.value

    return dump


def _dump_date(tp: type) -> _Fn:
    def dump(v: Any) -> Any:
        # A datetime is a date too; keep them apart.
        if not isinstance(v, (dt.datetime, dt.date, dt.time)) or not isinstance(v, tp):
            raise Mismatch(f"expected {tp.__name__}, {_got(v)}")
        if tp is dt.date and isinstance(v, dt.datetime):  # a datetime is a date too; keep them apart
            raise Mismatch(f"expected date, {_got(v)}")
        return v.isoformat()

    return dump


def _dump_str_of(tp: type) -> _Fn:
    def dump(v: Any) -> Any:
        if not isinstance(v, tp):
            raise Mismatch(f"expected {tp.__name__}, {_got(v)}")
        return str(v)

    return dump


def _dump_pydantic(tp: Any) -> _Fn:
    def dump(v: Any) -> Any:
        if not isinstance(v, tp):
            raise Mismatch(f"expected {tp.__name__}, {_got(v)}")
        return v.model_dump(mode="json")

    return dump


def _hints(tp: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(tp, include_extras=True)
    except Exception:  # a forward reference that does not resolve: keep what is a type
        return {k: (v if not isinstance(v, str) else Any) for k, v in getattr(tp, "__annotations__", {}).items()}


def _lazy_fields(tp: Any, build: Callable[[Any], _Fn]) -> Callable[[], list[tuple[str, _Fn]]]:
    """Field converters, built at first use so that a type may refer to itself."""
    done: list[list[tuple[str, _Fn]]] = []

    def fields() -> list[tuple[str, _Fn]]:
        if not done:
            hints = _hints(tp)
            if dataclasses.is_dataclass(tp):
                names = [f.name for f in dataclasses.fields(tp)]
            else:
                names = list(hints)
            done.append([(n, build(hints.get(n, Any))) for n in names])
        return done[0]

    return fields


def _dump_dataclass(tp: Any) -> _Fn:
    fields = _lazy_fields(tp, _dumper)

    def dump(v: Any) -> Any:
        if not isinstance(v, tp):
            raise Mismatch(f"expected {tp.__qualname__}, {_got(v)}")
        out = {}
        for name, fn in fields():
            try:
                out[_json_name(name)] = fn(getattr(v, name))
            except Mismatch as e:
                raise e.inside(f".{name}") from None
        return out

    return dump


_json_names: dict[str, str] = {}


def _json_name(field: str) -> str:
    """A dataclass field's name in JSON (``user_id`` as ``userId``), by the core's rule."""
    try:
        return _json_names[field]
    except KeyError:
        name = _json_names[field] = _native.json_field_name(field)
        return name


def _typeddict(tp: Any, build: Callable[[Any], _Fn], what: str, closed: bool) -> _Fn:
    """A TypedDict's fields converted each by ``build``'s function; ``closed``
    refuses keys it does not declare (on writing: reading tolerates them)."""
    fields = _lazy_fields(tp, build)
    required: frozenset[str] = getattr(tp, "__required_keys__", frozenset())

    def convert(v: Any) -> Any:
        if not isinstance(v, dict):
            raise Mismatch(f"expected {tp.__qualname__} ({what}), {_got(v)}")
        out = {}
        known = fields()
        for name, fn in known:
            if name in v:
                try:
                    out[name] = fn(v[name])
                except Mismatch as e:
                    raise e.inside(f".{name}") from None
            elif name in required:
                raise Mismatch(f"the key {name!r} is missing")
        extra = set(v) - {n for n, _ in known} if closed else ()
        if extra:
            raise Mismatch(f"unknown keys {sorted(map(str, extra))}")
        return out

    return convert


def _union(args: tuple[Any, ...], build: Callable[[Any], _Fn]) -> _Fn:
    """The first arm of a union whose function takes the value."""
    arms = [build(a) for a in args]

    def convert(v: Any) -> Any:
        if v is None and type(None) in args:
            return None
        for arm in arms:
            try:
                return arm(v)
            except Mismatch:
                continue
        raise Mismatch(f"expected {' | '.join(_name(a) for a in args)}, {_got(v)}")

    return convert


def _each(pairs: Iterable[tuple[_Fn, Any]]) -> list[Any]:
    """Each item converted by its function; a mismatch names the item's index."""
    out = []
    for i, (fn, x) in enumerate(pairs):
        try:
            out.append(fn(x))
        except Mismatch as e:
            raise e.inside(f"[{i}]") from None
    return out


def _dump_literal(args: tuple[Any, ...]) -> _Fn:
    def dump(v: Any) -> Any:
        if v not in args or type(v) not in {type(a) for a in args}:
            raise Mismatch(f"expected one of {list(args)!r}, got {v!r}")
        return v.value if isinstance(v, enum.Enum) else v

    return dump


def _dump_list(item: Any, origin: Any) -> _Fn:
    kinds = (set, frozenset) if origin in (set, frozenset, typing.Set, typing.FrozenSet) else (list, tuple)  # noqa: UP006
    return _sequence(item, _dumper, kinds, kinds[0].__name__, list)


def _dump_tuple(args: tuple[Any, ...]) -> _Fn:
    if len(args) == 2 and args[1] is Ellipsis:
        return _dump_list(args[0], list)
    return _fixed(args, _dumper, (tuple, list), "a tuple", list)


def _sequence(item: Any, build: Callable[[Any], _Fn], kinds: tuple[type[Any], ...], what: str, make: Any) -> _Fn:
    """A sequence of one type: one of ``kinds`` (never text), each item by
    ``build``'s function, answered as ``make`` makes the list of them."""
    fn = build(item)

    def convert(v: Any) -> Any:
        if not isinstance(v, kinds) or isinstance(v, (str, bytes)):
            raise Mismatch(f"expected {what}, {_got(v)}")
        out = _each((fn, x) for x in v)
        return out if make is list else make(out)

    return convert


def _fixed(args: tuple[Any, ...], build: Callable[[Any], _Fn], kinds: tuple[type[Any], ...], what: str, make: Any) -> _Fn:
    """A tuple of ``len(args)`` items, each of its own type."""
    fns = [build(a) for a in args]

    def convert(v: Any) -> Any:
        if not isinstance(v, kinds) or len(v) != len(fns):
            raise Mismatch(f"expected {what} of {len(fns)}, {_got(v)}")
        return make(_each(zip(fns, v)))

    return convert


def _dump_dict(key: Any, value: Any) -> _Fn:
    key = _unwrap(key)
    if key not in (str, int, Any):
        raise TypeError(f"tinystore keeps dicts with str or int keys as JSON, not {_name(key)}")
    fn = _dumper(value)

    def json_key(k: Any) -> str:
        if key is int and (not isinstance(k, int) or isinstance(k, bool)):
            raise Mismatch(f"expected int keys, got {type(k).__name__}")
        if key is not int and not isinstance(k, str):
            raise _NotJson("json_key", type(k).__name__)
        return str(k)

    def dump(v: Any) -> Any:
        if not isinstance(v, Mapping):
            raise Mismatch(f"expected dict, {_got(v)}")
        return _by_key(v.items(), json_key, fn)

    return dump


def _by_key(items: Iterable[tuple[Any, Any]], key_of: _Fn, fn: _Fn) -> dict[Any, Any]:
    """Each value converted by ``fn`` under what ``key_of`` makes of its key
    (which refuses a key of another type); a mismatch names the key."""
    out = {}
    for k, x in items:
        at = key_of(k)
        try:
            out[at] = fn(x)
        except Mismatch as e:
            raise e.inside(f"[{k!r}]") from None
    return out


def _dump_any(v: Any) -> Any:
    """Any value JSON can hold, and the types this module knows, by their own type."""
    if v is None or isinstance(v, (str, bool, int)):
        return v
    if isinstance(v, float):
        return v
    if isinstance(v, Mapping):
        return {_any_key(k): _dump_any(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_dump_any(x) for x in v]
    if isinstance(v, (set, frozenset)):
        # JSON has no sets: kept as a list it would read back as a list, in no set order.
        raise _NotJson("json_encode", f"{type(v).__name__} {v!r}: a bucket of type set[...] keeps sets")
    if isinstance(v, bytes):
        return _no_bytes(v)
    tp = type(v)
    if dataclasses.is_dataclass(tp) or _is_pydantic(tp) or isinstance(v, (enum.Enum, *_DATES, uuid.UUID, decimal.Decimal)):
        return _dumper(tp)(v)
    raise _NotJson("json_type", tp.__name__)


def _any_key(k: Any) -> str:
    if isinstance(k, str):
        return k
    if isinstance(k, int) and not isinstance(k, bool):
        return str(k)
    raise _NotJson("json_key", type(k).__name__)


# ---- reading: JSON data to a Python value of a type, checked ----


def _loader(tp: Any) -> _Fn:
    tp = _unwrap(tp)
    if tp is Any or tp is object:
        return lambda v: v
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _load_via(tp, lambda v: tp(v))
    if tp is dt.datetime:
        return _load_text(tp, dt.datetime.fromisoformat)
    if tp is dt.date:
        return _load_text(tp, dt.date.fromisoformat)
    if tp is dt.time:
        return _load_text(tp, dt.time.fromisoformat)
    if tp is uuid.UUID or tp is decimal.Decimal:
        return _load_text(tp, tp)
    if _is_pydantic(tp):
        return _load_via(tp, tp.model_validate)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _load_dataclass(tp)
    return _plain(tp) or _composed(tp, _LOAD)


def _load_via(tp: Any, make: _Fn) -> _Fn:
    def load(v: Any) -> Any:
        try:
            return make(v)
        except Exception as e:
            raise Mismatch(f"{v!r} is not a {_name(tp)} ({e})") from None

    return load


def _load_text(tp: Any, parse: _Fn) -> _Fn:
    def load(v: Any) -> Any:
        if not isinstance(v, str):
            raise Mismatch(f"expected {_name(tp)} as text, {_got(v)}")
        try:
            return parse(v)
        except Exception:
            raise Mismatch(f"{v!r} is not a {_name(tp)}") from None

    return load


def _load_dataclass(tp: Any) -> _Fn:
    fields = _lazy_fields(tp, _loader)
    init = {f.name for f in dataclasses.fields(tp) if f.init}

    def load(v: Any) -> Any:
        if not isinstance(v, dict):
            raise Mismatch(f"expected {tp.__qualname__} (an object), {_got(v)}")
        kwargs = {}
        for name, fn in fields():
            if name not in init:
                continue
            # Each field by its JSON name, or else by its own (as Rust reads a struct too).
            key = _json_name(name)
            if key not in v:
                key = name
            if key in v:
                try:
                    kwargs[name] = fn(v[key])
                except Mismatch as e:
                    raise e.inside(f".{name}") from None
        try:
            return tp(**kwargs)
        except TypeError as e:  # a required field is missing
            raise Mismatch(str(e)) from None

    return load


def _load_literal(args: tuple[Any, ...]) -> _Fn:
    def load(v: Any) -> Any:
        for a in args:
            if (a.value if isinstance(a, enum.Enum) else a) == v:
                return a
        raise Mismatch(f"expected one of {list(args)!r}, got {v!r}")

    return load


def _load_list(item: Any, origin: Any) -> _Fn:
    return _sequence(item, _loader, (list,), "a list", origin if origin in (set, frozenset, tuple) else list)


def _load_tuple(args: tuple[Any, ...]) -> _Fn:
    if len(args) == 2 and args[1] is Ellipsis:
        return _load_list(args[0], tuple)
    return _fixed(args, _loader, (list,), "a list", tuple)


def _load_dict(key: Any, value: Any) -> _Fn:
    key = _unwrap(key)
    fn = _loader(value)

    def typed_key(k: str) -> Any:
        if key is not int:
            return k
        try:
            return int(k)
        except ValueError:
            raise Mismatch(f"the key {k!r} is not an int") from None

    def load(v: Any) -> Any:
        if not isinstance(v, dict):
            raise Mismatch(f"expected an object, {_got(v)}")
        return _by_key(v.items(), typed_key, fn)

    return load


# Writing checks a TypedDict's keys; reading tolerates keys it does not declare.
_DUMP = _Side(_dumper, lambda tp: _typeddict(tp, _dumper, "a dict", True), _dump_literal, _dump_list, _dump_tuple, _dump_dict)
_LOAD = _Side(_loader, lambda tp: _typeddict(tp, _loader, "an object", False), _load_literal, _load_list, _load_tuple, _load_dict)
