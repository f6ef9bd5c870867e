//! New-Order (clause 2.4.2.2): read the warehouse's tax, take the
//! district's next order id, read the customer, read the items (an unused
//! item rolls the whole transaction back by design: a user abort, not a
//! failure), update each line's stock, insert the ORDER, NEW-ORDER and
//! ORDER-LINE rows.
//!
//! Deliberate differences from the profile's order of steps: the items
//! are read in one statement before the stock updates and the inserts
//! (the specification inserts ORDER and NEW-ORDER first, then meets the
//! unused item on the last line; both roll everything back), and the
//! stock rows are updated in (supply warehouse, item) order, so that two
//! New-Orders never wait for each other's stock rows in opposite orders
//! (a deadlock); lines keep their numbers. Outputs that are only
//! displayed (brand-generic, the total amount) are read, not formatted.

use std::collections::HashMap;

use super::{Line, TpccClient, at};
use crate::wire::Conn;
use crate::workload::{AttemptError, Ended, TxControl};

impl TpccClient {
    pub(super) async fn new_order_tx(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        w: i32,
        d: i32,
        c: i32,
        lines: &[Line],
    ) -> Result<Ended, AttemptError> {
        let s = self.stmts.as_ref().expect("prepare() before attempt()");
        tx.begin(conn).await?;
        conn.execute(&s.no_warehouse, &[&w])
            .await
            .map_err(at("new-order: warehouse"))?;
        let o_id: i32 = conn
            .query_one(&s.no_district, &[&w, &d])
            .await
            .map_err(at("new-order: district"))?
            .get(0);
        let customer = conn
            .query_one(&s.no_customer, &[&w, &d, &c])
            .await
            .map_err(at("new-order: customer"))?;
        let credit_version: i32 = if self.cfg.plus { customer.get(3) } else { 0 };
        let ids: Vec<i32> = lines.iter().map(|l| l.item).collect();
        let items = conn
            .query(&s.no_items, &[&ids])
            .await
            .map_err(at("new-order: items"))?;
        let price: HashMap<i32, i32> = items.iter().map(|r| (r.get(0), r.get(1))).collect();
        if ids.iter().any(|i| !price.contains_key(i)) {
            // "Item number is not valid": the 1 % rolled back by design.
            return tx.user_abort(conn).await;
        }
        let mut order: Vec<&Line> = lines.iter().collect();
        order.sort_by_key(|l| (l.supply_w, l.item));
        let mut dist = vec![String::new(); lines.len()];
        for l in order {
            let remote = i32::from(l.supply_w != w);
            let row = conn
                .query_one(
                    &s.no_stock,
                    &[&l.supply_w, &l.item, &l.quantity, &remote, &d],
                )
                .await
                .map_err(at("new-order: stock"))?;
            dist[(l.number - 1) as usize] = row.get::<&str>(1).to_string();
        }
        let numbers: Vec<i32> = lines.iter().map(|l| l.number).collect();
        let supply: Vec<i32> = lines.iter().map(|l| l.supply_w).collect();
        let quantity: Vec<i32> = lines.iter().map(|l| l.quantity).collect();
        let cents: Vec<i64> = lines
            .iter()
            .map(|l| i64::from(l.quantity) * i64::from(price[&l.item]))
            .collect();
        let count = lines.len() as i32;
        let all_local = i32::from(lines.iter().all(|l| l.supply_w == w));
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![
            &o_id, &d, &w, &c, &count, &all_local, &numbers, &ids, &supply, &quantity, &cents,
            &dist,
        ];
        if self.cfg.plus {
            params.push(&credit_version);
        }
        conn.execute(&s.no_insert, &params)
            .await
            .map_err(at("new-order: insert order"))?;
        self.pending.new_orders = 1;
        tx.commit(conn).await
    }
}
