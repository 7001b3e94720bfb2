"""The example chat (sign-in codes, sessions and limits), in Python, on a local store.

``python chat.py data`` signs a user in with a one-time code, keeps them
signed in, limits their guesses and messages, and answers a request sent
twice only once, printing what happens. It shares ``data/kv.db`` with the
chats of the other languages (``make demo``): the same bucket names, and
values every language reads (a session is ``{"userId", "device"}``, a sent
message ``{"id"}``). The chat's own table lives in ``data/chat-python.db``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import hashlib
import math
import secrets
import sqlite3
import sys
import time
from pathlib import Path

import tinystore


@dataclasses.dataclass
class Session:
    """A signed-in device of a user."""

    user_id: int
    device: str


@dataclasses.dataclass
class Sent:
    """The answer to a message request: the id of the saved message."""

    id: int


@dataclasses.dataclass
class Response:
    """What the chat's HTTP handler would answer."""

    status: int
    cookie: str | None = None
    retry_at: dt.datetime | None = None


def digest(secret: str) -> str:
    """The key a secret is kept under: a leaked kv.db holds no code or token."""
    return hashlib.sha256(secret.encode()).hexdigest()


def mail(to: str, body: str) -> None:
    """A mailer that prints instead of sending."""
    print(f"  [mail to {to}] {body}")


def seconds_until(at: dt.datetime | None) -> float:
    """Seconds from now (the store's clock is the real one here) until ``at``."""
    if at is None:
        return 0.0
    return max(0.0, (at - dt.datetime.now(dt.timezone.utc)).total_seconds())


class Chat:
    """The chat's handles on the store, and its own database of messages."""

    def __init__(self, store: tinystore.Store, dir: Path) -> None:
        self.codes = store.bucket("sign-in-codes", int, ttl="15m")
        self.sessions = store.bucket("sessions", Session, idle="30d")
        self.guesses = store.rate_limit("sign-in-guesses", rate="5/m", burst=5)
        self.messages = store.quota("messages", session="100/5h", weekly="300/7d")
        self.sends = store.once("sends", Sent, keep="1d")
        # A file of its own: the package's README warns against opening kv.db
        # itself with the standard library's sqlite3 while the store is open.
        self.db = sqlite3.connect(dir / "chat-python.db", isolation_level=None)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS messages"
            " (id INTEGER PRIMARY KEY, chat_id INTEGER, role TEXT, text TEXT, created_at INTEGER)"
        )

    async def send_code(self, email: str, user_id: int) -> str:
        code = str(secrets.randbelow(900000) + 100000)
        await self.codes.set(digest(code), user_id)
        mail(email, f"Your code is {code}")
        return code

    async def check_code(self, ip: str, code: str) -> Response:
        guess = await self.guesses.allow(ip)
        if not guess.ok:
            return Response(429, retry_at=guess.retry_at)
        user_id = await self.codes.take(digest(code))  # None if wrong, used or expired
        if user_id is None:
            return Response(401)
        return await self.start_session(user_id)

    async def start_session(self, user_id: int, device: str = "web") -> Response:
        token = secrets.token_urlsafe(32)
        await self.sessions.under(user_id).set(digest(token), Session(user_id=user_id, device=device))
        return Response(200, cookie=f"{user_id}.{token}")

    async def current_user(self, cookie: str) -> int | None:
        user_id, _, token = cookie.partition(".")
        session = await self.sessions.under(user_id).get(digest(token))  # renews the 30 days
        return session.user_id if session else None

    async def save_message(self, idempotency_key: str, chat_id: int, text: str) -> Sent:
        async def save() -> Sent:
            done = self.db.execute(
                "INSERT INTO messages (chat_id, role, text, created_at) VALUES (?, 'user', ?, ?)",
                (chat_id, text, time.time_ns() // 1_000_000),
            )
            assert done.lastrowid is not None
            return Sent(id=done.lastrowid)

        return await self.sends.run(idempotency_key, save)


async def main(dir: Path) -> None:
    async with tinystore.open(dir) as store:
        chat = Chat(store, dir)
        # Numbers and addresses apart from the Rust chat's (1000-9999, 203.0.113.x),
        # since `make demo` runs every language's chat on one store.
        user_id = 20000 + secrets.randbelow(10000)
        ip = f"198.51.100.{secrets.randbelow(250) + 1}"
        print(f"Python chat on {dir}/kv.db, user {user_id} from {ip}")

        print("\n1. Sign in with a code")
        code = await chat.send_code("ada@example.com", user_id)
        if (await chat.check_code(ip, "000000")).status == 401:
            print("  a wrong code is refused (401)")
        else:
            print("  unexpected: a wrong code passed")
        signed_in = await chat.check_code(ip, code)
        if signed_in.status != 200 or signed_in.cookie is None:
            raise SystemExit(f"the right code was refused ({signed_in.status})")
        cookie = signed_in.cookie
        print(f"  the right code signs in; cookie {cookie[:12]}…")
        if (await chat.check_code(ip, code)).status == 401:
            print("  the same code again is refused: take lets a code work once")
        else:
            print("  unexpected: a used code passed")
        for n in range(4, 7):
            guess = await chat.check_code(ip, "123456")
            if guess.status == 429:
                print(f"  guess {n} in a minute from {ip} is refused: retry in {math.ceil(seconds_until(guess.retry_at))}s")
            else:
                print(f"  guess {n} in a minute: wrong code")

        print("\n2. Sessions")
        print(f"  current user from the cookie: {await chat.current_user(cookie)} (the read renews the 30 days)")
        phone = (await chat.start_session(user_id, "phone")).cookie
        assert phone is not None
        token = cookie.partition(".")[2]
        await chat.sessions.under(user_id).delete(digest(token))  # sign out here
        print(
            f"  signed out here: web session -> {await chat.current_user(cookie)},"
            f" phone session -> {await chat.current_user(phone)}"
        )
        await chat.sessions.under(user_id).clear()  # sign out everywhere
        print(f"  signed out everywhere: phone session -> {await chat.current_user(phone)}")

        print("\n3. Limits per plan (100 messages per 5 hours, 300 per week)")
        for _ in range(100):
            used = await chat.messages.allow(user_id)
        print(f"  100 messages pass; weekly left: {used.windows['weekly'].left}")
        refused = await chat.messages.allow(user_id)
        session = refused.windows["session"]
        print(
            f"  message 101 is refused (ok={str(refused.ok).lower()}): the 5-hour window resets in"
            f" {seconds_until(session.resets_at) / 60:.0f}m; the weekly window still has"
            f" {refused.windows['weekly'].left} left"
        )
        await chat.messages.refund(user_id)
        print(f"  the model failed once: refund gives a use back (left now {(await chat.messages.peek(user_id)).left})")

        print("\n4. Requests sent twice")
        key = f"k7q2-python-{user_id}"
        first = await chat.save_message(key, 1, "hello")
        retry = await chat.save_message(key, 1, "hello")
        (rows,) = chat.db.execute("SELECT count(*) FROM messages WHERE text = 'hello' AND id = ?", (first.id,)).fetchone()
        print(f"  first request saved message {first.id}; the retry got message {retry.id} ({rows} row in chat.db)")
        chat.db.close()
    print("\nPython chat: done.")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1] if len(sys.argv) > 1 else "data")))
