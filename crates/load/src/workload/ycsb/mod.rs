//! `ycsb`: the Yahoo! Cloud Serving Benchmark's core workloads A-F on
//! YCSB's JDBC table.
//!
//! Sources: B. F. Cooper, A. Silberstein, E. Tam, R. Ramakrishnan, R.
//! Sears, "Benchmarking Cloud Serving Systems with YCSB", SoCC 2010; YCSB's
//! `CoreWorkload` (its properties and defaults), `workloads/workloada` ..
//! `workloadf`, and its JDBC binding (table and statements).
//!
//! Table `usertable(ycsb_key varchar(255) PRIMARY KEY, field0 .. field<n-1>
//! text)` with `recordcount` records of `fieldcount` fields of
//! `fieldlength` random characters; keys `user` + the FNV-1 hash of the
//! record number (`insertorder=hashed`, YCSB's default).
//!
//! | workload | operations | request distribution |
//! |---|---|---|
//! | a | read 50 %, update 50 % | zipfian |
//! | b | read 95 %, update 5 % | zipfian |
//! | c | read 100 % | zipfian |
//! | d | read 95 %, insert 5 % | latest |
//! | e | scan 95 %, insert 5 % (scan length uniform 1..=`maxscanlength`) | zipfian |
//! | f | read 50 %, read-modify-write 50 % | zipfian |
//!
//! Statements are the JDBC binding's: `SELECT * FROM usertable WHERE
//! ycsb_key = $1`, `SELECT * ... WHERE ycsb_key >= $1 ORDER BY ycsb_key
//! LIMIT $2`, `UPDATE usertable SET field<i> = $1 WHERE ycsb_key = $2`,
//! `INSERT INTO usertable (ycsb_key, field0, ...) VALUES (...)`.
//!
//! Where isobench departs from YCSB, so that isolation matters and the
//! data can be checked:
//! - `ops=N` operations per transaction (YCSB: one, autocommit). With one
//!   operation, a read, update, insert or scan runs as one autocommit
//!   statement, as YCSB's JDBC binding runs it; a read-modify-write, and
//!   every transaction of two or more operations, runs between BEGIN and
//!   COMMIT at the run's isolation level (YCSB's binding sends the read
//!   and the write of a read-modify-write as two autocommit statements).
//! - The first 10 characters of `field0` are a counter (loaded as
//!   `0000000000`): a read-modify-write reads the record, and writes the
//!   counter read plus one into `field0` together with YCSB's new value of
//!   its field; updates keep the counter. Summed over the table, the
//!   counters equal the committed read-modify-writes, unless an update was
//!   lost (two read-modify-writes of one record that both committed, one
//!   overwriting the other: READ COMMITTED allows it, `locking` reads the
//!   record `FOR UPDATE` to prevent it). A read-modify-write of a record
//!   that does not exist (an insert that failed) writes nothing and is not
//!   counted, as YCSB's stops after a read that found nothing.
//! - Inserts number their records from `recordcount` in one sequence per
//!   run (per process in a sharded run: shards insert the same keys and
//!   all but one fail with 23505, as YCSB clients do without
//!   `insertstart`).

mod keys;
mod txn;

use std::sync::Arc;

use bytes::BufMut;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use tokio_postgres::Client;

use super::{
    ExplainStatement, Ledger, Loader, ParamSpec, Setup, StrategySpec, Workload, WorkloadError,
    WorkloadSpec, copy_rows,
};
use crate::model::{InvariantResult, Lifetime};
use crate::workload::dist;
pub use keys::{Chooser, InsertSeq, KeyFormat, RequestDist, RunSeqs};
pub use txn::{Op, YcsbClient, YcsbInput};

/// `isobench workloads ycsb`.
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "ycsb",
    summary: "YCSB's core workloads A-F on usertable: reads, updates, inserts, scans, read-modify-writes",
    source: "Cooper et al., SoCC 2010; YCSB's CoreWorkload, workloads/workloada..f and JDBC binding",
    scale: None,
    params: &[
        ParamSpec {
            name: "workload",
            default: "a",
            help: "a (read/update 50/50) | b (read/update 95/5) | c (read only) | d (read latest, insert 5 %) | e (scan, insert 5 %) | f (read/read-modify-write 50/50)",
        },
        ParamSpec {
            name: "recordcount",
            default: "1000",
            help: "records loaded (YCSB's workload files: 1000)",
        },
        ParamSpec {
            name: "fieldcount",
            default: "10",
            help: "fields per record, field0 .. field<n-1>",
        },
        ParamSpec {
            name: "fieldlength",
            default: "100",
            help: "characters per field (at least 10 with read-modify-writes: field0 starts with their counter)",
        },
        ParamSpec {
            name: "ops",
            default: "1",
            help: "operations per transaction (YCSB: 1); 2 or more run between BEGIN and COMMIT",
        },
        ParamSpec {
            name: "requestdistribution",
            default: "workload",
            help: "uniform | zipfian (scrambled, constant 0.99) | latest | hotspot; workload: the core workload's",
        },
        ParamSpec {
            name: "readproportion",
            default: "workload",
            help: "share of reads, 0..1; workload: the core workload's",
        },
        ParamSpec {
            name: "updateproportion",
            default: "workload",
            help: "share of updates (one field, or all with writeallfields), 0..1",
        },
        ParamSpec {
            name: "insertproportion",
            default: "workload",
            help: "share of inserts, 0..1",
        },
        ParamSpec {
            name: "scanproportion",
            default: "workload",
            help: "share of scans, 0..1",
        },
        ParamSpec {
            name: "readmodifywriteproportion",
            default: "workload",
            help: "share of read-modify-writes, 0..1",
        },
        ParamSpec {
            name: "minscanlength",
            default: "1",
            help: "fewest records a scan reads",
        },
        ParamSpec {
            name: "maxscanlength",
            default: "100",
            help: "most records a scan reads (workloade: 100; CoreWorkload's default: 1000)",
        },
        ParamSpec {
            name: "scanlengthdistribution",
            default: "uniform",
            help: "uniform | zipfian (favouring short scans)",
        },
        ParamSpec {
            name: "hotspotdatafraction",
            default: "0.2",
            help: "hotspot: share of the records in the hot set",
        },
        ParamSpec {
            name: "hotspotopnfraction",
            default: "0.8",
            help: "hotspot: share of the operations on the hot set",
        },
        ParamSpec {
            name: "insertorder",
            default: "hashed",
            help: "hashed (keys scattered by FNV-1) | ordered (keys in record order)",
        },
        ParamSpec {
            name: "zeropadding",
            default: "1",
            help: "digits the key's number is zero-padded to",
        },
        ParamSpec {
            name: "writeallfields",
            default: "false",
            help: "true: updates and read-modify-writes write every field, not one",
        },
        ParamSpec {
            name: "operationcount",
            default: "1000",
            help: "only sizes the zipfian key space for inserts, recordcount + 2 x operationcount x insertproportion (the run's length is --duration)",
        },
    ],
    strategies: &[
        StrategySpec {
            name: "optimistic",
            help: "no row locks: the isolation level protects; retry 40001/40P01",
        },
        StrategySpec {
            name: "locking",
            help: "read-modify-writes read the record FOR UPDATE",
        },
    ],
    transactions: &[
        "ops=1: one operation, named as YCSB reports it: READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE",
        "ops=N: N operations drawn from the mix; read-only (reads and scans) or read-write",
    ],
    invariants: &[
        "no-lost-inserts: every key whose insert committed is in usertable",
        "row-count: count(*) = recordcount + committed inserts (+ unknown outcomes)",
        "rmw-count (with read-modify-writes): Σ field0 counters = committed read-modify-writes; the shortfall is lost updates",
    ],
    example: "--workload ycsb --param workload=a,f --param ops=1,4 --isolation rc,ser --strategy optimistic,locking",
};

/// Seed of the loaded field values.
const DATA_SEED: u64 = 0x5eed_0c5b;

/// Characters of the counter at the start of `field0`.
pub const COUNTER_DIGITS: usize = 10;

/// The five operation kinds, in YCSB's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Read,
    Update,
    Insert,
    Scan,
    Rmw,
}

impl OpKind {
    pub const ALL: [OpKind; 5] = [
        OpKind::Read,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::Rmw,
    ];

    /// YCSB's name of the operation in its reports.
    pub fn label(self) -> &'static str {
        ["READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE"][self as usize]
    }

    fn param(self) -> &'static str {
        [
            "readproportion",
            "updateproportion",
            "insertproportion",
            "scanproportion",
            "readmodifywriteproportion",
        ][self as usize]
    }
}

/// A core workload's operation shares (read, update, insert, scan,
/// read-modify-write) and request distribution.
fn core(workload: char) -> ([f64; 5], RequestDist) {
    match workload {
        'a' => ([0.5, 0.5, 0.0, 0.0, 0.0], RequestDist::Zipfian),
        'b' => ([0.95, 0.05, 0.0, 0.0, 0.0], RequestDist::Zipfian),
        'c' => ([1.0, 0.0, 0.0, 0.0, 0.0], RequestDist::Zipfian),
        'd' => ([0.95, 0.0, 0.05, 0.0, 0.0], RequestDist::Latest),
        'e' => ([0.0, 0.0, 0.05, 0.95, 0.0], RequestDist::Zipfian),
        _ => ([0.5, 0.0, 0.0, 0.0, 0.5], RequestDist::Zipfian),
    }
}

/// One cell's YCSB settings, checked.
#[derive(Debug, Clone)]
pub struct Config {
    pub workload: char,
    pub records: u64,
    pub fields: usize,
    pub field_length: usize,
    pub ops: u32,
    /// Shares of [`OpKind::ALL`], summing to 1.
    pub mix: [f64; 5],
    pub dist: RequestDist,
    pub scan_min: u32,
    pub scan_max: u32,
    pub scan_zipfian: bool,
    pub keys: KeyFormat,
    pub write_all: bool,
    /// Records the scrambled zipfian spans beyond `records`.
    pub expected_inserts: u64,
    pub locking: bool,
}

impl Config {
    /// Reads and checks the parameters. Errors name the parameter.
    pub fn from_setup(setup: &Setup) -> Result<Self, WorkloadError> {
        let w = ["a", "b", "c", "d", "e", "f"]
            [setup.choice("workload", &["a", "b", "c", "d", "e", "f"])?];
        let workload = w.chars().next().expect("one letter");
        let (mut mix, mut dist) = core(workload);
        let by_workload = |name: &str| {
            setup
                .params
                .get(name)
                .is_some_and(|v| v.trim() == "workload")
        };
        for kind in OpKind::ALL {
            if !by_workload(kind.param()) {
                mix[kind as usize] = setup.float(kind.param(), 0.0..=1.0)?;
            }
        }
        let total: f64 = mix.iter().sum();
        if total <= 0.0 {
            return Err(WorkloadError::Invalid(format!(
                "--param readproportion, updateproportion, insertproportion, scanproportion, readmodifywriteproportion: ycsb workload={workload} with these shares has no operation; give one a share above 0"
            )));
        }
        mix.iter_mut().for_each(|m| *m /= total);
        if !by_workload("requestdistribution") {
            dist = match setup.choice("requestdistribution", &RequestDist::NAMES)? {
                0 => RequestDist::Uniform,
                1 => RequestDist::Zipfian,
                2 => RequestDist::Latest,
                _ => RequestDist::Hotspot {
                    data_fraction: setup.float("hotspotdatafraction", 0.0..=1.0)?,
                    opn_fraction: setup.float("hotspotopnfraction", 0.0..=1.0)?,
                },
            };
        }
        let records = setup.int("recordcount", 2..=2_000_000_000)? as u64;
        let field_length = setup.int("fieldlength", 1..=1_000_000)? as usize;
        if mix[OpKind::Rmw as usize] > 0.0 && field_length < COUNTER_DIGITS {
            return Err(WorkloadError::Invalid(format!(
                "--param fieldlength={field_length}: ycsb's read-modify-writes keep a {COUNTER_DIGITS}-digit counter at the start of field0; give fieldlength {COUNTER_DIGITS} or more"
            )));
        }
        let scan_min = setup.int("minscanlength", 1..=1_000_000)? as u32;
        let scan_max = setup.int("maxscanlength", 1..=1_000_000)? as u32;
        if scan_max < scan_min {
            return Err(WorkloadError::Invalid(format!(
                "--param maxscanlength={scan_max}: below minscanlength={scan_min}"
            )));
        }
        let operations = setup.int("operationcount", 0..=i64::MAX / 4)? as u64;
        Ok(Config {
            workload,
            records,
            fields: setup.int("fieldcount", 1..=1000)? as usize,
            field_length,
            ops: setup.int("ops", 1..=1000)? as u32,
            mix,
            dist,
            scan_min,
            scan_max,
            scan_zipfian: setup.choice("scanlengthdistribution", &["uniform", "zipfian"])? == 1,
            keys: KeyFormat {
                ordered: setup.choice("insertorder", &["hashed", "ordered"])? == 1,
                zeropadding: setup.int("zeropadding", 1..=64)? as u32,
            },
            write_all: setup.bool("writeallfields")?,
            expected_inserts: (operations as f64 * mix[OpKind::Insert as usize] * 2.0) as u64,
            locking: setup.strategy == "locking",
        })
    }

    /// Whether the mix has operations of `kind`.
    pub fn has(&self, kind: OpKind) -> bool {
        self.mix[kind as usize] > 0.0
    }

    /// Whether `field0` carries the read-modify-write counter.
    pub fn counts_rmw(&self) -> bool {
        self.has(OpKind::Rmw)
    }

    /// The operation kinds the mix uses, in YCSB's order.
    pub fn kinds(&self) -> Vec<OpKind> {
        OpKind::ALL.into_iter().filter(|k| self.has(*k)).collect()
    }
}

/// What committed, for the checks.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct YcsbLedger {
    /// Record numbers whose insert committed.
    pub inserted: Vec<u64>,
    /// Inserts of transactions whose COMMIT outcome is unknown.
    pub unknown_inserts: u64,
    /// Committed read-modify-writes that found their record.
    pub rmw: u64,
    /// Read-modify-writes of transactions whose outcome is unknown.
    pub unknown_rmw: u64,
}

impl Ledger for YcsbLedger {
    fn merge(&mut self, o: Self) {
        self.inserted.extend(o.inserted);
        self.unknown_inserts += o.unknown_inserts;
        self.rmw += o.rmw;
        self.unknown_rmw += o.unknown_rmw;
    }
}

/// The YCSB workload of one cell.
#[derive(Debug)]
pub struct Ycsb {
    cfg: Arc<Config>,
    seqs: RunSeqs,
    /// ζ(recordcount, 0.99) for `latest`, computed by the first client.
    latest_zeta: std::sync::OnceLock<f64>,
}

impl Ycsb {
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// `CREATE TABLE usertable` as YCSB's JDBC binding documents it for
    /// PostgreSQL, without its primary key (added after loading).
    fn ddl(&self) -> String {
        let fields: Vec<String> = (0..self.cfg.fields)
            .map(|i| format!("field{i} text"))
            .collect();
        format!(
            "CREATE TABLE usertable (ycsb_key varchar(255) NOT NULL, {})",
            fields.join(", ")
        )
    }
}

/// Appends `len` random characters from `[0-9A-Za-z_-]` (YCSB fills
/// fields with random printable bytes; these need no escaping in COPY).
pub fn random_text<R: rand::Rng + ?Sized>(rng: &mut R, len: usize, out: &mut String) {
    const ALPHABET: &[u8; 64] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-";
    let mut left = len;
    while left > 0 {
        let mut bits: u64 = rng.random();
        for _ in 0..left.min(10) {
            out.push(ALPHABET[(bits & 63) as usize] as char);
            bits >>= 6;
        }
        left = left.saturating_sub(10);
    }
}

impl Workload for Ycsb {
    type Client = YcsbClient;

    fn new(setup: &Setup) -> Result<Self, WorkloadError> {
        let cfg = Config::from_setup(setup)?;
        Ok(Ycsb {
            seqs: RunSeqs::new(cfg.records),
            cfg: Arc::new(cfg),
            latest_zeta: std::sync::OnceLock::new(),
        })
    }

    fn data_key(&self) -> String {
        let c = &self.cfg;
        format!(
            "recordcount={} fieldcount={} fieldlength={} insertorder={} zeropadding={}",
            c.records,
            c.fields,
            c.field_length,
            if c.keys.ordered { "ordered" } else { "hashed" },
            c.keys.zeropadding
        )
    }

    fn tx_types(&self) -> Vec<&'static str> {
        if self.cfg.ops == 1 {
            self.cfg.kinds().into_iter().map(OpKind::label).collect()
        } else {
            vec!["read-only", "read-write"]
        }
    }

    /// One COPY of `recordcount` rows, then the primary key. Every field
    /// is random text from a fixed seed; `field0` starts with the
    /// read-modify-write counter, 0, when `fieldlength` has room for it.
    async fn load(&self, db: &Loader) -> Result<u64, WorkloadError> {
        let c = &self.cfg;
        db.batch_execute(&self.ddl())
            .await
            .map_err(WorkloadError::db("create usertable"))?;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(DATA_SEED);
        let mut field = String::with_capacity(c.field_length);
        let rows = copy_rows(db, "COPY usertable FROM STDIN", c.records as i64, |b, i| {
            b.put_slice(c.keys.key((i - 1) as u64).as_bytes());
            for f in 0..c.fields {
                field.clear();
                if f == 0 && c.field_length >= COUNTER_DIGITS {
                    field.push_str("0000000000");
                    random_text(&mut rng, c.field_length - COUNTER_DIGITS, &mut field);
                } else {
                    random_text(&mut rng, c.field_length, &mut field);
                }
                b.put_u8(b'\t');
                b.put_slice(field.as_bytes());
            }
            b.put_u8(b'\n');
        })
        .await?;
        db.batch_execute("ALTER TABLE usertable ADD PRIMARY KEY (ycsb_key)")
            .await
            .map_err(WorkloadError::db("usertable primary key"))?;
        Ok(rows)
    }

    fn explain_statements(&self) -> Vec<ExplainStatement> {
        let key = format!("'{}'", self.cfg.keys.key(0));
        let text = format!("'{}'", "x".repeat(self.cfg.field_length));
        let mut seen = std::collections::HashSet::new();
        txn::statements(&self.cfg)
            .into_iter()
            .filter(|st| seen.insert(st.label))
            .map(|st| ExplainStatement {
                label: st.label.into(),
                sql: txn::bind_for_explain(&st.sql, &key, &text),
            })
            .collect()
    }

    fn client(&self, client_id: u32, seed: u64) -> YcsbClient {
        let zeta = (self.cfg.dist == RequestDist::Latest).then(|| {
            *self
                .latest_zeta
                .get_or_init(|| dist::zeta(self.cfg.records, dist::YCSB_ZIPFIAN_CONSTANT))
        });
        YcsbClient::new(
            Arc::clone(&self.cfg),
            self.seqs.for_client(client_id),
            seed,
            zeta,
        )
    }

    async fn check(
        &self,
        db: &Client,
        _lifetime: Lifetime,
        ledger: YcsbLedger,
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        check(&self.cfg, db, &ledger).await
    }
}

/// The invariants (see [`SPEC`]) of `usertable` against `ledger`.
///
/// Errors: a query failed.
pub async fn check(
    cfg: &Config,
    db: &Client,
    ledger: &YcsbLedger,
) -> Result<Vec<InvariantResult>, WorkloadError> {
    let what = "ycsb invariant query";
    let keys: Vec<String> = ledger.inserted.iter().map(|&k| cfg.keys.key(k)).collect();
    let row = db
        .query_one(
            "SELECT count(*), min(k) FROM unnest($1::text[]) AS i(k)
              WHERE NOT EXISTS (SELECT 1 FROM usertable u WHERE u.ycsb_key = i.k)",
            &[&keys],
        )
        .await
        .map_err(WorkloadError::db(what))?;
    let (missing, example): (i64, Option<String>) = (row.get(0), row.get(1));
    let mut out = vec![InvariantResult::count(
        "no-lost-inserts",
        missing as u64,
        match example {
            Some(k) => format!(
                "{missing} of {} committed inserts missing, e.g. {k}",
                keys.len()
            ),
            None => format!("all {} committed inserts present", keys.len()),
        },
    )];
    let counter = if cfg.counts_rmw() {
        "coalesce(sum(left(field0, 10)::bigint), 0)::bigint"
    } else {
        "0::bigint"
    };
    let row = db
        .query_one(&format!("SELECT count(*), {counter} FROM usertable"), &[])
        .await
        .map_err(WorkloadError::db(what))?;
    let (count, counted): (i64, i64) = (row.get(0), row.get(1));
    let lo = cfg.records + ledger.inserted.len() as u64;
    let hi = lo + ledger.unknown_inserts;
    let count = count as u64;
    out.push(InvariantResult::check(
        "row-count",
        (lo..=hi).contains(&count),
        format!(
            "count(*)={count} recordcount={} committed inserts={} unknown outcomes={}",
            cfg.records,
            ledger.inserted.len(),
            ledger.unknown_inserts
        ),
    ));
    if cfg.counts_rmw() {
        let counted = counted as u64;
        let (lo, hi) = (ledger.rmw, ledger.rmw + ledger.unknown_rmw);
        let lost = lo.saturating_sub(counted);
        let violations = if counted > hi { 1 } else { lost };
        let mut detail = format!(
            "Σ field0 counters={counted} committed read-modify-writes={lo} unknown outcomes={}",
            ledger.unknown_rmw
        );
        if lost > 0 {
            detail.push_str(&format!("; {lost} lost updates"));
        }
        out.push(InvariantResult::count("rmw-count", violations, detail));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::WorkloadClient;
    use std::collections::BTreeMap;

    fn setup(params: &[(&str, &str)], strategy: Option<&str>) -> Result<Setup, WorkloadError> {
        let given: BTreeMap<String, String> = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Setup::new(&SPEC, None, strategy, &given)
    }

    fn config(params: &[(&str, &str)]) -> Result<Config, WorkloadError> {
        Config::from_setup(&setup(params, None)?)
    }

    #[test]
    fn core_workloads_have_ycsbs_mixes_and_distributions() {
        let mix = |w: &str| config(&[("workload", w)]).unwrap();
        assert_eq!(mix("a").mix, [0.5, 0.5, 0.0, 0.0, 0.0]);
        assert_eq!(mix("b").mix, [0.95, 0.05, 0.0, 0.0, 0.0]);
        assert_eq!(mix("c").mix, [1.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(mix("d").mix, [0.95, 0.0, 0.05, 0.0, 0.0]);
        assert_eq!(mix("d").dist, RequestDist::Latest);
        assert_eq!(mix("e").mix, [0.0, 0.0, 0.05, 0.95, 0.0]);
        assert_eq!((mix("e").scan_min, mix("e").scan_max), (1, 100));
        assert_eq!(mix("f").mix, [0.5, 0.0, 0.0, 0.0, 0.5]);
        for w in ["a", "b", "c", "e", "f"] {
            assert_eq!(mix(w).dist, RequestDist::Zipfian, "{w}");
        }
        let a = mix("a");
        assert_eq!(
            (a.records, a.fields, a.field_length, a.ops),
            (1000, 10, 100, 1)
        );
        assert!(!a.keys.ordered && !a.write_all);
    }

    #[test]
    fn parameters_override_the_core_workload() {
        let c = config(&[
            ("workload", "a"),
            ("readproportion", "0.2"),
            ("updateproportion", "0.6"),
            ("scanproportion", "0.2"),
            ("requestdistribution", "hotspot"),
            ("hotspotdatafraction", "0.1"),
        ])
        .unwrap();
        assert_eq!(c.mix, [0.2, 0.6, 0.0, 0.2, 0.0]);
        assert_eq!(
            c.dist,
            RequestDist::Hotspot {
                data_fraction: 0.1,
                opn_fraction: 0.8
            }
        );
        // operationcount sizes the zipfian's room for inserts.
        let d = config(&[("workload", "e"), ("operationcount", "10000")]).unwrap();
        assert_eq!(d.expected_inserts, 1000);
    }

    #[test]
    fn bad_values_name_their_parameter() {
        let e = |p: &[(&str, &str)]| config(p).unwrap_err().to_string();
        assert!(e(&[("workload", "g")]).contains("--param workload=g"));
        assert!(e(&[("workload", "f"), ("fieldlength", "8")]).contains("--param fieldlength=8"));
        assert!(e(&[("workload", "c"), ("readproportion", "0")]).contains("no operation"));
        assert!(e(&[("maxscanlength", "5"), ("minscanlength", "6")]).contains("maxscanlength=5"));
        assert!(e(&[("requestdistribution", "pareto")]).contains("requestdistribution"));
        // Without read-modify-writes a short field is fine.
        assert!(config(&[("workload", "a"), ("fieldlength", "1")]).is_ok());
    }

    #[test]
    fn statements_are_the_jdbc_bindings() {
        let a = config(&[("workload", "a"), ("fieldcount", "3")]).unwrap();
        let sql: Vec<String> = txn::statements(&a).into_iter().map(|s| s.sql).collect();
        assert_eq!(
            sql,
            [
                "SELECT * FROM usertable WHERE ycsb_key = $1",
                "UPDATE usertable SET field0 = $1 WHERE ycsb_key = $2",
                "UPDATE usertable SET field1 = $1 WHERE ycsb_key = $2",
                "UPDATE usertable SET field2 = $1 WHERE ycsb_key = $2",
            ]
        );
        let e = config(&[("workload", "e"), ("fieldcount", "2")]).unwrap();
        let sql: Vec<String> = txn::statements(&e).into_iter().map(|s| s.sql).collect();
        assert_eq!(
            sql[1..],
            [
                "SELECT * FROM usertable WHERE ycsb_key >= $1 ORDER BY ycsb_key LIMIT $2",
                "INSERT INTO usertable (ycsb_key, field0, field1) VALUES ($1, $2, $3)",
            ]
        );
        // F: the read-modify-write writes its field and field0's counter;
        // with locking, it reads FOR UPDATE.
        let f = Config::from_setup(
            &setup(&[("workload", "f"), ("fieldcount", "2")], Some("locking")).unwrap(),
        )
        .unwrap();
        let sql: Vec<String> = txn::statements(&f).into_iter().map(|s| s.sql).collect();
        assert_eq!(
            sql[1..],
            [
                "SELECT * FROM usertable WHERE ycsb_key = $1 FOR UPDATE",
                "UPDATE usertable SET field0 = $1 WHERE ycsb_key = $2",
                "UPDATE usertable SET field0 = $1 || substr(field0, 11), field1 = $2 WHERE ycsb_key = $3",
            ]
        );
        // Updates keep the counter when the mix has read-modify-writes.
        let mixed = config(&[
            ("workload", "f"),
            ("updateproportion", "0.1"),
            ("writeallfields", "true"),
            ("fieldcount", "2"),
        ])
        .unwrap();
        let sql: Vec<String> = txn::statements(&mixed).into_iter().map(|s| s.sql).collect();
        assert!(sql.contains(&"UPDATE usertable SET field0 = left(field0, 10) || substr($1, 11), field1 = $2 WHERE ycsb_key = $3".to_string()), "{sql:?}");
        let w = Ycsb::new(&setup(&[("workload", "e")], None).unwrap()).unwrap();
        let explained = w.explain_statements();
        assert_eq!(explained[1].label, "scan");
        assert!(
            explained[1]
                .sql
                .ends_with("ycsb_key >= 'user6284781860667377211' ORDER BY ycsb_key LIMIT 10"),
            "{}",
            explained[1].sql
        );
        assert!(!explained.iter().any(|e| e.sql.contains('$')));
    }

    #[test]
    fn clients_draw_the_mix_and_number_inserts_in_one_sequence() {
        let w = Ycsb::new(&setup(&[("workload", "d")], None).unwrap()).unwrap();
        let mut c0 = w.client(0, 1);
        let mut c1 = w.client(1, 2);
        let (mut reads, mut inserts) = (0, Vec::new());
        for i in 0..20_000 {
            let c = if i % 2 == 0 { &mut c0 } else { &mut c1 };
            let input = c.next_input();
            assert_eq!(input.ops.len(), 1);
            match &input.ops[0] {
                Op::Read { .. } => reads += 1,
                Op::Insert {
                    keynum,
                    values,
                    key,
                } => {
                    inserts.push(*keynum);
                    assert_eq!(values.len(), 10);
                    assert!(values[0].starts_with("0000000000") && values[0].len() == 100);
                    assert_eq!(*key, w.config().keys.key(*keynum));
                }
                other => panic!("workload d drew {other:?}"),
            }
        }
        assert!((18_700..19_300).contains(&reads), "{reads}");
        // Both clients' inserts share one sequence from recordcount on.
        inserts.sort();
        assert_eq!(inserts.first(), Some(&1000));
        assert!(inserts.windows(2).all(|p| p[1] == p[0] + 1));
        // A new run (client 0 again) starts the sequence over.
        let mut again = w.client(0, 1);
        let first_insert = (0..1000)
            .find_map(|_| match &again.next_input().ops[0] {
                Op::Insert { keynum, .. } => Some(*keynum),
                _ => None,
            })
            .unwrap();
        assert_eq!(first_insert, 1000);
    }

    #[test]
    fn transactions_hold_ops_operations_and_are_typed() {
        let w = Ycsb::new(&setup(&[("workload", "e"), ("ops", "4")], None).unwrap()).unwrap();
        assert_eq!(w.tx_types(), ["read-only", "read-write"]);
        let mut c = w.client(0, 9);
        let mut seen = [0; 2];
        for _ in 0..2000 {
            let input = c.next_input();
            assert_eq!(input.ops.len(), 4);
            for op in &input.ops {
                if let Op::Scan { len, .. } = op {
                    assert!((1..=100).contains(len));
                }
            }
            let writes = input.ops.iter().any(|o| matches!(o, Op::Insert { .. }));
            assert_eq!(c.tx_type(&input), usize::from(writes));
            seen[usize::from(writes)] += 1;
        }
        // 1 - 0.95^4 = 18.5 % of transactions insert.
        assert!((300..450).contains(&seen[1]), "{seen:?}");
        let one = Ycsb::new(&setup(&[("workload", "f")], None).unwrap()).unwrap();
        assert_eq!(one.tx_types(), ["READ", "READ-MODIFY-WRITE"]);
    }

    #[test]
    fn random_text_needs_no_copy_escaping() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut s = String::new();
        random_text(&mut rng, 95, &mut s);
        assert_eq!(s.len(), 95);
        assert!(
            s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        );
    }
}
