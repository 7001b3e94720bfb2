"""Checks that every package of a release has one version, and prints it.

`make dist` runs this first: the workspace's Cargo.toml (every crate takes
its version from there), python/pyproject.toml, node/package.json and each
platform package under node/npm/, and a section of CHANGELOG.md for it. The
Go module's version is the tag v<version>, which make dist gives it.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    found: dict[str, str] = {}
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
    found["Cargo.toml [workspace.package]"] = cargo["workspace"]["package"]["version"]
    found["Cargo.toml [workspace.dependencies] tinystore"] = cargo["workspace"]["dependencies"]["tinystore"]["version"]
    pyproject = tomllib.loads((ROOT / "python" / "pyproject.toml").read_text())
    found["python/pyproject.toml"] = pyproject["project"]["version"]
    found["node/package.json"] = json.loads((ROOT / "node" / "package.json").read_text())["version"]
    for platform in sorted((ROOT / "node" / "npm").glob("*/package.json")):
        found[str(platform.relative_to(ROOT))] = json.loads(platform.read_text())["version"]

    versions = set(found.values())
    if len(versions) != 1:
        for where, version in found.items():
            print(f"versions: {where}: {version}", file=sys.stderr)
        print("versions: every package of a release must have one version", file=sys.stderr)
        return 1
    (version,) = versions
    changelog = (ROOT / "CHANGELOG.md").read_text()
    if not re.search(rf"^## \[{re.escape(version)}\]", changelog, re.MULTILINE):
        print(f"versions: CHANGELOG.md has no section '## [{version}]'", file=sys.stderr)
        return 1
    print(version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
