#!/usr/bin/env python3
"""Cross-language tests: interchange and processes on one kv.db, and the
processes again on one PostgreSQL database (`--postgres URL`).

Every language has an agent (tests/agents/<language>) with the commands of
tests/interchange/README.md and tests/processes/README.md. This driver runs
them against shared stores and checks what the contract promises across
languages and processes (KV-3, KV-5, KV-8, KV-11, KV-13, KV-14, KV-19), and that
the handbook's declarations, as each language writes them, share their rows
(tests/interchange/handbook.md).

    python3 tests/cross.py --agent rust=target/debug/tinystore-agent \
        --agent python="python/.venv/bin/python tests/agents/python/agent.py" ...
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import cross_clear
import cross_limits
from cross_places import on_postgres, place, use_postgres

# A run whose process died is taken over within ONCE_LEASE + ONCE_POLL (core).
ONCE_BOUND_S = 5.1
failures: list[str] = []


def check(ok: bool, what: str) -> None:
    print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)
    if not ok:
        failures.append(what)


class Agent:
    """One language's agent command."""

    def __init__(self, name: str, command: str) -> None:
        self.name = name
        self.argv = shlex.split(command)

    def run(self, *args: str, timeout: float = 120) -> list[str]:
        """Runs a command to its end; returns its output lines."""
        p = subprocess.run(self.argv + list(args), capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            failures.append(f"{self.name} {' '.join(args)} exited {p.returncode}")
            print(f"  FAIL {self.name} {' '.join(args)}: exit {p.returncode}\n{p.stdout}{p.stderr}", flush=True)
        return p.stdout.splitlines()

    def start(self, *args: str, env: dict[str, str] | None = None) -> "Running":
        return Running(
            self,
            subprocess.Popen(self.argv + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, **(env or {})}),
        )


class Running:
    """An agent running in the background, its lines read as they come."""

    def __init__(self, agent: Agent, proc: subprocess.Popen) -> None:
        self.agent, self.proc, self.lines = agent, proc, []
        self.cv = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout
        for line in self.proc.stdout:
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()

    def wait_line(self, text: str, timeout: float = 60) -> bool:
        end = time.monotonic() + timeout
        with self.cv:
            while text not in self.lines:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.cv.wait(left)
        return True

    def finish(self, timeout: float = 120) -> list[str]:
        self.proc.wait(timeout=timeout)
        self.reader.join(timeout)  # the reader ends at the end of the output
        if self.proc.returncode not in (0, -9):
            err = self.proc.stderr.read() if self.proc.stderr else ""
            failures.append(f"{self.agent.name} exited {self.proc.returncode}: {err.strip()[:300]}")
        with self.cv:
            return list(self.lines)


def interchange(agents: list[Agent]) -> None:
    print("\ninterchange (KV-3): every language reads what every language wrote", flush=True)
    with place() as d:
        for a in agents:
            a.run("ix-write", d, a.name)
        for reader in agents:
            for writer in agents:
                out = reader.run("ix-read", d, writer.name)
                ok = any(line.startswith("ok ") for line in out)
                check(ok, f"{reader.name} reads what {writer.name} wrote" + ("" if ok else ": " + "; ".join(out[:3])))


def handbook(agents: list[Agent]) -> None:
    print("\nthe handbook's declarations (KV-3): every language reads what every language's chat wrote", flush=True)
    with place() as d:
        # Each writer's user is its own; its readers run right after it, while
        # its rate limit is still short of the burst it used (5 a minute).
        users = {a.name: str(i + 1) for i, a in enumerate(agents)}
        for writer in agents:
            wrote = writer.run("hb-write", d, writer.name, users[writer.name])
            check("ok" in wrote, f"{writer.name}'s chat writes its user's code, session, guesses, messages and send")
            for reader in agents:
                out = reader.run("hb-read", d, writer.name, users[writer.name])
                ok = "ok 5" in out
                check(ok, f"{reader.name} reads what {writer.name}'s chat wrote" + ("" if ok else ": " + "; ".join(out[:5])))
        for i, writer in enumerate(agents):
            taker = agents[(i + 1) % len(agents)]
            out = taker.run("hb-take", d, writer.name, users[writer.name])
            ok = "ok 3" in out
            check(ok, f"{taker.name} signs in with {writer.name}'s code and signs its user out"
                  + ("" if ok else ": " + "; ".join(out[:3])))


def start_line() -> dict[str, str]:
    """A start time a few seconds ahead, which every racing agent waits for
    after opening the store: otherwise the fastest-starting language has
    finished before the slowest has begun."""
    return {"CROSS_START_AT_MS": str(int(time.time() * 1000) + 3000)}


def take_race(agents: list[Agent], rounds: int = 200) -> None:
    print(f"\ntake (KV-5): {len(agents)} processes race for {rounds} keys", flush=True)
    with place() as d:
        agents[0].run("take-setup", d, str(rounds))
        line = start_line()
        running = [a.start("take-rounds", d, str(rounds), env=line) for a in agents]
        wins: dict[int, list[str]] = {}
        for r in running:
            for line in r.finish():
                if line.startswith("won "):
                    wins.setdefault(int(line[4:]), []).append(r.agent.name)
        doubles = {k: v for k, v in wins.items() if len(v) > 1}
        missing = [k for k in range(rounds) if k not in wins]
        counts = {a.name: sum(1 for v in wins.values() if a.name in v) for a in agents}
        check(not doubles and not missing, f"every key won exactly once (wins per language: {counts})"
              + (f"; doubled {list(doubles)[:5]}, missing {missing[:5]}" if doubles or missing else ""))


def once_across(agents: list[Agent]) -> None:
    print("\nonce (KV-11): one key run from two languages", flush=True)
    for i, first in enumerate(agents):
        second = agents[(i + 1) % len(agents)]
        if first is second:
            continue
        with place() as d:
            a = first.start("once-run", d, "k", "1500", first.name)
            if not a.wait_line("ran"):
                check(False, f"{first.name} started its run")
                continue
            b = second.run("once-run", d, "k", "0", second.name)
            la = a.finish()
            check(f"answer {first.name}" in la and f"answer {first.name}" in b and "ran" not in b,
                  f"{first.name} runs, {second.name} waits and gets its answer ({la[-1:]}, {b})")


def once_killed(agents: list[Agent]) -> None:
    print(f"\nonce (KV-11): a runner killed with SIGKILL; the bound is {ONCE_BOUND_S} s", flush=True)
    for i, victim in enumerate(agents):
        heir = agents[(i + 1) % len(agents)]
        with place() as d:
            v = victim.start("once-hang", d, "k")
            if not v.wait_line("running"):
                check(False, f"{victim.name} started its run")
                continue
            v.proc.kill()
            v.finish()
            t0 = time.monotonic()
            out = heir.run("once-run", d, "k", "0", heir.name, timeout=60)
            took = time.monotonic() - t0
            check("ran" in out and f"answer {heir.name}" in out and took < ONCE_BOUND_S + 3,
                  f"{victim.name} killed mid-run; {heir.name} ran the key after {took:.2f} s")


def quota_race(agents: list[Agent]) -> None:
    print("\nquota (KV-13): racing allows pass exactly the limit", flush=True)
    with place() as d:
        line = start_line()
        running = [a.start("quota-allows", d, "20", env=line) for a in agents]
        # Keyed by process: two processes of a language race on PostgreSQL.
        passed = {f"{r.agent.name}#{i}": cross_limits.passed_of(r.finish()) for i, r in enumerate(running)}
        check(sum(passed.values()) == 10, f"{sum(passed.values())} of {20 * len(agents)} passed a limit of 10 ({passed})")


def counter_race(agents: list[Agent]) -> None:
    print("\ncounters (KV-14): racing adds count exactly; every handle sees the others", flush=True)
    with place() as d:
        line = start_line()
        for r in [a.start("counter-adds", d, "50", env=line) for a in agents]:
            r.finish()
        for a in agents:
            out = a.run("counter-get", d)
            check(f"value {50 * len(agents)}" in out, f"{a.name} reads {out} after {len(agents)} x 50 adds")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agent", action="append", default=[], help="LANGUAGE=COMMAND")
    parts = {"interchange": interchange, "handbook": handbook, "take": take_race, "once": once_across,
             "once-killed": once_killed, "quota": quota_race, "counters": counter_race,
             "limits": lambda agents: cross_limits.run_all(agents, check, start_line),
             "clear": lambda agents: cross_clear.run(agents, check, start_line)}
    ap.add_argument("--only", action="append", choices=list(parts), help="run these parts only (all by default)")
    ap.add_argument("--postgres", metavar="URL",
                    help="run the process checks on this PostgreSQL database, two processes of every language "
                         "in each race, instead of on kv.db")
    args = ap.parse_args()
    agents = [Agent(*spec.split("=", 1)) for spec in args.agent]
    if not agents:
        print("cross.py: give at least one agent", file=sys.stderr)
        return 2
    if len(agents) == 1:  # still two processes on one file
        agents.append(Agent(agents[0].name + "-2", shlex.join(agents[0].argv)))
    if args.postgres:
        # The processes of several app servers on one database: the file's
        # own checks (interchange, handbook) stay on kv.db's run.
        use_postgres(args.postgres)
        racers = [a for a in agents for _ in range(2)]
        parts = {"take": lambda _: take_race(racers), "once": once_across, "once-killed": once_killed,
                 "quota": lambda _: quota_race(racers), "counters": lambda _: counter_race(racers),
                 "limits": parts["limits"], "clear": lambda _: cross_clear.run(racers, check, start_line)}
    where = f"PostgreSQL ({args.postgres})" if on_postgres() else "kv.db"
    print("cross-language tests with " + ", ".join(a.name for a in agents) + f" on {where}", flush=True)
    for name, part in parts.items():
        if not args.only or name in args.only:
            part(agents)
    print()
    if failures:
        print(f"cross.py: {len(failures)} failed")
        for f in failures:
            print(f"  {f}")
        return 1
    print("cross.py: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
