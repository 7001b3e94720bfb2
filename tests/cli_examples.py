#!/usr/bin/env python3
"""The `tinystore` command on a store written by the Python and TypeScript
examples: runs both chats on one new store, then checks that
`tinystore kv list` shows what each left, as a table and as JSON, and that a
missing bucket is a clear error with a non-zero exit.

    python3 tests/cli_examples.py TINYSTORE PYTHON NODE_TSC_OUTPUT_DIR
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

root = Path(__file__).resolve().parents[1]
tinystore, python = sys.argv[1], sys.argv[2]


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


with tempfile.TemporaryDirectory() as d:
    for argv in ([python, str(root / "examples/python/chat.py"), d], ["node", str(root / "examples/node/chat.js"), d]):
        p = run(*argv)
        assert p.returncode == 0 and "chat: done" in p.stdout, f"{argv}: {p.stdout}{p.stderr}"
    p = run(tinystore, "kv", "list", "sends", "--json", "--dir", d)
    assert p.returncode == 0, p.stderr
    keys = [k["key"] for k in json.loads(p.stdout)["keys"]]
    for lang in ("python", "node"):
        mine = [k for k in keys if k.startswith(f"k7q2-{lang}-")]
        assert len(mine) == 1, f"one kept answer of the {lang} chat in {keys}"
    answers = {k["key"]: k["value"] for k in json.loads(p.stdout)["keys"]}
    assert all(json.loads(v) == {"id": 1} for v in answers.values()), answers
    table = run(tinystore, "kv", "list", "sign-in-guesses", "--dir", d)
    assert table.returncode == 0 and table.stdout.splitlines()[0].startswith("KEY"), table.stdout
    names = json.loads(run(tinystore, "kv", "buckets", "--json", "--dir", d).stdout)
    kinds = {n["name"]: n["kind"] for n in names}
    assert kinds == {"messages": "quota", "sends": "once", "sessions": "values", "sign-in-codes": "values",
                     "sign-in-guesses": "rate_limit"}, kinds
    missing = run(tinystore, "kv", "list", "nope", "--dir", d)
    assert missing.returncode != 0 and 'no bucket named "nope"' in missing.stderr, missing.stderr
print("cli_examples: tinystore kv lists what the Python and TypeScript chats wrote")
