//! The example chat (sign-in codes, sessions and limits), in Rust, on a local store.
//!
//! `cargo run -p tinystore-example-chat -- data` signs a user in with a
//! one-time code, keeps them signed in, limits their guesses and messages,
//! and answers a request sent twice only once, printing what happens.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tinystore::{Bucket, Once, Quota, RateLimit, Store};

#[derive(Serialize, Deserialize, Clone, Debug)]
struct Session {
    user_id: i64,
    device: String,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
struct Sent {
    id: i64,
}

fn digest(secret: &str) -> String {
    format!("{:x}", Sha256::digest(secret))
}

/// A mailer that prints instead of sending.
fn mail(to: &str, body: &str) {
    println!("  [mail to {to}] {body}");
}

/// A small random number from the clock and a counter, so the example needs
/// no random crate; real code uses a cryptographic generator.
fn random_below(n: u64, salt: u64) -> u64 {
    let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64;
    let mut x = t ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x % n
}

enum Response {
    SignedIn { cookie: String },
    Unauthorized,
    TooMany { retry_in: Duration },
}

struct Chat {
    codes: Bucket<i64>,
    sessions: Bucket<Session>,
    guesses: RateLimit,
    messages: Quota,
    sends: Once<Sent>,
    db: rusqlite::Connection,
}

impl Chat {
    fn open(dir: &Path) -> tinystore::Result<(Store, Chat)> {
        let store = Store::open(dir)?;
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
        let db = rusqlite::Connection::open(dir.join("chat-rust.db")).expect("chat.db opens");
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, chat_id INTEGER, role TEXT, text TEXT, created_at INTEGER)",
        )
        .expect("the chat table");
        Ok((
            store,
            Chat {
                codes,
                sessions,
                guesses,
                messages,
                sends,
                db,
            },
        ))
    }

    fn send_code(&self, email: &str, user_id: i64) -> tinystore::Result<String> {
        let code = format!("{:06}", 100_000 + random_below(900_000, user_id as u64));
        self.codes.set(digest(&code), &user_id)?;
        mail(email, &format!("Your code is {code}"));
        Ok(code)
    }

    fn check_code(&self, ip: &str, code: &str) -> tinystore::Result<Response> {
        let guess = self.guesses.allow(ip)?;
        if !guess.ok {
            let retry_in = guess
                .retry_at
                .unwrap()
                .duration_since(SystemTime::now())
                .unwrap_or_default();
            return Ok(Response::TooMany { retry_in });
        }
        match self.codes.take(digest(code))? {
            Some(user_id) => self.start_session(user_id),
            None => Ok(Response::Unauthorized), // wrong, used or expired
        }
    }

    fn start_session(&self, user_id: i64) -> tinystore::Result<Response> {
        let token = format!("{:016x}{:016x}", random_below(u64::MAX, 1), random_below(u64::MAX, 2));
        self.sessions.under(user_id).set(
            digest(&token),
            &Session {
                user_id,
                device: "web".into(),
            },
        )?;
        Ok(Response::SignedIn {
            cookie: format!("{user_id}.{token}"),
        })
    }

    fn current_user(&self, cookie: &str) -> tinystore::Result<Option<i64>> {
        let Some((user_id, token)) = cookie.split_once('.') else {
            return Ok(None);
        };
        let session = self.sessions.under(user_id).get(digest(token))?; // renews the 30 days
        Ok(session.map(|s| s.user_id))
    }

    fn save_message(&self, idempotency_key: &str, chat_id: i64, text: &str) -> tinystore::Result<Sent> {
        self.sends.run(idempotency_key, || {
            self.db
                .execute(
                    "INSERT INTO messages (chat_id, role, text, created_at) VALUES (?1, 'user', ?2, ?3)",
                    rusqlite::params![chat_id, text, tinystore::to_millis(SystemTime::now())],
                )
                .map_err(|e| tinystore::Error::new(tinystore::ErrorKind::Io, e.to_string()))?;
            Ok(Sent {
                id: self.db.last_insert_rowid(),
            })
        })
    }
}

fn main() -> tinystore::Result<()> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "data".into());
    let (store, chat) = Chat::open(Path::new(&dir))?;
    let user_id = 1000 + random_below(9000, 3) as i64;
    let ip = format!("203.0.113.{}", random_below(250, 4) + 1);
    println!("Rust chat on {dir}/kv.db, user {user_id} from {ip}");

    println!("\n1. Sign in with a code");
    let code = chat.send_code("ada@example.com", user_id)?;
    match chat.check_code(&ip, "000000")? {
        Response::Unauthorized => println!("  a wrong code is refused (401)"),
        _ => println!("  unexpected: a wrong code passed"),
    }
    let cookie = match chat.check_code(&ip, &code)? {
        Response::SignedIn { cookie } => {
            println!("  the right code signs in; cookie {}…", &cookie[..12]);
            cookie
        }
        _ => panic!("the right code was refused"),
    };
    match chat.check_code(&ip, &code)? {
        Response::Unauthorized => println!("  the same code again is refused: take lets a code work once"),
        _ => println!("  unexpected: a used code passed"),
    }
    for n in 4..=6 {
        match chat.check_code(&ip, "123456")? {
            Response::TooMany { retry_in } => {
                println!(
                    "  guess {n} in a minute from {ip} is refused: retry in {}s",
                    retry_in.as_secs_f64().ceil()
                )
            }
            _ => println!("  guess {n} in a minute: wrong code"),
        }
    }

    println!("\n2. Sessions");
    println!(
        "  current user from the cookie: {:?} (the read renews the 30 days)",
        chat.current_user(&cookie)?
    );
    let Response::SignedIn { cookie: phone } = chat.start_session(user_id)? else {
        unreachable!()
    };
    let (_, token) = cookie.split_once('.').unwrap();
    chat.sessions.under(user_id).delete(digest(token))?; // sign out here
    println!(
        "  signed out here: web session -> {:?}, phone session -> {:?}",
        chat.current_user(&cookie)?,
        chat.current_user(&phone)?
    );
    chat.sessions.under(user_id).clear()?; // sign out everywhere
    println!(
        "  signed out everywhere: phone session -> {:?}",
        chat.current_user(&phone)?
    );

    println!("\n3. Limits per plan (100 messages per 5 hours, 300 per week)");
    let mut used = chat.messages.allow(user_id)?;
    for _ in 1..100 {
        used = chat.messages.allow(user_id)?;
    }
    println!(
        "  100 messages pass; weekly left: {}",
        used.window("weekly").unwrap().left
    );
    let refused = chat.messages.allow(user_id)?;
    let session = refused.window("session").unwrap();
    println!(
        "  message 101 is refused (ok={}): the 5-hour window resets in {:.0}m; the weekly window still has {} left",
        refused.ok,
        session
            .resets_at
            .unwrap()
            .duration_since(SystemTime::now())
            .unwrap_or_default()
            .as_secs_f64()
            / 60.0,
        refused.window("weekly").unwrap().left
    );
    chat.messages.refund(user_id)?;
    println!(
        "  the model failed once: refund gives a use back (left now {})",
        chat.messages.peek(user_id)?.left
    );

    println!("\n4. Requests sent twice");
    let key = format!("k7q2-rust-{user_id}");
    let first = chat.save_message(&key, 1, "hello")?;
    let retry = chat.save_message(&key, 1, "hello")?;
    let rows: i64 = chat
        .db
        .query_row(
            "SELECT count(*) FROM messages WHERE text = 'hello' AND id = ?1",
            [first.id],
            |r| r.get(0),
        )
        .unwrap();
    println!(
        "  first request saved message {}; the retry got message {} ({} row in chat.db)",
        first.id, retry.id, rows
    );
    store.close()?;
    println!("\nRust chat: done.");
    Ok(())
}
