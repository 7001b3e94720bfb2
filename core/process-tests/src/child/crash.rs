//! The writer that `crash_kill.rs` kills with SIGKILL.

/// 16 threads write keys `ROUND-t-n` = n as fast as they can and print
/// `ack ROUND-t-n` after each write returns. Keys carry the round, so a
/// write lost in one round cannot hide behind the same key written in an
/// earlier one.
pub fn writer(dir: &str, round: &str) {
    let store = tinystore::Store::open(dir).unwrap();
    let b = store.bucket::<i64>("acks").open().unwrap();
    let big = store.bucket::<String>("big").open().unwrap();
    let hs: Vec<_> = (0..16)
        .map(|t| {
            let (b, big, round) = (b.clone(), big.clone(), round.to_owned());
            std::thread::spawn(move || {
                for n in 0i64.. {
                    let key = format!("{round}-{t}-{n}");
                    if n % 7 == 0 {
                        big.set(&key, &format!("{n:>2000}")).unwrap(); // spilled values too
                    }
                    b.set(&key, &n).unwrap();
                    println!("ack {key}");
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}
