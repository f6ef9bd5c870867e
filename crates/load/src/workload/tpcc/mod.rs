//! `tpcc`: TPC-C, built from the TPC Benchmark C standard specification,
//! revision 5.11 (Transaction Processing Performance Council, February
//! 2010); and, with `variant=tpcc++`, Cahill, Röhm and Fekete's TPC-C++
//! (SIGMOD 2008), which adds a Credit Check transaction that makes the
//! workload non-serializable under snapshot isolation.
//!
//! - Data (clause 4.3.3.1): the nine tables at the specification's
//!   cardinalities, `--scale` warehouses ([`schema`], [`load`]).
//! - Inputs (clause 2): NURand with its C constants ([`rand`]), 1 % of
//!   order lines from a remote warehouse, 15 % of payments by a remote
//!   customer, 60 % of customer lookups by last name, 1 % of New-Orders
//!   rolled back by design (an unused item: a user abort, not a failure).
//! - The mix (clause 5.2.3): New-Order 45 %, Payment 43 %, Order-Status,
//!   Delivery and Stock-Level 4 % each; TPC-C++ takes 4 % from New-Order
//!   for the Credit Check; `--param mix` sets any other.
//! - Terminals (clause 4.2.2): client `i` is bound to warehouse
//!   `i mod W + 1` and, for Stock-Level, district `(i / W) mod 10 + 1`,
//!   so `10 W` clients are the specification's ten terminals per
//!   warehouse. By default clients run closed loop without keying or
//!   think time; `think=spec` adds clause 5.2.5's.
//! - Checks ([`check`]): the twelve consistency conditions of clause
//!   3.3.2 after every run (5 to 12 skipped on large databases unless
//!   asked for), the clients' commits against the database, and for
//!   TPC-C++ the Credit Check's write skew.
//!
//! Strategies: `optimistic` runs the profiles with plain reads and relies
//! on the isolation level (retrying 40001); `locking` emulates strict
//! two-phase locking with row locks: every read takes `FOR SHARE`, and a
//! read of rows the transaction then writes takes `FOR UPDATE` (Payment's
//! customer, Delivery's oldest new order, the Credit Check's customer).
//! Row locks are not predicate locks, so it is S2PL without phantom
//! protection; under READ COMMITTED it keeps TPC-C++ serializable (the
//! Credit Check locks the customer before it reads the orders, with a
//! fresh snapshot), under REPEATABLE READ it does not (the snapshot is
//! older than the lock).

pub mod check;
pub mod load;
pub mod rand;
pub mod schema;
pub mod txn;

use tokio_postgres::Client;

use self::rand::CConstants;
use super::{
    ExplainStatement, Loader, ParamSpec, ScaleSpec, Setup, StrategySpec, Workload, WorkloadError,
    WorkloadSpec,
};
use crate::model::{InvariantResult, Lifetime};
use txn::{TpccClient, TpccLedger, sql::Shape};

/// `isobench workloads tpcc`.
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "tpcc",
    summary: "TPC-C (rev. 5.11): five transactions over nine tables, consistency conditions checked; tpcc++ adds Cahill's Credit Check",
    source: "TPC Benchmark C standard specification revision 5.11 (TPC, 2010); TPC-C++: Cahill, Röhm, Fekete, SIGMOD 2008",
    scale: Some(ScaleSpec {
        default: 1,
        unit: "1 warehouse: 10 districts, 30000 customers, 30000 orders (300000 order lines), 100000 stock rows; 100000 items in all",
    }),
    params: &[
        ParamSpec {
            name: "variant",
            default: "tpcc",
            help: "tpcc | tpcc++ (adds Cahill et al.'s Credit Check transaction; write skew under snapshot isolation)",
        },
        ParamSpec {
            name: "mix",
            default: "spec",
            help: "weights of New-Order/Payment/Order-Status/Delivery/Stock-Level[/Credit-Check], e.g. 45/43/4/4/4 (slashes: a comma separates a factor's values); spec: 45/43/4/4/4, tpcc++ 41/43/4/4/4/4",
        },
        ParamSpec {
            name: "think",
            default: "none",
            help: "none: closed loop back to back | spec: clause 5.2.5's keying and think times (run 10 clients per warehouse)",
        },
        ParamSpec {
            name: "warehouse-ytd",
            default: "true",
            help: "false: Payment leaves W_YTD alone (Ports & Grittner's DBT-2++); conditions 1 and 8 are then not checked",
        },
        ParamSpec {
            name: "read-only",
            default: "true",
            help: "true: Order-Status and Stock-Level run as READ ONLY transactions (not under locking)",
        },
        ParamSpec {
            name: "customer-hotspot",
            default: "0",
            help: "0: customer ids by NURand(1023,1,3000) | N: uniform over customers 1..N of each district (contention, e.g. to show TPC-C++'s anomaly)",
        },
        ParamSpec {
            name: "consistency",
            default: "auto",
            help: "auto: conditions 1-4 always, 5-12 while order_line holds at most 5000000 rows | all | quick (1-4)",
        },
    ],
    strategies: &[
        StrategySpec {
            name: "optimistic",
            help: "plain reads: the isolation level protects; retry 40001/40P01",
        },
        StrategySpec {
            name: "locking",
            help: "S2PL emulation with row locks: reads FOR SHARE, reads of rows then written FOR UPDATE",
        },
    ],
    transactions: &[
        "New-Order (45%): district's next order id, customer, items, stock of 5-15 lines, insert order; 1% roll back by design (user abort)",
        "Payment (43%): warehouse and district YTD, customer by id or last name (60%), balance, history row",
        "Order-Status (4%, read-only): customer by id or last name, its last order and lines",
        "Delivery (4%): in each of the 10 districts, deliver the oldest new order; add its amount to the customer",
        "Stock-Level (4%, read-only): distinct items of the district's last 20 orders below a stock threshold",
        "Credit-Check (tpcc++, 4% from New-Order): customer balance + undelivered orders vs credit limit -> C_CREDIT",
    ],
    invariants: &[
        "c1-warehouse-ytd .. c12-balance-plus-ytd: clause 3.3.2's twelve consistency conditions (5-12 per `consistency`)",
        "c11-delivered-orders: count(ORDER) - count(NEW-ORDER) = 2100 per district + the orders clients delivered",
        "new-orders-match-commits: sum(D_NEXT_O_ID - 3001) = committed New-Orders (+ unknown outcomes)",
        "payments-match-commits: new HISTORY rows and their amounts = committed Payments",
        "credit-check-skew (tpcc++): a New-Order and a Credit Check of one customer that each missed the other's write",
    ],
    example: "--workload tpcc --scale 2 --isolation rr,ser",
};

/// How much of clause 3.3.2 to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consistency {
    /// 1-4 always; 5-12 while ORDER-LINE is small enough.
    Auto,
    All,
    Quick,
}

/// ORDER-LINE rows up to which `consistency=auto` checks conditions 5
/// to 12 (each scans ORDER-LINE, ORDER or HISTORY).
pub const AUTO_CHECK_ROWS: i64 = 5_000_000;

/// One cell's TPC-C settings, shared by the workload and its clients.
#[derive(Debug, Clone)]
pub struct Config {
    pub warehouses: i64,
    /// `variant=tpcc++`.
    pub plus: bool,
    /// Weight of each transaction type, in `txn::TYPES` order.
    pub mix: Vec<u32>,
    pub think: bool,
    pub warehouse_ytd: bool,
    pub read_only: bool,
    pub locking: bool,
    /// Customers ids drawn uniformly from 1 ..= hotspot; 0: NURand.
    pub hotspot: i64,
    /// NURand's constants at run time (clause 2.1.6).
    pub c_run: CConstants,
    pub consistency: Consistency,
}

impl Config {
    fn shape(&self) -> Shape {
        Shape {
            locking: self.locking,
            plus: self.plus,
            warehouse_ytd: self.warehouse_ytd,
        }
    }

    fn mix_total(&self) -> u32 {
        self.mix.iter().sum()
    }
}

/// The default mixes: clause 5.2.3's minimums for the four minor
/// transactions and the rest New-Order; TPC-C++ takes the Credit Check's
/// 4 % from New-Order.
const MIX: [u32; 5] = [45, 43, 4, 4, 4];
const MIX_PLUS: [u32; 6] = [41, 43, 4, 4, 4, 4];

/// `--param mix=...`: `spec`, or one weight per transaction type.
fn parse_mix(text: &str, plus: bool) -> Result<Vec<u32>, WorkloadError> {
    let want = if plus { 6 } else { 5 };
    if text.trim() == "spec" {
        return Ok(if plus {
            MIX_PLUS.to_vec()
        } else {
            MIX.to_vec()
        });
    }
    let bad = || {
        WorkloadError::Invalid(format!(
            "--param mix={text}: tpcc expects `spec` or {want} weights (whole numbers, not all 0) \
             of New-Order/Payment/Order-Status/Delivery/Stock-Level{}, separated by slashes (a \
             comma separates the values of a factor), e.g. {}",
            if plus { "/Credit-Check" } else { "" },
            if plus { "41/43/4/4/4/4" } else { "45/43/4/4/4" }
        ))
    };
    let weights: Vec<u32> = text
        .split(['/', ':'])
        .map(|w| w.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    if weights.len() != want || weights.iter().sum::<u32>() == 0 {
        return Err(bad());
    }
    Ok(weights)
}

/// The TPC-C workload of one cell.
#[derive(Debug, Clone)]
pub struct Tpcc {
    cfg: Config,
}

impl Tpcc {
    /// The cell's settings.
    pub fn config(&self) -> &Config {
        &self.cfg
    }
}

/// Replaces `$n` in `sql` with `values[n - 1]`, highest `n` first (so
/// that `$1` does not eat `$12`): a statement to EXPLAIN.
fn bind(sql: &str, values: &[&str]) -> String {
    let mut s = sql.to_string();
    for (i, v) in values.iter().enumerate().rev() {
        s = s.replace(&format!("${}", i + 1), v);
    }
    s
}

impl Workload for Tpcc {
    type Client = TpccClient;

    fn new(setup: &Setup) -> Result<Self, WorkloadError> {
        let plus = setup.choice("variant", &["tpcc", "tpcc++"])? == 1;
        let warehouses = i64::from(setup.scale());
        if warehouses == 0 {
            return Err(WorkloadError::Invalid(
                "--scale must be at least 1 (warehouses)".into(),
            ));
        }
        let raw = setup.params.get("mix").map_or("spec", String::as_str);
        let consistency = match setup.choice("consistency", &["auto", "all", "quick"])? {
            0 => Consistency::Auto,
            1 => Consistency::All,
            _ => Consistency::Quick,
        };
        let c_load = CConstants::load(self::rand::DATA_SEED);
        Ok(Tpcc {
            cfg: Config {
                warehouses,
                plus,
                mix: parse_mix(raw, plus)?,
                think: setup.choice("think", &["none", "spec"])? == 1,
                warehouse_ytd: setup.bool("warehouse-ytd")?,
                read_only: setup.bool("read-only")?,
                locking: setup.strategy == "locking",
                hotspot: setup.int("customer-hotspot", 0..=3000)?,
                c_run: CConstants::run(&c_load, self::rand::DATA_SEED),
                consistency,
            },
        })
    }

    fn data_key(&self) -> String {
        if self.cfg.plus {
            "tpcc++".into()
        } else {
            String::new()
        }
    }

    fn tx_types(&self) -> Vec<&'static str> {
        txn::TYPES[..self.cfg.mix.len()].to_vec()
    }

    async fn load(&self, db: &Loader) -> Result<u64, WorkloadError> {
        load::load(db, self.cfg.warehouses, self.cfg.plus).await
    }

    fn explain_statements(&self) -> Vec<ExplainStatement> {
        let q = self.cfg.shape();
        let mut out = vec![
            ("new-order: district", bind(&q.no_district(), &["1", "1"])),
            (
                "new-order: stock",
                bind(&q.no_stock(), &["1", "1", "5", "0", "1"]),
            ),
            (
                "customer by last name",
                bind(&q.by_name(true), &["1", "1", "'BARBARBAR'"]),
            ),
            (
                "payment: update customer",
                bind(&q.pay_update_customer(), &["1", "1", "1", "100", "1", "1"]),
            ),
            (
                "order-status: last order",
                bind(&q.os_last_order(), &["1", "1", "1"]),
            ),
            (
                "delivery: oldest new order",
                bind(&q.dl_oldest(), &["1", "1"]),
            ),
            (
                "stock-level: low stock",
                bind(&q.sl_count(), &["1", "1", "3001", "15"]),
            ),
        ];
        if self.cfg.plus {
            out.push((
                "credit-check: undelivered orders",
                bind(&q.cc_new_orders(), &["1", "1", "1"]),
            ));
        }
        out.into_iter()
            .map(|(label, sql)| ExplainStatement {
                label: label.into(),
                sql,
            })
            .collect()
    }

    fn client(&self, client_id: u32, seed: u64) -> TpccClient {
        TpccClient::new(self.cfg.clone(), client_id, seed)
    }

    async fn check(
        &self,
        db: &Client,
        _lifetime: Lifetime,
        ledger: TpccLedger,
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        check::check(db, &self.cfg, &ledger).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    pub(crate) fn workload(scale: u32, params: &[(&str, &str)]) -> Tpcc {
        let given: BTreeMap<String, String> = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Tpcc::new(&Setup::new(&SPEC, Some(scale), None, &given).unwrap()).unwrap()
    }

    #[test]
    fn mixes_default_to_the_specification_and_parse() {
        assert_eq!(workload(1, &[]).cfg.mix, MIX);
        assert_eq!(workload(1, &[("variant", "tpcc++")]).cfg.mix, MIX_PLUS);
        assert_eq!(parse_mix("10/0/0/0/0", false).unwrap(), [10, 0, 0, 0, 0]);
        assert_eq!(parse_mix("1/2/3/4/5/6", true).unwrap(), [1, 2, 3, 4, 5, 6]);
        for bad in [
            "45/43/4/4",
            "1/2/3/4/5/6",
            "0/0/0/0/0",
            "a/b/c/d/e",
            "",
            "45,43,4,4,4",
        ] {
            let e = parse_mix(bad, false).unwrap_err().to_string();
            assert!(
                e.contains("--param mix=") && e.contains("45/43/4/4/4"),
                "{e}"
            );
        }
        assert_eq!(workload(1, &[]).tx_types().len(), 5);
        assert_eq!(
            workload(1, &[("variant", "tpcc++")]).tx_types()[5],
            "Credit-Check"
        );
    }

    #[test]
    fn bad_parameters_name_themselves() {
        let setup = |k: &str, v: &str| {
            let given = BTreeMap::from([(k.to_string(), v.to_string())]);
            Tpcc::new(&Setup::new(&SPEC, Some(1), None, &given).unwrap())
                .unwrap_err()
                .to_string()
        };
        assert!(setup("variant", "tpcd").contains("--param variant=tpcd"));
        assert!(setup("think", "yes").contains("--param think=yes"));
        assert!(setup("customer-hotspot", "3001").contains("--param customer-hotspot"));
        assert!(setup("consistency", "some").contains("--param consistency"));
        let e = Tpcc::new(&Setup::new(&SPEC, Some(0), None, &BTreeMap::new()).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--scale"), "{e}");
    }

    #[test]
    fn explained_statements_have_no_parameters_left() {
        for variant in ["tpcc", "tpcc++"] {
            for strategy in ["optimistic", "locking"] {
                let given = BTreeMap::from([("variant".to_string(), variant.to_string())]);
                let w = Tpcc::new(&Setup::new(&SPEC, Some(1), Some(strategy), &given).unwrap())
                    .unwrap();
                for e in w.explain_statements() {
                    assert!(!e.sql.contains('$'), "{}: {}", e.label, e.sql);
                }
            }
        }
        assert_eq!(bind("$1 $12 $2", &["a"; 12]), "a a a");
    }
}
