"""Typed settings (KV-20): a dataclass or pydantic model, from layers.

The layers, in order: the class's defaults (or the instance given), partial
``defaults`` mappings and the environment (``.env`` files, then
``os.environ``) in the order given, then the updates kept in ``kv.db`` field by field, which every handle, in
this process or another, sees::

    @dataclass
    class Limits:
        rps: int = 100

    @dataclass
    class Settings:
        port: int = 8080
        timeout: timedelta = timedelta(seconds=30)
        limits: Limits = field(default_factory=Limits)
        token: str = field(default="", metadata={"secret": True})

    settings = await tinystore.open_config(store, "app", Settings, env_prefix="APP", env_files=[".env"])
    settings.get().port                        # from memory
    await settings.update(lambda s: setattr(s.limits, "rps", 200))  # kept
    async for s in settings.watch(): ...

This module only describes the class to the engine and converts values; the
layering, the parsing of variables, the checks and the kept rows are the
engine's, the same in every language.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import datetime as dt
import functools
import json
import os
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar

from . import _native
from ._base import StoreBase
from .errors import InvalidError

T = TypeVar("T")
P = ParamSpec("P")

__all__ = ["Config", "Source", "SyncConfig", "Watch", "open_config", "open_sync_config"]


@dataclass(frozen=True)
class Source:
    """Where a field's value came from.

    Attributes:
        path: the field's path, as ``limits.rps``.
        origin: ``"default"``, ``"defaults"``, ``"env_file"``, ``"env"`` or ``"kept"``.
        detail: the rest: ``var`` and ``file`` of a variable, ``layer`` of
            a defaults mapping, ``version`` of a kept value.
        left_out: why a value kept for the field was left out, if one was.
    """

    path: str
    origin: str
    detail: dict[str, Any]
    left_out: str | None = None


@dataclass
class _Field:
    path: str
    kind: str
    tp: Any  # the nested class, for a struct; the item type of a list


def _unwrap(tp: Any) -> Any:
    """The type under ``Annotated`` and ``Optional``."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return _unwrap(args[0])
    return tp


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "model_fields") and hasattr(tp, "model_validate")


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and (dataclasses.is_dataclass(tp) or _is_model(tp))


def _kind(tp: Any) -> str:
    """The engine's type of a Python annotation."""
    tp = _unwrap(tp)
    if tp is bool:
        return "bool"
    if tp is int:
        return "int"
    if tp is float:
        return "float"
    if tp is str:
        return "str"
    if tp is dt.timedelta:
        return "duration"
    if typing.get_origin(tp) in (list, tuple, set, frozenset) or tp in (list, tuple):
        args = typing.get_args(tp)
        item = _kind(args[0]) if args else "str"
        return f"list:{item}" if not item.startswith("list:") else "list:json"
    return "json"


def _members(tp: Any) -> list[tuple[str, Any, Mapping[str, Any]]]:
    """Each field of a dataclass or model: its name, annotation and marks."""
    if _is_model(tp):
        out: list[tuple[str, Any, Mapping[str, Any]]] = []
        for name, info in tp.model_fields.items():
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            out.append((name, info.annotation, extra))
        return out
    hints = typing.get_type_hints(tp, include_extras=True)
    return [(f.name, hints[f.name], f.metadata) for f in dataclasses.fields(tp)]


def _describe(tp: Any, value: Any, at: str, out: list[dict[str, Any]], shape: dict[str, _Field]) -> None:
    for name, ann, marks in _members(tp):
        path = f"{at}{name}"
        inner = _unwrap(ann)
        current = getattr(value, name)
        if _is_struct(inner):
            shape[path] = _Field(path, "struct", inner)
            _describe(inner, current, f"{path}.", out, shape)
            continue
        kind = _kind(ann)
        shape[path] = _Field(path, kind, inner)
        out.append(
            {
                "path": path,
                "type": kind,
                "default": _to_json(current),
                "secret": bool(marks.get("secret", False)),
                "required": bool(marks.get("required", False)),
                "env": marks.get("env"),
            }
        )


def _to_json(value: Any) -> Any:
    """A Python value in the engine's form: a timedelta as whole milliseconds."""
    if isinstance(value, dt.timedelta):
        return round(value / dt.timedelta(milliseconds=1))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if _is_model(type(value)):
        return {name: _to_json(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_to_json(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _to_json(v) for k, v in value.items()}
    return value


def _from_json(tp: Any, data: Mapping[str, Any], shape: dict[str, _Field], at: str = "") -> Any:
    """The class built from the engine's JSON; its checks run as it is built."""
    args: dict[str, Any] = {}
    for name, _ann, _marks in _members(tp):
        f = shape[f"{at}{name}"]
        v = data.get(name)
        if f.kind == "struct":
            args[name] = _from_json(f.tp, v or {}, shape, f"{f.path}.")
        elif f.kind == "duration":
            args[name] = dt.timedelta(milliseconds=v or 0)
        elif f.kind.startswith("list:") and typing.get_origin(f.tp) in (tuple, set, frozenset):
            args[name] = typing.get_origin(f.tp)(v or [])
        else:
            args[name] = v
    if _is_model(tp):
        return tp.model_validate(args)
    return tp(**args)


class _ConfigBase(Generic[T]):
    """What the async and sync configs share: reads from memory."""

    def __init__(self, native: _native.Config, tp: type[T], shape: dict[str, _Field]) -> None:
        self._n = native
        self._tp = tp
        self._shape = shape
        self._cached: tuple[int, T] | None = None

    def get(self) -> T:
        """The settings now, from memory (rebuilt once a change). Treat it as read-only."""
        g = self._n.generation()
        if self._cached is None or self._cached[0] != g:
            self._cached = (g, _from_json(self._tp, json.loads(self._n.get()), self._shape))
        return self._cached[1]

    def _patch(self, change: Callable[[T], T | None]) -> str:
        current = copy.deepcopy(self.get())
        changed = change(current)
        return json.dumps(_to_json(current if changed is None else changed))

    def sources(self) -> list[Source]:
        """Where each field's value came from (secret fields are not listed)."""
        out = []
        for s in json.loads(self._n.sources()):
            detail = {k: v for k, v in s.items() if k not in ("path", "from", "leftOut")}
            out.append(Source(s["path"], s["from"], detail, s.get("leftOut")))
        return out


class Config(_ConfigBase[T]):
    """Typed settings of class ``T`` kept in a store (KV-20).

    ``get`` reads memory; ``update`` checks the result by its types and the
    class's own checks (``__post_init__``, pydantic validators, ``validate``)
    before anything is written, and keeps the fields it changed; ``reset``
    gives a field back to the layers; ``watch`` yields every change, made by
    any handle or process; ``sources`` says where each field came from.
    """

    async def update(self, change: Callable[[T], T | None]) -> None:
        """Changes a copy of the settings with ``change`` (which mutates it or
        returns a new one), checks it, and keeps the changed fields.

        Raises:
            InvalidError: a value of the wrong type, a secret field, a
                required field emptied, or the class's checks refusing it;
                nothing is written.
        """
        await asyncio.to_thread(self._n.update, self._patch(change))

    async def reset(self, path: str) -> None:
        """Gives the field at ``path``, or every field of the struct there, back to the layers."""
        await asyncio.to_thread(self._n.reset, path)

    def watch(self, *, timeout: float | None = None) -> Watch[T]:
        """The settings after every change from now on, by any handle or
        process (another process's within a second); behind, it skips to the
        latest. Ends when the store closes, or after ``timeout`` seconds
        without a change::

            async for s in settings.watch():
                server.set_rate(s.limits.rps)
        """
        return Watch(self, _steps(self._n, timeout))


def _steps(native: _native.Config, timeout: float | None) -> _native.ConfigWatch:
    return native.watch(None if timeout is None else timeout * 1000)


class Watch(Generic[T]):
    """The changes of a config, from the moment ``watch`` was called."""

    def __init__(self, config: Config[T], steps: _native.ConfigWatch) -> None:
        self._config = config
        self._steps = steps

    def __aiter__(self) -> Watch[T]:
        return self

    async def __anext__(self) -> T:
        # The core decides each step and answers it on this loop: no thread
        # waits for a change.
        running = asyncio.get_running_loop()
        while True:
            changed = await self._steps.next_then(running)
            if changed is None:
                raise StopAsyncIteration
            if changed:
                return self._config.get()

    async def aclose(self) -> None:
        """Stops watching (nothing is held between changes)."""


class SyncConfig(_ConfigBase[T]):
    """:class:`Config` for synchronous code: ``update`` and ``reset`` block
    until durable, and ``watch`` is an iterator that blocks for each change."""

    def update(self, change: Callable[[T], T | None]) -> None:
        """Changes a copy of the settings with ``change``, checks it, and
        keeps the changed fields (see :meth:`Config.update`)."""
        self._n.update(self._patch(change))

    def reset(self, path: str) -> None:
        """Gives the field at ``path``, or every field of the struct there, back to the layers."""
        self._n.reset(path)

    def watch(self, *, timeout: float | None = None) -> Iterator[T]:
        """The settings after every change from now on, by any handle or
        process; ends when the store closes, or after ``timeout`` seconds
        without a change."""
        steps = _steps(self._n, timeout)

        def changes() -> Iterator[T]:
            while (changed := steps.next()) is not None:
                if changed:
                    yield self.get()

        return changes()


@dataclass(frozen=True)
class FromEnv:
    """The environment as a layer, for where it stands among ``layers``.

    ``layers=[from_file, FromEnv("APP", ".env")]`` puts the variables over
    the file; ``layers=[FromEnv("APP"), from_file]`` lets the file win.
    ``env_prefix=`` is the same layer over every mapping.
    """

    prefix: str
    files: tuple[str | os.PathLike[str], ...] = ()
    environ: Mapping[str, str] | None = None

    def __init__(
        self, prefix: str, *files: str | os.PathLike[str], environ: Mapping[str, str] | None = None
    ) -> None:
        object.__setattr__(self, "prefix", prefix)
        object.__setattr__(self, "files", tuple(files))
        object.__setattr__(self, "environ", environ)


def _env_layer(env: FromEnv) -> dict[str, Any]:
    environ = os.environ if env.environ is None else env.environ
    return {"env": {"prefix": env.prefix, "files": [os.fspath(f) for f in env.files], "vars": dict(environ)}}


def _open_native(
    store: StoreBase[Any, Any, Any],
    name: str,
    tp: type[T],
    defaults: T | None,
    layers: Iterable[Mapping[str, Any] | FromEnv],
    env_prefix: str | None,
    env_files: Iterable[str | os.PathLike[str]],
    environ: Mapping[str, str] | None,
    validate: Callable[[T], object] | None,
) -> tuple[_native.Config, dict[str, _Field]]:
    if not _is_struct(tp):
        raise InvalidError(f"config {name!r}: {tp!r} is not a dataclass or pydantic model", bucket=name)
    base = tp() if defaults is None else defaults
    fields: list[dict[str, Any]] = []
    shape: dict[str, _Field] = {}
    _describe(tp, base, "", fields, shape)

    def check(text: str) -> None:
        value = _from_json(tp, json.loads(text), shape)
        if validate is not None:
            validate(value)

    given = [*layers]
    if env_prefix is not None:
        given.append(FromEnv(env_prefix, *env_files, environ=environ))
    # In the order given: the core reads the environment where it stands,
    # and refuses a second one.
    spec = {"layers": [_env_layer(x) if isinstance(x, FromEnv) else {"defaults": _to_json(dict(x))} for x in given]}
    return _native.Config(store._n, name, json.dumps(fields), json.dumps(spec), check), shape


def open_config(
    store: StoreBase[Any, Any, Any],
    name: str,
    tp: type[T],
    *,
    defaults: T | None = None,
    layers: Iterable[Mapping[str, Any] | FromEnv] = (),
    env_prefix: str | None = None,
    env_files: Iterable[str | os.PathLike[str]] = (),
    environ: Mapping[str, str] | None = None,
    validate: Callable[[T], object] | None = None,
) -> Config[T]:
    """Opens config ``name`` of class ``tp`` (a dataclass or pydantic model).

    Args:
        store: an open store (async or sync).
        defaults: the first layer; ``tp()`` when not given.
        layers: partial defaults over it, in order, each over the one
            before: nested mappings (what a JSON or YAML file reads as), and
            at most one :class:`FromEnv`, the environment where it stands.
        env_prefix: read the environment, each field from ``PREFIX_PATH``
            (``APP_LIMITS_RPS``) or its ``env`` mark; ``""`` for no prefix.
            Without it no variable is read.
        env_files: ``.env`` files under the process's variables, a later one
            over an earlier; a missing one is skipped.
        environ: the variables to read (``os.environ`` when not given).
        validate: a check of the whole settings, raising to refuse them.

    Field marks: ``field(metadata={"secret": True, "required": True, "env":
    "NAME"})`` on a dataclass, ``Field(json_schema_extra={...})`` on a model.

    Raises:
        InvalidError: every variable that does not read as its field's type
            and every required field left empty, named by its variable, in
            one error; or layers that ``tp``'s checks or ``validate`` refuse.
    """
    native, shape = _open_native(store, name, tp, defaults, layers, env_prefix, env_files, environ, validate)
    return Config(native, tp, shape)


def _for_sync_code(opener: Callable[P, Config[T]]) -> Callable[P, SyncConfig[T]]:
    """``opener`` answering the same settings as a :class:`SyncConfig`."""

    @functools.wraps(opener)
    def open(*args: P.args, **kwargs: P.kwargs) -> SyncConfig[T]:
        opened = opener(*args, **kwargs)
        return SyncConfig(opened._n, opened._tp, opened._shape)

    return open


open_sync_config = _for_sync_code(open_config)
""":func:`open_config` for synchronous code (``tinystore.sync.open_config``)."""
