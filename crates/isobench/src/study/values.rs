//! The values a setting takes, each checked by one function whether it
//! comes from a flag (`--clients 8,16`: clap calls [`Parse::parse`] on
//! each comma-separated element) or from a study file (`clients = [8,
//! 16]`: the serde adapters below call [`Parse::from_toml`], which by
//! default prints a scalar as a flag would spell it and parses that). So
//! `clients = 0` and `--clients 0` fail with the same message.
//!
//! The adapters deserialize lists element by element, so a file's error
//! points at the offending element (`file:line:column`), and the key is
//! added by `super::file`, which knows which key holds that position.

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use toml::Value;

use crate::model::{CpuPlacement, PgBuild, PgBuildError, parse_duration};

/// How one kind of setting value is read and checked.
pub trait Parse {
    /// The checked value.
    type Out;
    /// From the text of a flag's value (one element of a comma list).
    ///
    /// Errors: a message that says what is wrong and what to write; the
    /// caller adds the flag or `file:line:column: key`.
    fn parse(s: &str) -> Result<Self::Out, String>;
    /// From a TOML value: a scalar as the flag would spell it
    /// (`16` → `"16"`, `true` → `"true"`), then [`Parse::parse`].
    fn from_toml(v: &Value) -> Result<Self::Out, String> {
        Self::parse(&scalar(v)?)
    }
}

/// A TOML scalar as text; arrays, tables and datetimes are refused.
pub fn scalar(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(i) => Ok(i.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        Value::Boolean(b) => Ok(b.to_string()),
        other => Err(format!(
            "expected a string or a number, found {}",
            other.type_str()
        )),
    }
}

/// Any text.
pub struct Text;
impl Parse for Text {
    type Out = String;
    fn parse(s: &str) -> Result<String, String> {
        Ok(s.to_string())
    }
}

/// A libpq connection string: a URL (`postgresql://user@host:5432/db`)
/// or `key=value` pairs (`host=/tmp port=5433 dbname=bench`), checked by
/// the parser that connects (tokio-postgres's `Config`, which takes
/// libpq's forms, PostgreSQL docs "Connection Strings"). The message
/// never shows the string: it may hold a password.
pub struct Dsn;
impl Parse for Dsn {
    type Out = String;
    fn parse(s: &str) -> Result<String, String> {
        s.parse::<tokio_postgres::Config>()
            .map(|_| s.to_string())
            .map_err(|e| {
                // tokio-postgres says "invalid connection string" and
                // keeps what is wrong (an option, never a value) in the
                // source.
                let why = std::error::Error::source(&e)
                    .map_or_else(|| e.to_string(), |c| format!("{e}: {c}"));
                format!(
                    "cannot parse it (not shown: it may hold a password): {why}; give a libpq URL \
                     (postgresql://user@host:5432/dbname) or key=value pairs (host=/tmp port=5432 dbname=bench)"
                )
            })
    }
}

/// clap's parser of a `--dsn` flag: [`Dsn`], with an error that names
/// the flag (and its environment variable, `ISOBENCH_DSN`) but not the
/// value, which clap's own "invalid value '...'" would print, password
/// included. A clap error: exit status 2 before anything starts.
#[derive(Debug, Clone, Copy)]
pub struct DsnArg;
impl clap::builder::TypedValueParser for DsnArg {
    type Value = String;
    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let bad = |m: &str| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("--dsn (or ISOBENCH_DSN): {m}\n"),
            )
            .with_cmd(cmd)
        };
        let s = value.to_str().ok_or_else(|| bad("not valid UTF-8"))?;
        Dsn::parse(s).map_err(|m| bad(&m))
    }
}

/// A path, relative to the working directory (a study file's relative
/// paths are resolved against its directory when it is read).
pub struct PathArg;
impl Parse for PathArg {
    type Out = std::path::PathBuf;
    fn parse(s: &str) -> Result<Self::Out, String> {
        if s.trim().is_empty() {
            return Err("empty path".into());
        }
        Ok(s.into())
    }
}

/// A TCP address to listen on: `HOST:PORT` (`127.0.0.1:9187`,
/// `[::1]:9187`, `localhost:9187`; port 0: any free port).
pub struct Listen;
impl Parse for Listen {
    type Out = String;
    fn parse(s: &str) -> Result<String, String> {
        let s = s.trim();
        let ok = match s.rsplit_once(':') {
            Some((host, port)) => {
                !host.is_empty()
                    && port.parse::<u16>().is_ok()
                    && (s.parse::<std::net::SocketAddr>().is_ok() || !host.contains(':'))
            }
            None => false,
        };
        if ok {
            Ok(s.to_string())
        } else {
            Err(format!(
                "expected HOST:PORT to listen on, e.g. 127.0.0.1:9187 or [::]:9187, found '{s}'"
            ))
        }
    }
}

/// `true` or `false`.
pub struct Bool;
impl Parse for Bool {
    type Out = bool;
    fn parse(s: &str) -> Result<bool, String> {
        match s.trim() {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(format!("expected true or false, found '{other}'")),
        }
    }
}

/// A type's own `FromStr` (isolation levels, backoff, order, ...).
pub struct Via<T>(PhantomData<T>);
impl<T: FromStr> Parse for Via<T>
where
    T::Err: fmt::Display,
{
    type Out = T;
    fn parse(s: &str) -> Result<T, String> {
        s.parse().map_err(|e: T::Err| e.to_string())
    }
}

/// An integer from `LO` to `HI` inclusive.
pub struct Ranged<const LO: u64, const HI: u64>;
impl<const LO: u64, const HI: u64> Parse for Ranged<LO, HI> {
    type Out = u64;
    fn parse(s: &str) -> Result<u64, String> {
        match s.trim().parse::<i128>() {
            Ok(i) if (i128::from(LO)..=i128::from(HI)).contains(&i) => Ok(i as u64),
            Ok(i) => Err(format!("{i} is out of range ({LO} to {HI})")),
            Err(_) => Err(format!("'{s}' is not an integer")),
        }
    }
}

/// A count from 1 to `HI` (clients, pool sizes, repetitions, tries).
pub struct Count<const HI: u32>;
impl<const HI: u32> Parse for Count<HI> {
    type Out = u32;
    fn parse(s: &str) -> Result<u32, String> {
        match s.trim().parse::<i128>() {
            Ok(n) if (1..=i128::from(HI)).contains(&n) => Ok(n as u32),
            Ok(n) => Err(format!("{n} is out of range (1 to {HI})")),
            Err(_) => Err(format!("'{s}' is not an integer")),
        }
    }
}

/// A number of standbys: 0 to [`crate::model::MAX_STANDBYS`].
pub struct Standbys;
impl Parse for Standbys {
    type Out = u32;
    fn parse(s: &str) -> Result<u32, String> {
        let most = crate::model::MAX_STANDBYS;
        match s.trim().parse::<i128>() {
            Ok(n) if (0..=i128::from(most)).contains(&n) => Ok(n as u32),
            Ok(n) => Err(format!("{n} is out of range (0 to {most})")),
            Err(_) => Err(format!("'{s}' is not an integer")),
        }
    }
}

/// A failover manager's timeouts: `default` (false) or `fast` (true).
pub struct HaTimeouts;
impl Parse for HaTimeouts {
    type Out = bool;
    fn parse(s: &str) -> Result<bool, String> {
        match s.trim() {
            "default" => Ok(false),
            "fast" => Ok(true),
            other => Err(format!("unknown timeouts '{other}' (use default or fast)")),
        }
    }
}

/// A `synchronous_commit` level: off, local, remote_write, on,
/// remote_apply.
pub struct SyncCommit;
impl Parse for SyncCommit {
    type Out = String;
    fn parse(s: &str) -> Result<String, String> {
        let v = s.trim().to_ascii_lowercase().replace('-', "_");
        let levels = crate::model::SYNCHRONOUS_COMMIT_LEVELS;
        if levels.contains(&v.as_str()) {
            Ok(v)
        } else {
            Err(format!(
                "unknown synchronous_commit level '{s}' (use {})",
                levels.join(", ")
            ))
        }
    }
}

/// A random seed: 0 to 2^63 - 1 (TOML's integers are signed 64-bit).
pub type Seed = Ranged<0, { i64::MAX as u64 }>;

/// A duration: `10s`, `500ms`, `2m`, or a number of seconds; 0 allowed.
pub struct Dur;
impl Parse for Dur {
    type Out = Duration;
    fn parse(s: &str) -> Result<Duration, String> {
        parse_duration(s)
    }
}

/// A duration longer than 0.
pub struct PositiveDur;
impl Parse for PositiveDur {
    type Out = Duration;
    fn parse(s: &str) -> Result<Duration, String> {
        let d = parse_duration(s)?;
        if d.is_zero() {
            return Err(format!("'{s}' must be longer than 0s"));
        }
        Ok(d)
    }
}

/// A sampling interval: at least 100 ms.
pub struct SampleInterval;
impl Parse for SampleInterval {
    type Out = Duration;
    fn parse(s: &str) -> Result<Duration, String> {
        let d = parse_duration(s)?;
        if d < Duration::from_millis(100) {
            return Err(format!("'{s}' is shorter than the 100ms minimum"));
        }
        Ok(d)
    }
}

/// An open-loop rate in tx/s, > 0.
pub struct Rate;
impl Parse for Rate {
    type Out = f64;
    fn parse(s: &str) -> Result<f64, String> {
        match s.trim().parse::<f64>() {
            Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
            _ => Err(format!(
                "'{s}' is not a rate; give transactions per second > 0, e.g. 500"
            )),
        }
    }
}

/// A rate per committed transaction in (0, 1): `1e-6`, `0.000001`,
/// `1/1000000` or `2 per million`.
pub struct RateBound;
impl Parse for RateBound {
    type Out = f64;
    fn parse(s: &str) -> Result<f64, String> {
        let t = s.trim();
        let v = if let Some(n) = t.strip_suffix("per million") {
            n.trim().parse::<f64>().map(|n| n / 1e6)
        } else if let Some((a, b)) = t.split_once('/') {
            match (a.trim().parse::<f64>(), b.trim().parse::<f64>()) {
                (Ok(a), Ok(b)) if b > 0.0 => Ok(a / b),
                _ => "x".parse::<f64>(),
            }
        } else {
            t.parse::<f64>()
        };
        match v {
            Ok(r) if r.is_finite() && r > 0.0 && r < 1.0 => Ok(r),
            _ => Err(format!(
                "'{s}' is not a rate per committed transaction; give a number above 0 and below 1, \
                 e.g. 1e-6, 1/1000000 or \"1 per million\""
            )),
        }
    }
}

/// A percentage in (0, 100), written `2%`, `2 %` or `2`, e.g. a target
/// precision or a regression threshold; the value in % (2.0).
pub struct Percent;
impl Parse for Percent {
    type Out = f64;
    fn parse(s: &str) -> Result<f64, String> {
        let t = s.trim();
        let t = t.strip_suffix('%').unwrap_or(t).trim();
        match t.parse::<f64>() {
            Ok(p) if p.is_finite() && p > 0.0 && p < 100.0 => Ok(p),
            _ => Err(format!(
                "'{s}' is not a percentage; give a number above 0 and below 100, e.g. 2% or 5"
            )),
        }
    }
}

/// A CPU placement, `server=LIST,clients=LIST`
/// ([`CpuPlacement::parse`]), checked against the CPUs this process may
/// use.
pub struct Cpus;
impl Parse for Cpus {
    type Out = CpuPlacement;
    fn parse(s: &str) -> Result<CpuPlacement, String> {
        CpuPlacement::parse(s, &crate::postgres::cpus::allowed_cpus())
    }
}

/// A built-in workload's name.
pub struct Workload;
impl Parse for Workload {
    type Out = String;
    fn parse(s: &str) -> Result<String, String> {
        if crate::workload::spec(s).is_some() {
            return Ok(s.to_string());
        }
        let known: Vec<&str> = crate::workload::REGISTRY.iter().map(|s| s.name).collect();
        Err(format!(
            "unknown workload '{s}' (built-in: {}; see `isobench workloads`)",
            known.join(", ")
        ))
    }
}

/// A concurrency-control strategy's name (checked against the workload
/// once the workload is known).
pub struct Strategy;
impl Parse for Strategy {
    type Out = String;
    fn parse(s: &str) -> Result<String, String> {
        match s.trim() {
            "" => Err("empty strategy name".into()),
            t => Ok(t.to_string()),
        }
    }
}

/// A five-character SQLSTATE, upper-cased.
pub struct Sqlstate;
impl Parse for Sqlstate {
    type Out = String;
    fn parse(s: &str) -> Result<String, String> {
        let s = s.trim().to_ascii_uppercase();
        match crate::model::sqlstate(&s) {
            Some(_) => Ok(s),
            None => Err(format!("'{s}' is not a five-character SQLSTATE like 40001")),
        }
    }
}

/// A command template (`load_cmd`, ...): its placeholders must be known.
pub struct Template;
impl Parse for Template {
    type Out = String;
    fn parse(s: &str) -> Result<String, String> {
        crate::load_cmd::template::Template::check_syntax(s)?;
        Ok(s.to_string())
    }
}

/// `NAME[@WEIGHT]`: a pgbench script file or built-in script.
pub struct Weighted;
impl Parse for Weighted {
    type Out = (String, u32);
    fn parse(s: &str) -> Result<(String, u32), String> {
        crate::pgbench::script::split_weight(s).map(|(n, w)| (n.to_string(), w))
    }
}

/// The baseline cell: `isolation=rc,clients=16`; in a file also an
/// inline table `{ isolation = "rc", clients = 16 }`.
pub struct Baseline;
impl Parse for Baseline {
    type Out = String;
    fn parse(s: &str) -> Result<String, String> {
        Ok(s.to_string())
    }
    fn from_toml(v: &Value) -> Result<String, String> {
        match v {
            Value::String(s) => Ok(s.clone()),
            Value::Table(t) => t
                .iter()
                .map(|(k, v)| scalar(v).map(|v| format!("{k}={v}")))
                .collect::<Result<Vec<_>, _>>()
                .map(|kv| kv.join(",")),
            other => Err(format!(
                "expected \"isolation=rc,clients=16\" or {{ isolation = \"rc\" }}, found {}",
                other.type_str()
            )),
        }
    }
}

/// A server build, `[NAME=]DIR` ([`PgBuild::split_arg`]), with `initdb`
/// and `postgres` in DIR ([`crate::postgres::pg_build`]).
pub struct Build;
impl Parse for Build {
    type Out = PgBuild;
    fn parse(s: &str) -> Result<PgBuild, String> {
        let (name, dir) = PgBuild::split_arg(s);
        crate::postgres::pg_build(name, dir).map_err(|e| e.to_string())
    }
    fn from_toml(v: &Value) -> Result<PgBuild, String> {
        match v {
            Value::String(s) => Self::parse(s),
            other => Err(format!("expected a string, found {}", other.type_str())),
        }
    }
}

/// `--set NAME=VALUE`: a server setting with one value.
pub fn setting(s: &str) -> Result<Named, String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => {
            Ok((k.trim().to_string(), vec![v.trim().to_string()]))
        }
        _ => Err(format!(
            "'{s}' is not name=value (e.g. --set shared_buffers=256MB)"
        )),
    }
}

/// `--param NAME=V1,V2`: a workload parameter and its values.
pub fn param(s: &str) -> Result<Named, String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => Ok((
            k.trim().to_string(),
            v.split(',').map(|x| x.trim().to_string()).collect(),
        )),
        _ => Err(format!(
            "'{s}' is not NAME=VALUE[,VALUE...] (e.g. --param rows=10,100)"
        )),
    }
}

/// `-D NAME=VALUE`: NAME must be a pgbench variable name.
pub fn define(s: &str) -> Result<(String, String), String> {
    let (k, mut v) = setting(s)?;
    crate::pgbench::script::check_variable_name(&k)?;
    Ok((k, v.remove(0)))
}

// ---- serde adapters: `#[serde(deserialize_with = "...")]` ----

/// One value of `P` (a list is refused).
pub fn one<'de, D: Deserializer<'de>, P: Parse>(d: D) -> Result<Option<P::Out>, D::Error> {
    let v = Value::deserialize(d)?;
    if let Value::Array(_) = v {
        return Err(de::Error::custom("takes one value, not a list"));
    }
    P::from_toml(&v).map(Some).map_err(de::Error::custom)
}

/// One value of `P` or a non-empty list of them.
pub fn list<'de, D: Deserializer<'de>, P: Parse>(d: D) -> Result<Option<Vec<P::Out>>, D::Error> {
    d.deserialize_any(OneOrMany::<P>(PhantomData)).map(Some)
}

/// A value of `P`, parsed while the deserializer is at it, so that an
/// error carries the value's own position (an element of a list, an
/// entry of a table).
struct Elem<P>(PhantomData<P>);
impl<'de, P: Parse> DeserializeSeed<'de> for Elem<P> {
    type Value = P::Out;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<P::Out, D::Error> {
        d.deserialize_any(Scalar::<P>(PhantomData))
    }
}

/// Visits one scalar and parses it as `P`.
struct Scalar<P>(PhantomData<P>);
impl<P: Parse> Scalar<P> {
    fn parse<E: de::Error>(v: Value) -> Result<P::Out, E> {
        P::from_toml(&v).map_err(E::custom)
    }
}
impl<'de, P: Parse> Visitor<'de> for Scalar<P> {
    type Value = P::Out;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or a number")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Self::parse(Value::String(s.to_string()))
    }
    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Self::Value, E> {
        Self::parse(Value::Integer(i))
    }
    fn visit_u64<E: de::Error>(self, i: u64) -> Result<Self::Value, E> {
        match i64::try_from(i) {
            Ok(i) => Self::parse(Value::Integer(i)),
            Err(_) => Err(E::custom(format!("{i} is out of range"))),
        }
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Self::Value, E> {
        Self::parse(Value::Float(x))
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
        Self::parse(Value::Boolean(b))
    }
}

/// One value of `P` or a non-empty list of them.
struct OneOrMany<P>(PhantomData<P>);
impl<'de, P: Parse> Visitor<'de> for OneOrMany<P> {
    type Value = Vec<P::Out>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a value or a list of values")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Scalar::<P>(PhantomData).visit_str(s).map(|x| vec![x])
    }
    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Self::Value, E> {
        Scalar::<P>(PhantomData).visit_i64(i).map(|x| vec![x])
    }
    fn visit_u64<E: de::Error>(self, i: u64) -> Result<Self::Value, E> {
        Scalar::<P>(PhantomData).visit_u64(i).map(|x| vec![x])
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Self::Value, E> {
        Scalar::<P>(PhantomData).visit_f64(x).map(|x| vec![x])
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
        Scalar::<P>(PhantomData).visit_bool(b).map(|x| vec![x])
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(x) = seq.next_element_seed(Elem::<P>(PhantomData))? {
            out.push(x);
        }
        if out.is_empty() {
            return Err(de::Error::custom("the list is empty"));
        }
        Ok(out)
    }
}

/// One named entry with its values: of `[params]`, `[settings]`,
/// `--param`, `--set`.
pub type Named = (String, Vec<String>);

/// A table of name = value-or-list (`[params]`, `[settings]`), in name
/// order; values are scalars.
pub fn table_of_lists<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Named>>, D::Error> {
    #[derive(Clone)]
    struct Seed;
    impl<'de> DeserializeSeed<'de> for Seed {
        type Value = Vec<String>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<String>, D::Error> {
            d.deserialize_any(OneOrMany::<Text>(PhantomData))
        }
    }
    d.deserialize_map(Entries(|_: &str| Ok(()), Seed)).map(Some)
}

/// The `[define]` table: pgbench variable = scalar.
pub fn defines<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<(String, String)>>, D::Error> {
    d.deserialize_map(Entries(
        crate::pgbench::script::check_variable_name,
        Elem::<Text>(PhantomData),
    ))
    .map(Some)
}

/// A map's entries; each key checked by the first field (an error points
/// at the key), each value read by the seed (an error points at it).
struct Entries<K, S>(K, S);
impl<'de, K, S> Visitor<'de> for Entries<K, S>
where
    K: Fn(&str) -> Result<(), String>,
    S: DeserializeSeed<'de> + Clone,
{
    type Value = Vec<(String, S::Value)>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a table of name = value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some((_, k)) = map.next_key_seed(Key(&self.0))? {
            let v = map.next_value_seed(self.1.clone())?;
            out.push((k, v));
        }
        Ok(out)
    }
}

/// A table key, checked (the toml crate locates a key seed's errors at
/// the key); with its byte offset in the file, since the toml crate hands
/// tables over sorted by key.
struct Key<'a, K>(&'a K);
impl<'de, K: Fn(&str) -> Result<(), String>> DeserializeSeed<'de> for Key<'_, K> {
    type Value = (usize, String);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(usize, String), D::Error> {
        let k = toml::Spanned::<String>::deserialize(d)?;
        (self.0)(k.get_ref()).map_err(de::Error::custom)?;
        Ok((k.span().start, k.into_inner()))
    }
}

impl<P> Clone for Elem<P> {
    fn clone(&self) -> Self {
        Elem(PhantomData)
    }
}

/// `pg_bin`: a directory (`[NAME=]DIR`, as `--pg-bin`), a list of them,
/// or a table of name = directory in the file's order; every build
/// checked where it stands.
pub fn builds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<PgBuild>>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<PgBuild>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a directory, a list of directories, or a table of name = directory")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
            Build::parse(s).map(|b| vec![b]).map_err(E::custom)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            OneOrMany::<Build>(PhantomData).visit_seq(seq)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out: Vec<(usize, PgBuild)> = Vec::new();
            let check = |n: &str| crate::model::check_build_label(n).map_err(|e| e.to_string());
            while let Some((at, name)) = map.next_key_seed(Key(&check))? {
                out.push((at, map.next_value_seed(Dir(name))?));
            }
            if out.is_empty() {
                return Err(de::Error::custom(
                    "the table is empty; write { name = \"/path/to/bin\" }",
                ));
            }
            // In the file's order.
            out.sort_by_key(|(at, _)| *at);
            Ok(out.into_iter().map(|(_, b)| b).collect())
        }
    }
    /// The directory of the build `0`.
    struct Dir(String);
    impl<'de> DeserializeSeed<'de> for Dir {
        type Value = PgBuild;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<PgBuild, D::Error> {
            let v = Value::deserialize(d)?;
            let Value::String(dir) = v else {
                return Err(de::Error::custom(format!(
                    "{}: expected a string, found {}",
                    self.0,
                    v.type_str()
                )));
            };
            crate::postgres::pg_build(Some(&self.0), &dir)
                .map_err(|e: PgBuildError| de::Error::custom(e))
        }
    }
    d.deserialize_any(V).map(Some)
}

/// One value of the script factor as given: its label (members joined by
/// `+`, as written) and its members, each `builtin:NAME[@WEIGHT]` or
/// `FILE[@WEIGHT]` (a study file's relative paths are resolved later).
pub type ScriptSetArg = (String, Vec<String>);

/// A script set (`--script-factor`, an element of the study key
/// `script`): members separated by commas on the command line, or a TOML
/// list of members; each member `builtin:NAME[@WEIGHT]` (pgbench's `-b`)
/// or `FILE[@WEIGHT]` (pgbench's `-f`). Weights and built-in names are
/// checked here; files are read before anything runs.
pub struct ScriptSetP;
impl ScriptSetP {
    fn members(members: Vec<String>) -> Result<ScriptSetArg, String> {
        if members.is_empty() {
            return Err(
                "an empty script set; give FILE or builtin:NAME, e.g. builtin:tpcb-like".into(),
            );
        }
        for m in &members {
            let (name, w) = crate::pgbench::script::split_weight(m)?;
            if let Some(b) = name.strip_prefix("builtin:") {
                crate::pgbench::script::builtin(b, w)
                    .map_err(|e| e.replacen(&format!("-b {b}:"), &format!("'{m}':"), 1))?;
            } else if name.trim().is_empty() {
                return Err(format!("'{m}': empty script file name"));
            }
        }
        Ok((members.join("+"), members))
    }
}
impl Parse for ScriptSetP {
    type Out = ScriptSetArg;
    fn parse(s: &str) -> Result<ScriptSetArg, String> {
        Self::members(
            s.split(',')
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(String::from)
                .collect(),
        )
    }
    fn from_toml(v: &Value) -> Result<ScriptSetArg, String> {
        match v {
            Value::String(s) => Self::parse(s),
            Value::Array(a) => Self::members(
                a.iter()
                    .map(|m| match m {
                        Value::String(s) => Ok(s.trim().to_string()),
                        other => Err(format!(
                            "a script set's members are strings (FILE or builtin:NAME), found {}",
                            other.type_str()
                        )),
                    })
                    .collect::<Result<_, _>>()?,
            ),
            other => Err(format!(
                "expected a script set: \"FILE\", \"builtin:NAME\" or a list of them (a mix), found {}",
                other.type_str()
            )),
        }
    }
}

/// The study key `script`: one script set or a list of them (each a
/// string or a list of strings, [`ScriptSetP`]).
pub fn script_sets<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<ScriptSetArg>>, D::Error> {
    let v = Value::deserialize(d)?;
    let sets = match &v {
        Value::Array(a) if a.is_empty() => return Err(de::Error::custom("the list is empty")),
        Value::Array(a) => a
            .iter()
            .map(ScriptSetP::from_toml)
            .collect::<Result<Vec<_>, _>>(),
        one => ScriptSetP::from_toml(one).map(|s| vec![s]),
    };
    sets.map(Some).map_err(de::Error::custom)
}
