"""A clear under writes (KV-8): one process clears a branch holding 20,000
keys while processes of every language keep writing keys in it, and another
counts the old keys on snapshots meanwhile. Run by tests/cross.py, whose
agents and checks these use; the commands are in tests/processes/README.md,
"A clear under writes".

What a user relies on, each checked:
- every key written before the clear began is gone after it;
- no key written after the clear returned is lost;
- the branch is hidden at once: a snapshot sees all the old keys or none,
  and none once the clear returned;
- the writers never fail (an agent that does exits non-zero)."""

from __future__ import annotations

from typing import Callable

from cross_places import place

OLD_KEYS = 20_000
# The writers write for WRITE_MS from the start line; the clear starts
# CLEAR_AFTER_MS after it, so that writes come before, during and after,
# with seconds to spare for a clear that waits for its turn to write on a
# loaded machine (on kv.db, behind the other processes' writes).
WRITE_MS, CLEAR_AFTER_MS = 5_000, 1_000


def _times(lines: list[str], word: str) -> list[list[str]]:
    return [line.split()[1:] for line in lines if line.startswith(word + " ")]


def run(agents: list, check: Callable[[bool, str], None], start_line: Callable[[], dict[str, str]]) -> None:
    print(f"\nclear (KV-8): a branch of {OLD_KEYS} keys cleared while {len(agents)} processes write in it",
          flush=True)
    rust = next((a for a in agents if a.name.startswith("rust")), None)
    if rust is None:
        check(False, "the clear race runs its clear and its snapshots in the Rust agent: give it")
        return
    with place() as d:
        check("ready" in rust.run("clear-setup", d, str(OLD_KEYS)), f"the Rust agent wrote {OLD_KEYS} old keys")
        line = start_line()
        at = int(line["CROSS_START_AT_MS"])
        writers = [a.start("clear-writes", d, f"{a.name}{i}-", str(WRITE_MS), env=line)
                   for i, a in enumerate(agents)]
        probe = rust.start("clear-probe", d, str(WRITE_MS), env=line)
        clearer = rust.start("clear-branch", d, env={"CROSS_START_AT_MS": str(at + CLEAR_AFTER_MS)})
        cleared = clearer.finish()
        wrote = {f"{w.agent.name} #{i}": w.finish() for i, w in enumerate(writers)}
        saw = _times(probe.finish(), "saw")
        listed = rust.run("clear-list", d)
    began, ended = (_times(cleared, w) for w in ("start", "cleared"))
    if not began or not ended:
        check(False, f"the clear ran: {cleared}")
        return
    t_start, t_cleared = int(began[0][0]), int(ended[0][0])
    left = {line[4:] for line in listed if line.startswith("key ")}
    check("listed" in listed, f"the branch was listed after the race ({len(left)} keys)")

    for name, lines in wrote.items():
        check("done" in lines, f"{name} wrote {len(_times(lines, 'wrote'))} keys and never failed")
    writes = [(k, int(t0), int(t1)) for lines in wrote.values() for k, t0, t1 in _times(lines, "wrote")]
    before = [k for k, _, t1 in writes if t1 < t_start]
    after = [k for k, t0, _ in writes if t0 > t_cleared]
    during = len(writes) - len(before) - len(after)
    old_left = sorted(k for k in left if k.startswith("old"))
    check(not old_left, f"no old key is left ({len(old_left)} are: {old_left[:3]})")
    kept_before = [k for k in before if k in left]
    check(before and not kept_before,
          f"the {len(before)} keys written before the clear began are gone ({len(kept_before)} are not: "
          f"{kept_before[:3]})")
    lost = [k for k in after if k not in left]
    check(after and not lost,
          f"the {len(after)} keys written after the clear returned are kept ({len(lost)} lost: {lost[:3]}); "
          f"{during} writes overlapped the clear's {t_cleared - t_start} ms")

    counts = [(int(n), int(t0)) for n, t0, _ in saw]
    half = [n for n, _ in counts if n not in (0, OLD_KEYS)]
    late = [n for n, t0 in counts if t0 > t_cleared and n != 0]
    full = sum(1 for n, _ in counts if n == OLD_KEYS)
    check(counts and not half and not late,
          f"{len(counts)} snapshots saw all {OLD_KEYS} old keys ({full}) or none ({len(half)} saw part of them), and "
          f"none after the clear returned ({len(late)} did)")
