"""The handbook's handles ("Sessions and limits", and the quota guide),
declared exactly as the chapter declares them in Python, for the commands of
``tests/interchange/handbook.md``: ``hb-write`` writes what the chat writes,
``hb-read`` reads what another language's chat wrote, ``hb-take`` signs in
with another language's code and signs its user out.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import tinystore


@dataclass
class Session:
    user_id: int
    device: str


@dataclass
class Sent:
    id: int


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class Chat:
    """The chapter's five handles."""

    def __init__(self, store: tinystore.Store) -> None:
        codes = store.bucket("sign-in-codes", int, ttl="15m")
        sessions = store.bucket("sessions", Session, idle="30d")
        guesses = store.rate_limit("sign-in-guesses", rate="5/m", burst=5)
        messages = store.quota("messages", session="100/5h", weekly="300/7d")
        sends = store.once("sends", Sent, keep="1d")
        self.codes, self.sessions, self.guesses, self.messages, self.sends = codes, sessions, guesses, messages, sends


class Checks:
    """Counts what does not match, printing a line for each."""

    def __init__(self, owner: str) -> None:
        self.owner, self.bad = owner, 0

    def check(self, what: str, ok: bool, got: Any) -> None:
        if not ok:
            self.bad += 1
            print(f"MISMATCH {self.owner} {what}: got {got!r}", flush=True)


async def attempt(call: Any) -> Any:
    """The answer of a call, or the error it raised (to show, not to raise)."""
    try:
        return await call
    except tinystore.Error as e:
        return e


async def write(store: tinystore.Store, owner: str, user_id: int) -> bool:
    chat = Chat(store)
    await chat.codes.set(digest(f"{owner}-code"), user_id)
    await chat.codes.set(digest(f"{owner}-code-to-take"), user_id)
    await chat.sessions.under(user_id).set(digest(f"{owner}-token"), Session(user_id=user_id, device="web"))
    for _ in range(5):
        await chat.guesses.allow(f"{owner}-ip")
    await chat.messages.allow(user_id)

    async def save() -> Sent:
        return Sent(id=user_id * 10 + 1)

    await chat.sends.run(f"{owner}-request", save)
    print("ok", flush=True)
    return True


async def read(store: tinystore.Store, owner: str, user_id: int) -> bool:
    chat, c = Chat(store), Checks(owner)
    code = await attempt(chat.codes.get(digest(f"{owner}-code")))
    c.check("sign-in-codes get", code == user_id and type(code) is int, code)
    session = await attempt(chat.sessions.under(user_id).get(digest(f"{owner}-token")))
    c.check("sessions get", session == Session(user_id=user_id, device="web"), session)
    guess = await attempt(chat.guesses.peek(f"{owner}-ip"))
    c.check("sign-in-guesses peek", not isinstance(guess, Exception) and guess.left <= 3, guess)
    used = await attempt(chat.messages.peek(user_id))
    c.check("messages peek", not isinstance(used, Exception) and counted_once(used), used)
    ran = False

    async def save() -> Sent:
        nonlocal ran
        ran = True
        return Sent(id=0)

    sent = await attempt(chat.sends.run(f"{owner}-request", save))
    c.check("sends run", not ran and sent == Sent(id=user_id * 10 + 1), (ran, sent))
    if c.bad == 0:
        print("ok 5", flush=True)
    return c.bad == 0


def counted_once(a: Any) -> bool:
    """One use in each window of the quota, and the guide's limits."""
    w = a.windows
    return bool(
        a.ok
        and (w["session"].used, w["session"].limit) == (1, 100)
        and (w["weekly"].used, w["weekly"].limit) == (1, 300)
    )


async def take(store: tinystore.Store, owner: str, user_id: int) -> bool:
    chat, c = Chat(store), Checks(owner)
    key = digest(f"{owner}-code-to-take")
    first = await attempt(chat.codes.take(key))
    c.check("sign-in-codes take", first == user_id, first)
    second = await attempt(chat.codes.take(key))
    c.check("sign-in-codes take again", second is None, second)
    await chat.sessions.under(user_id).clear()
    gone = await attempt(chat.sessions.under(user_id).has(digest(f"{owner}-token")))
    c.check("sessions clear", gone is False, gone)
    if c.bad == 0:
        print("ok 3", flush=True)
    return c.bad == 0
