"""Errors (KV-18): one class per kind, the bucket and path of a key, bad input refused."""

from __future__ import annotations

import datetime as dt

import pytest

import tinystore
from tinystore import errors


def test_kv18_one_class_per_kind_with_stable_codes() -> None:
    kinds = {
        "INVALID": tinystore.InvalidError,
        "LIMIT": tinystore.LimitError,
        "CONFLICT": tinystore.ConflictError,
        "CORRUPT": tinystore.CorruptError,
        "CLOSED": tinystore.ClosedError,
        "OUTCOME_UNKNOWN": tinystore.OutcomeUnknownError,
        "IO": tinystore.IoError,
        "CANCELLED": tinystore.CallCancelledError,
    }
    for code, cls in kinds.items():
        e = errors._from_native(code, f"{code.lower()}: msg (bucket b, key k)", "msg", "b", "k")
        assert type(e) is cls and isinstance(e, tinystore.Error)
        assert e.code == code and e.bucket == "b" and e.path == "k" == e.key and e.message == "msg"
    assert issubclass(tinystore.InvalidError, ValueError)


async def test_kv18_an_error_about_a_key_names_the_bucket_and_path(store: tinystore.Store) -> None:
    b = store.bucket("sessions", int)
    v = await b.under(7, "web").set("tok", 1)
    await b.under(7, "web").set("tok", 2)
    with pytest.raises(tinystore.ConflictError) as e:
        await b.under(7, "web").set("tok", 3, if_version=v)
    assert e.value.bucket == "sessions" and e.value.path == "7/web/tok"
    assert "(bucket sessions, key 7/web/tok)" in str(e.value)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda s: s.bucket("x", int, ttl=15), "ttl"),
        (lambda s: s.bucket("x", int, idle="1 day"), "1 day"),
        (lambda s: s.bucket("x", int, ttl=dt.timedelta(minutes=-1)), "negative"),
        (lambda s: s.bucket("Bad Name", int), "Bad Name"),
        (lambda s: s.bucket("x", int).under(""), None),
    ],
)
async def test_kv18_bad_options_are_invalid_naming_the_input(store: tinystore.Store, call, needle) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(tinystore.InvalidError) as e:
        b = call(store)
        await b.get("k")  # an empty owner is refused at the first call on the branch
    if needle is not None:
        assert needle in str(e.value)


async def test_kv18_bad_if_version_and_expiry_are_invalid(store: tinystore.Store) -> None:
    b = store.bucket("b", int)
    await b.set("k", 1)
    with pytest.raises(tinystore.InvalidError):
        await b.set("k", 2, if_version="not-a-version")
    with pytest.raises(tinystore.InvalidError):
        await b.set("k", 2, if_version=1.5)  # type: ignore[arg-type]
    with pytest.raises(tinystore.InvalidError):
        await b.expire("k", 60)  # type: ignore[arg-type]
    with pytest.raises(tinystore.InvalidError):
        await b.set("k", 2, expires_at="tomorrow")  # type: ignore[arg-type]
    assert await b.get("k") == 1  # the file is left as it was


async def test_kv18_open_refuses_a_bad_dir(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(tinystore.InvalidError):
        await tinystore.open(42)  # type: ignore[arg-type]
    with pytest.raises(tinystore.InvalidError):
        await tinystore.open(tmp_path, clock="now")  # type: ignore[arg-type]
