//! The Rust runner of the conformance cases: every case of
//! `tests/conformance/cases/*.json` through the public Rust API, failing on
//! any operation it does not know. See `tests/conformance/README.md`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tinystore::{
    Allowance, Begun, BindingTx, Bucket, CallerContext, Codec, CodecError, Counters, Error, ErrorKind, Expiry,
    ListOptions, Options, Quota, RateLimit, Raw, RawBucket, RawOnce, Scope, Store, Version, WriteCall, parse_duration,
    parse_rate,
};
use tinystore_conformance::{Ty, check_type, lossy, same_value, span, text, to_raw};

/// 2026-10-20T09:00:00Z, the start of every case's clock.
const START_SECS: u64 = 1_792_486_800;

/// The cases' `"codec": "refusing"` (tests/conformance/README.md).
#[derive(Clone, Copy)]
struct Refusing;

impl Codec<String> for Refusing {
    fn encode(&self, value: &String) -> Result<Vec<u8>, CodecError> {
        if value == "refuse" {
            return Err("the test codec refuses this value".into());
        }
        Ok(value.as_bytes().to_vec())
    }
    fn decode(&self, bytes: &[u8]) -> Result<String, CodecError> {
        if bytes == b"bad" {
            return Err("the test codec cannot read this".into());
        }
        String::from_utf8(bytes.to_vec()).map_err(|e| e.into())
    }
}

#[derive(Clone)]
enum Handle {
    Bucket(RawBucket, Ty),
    /// A bucket of strings through its own codec, as a user opens one.
    Coded(Bucket<String>),
    Counters(Counters),
    RateLimit(RateLimit),
    Quota(Quota),
    Once(RawOnce, Ty),
}

/// What a call gave back, before it is compared.
enum Out {
    Nothing,
    Json(Value),
    Value(Ty, Option<Raw>),
    Allow(Allowance),
    /// An entry: its value as kept, version, ms until it expires, and
    /// (for `create_entry`) whether the call wrote it.
    Entry(Ty, Raw, i64, Option<u64>, Option<bool>),
}

struct Case {
    file: String,
    id: String,
    title: String,
    steps: Vec<Value>,
}

struct Runner {
    /// The store's location: a directory, or a PostgreSQL database.
    dir: PathBuf,
    store: Store,
    opens: Vec<Value>,
    handles: HashMap<String, Handle>,
    versions: HashMap<String, Version>,
    ran: Arc<AtomicUsize>,
    /// The runs of once the case's calls are inside, as a binding keeps
    /// them for the engine's refusal of a run inside its own run.
    caller: Mutex<CallerContext>,
}

impl Runner {
    fn now(&self) -> SystemTime {
        self.store.clock().now()
    }

    fn open_handle(&mut self, step: &Value) -> Result<(), Error> {
        let name = step["name"].as_str().unwrap();
        let opt = |k: &str| step.get(k).filter(|v| !v.is_null());
        let dur = |k: &str| opt(k).map(span).transpose();
        let handle = match step["kind"].as_str().unwrap() {
            "bucket" if step.get("codec").is_some() => {
                assert_eq!(step["codec"], "refusing", "the one codec of the cases");
                let mut b = self.store.bucket::<String>(name).codec(Refusing);
                if let Some(d) = dur("ttl")? {
                    b = b.ttl(d);
                }
                Handle::Coded(b.open()?)
            }
            "bucket" => Handle::Bucket(
                RawBucket::open(&self.store, name, dur("ttl")?, dur("idle")?)?,
                Ty::parse(step["type"].as_str().unwrap()),
            ),
            "counters" => {
                let mut b = self.store.counters(name);
                if let Some(d) = dur("ttl")? {
                    b = b.ttl(d);
                }
                if let Some(d) = dur("flush_every")? {
                    b = b.flush_every(d);
                }
                Handle::Counters(b.open()?)
            }
            "rate_limit" => {
                let (n, per) = parse_rate(step["rate"].as_str().unwrap())?;
                let mut b = self.store.rate_limit(name).rate(n, per);
                if let Some(burst) = opt("burst") {
                    b = b.burst(burst.as_u64().unwrap());
                }
                Handle::RateLimit(b.open()?)
            }
            "quota" => {
                let mut b = self.store.quota(name);
                for (w, rate) in step["windows"].as_object().unwrap() {
                    let (n, per) = parse_rate(rate.as_str().unwrap())?;
                    b = b.window(w, n, per);
                }
                Handle::Quota(b.open()?)
            }
            "once" => Handle::Once(
                RawOnce::open(&self.store, name, dur("keep")?)?,
                Ty::parse(step["type"].as_str().unwrap()),
            ),
            other => panic!("unknown kind {other:?}"),
        };
        self.handles.insert(step["as"].as_str().unwrap().to_owned(), handle);
        Ok(())
    }

    fn handle(&self, step: &Value) -> Handle {
        let h = self
            .handles
            .get(step["on"].as_str().unwrap())
            .expect("a handle opened before")
            .clone();
        let Some(under) = step.get("under").and_then(Value::as_array) else {
            return h;
        };
        let mut h = h;
        for o in under {
            let o = text(o);
            h = match h {
                Handle::Bucket(b, t) => Handle::Bucket(b.under(o.as_str()), t),
                Handle::Coded(b) => Handle::Coded(b.under(o.as_str())),
                Handle::Counters(c) => Handle::Counters(c.under(o.as_str())),
                Handle::RateLimit(r) => Handle::RateLimit(r.under(o.as_str())),
                Handle::Quota(q) => Handle::Quota(q.under(o.as_str())),
                Handle::Once(x, t) => Handle::Once(x.under(o.as_str()), t),
            };
        }
        h
    }

    fn reopen(&mut self) {
        let at = self.now();
        let _ = self.store.close();
        self.store = Store::open_with(&self.dir, Options::new().test_clock(at)).unwrap();
        self.handles.clear();
        for step in self.opens.clone() {
            self.open_handle(&step).unwrap();
        }
    }

    /// Runs one call; `tx` routes bucket calls through a transaction.
    fn call(&self, step: &Value, tx: Option<&BindingTx>, index: usize) -> Result<Out, Error> {
        let op = step["op"].as_str().unwrap();
        // A step marked outside uses the handle itself, from inside the transaction.
        let tx = tx.filter(|_| step.get("outside").and_then(Value::as_bool) != Some(true));
        let scope = tx.map_or(Scope::Direct, Scope::Tx);
        let key = step.get("key").map(|k| text(k).replace("{i}", &index.to_string()));
        let k = || key.clone().expect("the call names a key").into_bytes();
        let n = step.get("n").and_then(Value::as_i64).unwrap_or(1);
        // A saved version by its name, or `{"text": ...}`: text as a caller gives it.
        let if_version = match step.get("if_version") {
            Some(Value::Object(o)) => Some(text(&o["text"]).parse::<Version>()?),
            Some(v) => Some(self.versions[v.as_str().unwrap()]),
            None => None,
        };
        let ttl = step.get("ttl").map(span).transpose()?;
        match (self.handle(step), op) {
            (Handle::Coded(b), "set") => Ok(Out::Json(json!(b.set(k(), &string(&step["value"]))?.get()))),
            (Handle::Coded(b), "get") => Ok(Out::Value(Ty::String, b.get(k())?.map(|s| Raw::text(&s)))),
            (Handle::Coded(b), "take") => Ok(Out::Value(Ty::String, b.take(k())?.map(|s| Raw::text(&s)))),
            (Handle::Bucket(b, ty), "set") => {
                let at = match step.get("expires_in").and_then(Value::as_str) {
                    Some(e) => Some(match e.strip_prefix('-') {
                        Some(back) => self.now() - parse_duration(back)?,
                        None => self.now() + parse_duration(e)?,
                    }),
                    None => None,
                };
                // A ttl and a time both given go to the core as they are, which refuses them.
                let opts = b.options_for(WriteCall::Set, &k(), ttl, at, if_version)?;
                let value = to_raw(ty, &step["value"]);
                let v = scope.set(&b, &k(), value, opts)?;
                Ok(Out::Json(json!(v.get())))
            }
            (Handle::Bucket(b, ty), "get") => {
                let e = scope.entry(&b, &k())?;
                read(&b, &key.unwrap(), ty, e.map(|e| e.value))
            }
            (Handle::Bucket(b, _), "has") => Ok(Out::Json(json!(scope.has(&b, &k())?))),
            (Handle::Bucket(b, ty), "entry") => {
                let Some(e) = b.entry(&k())? else {
                    return Ok(Out::Json(Value::Null));
                };
                check_type(ty, &e.value).map_err(|err| err.at(b.name(), key.clone().unwrap()))?;
                let expires_in = e
                    .expires_at
                    .map(|t| t.duration_since(self.now()).unwrap().as_millis() as u64);
                Ok(Out::Entry(ty, e.value, e.version.get(), expires_in, None))
            }
            (Handle::Bucket(b, ty), "create") => {
                let value = to_raw(ty, &step["value"]);
                let c = scope.create(&b, &k(), value, ttl.map(Expiry::In))?;
                Ok(Out::Json(json!(c.written())))
            }
            (Handle::Bucket(b, ty), "create_entry") => {
                let value = to_raw(ty, &step["value"]);
                let c = scope.create(&b, &k(), value.clone(), ttl.map(Expiry::In))?;
                let expires_in = c
                    .expires_at()
                    .map(|t| t.duration_since(self.now()).unwrap().as_millis() as u64);
                let (written, version) = (c.written(), c.version().get());
                let value = match c {
                    tinystore::Created::Found(e) => e.value,
                    tinystore::Created::Written { .. } => value,
                };
                Ok(Out::Entry(ty, value, version, expires_in, Some(written)))
            }
            (Handle::Bucket(b, ty), "take") => {
                let taken = scope.take(&b, &k(), if_version, move |e| check_type(ty, &e.value))?;
                Ok(Out::Value(ty, taken.map(|e| e.value)))
            }
            (Handle::Bucket(b, _), "delete") => Ok(Out::Json(json!(scope.delete(&b, &k(), if_version)?))),
            (Handle::Bucket(b, _), "expire") => {
                // No ttl is a shape the core refuses, as for every language.
                let (expiry, if_version) = b.expire_options(&k(), ttl, None, if_version)?;
                Ok(Out::Json(json!(b.expire(&k(), expiry, if_version)?)))
            }
            (Handle::Bucket(b, _), "clear") => {
                scope.clear(&b)?;
                Ok(Out::Nothing)
            }
            (Handle::Bucket(b, _), "list") => {
                let opts = ListOptions {
                    after: step.get("after").map(|a| tinystore::Key(text(a).into_bytes())),
                    // A case's limit may be negative, which a usize cannot hold:
                    // it goes through the check every binding's signed limit does.
                    limit: step
                        .get("limit")
                        .map(|l| tinystore::page_size(l.as_i64().unwrap()).map_err(|e| e.in_bucket(b.name())))
                        .transpose()?,
                };
                let page = b.list(&opts)?;
                let keys: Vec<String> = page.entries.iter().map(|e| lossy(&e.key)).collect();
                Ok(Out::Json(
                    json!({ "keys": keys, "next": page.next.as_ref().map(lossy) }),
                ))
            }
            (Handle::Bucket(b, _), "all") => {
                let keys = b
                    .all()
                    .map(|e| e.map(|e| lossy(&e.key)))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Out::Json(json!({ "keys": keys, "count": keys.len() })))
            }
            (Handle::Counters(c), "add") => Ok(Out::Json(json!(scope.counter_add(&c, &k(), n)?))),
            (Handle::Counters(c), "max") => Ok(Out::Json(json!(scope.counter_max(&c, &k(), n)?))),
            (Handle::Counters(c), "get") => Ok(Out::Json(json!(scope.counter_get(&c, &k())?))),
            (Handle::Counters(c), "delete") => scope.counter_delete(&c, &k()).map(|_| Out::Nothing),
            (Handle::RateLimit(r), _) if tx.is_some() => Err(tx.unwrap().refuse_rate_limit(&r)),
            (Handle::RateLimit(r), "allow") => Ok(Out::Allow(r.allow_n(k(), n as u64)?)),
            (Handle::RateLimit(r), "peek") => Ok(Out::Allow(r.peek(k())?)),
            (Handle::RateLimit(r), "reset") => r.reset(k()).map(|_| Out::Nothing),
            (Handle::Quota(q), "allow") => Ok(Out::Allow(scope.quota_allow(&q, &k(), n as u64)?)),
            (Handle::Quota(q), "peek") => Ok(Out::Allow(scope.quota_peek(&q, &k())?)),
            (Handle::Quota(q), "refund") => Ok(Out::Allow(scope.quota_refund(&q, &k(), n as u64)?)),
            (Handle::Quota(q), "reset") => scope.quota_reset(&q, &k()).map(|_| Out::Nothing),
            // A run inside a transaction is refused by the engine: this
            // thread holds the transaction (`hold_thread`).
            (Handle::Once(o, ty), "run") => self.run_once(&o, ty, &k(), step),
            (Handle::Once(o, ty), "get") => match tx {
                Some(_) => {
                    let raw = scope.once_get(&o, &k())?;
                    if let Some(r) = &raw {
                        check_type(ty, r)?;
                    }
                    Ok(Out::Value(ty, raw))
                }
                None => read_once(&o, &key.unwrap(), ty),
            },
            (Handle::Once(o, _), "delete") => Ok(Out::Json(json!(scope.once_delete(&o, &k())?))),
            (_, op) => panic!("the Rust runner does not know the call {op:?} on this kind of handle"),
        }
    }

    fn run_once(&self, o: &RawOnce, ty: Ty, key: &[u8], step: &Value) -> Result<Out, Error> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let caller = self.caller.lock().unwrap().clone();
        o.begin(key, &caller, move |r| {
            let _ = tx.send(r);
        })?;
        match rx.recv().unwrap()? {
            Begun::Kept(raw) => Ok(Out::Value(ty, Some(raw))),
            Begun::Run(claim) => {
                self.ran.fetch_add(1, Ordering::SeqCst);
                // Steps of the run's own function, inside the run.
                if let Some(inside) = step.get("inside").and_then(Value::as_array) {
                    *self.caller.lock().unwrap() = caller.inside_run(&claim);
                    let outcome = inside.iter().try_for_each(|inner| {
                        let out = self.call(inner, None, 0);
                        check(inner, out, self).map_err(|e| format!("inside the run, {}: {e}", inner["op"]))
                    });
                    *self.caller.lock().unwrap() = caller;
                    if let Err(e) = outcome {
                        claim.abandon();
                        return Err(Error::new(ErrorKind::Invalid, format!("a step failed: {e}")));
                    }
                }
                if let Some(msg) = step.get("fails") {
                    claim.abandon();
                    return Err(Error::new(
                        ErrorKind::Invalid,
                        format!("FAILED: {}", msg.as_str().unwrap()),
                    ));
                }
                let raw = to_raw(ty, &step["returns"]);
                let (dtx, drx) = std::sync::mpsc::sync_channel(1);
                claim.keep(raw.clone(), move |r| {
                    let _ = dtx.send(r);
                });
                drx.recv().unwrap()?;
                Ok(Out::Value(ty, Some(raw)))
            }
        }
    }
}

/// A string value of a case.
fn string(v: &Value) -> String {
    v.as_str().expect("a string value").to_owned()
}

fn read(b: &RawBucket, key: &str, ty: Ty, raw: Option<Raw>) -> Result<Out, Error> {
    if let Some(r) = &raw {
        check_type(ty, r).map_err(|e| e.at(b.name(), key.to_owned()))?;
    }
    Ok(Out::Value(ty, raw))
}

fn read_once(o: &RawOnce, key: &str, ty: Ty) -> Result<Out, Error> {
    let raw = o.get(key)?;
    if let Some(r) = &raw {
        check_type(ty, r)?;
    }
    Ok(Out::Value(ty, raw))
}

/// Whether an answer is a success, for `race`.
fn success(out: &Result<Out, Error>) -> bool {
    match out {
        Err(_) => false,
        Ok(Out::Nothing) => true,
        Ok(Out::Json(v)) => !matches!(v, Value::Null | Value::Bool(false)),
        Ok(Out::Value(_, v)) => v.is_some(),
        Ok(Out::Allow(a)) => a.ok,
        Ok(Out::Entry(..)) => true,
    }
}

fn millis_of(v: &Value) -> Option<u64> {
    v.as_str().map(|s| parse_duration(s).unwrap().as_millis() as u64)
}

fn check_allow(expected: &Value, a: &Allowance, now: SystemTime) -> Result<(), String> {
    let since = |t: Option<SystemTime>| t.map(|t| t.duration_since(now).unwrap().as_millis() as u64);
    let mut problems = Vec::new();
    if let Some(ok) = expected.get("ok")
        && ok.as_bool() != Some(a.ok)
    {
        problems.push(format!("ok {} != {ok}", a.ok));
    }
    if let Some(left) = expected.get("left")
        && left.as_u64() != Some(a.left)
    {
        problems.push(format!("left {} != {left}", a.left));
    }
    if let Some(r) = expected.get("retry_in")
        && millis_of(r) != since(a.retry_at)
    {
        problems.push(format!("retry_in {:?} ms != {r}", since(a.retry_at)));
    }
    if let Some(ws) = expected.get("windows").and_then(Value::as_object) {
        for (name, w) in ws {
            let Some(got) = a.windows.get(name) else {
                problems.push(format!("no window {name}"));
                continue;
            };
            let fields: BTreeMap<&str, Option<u64>> = [
                ("used", Some(got.used)),
                ("limit", Some(got.limit)),
                ("left", Some(got.left)),
            ]
            .into();
            for (f, v) in fields {
                if let Some(want) = w.get(f)
                    && want.as_u64() != v
                {
                    problems.push(format!("{name}.{f} {v:?} != {want}"));
                }
            }
            if let Some(r) = w.get("resets_in")
                && millis_of(r) != since(got.resets_at)
            {
                problems.push(format!("{name}.resets_in {:?} ms != {r}", since(got.resets_at)));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// Compares an answer with a step's `expect` or `error`.
fn check(step: &Value, out: Result<Out, Error>, runner: &Runner) -> Result<(), String> {
    if let Some(code) = step.get("error").and_then(Value::as_str) {
        let e = match out {
            Ok(_) => return Err(format!("expected {code}, got success")),
            Err(e) => e,
        };
        let ok = if code == "FAILED" {
            e.message().starts_with("FAILED:")
        } else {
            e.kind().code() == code
        };
        if !ok {
            return Err(format!("expected {code}, got {e}"));
        }
        if let Some(b) = step.get("error_bucket")
            && e.bucket() != b.as_str()
        {
            return Err(format!("the error should name bucket {b}: {e}"));
        }
        if let Some(k) = step.get("error_key")
            && e.path() != Some(&text(k))
        {
            return Err(format!("the error should name key {k}: {e}"));
        }
        if let Some(m) = step.get("error_message")
            && m.as_str() != Some(e.message())
        {
            return Err(format!("the error should say {m}: {:?}", e.message()));
        }
        if let Some(m) = step.get("error_text").and_then(Value::as_str)
            && e.to_string() != format!("{}: {m}", e.word())
        {
            return Err(format!("the error should read {m:?} after its kind: {e}"));
        }
        return Ok(());
    }
    let out = out.map_err(|e| format!("unexpected error: {e}"))?;
    let Some(expected) = step.get("expect") else {
        return Ok(());
    };
    match out {
        Out::Nothing => Err("a call that answers nothing has no expect".into()),
        Out::Value(ty, v) => match (expected, v) {
            (Value::Null, None) => Ok(()),
            (e, Some(raw)) if !e.is_null() && same_value(ty, e, &raw) => Ok(()),
            (e, got) => Err(format!("expected {e}, got {got:?}")),
        },
        Out::Allow(a) => check_allow(expected, &a, runner.now()),
        Out::Entry(ty, raw, version, expires_in, written) => {
            if expected.is_null() {
                return Err(format!("expected no entry, got {raw:?}"));
            }
            for (f, w) in expected.as_object().expect("an entry's expect is an object") {
                let fine = match f.as_str() {
                    "value" => same_value(ty, w, &raw),
                    "version" => Some(version) == runner.versions.get(w.as_str().unwrap()).map(|v| v.get()),
                    "expires_in" => expires_in == millis_of(w),
                    "written" => written.is_some() && w.as_bool() == written,
                    other => panic!("an entry has no field {other:?}"),
                };
                if !fine {
                    return Err(format!(
                        "{f}: expected {w}, got value {raw:?}, version {version}, expires_in {expires_in:?} ms"
                    ));
                }
            }
            Ok(())
        }
        Out::Json(got) => {
            if let (Some(want), Some(obj)) = (expected.as_object(), got.as_object()) {
                for (f, w) in want {
                    if obj.get(f) != Some(w) {
                        return Err(format!("{f}: expected {w}, got {got}"));
                    }
                }
                Ok(())
            } else if &got == expected {
                Ok(())
            } else {
                Err(format!("expected {expected}, got {got}"))
            }
        }
    }
}

impl Runner {
    /// A `tx` step inside a transaction: the answer of opening another of
    /// the same store from the thread that holds the first.
    fn nested_tx(&self) -> Result<Out, Error> {
        let (tx, done) = self.store.transaction()?;
        tx.commit()?;
        done.recv().unwrap()?;
        Ok(Out::Nothing)
    }

    fn step(&mut self, step: &Value) -> Result<(), String> {
        let op = step["op"].as_str().unwrap();
        match op {
            "open" => {
                let r = self.open_handle(step);
                if r.is_ok() && step.get("error").is_none() {
                    self.opens.push(step.clone());
                }
                check(step, r.map(|_| Out::Nothing), self)
            }
            "advance" => {
                let by = step["by"].as_str().unwrap();
                let r = match by.strip_prefix('-') {
                    Some(back) => {
                        let d = parse_duration(back).map_err(|e| e.to_string())?;
                        self.store.clock().set(self.now() - d)
                    }
                    None => self
                        .store
                        .clock()
                        .advance(parse_duration(by).map_err(|e| e.to_string())?)
                        .map(|_| ()),
                };
                check(step, r.map(|_| Out::Nothing), self)
            }
            "maintain" => {
                let m = self.store.maintain().map_err(|e| e.to_string())?;
                let got =
                    json!({ "flushed": m.flushed, "renewed": m.renewed, "cleared": m.cleared, "expired": m.expired });
                for (f, w) in step.get("expect").and_then(Value::as_object).into_iter().flatten() {
                    if got.get(f) != Some(w) {
                        return Err(format!("maintain {f}: expected {w}, got {got}"));
                    }
                }
                Ok(())
            }
            "reopen" => {
                self.reopen();
                Ok(())
            }
            "close" => self.store.close().map_err(|e| e.to_string()),
            "race" => {
                let n = step["n"].as_u64().unwrap() as usize;
                let inner = &step["step"];
                let before = self.ran.load(Ordering::SeqCst);
                let this = &*self;
                let outs: Vec<Result<Out, Error>> = std::thread::scope(|s| {
                    let hs: Vec<_> = (0..n).map(|i| s.spawn(move || this.call(inner, None, i))).collect();
                    hs.into_iter().map(|h| h.join().unwrap()).collect()
                });
                let wins = outs.iter().filter(|o| success(o)).count();
                let want = step["expect_successes"].as_u64().unwrap() as usize;
                if wins != want {
                    return Err(format!("race: {wins} of {n} succeeded, expected {want}"));
                }
                if let Some(ran) = step.get("expect_ran") {
                    let got = self.ran.load(Ordering::SeqCst) - before;
                    if Some(got as u64) != ran.as_u64() {
                        return Err(format!("race: the function ran {got} times, expected {ran}"));
                    }
                }
                Ok(())
            }
            "tx" => {
                let (tx, done) = self.store.transaction().map_err(|e| e.to_string())?;
                // This thread makes the transaction's calls: a call of a
                // handle outside it is refused, not a wait for itself.
                tx.hold_thread();
                let run = |tx: &BindingTx| -> Result<(), String> {
                    for inner in step["steps"].as_array().unwrap() {
                        let out = if inner["op"] == "tx" {
                            self.nested_tx()
                        } else {
                            self.call(inner, Some(tx), 0)
                        };
                        check(inner, out, self).map_err(|e| format!("in tx, {}: {e}", inner["op"]))?;
                    }
                    Ok(())
                };
                let panics = step.get("fail").and_then(Value::as_str) == Some("panic");
                let fail = panics || step.get("fail").and_then(Value::as_bool).unwrap_or(false);
                if panics {
                    // A panic while the session is open drops it, which rolls it back.
                    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                        let outcome = run(&tx);
                        if outcome.is_ok() {
                            panic!("the case's panic inside the transaction");
                        }
                        outcome
                    }));
                    if let Ok(Err(e)) = caught {
                        return Err(e);
                    }
                } else {
                    run(&tx)?;
                    if fail { tx.rollback() } else { tx.commit() }.map_err(|e| e.to_string())?;
                }
                match (done.recv().unwrap(), fail) {
                    (Ok(()), false) | (Err(_), true) => Ok(()),
                    (r, _) => Err(format!("tx ended with {r:?}")),
                }
            }
            _ => {
                if step.get("save").is_some() {
                    let out = self.call(step, None, 0);
                    let name = step["save"].as_str().unwrap().to_owned();
                    match &out {
                        Ok(Out::Json(v)) => {
                            self.versions.insert(name, Version::from_raw(v.as_i64().unwrap()));
                        }
                        Ok(Out::Entry(_, _, v, _, _)) => {
                            self.versions.insert(name, Version::from_raw(*v));
                        }
                        _ => {}
                    }
                    return check(step, out, self);
                }
                let out = self.call(step, None, 0);
                check(step, out, self)
            }
        }
    }
}

fn cases() -> Vec<Case> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../cases");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            let file = f.file_name().unwrap().to_string_lossy().into_owned();
            v.as_array()
                .unwrap()
                .iter()
                .map(|c| Case {
                    file: file.clone(),
                    id: c["id"].as_str().unwrap().to_owned(),
                    title: c["title"].as_str().unwrap().to_owned(),
                    steps: c["steps"].as_array().unwrap().clone(),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Runs every case, each on a store at the location `place` gives for its
/// index; returns the cases run per contract id and each failure with its
/// case's file.
fn run_all(place: impl Fn(usize) -> PathBuf) -> (BTreeMap<u32, usize>, Vec<(String, String)>) {
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for (index, case) in cases().into_iter().enumerate() {
        let dir = place(index);
        let start = UNIX_EPOCH + Duration::from_secs(START_SECS);
        let mut runner = Runner {
            store: Store::open_with(&dir, Options::new().test_clock(start)).unwrap(),
            dir,
            opens: Vec::new(),
            handles: HashMap::new(),
            versions: HashMap::new(),
            ran: Arc::new(AtomicUsize::new(0)),
            caller: Mutex::new(CallerContext::new()),
        };
        for (i, step) in case.steps.iter().enumerate() {
            if let Err(e) = runner.step(step) {
                let what = format!("{} {:?}, step {} ({}): {e}", case.id, case.title, i + 1, step["op"]);
                failures.push((case.file.clone(), what));
                break;
            }
        }
        let _ = runner.store.close();
        let n: u32 = case.id.trim_start_matches("KV-").parse().unwrap();
        *counts.entry(n).or_default() += 1;
    }
    (counts, failures)
}

#[test]
fn conformance_cases_kv01_to_kv19() {
    let dirs = std::cell::RefCell::new(Vec::new());
    let (counts, failures) = run_all(|_| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        dirs.borrow_mut().push(dir);
        path
    });
    let failures: Vec<String> = failures.into_iter().map(|(_, f)| f).collect();
    let report: String = counts
        .iter()
        .map(|(id, n)| format!("conformance rust KV-{id} {n}\n"))
        .collect();
    print!("{report}");
    // tests/conformance/report.py joins every language's counts from here.
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../target/conformance");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("rust.txt"), report).unwrap();
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    for id in 1..=19 {
        assert!(counts.contains_key(&id), "no case for KV-{id}");
    }
}

/// The case files that need what a PostgreSQL store does not carry yet,
/// why, and the text of the refusal, as every runner reads them from
/// `tests/conformance/not_on_postgres.json`.
struct NotCarried {
    refusal: String,
    files: Vec<(String, String)>,
}

fn not_on_postgres_yet() -> NotCarried {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../not_on_postgres.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let files: Vec<(String, String)> = v["files"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(f, why)| (f.clone(), why.as_str().unwrap().to_owned()))
        .collect();
    let known: Vec<String> = cases().into_iter().map(|c| c.file).collect();
    for (f, _) in &files {
        assert!(known.contains(f), "{} names {f}, which is no case file", path.display());
    }
    NotCarried {
        refusal: v["refusal"].as_str().unwrap().to_owned(),
        files,
    }
}

/// The PostgreSQL server CI starts (`make pg-start`; make exports its
/// location). Without one the run fails, saying how to start one.
fn postgres_server() -> String {
    match std::env::var("TINYSTORE_TEST_PG") {
        Ok(s) if !s.is_empty() => s,
        _ => panic!(
            "the PostgreSQL run needs a server: run `make pg-start` (a cluster on 127.0.0.1:55432), then \
             `export TINYSTORE_TEST_PG=postgres://postgres@127.0.0.1:55432/postgres`, or run it through make"
        ),
    }
}

/// Drops the schemas `conformance_0`.. so that each case starts empty.
fn drop_schemas(server: &str, n: usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(server, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        let drops: String = (0..n)
            .map(|i| format!("DROP SCHEMA IF EXISTS conformance_{i} CASCADE;"))
            .collect();
        c.batch_execute(&drops).await.unwrap();
    });
}

#[test]
fn conformance_cases_on_postgres() {
    let server = postgres_server();
    drop_schemas(&server, cases().len());
    let sep = if server.contains('?') { '&' } else { '?' };
    let (counts, failures) = run_all(|i| PathBuf::from(format!("{server}{sep}schema=conformance_{i}")));
    let not_carried = not_on_postgres_yet();
    let mut wrong = Vec::new();
    let mut refused: BTreeMap<&str, usize> = BTreeMap::new();
    for (file, f) in &failures {
        match not_carried.files.iter().find(|(name, _)| name == file) {
            Some((name, _)) if f.contains(&not_carried.refusal) => *refused.entry(name).or_default() += 1,
            _ => wrong.push(format!("{file}: {f}")),
        }
    }
    let ran: usize = counts.values().sum();
    println!(
        "conformance rust on PostgreSQL: {} of {ran} cases passed, {} refused as not supported yet",
        ran - failures.len(),
        failures.len() - wrong.len()
    );
    for (name, why) in &not_carried.files {
        println!(
            "  {name}: {why} ({} cases refused)",
            refused.get(name.as_str()).copied().unwrap_or(0)
        );
    }
    assert!(
        wrong.is_empty(),
        "{} case(s) failed on PostgreSQL:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
