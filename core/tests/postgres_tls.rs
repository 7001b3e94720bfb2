//! TLS to PostgreSQL as `sslmode` and `sslrootcert` say, against the server
//! CI starts: it speaks TLS with a certificate for `localhost` only, signed
//! by the CA in TINYSTORE_TEST_PG_CA (`make pg-start` makes both).

mod pg;

use tinystore::{ErrorKind, Store};

/// The test server's CA file.
fn ca() -> String {
    match std::env::var("TINYSTORE_TEST_PG_CA") {
        Ok(s) if !s.is_empty() => s,
        _ => panic!(
            "the TLS tests need the test server's CA: run them through make (make test-rust), which exports TINYSTORE_TEST_PG_CA"
        ),
    }
}

/// The test server's location by `host`, in a fresh schema, with `tls`.
fn location(host: &str, schema: &str, tls: &str) -> String {
    let base = pg::fresh(schema);
    assert!(base.contains("@127.0.0.1:"), "the test server is at 127.0.0.1: {base}");
    let by_host = base.replacen("@127.0.0.1:", &format!("@{host}:"), 1);
    format!("{by_host}&{tls}")
}

fn writes_and_reads(store: &Store) {
    let codes = store.bucket::<String>("codes").open().unwrap();
    codes.set("alice", &"481516".to_string()).unwrap();
    assert_eq!(codes.get("alice").unwrap().as_deref(), Some("481516"));
}

#[test]
fn verify_full_checks_the_chain_and_the_name() {
    let ok = location(
        "localhost",
        "tls_full",
        &format!("sslmode=verify-full&sslrootcert={}", ca()),
    );
    writes_and_reads(&Store::open(&ok).unwrap());

    // The certificate names localhost, not the address.
    let by_address = location(
        "127.0.0.1",
        "tls_full_ip",
        &format!("sslmode=verify-full&sslrootcert={}", ca()),
    );
    let e = Store::open(&by_address).err().expect("verify-full by address opened");
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.message().contains("cannot be reached"), "{e}");
    assert!(e.message().contains("certificate"), "{e}");
}

#[test]
fn verify_ca_checks_the_chain_only() {
    let by_address = location(
        "127.0.0.1",
        "tls_ca",
        &format!("sslmode=verify-ca&sslrootcert={}", ca()),
    );
    writes_and_reads(&Store::open(&by_address).unwrap());

    // A root that did not sign the server's certificate: its own leaf.
    let leaf = std::path::Path::new(&ca()).with_file_name("server.pem");
    let wrong = location(
        "localhost",
        "tls_ca_wrong",
        &format!("sslmode=verify-ca&sslrootcert={}", leaf.display()),
    );
    let e = Store::open(&wrong).err().expect("a wrong root was trusted");
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.message().contains("certificate"), "{e}");
}

#[test]
fn require_and_prefer_encrypt_without_checking() {
    writes_and_reads(&Store::open(location("127.0.0.1", "tls_require", "sslmode=require")).unwrap());
    writes_and_reads(&Store::open(location("127.0.0.1", "tls_prefer", "sslmode=prefer")).unwrap());
    writes_and_reads(&Store::open(location("127.0.0.1", "tls_disable", "sslmode=disable")).unwrap());
}

#[test]
fn a_root_file_that_is_not_pem_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("ca.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let e = Store::open(location(
        "localhost",
        "tls_junk",
        &format!("sslmode=verify-full&sslrootcert={}", junk.display()),
    ))
    .err()
    .expect("a junk root file was taken");
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
    assert!(
        e.message()
            .contains(&format!("sslrootcert {}: holds no certificate", junk.display())),
        "{e}"
    );
}
