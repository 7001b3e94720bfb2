"""Installs what `make dist` wrote the way users install packages, on a PATH
with no cargo and no rustc, and runs the handbook's chat from each on one
shared store (`make test-dist`).

- Python: the one abi3 wheel into a new venv of each CPython from 3.10
  (--pythons); install_check.py in each, and the chat (examples/python) in
  the venv of `python3`.
- npm: both tarballs into a new project; the chat (examples/node) compiled
  against the installed package's types, run by Node, and run from its
  TypeScript by Bun.
- Go: a new module gets tinyshed.org/tinystore through GOPROXY=file://dist/go
  into an empty module cache, and builds the chat (examples/go) with cgo.
- Rust: the crates are packaged; the tinystore command from its tarball
  lists what the chats left in the store.

It also checks that `npm pack` of an unbuilt checkout refuses, saying why.
It prints 'N passed, N failed' and exits non-zero when one failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import traceback
import zipfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


class Failed(Exception):
    pass


def clean_env(home: Path) -> dict[str, str]:
    """The environment of a user's machine: every PATH directory that holds
    cargo or rustc is left out, and so is every CARGO_ and RUSTUP_ variable."""
    tools = ("cargo", "rustc")
    kept = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not any(os.access(Path(d) / t, os.X_OK) for t in tools)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CARGO", "RUSTUP", "RUSTC", "VIRTUAL_ENV", "npm_", "MAKE"))}
    env["PATH"] = os.pathsep.join(kept)
    env["npm_config_cache"] = str(home / "npm-cache")
    env["npm_config_update_notifier"] = "false"
    env["npm_config_fund"] = "false"
    env["npm_config_audit"] = "false"
    for t in tools:
        if shutil.which(t, path=env["PATH"]):
            raise Failed(f"{t} is still on the clean PATH at {shutil.which(t, path=env['PATH'])}")
    return env


def run(cmd: list[str], cwd: Path, env: dict[str, str], *, expect: int = 0) -> str:
    print("   $", " ".join(str(c) for c in cmd), flush=True)
    p = subprocess.run(cmd, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    if (expect == 0) != (p.returncode == 0):
        raise Failed(f"{cmd[0]} exited {p.returncode}:\n{p.stdout[-4000:]}")
    return p.stdout


def chat_ran(out: str, runtime: str) -> None:
    if not re.search(rf"^{runtime} chat: done", out, re.MULTILINE):
        raise Failed(f"the {runtime} chat did not finish:\n{out[-3000:]}")
    bad = [line for line in out.splitlines() if "unexpected" in line]
    if bad:
        raise Failed(f"the {runtime} chat saw what it did not expect:\n" + "\n".join(bad))


class Checks:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.dist: Path = args.dist
        self.version: str = args.version
        self.bun: Path = args.bun
        self.tsc: Path = args.tsc
        self.types: Path = args.types
        self.pythons: list[str] = args.pythons.split()
        self.work = work
        self.env = clean_env(work)
        self.store = work / "store"
        self.store.mkdir()

    def python_wheels(self) -> None:
        wheels = sorted((self.dist / "python").glob("*.whl"))
        want = f"tinystore-{self.version}-cp310-abi3-manylinux_2_28_x86_64.whl"
        if [w.name for w in wheels] != [want]:
            raise Failed(f"dist/python holds {[w.name for w in wheels]}, not the one abi3 wheel {want}")
        wheel = wheels[0]
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
        for needed in ("tinystore/py.typed", "tinystore/__init__.py", "tinystore/_native.pyi", "tinystore/_native.abi3.so"):
            if needed not in names:
                raise Failed(f"{wheel.name} lacks {needed}")
        default = subprocess.run(
            [shutil.which("python3", path=self.env["PATH"]) or "python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            text=True,
            capture_output=True,
            check=True,
            env=self.env,
        ).stdout.strip()
        # The one wheel, in a venv of every CPython asked for that runs
        # here; the oldest the tag promises must be among them.
        found = {v: p for v in self.pythons if (p := self.python_for(v))}
        if self.pythons[0] not in found:
            raise Failed(f"no python{self.pythons[0]} here: the cp310-abi3 wheel is not tried on its oldest CPython")
        print(f"   the wheel in CPython {', '.join(found)}", flush=True)
        for version, python in found.items():
            venv = self.work / f"venv-{version}"
            run([python, "-m", "venv", str(venv)], self.work, self.env)
            run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--disable-pip-version-check", str(wheel)], self.work, self.env)
            out = run([str(venv / "bin" / "python"), str(ROOT / "python" / "tests" / "install_check.py")], self.work, self.env)
            if str(venv) not in out:
                raise Failed(f"{wheel.name} in CPython {version}: install_check imported tinystore from elsewhere:\n{out}")
            if version == default:
                shutil.copy(EXAMPLES / "python" / "chat.py", self.work / "chat.py")
                chat_ran(run([str(venv / "bin" / "python"), "chat.py", str(self.store)], self.work, self.env), "Python")
        if default not in found:
            raise Failed(f"python3 here is {default}, not one of {', '.join(self.pythons)}, so the Python chat did not run")
        sdists = list((self.dist / "python").glob(f"tinystore-{self.version}.tar.gz"))
        if len(sdists) != 1:
            raise Failed(f"no sdist tinystore-{self.version}.tar.gz in dist/python")
        with tarfile.open(sdists[0]) as t:
            names = t.getnames()
        for needed in ("pyproject.toml", "core/src/lib.rs", "bindings/python/src/lib.rs", "tinystore/py.typed"):
            if not any(n.endswith("/" + needed) for n in names):
                raise Failed(f"the sdist lacks {needed}")

    def python_for(self, version: str) -> str | None:
        """The CPython `version` here (on PATH, or one pyenv keeps), or None."""
        candidates = [shutil.which(f"python{version}", path=self.env["PATH"])]
        pyenv = subprocess.run(["pyenv", "root"], capture_output=True, text=True, env=self.env) if shutil.which("pyenv", path=self.env["PATH"]) else None
        if pyenv and pyenv.returncode == 0:
            candidates += sorted(str(p) for p in Path(pyenv.stdout.strip()).glob(f"versions/{version}.*/bin/python{version}"))
        for c in candidates:
            if c and subprocess.run([c, "-c", "pass"], capture_output=True, env=self.env).returncode == 0:
                return c
        return None

    def npm_package(self) -> None:
        main = self.dist / "npm" / f"tinystore-{self.version}.tgz"
        platform = self.dist / "npm" / f"tinystore-linux-x64-gnu-{self.version}.tgz"
        for tgz in (main, platform):
            if not tgz.is_file():
                raise Failed(f"{tgz.name} is not in dist/npm")
        with tarfile.open(main) as t:
            names = set(t.getnames())
            pkg = json.load(t.extractfile("package/package.json"))  # type: ignore[arg-type]
        for needed in ("package/dist/esm/index.mjs", "package/dist/cjs/index.js", "package/dist/cjs/index.d.ts", "package/LICENSE"):
            if needed not in names:
                raise Failed(f"{main.name} lacks {needed}")
        if any(n.endswith(".node") for n in names):
            raise Failed(f"{main.name} carries an addon: it belongs in the platform package")
        if pkg.get("optionalDependencies") != {"tinystore-linux-x64-gnu": self.version}:
            raise Failed(f"{main.name}: optionalDependencies are {pkg.get('optionalDependencies')}")
        with tarfile.open(platform) as t:
            if "package/tinystore.linux-x64-gnu.node" not in t.getnames():
                raise Failed(f"{platform.name} lacks the addon")

        app = self.work / "node-app"
        app.mkdir()
        (app / "package.json").write_text(json.dumps({"name": "chat", "private": True, "type": "module"}))
        # --offline: the tarballs hold everything; npm must not need the
        # registry, where the optional dependency is looked for otherwise.
        run(["npm", "install", "--offline", "--no-audit", "--no-fund", str(platform), str(main)], app, self.env)
        addon = app / "node_modules" / "tinystore-linux-x64-gnu" / "tinystore.linux-x64-gnu.node"
        if not addon.is_file():
            raise Failed("npm install did not put the platform package in node_modules")
        source = (EXAMPLES / "node" / "chat.ts").read_text()
        chat = source.replace("'../../node/dist/esm/index.mjs'", "'tinystore'")
        if chat == source:
            raise Failed("examples/node/chat.ts no longer imports ../../node/dist/esm/index.mjs; update this test")
        (app / "chat.ts").write_text(chat)
        tsconfig = json.loads((EXAMPLES / "node" / "tsconfig.json").read_text())
        tsconfig["compilerOptions"]["typeRoots"] = [str(self.types)]
        (app / "tsconfig.json").write_text(json.dumps(tsconfig))
        run([str(self.tsc), "-p", "."], app, self.env)
        chat_ran(run(["node", "chat.js", str(self.store)], app, self.env), "Node")
        chat_ran(run([str(self.bun), "chat.ts", str(self.store)], app, self.env), "Bun")
        # require() gets the same package, from CommonJS.
        out = run(["node", "-e", "const t = require('tinystore'); console.log(typeof t.open)"], app, self.env)
        if out.strip().splitlines()[-1] != "function":
            raise Failed(f"require('tinystore') gave no open: {out}")

    def npm_pack_unbuilt(self) -> None:
        checkout = self.work / "unbuilt-node"
        checkout.mkdir()
        shutil.copy(ROOT / "node" / "package.json", checkout / "package.json")
        shutil.copytree(ROOT / "node" / "scripts", checkout / "scripts")
        shutil.copy(ROOT / "node" / "README.md", checkout / "README.md")
        out = run(["npm", "pack"], checkout, self.env, expect=1)
        if "refusing to pack a package that cannot load" not in out or "make dist" not in out:
            raise Failed(f"npm pack of an unbuilt checkout failed without saying why:\n{out}")
        if list(checkout.glob("*.tgz")):
            raise Failed("npm pack of an unbuilt checkout wrote a tarball")

    def go_module(self) -> None:
        proxy = self.dist / "go"
        versions = (proxy / "tinyshed.org" / "tinystore" / "@v" / "list").read_text().split()
        if versions != [f"v{self.version}"]:
            raise Failed(f"the module proxy lists {versions}")
        z = proxy / "tinyshed.org" / "tinystore" / "@v" / f"v{self.version}.zip"
        with zipfile.ZipFile(z) as zf:
            lib = zf.getinfo(f"tinyshed.org/tinystore@v{self.version}/internal/native/lib/linux_amd64/libtinystore.a")
        print(f"   the module zip is {z.stat().st_size >> 20} MiB, its library {lib.file_size >> 20} MiB")
        app = self.work / "go-app"
        app.mkdir()
        shutil.copy(EXAMPLES / "go" / "main.go", app / "main.go")
        (app / "go.mod").write_text("module example.com/chat\n\ngo 1.24\n")
        env = dict(self.env)
        env.update(
            GOPROXY=f"file://{proxy}",
            GONOSUMDB="tinyshed.org/tinystore",
            GOMODCACHE=str(self.work / "gomodcache"),
            GOTOOLCHAIN="local",
            GOFLAGS="-modcacherw -buildvcs=false",
            CGO_ENABLED="1",
        )
        run(["go", "get", f"tinyshed.org/tinystore@v{self.version}"], app, env)
        run(["go", "build", "-o", "chat", "."], app, env)
        chat_ran(run([str(app / "chat"), str(self.store)], app, env), "Go")

    def rust(self) -> None:
        for crate in ("tinystore", "tinystore-cli"):
            path = self.dist / "rust" / f"{crate}-{self.version}.crate"
            with tarfile.open(path) as t:
                if f"{crate}-{self.version}/Cargo.toml" not in t.getnames():
                    raise Failed(f"{path.name} has no Cargo.toml")
        tars = list((self.dist / "rust").glob(f"tinystore-cli-{self.version}-*.tar.gz"))
        if len(tars) != 1:
            raise Failed("no tinystore-cli-VERSION-TRIPLE.tar.gz in dist/rust")
        with tarfile.open(tars[0]) as t:
            t.extractall(self.work / "cli", filter="data")
        (cli,) = (self.work / "cli").glob("*/tinystore")
        out = run([str(cli), "--version"], self.work, self.env)
        if self.version not in out:
            raise Failed(f"tinystore --version says {out!r}")
        print(run([str(cli), "kv", "buckets", "--dir", str(self.store)], self.work, self.env))
        buckets = json.loads(run([str(cli), "kv", "buckets", "--dir", str(self.store), "--json"], self.work, self.env))
        keys = {b["name"]: b["keys"] for b in buckets}
        # Each chat keeps the answer of its request sent twice under a key
        # of its own: four chats (Python, Node, Bun, Go) on one store, four.
        if keys.get("sends") != 4:
            raise Failed(f"after four chats on one store, sends holds {keys.get('sends')} answers, not 4: {keys}")
        sessions = run([str(cli), "kv", "list", "sessions", "--dir", str(self.store), "--json"], self.work, self.env)
        if not sessions.strip():
            raise Failed("tinystore kv list sessions printed nothing")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dist", type=Path, required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--bun", type=Path, required=True, help="the bun binary")
    ap.add_argument("--tsc", type=Path, required=True, help="the TypeScript compiler that type-checks the chat")
    ap.add_argument("--types", type=Path, required=True, help="the @types folder holding @types/node")
    ap.add_argument("--pythons", default="3.10 3.11 3.12 3.13", help="the CPythons to install the wheel in, oldest first")
    ap.add_argument("--only", choices=("python", "npm", "go", "rust"), help="run one language's checks")
    args = ap.parse_args()
    for name in ("dist", "bun", "tsc", "types"):
        setattr(args, name, getattr(args, name).resolve())
    with tempfile.TemporaryDirectory(prefix="tinystore-dist-") as tmp:
        checks = Checks(args, Path(tmp))
        steps: list[tuple[str, Callable[[], None], str]] = [
            ("npm pack of an unbuilt checkout refuses", checks.npm_pack_unbuilt, "npm"),
            ("the abi3 wheel installs and runs in a clean venv of each CPython", checks.python_wheels, "python"),
            ("the npm packages install and run under Node and Bun", checks.npm_package, "npm"),
            ("the Go module builds from GOPROXY=file://", checks.go_module, "go"),
            ("the crates are packaged; the tinystore command reads the store", checks.rust, "rust"),
        ]
        steps = [(t, step, lang) for t, step, lang in steps if args.only in (None, lang)]
        passed = failed = 0
        for title, step, _ in steps:
            print(f"== {title}", flush=True)
            try:
                step()
            except Exception as e:  # noqa: BLE001 - every failure is reported, then counted
                failed += 1
                print(f"FAIL: {title}: {e}" if isinstance(e, Failed) else f"FAIL: {title}:\n{traceback.format_exc()}", flush=True)
            else:
                passed += 1
                print(f"ok: {title}", flush=True)
    print(f"dist: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
