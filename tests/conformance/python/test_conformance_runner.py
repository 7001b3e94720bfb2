"""The Python runner of the conformance cases: every case of
``tests/conformance/cases/*.json`` through the public asyncio API of
``tinystore``, one test per case, failing on any operation it does not know.
See ``tests/conformance/README.md``.

At the end it writes how many cases ran for each contract id to
``target/conformance/python.txt`` (``conformance python KV-<n> <count>``),
which ``tests/conformance/report.py`` joins with the other languages.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from case_runner import Runner, StepFailed
from case_values import UnknownInCase

ROOT = Path(__file__).resolve().parents[3]
CASES = ROOT / "tests" / "conformance" / "cases"
REPORT = ROOT / "target" / "conformance" / "python.txt"


def load_cases() -> list[dict[str, Any]]:
    """Every case of every file, in file order."""
    cases: list[dict[str, Any]] = []
    for f in sorted(CASES.glob("*.json")):
        cases.extend(json.loads(f.read_text()))
    return cases


CASE_LIST = load_cases()
ran: Counter[int] = Counter()


def kv_number(case: dict[str, Any]) -> int:
    return int(case["id"].removeprefix("KV-"))


async def run_case(case: dict[str, Any], dir: Path) -> None:
    runner = Runner(dir)
    await runner.start()
    try:
        for i, step in enumerate(case["steps"], 1):
            try:
                await runner.step(step)
            except (StepFailed, UnknownInCase) as e:
                raise AssertionError(f"{case['id']} {case['title']!r}, step {i} ({step['op']}): {e}") from None
    finally:
        if runner.store is not None and not runner.store.closed:
            await runner.store.close()


@pytest.mark.parametrize(
    "case", CASE_LIST, ids=[f"{c['id']} {c['title']}" for c in CASE_LIST]
)
def test_kv01_to_kv19_conformance_case(case: dict[str, Any], tmp_path: Path) -> None:
    """One case, on a new store in a new directory with the test clock at the cases' start."""
    ran[kv_number(case)] += 1
    asyncio.run(run_case(case, tmp_path / "store"))


def test_kv01_to_kv19_every_id_has_a_case() -> None:
    """The cases cover every contract id, so the report can hold each language to all of them."""
    ids = {kv_number(c) for c in CASE_LIST}
    assert ids >= set(range(1, 20)), f"no case for {sorted(set(range(1, 20)) - ids)}"


def report_lines() -> str:
    """The counts per id, in the Rust runner's format."""
    return "".join(f"conformance python KV-{i} {n}\n" for i, n in sorted(ran.items()))
