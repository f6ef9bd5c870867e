//! Stock-Level (clause 2.8.2.2), read-only: the district's next order id,
//! then how many distinct items of its last 20 orders' lines have less
//! stock than the threshold in the home warehouse.

use super::{TpccClient, at};
use crate::wire::Conn;
use crate::workload::{AttemptError, Ended, TxControl};

impl TpccClient {
    pub(super) async fn stock_level_tx(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        w: i32,
        d: i32,
        threshold: i32,
    ) -> Result<Ended, AttemptError> {
        let s = self.stmts.as_ref().expect("prepare() before attempt()");
        self.begin_read_only(conn, tx).await?;
        let next: i32 = conn
            .query_one(&s.sl_district, &[&w, &d])
            .await
            .map_err(at("stock-level: district"))?
            .get(0);
        conn.query_one(&s.sl_count, &[&w, &d, &next, &threshold])
            .await
            .map_err(at("stock-level: low stock"))?;
        tx.commit(conn).await
    }
}
