//! One sysbench client: draws an event's inputs as the test's `event()`
//! does, and runs it.

use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;
use tokio_postgres::types::ToSql;

use super::load::{C_LEN, PAD_LEN, digit_groups, unique_id};
use super::statements::{self, Block, Kind, Test, insert_literal};
use super::{Changes, Options};
use crate::wire::{Conn, SimpleMessage, Statement};
use crate::workload::dist::sysbench_uniform;
use crate::workload::{AttemptError, Ended, TxControl, WorkloadClient};

/// One statement of an event with its inputs.
#[derive(Debug, Clone)]
pub enum Stmt {
    /// A point select, an index update or a delete of `id`.
    Id {
        kind: Kind,
        table: u32,
        id: i32,
    },
    /// A range SELECT of `lo ..= hi`.
    Range {
        kind: Kind,
        table: u32,
        lo: i32,
        hi: i32,
    },
    NonIndexUpdate {
        table: u32,
        id: i32,
        c: [u8; C_LEN],
    },
    Insert {
        table: u32,
        id: i32,
        k: i32,
        c: [u8; C_LEN],
        pad: [u8; PAD_LEN],
    },
    /// `oltp_insert`'s literal INSERT (`id` `None`: the SERIAL draws it).
    InsertLiteral {
        table: u32,
        id: Option<i32>,
        k: i32,
        sql: String,
    },
}

/// One event.
#[derive(Debug, Clone)]
pub struct SysbenchInput {
    pub stmts: Vec<Stmt>,
}

/// One sysbench client.
#[derive(Debug)]
pub struct SysbenchClient {
    opts: Options,
    plan: Vec<Block>,
    rng: Xoshiro256PlusPlus,
    /// `oltp_insert` without `auto_inc`: this client's next unique-id index.
    next_unique: u32,
    /// Prepared statements by table (0-based) and [`Kind`].
    stmts: Vec<[Option<Statement>; 9]>,
    ledger: Changes,
}

impl SysbenchClient {
    pub fn new(opts: Options, client_id: u32, seed: u64) -> Self {
        SysbenchClient {
            plan: statements::plan(opts.test, &opts.counts),
            opts,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            next_unique: client_id.wrapping_shl(22),
            stmts: Vec::new(),
            ledger: Changes::default(),
        }
    }

    /// `get_id()`: the default distribution over `1 ..= table_size`.
    fn id(&mut self) -> i32 {
        self.opts
            .rand
            .sample(&mut self.rng, 1, self.opts.table_size) as i32
    }

    /// `get_table_num()`: uniform over `1 ..= tables`.
    fn table(&mut self) -> u32 {
        sysbench_uniform(&mut self.rng, 1, self.opts.tables)
    }

    fn insert_literal(&mut self) -> Stmt {
        let table = self.table();
        let k = self.id();
        let (mut c, mut pad) = ([0u8; C_LEN], [0u8; PAD_LEN]);
        digit_groups(&mut self.rng, &mut c);
        digit_groups(&mut self.rng, &mut pad);
        let id = (!self.opts.auto_inc).then(|| {
            let i = self.next_unique;
            self.next_unique = self.next_unique.wrapping_add(1);
            unique_id(i)
        });
        Stmt::InsertLiteral {
            table,
            id,
            k,
            sql: insert_literal(table, id, k, text(&c), text(&pad)),
        }
    }
}

/// What one statement changed: rows inserted, rows deleted, Σ k added.
#[derive(Debug, Default, Clone, Copy)]
struct Delta {
    inserted: u64,
    deleted: u64,
    k: i64,
}

impl Delta {
    fn add(&mut self, o: Delta) {
        self.inserted += o.inserted;
        self.deleted += o.deleted;
        self.k += o.k;
    }
}

impl Changes {
    fn apply(&mut self, d: Delta) {
        self.inserted += d.inserted;
        self.deleted += d.deleted;
        self.k_added += d.k;
    }
}

impl WorkloadClient for SysbenchClient {
    type Input = SysbenchInput;
    type Ledger = Changes;

    async fn prepare(
        &mut self,
        conn: &mut Conn,
        _tx: &TxControl,
    ) -> Result<(), crate::wire::Error> {
        let kinds = statements::kinds(self.opts.test, &self.opts.counts);
        self.stmts.clear();
        for t in 1..=self.opts.tables {
            let mut per: [Option<Statement>; 9] = Default::default();
            for &k in &kinds {
                per[k as usize] = Some(conn.prepare(&k.sql(t)).await?);
            }
            self.stmts.push(per);
        }
        Ok(())
    }

    fn next_input(&mut self) -> SysbenchInput {
        if self.opts.test == Test::Insert {
            return SysbenchInput {
                stmts: vec![self.insert_literal()],
            };
        }
        let mut stmts = Vec::new();
        for b in self.plan.clone() {
            let table = self.table();
            for _ in 0..b.n {
                let s = match b.kind {
                    Kind::PointSelects | Kind::IndexUpdates => Stmt::Id {
                        kind: b.kind,
                        table,
                        id: self.id(),
                    },
                    Kind::SimpleRanges
                    | Kind::SumRanges
                    | Kind::OrderRanges
                    | Kind::DistinctRanges => {
                        let lo = self.id();
                        Stmt::Range {
                            kind: b.kind,
                            table,
                            lo,
                            hi: lo.saturating_add(self.opts.range_size as i32 - 1),
                        }
                    }
                    Kind::NonIndexUpdates => {
                        let mut c = [0u8; C_LEN];
                        digit_groups(&mut self.rng, &mut c);
                        Stmt::NonIndexUpdate {
                            table,
                            id: self.id(),
                            c,
                        }
                    }
                    Kind::Deletes if self.opts.test == Test::Delete => Stmt::Id {
                        kind: Kind::Deletes,
                        table,
                        id: self.id(),
                    },
                    Kind::Deletes | Kind::Inserts => {
                        // A delete/insert pair of one id; k drawn after it.
                        let id = self.id();
                        let k = self.id();
                        let (mut c, mut pad) = ([0u8; C_LEN], [0u8; PAD_LEN]);
                        digit_groups(&mut self.rng, &mut c);
                        digit_groups(&mut self.rng, &mut pad);
                        stmts.push(Stmt::Id {
                            kind: Kind::Deletes,
                            table,
                            id,
                        });
                        Stmt::Insert {
                            table,
                            id,
                            k,
                            c,
                            pad,
                        }
                    }
                };
                stmts.push(s);
            }
        }
        SysbenchInput { stmts }
    }

    /// oltp_read_only and oltp_point_select write nothing.
    fn read_only(&self, _input: &SysbenchInput) -> bool {
        matches!(self.opts.test, Test::ReadOnly | Test::PointSelect)
    }

    fn tx_type(&self, _input: &SysbenchInput) -> usize {
        0
    }

    async fn attempt(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        input: &SysbenchInput,
    ) -> Result<Ended, AttemptError> {
        let trx = self.opts.transaction();
        if trx {
            tx.begin(conn).await?;
        }
        let mut total = Delta::default();
        for s in &input.stmts {
            let d = run(conn, &self.stmts, s).await.map_err(|(e, label)| {
                if trx {
                    AttemptError::body(e).at(label)
                } else {
                    // The statement is its own transaction.
                    AttemptError::commit(e).at(label)
                }
            })?;
            if trx {
                total.add(d);
            } else {
                self.ledger.apply(d);
            }
        }
        if trx {
            let outcome = tx.commit(conn).await?;
            self.ledger.apply(total);
            return Ok(outcome);
        }
        Ok(Ended::Committed)
    }

    fn unknown_outcome(&mut self, input: &SysbenchInput) {
        for s in &input.stmts {
            match s {
                Stmt::Id {
                    kind: Kind::Deletes,
                    ..
                } => self.ledger.unknown_deleted += 1,
                Stmt::Id {
                    kind: Kind::IndexUpdates,
                    ..
                } => self.ledger.unknown_k += 1,
                Stmt::Insert { k, .. } | Stmt::InsertLiteral { k, .. } => {
                    self.ledger.unknown_inserted += 1;
                    self.ledger.unknown_k += i64::from(*k);
                }
                _ => {}
            }
        }
    }

    fn into_ledger(self) -> Changes {
        self.ledger
    }
}

/// `c` or `pad` as text (sysbench's digits and dashes).
fn text(b: &[u8]) -> &str {
    std::str::from_utf8(b).expect("digits")
}

/// Runs one statement; returns what it changed, or its error with its
/// label.
async fn run(
    conn: &mut Conn,
    stmts: &[[Option<Statement>; 9]],
    s: &Stmt,
) -> Result<Delta, (crate::wire::Error, &'static str)> {
    let prepared = |table: u32, kind: Kind| {
        stmts[table as usize - 1][kind as usize]
            .as_ref()
            .expect("prepared for the test")
    };
    let (r, label) = match s {
        Stmt::Id { kind, table, id } => (
            conn.execute(prepared(*table, *kind), &[id]).await,
            kind.label(),
        ),
        Stmt::Range {
            kind,
            table,
            lo,
            hi,
        } => (
            conn.execute(prepared(*table, *kind), &[lo, hi]).await,
            kind.label(),
        ),
        Stmt::NonIndexUpdate { table, id, c } => {
            let c = text(c);
            let params: [&(dyn ToSql + Sync); 2] = [&c, id];
            let stmt = prepared(*table, Kind::NonIndexUpdates);
            (
                conn.execute(stmt, &params).await,
                Kind::NonIndexUpdates.label(),
            )
        }
        Stmt::Insert {
            table,
            id,
            k,
            c,
            pad,
        } => {
            let (c, pad) = (text(c), text(pad));
            let params: [&(dyn ToSql + Sync); 4] = [id, k, &c, &pad];
            let stmt = prepared(*table, Kind::Inserts);
            (conn.execute(stmt, &params).await, Kind::Inserts.label())
        }
        Stmt::InsertLiteral { sql, .. } => {
            let r = conn.simple_query(sql).await.map(|msgs| {
                msgs.iter()
                    .map(|m| match m {
                        SimpleMessage::CommandComplete(n) => *n,
                        _ => 0,
                    })
                    .sum::<u64>()
            });
            (r, "insert")
        }
    };
    let n = r.map_err(|e| (e, label))?;
    Ok(match s {
        Stmt::Id {
            kind: Kind::Deletes,
            ..
        } => Delta {
            deleted: n,
            ..Delta::default()
        },
        Stmt::Id {
            kind: Kind::IndexUpdates,
            ..
        } => Delta {
            k: n as i64,
            ..Delta::default()
        },
        Stmt::Insert { k, .. } | Stmt::InsertLiteral { k, .. } => Delta {
            inserted: n,
            deleted: 0,
            k: n as i64 * i64::from(*k),
        },
        _ => Delta::default(),
    })
}
