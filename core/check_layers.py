#!/usr/bin/env python3
"""Fails when the core's top-level modules depend on each other in a circle.

Each module of `core/src` (a file, or a folder with its submodules) may use
the modules below it and never one that uses it back: a reader can then
learn the core from the bottom up (error, key, storage, the writer, the
store, the handles, the bindings' scopes), and a change to a lower module
cannot need a change to one above it. A dependency is any `crate::<module>`
path outside a comment; a submodule using its parent (`store/maintain.rs`
and `super::`) is part of that module.

Usage: check_layers.py [core/src]
"""

import os
import re
import sys

PATH = re.compile(r"crate::(\w+)|crate::\{([^}]*)\}")


def modules(src):
    """The top-level modules of `src`, each with the files that make it."""
    found = {}
    for entry in sorted(os.listdir(src)):
        full = os.path.join(src, entry)
        if entry.endswith(".rs") and entry not in ("lib.rs", "main.rs"):
            found.setdefault(entry[:-3], []).append(full)
        elif os.path.isdir(full):
            for dirpath, _, files in os.walk(full):
                found.setdefault(entry, []).extend(os.path.join(dirpath, f) for f in files if f.endswith(".rs"))
    return found


def uses(files, names):
    """The modules among `names` that `files` name outside comments."""
    used = set()
    for path in files:
        with open(path, encoding="utf-8") as f:
            code = "\n".join(line for line in f if not line.lstrip().startswith("//"))
        for m in PATH.finditer(code):
            for name in [m.group(1)] if m.group(1) else re.findall(r"\w+", m.group(2)):
                if name in names:
                    used.add(name)
    return used


def circles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "src")
    mods = modules(src)
    graph = {name: uses(files, mods.keys()) - {name} for name, files in mods.items()}
    found = circles(graph)
    for comp in found:
        print(f"check_layers: these modules of {src} use each other in a circle: {', '.join(comp)}")
        for name in comp:
            print(f"  {name} uses {', '.join(sorted(graph[name] & set(comp)))}")
    if found:
        print("Move what both sides need into a module below them both (see docs/design.md, Layers).")
        return 1
    print(f"check_layers: the {len(mods)} modules of {src} depend on each other without a circle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
