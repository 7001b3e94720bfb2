"""The bad-input catalogue (KV-18) for Python.

Every bad input a Python caller can give (a wrong type, a bad name, key,
value, duration, rate, window, option or call, a closed store) is refused
with the right error class and a message naming what was wrong, and the
file is left exactly as it was: kv.db and kv.db-wal hash the same before and
after. The Rust catalogue (core/tests/bad_input.rs) covers the core's rules
case by case; this one covers what the Python layer adds or converts.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import tinystore
from tinystore import sync

START = dt.datetime(2026, 10, 20, 9, 0, tzinfo=dt.timezone.utc)


def quoted(text: str) -> str:
    """``text`` as the core quotes it in a message (Rust's debug form)."""
    return '"' + text.replace("\\", "\\\\").replace("\0", "\\0").replace("\t", "\\t") + '"'


def _digest(p: Path) -> str | None:
    return hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None


@dataclasses.dataclass
class Catalogue:
    """Bad inputs refused on one store, whose files must not change."""

    store: sync.Store
    count: int = 0

    def state(self) -> tuple[str | None, str | None]:
        d = Path(self.store.dir)
        return _digest(d / "kv.db"), _digest(d / "kv.db-wal")

    def refused(self, what: str, call: Callable[[], object], cls: type[tinystore.Error], *names: str) -> None:
        """``call()`` raises ``cls`` with each of ``names`` in its message."""
        with pytest.raises(tinystore.Error) as e:
            call()
        assert type(e.value) is cls, f"{what}: {type(e.value).__name__}: {e.value}"
        shown = str(e.value)
        for n in names:
            assert n in shown, f"{what}: the error should name {n!r}: {shown}"
        self.count += 1


@contextmanager
def unchanged(store: sync.Store) -> Iterator[Catalogue]:
    """A catalogue whose refusals must leave kv.db and kv.db-wal as they were."""
    # A blocking write queues behind every write in flight, so the file has settled.
    store.bucket("texts", str).set("settled", "v")
    c = Catalogue(store)
    before = c.state()
    yield c
    assert c.state() == before, "a refused input changed the file"
    assert c.count > 0


@pytest.fixture
def fixture(tmp_path: Path) -> Iterator[sync.Store]:
    """A store with a handle of every kind already opened, so the cases register nothing."""
    with sync.open(tmp_path / "data", clock=START) as s:
        s.bucket("texts", str).set("kept", "v")
        s.bucket("numbers", list[float]).set("kept", [1.0])
        s.bucket("ints", int).set("kept", 1)
        s.counters("attempts").add("kept")
        s.rate_limit("guesses", rate="5/m").allow("kept")
        s.quota("messages", daily="100/d").allow("kept")
        s.once("sends", str).run("kept", lambda: "sent")
        yield s


def test_kv18_bad_names_are_invalid_naming_them(fixture: sync.Store) -> None:
    s = fixture
    with unchanged(s) as c:
        for name in ["", "Sessions", "a b", "ünï", "a\0b", "-lead", "_lead", "a/b", "a.b", "a" * 65]:
            c.refused(f"bucket {name!r}", lambda: s.bucket(name, int).get("k"), tinystore.InvalidError, quoted(name))
            c.refused(f"counters {name!r}", lambda: s.counters(name).get("k"), tinystore.InvalidError, quoted(name))
        # A name keeps its kind (KV-2).
        c.refused("texts as counters", lambda: s.counters("texts").get("k"), tinystore.InvalidError, "texts")
        c.refused("attempts as a bucket", lambda: s.bucket("attempts", int).get("k"), tinystore.InvalidError, "attempts")
        c.refused(
            "sends as a rate limit",
            lambda: s.rate_limit("sends", rate="1/s").allow("k"),
            tinystore.InvalidError,
            "sends",
        )


def test_kv18_bad_keys_are_invalid_naming_bucket_and_path(fixture: sync.Store) -> None:
    s = fixture
    b = s.bucket("texts", str)
    with unchanged(s) as c:
        c.refused("empty bytes key", lambda: b.set(b"", "v"), tinystore.InvalidError, "empty", "texts")
        c.refused("600 NULs", lambda: b.set(b"\0" * 600, "v"), tinystore.InvalidError, "1024")
        # Python types that are not keys: a key is text, bytes or an int.
        for bad in [None, 1.5, math.nan, ["k"], ("k",), {"k": 1}, object()]:
            c.refused(f"a key of {type(bad).__name__}", lambda: b.set(bad, "v"), tinystore.InvalidError)  # type: ignore[arg-type]
            c.refused(f"a key of {type(bad).__name__}, get", lambda: b.get(bad), tinystore.InvalidError)  # type: ignore[arg-type]
            c.refused(f"an owner of {type(bad).__name__}", lambda: b.under(bad).get("k"), tinystore.InvalidError)  # type: ignore[arg-type]


def test_kv18_bad_values_are_refused_naming_them(fixture: sync.Store) -> None:
    s = fixture
    texts = s.bucket("texts", str)
    numbers = s.bucket("numbers", list[float])
    ints = s.bucket("ints", int)
    raw = s.bucket("texts", bytes)
    anything = s.bucket("texts")
    with unchanged(s) as c:
        big = "x" * ((1 << 20) + 1)
        c.refused("a value over 1 MiB", lambda: texts.set("k", big), tinystore.LimitError, "1 MiB", "texts")
        c.refused("a value over 1 MiB, create", lambda: texts.create("k", big), tinystore.LimitError, "1 MiB")
        c.refused("a value over 1 MiB, kept", lambda: texts.set("kept", big), tinystore.LimitError, "1 MiB", "kept")
        c.refused("bytes over 1 MiB", lambda: raw.set("k", b"\0" * ((1 << 20) + 1)), tinystore.LimitError, "1 MiB")
        c.refused("NaN inside JSON", lambda: numbers.set("k", [1.0, math.nan]), tinystore.InvalidError, "numbers")
        c.refused("infinity inside JSON", lambda: numbers.set("k", [math.inf]), tinystore.InvalidError, "numbers")
        c.refused("NaN in an untyped bucket", lambda: anything.set("k", {"x": math.nan}), tinystore.InvalidError)
        past = "is outside int64, the integers a row keeps (bucket ints, key k)"
        c.refused("an int past int64", lambda: ints.set("k", 2**63), tinystore.InvalidError, f"the integer {2**63} {past}")
        c.refused("an int below int64", lambda: ints.set("k", -(2**63) - 1), tinystore.InvalidError, f"{-(2**63) - 1} {past}")
        c.refused("an int past 128 bits", lambda: ints.set("k", 2**200), tinystore.InvalidError, f"the integer {2**200} {past}")
        c.refused("text in an int bucket", lambda: ints.set("k", "1"), tinystore.InvalidError, "int", "ints")  # type: ignore[arg-type]
        c.refused("a float in an int bucket", lambda: ints.set("k", 1.5), tinystore.InvalidError, "int")  # type: ignore[arg-type]
        c.refused("None in an int bucket", lambda: ints.set("k", None), tinystore.InvalidError, "int")  # type: ignore[arg-type]
        c.refused("bytes in a str bucket", lambda: texts.set("k", b"v"), tinystore.InvalidError, "str")  # type: ignore[arg-type]
        c.refused("a str in a list bucket", lambda: numbers.set("k", "1.0"), tinystore.InvalidError)  # type: ignore[arg-type]
        c.refused("an object in an untyped bucket", lambda: anything.set("k", object()), tinystore.InvalidError)
    # A type that cannot be kept is refused when the handle is made.
    with pytest.raises(tinystore.InvalidError) as e:
        s.bucket("texts", complex)
    assert "complex" in str(e.value)


BAD_DURATIONS = ["", "10", "-1s", "1.5h", "1 h", " 1h", "1hr", "90mins", "30m1h", "1h1h", "NaN", "1e3s", "١٠s"]
BAD_RATES = ["", "10", "/s", "0/s", "-1/s", "+10/s", "1.5/s", "NaN/s", "10/fortnight", "10 / s", "10/s;x", "5/0s"]


def test_kv18_bad_durations_and_rates_are_invalid_quoting_them(fixture: sync.Store) -> None:
    s = fixture
    with unchanged(s) as c:
        for d in BAD_DURATIONS:
            c.refused(f"ttl {d!r}", lambda: s.bucket("t0", int, ttl=d).get("k"), tinystore.InvalidError, quoted(d))
            c.refused(
                f"expire in {d!r}", lambda: s.bucket("texts", str).expire("kept", d), tinystore.InvalidError, "texts"
            )
        for r in BAD_RATES:
            c.refused(f"rate {r!r}", lambda: s.rate_limit("r0", rate=r).allow("k"), tinystore.InvalidError, quoted(r))
            c.refused(f"window {r!r}", lambda: s.quota("q0", daily=r).allow("k"), tinystore.InvalidError, quoted(r))
        # Python values that are not durations: numbers, NaN, negatives.
        not_durations: list[Any] = [15, 1.5, math.nan, math.inf, b"1s"]
        for bad in not_durations:
            c.refused(f"ttl {bad!r}", lambda: s.bucket("t0", int, ttl=bad).get("k"), tinystore.InvalidError, "ttl")
        c.refused(
            "a negative ttl",
            lambda: s.bucket("t0", int, ttl=dt.timedelta(minutes=-1)).get("k"),
            tinystore.InvalidError,
            "negative",
        )
        not_span = ": a span of time is from 0 to 2^53 - 1 ms, never negative"
        c.refused(
            "a negative ttl in the core's text",
            lambda: s.bucket("t0", int, ttl=dt.timedelta(minutes=-1)).get("k"),
            tinystore.InvalidError,
            "ttl is -60000000000 ns" + not_span,
            "(bucket t0)",
        )
        c.refused(
            "advance by a negative step in the core's text",
            lambda: s.clock.advance(dt.timedelta(seconds=-1)),
            tinystore.InvalidError,
            "the clock's step is -1000000000 ns" + not_span,
        )
        c.refused(
            "a call's ttl of a number",
            lambda: s.bucket("texts", str).set("k", "v", ttl=60),  # type: ignore[arg-type]
            tinystore.InvalidError,
            "ttl",
        )
        c.refused(
            "an expires_at of text",
            lambda: s.bucket("texts", str).set("k", "v", expires_at="tomorrow"),  # type: ignore[arg-type]
            tinystore.InvalidError,
        )


def test_kv18_bad_limits_and_windows_are_invalid_naming_them(fixture: sync.Store) -> None:
    s = fixture
    guesses = s.rate_limit("guesses", rate="5/m")
    messages = s.quota("messages", daily="100/d")
    attempts = s.counters("attempts")
    attempts.add("top", 2**63 - 2)
    with unchanged(s) as c:
        c.refused("burst 0", lambda: s.rate_limit("r0", rate="5/m", burst=0).allow("k"), tinystore.InvalidError, "burst")
        c.refused("a rate of a number", lambda: s.rate_limit("r0", rate=5).allow("k"), tinystore.InvalidError)  # type: ignore[arg-type]
        negative = "a count of uses is -1: it cannot be negative"
        c.refused("allow a negative n", lambda: guesses.allow("k", -1), tinystore.InvalidError, negative, "(bucket guesses, key k)")
        c.refused("quota allow -1", lambda: messages.allow("k", -1), tinystore.InvalidError, negative, "(bucket messages, key k)")
        c.refused("quota refund -1", lambda: messages.refund("k", -1), tinystore.InvalidError, negative, "(bucket messages, key k)")
        c.refused("allow a float n", lambda: guesses.allow("k", 1.5), tinystore.InvalidError)  # type: ignore[arg-type]
        c.refused("a quota without windows", lambda: s.quota("q0").allow("k"), tinystore.InvalidError, "q0")
        c.refused("a counter past int64", lambda: attempts.add("top", 2), tinystore.LimitError, "attempts", "top")
        c.refused("add past int64 itself", lambda: attempts.add("k", 2**63), tinystore.InvalidError, "attempts")
        c.refused("add a float", lambda: attempts.add("k", 0.5), tinystore.InvalidError, "attempts")  # type: ignore[arg-type]
        past = ": it must fit int64, from -2^63 to 2^63-1"
        step_past = "a counter's step is 9223372036854775808" + past
        c.refused("a step past int64's text", lambda: attempts.add("k", 2**63), tinystore.InvalidError, step_past, "(bucket attempts)")
        count_past = "a count of uses is -9223372036854775809" + past
        c.refused("allow n past int64", lambda: guesses.allow("k", -(2**63) - 1), tinystore.InvalidError, count_past, "(bucket guesses, key k)")
        c.refused("a step past 128 bits, shown as given", lambda: attempts.add("k", -(2**200)), tinystore.InvalidError, f"a counter's step is {-(2**200)}" + past)
        c.refused("add a bool", lambda: attempts.add("k", True), tinystore.InvalidError, "n must be an int, not bool", "attempts")
        c.refused("allow a bool", lambda: guesses.allow("k", True), tinystore.InvalidError, "n must be an int, not bool", "guesses")
    assert attempts.get("top") == 2**63 - 2, "a refused add changes nothing"


def test_kv18_bad_calls_are_invalid_and_write_nothing(fixture: sync.Store, tmp_path: Path) -> None:
    s = fixture
    texts = s.bucket("texts", str)
    with unchanged(s) as c:
        c.refused("a page of 0", lambda: texts.list(limit=0), tinystore.InvalidError, "0", "texts")
        c.refused("a page of 1001", lambda: texts.list(limit=1001), tinystore.InvalidError, "1001", "texts")
        c.refused("a page past 128 bits", lambda: texts.list(limit=2**130), tinystore.InvalidError, f"a page (limit) holds 1 to 1000 keys, not {2**130}", "texts")
        c.refused("an if_version of a float", lambda: texts.set("kept", "w", if_version=1.5), tinystore.InvalidError)  # type: ignore[arg-type]
        c.refused("a made-up if_version", lambda: texts.set("kept", "w", if_version="nope"), tinystore.InvalidError)
        c.refused(
            "the clock set back",
            lambda: s.clock.set(START - dt.timedelta(seconds=1)),
            tinystore.InvalidError,
            "back",
        )
        c.refused("the clock advanced by a number", lambda: s.clock.advance(5), tinystore.InvalidError)  # type: ignore[arg-type]
    # A system-clock store has no test clock to move.
    with sync.open(tmp_path / "system") as system:
        with pytest.raises(tinystore.InvalidError) as e:
            system.clock.advance("1s")
        assert "test clock" in str(e.value)


# KV-18: "a wrong type from a dynamic language is Invalid".
@pytest.mark.parametrize("name", [None, 7, b"texts"])
def test_kv18_a_name_of_another_type_is_invalid(fixture: sync.Store, name: Any) -> None:
    with unchanged(fixture) as c:
        c.refused(
            f"a name of {type(name).__name__}", lambda: fixture.bucket(name, int).get("k"), tinystore.InvalidError, repr(name)
        )


def test_kv18_a_page_size_of_another_type_is_invalid(fixture: sync.Store) -> None:
    with unchanged(fixture) as c:
        c.refused(
            "a page of text",
            lambda: fixture.bucket("texts", str).list(limit="10"),  # type: ignore[arg-type]
            tinystore.InvalidError,
            "limit",
            "'10'",
        )


def test_kv18_a_set_in_an_untyped_bucket_is_invalid(fixture: sync.Store) -> None:
    # JSON has no sets: kept as a list, a set would read back as a list.
    anything = fixture.bucket("anything")
    with unchanged(fixture) as c:
        c.refused("a set", lambda: anything.set("k", {1, 2}), tinystore.InvalidError, "set", "{1, 2}", "anything")
        c.refused("a frozenset", lambda: anything.set("k", frozenset({3})), tinystore.InvalidError, "frozenset", "anything")
        c.refused("a set in a list", lambda: anything.set("k", [{4}]), tinystore.InvalidError, "set", "{4}")
        c.refused("a set in a dict", lambda: anything.set("k", {"a": {5}}), tinystore.InvalidError, "set", "{5}")
    # A bucket of sets keeps them.
    sets = fixture.bucket("sets", set[int])
    sets.set("k", {1, 2})
    assert sets.get("k") == {1, 2}


def test_kv18_a_once_run_of_something_not_callable_is_invalid_naming_it(fixture: sync.Store) -> None:
    sends = fixture.once("sends", str)
    with unchanged(fixture) as c:
        for fn, shown in [("sent", "'sent'"), (42, "int 42"), (None, "None")]:
            c.refused(f"run of {fn!r}", lambda: sends.run("k", fn), tinystore.InvalidError, shown, "sends")  # type: ignore[arg-type]
    # Nothing was claimed: the key runs at once.
    assert sends.run("k", lambda: "first") == "first"


def test_kv18_a_once_run_inside_its_own_run_is_invalid(fixture: sync.Store) -> None:
    s = fixture
    sends = s.once("sends", str)
    c = Catalogue(s)

    def outer() -> str:
        before = c.state()
        c.refused("a run inside its own run", lambda: sends.run("k", lambda: "inner"), tinystore.InvalidError, "sends")
        assert c.state() == before, "a run inside its own run wrote"
        return "outer"

    assert sends.run("k", outer) == "outer"


def test_kv18_a_closed_store_refuses_every_call_and_writes_nothing(tmp_path: Path) -> None:
    s = sync.open(tmp_path / "data", clock=START)
    b = s.bucket("texts", str)
    b.set("kept", "v")
    counters = s.counters("attempts")
    limit = s.rate_limit("guesses", rate="5/m")
    s.close()
    before = _digest(tmp_path / "data" / "kv.db")
    calls: list[tuple[str, Callable[[], Any]]] = [
        ("get", lambda: b.get("kept")),
        ("set", lambda: b.set("k", "v")),
        ("take", lambda: b.take("kept")),
        ("list", lambda: b.list()),
        ("add", lambda: counters.add("k")),
        ("allow", lambda: limit.allow("k")),
        ("a new bucket", lambda: s.bucket("fresh", int).get("k")),
        ("maintain", lambda: s.maintain()),
    ]
    for what, call in calls:
        with pytest.raises(tinystore.ClosedError) as e:
            call()
        assert "closed" in str(e.value), f"{what}: {e.value}"
    assert _digest(tmp_path / "data" / "kv.db") == before


def test_kv18_bad_store_paths_are_refused_naming_them(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"mine")
    cases: list[tuple[Any, str | None]] = [
        ("", "empty"),
        ("a\0b", "NUL"),
        (notes, "notes.txt"),
        (notes / "store", "notes.txt"),
        (42, "int"),
        (None, "NoneType"),
    ]
    for path, needle in cases:
        with pytest.raises(tinystore.InvalidError) as e:
            sync.open(path)
        if needle is not None:
            assert needle in str(e.value), f"{path!r}: {e.value}"
    assert notes.read_bytes() == b"mine"
    assert not Path("kv.db").exists(), "an empty path opened kv.db in the working directory"


async def test_kv18_the_async_api_refuses_the_same_inputs(tmp_path: Path) -> None:
    async with tinystore.open(tmp_path / "data", clock=START) as s:
        b = s.bucket("texts", str)
        anything, sends = s.bucket("anything"), s.once("sends", str)
        await anything.set("kept", 1)
        await sends.run("kept", lambda: "sent")
        await b.set("kept", "v")
        before = _digest(tmp_path / "data" / "kv.db"), _digest(tmp_path / "data" / "kv.db-wal")
        for what, coro_fn, cls in [
            ("empty key", lambda: b.set("", "v"), tinystore.InvalidError),
            ("over 1 MiB", lambda: b.set("k", "x" * ((1 << 20) + 1)), tinystore.LimitError),
            ("bytes in a str bucket", lambda: b.set("k", b"v"), tinystore.InvalidError),  # type: ignore[arg-type]
            ("a float key", lambda: b.get(1.5), tinystore.InvalidError),  # type: ignore[arg-type]
            ("a bad ttl", lambda: s.bucket("t0", int, ttl="90mins").get("k"), tinystore.InvalidError),
            ("a bad rate", lambda: s.rate_limit("r0", rate="0/s").allow("k"), tinystore.InvalidError),
            ("a set in an untyped bucket", lambda: anything.set("k", {1, 2}), tinystore.InvalidError),
            ("a run of text", lambda: sends.run("k", "sent"), tinystore.InvalidError),  # type: ignore[arg-type]
        ]:
            with pytest.raises(cls) as e:
                await coro_fn()  # type: ignore[no-untyped-call]
            assert str(e.value), what
        with pytest.raises(tinystore.InvalidError) as e:
            await sends.run("k", 42)  # type: ignore[arg-type]
        assert "a run needs a function to call, not int 42" in str(e.value) and "sends" in str(e.value)
        with pytest.raises(tinystore.InvalidError) as e:
            await anything.set("k", {1, 2})
        assert "set {1, 2}" in str(e.value) and "anything" in str(e.value)
        assert (_digest(tmp_path / "data" / "kv.db"), _digest(tmp_path / "data" / "kv.db-wal")) == before
