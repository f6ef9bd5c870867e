//! TPC-C's nine tables (clause 1.3) as PostgreSQL DDL, their primary keys
//! and the two secondary indexes the transactions need, and the
//! cardinalities of clause 1.2 / 4.3.3.1.
//!
//! Names: the specification's, lower case, with `ORDER` as `orders` and
//! `NEW-ORDER`, `ORDER-LINE` as `new_order`, `order_line`. Types: the
//! specification's `numeric(p, s)` for money, rates and balances (exact
//! sums for the consistency conditions), `int` for identifiers and
//! counters, `timestamp` for dates. TPC-C++ adds bookkeeping that its
//! anomaly check reads: `customer.c_credit_version` (how many Credit
//! Checks wrote `C_CREDIT`), `orders.o_credit_version` (the version
//! New-Order read) and the table `credit_check` (what each Credit Check
//! saw), see `super::check`.

/// Rows per warehouse, and of the fixed ITEM table (clause 1.2, 4.3.3.1).
pub const DISTRICTS: i64 = 10;
pub const CUSTOMERS_PER_DISTRICT: i64 = 3_000;
pub const ORDERS_PER_DISTRICT: i64 = 3_000;
/// Orders below this id are delivered when loaded (O_CARRIER_ID set).
pub const FIRST_UNDELIVERED: i64 = 2_101;
pub const ITEMS: i64 = 100_000;
/// An item id no row has: New-Order's intended rollback (clause 2.4.1.5).
pub const UNUSED_ITEM: i32 = ITEMS as i32 + 1;
/// Initial balances (clause 4.3.3.1): W_YTD, D_YTD, and each customer's
/// one payment of 10.00.
pub const W_YTD_CENTS: i64 = 30_000_000;
pub const D_YTD_CENTS: i64 = 3_000_000;
pub const INITIAL_PAYMENT_CENTS: i64 = 1_000;

/// The tables, in loading order.
pub const TABLES: [&str; 9] = [
    "item",
    "warehouse",
    "district",
    "customer",
    "history",
    "orders",
    "new_order",
    "order_line",
    "stock",
];

/// CREATE TABLE statements; `plus`: TPC-C++'s bookkeeping columns and
/// table.
pub fn create_tables(plus: bool) -> String {
    let (c_version, o_version) = if plus {
        (
            ",\n c_credit_version int NOT NULL DEFAULT 0",
            ",\n o_credit_version int NOT NULL DEFAULT 0",
        )
    } else {
        ("", "")
    };
    let mut ddl = format!(
        "CREATE TABLE item (
 i_id int NOT NULL, i_im_id int NOT NULL, i_name varchar(24) NOT NULL,
 i_price numeric(5,2) NOT NULL, i_data varchar(50) NOT NULL);
CREATE TABLE warehouse (
 w_id int NOT NULL, w_name varchar(10) NOT NULL, w_street_1 varchar(20) NOT NULL,
 w_street_2 varchar(20) NOT NULL, w_city varchar(20) NOT NULL, w_state char(2) NOT NULL,
 w_zip char(9) NOT NULL, w_tax numeric(4,4) NOT NULL, w_ytd numeric(12,2) NOT NULL);
CREATE TABLE district (
 d_id int NOT NULL, d_w_id int NOT NULL, d_name varchar(10) NOT NULL,
 d_street_1 varchar(20) NOT NULL, d_street_2 varchar(20) NOT NULL, d_city varchar(20) NOT NULL,
 d_state char(2) NOT NULL, d_zip char(9) NOT NULL, d_tax numeric(4,4) NOT NULL,
 d_ytd numeric(12,2) NOT NULL, d_next_o_id int NOT NULL);
CREATE TABLE customer (
 c_id int NOT NULL, c_d_id int NOT NULL, c_w_id int NOT NULL, c_first varchar(16) NOT NULL,
 c_middle char(2) NOT NULL, c_last varchar(16) NOT NULL, c_street_1 varchar(20) NOT NULL,
 c_street_2 varchar(20) NOT NULL, c_city varchar(20) NOT NULL, c_state char(2) NOT NULL,
 c_zip char(9) NOT NULL, c_phone char(16) NOT NULL, c_since timestamp NOT NULL,
 c_credit char(2) NOT NULL, c_credit_lim numeric(12,2) NOT NULL, c_discount numeric(4,4) NOT NULL,
 c_balance numeric(12,2) NOT NULL, c_ytd_payment numeric(12,2) NOT NULL,
 c_payment_cnt int NOT NULL, c_delivery_cnt int NOT NULL, c_data varchar(500) NOT NULL{c_version});
CREATE TABLE history (
 h_c_id int NOT NULL, h_c_d_id int NOT NULL, h_c_w_id int NOT NULL, h_d_id int NOT NULL,
 h_w_id int NOT NULL, h_date timestamp NOT NULL, h_amount numeric(6,2) NOT NULL,
 h_data varchar(24) NOT NULL);
CREATE TABLE orders (
 o_id int NOT NULL, o_d_id int NOT NULL, o_w_id int NOT NULL, o_c_id int NOT NULL,
 o_entry_d timestamp NOT NULL, o_carrier_id int, o_ol_cnt int NOT NULL,
 o_all_local int NOT NULL{o_version});
CREATE TABLE new_order (no_o_id int NOT NULL, no_d_id int NOT NULL, no_w_id int NOT NULL);
CREATE TABLE order_line (
 ol_o_id int NOT NULL, ol_d_id int NOT NULL, ol_w_id int NOT NULL, ol_number int NOT NULL,
 ol_i_id int NOT NULL, ol_supply_w_id int NOT NULL, ol_delivery_d timestamp,
 ol_quantity int NOT NULL, ol_amount numeric(6,2) NOT NULL, ol_dist_info char(24) NOT NULL);
CREATE TABLE stock (
 s_i_id int NOT NULL, s_w_id int NOT NULL, s_quantity int NOT NULL,
 s_dist_01 char(24) NOT NULL, s_dist_02 char(24) NOT NULL, s_dist_03 char(24) NOT NULL,
 s_dist_04 char(24) NOT NULL, s_dist_05 char(24) NOT NULL, s_dist_06 char(24) NOT NULL,
 s_dist_07 char(24) NOT NULL, s_dist_08 char(24) NOT NULL, s_dist_09 char(24) NOT NULL,
 s_dist_10 char(24) NOT NULL, s_ytd int NOT NULL, s_order_cnt int NOT NULL,
 s_remote_cnt int NOT NULL, s_data varchar(50) NOT NULL);"
    );
    if plus {
        ddl.push_str(
            "\nCREATE TABLE credit_check (
 cc_w_id int NOT NULL, cc_d_id int NOT NULL, cc_c_id int NOT NULL,
 cc_version int NOT NULL, cc_max_o_id int NOT NULL, cc_credit char(2) NOT NULL,
 cc_balance numeric(12,2) NOT NULL, cc_new_order_balance numeric(12,2) NOT NULL);",
        );
    }
    ddl
}

/// Primary keys (clause 1.3) and the secondary indexes: customers by last
/// name (Payment and Order-Status by name, clauses 2.5.2.2, 2.6.2.2) and
/// orders by customer (Order-Status's last order, TPC-C++'s Credit Check).
pub const INDEXES: [&str; 10] = [
    "ALTER TABLE item ADD PRIMARY KEY (i_id)",
    "ALTER TABLE warehouse ADD PRIMARY KEY (w_id)",
    "ALTER TABLE district ADD PRIMARY KEY (d_w_id, d_id)",
    "ALTER TABLE customer ADD PRIMARY KEY (c_w_id, c_d_id, c_id)",
    "ALTER TABLE orders ADD PRIMARY KEY (o_w_id, o_d_id, o_id)",
    "ALTER TABLE new_order ADD PRIMARY KEY (no_w_id, no_d_id, no_o_id)",
    "ALTER TABLE order_line ADD PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)",
    "ALTER TABLE stock ADD PRIMARY KEY (s_w_id, s_i_id)",
    "CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first)",
    "CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
];

/// TPC-C++'s bookkeeping index: the anomaly check joins on it.
pub const CREDIT_CHECK_INDEX: &str =
    "CREATE INDEX credit_check_customer ON credit_check (cc_w_id, cc_d_id, cc_c_id)";

/// Rows loaded for `warehouses` warehouses, by table in [`TABLES`]'s
/// order; ORDER-LINE's is its expectation (10 lines per order on
/// average: the exact count depends on the drawn line counts).
pub fn expected_rows(warehouses: i64) -> [i64; 9] {
    let per_district = CUSTOMERS_PER_DISTRICT;
    let districts = warehouses * DISTRICTS;
    [
        ITEMS,
        warehouses,
        districts,
        districts * per_district,
        districts * per_district,
        districts * ORDERS_PER_DISTRICT,
        districts * (ORDERS_PER_DISTRICT - FIRST_UNDELIVERED + 1),
        districts * ORDERS_PER_DISTRICT * 10,
        warehouses * ITEMS,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clause 1.2's cardinalities per warehouse.
    #[test]
    fn cardinalities_are_the_specifications() {
        let r = expected_rows(2);
        assert_eq!(r[0], 100_000, "item is fixed");
        assert_eq!(r[1], 2);
        assert_eq!(r[2], 20);
        assert_eq!(r[3], 60_000, "customers");
        assert_eq!(r[4], 60_000, "history");
        assert_eq!(r[5], 60_000, "orders");
        assert_eq!(r[6], 18_000, "new orders: 900 per district");
        assert_eq!(r[7], 600_000, "order lines");
        assert_eq!(r[8], 200_000, "stock");
        assert!(create_tables(true).contains("credit_check"));
        assert!(!create_tables(false).contains("credit_check"));
        assert!(!create_tables(false).contains("credit_version"));
    }
}
