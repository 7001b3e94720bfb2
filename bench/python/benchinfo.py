"""What every bench script shares: the machine and load it ran under, rounds
that alternate the contenders, medians, and a results file for the charts.

A figure is only worth what its conditions are, so each report starts with
the machine, the command and the load average, and the JSON written to
``bench/results/`` holds the same, for ``chart.py`` to draw.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import tempfile
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")


def machine() -> dict[str, Any]:
    """The CPU, cores, kernel and the load average now."""
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "load": [round(x, 2) for x in os.getloadavg()],
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "time": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }


def parser(doc: str | None, rounds: int) -> argparse.ArgumentParser:
    """A bench's command line: its docstring as the help, ``--rounds``
    (alternating rounds, ``rounds`` unless given) and ``--dir``; the bench
    adds its own options."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--dir", default=None, help="where the files go (a real disk: fsync must cost)")
    return ap


def run(ap: argparse.ArgumentParser, prefix: str, report: Callable[[argparse.Namespace, str], None]) -> None:
    """Parses the command line of ``ap`` (made by ``parser``) and runs
    ``report(args, base)`` with a scratch directory as ``base``."""
    args = ap.parse_args()
    with scratch(prefix, args.dir) as base:
        report(args, base)


@contextlib.contextmanager
def scratch(prefix: str, where: str | None) -> Iterator[str]:
    """A new directory for a run's files, removed after it: in ``where``
    (a bench's ``--dir``), else beside the benches, on a real disk where an
    fsync costs what it does for users."""
    base = tempfile.mkdtemp(prefix=prefix, dir=where or os.path.dirname(os.path.abspath(__file__)))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def header(title: str, meta: dict[str, Any]) -> None:
    print(f"== {title}")
    print(f"# machine: {meta['cpu']}, {meta['cores']} cores, Linux {meta['kernel']}, Python {meta['python']}")
    print(f"# command: {meta['command']}")
    print(f"# load average at start: {' '.join(map(str, meta['load']))} (1, 5, 15 min); {meta['time']}")
    if meta["load"][0] > (meta["cores"] or 1):
        print(f"# WARNING: the load average is above the core count: the machine is busy, figures are noisy")


def run_rounds(rounds: int, measures: dict[str, Callable[[], float]]) -> dict[str, float]:
    """Runs every measure once a round, in an order that reverses every
    other round, so a noisy neighbour slows all contenders alike; the
    median of each (whatever unit the measures answer in)."""
    seen: dict[str, list[float]] = {name: [] for name in measures}
    for r in range(rounds):
        order = list(measures)
        if r % 2:
            order.reverse()
        for name in order:
            seen[name].append(measures[name]())
    return {name: statistics.median(v) for name, v in seen.items()}


def timed(fn: Callable[[], int]) -> float:
    """Ops per second of ``fn``, which answers how many ops it ran."""
    t = time.perf_counter()
    n = fn()
    return n / (time.perf_counter() - t)


def table(rows: dict[str, float], unit: str = "ops/s") -> None:
    print(f"| measure | {unit} | µs/op |" if unit == "ops/s" else f"| measure | {unit} |")
    print("|---|---:|---:|" if unit == "ops/s" else "|---|---:|")
    for name, v in rows.items():
        if unit == "ops/s":
            print(f"| {name} | {v:,.0f} | {1e6 / v:,.1f} |")
        else:
            print(f"| {name} | {v:,.1f} |")


def ratios(rows: list[tuple[str, float, str]]) -> None:
    print("| ratio | value | target |")
    print("|---|---:|---|")
    for name, v, target in rows:
        print(f"| {name} | {v:.2f} | {target} |")


def save(name: str, meta: dict[str, Any], sections: dict[str, Any], merge: bool = False) -> str:
    """Writes ``bench/results/<name>.json`` for the charts; its path. With
    ``merge``, sections of an earlier run that this one did not measure stay
    (with the conditions of this run in ``meta``)."""
    os.makedirs(RESULTS, exist_ok=True)
    meta = {**meta, "load_end": [round(x, 2) for x in os.getloadavg()]}
    path = os.path.join(RESULTS, f"{name}.json")
    if merge and os.path.exists(path):
        with open(path) as f:
            earlier = json.load(f)
        earlier.pop("meta", None)
        sections = {**earlier, **sections}
    with open(path, "w") as f:
        json.dump({"meta": meta, **sections}, f, indent=1)
    print(f"# load average at the end: {' '.join(map(str, meta['load_end']))}; results in {path}")
    return path
