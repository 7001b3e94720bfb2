"""The example chat's snippets (`chat_snippets.py`), run as written against a
real store, with a fake mailer and a fake database: the chat's sign-in,
sessions, limits and `once`, end to end; and the handles they open are the ones
the runnable chat and the package's README open."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import datetime as dt
import hashlib
import re
import secrets
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import chat_snippets as snippets
import tinystore
from conftest import START


@dataclasses.dataclass
class Response:
    """The chat's HTTP answer, as the snippets build it."""

    status: int
    retry_at: dt.datetime | None = None
    cookie: str | None = None
    left: int | None = None
    weekly: tinystore.WindowUsage | None = None


@dataclasses.dataclass
class User:
    id: int
    email: str


class FakeMailer:
    """Keeps the mails instead of sending them."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    async def send(self, email: str, text: str) -> None:
        self.sent.append((email, text))

    def last_code(self) -> str:
        match = re.search(r"\d{6}", self.sent[-1][1])
        assert match is not None
        return match.group(0)


@dataclasses.dataclass
class Done:
    last_insert_rowid: int


class FakeDatabase:
    """The chat's database: counts inserts, and lets the test hold one open."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.entered = asyncio.Event()  # an insert has begun

    async def exec(self, sql: str, *args: Any) -> Done:
        assert sql.startswith("insert into messages")
        self.entered.set()
        await self.gate.wait()
        self.rows.append(args)
        return Done(last_insert_rowid=40 + len(self.rows))


@dataclasses.dataclass
class Request:
    headers: dict[str, str]


async def run_snippet(src: str, ns: dict[str, Any]) -> Any:
    """Runs a snippet as the page shows it. Top-level `await` runs as is; a
    snippet with a top-level `return` is the body of a request handler, so it
    runs as one and its answer is returned."""
    try:
        code = compile(src, "<snippet>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as e:
        if "'return' outside function" not in str(e):
            raise
        handler = "async def __handler__():\n" + textwrap.indent(src, "    ")
        exec(compile(handler, "<snippet>", "exec", dont_inherit=True), ns)
        return await ns["__handler__"]()
    result = eval(code, ns)
    if asyncio.iscoroutine(result):
        await result
    return None


@pytest.fixture
def ns(store: tinystore.Store) -> dict[str, Any]:
    users: dict[str, User] = {}

    async def find_or_create_user(email: str) -> User:
        return users.setdefault(email, User(id=len(users) + 7, email=email))

    return {
        "__name__": "snippet",
        "store": store,
        "dataclass": dataclasses.dataclass,
        "hashlib": hashlib,
        "secrets": secrets,
        "time": time,
        "Response": Response,
        "mailer": FakeMailer(),
        "db": FakeDatabase(),
        "find_or_create_user": find_or_create_user,
    }


async def test_kv05_chat_sign_in_with_a_code(store: tinystore.Store, ns: dict[str, Any]) -> None:
    await run_snippet(snippets.OPEN_EVERYTHING, ns)
    await run_snippet(snippets.SIGN_IN, ns)
    await run_snippet(snippets.SESSIONS.split("\n\nawait ")[0], ns)  # the functions; the sign-outs run below
    mailer: FakeMailer = ns["mailer"]

    await ns["send_code"]("ada@example.com")
    code = mailer.last_code()
    assert ns["codes"].name == "sign-in-codes"
    assert await ns["codes"].get(code) is None  # the bucket keeps the digest, never the code

    signed_in = await ns["check_code"]("10.0.0.1", code)
    assert signed_in.status == 200 and signed_in.cookie.startswith("7.")
    used_again = await ns["check_code"]("10.0.0.1", code)
    assert used_again.status == 401  # take: a code works once

    await ns["send_code"]("ada@example.com")
    late = mailer.last_code()
    store.clock.advance("15m")
    assert (await ns["check_code"]("10.0.0.2", late)).status == 401  # expired

    wrong = [await ns["check_code"]("10.6.6.6", "000000") for _ in range(6)]
    assert [r.status for r in wrong] == [401] * 5 + [429]
    assert wrong[-1].retry_at == store.clock.now() + dt.timedelta(seconds=12)


async def test_kv08_chat_sessions_renew_and_sign_out(store: tinystore.Store, ns: dict[str, Any]) -> None:
    await run_snippet(snippets.OPEN_EVERYTHING, ns)
    await run_snippet(snippets.SIGN_IN, ns)
    await run_snippet(snippets.SESSIONS.split("\n\nawait ")[0], ns)
    start_session, current_user = ns["start_session"], ns["current_user"]

    web = (await start_session(7)).cookie
    phone = (await start_session(7, "phone")).cookie
    assert await current_user(web) == 7 and await current_user(phone) == 7

    store.clock.advance("29d")
    assert await current_user(web) == 7  # renews the 30 days
    await store.maintain()
    store.clock.advance("2d")
    assert await current_user(web) == 7
    assert await current_user(phone) is None  # idle for 31 days: signed out

    # The sign-outs, with the user and token of the web cookie.
    ns["user_id"], ns["token"] = web.split(".", 1)
    phone2 = (await start_session(7, "phone")).cookie
    other = (await start_session(8)).cookie
    await run_snippet(snippets.SESSIONS, ns)
    assert await current_user(web) is None and await current_user(phone2) is None
    assert await current_user(other) == 8  # another user's sessions stay


async def test_kv13_chat_limits_per_plan(store: tinystore.Store, ns: dict[str, Any]) -> None:
    await run_snippet(snippets.OPEN_EVERYTHING, ns)
    ns["user_id"] = 7
    answers = [await run_snippet(snippets.LIMITS_PER_PLAN, ns) for _ in range(101)]
    assert answers[:100] == [None] * 100  # allowed: the handler goes on
    refused = answers[100]
    assert refused.status == 429 and refused.left == 200
    assert refused.retry_at == START + dt.timedelta(hours=5)


async def test_kv11_chat_a_request_sent_twice_saves_once(store: tinystore.Store, ns: dict[str, Any]) -> None:
    await run_snippet(snippets.OPEN_EVERYTHING, ns)
    db: FakeDatabase = ns["db"]
    db.gate.clear()  # Request 1 is still saving when Request 2 arrives

    async def handle(text: str) -> Any:
        scope = dict(ns, chat_id=3, text=text, request=Request({"idempotency-key": "k7q2"}))
        await run_snippet(snippets.SENT_TWICE, scope)
        return scope["sent"]

    one = asyncio.ensure_future(handle("hello"))
    two = asyncio.ensure_future(handle("hello"))
    await asyncio.wait_for(db.entered.wait(), 10)  # Request 1 runs, held at the database
    assert not one.done() and not two.done()  # Request 2 waits for Request 1
    db.gate.set()
    sent1, sent2 = await one, await two
    assert sent1 == sent2 == ns["Sent"](id=41)
    assert len(db.rows) == 1  # the chat saved the message once
    assert await handle("hello") == ns["Sent"](id=41)
    assert len(db.rows) == 1


async def test_kv13_chat_quota_refund(store: tinystore.Store, ns: dict[str, Any]) -> None:
    ns["user_id"] = 7
    for _ in range(3):
        assert await run_snippet(snippets.QUOTA_REFUND, ns) is None  # each use is given back
    messages = store.quota("messages", session="100/5h", weekly="300/7d")  # the snippet's, in this test's scope
    assert (await messages.peek(7)).windows["weekly"].used == 0
    for _ in range(100):
        await messages.allow(7)
    refused = await run_snippet(snippets.QUOTA_REFUND, ns)
    assert refused.status == 429 and refused.retry_at == START + dt.timedelta(hours=5)
    assert refused.weekly == tinystore.WindowUsage(
        used=100, limit=300, left=200, resets_at=START + dt.timedelta(days=7)
    )


HANDLE_KINDS = {"bucket", "rate_limit", "quota", "once", "counters"}


def _handles(src: str) -> dict[str, str]:
    """The handles a piece of code opens on `store`: each one's name, and its
    call as source. A snippet inside a Markdown list is indented as a whole."""
    tree = compile(textwrap.dedent(src), "<snippet>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        f = node.value.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "store":
            if f.attr in HANDLE_KINDS:
                target = node.targets[0]
                name = target.attr if isinstance(target, ast.Attribute) else ast.unparse(target)
                found[name] = ast.unparse(node.value)
    return found


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("where", ["examples/python/chat.py", "python/README.md"])
def test_the_snippets_open_the_handles_the_chat_opens(where: str) -> None:
    text = (REPO / where).read_text()
    sources = re.findall(r"```python\n(.*?)```", text, re.S) if where.endswith(".md") else [text]
    theirs: dict[str, str] = {}
    for src in sources:
        theirs.update(_handles(src))
    ours: dict[str, str] = {}
    for src in snippets.BLOCKS:
        ours.update(_handles(src))
    assert set(ours) == {"codes", "sessions", "guesses", "messages", "sends"}
    assert {name: theirs.get(name) for name in ours} == ours, f"{where} opens its handles otherwise"
