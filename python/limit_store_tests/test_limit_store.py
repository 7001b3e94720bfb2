"""The limit store in Python: the framework's limit-store contract
run against two handles on one kv.db (two stores on one directory, as two
instances hold it) and against two processes, and the promises of its
database store, for asyncio and for ``tinystore.sync``.

The tests carry the promises' words (docs/limit-store.md):
``test_contract_*`` for the contract's, ``test_store_*`` for the store's.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import logging
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

import tinystore
from tinystore.limit_store import Apply, LimitEntry, LimitStore, SyncLimitStore, limit_store

START = dt.datetime(2026, 10, 20, 9, 0, tzinfo=dt.timezone.utc)
T0 = int(START.timestamp() * 1000)


@dataclass
class Two:
    """Two stores on one directory (clocks moved together) and a limit store on each."""

    dir: Path
    a: tinystore.Store
    b: tinystore.Store
    first: LimitStore
    second: LimitStore

    def advance(self, ms: int) -> None:
        self.a.clock.advance(dt.timedelta(milliseconds=ms))
        self.b.clock.advance(dt.timedelta(milliseconds=ms))


async def two(tmp_path: Path, max_entries: int | None = None) -> Two:
    a = await tinystore.open(tmp_path, clock=START)
    b = await tinystore.open(tmp_path, clock=START)
    return Two(tmp_path, a, b, limit_store(a, max_entries=max_entries), limit_store(b, max_entries=max_entries))


@pytest.fixture
async def t(tmp_path: Path) -> AsyncIterator[Two]:
    pair = await two(tmp_path)
    yield pair
    await pair.a.close()
    await pair.b.close()


def bump(key: str) -> Apply:
    """An apply that adds one to the count of ``key``, in a window of a minute."""

    def apply(entries: Mapping[str, LimitEntry], now: int) -> dict[str, LimitEntry | None]:
        e = entries.get(key)
        return {key: LimitEntry((e.value if e else 0) + 1, e.expires_at if e else now + 60_000)}

    return apply


async def count_once(ls: LimitStore, key: str) -> int:
    out = await ls.update([key], bump(key))
    return int(out[key].value)


def file_bytes(d: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(d.iterdir()) if p.is_file())


async def test_contract_shared_update_read_sweep_and_the_default_bound(t: Two) -> None:
    for ls in (t.first, t.second):
        assert ls.shared is True
        assert ls.max_entries == 1_000_000


async def test_contract_every_instance_sees_the_same_entries(t: Two) -> None:
    assert await count_once(t.first, "sign-in:ada") == 1
    assert await count_once(t.second, "sign-in:ada") == 2
    seen = await t.first.read(["sign-in:ada", "sign-in:bob"])
    assert list(seen) == ["sign-in:ada"]
    assert seen["sign-in:ada"].value == 2


async def test_contract_update_calls_apply_with_live_entries_and_the_stores_clock(t: Two) -> None:
    calls: list[tuple[dict[str, LimitEntry], int]] = []

    def first(entries: Mapping[str, LimitEntry], now: int) -> dict[str, LimitEntry | None]:
        calls.append((dict(entries), now))
        return {"a": LimitEntry({"n": 1, "tags": ["x"]}, now + 1000)}

    out = await t.first.update(["a", "b"], first)
    assert calls == [({}, T0)]
    assert out == {"a": LimitEntry({"n": 1, "tags": ["x"]}, T0 + 1000)}
    t.advance(10)
    seen: list[tuple[dict[str, LimitEntry], int]] = []
    await t.second.update(["b", "a"], lambda entries, now: seen.append((dict(entries), now)))
    assert seen == [({"a": LimitEntry({"n": 1, "tags": ["x"]}, T0 + 1000)}, T0 + 10)]


async def test_contract_update_none_deletes(t: Two) -> None:
    await t.first.update(
        ["k", "other"], lambda _, now: {"k": LimitEntry(1, now + 60_000), "other": LimitEntry(2, now + 60_000)}
    )
    assert await t.second.update(["k"], lambda _, __: {"k": None}) == {}
    assert await t.first.read(["k"]) == {}
    assert (await t.first.read(["other"]))["other"].value == 2
    await t.first.update(["never"], lambda _, __: {"never": None})  # an absent key: no error


async def test_contract_expiry_is_judged_on_the_stores_clock(t: Two) -> None:
    await t.first.update(["k"], lambda _, now: {"k": LimitEntry(5, now + 60_000)})
    t.advance(59_999)
    assert (await t.second.read(["k"]))["k"].value == 5
    t.advance(1)
    assert await t.second.read(["k"]) == {}, "gone at expires_at"
    seen: list[int] = []
    await t.first.update(["k"], lambda entries, _: seen.append(len(entries)))
    assert seen == [0], "apply sees no expired entry"
    assert await t.first.update(["old"], lambda _, now: {"old": LimitEntry(1, now)}) == {}


async def test_contract_sweep_removes_expired_entries_and_answers_how_many_went(t: Two) -> None:
    await t.first.update(
        ["a", "b", "c"],
        lambda _, now: {
            "a": LimitEntry(1, now + 1000),
            "b": LimitEntry(1, now + 2000),
            "c": LimitEntry(1, now + 600_000),
        },
    )
    t.advance(5000)
    assert await t.second.sweep() == 2
    assert await t.first.sweep() == 0
    assert (await t.first.read(["c"]))["c"].value == 1


async def test_contract_concurrent_updates_on_two_handles_never_lose_a_count(t: Two) -> None:
    runs = 0

    def apply(entries: Mapping[str, LimitEntry], now: int) -> dict[str, LimitEntry | None]:
        nonlocal runs
        runs += 1
        e = entries.get("hot")
        return {"hot": LimitEntry((e.value if e else 0) + 1, now + 60_000)}

    await asyncio.gather(*((t.first if i % 2 else t.second).update(["hot"], apply) for i in range(60)))
    assert (await t.first.read(["hot"]))["hot"].value == 60
    assert runs > 60, "apply ran again for updates that raced"


CHILD = textwrap.dedent(
    """
    import sys
    from tinystore import sync
    from tinystore.limit_store import LimitEntry, limit_store

    def apply(entries, now):
        e = entries.get("one-key")
        return {"one-key": LimitEntry((e.value if e else 0) + 1, e.expires_at if e else now + 600_000)}

    with sync.open(sys.argv[1]) as store:
        limits = limit_store(store)
        for _ in range(int(sys.argv[2])):
            limits.update(["one-key"], apply)
    """
)


def test_contract_concurrent_updates_in_two_processes_never_lose_a_count(tmp_path: Path) -> None:
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), "100"]) for _ in range(2)]
    assert [c.wait(timeout=60) for c in children] == [0, 0]
    with tinystore.sync.open(tmp_path) as store:
        assert limit_store(store).read(["one-key"])["one-key"].value == 200


def test_contract_the_sync_flavour_has_the_same_contract(tmp_path: Path) -> None:
    with tinystore.sync.open(tmp_path, clock=START) as a, tinystore.sync.open(tmp_path, clock=START) as b:
        first, second = limit_store(a), limit_store(b)
        assert isinstance(first, SyncLimitStore) and first.shared is True
        assert first.update(["k"], bump("k"))["k"].value == 1
        assert second.update(["k"], bump("k"))["k"].value == 2
        assert second.update(["k"], lambda _, __: {"k": None}) == {}
        first.update(["e"], lambda _, now: {"e": LimitEntry(1, now + 1000)})
        a.clock.advance("2s")
        b.clock.advance("2s")
        assert first.read(["e"]) == {}
        assert second.sweep() == 1


async def test_store_keys_are_stored_as_their_sha256_never_the_key(tmp_path: Path) -> None:
    key = "password-reset:ada.lovelace@example.com"
    async with tinystore.open(tmp_path, clock=START) as store:
        await limit_store(store).update([key], lambda _, now: {key: LimitEntry(1, now + 60_000)})
    raw = file_bytes(tmp_path)
    assert key.encode() not in raw, "the key is in the file"
    assert b"ada.lovelace" not in raw, "part of the key is in the file"
    assert hashlib.sha256(key.encode()).digest() in raw, "the key's digest is not in the file"


async def test_store_a_value_over_4_kb_is_refused_naming_the_key_and_the_file_is_unchanged(tmp_path: Path) -> None:
    async with tinystore.open(tmp_path, clock=START) as store:
        await limit_store(store).update(["fits"], lambda _, now: {"fits": LimitEntry("x" * 4094, now + 1000)})
    before = file_bytes(tmp_path)
    async with tinystore.open(tmp_path, clock=START) as store:
        ls = limit_store(store)
        with pytest.raises(tinystore.LimitError, match="4097 bytes") as e:
            await ls.update(["k"], lambda _, now: {"k": LimitEntry("x" * 4095, now + 1000)})
        assert e.value.path == "k"
        with pytest.raises(tinystore.InvalidError) as bad:
            await ls.update(["k"], lambda _, now: {"k": LimitEntry({1, 2}, now + 1000)})
        assert bad.value.path == "k"
        with pytest.raises(tinystore.InvalidError):
            await ls.update(["k"], lambda _, now: {"k": LimitEntry(1, float("nan"))})  # type: ignore[arg-type]
        with pytest.raises(tinystore.InvalidError) as stranger:
            await ls.update(["k"], lambda _, __: {"z": None})
        assert stranger.value.path == "z"
    assert before == file_bytes(tmp_path), "a refused update changed the file"


async def test_store_the_bound_warns_at_80_percent(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pair = await two(tmp_path, max_entries=10)
    caplog.set_level(logging.WARNING, logger="tinystore.limit_store")
    for i in range(7):
        await count_once(pair.first, f"k{i}")
    assert caplog.records == []
    await count_once(pair.first, "k7")
    [line] = caplog.records
    assert (line.levelno, getattr(line, "kind")) == (logging.WARNING, "limit-store-filling")
    assert "8 of its 10" in line.getMessage()
    await pair.a.close()
    await pair.b.close()


async def test_store_when_full_a_new_key_is_unavailable_and_held_keys_keep_counting(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pair = await two(tmp_path, max_entries=5)
    caplog.set_level(logging.WARNING, logger="tinystore.limit_store")
    for i in range(5):
        await count_once(pair.first, f"held{i}")
    caplog.clear()
    with pytest.raises(tinystore.LimitError, match="unavailable") as e:
        await count_once(pair.second, "new")
    assert e.value.path == "new"
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [getattr(r, "kind") for r in errors] == ["limit-store-full"]
    assert await count_once(pair.second, "held0") == 2, "a held key keeps counting"
    with pytest.raises(tinystore.LimitError):
        await count_once(pair.second, "new2")
    assert len([r for r in caplog.records if r.levelno == logging.ERROR]) == 1, "at most once a minute"
    pair.advance(61_000)  # every window ended: the full store removes them and takes the key
    assert await count_once(pair.second, "new") == 1
    await pair.a.close()
    await pair.b.close()


async def test_store_apply_that_raises_propagates_and_writes_nothing(t: Two) -> None:
    def boom(entries: Mapping[str, LimitEntry], now: int) -> None:
        raise ArithmeticError("no")

    for _ in range(70):
        with pytest.raises(ArithmeticError):
            await t.first.update(["k"], boom)
    assert await t.first.read(["k"]) == {}
    assert await count_once(t.first, "k") == 1, "a raised apply gives its call back"


async def test_store_the_65th_call_in_flight_is_answered_unavailable_at_once(t: Two) -> None:
    answers = await asyncio.gather(*(count_once(t.first, f"k{i}") for i in range(65)), return_exceptions=True)
    refused = [a for a in answers if isinstance(a, BaseException)]
    assert len(refused) == 1
    assert isinstance(refused[0], tinystore.LimitError)
    assert "64 calls are in flight" in str(refused[0])
    assert await count_once(t.first, "k64") == 1, "room again once they finish"


BAD_ANSWERS: list[tuple[str, Apply, str, str]] = [
    ("a stranger key", lambda _, now: {"z": LimitEntry(1, now)}, "z",
     "apply returned a key that is not one of the keys of the update"),
    ("an expiry of NaN", lambda _, __: {"k": LimitEntry(1, float("nan"))}, "k",  # type: ignore[arg-type]
     "an entry's expiry must be a finite number of ms, not NaN"),
    ("an expiry of inf", lambda _, __: {"k": LimitEntry(1, float("inf"))}, "k",  # type: ignore[arg-type]
     "an entry's expiry must be a finite number of ms, not infinity"),
    ("a value that is not JSON", lambda _, now: {"k": LimitEntry({1}, now)}, "k",
     "the value cannot be written as JSON: Object of type set is not JSON serializable"),
]


@pytest.mark.parametrize("flavour", ["asyncio", "sync"])
@pytest.mark.parametrize(("case", "apply", "key", "message"), BAD_ANSWERS, ids=[c[0] for c in BAD_ANSWERS])
def test_store_a_bad_answer_of_apply_is_the_cores_invalid_naming_the_key(
    tmp_path: Path, flavour: str, case: str, apply: Apply, key: str, message: str
) -> None:
    async def on_asyncio() -> tuple[tinystore.InvalidError, dict[str, LimitEntry]]:
        async with tinystore.open(tmp_path, clock=START) as store:
            ls = limit_store(store)
            with pytest.raises(tinystore.InvalidError) as e:
                await ls.update(["k"], apply)
            await ls.update(["k"], lambda _, now: {"k": LimitEntry(1, now + 1000)})
            return e.value, await ls.read(["k"])

    def on_threads() -> tuple[tinystore.InvalidError, dict[str, LimitEntry]]:
        with tinystore.sync.open(tmp_path, clock=START) as store:
            ls = limit_store(store)
            with pytest.raises(tinystore.InvalidError) as e:
                ls.update(["k"], apply)
            ls.update(["k"], lambda _, now: {"k": LimitEntry(1, now + 1000)})
            return e.value, ls.read(["k"])

    error, after = asyncio.run(on_asyncio()) if flavour == "asyncio" else on_threads()
    assert message in str(error)
    assert (error.bucket, error.path) == ("limit-store", key)
    assert after == {"k": LimitEntry(1, T0 + 1000)}, "after a refused update the next one writes"


def test_store_bad_input_is_invalid(tmp_path: Path) -> None:
    with tinystore.sync.open(tmp_path, clock=START) as store:
        with pytest.raises(tinystore.InvalidError, match="max_entries"):
            limit_store(store, max_entries=0)
        ls = limit_store(store)
        with pytest.raises(tinystore.InvalidError):
            ls.read("abc")
        with pytest.raises(tinystore.InvalidError):
            ls.read([b"k"])  # type: ignore[list-item]
        with pytest.raises(tinystore.InvalidError):
            ls.read(["a", "a"])
        with pytest.raises(tinystore.InvalidError):
            limit_store(object())  # type: ignore[call-overload]


def test_store_the_readme_example_runs_as_written(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    found = re.search(r"<!-- limit-store example -->\n```python\n(.*?)```", readme, re.S)
    assert found, "the README has the limit-store example"
    run = subprocess.run(
        [sys.executable, "-c", found.group(1)], cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert lines[0] == "[True, True, True, True, True, False]"
    assert "value=5" in lines[1]
    assert lines[-1] == "0"


REFUSED: list[tuple[str, str, str | None]] = [
    ("keys as text", "a limit store's keys are a list of strings, not str 'abc'", None),
    ("a key of bytes", "a limit store key is a string, not bytes b'k'", None),
    ("no apply", "an update needs a function to call, not NoneType None", None),
    ("apply returning an int", "apply returns a map of key to entry (none to delete it), or nothing, not int 5", None),
    ("an entry of an int", "an entry is a value and its expiry, or none to delete the key, not int 5", "k"),
    ("an expiry of text", "an entry's expiry is a number of ms, not str 'soon'", "k"),
]


def _refused_call(ls: SyncLimitStore, case: str) -> None:
    calls: dict[str, object] = {
        "keys as text": lambda: ls.read("abc"),
        "a key of bytes": lambda: ls.read([b"k"]),  # type: ignore[list-item]
        "no apply": lambda: ls.update(["k"], None),  # type: ignore[arg-type]
        "apply returning an int": lambda: ls.update(["k"], lambda _, __: 5),  # type: ignore[arg-type,return-value]
        "an entry of an int": lambda: ls.update(["k"], lambda _, __: {"k": 5}),  # type: ignore[dict-item]
        "an expiry of text": lambda: ls.update(["k"], lambda _, __: {"k": LimitEntry(1, "soon")}),  # type: ignore[arg-type]
    }
    call = calls[case]
    assert callable(call)
    call()


@pytest.mark.parametrize(("case", "message", "key"), REFUSED, ids=[c[0] for c in REFUSED])
def test_store_a_type_it_does_not_take_is_the_cores_text_naming_the_store(
    tmp_path: Path, case: str, message: str, key: str | None
) -> None:
    with tinystore.sync.open(tmp_path, clock=START) as store:
        ls = limit_store(store, name="sends")
        with pytest.raises(tinystore.InvalidError) as e:
            _refused_call(ls, case)
        assert (e.value.message, e.value.bucket, e.value.path) == (message, "sends", key)


def test_store_a_bound_out_of_range_is_the_cores_one_text_naming_the_store(tmp_path: Path) -> None:
    with tinystore.sync.open(tmp_path, clock=START) as store:
        for n in (0, -1, 2**63, 2**200):
            with pytest.raises(tinystore.InvalidError) as e:
                limit_store(store, max_entries=n, name="sends")
            assert (e.value.message, e.value.bucket) == (
                f"max_entries (maxEntries) is {n}: a limit store holds a whole number of entries from 1 to 2^63-1",
                "sends",
            )
        with pytest.raises(tinystore.InvalidError) as bad:
            limit_store(store, max_entries="5", name="sends")  # type: ignore[call-overload]
        assert bad.value.bucket == "sends"
        with pytest.raises(tinystore.InvalidError) as not_a_store:
            limit_store(object(), name="sends")  # type: ignore[call-overload]
        assert not_a_store.value.bucket == "sends"
        assert not_a_store.value.message.startswith("a limit store opens over an open store, not object ")
        assert limit_store(store, max_entries=2**63 - 1).max_entries == 2**63 - 1


def test_store_the_cores_refusals_name_the_store_it_was_given(tmp_path: Path) -> None:
    with tinystore.sync.open(tmp_path, clock=START) as store:
        ls = limit_store(store, name="sends")
        with pytest.raises(tinystore.InvalidError) as e:
            ls.update(["k"], lambda _, now: {"z": LimitEntry(1, now)})
        assert (e.value.bucket, e.value.path) == ("sends", "z")
        with pytest.raises(tinystore.InvalidError) as twice:
            ls.read(["a", "a"])
        assert twice.value.bucket == "sends"
