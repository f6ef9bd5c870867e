//! TPC-C++'s Credit Check (M. J. Cahill, U. Röhm, A. D. Fekete,
//! "Serializable Isolation for Snapshot Databases", SIGMOD 2008; M. J.
//! Cahill's PhD thesis of the same title, University of Sydney, 2009):
//! read a customer's balance and credit limit, add up the amounts of its
//! orders not yet delivered (its NEW-ORDER rows' order lines), and set
//! `C_CREDIT` to "BC" (bad credit) when balance plus that total exceeds
//! the limit, else "GC".
//!
//! Under snapshot isolation it makes TPC-C non-serializable: New-Order
//! reads `C_CREDIT` and inserts an undelivered order, the Credit Check
//! reads the undelivered orders and writes `C_CREDIT`; run concurrently,
//! each misses the other's write (write skew, a cycle of two rw
//! dependencies). Its other conflicts, with Payment and Delivery (which
//! write `C_BALANCE` and NEW-ORDER), become write-write conflicts on
//! PostgreSQL, which versions whole rows: all three update the customer
//! row, so one of two concurrent ones fails (40001) under REPEATABLE
//! READ.
//!
//! Bookkeeping for the anomaly check (not in the paper): the Credit Check
//! bumps `C_CREDIT_VERSION` with `C_CREDIT` and records what it saw in
//! `credit_check` (the version it wrote, the last order id of the
//! customer in its snapshot, the balances); New-Order writes the version
//! it read into its order (`O_CREDIT_VERSION`). See `super::super::check`.

use super::{TpccClient, at};
use crate::wire::Conn;
use crate::workload::{AttemptError, Ended, TxControl};

impl TpccClient {
    pub(super) async fn credit_check_tx(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        w: i32,
        d: i32,
        c: i32,
    ) -> Result<Ended, AttemptError> {
        let s = self.stmts.as_ref().expect("prepare() before attempt()");
        let cc = s.credit.as_ref().expect("prepared for tpcc++");
        tx.begin(conn).await?;
        let customer = conn
            .query_one(&cc.customer, &[&w, &d, &c])
            .await
            .map_err(at("credit-check: customer"))?;
        let (balance, limit): (i64, i64) = (customer.get(0), customer.get(1));
        let open = conn
            .query_one(&cc.new_orders, &[&w, &d, &c])
            .await
            .map_err(at("credit-check: undelivered orders"))?;
        let (undelivered, last_order): (i64, i32) = (open.get(0), open.get(1));
        let credit = if balance + undelivered > limit {
            "BC"
        } else {
            "GC"
        };
        let version: i32 = conn
            .query_one(&cc.update, &[&w, &d, &c, &credit])
            .await
            .map_err(at("credit-check: update customer"))?
            .get(0);
        conn.execute(
            &cc.record,
            &[
                &w,
                &d,
                &c,
                &version,
                &last_order,
                &credit,
                &balance,
                &undelivered,
            ],
        )
        .await
        .map_err(at("credit-check: record"))?;
        tx.commit(conn).await
    }
}
