//! The placeholder values of an external load's commands (`{clients}`,
//! `{dsn}`, ...) and their environment (`ISOBENCH_<NAME>`, the libpq
//! variables): what a command can know about its cell, run and server.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::load_cmd::template::{Value, Vars};
use crate::model::StudyConfig;
use crate::postgres::{self, Target};
use crate::store::Cell;

/// Placeholders of the server, filled when a run starts.
pub(super) const SERVER_VARS: [&str; 6] = ["host", "port", "user", "password", "database", "dsn"];

pub(super) fn unused_note(name: &str) -> String {
    format!(
        "note: {name} varies, but no command uses {{{name}}}: its cells differ only if a script reads ${}",
        env_name(name)
    )
}

pub(super) fn plain(text: &str) -> Value {
    Value {
        text: text.to_string(),
        secret: false,
    }
}

/// `ISOBENCH_POOL_SIZE` for `pool_size`.
pub(super) fn env_name(name: &str) -> String {
    format!(
        "ISOBENCH_{}",
        name.to_ascii_uppercase().replace(['.', '-'], "_")
    )
}

/// Every placeholder name of study `cfg`: `Ok` when it has a value in
/// every cell, else why not.
pub(super) fn known_placeholders(cfg: &StudyConfig) -> BTreeMap<String, Result<(), String>> {
    let mut k: BTreeMap<String, Result<(), String>> = BTreeMap::new();
    let always = [
        "clients",
        "isolation",
        "isolation_short",
        "isolation_sql",
        "max_tries",
        "duration_s",
        "duration_ms",
        "warmup_s",
        "repeat",
        "run",
        "repetition",
        "seed",
        "out",
    ];
    for name in always.into_iter().chain(SERVER_VARS) {
        k.insert(name.into(), Ok(()));
    }
    let factor = |given: bool, name: &str, how: &str| -> Result<(), String> {
        if given {
            Ok(())
        } else {
            Err(format!("{name} is not a factor of this study ({how})"))
        }
    };
    k.insert(
        "pool_size".into(),
        factor(
            !cfg.pool_size.is_empty(),
            "pool_size",
            "give pool_size or --pool-size",
        ),
    );
    k.insert(
        "rate".into(),
        factor(!cfg.rate.is_empty(), "rate", "give rate or --rate"),
    );
    k.insert(
        "scale".into(),
        factor(!cfg.scale.is_empty(), "scale", "give scale or --scale"),
    );
    k.insert(
        "strategy".into(),
        factor(
            !cfg.strategies.is_empty(),
            "strategy",
            "give strategy or --strategy",
        ),
    );
    k.insert(
        "pg_bin".into(),
        factor(
            !cfg.pg_bin.is_empty() || cfg.target.pg_bin.is_some(),
            "pg_bin",
            "give pg_bin or --pg-bin",
        ),
    );
    for (name, _) in &cfg.params {
        k.insert(name.clone(), Ok(()));
    }
    for (name, _) in cfg.setting_factors.iter() {
        k.insert(name.clone(), Ok(()));
    }
    for (name, _) in &cfg.target.settings {
        k.insert(name.clone(), Ok(()));
    }
    k
}

/// Seconds as a placeholder value: `10` for whole seconds, else `2.5`.
pub(super) fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s}")
    }
}

/// The placeholder values of `cell` that do not depend on the run or
/// server.
pub(super) fn cell_vars(cfg: &StudyConfig, cell: &Cell) -> Vars {
    let mut v = Vars::new();
    let mut put = |k: &str, val: String| {
        v.insert(k.to_string(), plain(&val));
    };
    put("clients", cell.clients.to_string());
    put("isolation", cell.isolation.name().to_string());
    put("isolation_short", cell.isolation.short().to_string());
    put("isolation_sql", cell.isolation.sql().to_string());
    put(
        "max_tries",
        cell.max_tries.unwrap_or(cfg.retry.max_tries).to_string(),
    );
    put("duration_s", secs(cfg.duration));
    put("duration_ms", cfg.duration.as_millis().to_string());
    put("warmup_s", secs(cfg.warmup));
    put("repeat", cfg.repeat.to_string());
    if let Some(p) = cell.pool_size {
        put("pool_size", p.to_string());
    }
    if let Some(r) = cell.rate {
        put("rate", r.to_string());
    }
    if let Some(s) = cell.scale {
        put("scale", s.to_string());
    }
    if !cell.strategy.is_empty() {
        put("strategy", cell.strategy.clone());
    }
    // The directory (a command may run that build's tools), not the label.
    let dir = match &cell.pg_bin {
        Some(label) => cfg.pg_bin_dir(label),
        None => cfg.target.pg_bin.as_ref().map(|b| b.dir.as_path()),
    };
    if let Some(dir) = dir {
        put("pg_bin", dir.display().to_string());
    }
    for (k, val) in &cfg.target.settings {
        put(k, val.clone());
    }
    for (k, val) in cell.params.iter().chain(&cell.settings) {
        put(k, val.clone());
    }
    v
}

/// `{host}` ... `{dsn}` for `database` on `target`. On the managed
/// server: the socket directory, trust authentication (the password is
/// for TCP on 127.0.0.1). On an external one: the DSN as given (a secret,
/// like the password), or one built from the libpq variables.
pub(super) fn server_vars(target: &Target, database: &str, dsn: Option<&str>) -> Vars {
    let mut v = Vars::new();
    let mut put = |k: &str, text: String, secret: bool| {
        v.insert(k.to_string(), Value { text, secret });
    };
    match target {
        Target::Managed(m) => {
            let host = m.socket_dir().display().to_string();
            // The socket directory percent-encoded as the URI's host: no
            // character a shell would interpret.
            put(
                "dsn",
                format!(
                    "postgresql://{}@{}:{}/{database}",
                    postgres::SUPERUSER,
                    host.replace('%', "%25").replace('/', "%2F"),
                    m.port()
                ),
                false,
            );
            put("host", host, false);
            put("port", m.port().to_string(), false);
            put("user", postgres::SUPERUSER.into(), false);
            put("password", m.password().into(), true);
        }
        Target::External(c) => {
            use tokio_postgres::config::Host;
            let host = match c.get_hosts().first() {
                Some(Host::Tcp(h)) => h.clone(),
                Some(Host::Unix(p)) => p.display().to_string(),
                None => "localhost".into(),
            };
            let port = c.get_ports().first().copied().unwrap_or(5432);
            let user = c.get_user().unwrap_or("postgres").to_string();
            let password = c
                .get_password()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .unwrap_or_default();
            let dsn = match dsn {
                Some(d) => d.to_string(),
                None if host.starts_with('/') => format!(
                    "postgresql://{user}@{}:{port}/{database}",
                    host.replace('%', "%25").replace('/', "%2F")
                ),
                None => format!("postgresql://{user}@{host}:{port}/{database}"),
            };
            put("dsn", dsn, true);
            put("host", host, false);
            put("port", port.to_string(), false);
            put("user", user, false);
            put("password", password, true);
        }
    }
    put("database", database.into(), false);
    v
}

/// The environment of a command: the libpq variables and
/// `ISOBENCH_<NAME>` for every placeholder.
pub(super) fn env_of(vars: &Vars) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (env_name(k), v.text.clone()))
        .collect();
    for (pg, name) in [
        ("PGHOST", "host"),
        ("PGPORT", "port"),
        ("PGUSER", "user"),
        ("PGDATABASE", "database"),
        ("PGPASSWORD", "password"),
    ] {
        if let Some(v) = vars.get(name).filter(|v| !v.text.is_empty()) {
            env.push((pg.into(), v.text.clone()));
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_has_libpq_variables_and_every_placeholder() {
        let mut v = Vars::new();
        v.insert("host".into(), plain("/tmp/s"));
        v.insert("database".into(), plain("db"));
        v.insert("pool_size".into(), plain("10"));
        v.insert("password".into(), plain(""));
        let env = env_of(&v);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("PGHOST"), Some("/tmp/s"));
        assert_eq!(get("PGDATABASE"), Some("db"));
        assert_eq!(get("ISOBENCH_POOL_SIZE"), Some("10"));
        assert_eq!(get("PGPASSWORD"), None);
    }
}
