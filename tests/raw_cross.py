#!/usr/bin/env python3
"""Raw values across languages (KV-3).

Every language writes the interchange values typed (``ix-write``) into one
store. Then every language copies each writer's rows through its own raw
bucket into a store of its own (``ix-raw-copy SRC DST OWNER``): a raw read
of what a typed bucket of any language wrote, and a raw write of it. Every
copier must see the same rows (the same count of nothing, integer and byte
rows, empty byte rows and bytes), and another language then reads the copy
back with its typed buckets (``ix-read``), bit for bit against the fixture.
Last, the ``tinystore`` command shows a raw-copied bucket, an empty string
as an empty text and a set member as nothing.

    python3 tests/raw_cross.py --cli target/.../debug/tinystore \\
        --agent rust=target/debug/tinystore-agent --agent python=tests/agents/python/agent ...
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cross import Agent, check, failures  # noqa: E402


def raw_interchange(agents: list[Agent], root: Path) -> Path:
    """Runs the copies and reads in ``root``; returns a copy the CLI then shows."""
    src = root / "typed"
    for w in agents:
        w.run("ix-write", str(src), w.name)
    for w in agents:
        seen: dict[str, str] = {}
        for c in agents:
            out = c.run("ix-raw-copy", str(src), str(root / f"via-{c.name}"), w.name)
            seen[c.name] = next((line for line in out if line.startswith("copied ")), "; ".join(out[:3]))
        first = next(iter(seen.values()))
        check(
            len(set(seen.values())) == 1 and first.startswith("copied ") and "empty=0" not in first,
            f"every language reads {w.name}'s rows raw alike: {first}"
            + ("" if len(set(seen.values())) == 1 else f" (but {seen})"),
        )
    for i, c in enumerate(agents):
        reader = agents[(i + 1) % len(agents)]
        for w in agents:
            out = reader.run("ix-read", str(root / f"via-{c.name}"), w.name)
            ok = any(line.startswith("ok ") for line in out)
            check(
                ok,
                f"{reader.name} reads typed what {c.name} copied raw from {w.name}"
                + ("" if ok else ": " + "; ".join(out[:3])),
            )
    return root / f"via-{agents[0].name}"


def cli_shows_raw(cli: str, store: Path, owner: str) -> None:
    """The tinystore command lists rows as they are: an empty string is empty text, a member nothing."""

    def listing(bucket: str) -> list[dict[str, object]]:
        p = subprocess.run(
            [cli, "kv", "list", bucket, "--under", owner, "--json", "--dir", str(store)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if p.returncode != 0:
            check(False, f"tinystore kv list {bucket}: exit {p.returncode}: {p.stderr.strip()[:200]}")
            return []
        data = json.loads(p.stdout)
        return list(data["keys"])

    strings = listing("ix-string")
    check(
        any(r.get("value") == "" and r.get("kind") == "text" for r in strings),
        "tinystore kv list shows an empty string as empty text, not nothing",
    )
    members = listing("ix-set")
    check(
        bool(members) and all(r.get("value") is None for r in members),
        "tinystore kv list shows set members as nothing",
    )
    ints = listing("ix-int")
    check(bool(ints) and all(isinstance(r.get("value"), int) for r in ints), "tinystore kv list shows integers")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agent", action="append", default=[], help="LANGUAGE=COMMAND")
    ap.add_argument("--cli", help="the tinystore command, to check its listing of raw rows")
    args = ap.parse_args()
    agents = [Agent(*spec.split("=", 1)) for spec in args.agent]
    if not agents:
        print("raw_cross.py: give at least one agent", file=sys.stderr)
        return 2
    if len(agents) == 1:
        agents.append(Agent(agents[0].name + "-2", shlex.join(agents[0].argv)))
    t0 = time.monotonic()
    print("raw values across languages (KV-3) with " + ", ".join(a.name for a in agents), flush=True)
    with tempfile.TemporaryDirectory(prefix="raw-cross-") as d:
        copy = raw_interchange(agents, Path(d))
        if args.cli:
            cli_shows_raw(args.cli, copy, agents[0].name)
    print()
    if failures:
        print(f"raw_cross.py: {len(failures)} failed")
        for f in failures:
            print(f"  {f}")
        return 1
    print(f"raw_cross.py: all passed in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
