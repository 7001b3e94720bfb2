"""Rate limits and flush_every counters across processes (KV-12, KV-14):
every process on one kv.db shares one budget a key and one sum a counter.
Run by tests/cross.py, whose agents and checks these use; the commands are
in tests/processes/README.md, "Limits"."""

from __future__ import annotations

import subprocess
from typing import Callable

from cross_places import on_postgres, place

# The hot limit of the agents: 20 a second, 10 at once; the shell's limit
# lets 10 through at once and refills one an hour.
RATE_PER_S, BURST = 20, 10


def passed_of(lines: list[str]) -> int:
    return int(next((line.split()[1] for line in lines if line.startswith("passed ")), "0"))


class Shell:
    """An agent's `limits-shell`: a process that keeps the store open and
    answers one command a line."""

    def __init__(self, agent, d: str) -> None:
        self.agent = agent
        self.proc = subprocess.Popen(agent.argv + ["limits-shell", d], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.ready = self.ask(None) == "ready"

    def ask(self, line: str | None) -> str:
        if line is not None:
            assert self.proc.stdin
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        assert self.proc.stdout
        return self.proc.stdout.readline().strip()

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def run_all(agents, check: Callable[[bool, str], None], start_line: Callable[[], dict[str, str]]) -> None:
    # Two processes of every language at once.
    racers = [a for a in agents for _ in range(2)]
    hot_key(racers, check, start_line)
    once_per_key(racers, check, start_line)
    counter_sums(racers, agents, check, start_line)
    killed(agents, check)
    if on_postgres():
        # A reset reaches another server's cache within a second there
        # (docs/postgres.md), and the 100,000-key bound is of kv.db's
        # shared memory, which PostgreSQL has no use for.
        return
    peek_and_reset(agents, check)
    bound(agents, check, start_line)


def hot_key(racers, check, start_line) -> None:
    n = len(racers)
    print(f"\nrate limit (KV-12): {n} processes on one hot key share one budget", flush=True)
    with place() as d:
        line = start_line()
        running = [a.start("rate-race", d, "1500", env=line) for a in racers]
        outs = [r.finish() for r in running]
        spans, total = [], 0
        for r, out in zip(running, outs):
            said = next((x for x in out if x.startswith("passed ")), "")
            words = said.split()
            if len(words) != 6:
                check(False, f"{r.agent.name} said {out[-1:]}")
                return
            total += int(words[1])
            spans.append((int(words[3]), int(words[5])))
        secs = (max(e for _, e in spans) - min(s for s, _ in spans)) / 1000
        bound = BURST + RATE_PER_S * secs + 1
        check(BURST <= total <= bound,
              f"{total} passed in {secs:.2f} s, within burst + rate x T = {bound:.0f} "
              f"(one process alone would get the same)")


def once_per_key(racers, check, start_line) -> None:
    keys = 3000
    print(f"\nrate limit (KV-12): {len(racers)} processes race on {keys} new keys of burst 1", flush=True)
    with place() as d:
        line = start_line()
        running = [a.start("rate-spread", d, "key-", str(keys), env=line) for a in racers]
        passed = {f"{r.agent.name}#{i}": passed_of(r.finish()) for i, r in enumerate(running)}
        check(sum(passed.values()) == keys, f"each key passed once in all: {sum(passed.values())} of {keys} ({passed})")


def peek_and_reset(agents, check) -> None:
    print("\nrate limit (KV-12): peek and reset in one process are seen at once by another", flush=True)
    for i, a in enumerate(agents):
        b = agents[(i + 1) % len(agents)]
        with place() as d:
            sa, sb = Shell(a, d), Shell(b, d)
            try:
                spent = [sa.ask("allow ip") for _ in range(BURST + 1)]
                left_b = sb.ask("peek ip")
                reset = sb.ask("reset ip")
                left_a = sa.ask("peek ip")
                check(sa.ready and sb.ready and spent == ["ok"] * BURST + ["refused"] and left_b == "left 0"
                      and reset == "reset" and left_a == f"left {BURST}",
                      f"{a.name} spends the burst ({spent.count('ok')} ok), {b.name} sees {left_b!r} and resets "
                      f"({reset!r}), {a.name} sees {left_a!r}")
            finally:
                sa.close()
                sb.close()


def counter_sums(racers, agents, check, start_line) -> None:
    adds = 2000
    print(f"\ncounters (KV-14): {len(racers)} processes add to one flush_every counter", flush=True)
    with place() as d:
        reader = Shell(agents[-1], d)
        try:
            line = start_line()
            for r in [a.start("fcounter-adds", d, str(adds), env=line) for a in racers]:
                r.finish()
            want = adds * len(racers)
            seen = reader.ask("get k")
            check(seen == f"value {want}", f"{agents[-1].name}, open all along, reads {seen!r} at once; want {want}")
        finally:
            reader.close()
        for a in agents:
            out = a.run("fcounter-get", d, "k")
            check(f"value {want}" in out, f"{a.name} reads {out} after a reopen")


def killed(agents, check) -> None:
    print("\ncounters (KV-14): a process killed with SIGKILL while it adds; the others keep counting", flush=True)
    for i, victim in enumerate(agents):
        heir = agents[(i + 1) % len(agents)]
        with place() as d:
            keeper = Shell(heir, d)  # another process on the table throughout
            try:
                v = victim.start("fcounter-forever", d)
                ok = v.wait_line("added 300")
                v.proc.kill()
                out = v.finish()
                done = max((int(x.split()[1]) for x in out if x.startswith("added ")), default=0)
                # An add that returned was in the table; one more may have been
                # made before its line was printed.
                seen = keeper.ask("get k")
                check(ok and seen in (f"value {done}", f"value {done + 1}"),
                      f"{victim.name} killed after {done} adds; {heir.name} reads {seen!r} at once")
                heir.run("fcounter-adds", d, "500")
                after = keeper.ask("get k")
                # New keys go in under a lock the killed process may have held.
                spread = heir.run("rate-spread", d, "after-kill-", "50")
                check(passed_of(spread) == 50, f"{heir.name} puts new keys in after the kill: {spread}")
            finally:
                keeper.close()
            got = victim.run("fcounter-get", d, "k")
            check(got[-1:] == [after] and after in (f"value {done + 500}", f"value {done + 501}"),
                  f"{heir.name} added 500 ({after!r}); after every process closed, {victim.name} reads {got[-1:]}")


def bound(agents, check, start_line) -> None:
    per = 30_000
    print(f"\nrate limit (KV-12): {len(agents)} processes pass the 100,000-key bound together", flush=True)
    with place() as d:
        line = start_line()
        running = [a.start("rate-spread", d, f"{a.name}-", str(per), env=line) for a in agents]
        passed = {r.agent.name: passed_of(r.finish(timeout=300)) for r in running}
        check(all(p == per for p in passed.values()), f"every new key passed once, past the bound: {passed}")
        again = agents[0].run("rate-spread", d, f"{agents[-1].name}-", str(per), timeout=300)
        check(passed_of(again) == 0,
              f"{agents[0].name} finds every key of {agents[-1].name} spent, none forgotten: {again}")
