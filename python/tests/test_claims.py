"""KV-10 claims: ``create_entry`` answers the entry it wrote or found, and
``set`` the version it wrote, in the sync and asyncio APIs and inside a
transaction; the version answered is the one ``if_version`` takes."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import assert_type

import pytest

import tinystore
import tinystore.sync
from conftest import START


@dataclasses.dataclass
class Claim:
    worker: str


async def test_kv10_create_entry_answers_the_entry_written_then_the_one_found(store: tinystore.Store) -> None:
    seen = store.bucket("events", Claim)
    first: tinystore.Created[Claim] = await seen.create_entry("evt", Claim("a"), ttl="10m")
    assert first.written is True
    assert first.entry == tinystore.Entry("evt", Claim("a"), first.entry.version, START + dt.timedelta(minutes=10))
    assert await seen.entry("evt") == first.entry

    again = await seen.create_entry("evt", Claim("b"), ttl="1h")
    assert_type(again, tinystore.Created[Claim])
    assert again.written is False
    assert again.entry == first.entry, "the live entry, its value read as the bucket's type"
    assert isinstance(again.entry.value, Claim)

    kept = await seen.set("evt", Claim("a"), if_version=first.entry.version, ttl="7d")
    assert isinstance(kept, str) and kept != first.entry.version
    with pytest.raises(tinystore.ConflictError) as e:
        await seen.set("evt", Claim("b"), if_version=first.entry.version)
    assert (e.value.bucket, e.value.path) == ("events", "evt")
    found = await seen.entry("evt")
    assert found is not None and (found.version, found.value) == (kept, Claim("a"))


async def test_kv10_create_entry_claims_an_expired_key(store: tinystore.Store) -> None:
    seen = store.bucket("events", int)
    old = await seen.create_entry("evt", 1, ttl="1m")
    store.clock.advance("2m")
    new = await seen.create_entry("evt", 2)
    assert new.written and new.entry.value == 2 and new.entry.expires_at is None
    assert new.entry.version != old.entry.version


def test_kv10_sync_create_entry_and_set_answer_what_entry_reads(sync_store: tinystore.sync.Store) -> None:
    seen = sync_store.bucket("events", str)
    claim: tinystore.Created[str] = seen.create_entry("evt", "handling", expires_at=START + dt.timedelta(hours=1))
    assert claim.written and claim.entry.expires_at == START + dt.timedelta(hours=1)
    found = seen.create_entry("evt", "other")
    assert_type(found, tinystore.Created[str])
    assert (found.written, found.entry) == (False, claim.entry)
    kept = seen.set("evt", "done", if_version=claim.entry.version)
    read = seen.entry("evt")
    assert read is not None and read.version == kept
    with pytest.raises(tinystore.ConflictError):
        seen.set("evt", "late", if_version=claim.entry.version)
    assert seen.get("evt") == "done"


def test_kv10_sync_create_entry_inside_a_transaction(sync_store: tinystore.sync.Store) -> None:
    seen = sync_store.bucket("events", int)
    with sync_store.tx() as tx:
        written = tx.with_(seen).create_entry("evt", 1)
        assert_type(written, tinystore.Created[int])
        found = tx.with_(seen).create_entry("evt", 2)
        assert written.written and not found.written
        assert found.entry == written.entry
        version = tx.with_(seen).set("evt", 3, if_version=written.entry.version)
    read = seen.entry("evt")
    assert read is not None and (read.value, read.version) == (3, version)


async def test_kv10_asyncio_create_entry_inside_a_transaction(store: tinystore.Store) -> None:
    seen = store.bucket("events", int)
    await seen.set("evt", 1)
    async with store.tx() as tx:
        found: tinystore.Created[int] = await tx.with_(seen).create_entry("evt", 2)
        assert not found.written and found.entry.value == 1
        written = await tx.with_(seen).create_entry("new", 5, ttl="1h")
        assert_type(written.entry, tinystore.Entry[int])
        assert written.written and written.entry.expires_at == START + dt.timedelta(hours=1)
    assert await seen.get("new") == 5


async def test_kv10_create_entry_of_a_bad_value_is_invalid_and_writes_nothing(store: tinystore.Store) -> None:
    seen = store.bucket("events", int)
    with pytest.raises(tinystore.InvalidError) as e:
        await seen.create_entry("evt", "not an int")  # type: ignore[arg-type]
    assert e.value.bucket == "events"
    assert await seen.entry("evt") is None
