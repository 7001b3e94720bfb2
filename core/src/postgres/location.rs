//! A PostgreSQL location: what `Store::open` takes when the text starts with
//! `postgres://` or `postgresql://`, parsed into the driver's settings plus
//! the store's own (`schema`).

use std::str::FromStr;
use std::time::Duration;

use tokio_postgres::config::Host;

use super::tls::{self, Tls};
use crate::error::{Error, Result};

/// How long a call waits for the database before it answers with an error.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(2);

/// Whether `location` names a PostgreSQL database rather than a directory.
pub fn is_postgres(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// A parsed location.
pub(crate) struct Location {
    pub config: tokio_postgres::Config,
    /// The schema the store's tables live in (`public` unless `schema=` says).
    pub schema: String,
    /// Where the database is, for messages: host, port and database, never
    /// the password.
    pub shown: String,
    /// How connections speak TLS (`sslmode`, `sslrootcert`).
    pub tls: Tls,
}

/// Parses a location, refusing what the backend cannot honour.
pub(crate) fn parse(location: &str) -> Result<Location> {
    let bad = |why: String| Error::invalid(format!("the PostgreSQL location {}: {why}", hide_password(location)));
    let (base, query) = match location.split_once('?') {
        Some((b, q)) => (b, q),
        None => (location, ""),
    };
    let (mut schema, mut sslmode, mut sslrootcert) = (None, None, None);
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        // The store reads these itself: the driver knows neither the
        // verify-* modes nor sslrootcert.
        match pair.split_once('=') {
            Some(("schema", v)) => schema = Some(v.to_owned()),
            Some(("sslmode", v)) => sslmode = Some(v.to_owned()),
            Some(("sslrootcert", v)) => sslrootcert = Some(v.to_owned()),
            _ => kept.push(pair),
        }
    }
    let rebuilt = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let mut config = tokio_postgres::Config::from_str(&rebuilt).map_err(|e| bad(e.to_string()))?;
    let (ssl, tls) = tls::settings(sslmode.as_deref(), sslrootcert.as_deref()).map_err(bad)?;
    config.ssl_mode(ssl);
    let schema = schema.unwrap_or_else(|| "public".to_owned());
    if schema.is_empty()
        || schema.len() > 63
        || !schema
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
        || schema.as_bytes()[0].is_ascii_digit()
    {
        return Err(bad(format!(
            "the schema {schema:?} is not a schema name: use 1 to 63 of a-z, 0-9 and '_', not starting with a digit"
        )));
    }
    if config.get_hosts().is_empty() {
        config.host("localhost");
    }
    if config.get_user().is_none() {
        return Err(bad("it names no user: write postgres://user@host:port/database".into()));
    }
    config.connect_timeout(DEFAULT_DEADLINE);
    config.keepalives(true);
    config.keepalives_idle(Duration::from_secs(5));
    // The location's own, if it names one (docs/postgres.md lists it).
    if config.get_application_name().is_none() {
        config.application_name("tinystore");
    }
    config.options(format!("-c search_path={schema}"));
    // Every server the location names, each with its port (one port given
    // for several hosts is theirs, none is 5432).
    let ports = config.get_ports();
    let servers: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let host = match h {
                Host::Tcp(h) => h.clone(),
                #[cfg(unix)]
                Host::Unix(p) => p.display().to_string(),
            };
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            format!("{host}:{port}")
        })
        .collect();
    let db = config
        .get_dbname()
        .map(str::to_owned)
        .or_else(|| config.get_user().map(str::to_owned))
        .unwrap_or_default();
    Ok(Location {
        config,
        shown: format!("postgres://{}/{db} (schema {schema})", servers.join(",")),
        schema,
        tls,
    })
}

/// The location with its password, if any, replaced by `***`.
pub fn hide_password(location: &str) -> String {
    let Some(scheme_end) = location.find("://") else {
        return location.to_owned();
    };
    let rest = &location[scheme_end + 3..];
    let Some(at) = rest.find('@') else {
        return location.to_owned();
    };
    let auth = &rest[..at];
    match auth.find(':') {
        Some(colon) => format!("{}{}:***{}", &location[..scheme_end + 3], &auth[..colon], &rest[at..]),
        None => location.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_keeps_its_schema_apart_from_the_drivers_settings() {
        let l = parse("postgres://kv@127.0.0.1:55432/app?schema=shop&connect_timeout=1").unwrap();
        assert_eq!(l.schema, "shop");
        assert_eq!(l.shown, "postgres://127.0.0.1:55432/app (schema shop)");
        assert_eq!(l.config.get_user(), Some("kv"));
    }

    #[test]
    fn bad_tls_settings_and_schemas_are_refused_by_name() {
        let e = parse("postgres://kv@h/app?sslmode=always").err().unwrap();
        assert!(e.message().contains("sslmode=always is not a mode"), "{e}");
        let e = parse("postgres://kv@h/app?sslmode=verify-full&sslrootcert=/no/such/ca.pem")
            .err()
            .unwrap();
        assert!(
            e.message().contains("sslrootcert /no/such/ca.pem: cannot be read"),
            "{e}"
        );
        let e = parse("postgres://kv@h/app?schema=Shop").err().unwrap();
        assert!(e.message().contains("\"Shop\""), "{e}");
        let e = parse("postgres://h/app").err().unwrap();
        assert!(e.message().contains("no user"), "{e}");
    }

    #[test]
    fn every_server_of_a_failover_location_is_shown() {
        let l = parse("postgres://kv@db-a:5433,db-b/app?target_session_attrs=read-write").unwrap();
        assert_eq!(l.shown, "postgres://db-a:5433,db-b:5432/app (schema public)");
    }

    #[test]
    fn a_password_never_shows_in_a_message() {
        assert_eq!(hide_password("postgres://kv:s3cret@h/app"), "postgres://kv:***@h/app");
        let e = parse("postgres://kv:s3cret@h/app?sslmode=verify-full&sslrootcert=/no/ca.pem")
            .err()
            .unwrap();
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }
}
