//! KV-20: typed settings from layers (defaults, environment, kept updates).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tinystore::config::{FieldType, Source};
use tinystore::{Config, ErrorKind, Store};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Limits {
    rps: i64,
    burst: i64,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Settings {
    port: i64,
    host: String,
    ratio: f64,
    debug: bool,
    #[serde(with = "tinystore::config::millis")]
    timeout: Duration,
    hosts: Vec<String>,
    extra: serde_json::Value,
    limits: Limits,
    token: String,
}

fn defaults() -> Settings {
    Settings {
        port: 8080,
        host: "localhost".into(),
        ratio: 0.5,
        debug: false,
        timeout: Duration::from_secs(30),
        hosts: vec![],
        extra: serde_json::Value::Null,
        limits: Limits { rps: 100, burst: 20 },
        token: "dev-token".into(),
    }
}

fn open(store: &Store, vars: &[(&str, &str)]) -> tinystore::Result<Config<Settings>> {
    Config::builder(store, "app", defaults())
        .env("APP", [store.dir().join(".env")])
        .env_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
        .duration("timeout")
        .secret("token")
        .open()
}

fn source(cfg: &Config<Settings>, path: &str) -> Source {
    cfg.sources()
        .unwrap()
        .into_iter()
        .find(|s| s.path == path)
        .unwrap()
        .source
}

#[test]
fn kv20_layers_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    std::fs::write(
        dir.path().join(".env"),
        "APP_LIMITS_RPS=150\nAPP_LIMITS_BURST=30\nAPP_HOST=from-file\n",
    )
    .unwrap();
    let cfg = Config::builder(&store, "app", defaults())
        .defaults(serde_json::json!({"port": 9000, "limits": {"rps": 120}, "host": "from-map"}))
        .env("APP", [dir.path().join(".env")])
        .env_vars([("APP_LIMITS_BURST", "40")])
        .duration("timeout")
        .secret("token")
        .open()
        .unwrap();
    let s = cfg.get().unwrap();
    assert_eq!(s.ratio, 0.5, "the struct's default");
    assert_eq!(s.port, 9000, "the defaults map over the struct");
    assert_eq!(s.host, "from-file", "the .env file over the defaults map");
    assert_eq!(s.limits.rps, 150);
    assert_eq!(s.limits.burst, 40, "the process's variable over the .env file");
    cfg.update(|s| s.limits.burst = 50).unwrap();
    assert_eq!(cfg.get().unwrap().limits.burst, 50, "a kept update over every layer");
    assert_eq!(source(&cfg, "ratio"), Source::Default);
    assert_eq!(source(&cfg, "port"), Source::Defaults(0));
    assert!(matches!(source(&cfg, "host"), Source::EnvFile { var, .. } if var == "APP_HOST"));
    assert!(matches!(source(&cfg, "limits.burst"), Source::Kept { .. }));
    assert!(
        cfg.sources().unwrap().iter().all(|s| s.path != "token"),
        "sources hide a secret field"
    );
}

#[test]
fn kv20_env_parses_each_type() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let vars = [
        ("APP_PORT", "9090"),
        ("APP_HOST", "example.org"),
        ("APP_RATIO", "0.25"),
        ("APP_DEBUG", "true"),
        ("APP_TIMEOUT", "1h30m"),
        ("APP_HOSTS", "a.com, b.com"),
        ("APP_EXTRA", r#"{"k": [1, 2]}"#),
    ];
    let s = open(&store, &vars).unwrap().get().unwrap();
    assert_eq!(s.port, 9090);
    assert_eq!(s.host, "example.org");
    assert_eq!(s.ratio, 0.25);
    assert!(s.debug);
    assert_eq!(s.timeout, Duration::from_secs(5400));
    assert_eq!(s.hosts, ["a.com", "b.com"]);
    assert_eq!(s.extra, serde_json::json!({"k": [1, 2]}));
    let list = open(&store, &[("APP_HOSTS", r#"["x.com"]"#)]).unwrap();
    assert_eq!(
        list.get().unwrap().hosts,
        ["x.com"],
        "a list also reads as a JSON array"
    );
}

#[test]
fn kv20_bad_variable_names_itself() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for (var, text) in [
        ("APP_PORT", "80x"),
        ("APP_DEBUG", "maybe"),
        ("APP_TIMEOUT", "90mins"),
        ("APP_EXTRA", "{not json"),
        ("APP_RATIO", "half"),
    ] {
        let err = open(&store, &[(var, text)]).err().unwrap();
        assert_eq!(err.kind(), ErrorKind::Invalid);
        assert!(err.message().contains(var), "{var}: {err}");
    }
    std::fs::write(dir.path().join(".env"), "APP_LIMITS_RPS=lots\n").unwrap();
    let err = open(&store, &[]).err().unwrap();
    assert!(
        err.message().contains("APP_LIMITS_RPS") && err.message().contains(".env"),
        "{err}"
    );
}

#[test]
fn kv20_secret_and_required_fields() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let required = |vars: &[(&str, &str)]| {
        Config::builder(&store, "app", defaults())
            .env("APP", Vec::<String>::new())
            .env_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
            .duration("timeout")
            .secret("token")
            .required("hosts")
            .open()
    };
    let err = required(&[]).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    assert!(
        err.message().contains("APP_HOSTS"),
        "names the variable that would set it: {err}"
    );
    let cfg = required(&[("APP_HOSTS", "a.com"), ("APP_TOKEN", "s3cret")]).unwrap();
    assert_eq!(
        cfg.get().unwrap().token,
        "s3cret",
        "a secret comes from the environment"
    );
    let err = cfg.update(|s| s.hosts.clear()).unwrap_err();
    assert!(err.message().contains("required"), "{err}");
    let err = cfg.update(|s| s.token = "stolen".into()).unwrap_err();
    assert!(err.message().contains("secret"), "{err}");
    assert_eq!(cfg.get().unwrap().token, "s3cret");
    assert_eq!(cfg.get().unwrap().hosts, ["a.com"]);
}

#[test]
fn kv20_update_and_reset() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let cfg = Config::builder(&store, "app", defaults())
        .duration("timeout")
        .validate(|s: &Settings| {
            if s.limits.burst > s.limits.rps {
                Err(format!("burst {} is over rps {}", s.limits.burst, s.limits.rps))
            } else {
                Ok(())
            }
        })
        .open()
        .unwrap();
    let other = Config::builder(&store, "app", defaults())
        .duration("timeout")
        .open()
        .unwrap();
    cfg.update(|s| {
        s.limits.rps = 200;
        s.timeout = Duration::from_secs(5);
    })
    .unwrap();
    assert_eq!(other.get().unwrap().limits.rps, 200, "another handle sees it at once");
    assert_eq!(other.get().unwrap().timeout, Duration::from_secs(5));
    let err = cfg
        .update(|s| {
            s.port = 1;
            s.limits.burst = 500;
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    assert!(err.message().contains("burst 500 is over rps 200"), "{err}");
    assert_eq!(
        cfg.get().unwrap().port,
        8080,
        "a refused update writes nothing, not even its good fields"
    );
    let err = cfg.raw().update(&serde_json::json!({"port": "eighty"})).unwrap_err();
    assert!(err.message().contains("port"), "{err}");
    let err = cfg.raw().update(&serde_json::json!({"nope": 1})).unwrap_err();
    assert!(err.message().contains("nope"), "{err}");
    cfg.reset("limits").unwrap();
    assert_eq!(
        cfg.get().unwrap().limits,
        defaults().limits,
        "reset of a struct gives its fields back"
    );
    assert_eq!(
        cfg.get().unwrap().timeout,
        Duration::from_secs(5),
        "and leaves the others kept"
    );
    cfg.reset("timeout").unwrap();
    assert_eq!(other.get().unwrap(), defaults());
    assert!(cfg.reset("limits.nope").is_err());
    // Kept field by field: a default the program changes later still
    // reaches a field nobody changed.
    cfg.update(|s| s.port = 7000).unwrap();
    drop((cfg, other));
    let mut newer = defaults();
    newer.limits.rps = 300;
    let cfg = Config::builder(&store, "app", newer)
        .duration("timeout")
        .open()
        .unwrap();
    assert_eq!(cfg.get().unwrap().limits.rps, 300);
    assert_eq!(cfg.get().unwrap().port, 7000);
}

#[test]
fn kv20_kept_value_that_no_longer_fits() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let cfg = Config::builder(&store, "app", defaults())
        .duration("timeout")
        .open()
        .unwrap();
    cfg.update(|s| {
        s.host = "kept.example".into();
        s.port = 7000;
    })
    .unwrap();
    drop(cfg);
    // The program changed: port is now text, host a number.
    #[derive(Serialize, Deserialize)]
    struct Changed {
        port: String,
        host: i64,
    }
    let changed = Config::builder(
        &store,
        "app",
        Changed {
            port: "p".into(),
            host: 1,
        },
    )
    .open()
    .unwrap();
    let s = changed.get().unwrap();
    assert_eq!(
        (s.port.as_str(), s.host),
        ("p", 1),
        "kept values that no longer fit are left out"
    );
    let sources = changed.sources().unwrap();
    let host = sources.iter().find(|s| s.path == "host").unwrap();
    assert_eq!(host.source, Source::Default);
    assert!(
        host.left_out.as_deref().unwrap_or("").contains("no longer fits"),
        "{host:?}"
    );
    // The program changed back: the kept values are used again.
    let back = Config::builder(&store, "app", defaults())
        .duration("timeout")
        .open()
        .unwrap();
    assert_eq!(back.get().unwrap().port, 7000);
    // A validator that refuses the kept values together leaves them all out.
    let strict = Config::builder(&store, "app", defaults())
        .duration("timeout")
        .validate(|s: &Settings| {
            if s.port < 8000 {
                Err("port under 8000".into())
            } else {
                Ok(())
            }
        })
        .open()
        .unwrap();
    assert_eq!(strict.get().unwrap().host, "localhost");
    let why = strict
        .sources()
        .unwrap()
        .into_iter()
        .find(|s| s.path == "host")
        .unwrap()
        .left_out;
    assert!(why.unwrap().contains("port under 8000"));
}

#[test]
fn kv20_bounds_and_types_of_fields() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let cfg = Config::builder(&store, "app", defaults())
        .duration("timeout")
        .open()
        .unwrap();
    let err = cfg.update(|s| s.host = "x".repeat(20_000)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Limit);
    let err = Config::builder(&store, "app", defaults())
        .typed("nope", FieldType::Int)
        .open()
        .err()
        .unwrap();
    assert!(err.message().contains("nope"));
    let err = store.bucket::<String>("app").open().err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Invalid, "the config's name keeps its kind");
}

#[test]
fn kv20_the_environment_stands_where_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let from_file = serde_json::json!({ "port": 7070 });
    let vars = [("APP_PORT", "9090")];
    let over = Config::builder(&store, "over", defaults())
        .env("APP", Vec::<String>::new())
        .env_vars(vars)
        .defaults(from_file.clone())
        .duration("timeout")
        .open()
        .unwrap();
    assert_eq!(
        over.get().unwrap().port,
        7070,
        "defaults after the environment are over it"
    );
    let under = Config::builder(&store, "under", defaults())
        .defaults(from_file)
        .env("APP", Vec::<String>::new())
        .env_vars(vars)
        .duration("timeout")
        .open()
        .unwrap();
    assert_eq!(under.get().unwrap().port, 9090);
}

#[test]
fn kv20_the_environment_is_one_layer() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let err = Config::builder(&store, "twice", defaults())
        .env("APP", Vec::<String>::new())
        .env("OTHER", Vec::<String>::new())
        .duration("timeout")
        .open()
        .err()
        .unwrap();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    assert_eq!(err.message(), "the environment is one layer: give FromEnv once");
    assert_eq!(err.bucket(), Some("twice"), "{err}");
    let layers = r#"{"layers": [{"env": {"prefix": "APP"}}, {"defaults": {}}, {"env": {"prefix": "APP"}}]}"#;
    assert_eq!(tinystore::config::Layers::from_json(layers).unwrap().env_after, Some(0));
}

#[test]
fn kv20_every_bad_variable_and_missing_field_in_one_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let err = Config::builder(&store, "app", defaults())
        .env("APP", Vec::<String>::new())
        .env_vars([("APP_PORT", "80x"), ("APP_DEBUG", "maybe")])
        .duration("timeout")
        .required("hosts")
        .open()
        .err()
        .unwrap();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    for want in ["3 problems", "APP_PORT", "APP_DEBUG", "APP_HOSTS"] {
        assert!(err.message().contains(want), "names {want}: {err}");
    }
}

#[test]
fn kv20_layers_the_check_refuses_are_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let strict = |port: i64| {
        Config::builder(&store, "app", defaults())
            .defaults(serde_json::json!({ "port": port }))
            .duration("timeout")
            .validate(|s: &Settings| match s.port {
                p if p < 8000 => Err(format!("port {p} is under 8000")),
                _ => Ok(()),
            })
            .open()
    };
    let err = strict(80).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    assert!(
        err.message().contains("layers are refused") && err.message().contains("port 80 is under 8000"),
        "{err}"
    );
    assert_eq!(strict(8081).unwrap().get().unwrap().port, 8081);
}

#[test]
fn kv20_a_variable_is_the_path_in_upper_snake_case() {
    #[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
    #[allow(non_snake_case)]
    struct Server {
        HTTPServer: String,
    }
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let cfg = Config::builder(
        &store,
        "server",
        Server {
            HTTPServer: String::new(),
        },
    )
    .env("APP", Vec::<String>::new())
    .env_vars([("APP_HTTP_SERVER", "0.0.0.0:80")])
    .open()
    .unwrap();
    assert_eq!(cfg.get().unwrap().HTTPServer, "0.0.0.0:80");
}

#[test]
fn kv20_a_watch_reports_each_change_once_and_ends_when_the_store_closes() {
    use tinystore::config::{WATCH_STEP, WatchStep};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let cfg = open(&store, &[]).unwrap();
    let steps = cfg.raw().watch(None);
    let started = std::time::Instant::now();
    assert_eq!(steps.next(), WatchStep::Quiet, "nothing changed");
    assert!(started.elapsed() >= WATCH_STEP, "a quiet step waits its whole step");
    cfg.update(|s| s.port = 1).unwrap();
    cfg.update(|s| s.port = 2).unwrap();
    assert_eq!(steps.next(), WatchStep::Changed, "two changes, reported once");
    assert_eq!(steps.next(), WatchStep::Quiet);
    let timed = cfg.raw().watch(Some(Duration::from_millis(300)));
    assert_eq!(timed.next(), WatchStep::Quiet);
    assert_eq!(timed.next(), WatchStep::Ended, "its timeout passed without a change");
    store.close().unwrap();
    assert_eq!(steps.next(), WatchStep::Ended, "the store closed");
}

#[test]
fn kv20_a_watch_step_answers_without_a_thread_waiting() {
    use std::sync::Arc;
    use std::sync::mpsc::channel;
    use tinystore::config::WatchStep;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let cfg = open(&store, &[]).unwrap();
    let steps = Arc::new(cfg.raw().watch(None));
    let (tx, rx) = channel();
    let step = |tx: std::sync::mpsc::Sender<WatchStep>| steps.next_then(move |s| tx.send(s).unwrap());
    step(tx.clone());
    assert_eq!(rx.recv_timeout(Duration::from_secs(2)).unwrap(), WatchStep::Quiet);
    step(tx.clone());
    cfg.update(|s| s.port = 1).unwrap();
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(200)).unwrap(),
        WatchStep::Changed,
        "a change answers at once"
    );
    step(tx.clone());
    store.close().unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(2)).unwrap(), WatchStep::Ended);
    step(tx);
    assert_eq!(rx.try_recv().unwrap(), WatchStep::Ended, "on a closed store, at once");
}
