"""KV-20: typed settings from layers, in Python (a dataclass and a pydantic model)."""

from __future__ import annotations

import asyncio
import datetime as dt
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pydantic
import pytest

import tinystore


@dataclass
class Limits:
    rps: int = 100
    burst: int = 20


@dataclass
class Settings:
    port: int = 8080
    host: str = "localhost"
    ratio: float = 0.5
    debug: bool = False
    timeout: dt.timedelta = dt.timedelta(seconds=30)
    hosts: list[str] = field(default_factory=list)
    extra: dict[str, object] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    token: str = field(default="dev-token", metadata={"secret": True})

    def __post_init__(self) -> None:
        if self.limits.burst > self.limits.rps:
            raise ValueError(f"burst {self.limits.burst} is over rps {self.limits.rps}")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[tinystore.Store]:
    async with tinystore.open(tmp_path / "data") as s:
        yield s


def test_kv20_layers_in_order(store: tinystore.Store, tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("APP_LIMITS_RPS=150\nAPP_LIMITS_BURST=30\nAPP_HOST=from-file\n")
    cfg = tinystore.open_config(
        store,
        "app",
        Settings,
        layers=[{"port": 9000, "limits": {"rps": 120}, "host": "from-map"}],
        env_prefix="APP",
        env_files=[env_file],
        environ={"APP_LIMITS_BURST": "40"},
    )
    s = cfg.get()
    assert s.ratio == 0.5  # the class's default
    assert s.port == 9000  # a defaults mapping over it
    assert s.host == "from-file"  # a .env file over the mapping
    assert s.limits == Limits(rps=150, burst=40)  # the process's variable over the file
    by_path = {src.path: src for src in cfg.sources()}
    assert by_path["ratio"].origin == "default"
    assert by_path["port"].origin == "defaults"
    assert by_path["host"].origin == "env_file" and by_path["host"].detail["var"] == "APP_HOST"
    assert by_path["limits.burst"].origin == "env"
    assert "token" not in by_path  # sources hide a secret field


async def test_kv20_update_and_reset(store: tinystore.Store) -> None:
    cfg = tinystore.open_config(store, "app", Settings)
    other = tinystore.open_config(store, "app", Settings)

    def change(s: Settings) -> None:
        s.limits.rps = 200
        s.timeout = dt.timedelta(seconds=5)

    await cfg.update(change)
    assert other.get().limits.rps == 200  # every handle sees it at once
    assert other.get().timeout == dt.timedelta(seconds=5)
    assert {s.path: s.origin for s in other.sources()}["limits.rps"] == "kept"

    def too_much(s: Settings) -> None:
        s.port = 1
        s.limits.burst = 500

    with pytest.raises(tinystore.InvalidError, match="burst 500 is over rps 200"):
        await cfg.update(too_much)
    assert cfg.get().port == 8080  # refused whole: nothing written

    def wrong_type(s: Settings) -> None:
        s.port = "eighty"  # type: ignore[assignment]

    with pytest.raises(tinystore.InvalidError, match="port"):
        await cfg.update(wrong_type)
    with pytest.raises(tinystore.InvalidError, match="secret"):
        await cfg.update(lambda s: setattr(s, "token", "stolen"))
    await cfg.reset("limits")
    assert cfg.get().limits == Limits()
    assert cfg.get().timeout == dt.timedelta(seconds=5)
    await cfg.reset("timeout")
    assert other.get() == Settings()
    with pytest.raises(tinystore.InvalidError, match="nope"):
        await cfg.reset("nope")


def test_kv20_env_parses_each_type(store: tinystore.Store) -> None:
    environ = {
        "APP_PORT": "9090",
        "APP_HOST": "example.org",
        "APP_RATIO": "0.25",
        "APP_DEBUG": "yes",
        "APP_TIMEOUT": "1h30m",
        "APP_HOSTS": "a.com,b.com",
        "APP_EXTRA": '{"k": [1, 2]}',
    }
    s = tinystore.open_config(store, "app", Settings, env_prefix="APP", environ=environ).get()
    assert (s.port, s.host, s.ratio, s.debug) == (9090, "example.org", 0.25, True)
    assert s.timeout == dt.timedelta(hours=1, minutes=30)
    assert s.hosts == ["a.com", "b.com"]
    assert s.extra == {"k": [1, 2]}


@pytest.mark.parametrize(
    ("var", "text"),
    [("APP_PORT", "80x"), ("APP_DEBUG", "maybe"), ("APP_TIMEOUT", "90mins"), ("APP_EXTRA", "{no"), ("APP_RATIO", "x")],
)
def test_kv20_bad_variable_names_itself(store: tinystore.Store, var: str, text: str) -> None:
    with pytest.raises(tinystore.InvalidError, match=var):
        tinystore.open_config(store, "app", Settings, env_prefix="APP", environ={var: text})


class Database(pydantic.BaseModel):
    url: str = pydantic.Field(default="", json_schema_extra={"required": True, "env": "DATABASE_URL"})
    password: str = pydantic.Field(default="", json_schema_extra={"secret": True})
    pool: int = 5

    @pydantic.field_validator("pool")
    @classmethod
    def pool_positive(cls, v: int) -> int:
        if v < 1:
            raise ValueError("pool must be at least 1")
        return v


async def test_kv20_secret_and_required_fields(store: tinystore.Store) -> None:
    with pytest.raises(tinystore.InvalidError, match="DATABASE_URL"):
        tinystore.open_config(store, "db", Database, env_prefix="APP", environ={})
    cfg = tinystore.open_config(
        store, "db", Database, env_prefix="APP", environ={"DATABASE_URL": "postgres://x", "APP_PASSWORD": "s3cret"}
    )
    assert cfg.get().password == "s3cret"  # a secret comes from the environment
    with pytest.raises(tinystore.InvalidError, match="required"):
        await cfg.update(lambda d: setattr(d, "url", ""))
    with pytest.raises(tinystore.InvalidError, match="secret"):
        await cfg.update(lambda d: setattr(d, "password", "other"))
    with pytest.raises(tinystore.InvalidError, match="pool must be at least 1"):
        await cfg.update(lambda d: d.model_copy(update={"pool": 0}))
    await cfg.update(lambda d: d.model_copy(update={"pool": 9}))
    assert cfg.get().pool == 9


async def test_kv20_kept_value_that_no_longer_fits(store: tinystore.Store) -> None:
    cfg = tinystore.open_config(store, "app", Settings)

    def change(s: Settings) -> None:
        s.host = "kept.example"
        s.port = 7000

    await cfg.update(change)

    @dataclass
    class Changed:  # the program changed: port is text, host a number
        port: str = "p"
        host: int = 1

    changed = tinystore.open_config(store, "app", Changed)
    assert changed.get() == Changed()
    left = {s.path: s.left_out for s in changed.sources()}
    assert "no longer fits" in (left["host"] or "")
    back = tinystore.open_config(store, "app", Settings)
    assert back.get().port == 7000  # the kept values are used again


CHILD = """
import asyncio, sys
sys.path.insert(0, sys.argv[2])
import tinystore
from test_kv20_config import Settings

async def main() -> None:
    async with tinystore.open(sys.argv[1]) as store:
        cfg = tinystore.open_config(store, "app", Settings)
        await cfg.update(lambda s: setattr(s.limits, "rps", 777))

asyncio.run(main())
"""


async def test_kv20_watch_sees_another_process(store: tinystore.Store) -> None:
    cfg = tinystore.open_config(store, "app", Settings)
    changes = cfg.watch(timeout=5)
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", CHILD, store.dir, str(Path(__file__).parent))
    assert await proc.wait() == 0
    committed = time.monotonic()
    seen = await asyncio.wait_for(anext(changes), timeout=1.0)
    assert seen.limits.rps == 777
    assert time.monotonic() - committed < 1.0
    await cfg.update(lambda s: setattr(s, "port", 1234))
    seen = await asyncio.wait_for(anext(changes), timeout=0.5)  # this process's own change, at once
    assert seen.port == 1234
    await changes.aclose()


def test_kv20_a_watch_ends_at_its_timeout_or_when_the_store_closes(tmp_path: Path) -> None:
    with tinystore.sync.open(tmp_path / "data") as store:
        cfg = tinystore.sync.open_config(store, "app", Settings)
        started = time.monotonic()
        assert list(cfg.watch(timeout=0.3)) == []  # no change within its timeout
        assert 0.3 <= time.monotonic() - started < 2
        with pytest.raises(tinystore.InvalidError) as e:
            cfg.watch(timeout=-1)
        assert e.value.message == "a watch's timeout is -1000 ms: a span of time is from 0 to 2^53 - 1 ms, never negative"
        changes = cfg.watch()
    assert list(changes) == []  # the store closed


async def test_kv20_an_async_watch_ends_at_its_timeout_or_when_the_store_closes(tmp_path: Path) -> None:
    store = await tinystore.open(tmp_path / "data")
    cfg = tinystore.open_config(store, "app", Settings)
    assert [s async for s in cfg.watch(timeout=0.3)] == []  # no change within its timeout
    changes = cfg.watch()
    last = asyncio.ensure_future(anext(changes))
    await asyncio.sleep(0.05)
    await store.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(last, timeout=2)


def test_kv20_rows_kept_in_kv_db(store: tinystore.Store) -> None:
    tinystore.open_config(store, "app", Settings)
    assert ("app", "config") in store.names()


def test_kv20_sync_update_reset_and_watch(tmp_path: Path) -> None:
    with tinystore.sync.open(tmp_path / "data") as store:
        cfg = tinystore.sync.open_config(store, "app", Settings)
        other = tinystore.sync.open_config(store, "app", Settings)
        changes = cfg.watch(timeout=2)
        cfg.update(lambda s: setattr(s.limits, "rps", 300))
        assert next(changes).limits.rps == 300  # the watcher sees it
        assert other.get().limits.rps == 300  # and every handle, at once
        with pytest.raises(tinystore.InvalidError, match="burst 400 is over rps 300"):
            cfg.update(lambda s: setattr(s.limits, "burst", 400))
        cfg.reset("limits")
        assert other.get().limits == Limits()


def test_kv20_from_env_stands_where_it_is_given(store: tinystore.Store) -> None:
    from_file = {"port": 7070}
    env = tinystore.FromEnv("APP", environ={"APP_PORT": "9090"})
    over = tinystore.open_config(store, "over", Settings, layers=[env, from_file])
    assert over.get().port == 7070  # a mapping after the environment is over it
    under = tinystore.open_config(store, "under", Settings, layers=[from_file, env])
    assert under.get().port == 9090
    with pytest.raises(tinystore.InvalidError, match=r"^invalid: the environment is one layer: give FromEnv once \(bucket twice\)$"):
        tinystore.open_config(store, "twice", Settings, layers=[env], env_prefix="APP")


@dataclass
class Server:
    HTTPServer: str = ""
    userID: int = 0


def test_kv20_a_variable_is_the_path_in_upper_snake_case(store: tinystore.Store) -> None:
    cfg = tinystore.open_config(
        store, "server", Server, env_prefix="APP", environ={"APP_HTTP_SERVER": "0.0.0.0:80", "APP_USER_ID": "7"}
    )
    assert cfg.get() == Server(HTTPServer="0.0.0.0:80", userID=7)


def test_kv20_every_bad_variable_and_missing_field_in_one_error(store: tinystore.Store) -> None:
    with pytest.raises(tinystore.InvalidError) as e:
        tinystore.open_config(store, "db", Database, env_prefix="APP", environ={"APP_POOL": "many"})
    for want in ("APP_POOL", "DATABASE_URL", "2 problems"):
        assert want in str(e.value)


def test_kv20_layers_the_class_refuses_are_refused_at_open(store: tinystore.Store) -> None:
    with pytest.raises(tinystore.InvalidError, match="layers are refused.*burst 500 is over rps 100"):
        tinystore.open_config(store, "app", Settings, layers=[{"limits": {"burst": 500}}])


def test_kv20_dotenv_as_people_write_it(store: tinystore.Store, tmp_path: Path) -> None:
    pem = "-----BEGIN KEY-----\nMIIB\n-----END KEY-----"
    env_file = tmp_path / ".env"
    env_file.write_text(f'APP_HOST="{pem}"\nAPP_PORT=9090\n')
    cfg = tinystore.open_config(store, "app", Settings, env_prefix="APP", env_files=[env_file], environ={})
    assert (cfg.get().host, cfg.get().port) == (pem, 9090)
    env_file.write_text("1APP_PORT=1\n")
    with pytest.raises(tinystore.InvalidError, match="must not start with a digit"):
        tinystore.open_config(store, "other", Settings, env_prefix="APP", env_files=[env_file], environ={})
