"""Two builds of TinyStore KV side by side: the revision BEFORE (a git rev)
against the current tree, in the workloads of `make bench` that a change to
the bindings can slow (see workloads.py, workloads.mjs and go/), in Python,
Node, Bun and Go (run with `make bench-builds BEFORE=<rev>`; not part of
`make test`).

BEFORE is checked out in a scratch worktree, target/bench-builds/<rev>.
Both trees are built with the project's own make targets (build-python,
node, go-lib), and the Go worker in each. The scratch tree has a target dir
of its own, <rev>.target, seeded with a copy of this tree's release
artifacts so that the crates.io dependencies do not compile again. It cannot
share this tree's: cargo names a workspace crate's artifacts by its path
relative to the workspace root, the same in both trees, and judges them
fresh by mtime, so the tree built second would link the other's crates.
For the same reason every file of the scratch tree is touched when its
target dir is seeded: the copied artifacts are this tree's, and must not
look newer than the scratch tree's sources.

Rounds alternate the builds (BEFORE first in even rounds, AFTER first in odd
ones) and each build runs in a process of its own per round and language.
The report gives each build's median over the rounds, the ratio
AFTER/BEFORE of the medians, the range of the rounds' own AFTER/BEFORE
ratios, and each build's noise: the ratio of the median of its first half
of rounds to that of its second half.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
SCRATCH = os.path.join(TARGET, "bench-builds")
# Only maturin is needed to build the scratch tree's module; the test tools
# of its venv would be installed for nothing.
SCRATCH_PY_TOOLS = '"maturin>=1.16,<2"'


def git(*args: str, cwd: str = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def describe(tree: str) -> str:
    """The commit a tree is at, with ``+changes`` when it differs from it."""
    rev = git("rev-parse", "--short", "HEAD", cwd=tree)
    dirty = git("status", "--porcelain", "--untracked-files=no", cwd=tree)
    subject = git("log", "-1", "--format=%s", cwd=tree)
    return f"{rev}{' +changes' if dirty else ''} ({subject})"


def scratch_tree(rev: str) -> str:
    """A worktree of ``rev`` under target/bench-builds, made or moved there."""
    full = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    tree = os.path.join(SCRATCH, full[:7])
    if not os.path.isdir(tree):
        os.makedirs(SCRATCH, exist_ok=True)
        git("worktree", "add", "--detach", tree, full)
    else:
        git("checkout", "--detach", "--quiet", full, cwd=tree)
    # The npm packages of this tree serve when the lock file is the same,
    # which spares a registry round trip; else `make node` runs npm ci.
    mine, theirs = os.path.join(ROOT, "node"), os.path.join(tree, "node")
    lock = "package-lock.json"
    if not os.path.isdir(os.path.join(theirs, "node_modules")) and os.path.isdir(os.path.join(mine, "node_modules")):
        with open(os.path.join(mine, lock), "rb") as a, open(os.path.join(theirs, lock), "rb") as b:
            if a.read() == b.read():
                shutil.copytree(os.path.join(mine, "node_modules"), os.path.join(theirs, "node_modules"), symlinks=True)
                os.utime(os.path.join(theirs, "node_modules", ".package-lock.json"))
    return tree


def scratch_target(tree: str) -> str:
    """The scratch tree's own CARGO_TARGET_DIR, seeded on first use."""
    target = f"{tree}.target"
    if not os.path.isdir(target):
        seeding = f"{target}.seeding"
        shutil.rmtree(seeding, ignore_errors=True)
        os.makedirs(seeding)
        for part in ("release", os.path.join(host_triple(), "release")):
            if os.path.isdir(os.path.join(TARGET, part)):
                os.makedirs(os.path.dirname(os.path.join(seeding, part)), exist_ok=True)
                subprocess.run(["cp", "-a", "--reflink=auto", os.path.join(TARGET, part),
                                os.path.join(seeding, part)], check=True)
        files = git("ls-files", cwd=tree).splitlines()
        now = time.time()
        for f in files:
            path = os.path.join(tree, f)
            if os.path.isfile(path) and not os.path.islink(path):
                os.utime(path, (now - 2, now - 2))
        # make's stamps of the venv and the npm packages stay newer than
        # what they were made from, so neither is set up again.
        for stamp in (os.path.join("python", ".venv", ".ready"), os.path.join("node", "node_modules", ".package-lock.json")):
            if os.path.exists(os.path.join(tree, stamp)):
                os.utime(os.path.join(tree, stamp), (now, now))
        os.rename(seeding, target)
    return target


def host_triple() -> str:
    out = subprocess.run(["rustc", "-vV"], check=True, capture_output=True, text=True).stdout
    return os.environ.get("CARGO_BUILD_TARGET") or next(
        line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))


def build(tree: str, scratch: bool) -> None:
    target = scratch_target(tree) if scratch else TARGET
    cmd = ["make", "--no-print-directory", "-C", tree, "build-python", "node", "go-lib", f"CARGO_TARGET_DIR={target}"]
    if scratch:
        cmd.append(f"PY_TOOLS={SCRATCH_PY_TOOLS}")
    print(f"# building: {' '.join(cmd)}", flush=True)
    t = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    # The Go worker is built in each tree, where its go.mod's relative
    # replace names that tree's Go package and libtinystore.a.
    work = os.path.join(tree, "bench", "builds", "go")
    if tree != ROOT:
        shutil.copytree(os.path.join(HERE, "go"), work, dirs_exist_ok=True)
    subprocess.run(["go", "build", "-o", go_worker(tree), "."], cwd=work, check=True,
                   env=dict(os.environ, GOTOOLCHAIN="local"))
    print(f"# built in {time.monotonic() - t:.0f} s", flush=True)


def go_worker(tree: str) -> str:
    return os.path.join(SCRATCH, "current.go-worker" if tree == ROOT else f"{os.path.basename(tree)}.go-worker")


def artifacts(tree: str) -> str:
    """The built binaries a tree's workers load, each with the start of its
    SHA-256: two builds of different sources show different hashes."""
    found = []
    for pattern in ("python/tinystore/_native*.so", "node/*.node", "go/internal/native/lib/*/libtinystore.a"):
        for path in sorted(glob.glob(os.path.join(tree, pattern))):
            with open(path, "rb") as f:
                found.append(f"{os.path.basename(path)} {hashlib.sha256(f.read()).hexdigest()[:12]}")
    return ", ".join(found) or "nothing built"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def runner(lang: str, tree: str, short: bool) -> list[str] | None:
    """The command and environment of one build's worker in ``lang``."""
    if lang == "python":
        py = os.path.join(ROOT, "python", ".venv", "bin", "python")
        args = [py, os.path.join(HERE, "workloads.py")]
        return args + (["--reps", "1", "--reads", "5000", "--groups", "20", "--allows", "5000"] if short else [])
    if lang == "go":
        return [go_worker(tree), *(["-reps", "1", "-slice", "100ms"] if short else [])]
    runtime = "node" if lang == "node" else os.path.join(ROOT, "node", "node_modules", ".bin", "bun")
    if lang == "bun" and not os.path.exists(runtime):
        return None
    return [runtime, os.path.join(HERE, "workloads.mjs")]


def run_worker(lang: str, tree: str, short: bool) -> dict[str, float]:
    cmd = runner(lang, tree, short)
    assert cmd is not None
    env = dict(os.environ, PYTHONPATH=os.path.join(tree, "python"), TINYSTORE_NODE_DIR=os.path.join(tree, "node"))
    if short:
        env.update(REPS="1", SLICE_MS="100", ALLOWS="5000")
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, cwd=HERE).stdout
    got = json.loads(out.strip().splitlines()[-1])
    # A worker that imported another build than the one it was sent to would
    # compare a build with itself: the package it loaded must be the tree's.
    if "package" in got and not os.path.realpath(got["package"]).startswith(os.path.realpath(tree) + os.sep):
        raise SystemExit(f"{lang}: the worker for {tree} loaded {got['package']}")
    return got["rates"]


def halves(xs: list[float]) -> float:
    h = len(xs) // 2
    return statistics.median(xs[:h]) / statistics.median(xs[-h:]) if h else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="the git revision to compare the current tree with")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--langs", default="python,node,bun,go")
    ap.add_argument("--short", action="store_true", help="two rounds of tiny workloads: checks it all works")
    ap.add_argument("--no-build", action="store_true", help="measure the builds as they are")
    args = ap.parse_args()
    rounds = 2 if args.short else args.rounds
    langs = [lang for lang in args.langs.split(",") if lang]

    before = scratch_tree(args.before)
    trees = {"before": before, "after": ROOT}
    if not args.no_build:
        build(before, scratch=True)
        build(ROOT, scratch=False)
    langs = [lang for lang in langs if runner(lang, ROOT, args.short) is not None]
    start_load = uptime()
    print(f"== bench-builds: {rounds} alternating rounds, one process per build, round and language")
    print(f"# before: {describe(before)}; {artifacts(before)}")
    print(f"# after:  {describe(ROOT)}; {artifacts(ROOT)}")
    print(f"# command: {' '.join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))}")
    print(f"# uptime at start: {start_load}", flush=True)

    seen: dict[str, dict[str, dict[str, list[float]]]] = {lang: {"before": {}, "after": {}} for lang in langs}
    for r in range(rounds):
        order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
        for lang in langs:
            for which in order:
                for name, rate in run_worker(lang, trees[which], args.short).items():
                    seen[lang][which].setdefault(name, []).append(rate)
        print(f"# round {r + 1} of {rounds} done; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)

    print()
    print("| language | workload | before ops/s | after ops/s | after/before | rounds' after/before | before halves | after halves |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for lang in langs:
        for name, b in seen[lang]["before"].items():
            a = seen[lang]["after"][name]
            paired = [x / y for x, y in zip(a, b)]
            print(f"| {lang} | {name} | {statistics.median(b):,.0f} | {statistics.median(a):,.0f} "
                  f"| {statistics.median(a) / statistics.median(b):.2f} | {min(paired):.2f}–{max(paired):.2f} "
                  f"| {halves(b):.2f} | {halves(a):.2f} |")
    print()
    print(f"# uptime at the end: {uptime()}")


if __name__ == "__main__":
    main()
