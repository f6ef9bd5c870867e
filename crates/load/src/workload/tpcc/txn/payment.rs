//! Payment (clause 2.5.2.2): add the amount to the warehouse's and the
//! district's year-to-date totals (the warehouse's only with
//! `warehouse-ytd=true`, the default), find the customer (by id, or the
//! middle one of a last name), read it, take the amount off its balance
//! (and, for bad credit, write the payment into `C_DATA`), insert a
//! HISTORY row.

use super::{Customer, TpccClient, at};
use crate::wire::Conn;
use crate::workload::{AttemptError, Ended, TxControl};

impl TpccClient {
    /// `(w, d)`: the paying warehouse and district; `(c_w, c_d)`: the
    /// customer's.
    pub(super) async fn payment_tx(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        (w, d): (i32, i32),
        (c_w, c_d): (i32, i32),
        customer: &Customer,
        cents: i64,
    ) -> Result<Ended, AttemptError> {
        let s = self.stmts.as_ref().expect("prepare() before attempt()");
        tx.begin(conn).await?;
        let warehouse = if self.cfg.warehouse_ytd {
            conn.query_one(&s.pay_warehouse, &[&w, &cents]).await
        } else {
            conn.query_one(&s.pay_warehouse, &[&w]).await
        }
        .map_err(at("payment: warehouse"))?;
        let district = conn
            .query_one(&s.pay_district, &[&w, &d, &cents])
            .await
            .map_err(at("payment: district"))?;
        let Some(c) = self
            .customer_id_of(conn, &s.pay_by_name, c_w, c_d, customer)
            .await?
        else {
            return tx.user_abort(conn).await;
        };
        conn.query_one(&s.pay_customer, &[&c_w, &c_d, &c])
            .await
            .map_err(at("payment: customer"))?;
        conn.execute(&s.pay_update_customer, &[&c_w, &c_d, &c, &cents, &d, &w])
            .await
            .map_err(at("payment: update customer"))?;
        // H_DATA: W_NAME, four spaces, D_NAME.
        let h_data = format!(
            "{}    {}",
            warehouse.get::<&str>(0),
            district.get::<&str>(0)
        );
        conn.execute(&s.pay_history, &[&c, &c_d, &c_w, &d, &w, &cents, &h_data])
            .await
            .map_err(at("payment: insert history"))?;
        self.pending.payments = 1;
        self.pending.payment_cents = cents;
        tx.commit(conn).await
    }
}
