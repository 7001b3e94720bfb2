//! Helpers of the PostgreSQL tests: the server CI starts (`make pg-start`,
//! whose location the Makefile exports as TINYSTORE_TEST_PG), a schema of
//! its own for each test, SQL sent behind the store's back, and a TCP proxy
//! that cuts or stalls the connection on the test's word.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// The server's location. Without one the test fails, saying how to start
/// one: under CI=true, .ci/run should have; outside it, `make pg-start`.
pub fn server() -> String {
    match std::env::var("TINYSTORE_TEST_PG") {
        Ok(s) if !s.is_empty() => s,
        _ if std::env::var("CI").as_deref() == Ok("true") => {
            panic!(
                "CI=true and TINYSTORE_TEST_PG is unset: .ci/run starts PostgreSQL (make pg-start) and make exports it"
            )
        }
        _ => panic!(
            "the PostgreSQL tests need a server: run `make pg-start` (a cluster on 127.0.0.1:55432), then \
             `export TINYSTORE_TEST_PG=postgres://postgres@127.0.0.1:55432/postgres`, or run them through make \
             (make test-rust)"
        ),
    }
}

fn with_query(base: &str, pair: &str) -> String {
    if base.contains('?') {
        format!("{base}&{pair}")
    } else {
        format!("{base}?{pair}")
    }
}

/// Runs `sql` (several statements) on the server, in the schema `schema`.
pub fn sql(schema: &str, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(&server(), tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        c.batch_execute(&format!("SET search_path = {schema}; {sql}"))
            .await
            .unwrap();
    });
}

/// The first column of the first row of `sql`, as text.
pub fn query(schema: &str, sql: &str) -> Option<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(&server(), tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        c.batch_execute(&format!("SET search_path = {schema}")).await.unwrap();
        let rows = c.simple_query(sql).await.unwrap();
        rows.into_iter().find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).map(str::to_owned)),
            _ => None,
        })?
    })
}

/// A location with a new, empty schema of its own.
pub fn fresh(schema: &str) -> String {
    sql("public", &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
    with_query(&server(), &format!("schema={schema}"))
}

/// What the proxy does with the bytes it carries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Mode {
    /// Carries both ways.
    Forward = 0,
    /// Carries requests to the server and cuts the connection instead of
    /// carrying an answer back: a write's statement arrives and commits,
    /// and its caller never hears so.
    CutAnswers = 1,
    /// Carries nothing, either way, and accepts new connections that carry
    /// nothing either: a server that is paused.
    Stall = 2,
    /// Closes every new connection at once: a server that is down (with
    /// [`Proxy::cut_all`] for the connections open).
    Refuse = 3,
}

/// A TCP proxy on a loopback port in front of the test server.
pub struct Proxy {
    pub port: u16,
    mode: Arc<AtomicU8>,
    socks: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    pub fn start() -> Proxy {
        let (host, port) = server_address();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port_here = listener.local_addr().unwrap().port();
        let mode = Arc::new(AtomicU8::new(Mode::Forward as u8));
        let socks = Arc::new(Mutex::new(Vec::new()));
        let (m, s) = (mode.clone(), socks.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                if m.load(Ordering::SeqCst) == Mode::Refuse as u8 {
                    drop(client);
                    continue;
                }
                let Ok(upstream) = TcpStream::connect((host.as_str(), port)) else {
                    continue;
                };
                s.lock().unwrap().push(client.try_clone().unwrap());
                let (c2, u2) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
                let (m1, m2) = (m.clone(), m.clone());
                std::thread::spawn(move || pump(client, upstream, m1, false));
                std::thread::spawn(move || pump(u2, c2, m2, true));
            }
        });
        Proxy {
            port: port_here,
            mode,
            socks,
        }
    }

    pub fn set(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
    }

    /// The test server's location, through this proxy, in `schema`.
    pub fn location(&self, schema: &str) -> String {
        let l = fresh(schema);
        let (host, port) = server_address();
        l.replacen(&format!("{host}:{port}"), &format!("127.0.0.1:{}", self.port), 1)
    }

    /// Cuts every connection it carries.
    pub fn cut_all(&self) {
        for s in self.socks.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, mode: Arc<AtomicU8>, answers: bool) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        loop {
            let m = mode.load(Ordering::SeqCst);
            if m == Mode::Stall as u8 {
                std::thread::sleep(std::time::Duration::from_millis(5));
                continue;
            }
            if answers && m == Mode::CutAnswers as u8 {
                let _ = to.shutdown(Shutdown::Both);
                let _ = from.shutdown(Shutdown::Both);
                return;
            }
            break;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}

fn server_address() -> (String, u16) {
    let l = server();
    let rest = l.split("://").nth(1).unwrap();
    let hostport = rest.split('/').next().unwrap();
    let hostport = hostport.rsplit('@').next().unwrap();
    let (h, p) = hostport.rsplit_once(':').unwrap_or((hostport, "5432"));
    (h.to_owned(), p.parse().unwrap())
}
