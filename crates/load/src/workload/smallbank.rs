//! `smallbank`: the SmallBank banking benchmark.
//!
//! Source: M. Alomari, M. Cahill, A. Fekete, U. Röhm, "The Cost of
//! Serializability on Platforms That Use Snapshot Isolation", ICDE 2008;
//! the schema of BenchBase's PostgreSQL DDL.
//!
//! Tables `accounts(custid, name)`, `savings(custid, bal)`,
//! `checking(custid, bal)`; balances start uniform in 10000 .. 50000
//! (whole numbers in `float8`, so sums stay exact). Customers are drawn
//! from a hotspot (`hotspot-pct` % of transactions on the first
//! `hotspot-size` customers) because contention is the point.
//!
//! Transactions, equal weights (SendPayment only with `send-payment=true`):
//! Balance(N) reads both balances; DepositChecking(N, V) checking += V;
//! TransactSaving(N, V) savings += V, a user abort if savings would go
//! negative; Amalgamate(N1, N2) moves all of N1's money into N2's checking;
//! WriteCheck(N, V) reads both balances and debits checking by V, or V + 1
//! (a penalty) when their sum is below V; SendPayment(N1, N2, V) moves V
//! between checking accounts, a user abort if N1's checking is short.
//!
//! The dangerous structure is Balance -rw-> WriteCheck -rw->
//! TransactSaving with WriteCheck the pivot (the read-only anomaly of
//! Fekete, O'Neil and O'Neil, SIGMOD Record 2004), which is why
//! `balance=read-only|deferrable` matters under SERIALIZABLE. The `locking`
//! strategy is the paper's "promotion": WriteCheck reads savings
//! `FOR UPDATE`, which turns its rw-conflict with TransactSaving into a
//! write-write conflict.

use crate::wire::{Conn, Statement};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use tokio_postgres::Client;

use super::{
    Ended, ExplainStatement, Ledger, Loader, ParamSpec, Setup, StrategySpec, TxControl, Workload,
    WorkloadClient, WorkloadError, WorkloadSpec, copy_rows, put_int,
};
use crate::model::InvariantResult;
use crate::model::Lifetime;
use crate::workload::AttemptError;

/// `isobench workloads smallbank`.
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "smallbank",
    summary: "SmallBank: five banking transactions with a hotspot; WriteCheck is the SI pivot",
    source: "Alomari, Cahill, Fekete, Röhm, ICDE 2008; BenchBase's PostgreSQL DDL",
    scale: None,
    params: &[
        ParamSpec {
            name: "customers",
            default: "10000",
            help: "number of customers (BenchBase: 1000000 per scale unit)",
        },
        ParamSpec {
            name: "hotspot-size",
            default: "100",
            help: "customers in the hotspot; 0 = uniform over all customers",
        },
        ParamSpec {
            name: "hotspot-pct",
            default: "90",
            help: "% of customer draws that fall in the hotspot",
        },
        ParamSpec {
            name: "send-payment",
            default: "false",
            help: "true: add SendPayment as a sixth transaction (equal weight)",
        },
        ParamSpec {
            name: "balance",
            default: "read-write",
            help: "Balance runs as read-write | read-only | deferrable (READ ONLY DEFERRABLE)",
        },
    ],
    strategies: &[
        StrategySpec {
            name: "optimistic",
            help: "no row locks: the isolation level protects; retry 40001/40P01",
        },
        StrategySpec {
            name: "locking",
            help: "promotion: WriteCheck reads savings FOR UPDATE (Alomari et al.)",
        },
    ],
    transactions: &[
        "Balance (1/5): read savings and checking",
        "DepositChecking (1/5): checking += V (V uniform 1..100)",
        "TransactSaving (1/5): savings += V (V uniform -100..100); user abort if it would go negative",
        "Amalgamate (1/5): move all of N1's savings and checking into N2's checking",
        "WriteCheck (1/5): read both balances; checking -= V, or V + 1 if their sum < V",
        "SendPayment (1/6 each when send-payment=true): move V from N1's to N2's checking",
    ],
    invariants: &[
        "money-conserved: total money = initial + committed deposits, savings changes and debits (client ledger)",
        "savings-non-negative: customers whose savings went negative (TransactSaving refuses to)",
        "unpenalised-overdraft: WriteChecks whose debit, as written, left the balances negative without penalty",
    ],
    example: "--workload smallbank --param balance=read-write,deferrable --isolation rr,ser",
};

/// Seed of the loaded balances (data must not depend on the run).
const DATA_SEED: u64 = 0x5eed_ba4c;

const TYPES: [&str; 6] = [
    "Balance",
    "DepositChecking",
    "TransactSaving",
    "Amalgamate",
    "WriteCheck",
    "SendPayment",
];

/// The SmallBank workload.
#[derive(Debug, Clone)]
pub struct Smallbank {
    customers: i64,
    hotspot_size: i64,
    hotspot_pct: f64,
    send_payment: bool,
    /// 0 read-write, 1 read-only, 2 deferrable.
    balance_mode: usize,
    locking: bool,
}

impl Smallbank {
    /// The data the loader writes, row by row: (custid, savings, checking).
    fn rows(&self) -> impl Iterator<Item = (i64, f64, f64)> + use<> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(DATA_SEED);
        (1..=self.customers).map(move |c| {
            let s = rng.random_range(10_000..=50_000) as f64;
            let k = rng.random_range(10_000..=50_000) as f64;
            (c, s, k)
        })
    }
}

/// Money the clients moved, as whole units.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Money {
    /// Σ of committed changes to the bank's total (deposits, savings
    /// changes, minus check debits).
    pub net: i64,
    /// Σ |change| of transactions whose COMMIT outcome is unknown.
    pub uncertain: i64,
    /// WriteChecks that debited without penalty and whose write left
    /// savings + checking negative.
    pub overdrafts: u64,
    pub overdraft_example: Option<String>,
}

impl Ledger for Money {
    fn merge(&mut self, o: Self) {
        self.net += o.net;
        self.uncertain += o.uncertain;
        self.overdrafts += o.overdrafts;
        if self.overdraft_example.is_none() {
            self.overdraft_example = o.overdraft_example;
        }
    }
}

impl Workload for Smallbank {
    type Client = SmallbankClient;

    fn new(setup: &Setup) -> Result<Self, WorkloadError> {
        let customers = setup.int("customers", 2..=100_000_000)?;
        Ok(Smallbank {
            customers,
            hotspot_size: setup.int("hotspot-size", 0..=customers)?,
            hotspot_pct: setup.float("hotspot-pct", 0.0..=100.0)?,
            send_payment: setup.bool("send-payment")?,
            balance_mode: setup.choice("balance", &["read-write", "read-only", "deferrable"])?,
            locking: setup.strategy == "locking",
        })
    }

    fn data_key(&self) -> String {
        format!("customers={}", self.customers)
    }

    fn tx_types(&self) -> Vec<&'static str> {
        let n = if self.send_payment { 6 } else { 5 };
        TYPES[..n].to_vec()
    }

    async fn load(&self, db: &Loader) -> Result<u64, WorkloadError> {
        use bytes::BufMut;
        db.batch_execute(
            "CREATE TABLE accounts (custid bigint PRIMARY KEY, name varchar(64) NOT NULL);
             CREATE TABLE savings (custid bigint PRIMARY KEY REFERENCES accounts (custid), bal float8 NOT NULL);
             CREATE TABLE checking (custid bigint PRIMARY KEY REFERENCES accounts (custid), bal float8 NOT NULL);
             CREATE INDEX accounts_name ON accounts (name);",
        )
        .await
        .map_err(WorkloadError::db("create smallbank tables"))?;
        let data: Vec<(i64, f64, f64)> = self.rows().collect();
        let mut rows = 0;
        for (table, col) in [("accounts", 0), ("savings", 1), ("checking", 2)] {
            let sql = format!("COPY {table} FROM STDIN");
            rows += copy_rows(db, &sql, self.customers, |buf, c| {
                let (_, s, k) = data[(c - 1) as usize];
                put_int(buf, c);
                buf.put_u8(b'\t');
                match col {
                    0 => buf.put_slice(format!("customer {c:010}").as_bytes()),
                    1 => put_int(buf, s as i64),
                    _ => put_int(buf, k as i64),
                }
                buf.put_u8(b'\n');
            })
            .await?;
        }
        Ok(rows)
    }

    fn explain_statements(&self) -> Vec<ExplainStatement> {
        vec![
            ExplainStatement {
                label: "read savings".into(),
                sql: sql::READ_SAVINGS.replace("$1", "1"),
            },
            ExplainStatement {
                label: "update checking".into(),
                sql: sql::ADD_CHECKING.replace("$1", "1").replace("$2", "1"),
            },
        ]
    }

    fn client(&self, _client_id: u32, seed: u64) -> SmallbankClient {
        SmallbankClient {
            w: self.clone(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            stmts: None,
            pending: 0,
            ledger: Money::default(),
        }
    }

    async fn check(
        &self,
        db: &Client,
        _lifetime: Lifetime,
        m: Money,
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        let initial: f64 = self.rows().map(|(_, s, k)| s + k).sum();
        let row = db
            .query_one(
                "SELECT (SELECT sum(bal) FROM savings) + (SELECT sum(bal) FROM checking),
                        (SELECT count(*) FROM savings WHERE bal < 0),
                        (SELECT min(custid) FROM savings WHERE bal < 0)",
                &[],
            )
            .await
            .map_err(WorkloadError::db("smallbank invariant query"))?;
        let (total, negative, first): (f64, i64, Option<i64>) =
            (row.get(0), row.get(1), row.get(2));
        let expected = initial + m.net as f64;
        let off = total - expected;
        Ok(vec![
            InvariantResult::check(
                "money-conserved",
                off.abs() <= m.uncertain as f64,
                format!(
                    "total={total} expected={expected} (initial {initial} + committed {}), difference {off}, unknown-outcome slack {}",
                    m.net, m.uncertain
                ),
            ),
            InvariantResult::count(
                "savings-non-negative",
                negative as u64,
                match first {
                    None => "no savings balance is negative".into(),
                    Some(c) => format!("{negative} negative savings balances, e.g. customer {c}"),
                },
            ),
            InvariantResult::count(
                "unpenalised-overdraft",
                m.overdrafts,
                m.overdraft_example.unwrap_or_else(|| {
                    "no WriteCheck left a balance negative without penalty (visible under READ COMMITTED only: \
                     a snapshot hides concurrent changes)"
                        .into()
                }),
            ),
        ])
    }
}

mod sql {
    pub(crate) const READ_SAVINGS: &str = "SELECT bal FROM savings WHERE custid = $1";
    pub(crate) const READ_SAVINGS_LOCK: &str =
        "SELECT bal FROM savings WHERE custid = $1 FOR UPDATE";
    pub(crate) const READ_CHECKING: &str = "SELECT bal FROM checking WHERE custid = $1";
    pub(crate) const ADD_CHECKING: &str = "UPDATE checking SET bal = bal + $2 WHERE custid = $1";
    pub(crate) const ADD_SAVINGS: &str = "UPDATE savings SET bal = bal + $2 WHERE custid = $1";
    pub(crate) const ZERO_CHECKING: &str = "UPDATE checking SET bal = 0 WHERE custid = $1";
    pub(crate) const ZERO_SAVINGS: &str = "UPDATE savings SET bal = 0 WHERE custid = $1";
    /// WriteCheck's debit; returns the balances as the write left them
    /// (savings as of this statement's snapshot).
    pub(crate) const DEBIT_CHECKING: &str = "WITH c AS (UPDATE checking SET bal = bal - $2 WHERE custid = $1 RETURNING bal) \
         SELECT c.bal + s.bal FROM c, savings s WHERE s.custid = $1";
}

/// Prepared statements of one connection.
#[derive(Debug)]
struct Stmts {
    balance_begin: Option<Statement>,
    read_savings: Statement,
    read_savings_wc: Statement,
    read_checking: Statement,
    add_checking: Statement,
    add_savings: Statement,
    zero_checking: Statement,
    zero_savings: Statement,
    debit_checking: Statement,
}

/// One SmallBank client.
#[derive(Debug)]
pub struct SmallbankClient {
    w: Smallbank,
    rng: Xoshiro256PlusPlus,
    stmts: Option<Stmts>,
    /// The change to total money the current attempt makes if it commits.
    pending: i64,
    ledger: Money,
}

/// One transaction: its type (index into the type names), customers and
/// amount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmallbankInput {
    pub ty: usize,
    pub n1: i64,
    pub n2: i64,
    pub v: i64,
}

impl SmallbankClient {
    fn customer(&mut self) -> i64 {
        let w = &self.w;
        if w.hotspot_size > 0 && self.rng.random_bool(w.hotspot_pct / 100.0) {
            self.rng.random_range(1..=w.hotspot_size)
        } else {
            self.rng.random_range(1..=w.customers)
        }
    }

    async fn read(conn: &mut Conn, stmt: &Statement, custid: i64) -> Result<f64, AttemptError> {
        let row = conn
            .query_one(stmt, &[&custid])
            .await
            .map_err(AttemptError::body)?;
        Ok(row.get(0))
    }

    async fn exec(
        conn: &mut Conn,
        stmt: &Statement,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<(), AttemptError> {
        conn.execute(stmt, params)
            .await
            .map(drop)
            .map_err(AttemptError::body)
    }
}

impl WorkloadClient for SmallbankClient {
    type Input = SmallbankInput;
    type Ledger = Money;

    async fn prepare(&mut self, conn: &mut Conn, tx: &TxControl) -> Result<(), crate::wire::Error> {
        let mode = match self.w.balance_mode {
            1 => " READ ONLY",
            2 => " READ ONLY DEFERRABLE",
            _ => "",
        };
        let balance_begin = if mode.is_empty() {
            None
        } else {
            Some(
                conn.prepare(&format!(
                    "BEGIN ISOLATION LEVEL {}{mode}",
                    tx.isolation().sql()
                ))
                .await?,
            )
        };
        let wc_read = if self.w.locking {
            sql::READ_SAVINGS_LOCK
        } else {
            sql::READ_SAVINGS
        };
        self.stmts = Some(Stmts {
            balance_begin,
            read_savings: conn.prepare(sql::READ_SAVINGS).await?,
            read_savings_wc: conn.prepare(wc_read).await?,
            read_checking: conn.prepare(sql::READ_CHECKING).await?,
            add_checking: conn.prepare(sql::ADD_CHECKING).await?,
            add_savings: conn.prepare(sql::ADD_SAVINGS).await?,
            zero_checking: conn.prepare(sql::ZERO_CHECKING).await?,
            zero_savings: conn.prepare(sql::ZERO_SAVINGS).await?,
            debit_checking: conn.prepare(sql::DEBIT_CHECKING).await?,
        });
        Ok(())
    }

    fn next_input(&mut self) -> SmallbankInput {
        let types = if self.w.send_payment { 6 } else { 5 };
        let ty = self.rng.random_range(0..types);
        let n1 = self.customer();
        let mut n2 = self.customer();
        if n2 == n1 {
            // Any other customer (a hotspot of one cannot give two).
            n2 = self.rng.random_range(1..self.w.customers);
            if n2 >= n1 {
                n2 += 1;
            }
        }
        let v = match ty {
            2 => self.rng.random_range(-100..=100),
            _ => self.rng.random_range(1..=100),
        };
        SmallbankInput { ty, n1, n2, v }
    }

    fn tx_type(&self, input: &SmallbankInput) -> usize {
        input.ty
    }

    async fn attempt(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        i: &SmallbankInput,
    ) -> Result<Ended, AttemptError> {
        let s = self.stmts.as_ref().expect("prepare() before attempt()");
        let v = i.v as f64;
        self.pending = 0;
        let mut overdraft = None;
        match i.ty {
            0 => {
                match &s.balance_begin {
                    Some(b) => Self::exec(conn, b, &[]).await?,
                    None => tx.begin(conn).await?,
                }
                Self::read(conn, &s.read_savings, i.n1).await?;
                Self::read(conn, &s.read_checking, i.n1).await?;
            }
            1 => {
                tx.begin(conn).await?;
                Self::exec(conn, &s.add_checking, &[&i.n1, &v]).await?;
                self.pending = i.v;
            }
            2 => {
                tx.begin(conn).await?;
                let bal = Self::read(conn, &s.read_savings, i.n1).await?;
                if bal + v < 0.0 {
                    return tx.user_abort(conn).await;
                }
                Self::exec(conn, &s.add_savings, &[&i.n1, &v]).await?;
                self.pending = i.v;
            }
            3 => {
                tx.begin(conn).await?;
                let sav = Self::read(conn, &s.read_savings, i.n1).await?;
                let chk = Self::read(conn, &s.read_checking, i.n1).await?;
                let total = sav + chk;
                Self::exec(conn, &s.zero_savings, &[&i.n1]).await?;
                Self::exec(conn, &s.zero_checking, &[&i.n1]).await?;
                Self::exec(conn, &s.add_checking, &[&i.n2, &total]).await?;
            }
            4 => {
                tx.begin(conn).await?;
                let sav = Self::read(conn, &s.read_savings_wc, i.n1).await?;
                let chk = Self::read(conn, &s.read_checking, i.n1).await?;
                let penalty = sav + chk < v;
                let debit = if penalty { v + 1.0 } else { v };
                let after: f64 = conn
                    .query_one(&s.debit_checking, &[&i.n1, &debit])
                    .await
                    .map_err(AttemptError::body)?
                    .get(0);
                if !penalty && after < 0.0 {
                    overdraft = Some(format!(
                        "customer {}: WriteCheck of {v} read savings {sav} + checking {chk}, its debit left {after}",
                        i.n1
                    ));
                }
                self.pending = -(debit as i64);
            }
            _ => {
                tx.begin(conn).await?;
                let bal = Self::read(conn, &s.read_checking, i.n1).await?;
                if bal < v {
                    return tx.user_abort(conn).await;
                }
                Self::exec(conn, &s.add_checking, &[&i.n1, &-v]).await?;
                Self::exec(conn, &s.add_checking, &[&i.n2, &v]).await?;
            }
        }
        let outcome = tx.commit(conn).await?;
        self.ledger.net += self.pending;
        if let Some(example) = overdraft {
            self.ledger.overdrafts += 1;
            self.ledger.overdraft_example.get_or_insert(example);
        }
        Ok(outcome)
    }

    fn unknown_outcome(&mut self, _input: &SmallbankInput) {
        self.ledger.uncertain += self.pending.abs();
    }

    fn into_ledger(self) -> Money {
        self.ledger
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn workload(params: &[(&str, &str)]) -> Smallbank {
        let given: BTreeMap<String, String> = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Smallbank::new(&Setup::new(&SPEC, None, None, &given).unwrap()).unwrap()
    }

    #[test]
    fn inputs_use_the_hotspot_and_two_distinct_customers() {
        let w = workload(&[
            ("customers", "1000"),
            ("hotspot-size", "10"),
            ("hotspot-pct", "90"),
        ]);
        let mut c = w.client(0, 7);
        let mut hot = 0;
        let mut types = [0u32; 6];
        for _ in 0..10_000 {
            let i = c.next_input();
            assert_ne!(i.n1, i.n2);
            assert!((1..=1000).contains(&i.n1) && (1..=1000).contains(&i.n2));
            hot += u32::from(i.n1 <= 10);
            types[i.ty] += 1;
        }
        // 90 % hot draws plus the cold draws that land in the hotspot.
        assert!((8_900..9_200).contains(&hot), "{hot}");
        assert_eq!(types[5], 0, "no SendPayment unless asked");
        assert!(
            types[..5].iter().all(|&n| (1_800..2_200).contains(&n)),
            "{types:?}"
        );
    }

    #[test]
    fn a_hotspot_of_one_still_gives_two_customers() {
        let w = workload(&[
            ("customers", "2"),
            ("hotspot-size", "1"),
            ("hotspot-pct", "100"),
        ]);
        let mut c = w.client(0, 1);
        for _ in 0..100 {
            let i = c.next_input();
            assert_eq!((i.n1, i.n2), (1, 2));
        }
    }
}
