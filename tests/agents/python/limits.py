"""The limits commands of the Python agent: rate limits and flush_every
counters shared by every process (tests/processes/README.md, "Limits")."""

from __future__ import annotations

import sys
import time
from typing import Awaitable, Callable

import tinystore

COMMANDS = {"rate-race", "rate-spread", "fcounter-adds", "fcounter-get", "fcounter-forever", "limits-shell"}


def race_fcounter(store: tinystore.Store) -> tinystore.Counters:
    return store.counters("race-fcounter", flush_every="1s")


async def run(store: tinystore.Store, cmd: str, arg: Callable[[int], str], say: Callable[[str], None],
              start_line: Callable[[], Awaitable[None]]) -> bool:
    num = lambda i: int(arg(i)) if arg(i).isdigit() else 0  # noqa: E731
    if cmd == "rate-race":
        rl = store.rate_limit("race-rate", rate="20/s", burst=10)
        await start_line()
        start, first, passed = time.monotonic(), int(time.time() * 1000), 0
        while time.monotonic() - start < num(2) / 1000:
            passed += (await rl.allow("hot")).ok
        say(f"passed {passed} from {first} to {int(time.time() * 1000)}")
    elif cmd == "rate-spread":
        rl = store.rate_limit("race-once-per-key", rate="1/h")
        await start_line()
        passed = 0
        for i in range(num(3)):
            passed += (await rl.allow(f"{arg(2)}{i}")).ok
        say(f"passed {passed}")
    elif cmd == "fcounter-adds":
        c = race_fcounter(store)
        await start_line()
        for _ in range(num(2)):
            await c.add("k", 1)
        say("done")
    elif cmd == "fcounter-get":
        say(f"value {await race_fcounter(store).get(arg(2))}")
    elif cmd == "fcounter-forever":
        c, n = race_fcounter(store), 0
        while True:
            await c.add("k", 1)
            n += 1
            say(f"added {n}")
    elif cmd == "limits-shell":
        await shell(store, say)
    else:
        return False
    return True


async def shell(store: tinystore.Store, say: Callable[[str], None]) -> None:
    """One command a line from standard input, until it ends or says quit.
    Its limit lets 10 through at once and one more an hour, so that a
    test's own pace refills nothing."""
    rl = store.rate_limit("race-shell", rate="1/h", burst=10)
    c = race_fcounter(store)
    say("ready")
    for line in sys.stdin:
        w = line.split()
        if len(w) == 2 and w[0] == "allow":
            say("ok" if (await rl.allow(w[1])).ok else "refused")
        elif len(w) == 2 and w[0] == "peek":
            say(f"left {(await rl.peek(w[1])).left}")
        elif len(w) == 2 and w[0] == "reset":
            await rl.reset(w[1])
            say("reset")
        elif len(w) == 3 and w[0] == "add":
            say(f"value {await c.add(w[1], int(w[2]))}")
        elif len(w) == 2 and w[0] == "get":
            say(f"value {await c.get(w[1])}")
        elif w == ["quit"]:
            return
        else:
            say(f"unknown {line.strip()!r}")
