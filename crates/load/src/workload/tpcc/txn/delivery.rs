//! Delivery (clause 2.7.4.2), run at once as one database transaction
//! (the specification lets the deferred Delivery of ten districts be one
//! to ten transactions): in each district, take the oldest undelivered
//! order off NEW-ORDER, set its carrier, date its lines, and add their
//! amounts to the customer's balance.
//!
//! A district without an undelivered order is skipped (counted, clause
//! 2.7.4.2), and so is one whose oldest order a concurrent Delivery took
//! between this one's read and delete (the DELETE finds no row: possible
//! only under READ COMMITTED, where the read and the delete see
//! different snapshots; at the higher levels the DELETE fails with
//! 40001 instead). Delivering it again would add its amount to the
//! customer twice.

use super::{TpccClient, at};
use crate::wire::Conn;
use crate::workload::{AttemptError, Ended, TxControl};

impl TpccClient {
    pub(super) async fn delivery_tx(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        w: i32,
        carrier: i32,
    ) -> Result<Ended, AttemptError> {
        let s = self.stmts.as_ref().expect("prepare() before attempt()");
        tx.begin(conn).await?;
        for d in 1..=10i32 {
            let oldest = conn
                .query_opt(&s.dl_oldest, &[&w, &d])
                .await
                .map_err(at("delivery: oldest new order"))?;
            let Some(row) = oldest else {
                self.pending.skipped += 1;
                continue;
            };
            let o: i32 = row.get(0);
            let deleted = conn
                .execute(&s.dl_delete, &[&w, &d, &o])
                .await
                .map_err(at("delivery: delete new order"))?;
            if deleted == 0 {
                self.pending.skipped += 1;
                continue;
            }
            let c: i32 = conn
                .query_one(&s.dl_order, &[&w, &d, &o, &carrier])
                .await
                .map_err(at("delivery: order"))?
                .get(0);
            let cents: i64 = conn
                .query_one(&s.dl_lines, &[&w, &d, &o])
                .await
                .map_err(at("delivery: order lines"))?
                .get(0);
            conn.execute(&s.dl_customer, &[&w, &d, &c, &cents])
                .await
                .map_err(at("delivery: customer"))?;
            self.pending.delivered += 1;
        }
        tx.commit(conn).await
    }
}
