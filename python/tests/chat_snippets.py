"""The example chat's steps as short snippets, the way a page of documentation
shows them: open every handle, sign in with a code, sessions, limits per plan,
a request sent twice, and a quota's refund. `test_chat_snippets.py` runs each of
them against a real store, and checks that they open the same handles as the
runnable chat (`examples/python/chat.py`) and the package's README."""

OPEN_EVERYTHING = """\
@dataclass
class Session:
    user_id: int
    device: str


@dataclass
class Sent:
    id: int


codes = store.bucket("sign-in-codes", int, ttl="15m")
sessions = store.bucket("sessions", Session, idle="30d")
guesses = store.rate_limit("sign-in-guesses", rate="5/m", burst=5)
messages = store.quota("messages", session="100/5h", weekly="300/7d")
sends = store.once("sends", Sent, keep="1d")


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
"""

SIGN_IN = """\
async def send_code(email: str) -> None:
    user = await find_or_create_user(email)
    code = str(secrets.randbelow(900000) + 100000)
    await codes.set(digest(code), user.id)
    await mailer.send(email, f"Your code is {code}")


async def check_code(ip: str, code: str):
    guess = await guesses.allow(ip)
    if not guess.ok:
        return Response(429, retry_at=guess.retry_at)

    user_id = await codes.take(digest(code))  # None if wrong, used or expired
    if user_id is None:
        return Response(401)
    return await start_session(user_id)
"""

SESSIONS = """\
async def start_session(user_id: int, device: str = "web"):
    token = secrets.token_urlsafe(32)
    await sessions.under(user_id).set(digest(token), Session(user_id=user_id, device=device))
    return Response(200, cookie=f"{user_id}.{token}")


async def current_user(cookie: str) -> int | None:
    user_id, token = cookie.split(".", 1)
    session = await sessions.under(user_id).get(digest(token))  # renews the 30 days
    return session.user_id if session else None


await sessions.under(user_id).delete(digest(token))  # sign out here
await sessions.under(user_id).clear()  # sign out everywhere
"""

LIMITS_PER_PLAN = """\
used = await messages.allow(user_id)
if not used.ok:
    return Response(429, retry_at=used.retry_at, left=used.windows["weekly"].left)
"""

SENT_TWICE = """\
async def save() -> Sent:
    done = await db.exec(
        "insert into messages (chat_id, role, text, created_at) values (?, 'user', ?, ?)",
        chat_id, text, time.time_ns() // 1_000_000,
    )
    return Sent(id=done.last_insert_rowid)


sent = await sends.run(request.headers["idempotency-key"], save)
"""

QUOTA_REFUND = """\
messages = store.quota("messages", session="100/5h", weekly="300/7d")

used = await messages.allow(user_id)
if not used.ok:
    return Response(429, retry_at=used.retry_at, weekly=used.windows["weekly"])
await messages.refund(user_id)  # the model failed: give the use back
"""

BLOCKS = [OPEN_EVERYTHING, SIGN_IN, SESSIONS, LIMITS_PER_PLAN, SENT_TWICE, QUOTA_REFUND]
