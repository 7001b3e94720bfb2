"""The engine's warnings reach Python's ``logging`` under the logger ``tinystore``."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from tinystore import sync


@dataclass
class Before:
    port: int = 8080
    rps: int = 100


@dataclass
class After:
    port: int = 8080


class Waiting(logging.Handler):
    """Keeps the records it gets, and says when one names ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.text, self.seen = text, threading.Event()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if self.text in record.getMessage():
            self.seen.set()


def test_an_engine_warning_is_logged_under_the_tinystore_logger(tmp_path: Path) -> None:
    handler = Waiting('"rps" is no longer in the program')
    logger = logging.getLogger("tinystore")
    logger.addHandler(handler)
    try:
        with sync.open(tmp_path) as store:
            before = sync.open_config(store, "app", Before)
            before.update(lambda s: setattr(s, "rps", 200))
            # The program no longer has the field kept for it: the engine warns.
            assert sync.open_config(store, "app", After).get() == After()
            assert handler.seen.wait(10), [r.getMessage() for r in handler.records]
    finally:
        logger.removeHandler(handler)
    record = next(r for r in handler.records if handler.text in r.getMessage())
    assert record.levelno == logging.WARNING
    assert record.name == "tinystore.config"
    assert not record.getMessage().startswith("tinystore:")
