//! One TPC-C client: its emulated terminal (home warehouse and district),
//! the inputs it draws for each transaction type (clauses 2.4.1, 2.5.1,
//! 2.6.1, 2.7.1, 2.8.1), its keying and think times, its prepared
//! statements and the counts it keeps for the checks ([`TpccLedger`]).
//! Each transaction's profile is in its own file.

mod credit_check;
mod delivery;
mod new_order;
mod order_status;
mod payment;
pub mod sql;
mod stock_level;

use std::time::Duration;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use super::Config;
use super::rand::{
    A_C_ID, A_C_LAST, A_OL_I_ID, KEYING_S, THINK_MEAN_S, last_name, nurand, think_time,
};
use super::schema::UNUSED_ITEM;
use crate::wire::{Conn, Statement};
use crate::workload::{AttemptError, Ended, Ledger, TxControl, WorkloadClient};

/// Indexes of the transaction types (`Workload::tx_types`).
pub const NEW_ORDER: usize = 0;
pub const PAYMENT: usize = 1;
pub const ORDER_STATUS: usize = 2;
pub const DELIVERY: usize = 3;
pub const STOCK_LEVEL: usize = 4;
pub const CREDIT_CHECK: usize = 5;

/// The transaction types' names, in index order.
pub const TYPES: [&str; 6] = [
    "New-Order",
    "Payment",
    "Order-Status",
    "Delivery",
    "Stock-Level",
    "Credit-Check",
];

/// A customer as a transaction names it: by id, or by last name
/// (the middle one in first-name order of those with it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Customer {
    Id(i32),
    Last(String),
}

/// One order line of a New-Order: its number in the order, item, supply
/// warehouse and quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line {
    pub number: i32,
    pub item: i32,
    pub supply_w: i32,
    pub quantity: i32,
}

/// The inputs of one transaction; a retry reuses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Warehouse, district, customer and lines; the last line's item is
    /// [`UNUSED_ITEM`] in the 1 % that roll back by design.
    NewOrder {
        w: i32,
        d: i32,
        c: i32,
        lines: Vec<Line>,
    },
    /// The paying warehouse and district, the customer's, the customer,
    /// the amount in cents (1.00 ..= 5,000.00).
    Payment {
        w: i32,
        d: i32,
        c_w: i32,
        c_d: i32,
        customer: Customer,
        cents: i64,
    },
    OrderStatus {
        w: i32,
        d: i32,
        customer: Customer,
    },
    Delivery {
        w: i32,
        carrier: i32,
    },
    /// The terminal's warehouse and district, the threshold (10 ..= 20).
    StockLevel {
        w: i32,
        d: i32,
        threshold: i32,
    },
    CreditCheck {
        w: i32,
        d: i32,
        c: i32,
    },
}

impl Input {
    /// The index of its type in [`TYPES`].
    pub fn ty(&self) -> usize {
        match self {
            Input::NewOrder { .. } => NEW_ORDER,
            Input::Payment { .. } => PAYMENT,
            Input::OrderStatus { .. } => ORDER_STATUS,
            Input::Delivery { .. } => DELIVERY,
            Input::StockLevel { .. } => STOCK_LEVEL,
            Input::CreditCheck { .. } => CREDIT_CHECK,
        }
    }
}

/// What the clients' committed transactions did, for the checks that
/// compare the database with the clients (`super::check`): sums, merged
/// once after the run. `unknown_*`: transactions whose COMMIT outcome is
/// unknown (they may or may not be in the database).
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TpccLedger {
    pub new_orders: u64,
    pub payments: u64,
    /// Σ committed payment amounts, cents.
    pub payment_cents: i64,
    /// Orders delivered by committed Deliveries.
    pub delivered: u64,
    /// Districts a committed Delivery found nothing to deliver in.
    pub skipped: u64,
    pub unknown_new_orders: u64,
    pub unknown_payments: u64,
    pub unknown_payment_cents: i64,
    pub unknown_delivered: u64,
}

impl Ledger for TpccLedger {
    fn merge(&mut self, o: Self) {
        self.new_orders += o.new_orders;
        self.payments += o.payments;
        self.payment_cents += o.payment_cents;
        self.delivered += o.delivered;
        self.skipped += o.skipped;
        self.unknown_new_orders += o.unknown_new_orders;
        self.unknown_payments += o.unknown_payments;
        self.unknown_payment_cents += o.unknown_payment_cents;
        self.unknown_delivered += o.unknown_delivered;
    }
}

/// What the attempt under way writes, if it commits.
#[derive(Debug, Default, Clone, Copy)]
struct Pending {
    new_orders: u64,
    payments: u64,
    payment_cents: i64,
    delivered: u64,
    skipped: u64,
}

/// The prepared statements of one connection (see [`sql::Shape`]).
struct Stmts {
    /// `BEGIN ... READ ONLY` for Order-Status and Stock-Level, when they
    /// are declared read-only.
    begin_read_only: Option<Statement>,
    no_warehouse: Statement,
    no_district: Statement,
    no_customer: Statement,
    no_items: Statement,
    no_stock: Statement,
    no_insert: Statement,
    pay_warehouse: Statement,
    pay_district: Statement,
    pay_by_name: Statement,
    pay_customer: Statement,
    pay_update_customer: Statement,
    pay_history: Statement,
    os_by_name: Statement,
    os_customer: Statement,
    os_last_order: Statement,
    os_lines: Statement,
    dl_oldest: Statement,
    dl_delete: Statement,
    dl_order: Statement,
    dl_lines: Statement,
    dl_customer: Statement,
    sl_district: Statement,
    sl_count: Statement,
    credit: Option<CreditStmts>,
}

/// TPC-C++'s Credit Check statements.
struct CreditStmts {
    customer: Statement,
    new_orders: Statement,
    update: Statement,
    record: Statement,
}

/// One emulated terminal (see the module docs).
pub struct TpccClient {
    cfg: Config,
    rng: Xoshiro256PlusPlus,
    /// The terminal's warehouse (constant, clause 2.4.1.1) and its
    /// Stock-Level district (clause 2.8.1.1).
    home_w: i32,
    home_d: i32,
    stmts: Option<Stmts>,
    pending: Pending,
    ledger: TpccLedger,
    /// Think time owed after the previous transaction (`think=spec`).
    think: Duration,
}

impl TpccClient {
    /// Client `id`'s terminal: warehouses first, then districts, so that
    /// `10 x warehouses` clients are the specification's 10 terminals per
    /// warehouse, each with its own district.
    pub(super) fn new(cfg: Config, id: u32, seed: u64) -> Self {
        let w = cfg.warehouses;
        let id = i64::from(id);
        TpccClient {
            home_w: (id % w + 1) as i32,
            home_d: (id / w % 10 + 1) as i32,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            cfg,
            stmts: None,
            pending: Pending::default(),
            ledger: TpccLedger::default(),
            think: Duration::ZERO,
        }
    }

    fn district(&mut self) -> i32 {
        self.rng.random_range(1..=10)
    }

    /// A customer id: NURand(1023, 1, 3000), or uniform over the first
    /// `customer-hotspot` customers when that is set.
    fn customer_id(&mut self) -> i32 {
        if self.cfg.hotspot > 0 {
            return self.rng.random_range(1..=self.cfg.hotspot) as i32;
        }
        nurand(&mut self.rng, A_C_ID, 1, 3000, self.cfg.c_run.c_id) as i32
    }

    /// By last name in 60 % of cases (NURand(255, 0, 999) with the run's
    /// constant), else by id (clauses 2.5.1.2, 2.6.1.2).
    fn customer(&mut self) -> Customer {
        if self.rng.random_range(1..=100) <= 60 {
            let n = nurand(&mut self.rng, A_C_LAST, 0, 999, self.cfg.c_run.c_last);
            Customer::Last(last_name(n))
        } else {
            Customer::Id(self.customer_id())
        }
    }

    /// A warehouse other than `w` (`w` itself with one warehouse).
    fn other_warehouse(&mut self, w: i32) -> i32 {
        let n = self.cfg.warehouses as i32;
        if n == 1 {
            return w;
        }
        let o = self.rng.random_range(1..n);
        if o >= w { o + 1 } else { o }
    }

    fn new_order(&mut self) -> Input {
        let w = self.home_w;
        let d = self.district();
        let c = self.customer_id();
        let count = self.rng.random_range(5..=15);
        let rollback = self.rng.random_range(1..=100) == 1;
        let mut lines = Vec::with_capacity(count);
        for number in 1..=count as i32 {
            let item = nurand(&mut self.rng, A_OL_I_ID, 1, 100_000, self.cfg.c_run.ol_i_id) as i32;
            let supply_w = if self.rng.random_range(1..=100) == 1 {
                self.other_warehouse(w)
            } else {
                w
            };
            lines.push(Line {
                number,
                item,
                supply_w,
                quantity: self.rng.random_range(1..=10),
            });
        }
        if rollback {
            lines.last_mut().expect("5 to 15 lines").item = UNUSED_ITEM;
        }
        Input::NewOrder { w, d, c, lines }
    }

    fn payment(&mut self) -> Input {
        let w = self.home_w;
        let d = self.district();
        let (c_w, c_d) = if self.rng.random_range(1..=100) <= 85 {
            (w, d)
        } else {
            let c_d = self.district();
            (self.other_warehouse(w), c_d)
        };
        Input::Payment {
            w,
            d,
            c_w,
            c_d,
            customer: self.customer(),
            cents: self.rng.random_range(100..=500_000),
        }
    }

    /// The middle customer (position ⌈n / 2⌉ of `ids`, in first-name
    /// order) of those with a last name (clauses 2.5.2.2, 2.6.2.2).
    fn middle(ids: &[crate::wire::Row]) -> Option<i32> {
        let n = ids.len();
        (n > 0).then(|| ids[n.div_ceil(2) - 1].get(0))
    }

    fn s(&self) -> &Stmts {
        self.stmts.as_ref().expect("prepare() before attempt()")
    }
}

/// `e` as raised by the statement labelled `label`.
fn at(label: &'static str) -> impl Fn(crate::wire::Error) -> AttemptError {
    move |e| AttemptError::body(e).at(label)
}

impl WorkloadClient for TpccClient {
    type Input = Input;
    type Ledger = TpccLedger;

    async fn prepare(&mut self, conn: &mut Conn, tx: &TxControl) -> Result<(), crate::wire::Error> {
        let q = self.cfg.shape();
        let begin_read_only = if self.cfg.read_only && !q.locking {
            let sql = format!("BEGIN ISOLATION LEVEL {} READ ONLY", tx.isolation().sql());
            Some(conn.prepare(&sql).await?)
        } else {
            None
        };
        let credit = if q.plus {
            Some(CreditStmts {
                customer: conn.prepare(&q.cc_customer()).await?,
                new_orders: conn.prepare(&q.cc_new_orders()).await?,
                update: conn.prepare(&q.cc_update()).await?,
                record: conn.prepare(&q.cc_record()).await?,
            })
        } else {
            None
        };
        self.stmts = Some(Stmts {
            begin_read_only,
            no_warehouse: conn.prepare(&q.no_warehouse()).await?,
            no_district: conn.prepare(&q.no_district()).await?,
            no_customer: conn.prepare(&q.no_customer()).await?,
            no_items: conn.prepare(&q.no_items()).await?,
            no_stock: conn.prepare(&q.no_stock()).await?,
            no_insert: conn.prepare(&q.no_insert()).await?,
            pay_warehouse: conn.prepare(&q.pay_warehouse()).await?,
            pay_district: conn.prepare(&q.pay_district()).await?,
            pay_by_name: conn.prepare(&q.by_name(true)).await?,
            pay_customer: conn.prepare(&q.pay_customer()).await?,
            pay_update_customer: conn.prepare(&q.pay_update_customer()).await?,
            pay_history: conn.prepare(&q.pay_history()).await?,
            os_by_name: conn.prepare(&q.by_name(false)).await?,
            os_customer: conn.prepare(&q.os_customer()).await?,
            os_last_order: conn.prepare(&q.os_last_order()).await?,
            os_lines: conn.prepare(&q.os_lines()).await?,
            dl_oldest: conn.prepare(&q.dl_oldest()).await?,
            dl_delete: conn.prepare(&q.dl_delete()).await?,
            dl_order: conn.prepare(&q.dl_order()).await?,
            dl_lines: conn.prepare(&q.dl_lines()).await?,
            dl_customer: conn.prepare(&q.dl_customer()).await?,
            sl_district: conn.prepare(&q.sl_district()).await?,
            sl_count: conn.prepare(&q.sl_count()).await?,
            credit,
        });
        Ok(())
    }

    fn next_input(&mut self) -> Input {
        let pick = self.rng.random_range(0..self.cfg.mix_total());
        let mut acc = 0;
        let mut ty = 0;
        for (t, weight) in self.cfg.mix.iter().enumerate() {
            acc += weight;
            if pick < acc {
                ty = t;
                break;
            }
        }
        match ty {
            NEW_ORDER => self.new_order(),
            PAYMENT => self.payment(),
            ORDER_STATUS => {
                let d = self.district();
                Input::OrderStatus {
                    w: self.home_w,
                    d,
                    customer: self.customer(),
                }
            }
            DELIVERY => Input::Delivery {
                w: self.home_w,
                carrier: self.rng.random_range(1..=10),
            },
            STOCK_LEVEL => Input::StockLevel {
                w: self.home_w,
                d: self.home_d,
                threshold: self.rng.random_range(10..=20),
            },
            _ => {
                let d = self.district();
                let c = self.customer_id();
                Input::CreditCheck {
                    w: self.home_w,
                    d,
                    c,
                }
            }
        }
    }

    fn tx_type(&self, input: &Input) -> usize {
        input.ty()
    }

    /// `think=spec`: the think time drawn after the previous transaction
    /// plus this one's keying time (clause 5.2.5).
    fn pause_before(&mut self, input: &Input) -> Duration {
        if !self.cfg.think {
            return Duration::ZERO;
        }
        let ty = input.ty();
        let pause = self.think + Duration::from_secs_f64(KEYING_S[ty]);
        self.think = think_time(&mut self.rng, THINK_MEAN_S[ty]);
        pause
    }

    async fn attempt(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        input: &Input,
    ) -> Result<Ended, AttemptError> {
        self.pending = Pending::default();
        let outcome = match input {
            Input::NewOrder { w, d, c, lines } => {
                self.new_order_tx(conn, tx, *w, *d, *c, lines).await?
            }
            Input::Payment {
                w,
                d,
                c_w,
                c_d,
                customer,
                cents,
            } => {
                self.payment_tx(conn, tx, (*w, *d), (*c_w, *c_d), customer, *cents)
                    .await?
            }
            Input::OrderStatus { w, d, customer } => {
                self.order_status_tx(conn, tx, *w, *d, customer).await?
            }
            Input::Delivery { w, carrier } => self.delivery_tx(conn, tx, *w, *carrier).await?,
            Input::StockLevel { w, d, threshold } => {
                self.stock_level_tx(conn, tx, *w, *d, *threshold).await?
            }
            Input::CreditCheck { w, d, c } => self.credit_check_tx(conn, tx, *w, *d, *c).await?,
        };
        if outcome == Ended::Committed {
            let p = self.pending;
            let l = &mut self.ledger;
            l.new_orders += p.new_orders;
            l.payments += p.payments;
            l.payment_cents += p.payment_cents;
            l.delivered += p.delivered;
            l.skipped += p.skipped;
        }
        Ok(outcome)
    }

    fn unknown_outcome(&mut self, _input: &Input) {
        let p = self.pending;
        let l = &mut self.ledger;
        l.unknown_new_orders += p.new_orders;
        l.unknown_payments += p.payments;
        l.unknown_payment_cents += p.payment_cents;
        l.unknown_delivered += p.delivered;
    }

    fn into_ledger(self) -> TpccLedger {
        self.ledger
    }
}

impl TpccClient {
    /// BEGIN of a read-only transaction type: `READ ONLY` unless the
    /// strategy locks rows (`FOR SHARE` is refused in a read-only
    /// transaction) or `read-only=false`.
    async fn begin_read_only(&self, conn: &mut Conn, tx: &TxControl) -> Result<(), AttemptError> {
        match &self.s().begin_read_only {
            Some(b) => conn
                .execute(b, &[])
                .await
                .map(drop)
                .map_err(AttemptError::body),
            None => tx.begin(conn).await,
        }
    }

    /// The id of `customer` in district `(w, d)`: given, or the middle
    /// one of its last name found by `by_name`. `None`: no customer has
    /// the name (never with the specification's data).
    async fn customer_id_of(
        &self,
        conn: &mut Conn,
        by_name: &Statement,
        w: i32,
        d: i32,
        customer: &Customer,
    ) -> Result<Option<i32>, AttemptError> {
        match customer {
            Customer::Id(c) => Ok(Some(*c)),
            Customer::Last(name) => {
                let rows = conn
                    .query(by_name, &[&w, &d, &name.as_str()])
                    .await
                    .map_err(at("customer by last name"))?;
                Ok(Self::middle(&rows))
            }
        }
    }
}

#[cfg(test)]
mod tests;
