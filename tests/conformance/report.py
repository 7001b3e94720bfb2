#!/usr/bin/env python3
"""Joins the conformance counts every language's runner left in
target/conformance/<language>.txt and prints, per language, how many cases ran
for each contract id. Fails when a language expected on the command line left
no counts, or has no case for an id that another language ran."""

import sys
from pathlib import Path

root = Path(__file__).resolve().parents[2] / "target" / "conformance"
expected = sys.argv[1:]
counts: dict[str, dict[int, int]] = {}
for f in sorted(root.glob("*.txt")):
    for line in f.read_text().splitlines():
        _, lang, kv, n = line.split()
        counts.setdefault(lang, {})[int(kv.removeprefix("KV-"))] = int(n)
ids = sorted({i for c in counts.values() for i in c} | set(range(1, 20)))
langs = sorted(set(counts) | set(expected))
print("conformance cases run, per contract id and language")
print("  id     " + "".join(f"{lang:>9}" for lang in langs))
missing = []
for i in ids:
    row = ""
    for lang in langs:
        n = counts.get(lang, {}).get(i, 0)
        row += f"{n:>9}"
        if n == 0 and lang in expected:
            missing.append(f"KV-{i} in {lang}")
    print(f"  KV-{i:<3}" + row)
if missing:
    print("missing: " + ", ".join(missing))
    sys.exit(1)
print("every id ran in " + ", ".join(expected))
