//! The statements of the six transactions, as prepared on each
//! connection, for a [`Shape`]: the strategy (row locks or none), the
//! variant (TPC-C++'s bookkeeping columns) and whether Payment updates
//! `W_YTD`.
//!
//! Money crosses the wire as whole cents (`bigint`, `$n::bigint * 0.01`
//! in, `(x * 100)::bigint` out), so every sum stays exact. Under
//! `locking` every read takes `FOR SHARE` and a read whose rows the
//! transaction then writes takes `FOR UPDATE` (see `super::super` docs).

/// What the statements depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub locking: bool,
    pub plus: bool,
    pub warehouse_ytd: bool,
}

impl Shape {
    fn share(&self) -> &'static str {
        if self.locking { " FOR SHARE" } else { "" }
    }

    fn update(&self) -> &'static str {
        if self.locking { " FOR UPDATE" } else { "" }
    }

    // New-Order (clause 2.4.2.2).

    pub fn no_warehouse(&self) -> String {
        format!(
            "SELECT w_tax FROM warehouse WHERE w_id = $1{}",
            self.share()
        )
    }

    pub fn no_district(&self) -> String {
        "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2 \
         RETURNING d_next_o_id - 1, d_tax"
            .into()
    }

    pub fn no_customer(&self) -> String {
        let version = if self.plus { ", c_credit_version" } else { "" };
        format!(
            "SELECT c_discount, c_last, c_credit{version} FROM customer \
             WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3{}",
            self.share()
        )
    }

    pub fn no_items(&self) -> String {
        format!(
            "SELECT i_id, (i_price * 100)::int, i_name, i_data FROM item WHERE i_id = ANY($1){}",
            self.share()
        )
    }

    pub fn no_stock(&self) -> String {
        let dists: String = (1..=10)
            .map(|d| format!(" WHEN {d} THEN s_dist_{d:02}"))
            .collect();
        format!(
            "UPDATE stock SET s_quantity = CASE WHEN s_quantity - $3 >= 10 THEN s_quantity - $3 \
             ELSE s_quantity - $3 + 91 END, s_ytd = s_ytd + $3, s_order_cnt = s_order_cnt + 1, \
             s_remote_cnt = s_remote_cnt + $4 WHERE s_w_id = $1 AND s_i_id = $2 \
             RETURNING s_quantity, CASE $5::int{dists} END, s_data"
        )
    }

    /// ORDER, NEW-ORDER and the ORDER-LINEs in one statement: $1 o_id,
    /// $2 d, $3 w, $4 c, $5 line count, $6 all local, then the lines as
    /// arrays (number, item, supply warehouse, quantity, amount in
    /// cents, dist info), and for TPC-C++ $13 the credit version read.
    pub fn no_insert(&self) -> String {
        let (col, val) = if self.plus {
            (", o_credit_version", ", $13")
        } else {
            ("", "")
        };
        format!(
            "WITH o AS (INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, \
             o_ol_cnt, o_all_local{col}) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP, NULL, $5, $6{val})), \
             n AS (INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES ($1, $2, $3)) \
             INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, \
             ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) \
             SELECT $1, $2, $3, u.n, u.i, u.s, NULL, u.q, u.a * 0.01, u.dist \
             FROM unnest($7::int[], $8::int[], $9::int[], $10::int[], $11::bigint[], $12::text[]) \
             AS u(n, i, s, q, a, dist)"
        )
    }

    // Payment (clause 2.5.2.2).

    pub fn pay_warehouse(&self) -> String {
        let cols = "w_name, w_street_1, w_street_2, w_city, w_state, w_zip";
        if self.warehouse_ytd {
            format!(
                "UPDATE warehouse SET w_ytd = w_ytd + $2::bigint * 0.01 WHERE w_id = $1 RETURNING {cols}"
            )
        } else {
            format!(
                "SELECT {cols} FROM warehouse WHERE w_id = $1{}",
                self.share()
            )
        }
    }

    pub fn pay_district(&self) -> String {
        "UPDATE district SET d_ytd = d_ytd + $3::bigint * 0.01 WHERE d_w_id = $1 AND d_id = $2 \
         RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip"
            .into()
    }

    /// The customers of a last name in first-name order; `for_update`:
    /// Payment's, which updates one of them.
    pub fn by_name(&self, for_update: bool) -> String {
        format!(
            "SELECT c_id FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 \
             ORDER BY c_first{}",
            if for_update {
                self.update()
            } else {
                self.share()
            }
        )
    }

    pub fn pay_customer(&self) -> String {
        format!(
            "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, \
             c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance FROM customer \
             WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3{}",
            self.update()
        )
    }

    /// $4 amount in cents, $5 and $6 the paying district and warehouse
    /// (written into `C_DATA` for bad credit).
    pub fn pay_update_customer(&self) -> String {
        "UPDATE customer SET c_balance = c_balance - $4::bigint * 0.01, \
         c_ytd_payment = c_ytd_payment + $4::bigint * 0.01, c_payment_cnt = c_payment_cnt + 1, \
         c_data = CASE c_credit WHEN 'BC' THEN left(concat_ws(' ', c_id, c_d_id, c_w_id, $5::int, \
         $6::int, to_char($4::bigint * 0.01, 'FM9990.00')) || ' | ' || c_data, 500) ELSE c_data END \
         WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3"
            .into()
    }

    pub fn pay_history(&self) -> String {
        "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) \
         VALUES ($1, $2, $3, $4, $5, CURRENT_TIMESTAMP, $6::bigint * 0.01, $7)"
            .into()
    }

    // Order-Status (clause 2.6.2.2).

    pub fn os_customer(&self) -> String {
        format!(
            "SELECT c_balance, c_first, c_middle, c_last FROM customer \
             WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3{}",
            self.share()
        )
    }

    pub fn os_last_order(&self) -> String {
        format!(
            "SELECT o_id, o_entry_d, o_carrier_id FROM orders \
             WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3 ORDER BY o_id DESC LIMIT 1{}",
            self.share()
        )
    }

    pub fn os_lines(&self) -> String {
        format!(
            "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line \
             WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3{}",
            self.share()
        )
    }

    // Delivery (clause 2.7.4.2).

    pub fn dl_oldest(&self) -> String {
        format!(
            "SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 \
             ORDER BY no_o_id LIMIT 1{}",
            self.update()
        )
    }

    pub fn dl_delete(&self) -> String {
        "DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3".into()
    }

    pub fn dl_order(&self) -> String {
        "UPDATE orders SET o_carrier_id = $4 WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3 \
         RETURNING o_c_id"
            .into()
    }

    pub fn dl_lines(&self) -> String {
        "WITH l AS (UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP \
         WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3 RETURNING ol_amount) \
         SELECT coalesce((sum(ol_amount) * 100)::bigint, 0) FROM l"
            .into()
    }

    pub fn dl_customer(&self) -> String {
        "UPDATE customer SET c_balance = c_balance + $4::bigint * 0.01, \
         c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3"
            .into()
    }

    // Stock-Level (clause 2.8.2.2).

    pub fn sl_district(&self) -> String {
        format!(
            "SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2{}",
            self.share()
        )
    }

    pub fn sl_count(&self) -> String {
        let join = "FROM order_line ol JOIN stock s ON s.s_w_id = ol.ol_w_id AND s.s_i_id = ol.ol_i_id \
             WHERE ol.ol_w_id = $1 AND ol.ol_d_id = $2 AND ol.ol_o_id < $3 AND ol.ol_o_id >= $3 - 20";
        if self.locking {
            format!(
                "SELECT count(DISTINCT i) FROM (SELECT s.s_i_id AS i, s.s_quantity AS q {join} \
                 FOR SHARE OF ol, s) x WHERE q < $4"
            )
        } else {
            format!("SELECT count(DISTINCT s.s_i_id) {join} AND s.s_quantity < $4")
        }
    }

    // TPC-C++'s Credit Check (Cahill, Röhm, Fekete 2008).

    pub fn cc_customer(&self) -> String {
        format!(
            "SELECT (c_balance * 100)::bigint, (c_credit_lim * 100)::bigint, c_credit_version \
             FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3{}",
            self.update()
        )
    }

    /// The customer's undelivered order total (the paper's query), and
    /// the last order id it can see (isobench's bookkeeping).
    pub fn cc_new_orders(&self) -> String {
        let join = "FROM new_order no JOIN orders o ON o.o_w_id = no.no_w_id \
             AND o.o_d_id = no.no_d_id AND o.o_id = no.no_o_id \
             JOIN order_line ol ON ol.ol_w_id = o.o_w_id AND ol.ol_d_id = o.o_d_id \
             AND ol.ol_o_id = o.o_id WHERE no.no_w_id = $1 AND no.no_d_id = $2 AND o.o_c_id = $3";
        let last = "FROM orders WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3";
        if self.locking {
            format!(
                "SELECT coalesce((sum(a) * 100)::bigint, 0), \
                 (SELECT coalesce(max(o_id), 0) FROM (SELECT o_id {last} FOR SHARE) m) \
                 FROM (SELECT ol.ol_amount AS a {join} FOR SHARE OF no, o, ol) x"
            )
        } else {
            format!(
                "SELECT coalesce((sum(ol.ol_amount) * 100)::bigint, 0), \
                 (SELECT coalesce(max(o_id), 0) {last}) {join}"
            )
        }
    }

    pub fn cc_update(&self) -> String {
        "UPDATE customer SET c_credit = $4, c_credit_version = c_credit_version + 1 \
         WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3 RETURNING c_credit_version"
            .into()
    }

    pub fn cc_record(&self) -> String {
        "INSERT INTO credit_check (cc_w_id, cc_d_id, cc_c_id, cc_version, cc_max_o_id, cc_credit, \
         cc_balance, cc_new_order_balance) VALUES ($1, $2, $3, $4, $5, $6, $7::bigint * 0.01, \
         $8::bigint * 0.01)"
            .into()
    }
}
