"""Writes through asyncio: group commit, cancellation, failures (KV-15), the
clock and maintenance (KV-17), closing (KV-19)."""

from __future__ import annotations

import asyncio
import collections.abc
import contextlib
import contextvars
import datetime as dt
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import tinystore
from conftest import START


@contextlib.contextmanager
def writer_held(store: tinystore.Store) -> Iterator[None]:
    """Holds the store's writer busy for the block, from another thread.

    The writes of one turn of the loop reach the writer as they are made
    (at the end of the turn under a memory budget), and an idle writer
    starts a group at the first and takes the rest only while they keep
    coming (core/src/group_commit/mod.rs: 200 us of quiet at most, 2 ms in all),
    so on a loaded machine a descheduled loop thread splits them into two
    groups. A transaction holds the writer while it is open: it is one write
    of a group that stays open (core/src/binding_tx.rs), and the writes queued
    meanwhile join that group when it ends, all of them, whatever the
    timing. That is the promise users rely on (writes that wait for a busy
    writer commit together, one fsync). The group counts the transaction
    too: one more write.
    """
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with tinystore.sync.Store(store._n).tx():  # the same store, seen from sync code
            held.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert held.wait(30), "the transaction never got the writer"
        yield
    finally:
        release.set()
        t.join()


async def until_handed_over() -> None:
    """Lets the loop run until the writes of tasks just scheduled are made
    and handed to the writer: the tasks take their first step (each makes
    its write) in the next turn, ahead of this task, and a store with a
    memory budget hands a turn's writes over in a callback that the first
    of them scheduled, which runs ahead of this task's second step. While
    the writer is held none of them can be answered meanwhile."""
    for _ in range(2):
        await asyncio.sleep(0)


async def test_kv15_64_coroutines_writes_commit_together(store: tinystore.Store) -> None:
    b = store.bucket("b", int)
    await b.set("warm", 0)
    groups0, writes0 = store._n.group_stats()
    with writer_held(store):
        writes = asyncio.gather(*(b.set(f"k{i}", i) for i in range(64)))
        await until_handed_over()
        assert not writes.done()
    await writes
    groups, writes_ = store._n.group_stats()
    # The writes of one turn of the loop reach the writer together: one
    # commit, with the transaction they waited for.
    assert (groups - groups0, writes_ - writes0) == (1, 64 + 1)
    assert [await b.get(f"k{i}") for i in range(64)] == list(range(64))


async def check_64_coroutines_writing_in_turn(store: tinystore.Store) -> None:
    """64 coroutines write 5 times each, one write after the other: the
    first writes, made while the writer is held, commit as one group; its
    answers resume all 64 in one callback of the loop, where they make
    their next writes; and every write is answered once durable, with its
    own version."""
    b = store.bucket("b", int)
    await b.set("warm", 0)
    loop = asyncio.get_running_loop()
    groups0, writes0 = store._n.group_stats()
    # A pass is one callback of the loop in which tasks resume from their
    # writes: the first task of a pass opens it, and a callback scheduled
    # then closes it before the loop can run any later callback (another
    # drain of answers included).
    stats_at_pass: list[tuple[int, int]] = []
    pass_of: list[int] = []
    in_pass = False

    def close_pass() -> None:
        nonlocal in_pass
        in_pass = False

    def resumed() -> None:
        nonlocal in_pass
        if not in_pass:
            in_pass = True
            stats_at_pass.append(store._n.group_stats())
            loop.call_soon(close_pass)
        pass_of.append(len(stats_at_pass))

    versions: dict[str, str] = {}

    async def writer(w: int) -> None:
        versions[f"{w}:0"] = await b.set(f"{w}:0", 0)
        resumed()
        for i in range(1, 5):
            versions[f"{w}:{i}"] = await b.set(f"{w}:{i}", i)

    with writer_held(store):
        tasks = asyncio.gather(*(writer(w) for w in range(64)))
        await until_handed_over()
    await tasks
    groups, writes = store._n.group_stats()
    # The first writes waited for the busy writer: one group of 64 (and the
    # transaction that held it). Its answers resolve in one pass, so all 64
    # coroutines resume in one callback of the loop and make their next
    # writes there, handed to the writer together before it returns.
    assert stats_at_pass == [(groups0 + 1, writes0 + 64 + 1)]
    assert pass_of == [1] * 64
    # The later rounds reach an idle writer as the loop hands them over, and
    # their group count is not asserted: it is 4 on a quiet machine, but the
    # writer starts a group at the first write and takes the rest only while
    # they keep coming (200 us of quiet at most, 2 ms in all), so a loop
    # thread descheduled in the middle of a round splits it, by design of
    # the core. What holds at any load: every write is answered once durable,
    # so each coroutine's 5 writes are 5 commits one after the other, and all
    # 320 read back, each with the version its set answered (KV-10: versions
    # never repeat).
    assert writes - writes0 == 320 + 1
    assert groups - groups0 >= 5
    assert len(set(versions.values())) == 320
    for key, version in versions.items():
        entry = await b.entry(key)
        assert entry is not None and (entry.value, entry.version) == (int(key.split(":")[1]), version), key


async def test_kv15_64_coroutines_writing_in_turn_resume_in_one_pass_and_write_again_together(
    store: tinystore.Store,
) -> None:
    # Without a budget each write is streamed to the writer as it is made.
    await check_64_coroutines_writing_in_turn(store)


async def test_kv04_reads_complete_at_once_without_a_turn_of_the_loop(store: tinystore.Store) -> None:
    b = store.bucket("b", str)
    await b.set("k", "v")
    got = b.get("k")
    assert got.done() and got.result() == "v"
    assert b.has("k").result() is True
    bad = b.get(1.5)  # type: ignore[arg-type]
    assert bad.done()
    with pytest.raises(tinystore.InvalidError):
        await bad  # the error is raised where the read is awaited
    assert await asyncio.gather(*(b.get("k") for _ in range(64))) == ["v"] * 64


async def test_kv15_a_write_that_fails_rolls_back_alone(store: tinystore.Store) -> None:
    b = store.bucket("b", str)
    v = await b.set("k", "v")
    await b.set("k", "moved")
    results = await asyncio.gather(
        b.set("a", "ok"), b.set("k", "stale", if_version=v), b.set("c", "ok"), return_exceptions=True
    )
    assert isinstance(results[1], tinystore.ConflictError)
    assert await b.get("a") == "ok" and await b.get("c") == "ok" and await b.get("k") == "moved"


async def test_kv15_a_failed_commit_is_outcome_unknown(store: tinystore.Store) -> None:
    b = store.bucket("b", str)
    await b.set("warm", "x")
    store._n.fail_next_commit_for_tests()
    with pytest.raises(tinystore.OutcomeUnknownError) as e:
        await b.set("k", "v")
    assert e.value.code == "OUTCOME_UNKNOWN"
    await b.set("k", "v2")  # the store goes on
    assert await b.get("k") == "v2"


HOLD_LOCK = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
"""


@contextlib.contextmanager
def lock_held(dir: Path) -> Iterator[None]:
    """Another process holds the write lock of ``dir``'s file for the block
    (in this process the stdlib's own SQLite would not see the store's
    locks), so the store's writes queue."""
    import subprocess
    import sys

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(dir / "kv.db")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield
    finally:
        holder.communicate("go\n", timeout=30)


async def test_kv15_a_cancelled_write_that_has_not_started_writes_nothing(tmp_path: Path) -> None:
    store = await tinystore.open(tmp_path, clock=START)
    b = store.bucket("b", int)
    await b.set("warm", 0)
    with lock_held(tmp_path):
        first = asyncio.ensure_future(b.set("first", 1))
        queued = [asyncio.ensure_future(b.set(f"k{i}", i)) for i in range(50)]
        await asyncio.sleep(0)  # each task submitted its write
        for t in queued:
            t.cancel()
        await asyncio.sleep(0)  # each task runs its cancellation (and cancels its ticket)
    results = await asyncio.gather(first, *queued, return_exceptions=True)
    assert isinstance(results[0], str)  # the first write's version
    assert all(isinstance(r, asyncio.CancelledError) for r in results[1:])
    assert [e.key async for e in b.all()] == ["first", "warm"]  # none of the cancelled
    await b.set("after", 1)  # the store goes on
    assert await b.get("after") == 1
    await store.close()


async def test_kv15_a_cancelled_write_of_every_kind_that_has_not_started_writes_nothing(tmp_path: Path) -> None:
    store = await tinystore.open(tmp_path, clock=START)
    b = store.bucket("b", int)
    counters = store.counters("c")
    quota = store.quota("q", daily="5/1d")
    await b.set("warm", 0)
    with lock_held(tmp_path):
        first = asyncio.ensure_future(b.set("first", 1))
        await asyncio.sleep(0)  # the first write's group waits for the lock
        queued = [
            asyncio.ensure_future(w)
            for w in (
                b.set("with-ttl", 1, ttl="1h"),
                b.create("created", 1),
                b.delete("warm"),
                b.expire("warm", "1m"),
                b.take("warm"),
                counters.add("k", 1),
                counters.max("k", 9),
                quota.allow("k"),
            )
        ]
        await asyncio.sleep(0)  # each task made its write
        for t in queued:
            t.cancel()
        await asyncio.sleep(0)
    results = await asyncio.gather(first, *queued, return_exceptions=True)
    assert isinstance(results[0], str)
    assert all(isinstance(r, asyncio.CancelledError) for r in results[1:])
    assert [(e.key, e.expires_at) async for e in b.all()] == [("first", None), ("warm", None)]
    assert await counters.get("k") == 0
    assert (await quota.peek("k")).left == 5
    await store.close()


async def test_kv15_a_write_cancelled_after_submission_leaves_the_loop_clean(store: tinystore.Store) -> None:
    b = store.bucket("b", int)
    task = asyncio.ensure_future(b.set("k", 1))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The answer of the write (done or cancelled) is drained without error.
    await b.set("k2", 2)
    assert await b.get("k2") == 2


async def test_kv15_a_task_resumes_from_a_write_in_its_own_context_and_as_itself(store: tinystore.Store) -> None:
    # The loop's drain wakes the tasks of a group itself: each must go on in
    # its own contextvars context, as the current task, as after a future.
    b = store.bucket("b", int)
    var: contextvars.ContextVar[int] = contextvars.ContextVar("var")

    async def one(i: int) -> tuple[int, bool]:
        var.set(i)
        me = asyncio.current_task()
        await b.set(f"k{i}", i)
        return var.get(), asyncio.current_task() is me

    assert await asyncio.gather(*(one(i) for i in range(64))) == [(i, True) for i in range(64)]


async def test_kv15_a_write_runs_its_done_callbacks_each_in_its_context(store: tinystore.Store) -> None:
    # Callbacks on a write's native answer run as asyncio's futures run
    # them: in the context given to add_done_callback, or else in a copy of
    # the context current when it was added; each sees the answer.
    b = store.bucket("b", int)
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[tuple[str, str, bool]] = []
    given = contextvars.copy_context()
    given.run(var.set, "given")
    var.set("when added")
    write = b._n.delete("k", None, asyncio.get_running_loop())
    write.add_done_callback(lambda w: seen.append(("given", var.get(), w.result())), context=given)
    write.add_done_callback(lambda w: seen.append(("copied", var.get(), w.result())))
    var.set("changed after")
    assert await write is False
    await asyncio.sleep(0)  # a callback added after the answer runs through call_soon
    write.add_done_callback(lambda w: seen.append(("late", var.get(), w.result())))
    await asyncio.sleep(0)
    assert seen == [("given", "given", False), ("copied", "when added", False), ("late", "changed after", False)]
    assert var.get() == "changed after"  # no callback's context leaked into the task's


async def test_kv15_every_way_to_await_a_write_gets_its_answer(store: tinystore.Store) -> None:
    b = store.bucket("b", int)
    version = await asyncio.create_task(b.set("k", 1))
    assert (await b.entry("k")).version == version  # type: ignore[union-attr]
    assert await asyncio.wait_for(b.create("k", 2), timeout=60) is False
    assert await asyncio.ensure_future(b.delete("k")) is True
    wrote, took = asyncio.ensure_future(b.set("a", 1)), asyncio.ensure_future(b.take("missing"))
    _, waiting = await asyncio.wait([wrote, took])
    assert not waiting and isinstance(wrote.result(), str) and took.result() is None
    with pytest.raises(tinystore.ConflictError):
        await asyncio.gather(b.set("a", 2, if_version="1"))
    assert await b.get("a") == 1


async def test_kv15_a_set_is_a_coroutine_that_writes_only_once_awaited(store: tinystore.Store) -> None:
    # set without options is the native module's own coroutine: it must keep
    # what callers of an `async def` rely on.
    b = store.bucket("b", int)
    assert asyncio.iscoroutinefunction(b.set) and asyncio.iscoroutinefunction(tinystore.Bucket.set)
    never = b.set("never", 1)
    assert asyncio.iscoroutine(never) and isinstance(never, collections.abc.Coroutine)
    await b.set("other", 2)  # a group commits meanwhile, without the unawaited write
    assert await b.get("never") is None
    never.close()
    bad = b.set(object(), 1)  # type: ignore[arg-type]
    with pytest.raises(tinystore.InvalidError):
        await bad  # bad input raises where it is awaited, not where it is made
    done = b.set("k", 3)
    version = await done
    assert (await b.entry("k")).version == version  # type: ignore[union-attr]
    with pytest.raises(RuntimeError):
        await done  # awaited twice, as a coroutine
    with pytest.raises(asyncio.CancelledError):
        b.set("thrown", 4).throw(asyncio.CancelledError())
    assert await b.get("thrown") is None


async def test_kv15_a_write_cancelled_by_a_timeout_raises_timeout(tmp_path: Path) -> None:
    store = await tinystore.open(tmp_path, clock=START)
    b = store.bucket("b", int)
    await b.set("warm", 0)
    with lock_held(tmp_path):
        # The write waits for the file's lock; the timeout cancels it.
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(b.set("late", 1), timeout=0.2)
    await b.set("after", 1)
    assert await b.get("after") == 1
    await store.close()


async def test_kv17_the_test_clock_moves_only_forward(store: tinystore.Store) -> None:
    assert store.clock.manual and store.clock.now() == START
    assert store.clock.advance("16m") == START + dt.timedelta(minutes=16)
    assert store.clock.advance(dt.timedelta(seconds=1)) == START + dt.timedelta(minutes=16, seconds=1)
    with pytest.raises(tinystore.InvalidError):
        store.clock.set(START)
    store.clock.set(START + dt.timedelta(days=1))
    assert store.clock.now() == START + dt.timedelta(days=1)
    with pytest.raises(tinystore.InvalidError):
        store.clock.advance(90)  # type: ignore[arg-type]


async def test_kv17_maintain_deletes_expired_rows_and_says_how_many(store: tinystore.Store) -> None:
    b = store.bucket("b", int, ttl="1m")
    await asyncio.gather(*(b.set(f"k{i}", i) for i in range(10)))
    store.clock.advance("2m")
    m = await store.maintain()
    assert m.expired == 10 and not m.more
    assert (await store.maintain()).expired == 0


async def test_kv17_a_naive_clock_is_utc(tmp_path: Path) -> None:
    async with tinystore.open(tmp_path, clock=dt.datetime(2026, 1, 1)) as store:
        assert store.clock.now() == dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


async def test_kv17_an_ordinary_store_refuses_to_move_its_clock(tmp_path: Path) -> None:
    store = await tinystore.open(tmp_path)
    try:
        assert not store.clock.manual
        with pytest.raises(tinystore.InvalidError):
            store.clock.advance("1m")
    finally:
        await store.close()


async def test_kv19_calls_after_close_are_closed(tmp_path: Path) -> None:
    store = await tinystore.open(tmp_path / "d", clock=START)
    b = store.bucket("b", str)
    await b.set("k", "v")
    await store.close()
    await store.close()  # twice is fine
    assert store.closed
    for call in (b.get("k"), b.set("k", "v"), b.take("k"), b.list(), store.maintain()):
        with pytest.raises(tinystore.ClosedError, match="the store is closed"):
            await call
    for scope in (store.tx, store.view):
        with pytest.raises(tinystore.ClosedError, match="the store is closed"):
            scope()
    # The value was durable: a reopened store reads it.
    async with tinystore.open(tmp_path / "d") as again:
        assert await again.bucket("b", str).get("k") == "v"


async def test_kv19_a_file_of_another_kind_is_refused(tmp_path: Path) -> None:
    (tmp_path / "kv.db").write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(tinystore.Error) as e:
        await tinystore.open(tmp_path)
    assert e.value.code in ("CORRUPT", "INVALID")
    assert (tmp_path / "kv.db").read_bytes() == b"this is not sqlite at all" * 100


async def test_kv19_two_stores_on_one_file_see_each_other(tmp_path: Path) -> None:
    async with tinystore.open(tmp_path) as one, tinystore.open(tmp_path) as two:
        await one.bucket("b", str).set("k", "from one")
        assert await two.bucket("b", str).get("k") == "from one"


async def test_kv04_open_works_awaited_and_as_a_context_manager(tmp_path: Path) -> None:
    store = await tinystore.open(str(tmp_path))
    async with store:
        await store.bucket("b", int).set("k", 1)
    assert store.closed
    async with tinystore.open(tmp_path) as s2:
        assert await s2.bucket("b", int).get("k") == 1
    assert s2.closed


async def test_two_event_loops_in_two_threads_share_a_store(tmp_path: Path) -> None:
    import threading

    store = await tinystore.open(tmp_path, clock=START)
    b = store.bucket("b", int)
    errors: list[BaseException] = []

    def other() -> None:
        async def go() -> None:
            await asyncio.gather(*(b.set(f"t{i}", i) for i in range(20)))

        try:
            asyncio.run(go())
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=other)
    t.start()
    await asyncio.gather(*(b.set(f"m{i}", i) for i in range(20)))
    await asyncio.get_running_loop().run_in_executor(None, t.join)
    assert not errors
    assert len([e async for e in b.all()]) == 40
    await store.close()


async def test_kv15_with_a_memory_budget_64_coroutines_writing_in_turn_commit_together(tmp_path: Path) -> None:
    # Under a budget a write's submit may wait for memory, so writes are handed
    # over at the end of the loop's turn instead of as they are made; the 64
    # still commit together, and each answer is its own.
    async with tinystore.open(tmp_path, memory=32 << 20) as store:
        await check_64_coroutines_writing_in_turn(store)
