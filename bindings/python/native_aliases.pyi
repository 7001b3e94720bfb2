# The names that the annotations of bindings/python/src use, as in
# `#[pyo3(signature = (key: "_Key"))]`: PyO3 keeps such an annotation as text,
# and pyo3-introspection writes it into the stubs as a string without an
# import, so `make generate` appends this file to the stubs it writes
# (python/tinystore/_native.pyi). An annotation that names anything else
# must name a class of the module or a builtin.

import asyncio
import datetime
from collections.abc import Callable
from typing import Any, Protocol

from tinystore.errors import Error as _Error

_Key = str | bytes | int
_Span = str | datetime.timedelta
_Rate = str | tuple[int, _Span]
_Row = tuple[str | bytes, Any, str, int | None]
_Page = tuple[list[_Row], str | bytes | None]
_Scope = Tx | View | asyncio.AbstractEventLoop | None

class _Codec(Protocol):
    """How a handle's values cross (``tinystore._codecs.Codec``)."""

    @property
    def kind(self) -> str: ...
    @property
    def type_name(self) -> str: ...
    @property
    def encode(self) -> Callable[[Any], bytes] | None: ...
    @property
    def decode(self) -> Callable[[bytes], Any] | None: ...
