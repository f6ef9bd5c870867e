//! One YCSB client: draws a transaction's operations (YCSB's
//! `doTransaction*`), prepares the JDBC binding's statements, and runs an
//! attempt.

use std::fmt::Write as _;
use std::sync::Arc;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use super::keys::{Chooser, InsertSeq};
use super::{COUNTER_DIGITS, Config, OpKind, YcsbLedger, random_text};
use crate::wire::{Conn, Statement};
use crate::workload::dist::Zipfian;
use crate::workload::{AttemptError, Ended, TxControl, WorkloadClient};

/// A statement's parameter.
type Param<'a> = &'a (dyn tokio_postgres::types::ToSql + Sync);

/// One operation with its inputs (values drawn once: a retry writes the
/// same).
#[derive(Debug, Clone)]
pub enum Op {
    Read {
        key: String,
    },
    /// `field` `None`: every field (`writeallfields`).
    Update {
        key: String,
        field: Option<usize>,
        values: Vec<String>,
    },
    Insert {
        keynum: u64,
        key: String,
        values: Vec<String>,
    },
    Scan {
        key: String,
        len: i64,
    },
    /// Reads `key`, then writes `values` to `field` (or every field) and
    /// the incremented counter to `field0`.
    Rmw {
        key: String,
        field: Option<usize>,
        values: Vec<String>,
    },
}

impl Op {
    fn kind(&self) -> OpKind {
        match self {
            Op::Read { .. } => OpKind::Read,
            Op::Update { .. } => OpKind::Update,
            Op::Insert { .. } => OpKind::Insert,
            Op::Scan { .. } => OpKind::Scan,
            Op::Rmw { .. } => OpKind::Rmw,
        }
    }
}

/// A transaction: `ops` operations.
#[derive(Debug, Clone)]
pub struct YcsbInput {
    pub ops: Vec<Op>,
}

/// Where a prepared statement goes in a client's set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Read,
    Scan,
    /// One per field set, in [`field_sets`]' order.
    Update,
    Insert,
    ReadLock,
    /// One per field set.
    Rmw,
}

/// A statement a configuration uses: its slot, its label in reports (the
/// per-field variants of an update share one), its SQL.
#[derive(Debug, Clone)]
pub struct SqlStatement {
    pub slot: Slot,
    pub label: &'static str,
    pub sql: String,
}

/// Every statement a configuration uses, in preparation order: read,
/// scan, update of each field (or of all), insert, the locking read,
/// read-modify-write of each field (or all). Parameters: the values in
/// field order, then the key (updates); the key then the fields
/// (insert); the key and the scan length (scan).
pub fn statements(cfg: &Config) -> Vec<SqlStatement> {
    let mut out = Vec::new();
    let mut add = |slot, label, sql: String| out.push(SqlStatement { slot, label, sql });
    let keep = cfg.counts_rmw();
    add(
        Slot::Read,
        "read",
        "SELECT * FROM usertable WHERE ycsb_key = $1".into(),
    );
    if cfg.has(OpKind::Scan) {
        add(
            Slot::Scan,
            "scan",
            "SELECT * FROM usertable WHERE ycsb_key >= $1 ORDER BY ycsb_key LIMIT $2".into(),
        );
    }
    if cfg.has(OpKind::Update) {
        for fields in field_sets(cfg) {
            add(Slot::Update, "update", update_sql(&fields, keep, false));
        }
    }
    if cfg.has(OpKind::Insert) {
        let cols: Vec<String> = (0..cfg.fields).map(|i| format!("field{i}")).collect();
        let params: Vec<String> = (1..=cfg.fields + 1).map(|i| format!("${i}")).collect();
        add(
            Slot::Insert,
            "insert",
            format!(
                "INSERT INTO usertable (ycsb_key, {}) VALUES ({})",
                cols.join(", "),
                params.join(", ")
            ),
        );
    }
    if cfg.has(OpKind::Rmw) {
        if cfg.locking {
            add(
                Slot::ReadLock,
                "read for update",
                "SELECT * FROM usertable WHERE ycsb_key = $1 FOR UPDATE".into(),
            );
        }
        for fields in field_sets(cfg) {
            add(
                Slot::Rmw,
                "read-modify-write",
                update_sql(&fields, false, true),
            );
        }
    }
    out
}

/// The field sets an update writes: one per field, or all of them.
fn field_sets(cfg: &Config) -> Vec<Vec<usize>> {
    if cfg.write_all {
        vec![(0..cfg.fields).collect()]
    } else {
        (0..cfg.fields).map(|f| vec![f]).collect()
    }
}

/// `UPDATE usertable SET ... WHERE ycsb_key = $last`, `$i` per field in
/// `fields`. With `keep_counter`, `field0` keeps its first 10 characters
/// (the read-modify-write counter). With `rmw`, `field0` gets a new
/// counter: as the new value's first characters when `field0` is written
/// (the client puts them there), else `$1` replaces them.
fn update_sql(fields: &[usize], keep_counter: bool, rmw: bool) -> String {
    let mut sets = Vec::new();
    let mut n = 0;
    if rmw && !fields.contains(&0) {
        n += 1;
        sets.push(format!(
            "field0 = ${n} || substr(field0, {})",
            COUNTER_DIGITS + 1
        ));
    }
    for &f in fields {
        n += 1;
        if f == 0 && keep_counter {
            sets.push(format!(
                "field0 = left(field0, {COUNTER_DIGITS}) || substr(${n}, {})",
                COUNTER_DIGITS + 1
            ));
        } else {
            sets.push(format!("field{f} = ${n}"));
        }
    }
    format!(
        "UPDATE usertable SET {} WHERE ycsb_key = ${}",
        sets.join(", "),
        n + 1
    )
}

/// `sql` with its parameters replaced by literals: `key` for text
/// parameters compared with `ycsb_key`, 10 for the scan length, `text`
/// for values.
pub fn bind_for_explain(sql: &str, key: &str, text: &str) -> String {
    let mut out = sql.to_string();
    for i in (1..=1001).rev() {
        let p = format!("${i}");
        if !out.contains(&p) {
            continue;
        }
        let lit = if out.contains(&format!("ycsb_key = {p}"))
            || out.contains(&format!("ycsb_key >= {p}"))
        {
            key
        } else if out.contains(&format!("LIMIT {p}")) {
            "10"
        } else if out.starts_with("INSERT") && i == 1 {
            key
        } else {
            text
        };
        out = out.replace(&p, lit);
    }
    out
}

/// Prepared statements of one connection, in [`statements`]' order.
#[derive(Debug, Default)]
struct Stmts {
    read: Option<Statement>,
    scan: Option<Statement>,
    /// Per field, or one for all fields.
    update: Vec<Statement>,
    insert: Option<Statement>,
    read_lock: Option<Statement>,
    rmw: Vec<Statement>,
}

/// One YCSB client.
#[derive(Debug)]
pub struct YcsbClient {
    cfg: Arc<Config>,
    rng: Xoshiro256PlusPlus,
    seq: Arc<InsertSeq>,
    chooser: Chooser,
    scan_zipf: Option<Zipfian>,
    /// Record numbers the last input inserts: acknowledged when the next
    /// input is drawn (the transaction has ended by then).
    unacked: Vec<u64>,
    /// With one operation per transaction: the transaction type of each
    /// [`OpKind`] (its index among the kinds the mix uses).
    type_of: [usize; 5],
    stmts: Option<Stmts>,
    ledger: YcsbLedger,
}

impl YcsbClient {
    /// A client of `cfg` inserting along `seq`, its generator seeded with
    /// `seed`; `latest_zeta` is ζ(recordcount, 0.99) for `latest`.
    pub fn new(cfg: Arc<Config>, seq: Arc<InsertSeq>, seed: u64, latest_zeta: Option<f64>) -> Self {
        let chooser = Chooser::new(cfg.dist, cfg.records, cfg.expected_inserts, latest_zeta);
        let mut type_of = [0; 5];
        for (i, k) in cfg.kinds().into_iter().enumerate() {
            type_of[k as usize] = i;
        }
        let scan_zipf = cfg.scan_zipfian.then(|| {
            Zipfian::new(
                u64::from(cfg.scan_max - cfg.scan_min) + 1,
                crate::workload::dist::YCSB_ZIPFIAN_CONSTANT,
            )
        });
        YcsbClient {
            cfg,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            seq,
            chooser,
            scan_zipf,
            unacked: Vec::new(),
            type_of,
            stmts: None,
            ledger: YcsbLedger::default(),
        }
    }

    /// The operation kind of the next draw (YCSB's `DiscreteGenerator`).
    fn kind(&mut self) -> OpKind {
        let mut u: f64 = self.rng.random();
        for k in OpKind::ALL {
            let share = self.cfg.mix[k as usize];
            if share > 0.0 && u < share {
                return k;
            }
            u -= share;
        }
        *self.cfg.kinds().last().expect("a kind with a share")
    }

    fn key(&mut self) -> String {
        let last = self.seq.last();
        let keynum = self.chooser.next(&mut self.rng, last);
        self.cfg.keys.key(keynum)
    }

    /// New values: one per field in the set (`None`: all fields).
    fn values(&mut self, field: Option<usize>) -> Vec<String> {
        let n = if field.is_some() { 1 } else { self.cfg.fields };
        (0..n)
            .map(|_| {
                let mut s = String::with_capacity(self.cfg.field_length);
                random_text(&mut self.rng, self.cfg.field_length, &mut s);
                s
            })
            .collect()
    }

    fn field(&mut self) -> Option<usize> {
        (!self.cfg.write_all).then(|| self.rng.random_range(0..self.cfg.fields))
    }

    fn scan_len(&mut self) -> i64 {
        let (min, max) = (self.cfg.scan_min, self.cfg.scan_max);
        let v = match &self.scan_zipf {
            Some(z) => min as u64 + z.sample(&mut self.rng),
            None => self.rng.random_range(u64::from(min)..=u64::from(max)),
        };
        v as i64
    }

    fn op(&mut self) -> Op {
        match self.kind() {
            OpKind::Read => Op::Read { key: self.key() },
            OpKind::Update => {
                let key = self.key();
                let field = self.field();
                Op::Update {
                    key,
                    values: self.values(field),
                    field,
                }
            }
            OpKind::Insert => {
                let keynum = self.seq.allocate();
                self.unacked.push(keynum);
                let mut values = self.values(None);
                if self.cfg.field_length >= COUNTER_DIGITS {
                    values[0].replace_range(..COUNTER_DIGITS, "0000000000");
                }
                Op::Insert {
                    keynum,
                    key: self.cfg.keys.key(keynum),
                    values,
                }
            }
            OpKind::Scan => Op::Scan {
                key: self.key(),
                len: self.scan_len(),
            },
            OpKind::Rmw => {
                let key = self.key();
                let field = self.field();
                Op::Rmw {
                    key,
                    values: self.values(field),
                    field,
                }
            }
        }
    }
}

/// The counter at the start of a `field0` value (0 if it has none).
fn counter_of(field0: &str) -> u64 {
    field0
        .get(..COUNTER_DIGITS)
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

impl WorkloadClient for YcsbClient {
    type Input = YcsbInput;
    type Ledger = YcsbLedger;

    async fn prepare(
        &mut self,
        conn: &mut Conn,
        _tx: &TxControl,
    ) -> Result<(), crate::wire::Error> {
        let mut stmts = Stmts::default();
        for st in statements(&self.cfg) {
            let s = conn.prepare(&st.sql).await?;
            match st.slot {
                Slot::Read => stmts.read = Some(s),
                Slot::Scan => stmts.scan = Some(s),
                Slot::Insert => stmts.insert = Some(s),
                Slot::ReadLock => stmts.read_lock = Some(s),
                Slot::Update => stmts.update.push(s),
                Slot::Rmw => stmts.rmw.push(s),
            }
        }
        self.stmts = Some(stmts);
        Ok(())
    }

    fn next_input(&mut self) -> YcsbInput {
        for k in std::mem::take(&mut self.unacked) {
            self.seq.acknowledge(k);
        }
        let ops = (0..self.cfg.ops).map(|_| self.op()).collect();
        YcsbInput { ops }
    }

    /// Reads and scans only (YCSB's read-only operations).
    fn read_only(&self, input: &YcsbInput) -> bool {
        input
            .ops
            .iter()
            .all(|o| matches!(o, Op::Read { .. } | Op::Scan { .. }))
    }

    fn tx_type(&self, input: &YcsbInput) -> usize {
        if self.cfg.ops == 1 {
            return self.type_of[input.ops[0].kind() as usize];
        }
        let writes = input
            .ops
            .iter()
            .any(|o| !matches!(o, Op::Read { .. } | Op::Scan { .. }));
        usize::from(writes)
    }

    async fn attempt(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        input: &YcsbInput,
    ) -> Result<Ended, AttemptError> {
        let s = self.stmts.as_ref().expect("prepare() before attempt()");
        // One single-statement operation is its own transaction (YCSB's
        // JDBC binding runs in autocommit).
        let autocommit = input.ops.len() == 1 && !matches!(input.ops[0], Op::Rmw { .. });
        let wrap = |label: &'static str| {
            move |e| {
                if autocommit {
                    AttemptError::commit(e).at(label)
                } else {
                    AttemptError::body(e).at(label)
                }
            }
        };
        if !autocommit {
            tx.begin(conn).await?;
        }
        let (mut rmw, mut scratch) = (0u64, String::new());
        for op in &input.ops {
            match op {
                Op::Read { key } => {
                    let read = s.read.as_ref().expect("read prepared");
                    conn.execute(read, &[key]).await.map_err(wrap("read"))?;
                }
                Op::Scan { key, len } => {
                    let scan = s.scan.as_ref().expect("scan prepared");
                    conn.execute(scan, &[key, len])
                        .await
                        .map_err(wrap("scan"))?;
                }
                Op::Update { key, field, values } => {
                    let stmt = &s.update[field.unwrap_or(0)];
                    let mut params: Vec<Param<'_>> =
                        values.iter().map(|v| v as Param<'_>).collect();
                    params.push(key);
                    conn.execute(stmt, &params).await.map_err(wrap("update"))?;
                }
                Op::Insert { key, values, .. } => {
                    let stmt = s.insert.as_ref().expect("insert prepared");
                    let mut params: Vec<Param<'_>> = vec![key];
                    params.extend(values.iter().map(|v| v as Param<'_>));
                    conn.execute(stmt, &params).await.map_err(wrap("insert"))?;
                }
                Op::Rmw { key, field, values } => {
                    let (read, label) = match &s.read_lock {
                        Some(r) => (r, "read for update"),
                        None => (s.read.as_ref().expect("read prepared"), "read"),
                    };
                    let row = conn.query_opt(read, &[key]).await.map_err(wrap(label))?;
                    // A record that is not there: nothing to modify.
                    let Some(row) = row else { continue };
                    let n = counter_of(row.get::<Option<&str>>(1).unwrap_or(""));
                    scratch.clear();
                    let _ = write!(scratch, "{:0width$}", n + 1, width = COUNTER_DIGITS);
                    let writes_field0 = matches!(field, None | Some(0));
                    if writes_field0 {
                        // field0's new value: the counter, then the rest
                        // of YCSB's new value.
                        scratch.push_str(values[0].get(COUNTER_DIGITS..).unwrap_or(""));
                    }
                    let stmt = &s.rmw[field.unwrap_or(0)];
                    let mut params: Vec<Param<'_>> = vec![&scratch];
                    let rest = if writes_field0 {
                        &values[1..]
                    } else {
                        &values[..]
                    };
                    params.extend(rest.iter().map(|v| v as Param<'_>));
                    params.push(key);
                    conn.execute(stmt, &params)
                        .await
                        .map_err(wrap("read-modify-write"))?;
                    rmw += 1;
                }
            }
        }
        let outcome = if autocommit {
            Ended::Committed
        } else {
            tx.commit(conn).await?
        };
        for op in &input.ops {
            if let Op::Insert { keynum, .. } = op {
                self.ledger.inserted.push(*keynum);
            }
        }
        self.ledger.rmw += rmw;
        Ok(outcome)
    }

    fn unknown_outcome(&mut self, input: &YcsbInput) {
        for op in &input.ops {
            match op {
                Op::Insert { .. } => self.ledger.unknown_inserts += 1,
                Op::Rmw { .. } => self.ledger.unknown_rmw += 1,
                _ => {}
            }
        }
    }

    fn into_ledger(self) -> YcsbLedger {
        self.ledger
    }
}
