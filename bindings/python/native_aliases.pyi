# The names that the annotations of bindings/python/src use, as in
# `#[pyo3(signature = (key: "_Key"))]`: PyO3 keeps such an annotation as text,
# and pyo3-introspection writes it into the stubs as a string without an
# import, so `make generate` appends this file to the stubs it writes
# (python/tinystore/_native.pyi). An annotation that names anything else
# must name a class of the module or a builtin.

import asyncio
import datetime
from collections.abc import Callable
from typing import Any

_Key = str | bytes | int
_Span = str | datetime.timedelta
_Rate = str | tuple[int, _Span]
_Row = tuple[str | bytes, Any, str, int | None]
_Page = tuple[list[_Row], str | bytes | None]
_Scope = Tx | View | asyncio.AbstractEventLoop | None
