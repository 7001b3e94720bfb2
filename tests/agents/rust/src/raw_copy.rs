//! `ix-raw-copy SRC DST OWNER`: reads every row of `OWNER`'s branch of the
//! interchange buckets in store `SRC` as it is (a raw bucket), and writes it
//! as it is into store `DST`, so that another language's `ix-read DST OWNER`
//! checks, bit for bit, that a raw read and a raw write keep every kind of
//! value (KV-3). Prints `copied N null=.. int=.. bytes=.. empty=.. size=..`,
//! which every language must print alike for the same rows.

use tinystore::{Raw, Store};

/// Copies the rows; answers the summary line.
pub fn copy(src: &Store, dst: &Store, owner: &str, types: &[String]) -> tinystore::Result<String> {
    let (mut n, mut nulls, mut ints, mut bytes, mut empty, mut size) = (0, 0, 0, 0, 0, 0);
    for ty in types {
        let name = format!("ix-{ty}");
        let from = src.raw_bucket(&name).open()?.under(owner);
        let to = dst.raw_bucket(&name).open()?.under(owner);
        for e in from.all() {
            let e = e?;
            match &e.value {
                Raw::Null => nulls += 1,
                Raw::Int(_) => ints += 1,
                Raw::Bytes(b) => {
                    bytes += 1;
                    empty += b.is_empty() as usize;
                    size += b.len();
                }
            }
            to.set(e.key.as_bytes(), &e.value)?;
            n += 1;
        }
    }
    Ok(format!(
        "copied {n} null={nulls} int={ints} bytes={bytes} empty={empty} size={size}"
    ))
}
