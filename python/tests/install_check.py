"""Run by `make test-python-install` in a clean venv, after installing the wheel of
`maturin build` and again after `pip install ./python`: the package imports, opens
a store, writes and reads, with nothing else set up. The wheel is abi3, so
`make test-dist` runs this in every CPython it serves: each task goes on
after its write in its own contextvars context, whatever that CPython's
asyncio does inside."""

import asyncio
import contextvars
import tempfile

import tinystore


async def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        async with tinystore.open(d) as store:
            codes = store.bucket("sign-in-codes", int, ttl="15m")
            await codes.set("digest", 42)
            assert await codes.take("digest") == 42
            assert await codes.take("digest") is None
            mine: contextvars.ContextVar[int] = contextvars.ContextVar("mine")

            async def one(i: int) -> int:
                mine.set(i)
                await codes.set(f"code:{i}", i)
                return mine.get()

            assert await asyncio.gather(*(one(i) for i in range(16))) == list(range(16))
    with tempfile.TemporaryDirectory() as d, tinystore.sync.open(d) as sync_store:
        sync_store.bucket("flags", bool).set("dark", True)
        assert sync_store.bucket("flags", bool).get("dark") is True
    print("tinystore, installed in a clean venv, imported and ran from", tinystore.__file__)


asyncio.run(main())
