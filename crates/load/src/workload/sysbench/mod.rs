//! `sysbench`: sysbench 1.0.20's OLTP tests (`oltp_read_write`,
//! `oltp_read_only`, `oltp_write_only`, `oltp_point_select`,
//! `oltp_update_index`, `oltp_update_non_index`, `oltp_insert`,
//! `oltp_delete`) on its `sbtest<N>` tables, with its options under its
//! names and defaults.
//!
//! Source: sysbench 1.0.20 (Debian package `sysbench`),
//! `/usr/share/sysbench/oltp_common.lua` and the test scripts beside it;
//! `src/sb_rand.c` for the distributions; `src/drivers/pgsql/drv_pgsql.c`
//! for how it talks to PostgreSQL (server-side prepared statements with
//! text parameters, BEGIN and COMMIT prepared too; `oltp_insert` as a
//! literal simple query).
//!
//! An event is one transaction of isobench: the test's statements in its
//! script's order ([`statements::plan`]), between BEGIN and COMMIT for
//! `oltp_read_write`, `oltp_read_only` and `oltp_write_only` (unless
//! `skip_trx`), each statement in autocommit for the others. Ids, `k` of
//! inserts and range starts come from `rand-type` (sysbench's default
//! `special`), table numbers and characters from the uniform
//! distribution, as sysbench draws them.
//!
//! Errors: sysbench's pgsql driver treats 40001, 40P01 and 23505 as
//! ignorable: it rolls back, counts an "ignored error" and runs the event
//! again with new random inputs (`thread_run` in its `sysbench.lua`);
//! other errors stop it. isobench retries the same inputs, on the
//! SQLSTATEs of `--retry-on` (40001 and 40P01 by default; add 23505 for
//! sysbench's behaviour: a delete/insert pair that collides with another
//! on the same id fails with it under READ COMMITTED).

mod client;
mod load;
pub mod statements;

use tokio_postgres::Client;

use super::{
    ExplainStatement, Ledger, Loader, ParamSpec, Setup, StrategySpec, Workload, WorkloadError,
    WorkloadSpec,
};
use crate::model::{InvariantResult, Lifetime};
use crate::workload::dist::SysbenchRand;
pub use client::{Stmt, SysbenchClient, SysbenchInput};
pub use load::{Data, digit_groups, unique_id};
pub use statements::{Counts, Kind, Test};

/// `isobench workloads sysbench`.
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "sysbench",
    summary: "sysbench 1.0.20's OLTP tests on sbtest tables: point selects, ranges, index and non-index updates, delete/insert",
    source: "sysbench 1.0.20: oltp_common.lua and the oltp_*.lua scripts, sb_rand.c, drv_pgsql.c",
    scale: None,
    params: &[
        ParamSpec {
            name: "test",
            default: "oltp_read_write",
            help: "oltp_read_write | oltp_read_only | oltp_write_only | oltp_point_select | oltp_update_index | oltp_update_non_index | oltp_insert | oltp_delete",
        },
        ParamSpec {
            name: "tables",
            default: "1",
            help: "number of tables, sbtest1 .. sbtest<N>",
        },
        ParamSpec {
            name: "table_size",
            default: "10000",
            help: "rows per table",
        },
        ParamSpec {
            name: "range_size",
            default: "100",
            help: "ids per range SELECT",
        },
        ParamSpec {
            name: "point_selects",
            default: "10",
            help: "point SELECTs per transaction (oltp_point_select: always 1)",
        },
        ParamSpec {
            name: "simple_ranges",
            default: "1",
            help: "simple range SELECTs per transaction",
        },
        ParamSpec {
            name: "sum_ranges",
            default: "1",
            help: "SELECT SUM() ranges per transaction",
        },
        ParamSpec {
            name: "order_ranges",
            default: "1",
            help: "SELECT ... ORDER BY ranges per transaction",
        },
        ParamSpec {
            name: "distinct_ranges",
            default: "1",
            help: "SELECT DISTINCT ranges per transaction",
        },
        ParamSpec {
            name: "index_updates",
            default: "1",
            help: "UPDATE ... SET k=k+1 per transaction",
        },
        ParamSpec {
            name: "non_index_updates",
            default: "1",
            help: "UPDATE ... SET c=? per transaction",
        },
        ParamSpec {
            name: "delete_inserts",
            default: "1",
            help: "DELETE/INSERT pairs of one id per transaction",
        },
        ParamSpec {
            name: "range_selects",
            default: "on",
            help: "on | off: all range SELECTs",
        },
        ParamSpec {
            name: "skip_trx",
            default: "off",
            help: "on: no BEGIN/COMMIT, every statement in autocommit",
        },
        ParamSpec {
            name: "auto_inc",
            default: "on",
            help: "on: id is SERIAL (oltp_insert leaves it to the sequence); off: INTEGER, oltp_insert's tables start empty and it inserts unique ids",
        },
        ParamSpec {
            name: "create_secondary",
            default: "on",
            help: "on: the index k_<N> on k",
        },
        ParamSpec {
            name: "rand-type",
            default: "special",
            help: "uniform | gaussian | special | pareto: the distribution of ids and k (sysbench --rand-type)",
        },
        ParamSpec {
            name: "rand-spec-iter",
            default: "12",
            help: "gaussian and special: uniforms averaged per draw",
        },
        ParamSpec {
            name: "rand-spec-pct",
            default: "1",
            help: "special: % of the range, at its centre, that takes rand-spec-res % of the draws",
        },
        ParamSpec {
            name: "rand-spec-res",
            default: "75",
            help: "special: % of draws in the centre window",
        },
        ParamSpec {
            name: "rand-pareto-h",
            default: "0.2",
            help: "pareto: shape h",
        },
    ],
    strategies: &[StrategySpec {
        name: "optimistic",
        help: "sysbench's statements as they are; the isolation level protects; retry per --retry-on",
    }],
    transactions: &[
        "one event of the test: oltp_read_write = BEGIN, 10 point selects, 4 ranges, index update, non-index update, delete + insert, COMMIT",
        "oltp_read_only / oltp_write_only: its reads / its writes of oltp_read_write; the others: one statement (or index_updates / non_index_updates of them) in autocommit",
    ],
    invariants: &[
        "row-count: Σ count(*) = loaded rows + rows inserted - rows deleted by committed statements (+ unknown outcomes)",
        "k-sum (tests without deletes): Σ k = loaded Σ k + rows the committed index updates changed + inserted k",
    ],
    example: "--workload sysbench --param test=oltp_read_write --isolation rc --retry-on 40001,40P01,23505 -c 8",
};

/// One cell's sysbench options, checked.
#[derive(Debug, Clone)]
pub struct Options {
    pub test: Test,
    pub counts: Counts,
    pub tables: u32,
    pub table_size: u32,
    pub range_size: u32,
    pub skip_trx: bool,
    pub auto_inc: bool,
    pub create_secondary: bool,
    pub rand: SysbenchRand,
}

impl Options {
    /// Reads and checks the parameters. Errors name the parameter.
    pub fn from_setup(setup: &Setup) -> Result<Self, WorkloadError> {
        let on = |name: &str| -> Result<bool, WorkloadError> { setup.bool(name) };
        let n = |name: &str| -> Result<u32, WorkloadError> {
            Ok(setup.int(name, 0..=1_000_000)? as u32)
        };
        let iter = setup.int("rand-spec-iter", 1..=1000)? as u32;
        let rand = match setup.choice("rand-type", &["uniform", "gaussian", "special", "pareto"])? {
            0 => SysbenchRand::Uniform,
            1 => SysbenchRand::Gaussian { iter },
            2 => SysbenchRand::Special {
                iter,
                pct: setup.int("rand-spec-pct", 0..=100)? as u32,
                res: setup.int("rand-spec-res", 0..=99)? as u32,
            },
            _ => SysbenchRand::Pareto {
                h: setup.float("rand-pareto-h", 0.001..=0.999)?,
            },
        };
        Ok(Options {
            test: Test::ALL[setup.choice("test", &Test::NAMES)?],
            counts: Counts {
                point_selects: n("point_selects")?,
                simple_ranges: n("simple_ranges")?,
                sum_ranges: n("sum_ranges")?,
                order_ranges: n("order_ranges")?,
                distinct_ranges: n("distinct_ranges")?,
                index_updates: n("index_updates")?,
                non_index_updates: n("non_index_updates")?,
                delete_inserts: n("delete_inserts")?,
                range_selects: on("range_selects")?,
            },
            tables: setup.int("tables", 1..=10_000)? as u32,
            table_size: setup.int("table_size", 1..=1_000_000_000)? as u32,
            range_size: setup.int("range_size", 1..=1_000_000_000)? as u32,
            skip_trx: on("skip_trx")?,
            auto_inc: on("auto_inc")?,
            create_secondary: on("create_secondary")?,
            rand,
        })
    }

    /// What the loader writes for these options.
    pub fn data(&self) -> Data {
        Data {
            tables: self.tables,
            // oltp_insert without auto_inc prepares empty tables.
            rows: if self.test == Test::Insert && !self.auto_inc {
                0
            } else {
                self.table_size
            },
            auto_inc: self.auto_inc,
            create_secondary: self.create_secondary,
            rand: self.rand,
            k_max: self.table_size,
        }
    }

    /// Whether the event deletes rows (then Σ k is not checked: the
    /// client does not know the `k` of the rows it deletes).
    pub fn deletes(&self) -> bool {
        statements::plan(self.test, &self.counts)
            .iter()
            .any(|b| b.kind == Kind::Deletes)
    }

    /// Whether an event is one transaction between BEGIN and COMMIT.
    pub fn transaction(&self) -> bool {
        self.test.explicit_transaction() && !self.skip_trx
    }
}

/// What committed statements changed, and bounds for unknown outcomes.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Changes {
    pub inserted: u64,
    pub deleted: u64,
    /// Rows the index updates changed, plus the `k` of inserted rows.
    pub k_added: i64,
    /// At most this many more inserted, deleted, and Σ k added, by
    /// transactions whose outcome is unknown.
    pub unknown_inserted: u64,
    pub unknown_deleted: u64,
    pub unknown_k: i64,
}

impl Ledger for Changes {
    fn merge(&mut self, o: Self) {
        self.inserted += o.inserted;
        self.deleted += o.deleted;
        self.k_added += o.k_added;
        self.unknown_inserted += o.unknown_inserted;
        self.unknown_deleted += o.unknown_deleted;
        self.unknown_k += o.unknown_k;
    }
}

/// The sysbench workload of one cell.
#[derive(Debug, Clone)]
pub struct Sysbench {
    opts: Options,
    /// Σ k as loaded, computed by the first check (it redraws every k).
    loaded_k: std::sync::OnceLock<i64>,
}

impl Sysbench {
    pub fn options(&self) -> &Options {
        &self.opts
    }
}

impl Workload for Sysbench {
    type Client = SysbenchClient;

    fn new(setup: &Setup) -> Result<Self, WorkloadError> {
        Ok(Sysbench {
            opts: Options::from_setup(setup)?,
            loaded_k: std::sync::OnceLock::new(),
        })
    }

    fn data_key(&self) -> String {
        let d = self.opts.data();
        format!(
            "tables={} table_size={} rows={} auto_inc={} create_secondary={} k={:?}",
            d.tables, self.opts.table_size, d.rows, d.auto_inc, d.create_secondary, d.rand
        )
    }

    fn tx_types(&self) -> Vec<&'static str> {
        vec![self.opts.test.name()]
    }

    /// The tables, each over its own connection, up to the CPU count at
    /// a time (sysbench's `prepare` splits tables over `--threads`).
    async fn load(&self, db: &Loader) -> Result<u64, WorkloadError> {
        let data = self.opts.data();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let streams = (data.tables as usize).min(cpus).max(1);
        let mut conns = Vec::with_capacity(streams - 1);
        for _ in 1..streams {
            conns.push(db.connect().await?);
        }
        let mut rows = 0;
        for chunk in (1..=data.tables).collect::<Vec<_>>().chunks(streams) {
            let loads = chunk.iter().enumerate().map(|(i, &t)| {
                let conn: &Client = if i == 0 { db } else { &conns[i - 1] };
                data.load_table(conn, t)
            });
            rows += futures_util::future::try_join_all(loads)
                .await?
                .into_iter()
                .sum::<u64>();
        }
        Ok(rows)
    }

    fn explain_statements(&self) -> Vec<ExplainStatement> {
        let mid = (self.opts.table_size / 2).max(1);
        let hi = mid + self.opts.range_size - 1;
        let c = "'00000000000-00000000000'";
        statements::kinds(self.opts.test, &self.opts.counts)
            .into_iter()
            .map(|k| {
                let sql = k.sql(1);
                let sql = match k {
                    Kind::SimpleRanges
                    | Kind::SumRanges
                    | Kind::OrderRanges
                    | Kind::DistinctRanges => sql
                        .replace("$1", &mid.to_string())
                        .replace("$2", &hi.to_string()),
                    Kind::NonIndexUpdates => sql.replace("$1", c).replace("$2", &mid.to_string()),
                    Kind::Inserts => sql
                        .replace("$1", &mid.to_string())
                        .replace("$2", &mid.to_string())
                        .replace("$3", c)
                        .replace("$4", c),
                    _ => sql.replace("$1", &mid.to_string()),
                };
                ExplainStatement {
                    label: k.label().into(),
                    sql,
                }
            })
            .chain((self.opts.test == Test::Insert).then(|| ExplainStatement {
                label: "insert".into(),
                sql: statements::insert_literal(
                    1,
                    (!self.opts.auto_inc).then_some(0),
                    mid as i32,
                    "0",
                    "0",
                ),
            }))
            .collect()
    }

    fn client(&self, client_id: u32, seed: u64) -> SysbenchClient {
        SysbenchClient::new(self.opts.clone(), client_id, seed)
    }

    async fn check(
        &self,
        db: &Client,
        _lifetime: Lifetime,
        ledger: Changes,
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        let loaded_k =
            (!self.opts.deletes()).then(|| *self.loaded_k.get_or_init(|| self.opts.data().k_sum()));
        check(&self.opts, db, &ledger, loaded_k).await
    }
}

/// The invariants (see [`SPEC`]) of the tables against `ledger`;
/// `loaded_k` is Σ k as loaded ([`Data::k_sum`]), for the tests without
/// deletes (`None`: Σ k is not checked).
///
/// Errors: a query failed.
pub async fn check(
    opts: &Options,
    db: &Client,
    ledger: &Changes,
    loaded_k: Option<i64>,
) -> Result<Vec<InvariantResult>, WorkloadError> {
    let data = opts.data();
    let union: Vec<String> = (1..=opts.tables)
        .map(|t| format!("SELECT count(*) AS n, coalesce(sum(k), 0) AS k FROM sbtest{t}"))
        .collect();
    let sql = format!(
        "SELECT sum(n)::bigint, sum(k)::bigint FROM ({}) t",
        union.join(" UNION ALL ")
    );
    let row = db
        .query_one(&sql, &[])
        .await
        .map_err(WorkloadError::db("sysbench invariant query"))?;
    let (count, k_sum): (i64, i64) = (row.get(0), row.get(1));
    let loaded = u64::from(data.tables) * u64::from(data.rows);
    let expect = (loaded + ledger.inserted) as i64 - ledger.deleted as i64;
    let (lo, hi) = (
        expect - ledger.unknown_deleted as i64,
        expect + ledger.unknown_inserted as i64,
    );
    let mut out = vec![InvariantResult::check(
        "row-count",
        (lo..=hi).contains(&count),
        format!(
            "Σ count(*)={count} loaded={loaded} inserted={} deleted={} (unknown outcomes: up to {} inserted, {} deleted)",
            ledger.inserted, ledger.deleted, ledger.unknown_inserted, ledger.unknown_deleted
        ),
    )];
    if let Some(base) = loaded_k {
        let expect = base + ledger.k_added;
        out.push(InvariantResult::check(
            "k-sum",
            (expect..=expect + ledger.unknown_k).contains(&k_sum),
            format!(
                "Σ k={k_sum} loaded Σ k={base} added by committed statements={} (unknown outcomes: up to {})",
                ledger.k_added, ledger.unknown_k
            ),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::WorkloadClient;
    use client::Stmt;
    use std::collections::BTreeMap;

    fn options(params: &[(&str, &str)]) -> Result<Options, WorkloadError> {
        let given: BTreeMap<String, String> = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Options::from_setup(&Setup::new(&SPEC, None, None, &given)?)
    }

    #[test]
    fn defaults_are_sysbenchs() {
        let o = options(&[]).unwrap();
        assert_eq!(o.test, Test::ReadWrite);
        assert_eq!(o.counts, Counts::DEFAULT);
        assert_eq!((o.tables, o.table_size, o.range_size), (1, 10_000, 100));
        assert!(!o.skip_trx && o.auto_inc && o.create_secondary);
        assert_eq!(o.rand, SysbenchRand::DEFAULT);
        assert!(o.transaction() && o.deletes());
        let ro = options(&[("test", "oltp_read_only")]).unwrap();
        assert!(ro.transaction() && !ro.deletes());
        assert!(
            !options(&[("test", "oltp_update_index")])
                .unwrap()
                .transaction()
        );
        assert!(!options(&[("skip_trx", "on")]).unwrap().transaction());
        let e = options(&[("test", "oltp_bulk")]).unwrap_err().to_string();
        assert!(
            e.contains("--param test=oltp_bulk") && e.contains("oltp_delete"),
            "{e}"
        );
        let e = options(&[("rand-type", "zipfian")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--param rand-type=zipfian"), "{e}");
        // oltp_insert without auto_inc starts from empty tables.
        let ins = options(&[("test", "oltp_insert"), ("auto_inc", "off")]).unwrap();
        assert_eq!(ins.data().rows, 0);
    }

    #[test]
    fn events_draw_sysbenchs_inputs() {
        let o = options(&[
            ("tables", "3"),
            ("table_size", "1000"),
            ("rand-type", "uniform"),
        ])
        .unwrap();
        let mut c = SysbenchClient::new(o, 0, 5);
        let mut tables = std::collections::BTreeSet::new();
        for _ in 0..500 {
            let input = c.next_input();
            assert_eq!(input.stmts.len(), 10 + 4 + 1 + 1 + 2);
            // The point selects of one event share a table.
            let t0 = match input.stmts[0] {
                Stmt::Id { table, .. } => table,
                _ => panic!("point select first"),
            };
            for s in &input.stmts[..10] {
                let Stmt::Id {
                    kind: Kind::PointSelects,
                    table,
                    id,
                } = *s
                else {
                    panic!("{s:?}")
                };
                assert_eq!(table, t0);
                assert!((1..=1000).contains(&id));
            }
            for s in &input.stmts[10..14] {
                let Stmt::Range { lo, hi, table, .. } = *s else {
                    panic!("{s:?}")
                };
                assert_eq!(hi, lo + 99);
                tables.insert(table);
            }
            // The delete and the insert of the pair share their id.
            let (
                Stmt::Id {
                    kind: Kind::Deletes,
                    id: d,
                    table: td,
                },
                Stmt::Insert {
                    id: i, table: ti, ..
                },
            ) = (&input.stmts[16], &input.stmts[17])
            else {
                panic!("delete/insert last")
            };
            assert_eq!((d, td), (i, ti));
        }
        assert_eq!(tables.into_iter().collect::<Vec<_>>(), [1, 2, 3]);
    }

    #[test]
    fn ids_follow_rand_type() {
        // special: three quarters of the ids in the centre window.
        let o = options(&[("test", "oltp_point_select")]).unwrap();
        let mut c = SysbenchClient::new(o, 0, 5);
        let centre = (0..4000)
            .filter(|_| {
                let Stmt::Id { id, .. } = c.next_input().stmts[0] else {
                    panic!()
                };
                (4975..=5051).contains(&id)
            })
            .count();
        assert!((2900..3200).contains(&centre), "{centre}");
        // oltp_insert without auto_inc: unique ids per client.
        let o = options(&[("test", "oltp_insert"), ("auto_inc", "off")]).unwrap();
        let mut a = SysbenchClient::new(o.clone(), 0, 1);
        let mut b = SysbenchClient::new(o, 1, 1);
        let mut ids = std::collections::HashSet::new();
        for _ in 0..1000 {
            for c in [&mut a, &mut b] {
                let Stmt::InsertLiteral {
                    id: Some(id), sql, ..
                } = &c.next_input().stmts[0]
                else {
                    panic!("literal insert with an id")
                };
                assert!(ids.insert(*id));
                assert!(sql.starts_with(&format!(
                    "INSERT INTO sbtest1 (id, k, c, pad) VALUES ({id}, "
                )));
            }
        }
    }
}
