//! The handbook's handles ("Sessions and limits", and the quota guide),
//! declared exactly as the chapter declares them in Rust, for the commands
//! of `tests/interchange/handbook.md`: `hb-write` writes what the chat
//! writes, `hb-read` reads what another language's chat wrote, `hb-take`
//! signs in with another language's code and signs its user out.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tinystore::{Allowance, Bucket, Once, Quota, RateLimit, Store};

use crate::say;

#[derive(Serialize, Deserialize)]
struct Session {
    user_id: i64,
    device: String,
}

#[derive(Serialize, Deserialize, Clone)]
struct Sent {
    id: i64,
}

fn digest(secret: &str) -> String {
    format!("{:x}", Sha256::digest(secret)) // the sha2 crate
}

/// The chapter's five handles.
struct Chat {
    codes: Bucket<i64>,
    sessions: Bucket<Session>,
    guesses: RateLimit,
    messages: Quota,
    sends: Once<Sent>,
}

fn open(store: &Store) -> tinystore::Result<Chat> {
    let codes = store
        .bucket::<i64>("sign-in-codes")
        .ttl(Duration::from_mins(15))
        .open()?;
    let sessions = store
        .bucket::<Session>("sessions")
        .idle(Duration::from_hours(24 * 30))
        .open()?;
    let guesses = store
        .rate_limit("sign-in-guesses")
        .rate(5, Duration::from_mins(1))
        .burst(5)
        .open()?;
    let messages = store
        .quota("messages")
        .window("session", 100, Duration::from_hours(5))
        .window("weekly", 300, Duration::from_hours(24 * 7))
        .open()?;
    let sends = store.once::<Sent>("sends").keep(Duration::from_hours(24)).open()?;
    Ok(Chat {
        codes,
        sessions,
        guesses,
        messages,
        sends,
    })
}

/// Counts what does not match, printing a line for each.
struct Checks(u32);

impl Checks {
    fn check(&mut self, owner: &str, what: &str, ok: bool, got: impl std::fmt::Debug) {
        if !ok {
            self.0 += 1;
            say(&format!("MISMATCH {owner} {what}: got {got:?}"));
        }
    }
}

/// Writes what the chat writes for one user of `owner`'s language.
pub fn write(store: &Store, owner: &str, user_id: i64) -> tinystore::Result<bool> {
    let Chat {
        codes,
        sessions,
        guesses,
        messages,
        sends,
    } = open(store)?;
    codes.set(digest(&format!("{owner}-code")), &user_id)?;
    codes.set(digest(&format!("{owner}-code-to-take")), &user_id)?;
    sessions.under(user_id).set(
        digest(&format!("{owner}-token")),
        &Session {
            user_id,
            device: "web".into(),
        },
    )?;
    for _ in 0..5 {
        guesses.allow(format!("{owner}-ip"))?;
    }
    messages.allow(user_id)?;
    sends.run(format!("{owner}-request"), || -> tinystore::Result<Sent> {
        Ok(Sent { id: user_id * 10 + 1 })
    })?;
    say("ok");
    Ok(true)
}

/// Reads what `owner`'s language wrote for its user, through this language's handles.
pub fn read(store: &Store, owner: &str, user_id: i64) -> tinystore::Result<bool> {
    let Chat {
        codes,
        sessions,
        guesses,
        messages,
        sends,
    } = open(store)?;
    let mut c = Checks(0);
    let code = codes.get(digest(&format!("{owner}-code")));
    c.check(
        owner,
        "sign-in-codes get",
        matches!(code, Ok(Some(id)) if id == user_id),
        &code,
    );
    let session = sessions.under(user_id).get(digest(&format!("{owner}-token")));
    let shown = session
        .as_ref()
        .map(|s| s.as_ref().map(|s| (s.user_id, s.device.clone())));
    c.check(
        owner,
        "sessions get",
        matches!(&session, Ok(Some(s)) if s.user_id == user_id && s.device == "web"),
        &shown,
    );
    let guess = guesses.peek(format!("{owner}-ip"));
    c.check(
        owner,
        "sign-in-guesses peek",
        matches!(&guess, Ok(a) if a.left <= 3),
        &guess,
    );
    let used = messages.peek(user_id);
    c.check(owner, "messages peek", used.as_ref().is_ok_and(counted_once), &used);
    let mut ran = false;
    let sent = sends.run(format!("{owner}-request"), || -> tinystore::Result<Sent> {
        ran = true;
        Ok(Sent { id: 0 })
    });
    c.check(
        owner,
        "sends run",
        !ran && matches!(&sent, Ok(s) if s.id == user_id * 10 + 1),
        (ran, sent.map(|s| s.id)),
    );
    if c.0 == 0 {
        say("ok 5");
    }
    Ok(c.0 == 0)
}

/// One use in each window of the quota, and the guide's limits.
fn counted_once(a: &Allowance) -> bool {
    let window = |name: &str, limit: u64| a.window(name).is_some_and(|w| w.used == 1 && w.limit == limit);
    a.ok && window("session", 100) && window("weekly", 300)
}

/// Signs in with the code `owner`'s language wrote (a `take`, so a second
/// take finds nothing), then signs its user out everywhere.
pub fn take(store: &Store, owner: &str, user_id: i64) -> tinystore::Result<bool> {
    let Chat { codes, sessions, .. } = open(store)?;
    let mut c = Checks(0);
    let key = digest(&format!("{owner}-code-to-take"));
    let first = codes.take(&key);
    c.check(
        owner,
        "sign-in-codes take",
        matches!(first, Ok(Some(id)) if id == user_id),
        &first,
    );
    let second = codes.take(&key);
    c.check(owner, "sign-in-codes take again", matches!(second, Ok(None)), &second);
    sessions.under(user_id).clear()?;
    let gone = sessions.under(user_id).has(digest(&format!("{owner}-token")));
    c.check(owner, "sessions clear", matches!(gone, Ok(false)), &gone);
    if c.0 == 0 {
        say("ok 3");
    }
    Ok(c.0 == 0)
}
