"""Run by `make test-python-install` in a clean venv, after installing the wheel of
`maturin build` and again after `pip install ./python`: the package imports, opens
a store, writes and reads, with nothing else set up."""

import asyncio
import tempfile

import tinystore


async def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        async with tinystore.open(d) as store:
            codes = store.bucket("sign-in-codes", int, ttl="15m")
            await codes.set("digest", 42)
            assert await codes.take("digest") == 42
            assert await codes.take("digest") is None
    with tempfile.TemporaryDirectory() as d, tinystore.sync.open(d) as store:
        store.bucket("flags", bool).set("dark", True)
        assert store.bucket("flags", bool).get("dark") is True
    print("tinystore, installed in a clean venv, imported and ran from", tinystore.__file__)


asyncio.run(main())
