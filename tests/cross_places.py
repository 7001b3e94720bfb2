"""Where a cross-language check keeps its store: a new directory, or, with
`tests/cross.py --postgres URL`, a new schema of that PostgreSQL database,
dropped afterwards. Every agent opens the location it is given, so the same
checks run on kv.db and on PostgreSQL."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import tempfile
from typing import Iterator

_server: str | None = None
_count = itertools.count()


def use_postgres(url: str) -> None:
    global _server
    _server = url


def on_postgres() -> bool:
    return _server is not None


@contextlib.contextmanager
def place() -> Iterator[str]:
    if _server is None:
        with tempfile.TemporaryDirectory() as d:
            yield d
        return
    schema = f"cross_{os.getpid()}_{next(_count)}"
    sep = "&" if "?" in _server else "?"
    try:
        yield f"{_server}{sep}schema={schema}"
    finally:
        subprocess.run(["psql", "-q", _server, "-c", f"DROP SCHEMA IF EXISTS {schema} CASCADE"],
                       capture_output=True, check=False)
