"""Runs one conformance case through the public asyncio API of ``tinystore``.

Every op of ``tests/conformance/README.md`` maps onto the API a Python user
calls (``store.bucket(name, int, ttl="15m").under(7).take(key)``); an op,
kind or field the runner does not know fails the case (``UnknownInCase``).
The Rust runner (``tests/conformance/rust/tests/run.rs``) is the reference:
the same comparisons, the same notion of a race's success.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import tinystore
from case_values import UnknownInCase, bucket_type, key, millis, same_json, same_value, short, text, value

START = dt.datetime(2026, 10, 20, 9, 0, tzinfo=dt.timezone.utc)
"""2026-10-20T09:00:00Z, the start of every case's clock."""

_MS = dt.timedelta(milliseconds=1)


class Refusing:
    """The cases' ``"codec": "refusing"`` (tests/conformance/README.md)."""

    def encode(self, value: str) -> bytes:
        if value == "refuse":
            raise ValueError("the test codec refuses this value")
        return value.encode()

    def decode(self, data: bytes) -> str:
        if data == b"bad":
            raise ValueError("the test codec cannot read this")
        return data.decode()


class StepFailed(AssertionError):
    """A step's answer is not what the case expects."""


class FunctionFailed(Exception):
    """The error a once function of a ``fails`` step throws: the run must fail with exactly it."""


@dataclasses.dataclass
class Handle:
    """An open handle of a case, with the case type of its values."""

    kind: str
    api: Any
    ty: str | None = None


@dataclasses.dataclass
class Out:
    """What a call gave back, before it is compared.

    ``form`` says how to compare it: ``nothing`` (a call that answers
    nothing), ``plain`` (a bool, int, version or listing, compared as JSON),
    ``value`` (a value of the handle's type, or None), ``allow`` (an
    Allowance), ``entry`` (an Entry, or None), ``created`` (what create_entry did).
    """

    form: str
    got: Any = None
    ty: str | None = None


NOTHING = Out("nothing")


class Runner:
    """One case's store, handles, saved versions and count of once runs."""

    def __init__(self, dir: Path) -> None:
        self.dir = dir
        self.store: tinystore.Store | None = None
        self.opens: list[dict[str, Any]] = []
        self.handles: dict[str, Handle] = {}
        self.versions: dict[str, str] = {}
        self.ran = 0
        self.in_tx: Any = None  # the open transaction of a tx step

    async def start(self, at: dt.datetime = START) -> None:
        self.store = await tinystore.open(self.dir, clock=at)

    @property
    def s(self) -> tinystore.Store:
        assert self.store is not None, "the runner's store is open"
        return self.store

    def now(self) -> dt.datetime:
        return self.s.clock.now()

    def in_ms(self, at: dt.datetime | None) -> int | None:
        """Milliseconds from the store's clock to ``at``."""
        return None if at is None else (at - self.now()) // _MS

    # ---- handles ----

    def open_handle(self, step: dict[str, Any]) -> None:
        name, kind = step["name"], step["kind"]

        def opt(field: str) -> Any:
            return step.get(field)

        if kind == "bucket":
            codec = {"refusing": Refusing(), None: None}[opt("codec")]
            b = self.s.bucket(name, bucket_type(step["type"]), ttl=opt("ttl"), idle=opt("idle"), codec=codec)
            h = Handle(kind, b, step["type"])
        elif kind == "counters":
            h = Handle(kind, self.s.counters(name, ttl=opt("ttl"), flush_every=opt("flush_every")))
        elif kind == "rate_limit":
            h = Handle(kind, self.s.rate_limit(name, rate=step["rate"], burst=opt("burst")))
        elif kind == "quota":
            h = Handle(kind, self.s.quota(name, **step["windows"]))
        elif kind == "once":
            h = Handle(kind, self.s.once(name, bucket_type(step["type"]), keep=opt("keep")), step["type"])
        else:
            raise UnknownInCase(f"unknown kind {kind!r}")
        self.handles[step["as"]] = h

    def handle(self, step: dict[str, Any]) -> Handle:
        h = self.handles[step["on"]]
        under = step.get("under")
        if under:
            return Handle(h.kind, h.api.under(*(key(o) for o in under)), h.ty)
        return h

    async def reopen(self) -> None:
        at = self.now()
        try:
            await self.s.close()
        except tinystore.Error:
            pass  # a case that closed the store reopens it all the same
        await self.start(at)
        self.handles.clear()
        for step in self.opens:
            self.open_handle(step)

    # ---- calls ----

    def version(self, given: Any) -> str:
        """A saved version by its name, or ``{"text": ...}``: text as a caller gives it."""
        return str(given["text"]) if isinstance(given, dict) else self.versions[given]

    async def call(self, step: dict[str, Any], index: int = 0) -> Out:
        """Runs one call; raises the API's error, or ``UnknownInCase``."""
        op = step["op"]
        k: Any = None
        if "key" in step:
            k = key(step["key"])
            if isinstance(k, str):
                k = k.replace("{i}", str(index))
        n = step.get("n", 1)
        if_version = self.version(step["if_version"]) if "if_version" in step else None
        h = self.handle(step)
        b = h.api
        if self.in_tx is not None and not step.get("outside") and op != "run":
            # Every kind joins through tx.with_; what cannot join raises here.
            # A run of once (and a step marked outside) uses the handle itself.
            b = self.in_tx.with_(b)
        if h.kind == "bucket":
            ty = h.ty
            assert ty is not None
            if op == "set":
                expires_at = None
                if "expires_in" in step:
                    expires_at = self.now() + millis(step["expires_in"]) * _MS
                version = await b.set(
                    k, value(ty, step["value"]), ttl=step.get("ttl"), expires_at=expires_at, if_version=if_version
                )
                return Out("plain", version)
            if op == "get":
                if ty == "set":  # a set's get answers None either way: entry tells a member from none
                    e = await b.entry(k)
                    return Out("value", None if e is None else e.value, ty)
                return Out("value", await b.get(k), ty)
            if op == "has":
                return Out("plain", await b.has(k))
            if op == "entry":
                return Out("entry", await b.entry(k), ty)
            if op == "create":
                return Out("plain", await b.create(k, value(ty, step["value"]), ttl=step.get("ttl")))
            if op == "create_entry":
                return Out("created", await b.create_entry(k, value(ty, step["value"]), ttl=step.get("ttl")), ty)
            if op == "take":
                return Out("value", await b.take(k, if_version=if_version), ty)
            if op == "delete":
                return Out("plain", await b.delete(k, if_version=if_version))
            if op == "expire":
                return Out("plain", await b.expire(k, step.get("ttl"), if_version=if_version))
            if op == "clear":
                await b.clear()
                return NOTHING
            if op == "list":
                after = key(step["after"]) if "after" in step else None
                page = await b.list(after=after, limit=step.get("limit"))
                return Out("plain", {"keys": [lossy(e.key) for e in page.entries], "next": lossy(page.next)})
            if op == "all":
                keys = [lossy(e.key) async for e in b.all()]
                return Out("plain", {"keys": keys, "count": len(keys)})
        elif h.kind == "counters":
            if op == "add":
                return Out("plain", await b.add(k, n))
            if op == "max":
                return Out("plain", await b.max(k, n))
            if op == "get":
                return Out("plain", await b.get(k))
            if op == "delete":
                await b.delete(k)
                return NOTHING
        elif h.kind in ("rate_limit", "quota"):
            if op == "allow":
                return Out("allow", await b.allow(k, n))
            if op == "peek":
                return Out("allow", await b.peek(k))
            if op == "refund" and h.kind == "quota":
                return Out("allow", await b.refund(k, n))
            if op == "reset":
                await b.reset(k)
                return NOTHING
        elif h.kind == "once":
            ty = h.ty
            assert ty is not None
            if op == "run":
                return Out("value", await b.run(k, self.once_function(ty, step)), ty)
            if op == "get":
                return Out("value", await b.get(k), ty)
            if op == "delete":
                return Out("plain", await b.delete(k))
        raise UnknownInCase(f"the Python runner does not know the call {op!r} on a {h.kind}")

    def once_function(self, ty: str, step: dict[str, Any]) -> Any:
        """The function a ``run`` step hands to ``once.run``: counts its runs,
        then throws the step's ``fails`` or returns its ``returns``."""

        async def work() -> Any:
            self.ran += 1
            for inner in step.get("inside", []):
                # Steps of the run's own function, inside the run.
                try:
                    self.check(inner, await self.attempt(inner))
                except StepFailed as e:
                    raise StepFailed(f"inside the run, {inner['op']}: {e}") from None
            if "fails" in step:
                raise FunctionFailed(step["fails"])
            return value(ty, step["returns"])

        return work

    async def attempt(self, step: dict[str, Any], index: int = 0) -> Out | BaseException:
        """A call's answer, or the error the API (or a once function) raised."""
        try:
            return await self.call(step, index)
        except (tinystore.Error, FunctionFailed) as e:
            return e

    # ---- comparisons ----

    def check(self, step: dict[str, Any], out: Out | BaseException) -> None:
        """Compares an answer with a step's ``expect`` or ``error``."""
        code = step.get("error")
        if code is not None:
            if isinstance(out, Out):
                raise StepFailed(f"expected {code}, got success ({short(out.got)})")
            if code == "FAILED":
                if not (isinstance(out, FunctionFailed) and out.args == (step["fails"],)):
                    raise StepFailed(f"expected the function's own error, got {type(out).__name__}: {out}")
                return
            if not isinstance(out, tinystore.Error) or out.code != code:
                raise StepFailed(f"expected {code}, got {type(out).__name__}: {out}")
            if "error_bucket" in step and out.bucket != step["error_bucket"]:
                raise StepFailed(f"the error should name bucket {step['error_bucket']!r}: {out} (bucket {out.bucket!r})")
            if "error_key" in step and out.path != text(step["error_key"]):
                raise StepFailed(f"the error should name key {text(step['error_key'])!r}: {out} (path {out.path!r})")
            if "error_message" in step and out.message != step["error_message"]:
                raise StepFailed(f"the error should say {step['error_message']!r}: {out.message!r}")
            # The text after the kind's word ("invalid: "), with the bucket and key, is the same in every language.
            if "error_text" in step and str(out).split(": ", 1)[-1] != step["error_text"]:
                raise StepFailed(f"the error should read {step['error_text']!r} after its kind: {str(out)!r}")
            return
        if not isinstance(out, Out):
            raise StepFailed(f"unexpected error {type(out).__name__}: {out}")
        if "expect" not in step:
            return
        want = step["expect"]
        if out.form == "nothing":
            raise StepFailed("a call that answers nothing has no expect")
        if out.form == "value":
            assert out.ty is not None
            fine = out.got is None if want is None else out.got is not None and same_value(out.ty, want, out.got)
            if not fine:
                raise StepFailed(f"expected {short(want)}, got {short(out.got)}")
        elif out.form == "allow":
            self.check_allow(want, out.got)
        elif out.form == "entry":
            self.check_entry(want, out.got, out.ty)
        elif out.form == "created":
            if "written" in want and out.got.written is not want["written"]:
                raise StepFailed(f"written: expected {want['written']}, got {out.got.written}")
            self.check_entry({f: w for f, w in want.items() if f != "written"}, out.got.entry, out.ty)
        elif isinstance(want, dict) and isinstance(out.got, dict):
            for f, w in want.items():
                if f not in out.got or not same_json(w, out.got[f]):
                    raise StepFailed(f"{f}: expected {short(w)}, got {short(out.got)}")
        elif not same_json(want, out.got):
            raise StepFailed(f"expected {short(want)}, got {short(out.got)}")

    def check_entry(self, want: Any, e: tinystore.Entry[Any] | None, ty: str | None) -> None:
        if want is None:
            if e is not None:
                raise StepFailed(f"expected no entry, got {short(e)}")
            return
        if e is None:
            raise StepFailed(f"expected an entry {short(want)}, got none")
        assert ty is not None
        expires_in = self.in_ms(e.expires_at)
        for f, w in want.items():
            if f == "value":
                fine = same_value(ty, w, e.value)
            elif f == "version":
                fine = e.version == self.versions[w]
            elif f == "expires_in":
                fine = expires_in == (None if w is None else millis(w))
            else:
                raise UnknownInCase(f"an entry has no field {f!r}")
            if not fine:
                raise StepFailed(
                    f"{f}: expected {short(w)}, got value {short(e.value)}, version {e.version}, expires_in {expires_in} ms"
                )

    def check_allow(self, want: dict[str, Any], a: tinystore.Allowance) -> None:
        problems = []
        if "ok" in want and a.ok is not want["ok"]:
            problems.append(f"ok {a.ok} != {want['ok']}")
        if "left" in want and a.left != want["left"]:
            problems.append(f"left {a.left} != {want['left']}")
        if "retry_in" in want:
            r = want["retry_in"]
            if self.in_ms(a.retry_at) != (None if r is None else millis(r)):
                problems.append(f"retry_in {self.in_ms(a.retry_at)} ms != {r}")
        for name, w in want.get("windows", {}).items():
            got = a.windows.get(name)
            if got is None:
                problems.append(f"no window {name}")
                continue
            for f in ("used", "limit", "left"):
                if f in w and getattr(got, f) != w[f]:
                    problems.append(f"{name}.{f} {getattr(got, f)} != {w[f]}")
            if "resets_in" in w:
                r = w["resets_in"]
                if self.in_ms(got.resets_at) != (None if r is None else millis(r)):
                    problems.append(f"{name}.resets_in {self.in_ms(got.resets_at)} ms != {r}")
        if problems:
            raise StepFailed("; ".join(problems))

    # ---- steps ----

    async def step(self, step: dict[str, Any]) -> None:
        """Runs one step of a case and checks it; raises ``StepFailed`` or ``UnknownInCase``."""
        op = step["op"]
        if op == "open":
            try:
                self.open_handle(step)
                out: Out | BaseException = NOTHING
            except tinystore.Error as e:
                out = e
            if isinstance(out, Out) and "error" not in step:
                self.opens.append(step)
            self.check(step, out)
        elif op == "advance":
            by = step["by"]
            try:
                if by.startswith("-"):
                    self.s.clock.set(self.now() + millis(by) * _MS)
                else:
                    self.s.clock.advance(by)
                out = NOTHING
            except tinystore.Error as e:
                out = e
            self.check(step, out)
        elif op == "maintain":
            m = await self.s.maintain()
            for f, w in step.get("expect", {}).items():
                if getattr(m, f) != w:
                    raise StepFailed(f"maintain {f}: expected {w}, got {m}")
        elif op == "reopen":
            await self.reopen()
        elif op == "close":
            await self.s.close()
        elif op == "race":
            await self.race(step)
        elif op == "tx":
            await self.tx(step)
        else:
            out = await self.attempt(step)
            save = step.get("save")
            if save is not None and isinstance(out, Out):
                if out.form == "plain" and isinstance(out.got, str):
                    self.versions[save] = out.got
                elif out.form == "entry" and out.got is not None:
                    self.versions[save] = out.got.version
                elif out.form == "created":
                    self.versions[save] = out.got.entry.version
                else:
                    raise UnknownInCase(f"save on a call that gives no version: {op}")
            self.check(step, out)

    async def race(self, step: dict[str, Any]) -> None:
        """``n`` copies of a call at once, as coroutines of one event loop (``asyncio.gather``)."""
        n, inner = step["n"], step["step"]
        before = self.ran
        outs = await asyncio.gather(*(self.attempt(inner, i) for i in range(n)))
        wins = sum(1 for o in outs if success(o))
        if wins != step["expect_successes"]:
            errors = {f"{type(o).__name__}: {o}" for o in outs if not isinstance(o, Out)}
            raise StepFailed(f"race: {wins} of {n} succeeded, expected {step['expect_successes']} (errors: {errors or 'none'})")
        if "expect_ran" in step and self.ran - before != step["expect_ran"]:
            raise StepFailed(f"race: the function ran {self.ran - before} times, expected {step['expect_ran']}")
        for o in outs:
            if isinstance(o, Out) and "expect" in inner:
                self.check(inner, o)

    async def tx(self, step: dict[str, Any]) -> None:
        """Transactions (KV-16): the steps run through ``tx.with_(handle)``
        inside ``async with store.tx()`` (a step marked ``outside`` through the
        handle itself); with ``fail`` (an error or a panic), the block raises,
        so nothing of it is written."""

        class Rollback(Exception):
            pass

        try:
            async with self.s.tx() as t:
                self.in_tx = t
                for inner in step["steps"]:
                    try:
                        if inner["op"] == "tx":
                            self.check(inner, await self.nested_tx(inner))
                            continue
                        self.check(inner, await self.attempt(inner))
                    except StepFailed as e:
                        raise StepFailed(f"in tx, {inner['op']}: {e}") from None
                if step.get("fail"):
                    raise Rollback()
        except Rollback:
            pass
        finally:
            self.in_tx = None

    async def nested_tx(self, step: dict[str, Any]) -> Out | BaseException:
        """A ``tx`` step inside a transaction: the answer of opening another
        of the same store in the same task (an error, or nothing when it opens)."""
        outer = self.in_tx
        try:
            async with self.s.tx() as t:
                self.in_tx = t
                for inner in step["steps"]:
                    self.check(inner, await self.attempt(inner))
            return NOTHING
        except tinystore.Error as e:
            return e
        finally:
            self.in_tx = outer


def lossy(k: str | bytes | None) -> str | None:
    """A key as text for comparisons (a key that is not UTF-8 comes back as bytes)."""
    if isinstance(k, bytes):
        return k.decode("utf-8", errors="replace")
    return k


def success(out: Out | BaseException) -> bool:
    """Whether a racing call succeeded: no error, and not a null or false answer
    (an allowance succeeds when ``ok``)."""
    if not isinstance(out, Out):
        return False
    if out.form == "nothing":
        return True
    if out.form == "allow":
        return bool(out.got.ok)
    if out.form == "entry":
        return out.got is not None
    if out.form == "created":
        return True
    return out.got is not None and out.got is not False
