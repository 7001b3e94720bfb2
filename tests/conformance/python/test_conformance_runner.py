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
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from case_runner import Runner, StepFailed
from case_values import UnknownInCase

ROOT = Path(__file__).resolve().parents[3]
CASES = ROOT / "tests" / "conformance" / "cases"
REPORT = ROOT / "target" / "conformance" / "python.txt"
NOT_ON_POSTGRES = json.loads((ROOT / "tests" / "conformance" / "not_on_postgres.json").read_text())
"""The case files that need what a PostgreSQL store does not carry yet, as every runner reads them."""


def load_cases() -> list[tuple[str, dict[str, Any]]]:
    """Every case of every file, in file order, with its file's name."""
    cases: list[tuple[str, dict[str, Any]]] = []
    for f in sorted(CASES.glob("*.json")):
        cases.extend((f.name, c) for c in json.loads(f.read_text()))
    return cases


FILE_CASES = load_cases()
CASE_LIST = [c for _, c in FILE_CASES]
ran: Counter[int] = Counter()


def kv_number(case: dict[str, Any]) -> int:
    return int(case["id"].removeprefix("KV-"))


async def run_case(case: dict[str, Any], dir: Path | str) -> None:
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


def postgres_server() -> str:
    """The PostgreSQL server CI starts (``make pg-start``; make exports its location)."""
    server = os.environ.get("TINYSTORE_TEST_PG")
    if not server:
        pytest.fail(
            "the PostgreSQL run needs a server: run `make pg-start` (a cluster on 127.0.0.1:55432), then "
            "`export TINYSTORE_TEST_PG=postgres://postgres@127.0.0.1:55432/postgres`, or run it through make"
        )
    return server


def empty_schema(server: str, schema: str) -> str:
    """A location in ``schema``, dropped first so that the case starts on an empty store."""
    subprocess.run(
        ["psql", server, "-v", "ON_ERROR_STOP=1", "-qc", f"DROP SCHEMA IF EXISTS {schema} CASCADE"],
        check=True,
        capture_output=True,
    )
    return f"{server}{'&' if '?' in server else '?'}schema={schema}"


@pytest.mark.parametrize(
    ("index", "file", "case"),
    [(i, f, c) for i, (f, c) in enumerate(FILE_CASES)],
    ids=[f"{c['id']} {c['title']}" for c in CASE_LIST],
)
def test_kv01_to_kv19_conformance_case_on_postgres(index: int, file: str, case: dict[str, Any]) -> None:
    """One case on a store in a PostgreSQL schema of its own. A case of a
    file that ``not_on_postgres.json`` lists may fail only with the refusal
    it names, which is reported as an expected failure."""
    location = empty_schema(postgres_server(), f"conformance_python_{index}")
    try:
        asyncio.run(run_case(case, location))
    except AssertionError as e:
        why = NOT_ON_POSTGRES["files"].get(file)
        if why is not None and NOT_ON_POSTGRES["refusal"] in str(e):
            pytest.xfail(f"{file}: {why}, {NOT_ON_POSTGRES['refusal']}")
        raise


def test_kv01_to_kv19_not_on_postgres_names_case_files() -> None:
    """Every file the list of what PostgreSQL does not carry names is a case file."""
    files = {f for f, _ in FILE_CASES}
    assert set(NOT_ON_POSTGRES["files"]) <= files, f"not case files: {set(NOT_ON_POSTGRES['files']) - files}"


def test_kv01_to_kv19_every_id_has_a_case() -> None:
    """The cases cover every contract id, so the report can hold each language to all of them."""
    ids = {kv_number(c) for c in CASE_LIST}
    assert ids >= set(range(1, 20)), f"no case for {sorted(set(range(1, 20)) - ids)}"


def report_lines() -> str:
    """The counts per id, in the Rust runner's format."""
    return "".join(f"conformance python KV-{i} {n}\n" for i, n in sorted(ran.items()))
