//! Order-Status (clause 2.6.2.2), read-only: find the customer (by id,
//! or the middle one of a last name), read its balance and name, its last
//! order and that order's lines.

use super::{Customer, TpccClient, at};
use crate::wire::Conn;
use crate::workload::{AttemptError, Ended, TxControl};

impl TpccClient {
    pub(super) async fn order_status_tx(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        w: i32,
        d: i32,
        customer: &Customer,
    ) -> Result<Ended, AttemptError> {
        let s = self.stmts.as_ref().expect("prepare() before attempt()");
        self.begin_read_only(conn, tx).await?;
        let Some(c) = self
            .customer_id_of(conn, &s.os_by_name, w, d, customer)
            .await?
        else {
            return tx.user_abort(conn).await;
        };
        conn.query_one(&s.os_customer, &[&w, &d, &c])
            .await
            .map_err(at("order-status: customer"))?;
        let last = conn
            .query_opt(&s.os_last_order, &[&w, &d, &c])
            .await
            .map_err(at("order-status: last order"))?;
        if let Some(order) = last {
            let o: i32 = order.get(0);
            conn.query(&s.os_lines, &[&w, &d, &o])
                .await
                .map_err(at("order-status: order lines"))?;
        }
        tx.commit(conn).await
    }
}
