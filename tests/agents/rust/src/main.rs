//! The Rust agent of the cross-language tests. Commands and what they print
//! are in `tests/interchange/README.md` and `tests/processes/README.md`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;
use tinystore::{ListOptions, Raw, RawBucket, Store};
use tinystore_conformance::{Ty, lossy, same_value, text, to_raw};

mod clear_race;
mod handbook;
mod limits;
mod raw_copy;

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Waits for the start time cross.py gives every racer (CROSS_START_AT_MS),
/// so that agents of slow-starting languages race too.
fn start_line() {
    let at: u64 = std::env::var("CROSS_START_AT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    if at > now {
        std::thread::sleep(Duration::from_millis(at - now));
    }
}

fn fixture() -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interchange/values.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn bucket(store: &Store, ty: &str) -> tinystore::Result<RawBucket> {
    RawBucket::open(store, &format!("ix-{ty}"), None, None)
}

fn ix_write(store: &Store, owner: &str) -> tinystore::Result<()> {
    for item in fixture() {
        let ty = item["type"].as_str().unwrap();
        let b = bucket(store, ty)?.under(owner);
        b.set(
            text(&item["key"]).as_bytes(),
            to_raw(Ty::parse(ty), &item["value"]),
            Default::default(),
        )?;
    }
    say("ok");
    Ok(())
}

/// What the writer of `owner`'s branch wrote for an item. JS numbers carry no
/// NaN payload, so the JS agents (`node`, `bun`) write a NaN marked
/// `"js": "NaN"` as JS's own NaN, 7ff8000000000000 (tests/conformance/README.md).
fn expected(item: &Value, owner: &str) -> Value {
    if matches!(owner, "node" | "bun") && item["value"]["js"] == "NaN" {
        return serde_json::json!({ "bits": "7ff8000000000000" });
    }
    item["value"].clone()
}

fn ix_read(store: &Store, owner: &str) -> tinystore::Result<bool> {
    let items = fixture();
    let mut bad = 0;
    for item in &items {
        let (ty, key) = (item["type"].as_str().unwrap(), text(&item["key"]));
        let b = bucket(store, ty)?.under(owner);
        match b.entry(key.as_bytes())? {
            Some(e) if same_value(Ty::parse(ty), &expected(item, owner), &e.value) => {}
            got => {
                bad += 1;
                let got = got.map(|e| format!("{:?}", e.value).chars().take(80).collect::<String>());
                say(&format!("MISMATCH {owner} {ty} {key:?}: got {got:?}"));
            }
        }
    }
    let mut types: Vec<&str> = items.iter().map(|i| i["type"].as_str().unwrap()).collect();
    types.dedup();
    for ty in types {
        let mut want: Vec<Vec<u8>> = items
            .iter()
            .filter(|i| i["type"] == ty)
            .map(|i| text(&i["key"]).into_bytes())
            .collect();
        want.sort();
        let page = bucket(store, ty)?.under(owner).list(&ListOptions {
            after: None,
            limit: Some(1000),
        })?;
        let got: Vec<Vec<u8>> = page.entries.iter().map(|e| e.key.as_bytes().to_vec()).collect();
        if got != want {
            bad += 1;
            let show = |ks: &[Vec<u8>]| ks.iter().map(|k| lossy(&tinystore::Key(k.clone()))).collect::<Vec<_>>();
            say(&format!(
                "MISMATCH {owner} {ty} list order: got {:?}, want {:?}",
                show(&got),
                show(&want)
            ));
        }
    }
    if bad == 0 {
        say(&format!("ok {}", items.len()));
    }
    Ok(bad == 0)
}

fn run(args: &[String]) -> tinystore::Result<bool> {
    let cmd = args.first().map(String::as_str).unwrap_or("");
    let store = Store::open(args.get(1).map(String::as_str).unwrap_or("data"))?;
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let num = |i: usize| arg(i).parse::<u64>().unwrap_or(0);
    if let Some(ok) = limits::run(&store, cmd, &arg).or_else(|| clear_race::run(&store, cmd, &arg)) {
        let ok = ok?;
        store.close()?;
        return Ok(ok);
    }
    let user = |i: usize| {
        arg(i)
            .parse::<i64>()
            .map_err(|_| tinystore::Error::new(tinystore::ErrorKind::Invalid, format!("a user id, not {:?}", arg(i))))
    };
    let ok = match cmd {
        "ix-write" => ix_write(&store, &arg(2)).map(|_| true)?,
        "ix-read" => ix_read(&store, &arg(2))?,
        "hb-write" => handbook::write(&store, &arg(2), user(3)?)?,
        "hb-read" => handbook::read(&store, &arg(2), user(3)?)?,
        "hb-take" => handbook::take(&store, &arg(2), user(3)?)?,
        "ix-raw-copy" => {
            let dst = Store::open(arg(2))?;
            let mut types: Vec<String> = fixture()
                .iter()
                .map(|i| i["type"].as_str().unwrap().to_owned())
                .collect();
            types.sort();
            types.dedup();
            say(&raw_copy::copy(&store, &dst, &arg(3), &types)?);
            dst.close()?;
            true
        }
        "take-setup" => {
            let b = RawBucket::open(&store, "race-take", None, None)?;
            for r in 0..num(2) {
                b.set(format!("r{r}").as_bytes(), Raw::text("prize"), Default::default())?;
            }
            say("ready");
            true
        }
        "take-rounds" => {
            let b = RawBucket::open(&store, "race-take", None, None)?;
            start_line();
            for r in 0..num(2) {
                if b.take(format!("r{r}").as_bytes(), None, |_| Ok(()))?.is_some() {
                    say(&format!("won {r}"));
                }
            }
            true
        }
        "once-run" | "once-hang" => {
            let once = store
                .once::<String>("race-once")
                .keep(Duration::from_secs(86_400))
                .open()?;
            let hang = cmd == "once-hang";
            let (hold, answer) = (Duration::from_millis(num(3)), arg(4));
            let got = once.run(arg(2), || {
                if hang {
                    say("running");
                    loop {
                        std::thread::sleep(Duration::from_secs(3600));
                    }
                }
                say("ran");
                std::thread::sleep(hold);
                Ok(answer)
            })?;
            say(&format!("answer {got}"));
            true
        }
        "quota-allows" => {
            let q = store
                .quota("race-quota")
                .window("daily", 10, Duration::from_secs(86_400))
                .open()?;
            start_line();
            let mut passed = 0;
            for _ in 0..num(2) {
                passed += q.allow("u")?.ok as u64;
            }
            say(&format!("passed {passed}"));
            true
        }
        "counter-adds" => {
            let c = store.counters("race-counter").open()?;
            start_line();
            for _ in 0..num(2) {
                c.add("k", 1)?;
            }
            say("done");
            true
        }
        "counter-get" => {
            say(&format!("value {}", store.counters("race-counter").open()?.get("k")?));
            true
        }
        other => {
            eprintln!("tinystore-agent: unknown command {other:?}");
            false
        }
    };
    store.close()?;
    Ok(ok)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("tinystore-agent: {e}");
            ExitCode::FAILURE
        }
    }
}
