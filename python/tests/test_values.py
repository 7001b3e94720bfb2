"""Typed values (KV-3): dataclasses, pydantic models and TypedDicts as JSON,
read back into the same type; a value that does not fit is a clear error."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import math
import uuid
from typing import Literal, Optional, TypedDict

import pydantic
import pytest

import tinystore


@dataclasses.dataclass
class Session:
    user_id: int
    device: str


@dataclasses.dataclass
class Tree:
    name: str
    children: list[Tree] = dataclasses.field(default_factory=list)
    at: Optional[dt.datetime] = None


class Plan(enum.Enum):
    FREE = "free"
    PRO = "pro"


@dataclasses.dataclass(frozen=True)
class Account:
    id: uuid.UUID
    plan: Plan
    tags: set[str]
    limits: dict[str, int]
    kind: Literal["user", "bot"] = "user"


class Profile(pydantic.BaseModel):
    user_id: int
    email: str
    joined: dt.date


class Settings(TypedDict, total=False):
    theme: str
    size: int


class Point(TypedDict):
    x: float
    y: float


async def test_kv03_a_dataclass_comes_back_as_itself(store: tinystore.Store) -> None:
    sessions = store.bucket("sessions", Session, idle="30d")
    await sessions.under(7).set("d", Session(user_id=7, device="web"))
    got = await sessions.under(7).get("d")
    assert got == Session(7, "web") and type(got) is Session


async def test_kv03_nested_and_recursive_dataclasses(store: tinystore.Store) -> None:
    trees = store.bucket("trees", Tree)
    t = Tree("root", [Tree("a", at=dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.timezone.utc)), Tree("b")])
    await trees.set("t", t)
    assert await trees.get("t") == t


async def test_kv03_enums_uuids_sets_and_literals(store: tinystore.Store) -> None:
    accounts = store.bucket("accounts", Account)
    a = Account(uuid.uuid4(), Plan.PRO, {"x", "y"}, {"daily": 100}, "bot")
    await accounts.set(1, a)
    assert await accounts.get(1) == a


async def test_kv03_a_pydantic_model_comes_back_as_itself(store: tinystore.Store) -> None:
    profiles = store.bucket("profiles", Profile)
    p = Profile(user_id=1, email="a@b.c", joined=dt.date(2026, 10, 1))
    await profiles.set("1", p)
    got = await profiles.get("1")
    assert got == p and type(got) is Profile
    with pytest.raises(tinystore.InvalidError) as e:
        await profiles.set("2", {"user_id": 1})  # type: ignore[arg-type]
    assert "Profile" in str(e.value) and e.value.path == "2"


async def test_kv03_typeddicts_are_checked_both_ways(store: tinystore.Store) -> None:
    settings = store.bucket("settings", Settings)
    await settings.set("u1", {"theme": "dark"})
    assert await settings.get("u1") == {"theme": "dark"}
    with pytest.raises(tinystore.InvalidError) as e:
        await settings.set("u1", {"theme": 3})  # type: ignore[typeddict-item]
    assert "theme" in str(e.value)
    points = store.bucket("points", Point)
    with pytest.raises(tinystore.InvalidError) as e:
        await points.set("p", {"x": 1.0})  # type: ignore[typeddict-item]
    assert "'y' is missing" in str(e.value)
    await points.set("p", {"x": 1, "y": 2.5})
    assert await points.get("p") == {"x": 1.0, "y": 2.5}


async def test_kv03_a_field_of_the_wrong_type_is_invalid_naming_the_field(store: tinystore.Store) -> None:
    sessions = store.bucket("sessions", Session)
    with pytest.raises(tinystore.InvalidError) as e:
        await sessions.under(3).set("tok", Session(user_id="7", device="web"))  # type: ignore[arg-type]
    msg = str(e.value)
    assert "user_id" in msg and "expected int" in msg and e.value.bucket == "sessions" and e.value.path == "3/tok"
    with pytest.raises(tinystore.InvalidError):
        await sessions.set("tok", {"user_id": 7, "device": "web"})  # type: ignore[arg-type]
    assert not await sessions.has("tok")


async def test_kv03_stored_json_that_no_longer_fits_is_corrupt(store: tinystore.Store) -> None:
    await store.bucket("sessions", dict).set("k", {"user_id": "seven", "device": "web"})
    with pytest.raises(tinystore.CorruptError) as e:
        await store.bucket("sessions", Session).get("k")
    assert e.value.message == "the row does not read as Session: user_id: expected int, got str"
    assert (e.value.bucket, e.value.path) == ("sessions", "k")
    with pytest.raises(tinystore.CorruptError):
        await store.bucket("sessions", Session).take("k")
    assert await store.bucket("sessions", dict).get("k") is not None  # still there


async def test_kv03_unknown_json_fields_are_ignored_and_defaults_fill_in(store: tinystore.Store) -> None:
    await store.bucket("t", dict).set("k", {"name": "x", "added_later": 1})
    assert await store.bucket("t", Tree).get("k") == Tree("x")


async def test_kv03_json_is_compact_utf8(store: tinystore.Store) -> None:
    await store.bucket("s", Session).set("k", Session(1, "wéb"))
    raw = await store.bucket("s", bytes).get("k")
    assert raw == '{"userId":1,"device":"wéb"}'.encode()
    assert json.loads(raw) == {"userId": 1, "device": "wéb"}


async def test_kv03_a_dataclass_names_its_fields_in_camel_case_and_reads_either_name(store: tinystore.Store) -> None:
    # What TypeScript's `{ userId, device }` and Go's `json:"userId"` write, and what Rust writes for `user_id`.
    await store.bucket("s", dict).set("camel", {"userId": 7, "device": "web"})
    await store.bucket("s", dict).set("snake", {"user_id": 8, "device": "cli"})
    sessions = store.bucket("s", Session)
    assert await sessions.get("camel") == Session(7, "web")
    assert await sessions.get("snake") == Session(8, "cli")
    await sessions.set("mine", Session(9, "phone"))
    assert await store.bucket("s", dict).get("mine") == {"userId": 9, "device": "phone"}
    # A dict's keys are data: kept as they are.
    await store.bucket("s", dict[str, int]).set("map", {"user_id": 1})
    assert await store.bucket("s", bytes).get("map") == b'{"user_id":1}'


async def test_kv03_lists_dicts_unions_and_any(store: tinystore.Store) -> None:
    b = store.bucket("l", list[int])
    await b.set("k", [1, 2, 3])
    assert await b.get("k") == [1, 2, 3]
    with pytest.raises(tinystore.InvalidError) as e:
        await b.set("k", [1, "2"])  # type: ignore[list-item]
    assert e.value.message == "the value does not fit the type list[int]: [1]: expected int, got str"
    with pytest.raises(tinystore.InvalidError) as e:
        await store.bucket("n", int).set("k", "2")  # type: ignore[arg-type]
    assert e.value.message == "the value does not fit the type int: got str"
    u: tinystore.Bucket[int | str] = store.bucket("u", int | str)
    await u.set("a", 1)
    await u.set("b", "x")
    assert (await u.get("a"), await u.get("b")) == (1, "x")
    anything = store.bucket("any")
    await anything.set("k", {"a": [1, {"b": None}], "s": Session(1, "x")})
    assert await anything.get("k") == {"a": [1, {"b": None}], "s": {"userId": 1, "device": "x"}}
    with pytest.raises(tinystore.InvalidError):
        await anything.set("k", object())


async def test_kv03_a_type_that_cannot_be_kept_is_refused_at_open(store: tinystore.Store) -> None:
    with pytest.raises(tinystore.InvalidError) as e:
        store.bucket("bad", dict[tuple[int, int], str])
    assert e.value.bucket == "bad"


def test_kv03_sync_values_too(sync_store: tinystore.sync.Store) -> None:
    sessions = sync_store.bucket("sessions", Session)
    sessions.set("k", Session(1, "cli"))
    assert sessions.get("k") == Session(1, "cli")
    assert sessions.take("k") == Session(1, "cli")
    assert sessions.take("k") is None




def test_kv03_what_json_cannot_keep_is_the_cores_text(sync_store: tinystore.sync.Store) -> None:
    anything = sync_store.bucket("anything")
    no_json = "the value cannot be written as JSON: "
    for value, text in [
        ({"a": b"x"}, no_json + "it holds bytes, which JSON has no way to write: keep them in a bytes bucket, or as text"),
        ({(1, 2): "x"}, no_json + "its keys are text, not tuple"),
        ([object()], no_json + "it holds a value of type object, which JSON has no way to write"),
    ]:
        with pytest.raises(tinystore.InvalidError) as e:
            anything.set("k", value)
        assert (e.value.message, e.value.bucket, e.value.path) == (text, "anything", "k")
    with pytest.raises(tinystore.InvalidError) as e:
        anything.set("k", [math.nan])
    assert e.value.message.startswith(no_json + "Out of range float"), e.value.message  # json's own words follow
    sync_store.bucket("anything", bytes).set("k", b"{no")
    with pytest.raises(tinystore.CorruptError) as c:
        anything.get("k")
    assert c.value.message.startswith("the row is not JSON: "), c.value.message
    assert sync_store.bucket("anything", bytes).get("k") == b"{no"
