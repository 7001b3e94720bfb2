"""Draws the charts of docs/measurements.md from the results the bench
scripts wrote to bench/results/*.json: for each section, its ratios against
the peers with the target marked, and its rates; the cost of a get against
the number of keys; bytes per stored session. SVG files in bench/charts/.
Run by ``make bench-charts`` after the benches (``--short`` draws the short
runs' results instead, to check the drawing).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(HERE, "results")
CHARTS = os.path.join(HERE, "charts")
# Stable SVG output: the same results draw the same file.
plt.rcParams["svg.hashsalt"] = "tinystore"
plt.rcParams["font.size"] = 9


def target_of(text: str) -> float | None:
    """The number a target is stated with (``<= 1.5``, ``> 1 (ahead)``)."""
    m = re.search(r"([0-9]+(?:\.[0-9]+)?)", text or "")
    return float(m.group(1)) if m else None


def caption(meta: dict[str, Any]) -> str:
    load = " ".join(map(str, meta.get("load", [])))
    return (f"{meta.get('cpu', '?')}, {meta.get('cores', '?')} cores; load average {load} at start; "
            f"{meta.get('time', '')}")


def save(fig: Any, name: str) -> str:
    os.makedirs(CHARTS, exist_ok=True)
    path = os.path.join(CHARTS, f"{name}.svg")
    fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return path


def ratio_chart(name: str, section: dict[str, Any], meta: dict[str, Any]) -> str | None:
    rows = [(r[0], float(r[1]), r[2]) for r in section.get("ratios", []) if isinstance(r[1], (int, float))]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.4))
    labels = [r[0] for r in rows]
    values = [r[1] for r in rows]
    colors = []
    for _, v, t in rows:
        goal = target_of(t)
        if goal is None:
            colors.append("#9aa5b1")
        elif t.strip().startswith("<"):
            colors.append("#2f9e44" if v <= goal else "#e03131")
        else:
            colors.append("#2f9e44" if v >= goal else "#e03131")
    y = range(len(rows))
    ax.barh(list(y), values, color=colors)
    for i, (_, v, t) in enumerate(rows):
        note = f"  (target {t})" if target_of(t) is not None else (f"  ({t})" if t else "")
        ax.text(v, i, f" {v:.2f}{note}", va="center", fontsize=8)
        goal = target_of(t)
        if goal is not None:
            ax.plot([goal, goal], [i - 0.4, i + 0.4], color="black", linewidth=1)
    ax.set_yticks(list(y), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, max(values + [1.0]) * 1.6)
    ax.set_xlabel("ratio (green: target met, red: not met, grey: no target; black tick: the target)")
    ax.set_title(section.get("title", name), fontsize=10)
    fig.text(0.01, -0.02, caption(meta), fontsize=7, color="#555")
    return save(fig, f"{name}-ratios")


def rate_chart(name: str, section: dict[str, Any], meta: dict[str, Any]) -> str | None:
    rows = {k: v for k, v in (section.get("rows") or {}).items() if isinstance(v, (int, float)) and v > 0}
    if not rows:
        return None
    unit = section.get("unit", "ops/s")
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(rows) + 1.2))
    labels = list(rows)
    values = [float(rows[k]) for k in labels]
    ax.barh(range(len(labels)), values,
            color=["#1971c2" if k.lower().startswith("tinystore") else "#adb5bd" for k in labels])
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    if unit == "ops/s" and max(values) / max(min(values), 1e-9) > 50:
        ax.set_xscale("log")
    ax.set_xlabel(unit + (" (log scale)" if ax.get_xscale() == "log" else ""))
    ax.set_title(section.get("title", name) + " (blue: TinyStore)", fontsize=10)
    fig.text(0.01, -0.02, caption(meta), fontsize=7, color="#555")
    return save(fig, f"{name}-{'sizes' if unit != 'ops/s' else 'rates'}")


def curve_chart(name: str, section: dict[str, Any], meta: dict[str, Any]) -> str | None:
    rows = section.get("rows") or {}
    series: dict[str, list[tuple[int, float]]] = {}
    for label, v in rows.items():
        m = re.match(r"(.*), ([0-9,]+) keys$", label)
        if m:
            series.setdefault(m.group(1), []).append((int(m.group(2).replace(",", "")), 1e6 / float(v)))
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, pts in series.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("keys in the store")
    ax.set_ylabel("µs per call")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    ax.set_title(section.get("title", name), fontsize=10)
    fig.text(0.01, -0.04, caption(meta), fontsize=7, color="#555")
    return save(fig, f"{name}-curve")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--short", action="store_true", help="draw the results of the short runs")
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(RESULTS, "*.json")))
    files = [f for f in files if f.endswith("-short.json") == args.short]
    if not files:
        print(f"chart: no results in {RESULTS}: run the benches first")
        return
    for f in files:
        with open(f) as fh:
            data = json.load(fh)
        meta = data.pop("meta", {})
        stem = os.path.basename(f)[: -len(".json")]
        for sec_name, section in data.items():
            name = f"{stem}-{sec_name}"
            for draw in (ratio_chart, rate_chart) + ((curve_chart,) if sec_name == "curve" else ()):
                path = draw(name, section, meta)
                if path:
                    print(f"chart: {os.path.relpath(path, os.path.dirname(HERE))}")


if __name__ == "__main__":
    main()
