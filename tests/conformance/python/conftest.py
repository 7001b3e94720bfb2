"""Writes the conformance counts per id once every case has run."""

from __future__ import annotations

import pytest


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    import test_conformance_runner as t

    if not t.ran:
        return  # nothing ran (collection only): leave the last report as it was
    t.REPORT.parent.mkdir(parents=True, exist_ok=True)
    t.REPORT.write_text(t.report_lines())
    print("\n" + t.report_lines(), end="")
