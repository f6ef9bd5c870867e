//! TPC-C's consistency conditions (clause 3.3.2), the clients' commits
//! against the database, and TPC-C++'s write skew, checked after a run.
//!
//! Conditions 1 to 4 read WAREHOUSE and DISTRICT, and NEW-ORDER, ORDER
//! and ORDER-LINE grouped by district; they run after every run. 5 to 12
//! join ORDER, ORDER-LINE, NEW-ORDER, HISTORY and CUSTOMER row by row,
//! which takes seconds per million order lines; with `consistency=auto`
//! they run while ORDER-LINE holds at most [`AUTO_CHECK_ROWS`] rows
//! (about 15 warehouses after a short run), `all` always, `quick` never.
//!
//! Condition 11, `count(ORDER) - count(NEW-ORDER) = 2100` per district,
//! holds only for the initial population: every Delivery removes a
//! NEW-ORDER row and keeps its ORDER. It is checked as the difference's
//! growth over all districts against the orders the clients' committed
//! Deliveries delivered. Two more checks compare the database with the
//! clients' counts (isobench's "nothing is lost"): new order ids taken,
//! and HISTORY rows and amounts added.
//!
//! TPC-C++ (`credit-check-skew`): a New-Order that read credit version
//! `v` of its customer and placed order `o`, and a Credit Check of that
//! customer that wrote a later version `V > v` but could see only its
//! orders up to `m < o`, missed each other's writes: New-Order comes
//! before the Credit Check (it read the credit status the check then
//! replaced) and after it (the check's total lacks the order). No serial
//! order of the two has that, so each such pair is an anomaly (order ids
//! of a district are taken in commit order, under the district row's
//! lock, so "could see up to `m`" is exact; versions are written under
//! the customer row's lock, so they follow commit order). SERIALIZABLE
//! never lets one through; REPEATABLE READ does when the two run
//! concurrently on one customer.

use tokio_postgres::Client;

use super::schema::{
    CUSTOMERS_PER_DISTRICT, DISTRICTS, FIRST_UNDELIVERED, INITIAL_PAYMENT_CENTS,
    ORDERS_PER_DISTRICT,
};
use super::{AUTO_CHECK_ROWS, Config, Consistency};
use crate::model::InvariantResult;
use crate::workload::WorkloadError;
use crate::workload::tpcc::txn::TpccLedger;

/// Runs `sql`, which returns one row: violations (bigint), an example of
/// one (text, NULL without), rows checked (bigint); `what` names the rows
/// and the condition in the detail.
async fn counted(
    db: &Client,
    name: &str,
    condition: &str,
    rows: &str,
    sql: &str,
) -> Result<InvariantResult, WorkloadError> {
    let row = db
        .query_one(sql, &[])
        .await
        .map_err(WorkloadError::db(format!("tpcc invariant {name}")))?;
    let (bad, example, checked): (i64, Option<String>, i64) = (row.get(0), row.get(1), row.get(2));
    let detail = match example {
        Some(e) if bad > 0 => {
            format!("{condition}: {bad} of {checked} {rows} violate it, e.g. {e}")
        }
        _ => format!("{condition}: holds for all {checked} {rows}"),
    };
    Ok(InvariantResult::count(name, bad as u64, detail))
}

/// Conditions 1 to 4; returns them and ORDER-LINE's row count.
async fn first_four(
    db: &Client,
    cfg: &Config,
) -> Result<(Vec<InvariantResult>, i64), WorkloadError> {
    let mut out = Vec::new();
    if cfg.warehouse_ytd {
        out.push(
            counted(
                db,
                "c1-warehouse-ytd",
                "W_YTD = sum(D_YTD) (3.3.2.1)",
                "warehouses",
                "SELECT count(*) FILTER (WHERE w.w_ytd <> d.s),
                        min(format('warehouse %s: W_YTD %s, sum(D_YTD) %s', w.w_id, w.w_ytd, d.s))
                            FILTER (WHERE w.w_ytd <> d.s),
                        count(*)
                   FROM warehouse w
                   LEFT JOIN (SELECT d_w_id, sum(d_ytd) s FROM district GROUP BY d_w_id) d
                     ON d.d_w_id = w.w_id",
            )
            .await?,
        );
    }
    out.push(
        counted(
            db,
            "c2-next-order-id",
            "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) (3.3.2.2)",
            "districts",
            "SELECT count(*) FILTER (WHERE bad), min(ex) FILTER (WHERE bad), count(*) FROM (
               SELECT o.m IS DISTINCT FROM d.d_next_o_id - 1
                      OR (n.m IS NOT NULL AND n.m <> d.d_next_o_id - 1) AS bad,
                      format('district (%s, %s): D_NEXT_O_ID - 1 = %s, max(O_ID) = %s, max(NO_O_ID) = %s',
                             d.d_w_id, d.d_id, d.d_next_o_id - 1, o.m, n.m) AS ex
                 FROM district d
                 CROSS JOIN LATERAL (SELECT max(o_id) m FROM orders
                                      WHERE o_w_id = d.d_w_id AND o_d_id = d.d_id) o
                 CROSS JOIN LATERAL (SELECT max(no_o_id) m FROM new_order
                                      WHERE no_w_id = d.d_w_id AND no_d_id = d.d_id) n) x",
        )
        .await?,
    );
    out.push(
        counted(
            db,
            "c3-new-order-range",
            "max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW-ORDER) per district (3.3.2.3)",
            "districts with new orders",
            "SELECT count(*) FILTER (WHERE bad), min(ex) FILTER (WHERE bad), count(*) FROM (
               SELECT max(no_o_id) - min(no_o_id) + 1 <> count(*) AS bad,
                      format('district (%s, %s): NO_O_ID %s to %s, %s rows',
                             no_w_id, no_d_id, min(no_o_id), max(no_o_id), count(*)) AS ex
                 FROM new_order GROUP BY no_w_id, no_d_id) x",
        )
        .await?,
    );
    let row = db
        .query_one(
            "SELECT count(*) FILTER (WHERE o.s IS DISTINCT FROM l.n),
                    min(format('district (%s, %s): sum(O_OL_CNT) %s, ORDER-LINE rows %s',
                               coalesce(o.w, l.w), coalesce(o.d, l.d), o.s, l.n))
                        FILTER (WHERE o.s IS DISTINCT FROM l.n),
                    count(*), coalesce(sum(l.n), 0)::bigint
               FROM (SELECT o_w_id w, o_d_id d, sum(o_ol_cnt) s FROM orders GROUP BY 1, 2) o
               FULL JOIN (SELECT ol_w_id w, ol_d_id d, count(*) n FROM order_line GROUP BY 1, 2) l
                 ON l.w = o.w AND l.d = o.d",
            &[],
        )
        .await
        .map_err(WorkloadError::db("tpcc invariant c4-order-line-count"))?;
    let (bad, example, checked, lines): (i64, Option<String>, i64, i64) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    let condition = "sum(O_OL_CNT) = count(ORDER-LINE) per district (3.3.2.4)";
    out.push(InvariantResult::count(
        "c4-order-line-count",
        bad as u64,
        match example {
            Some(e) if bad > 0 => {
                format!("{condition}: {bad} of {checked} districts violate it, e.g. {e}")
            }
            _ => format!("{condition}: holds for all {checked} districts"),
        },
    ));
    Ok((out, lines))
}

/// Conditions 5 to 10 and 12 (11 is [`against_clients`]).
async fn the_rest(db: &Client, cfg: &Config) -> Result<Vec<InvariantResult>, WorkloadError> {
    let mut out = vec![
        counted(
            db,
            "c5-carrier-new-order",
            "O_CARRIER_ID is null exactly for the orders in NEW-ORDER (3.3.2.5)",
            "orders",
            "SELECT count(*) FILTER (WHERE bad), min(ex) FILTER (WHERE bad), count(*) FROM (
               SELECT o.o_id IS NULL OR (o.o_carrier_id IS NULL) <> (n.no_o_id IS NOT NULL) AS bad,
                      format('order (%s, %s, %s): O_CARRIER_ID %s, %s NEW-ORDER row',
                             coalesce(o.o_w_id, n.no_w_id), coalesce(o.o_d_id, n.no_d_id),
                             coalesce(o.o_id, n.no_o_id), coalesce(o.o_carrier_id::text, 'null'),
                             CASE WHEN n.no_o_id IS NULL THEN 'no' ELSE 'a' END) AS ex
                 FROM orders o FULL JOIN new_order n
                   ON n.no_w_id = o.o_w_id AND n.no_d_id = o.o_d_id AND n.no_o_id = o.o_id) x",
        )
        .await?,
        counted(
            db,
            "c6-lines-per-order",
            "O_OL_CNT = the order's ORDER-LINE rows (3.3.2.6)",
            "orders",
            "SELECT count(*) FILTER (WHERE bad), min(ex) FILTER (WHERE bad), count(*) FROM (
               SELECT o.o_ol_cnt IS DISTINCT FROM l.n AS bad,
                      format('order (%s, %s, %s): O_OL_CNT %s, %s lines',
                             coalesce(o.o_w_id, l.w), coalesce(o.o_d_id, l.d), coalesce(o.o_id, l.o),
                             o.o_ol_cnt, coalesce(l.n, 0)) AS ex
                 FROM orders o FULL JOIN
                      (SELECT ol_w_id w, ol_d_id d, ol_o_id o, count(*) n FROM order_line GROUP BY 1, 2, 3) l
                   ON l.w = o.o_w_id AND l.d = o.o_d_id AND l.o = o.o_id) x",
        )
        .await?,
        counted(
            db,
            "c7-delivery-date",
            "OL_DELIVERY_D is null exactly when the order's O_CARRIER_ID is (3.3.2.7)",
            "order lines",
            "SELECT count(*) FILTER (WHERE bad), min(ex) FILTER (WHERE bad), count(*) FROM (
               SELECT (ol.ol_delivery_d IS NULL) <> (o.o_carrier_id IS NULL) AS bad,
                      format('line %s of order (%s, %s, %s): OL_DELIVERY_D %s, O_CARRIER_ID %s',
                             ol.ol_number, ol.ol_w_id, ol.ol_d_id, ol.ol_o_id,
                             coalesce(ol.ol_delivery_d::text, 'null'),
                             coalesce(o.o_carrier_id::text, 'null')) AS ex
                 FROM order_line ol JOIN orders o
                   ON o.o_w_id = ol.ol_w_id AND o.o_d_id = ol.ol_d_id AND o.o_id = ol.ol_o_id) x",
        )
        .await?,
    ];
    if cfg.warehouse_ytd {
        out.push(
            counted(
                db,
                "c8-warehouse-history",
                "W_YTD = sum(H_AMOUNT) of the warehouse's payments (3.3.2.8)",
                "warehouses",
                "SELECT count(*) FILTER (WHERE bad), min(ex) FILTER (WHERE bad), count(*) FROM (
                   SELECT w.w_ytd IS DISTINCT FROM h.s AS bad,
                          format('warehouse %s: W_YTD %s, sum(H_AMOUNT) %s', w.w_id, w.w_ytd, h.s) AS ex
                     FROM warehouse w
                     LEFT JOIN (SELECT h_w_id, sum(h_amount) s FROM history GROUP BY 1) h
                       ON h.h_w_id = w.w_id) x",
            )
            .await?,
        );
    }
    out.push(
        counted(
            db,
            "c9-district-history",
            "D_YTD = sum(H_AMOUNT) of the district's payments (3.3.2.9)",
            "districts",
            "SELECT count(*) FILTER (WHERE bad), min(ex) FILTER (WHERE bad), count(*) FROM (
               SELECT d.d_ytd IS DISTINCT FROM h.s AS bad,
                      format('district (%s, %s): D_YTD %s, sum(H_AMOUNT) %s', d.d_w_id, d.d_id, d.d_ytd, h.s) AS ex
                 FROM district d
                 LEFT JOIN (SELECT h_w_id, h_d_id, sum(h_amount) s FROM history GROUP BY 1, 2) h
                   ON h.h_w_id = d.d_w_id AND h.h_d_id = d.d_id) x",
        )
        .await?,
    );
    // 10 and 12 in one pass over CUSTOMER.
    let row = db
        .query_one(
            "WITH ol AS (SELECT o.o_w_id w, o.o_d_id d, o.o_c_id c, sum(ol.ol_amount) s
                           FROM orders o JOIN order_line ol
                             ON ol.ol_w_id = o.o_w_id AND ol.ol_d_id = o.o_d_id AND ol.ol_o_id = o.o_id
                          WHERE ol.ol_delivery_d IS NOT NULL GROUP BY 1, 2, 3),
                  h AS (SELECT h_c_w_id w, h_c_d_id d, h_c_id c, sum(h_amount) s FROM history GROUP BY 1, 2, 3),
                  x AS (SELECT c.c_w_id, c.c_d_id, c.c_id, c.c_balance, c.c_ytd_payment,
                               coalesce(ol.s, 0) delivered, coalesce(h.s, 0) paid
                          FROM customer c
                          LEFT JOIN ol ON ol.w = c.c_w_id AND ol.d = c.c_d_id AND ol.c = c.c_id
                          LEFT JOIN h ON h.w = c.c_w_id AND h.d = c.c_d_id AND h.c = c.c_id)
             SELECT count(*) FILTER (WHERE c_balance <> delivered - paid),
                    min(format('customer (%s, %s, %s): C_BALANCE %s, delivered %s - paid %s',
                               c_w_id, c_d_id, c_id, c_balance, delivered, paid))
                        FILTER (WHERE c_balance <> delivered - paid),
                    count(*) FILTER (WHERE c_balance + c_ytd_payment <> delivered),
                    min(format('customer (%s, %s, %s): C_BALANCE %s + C_YTD_PAYMENT %s, delivered %s',
                               c_w_id, c_d_id, c_id, c_balance, c_ytd_payment, delivered))
                        FILTER (WHERE c_balance + c_ytd_payment <> delivered),
                    count(*)
               FROM x",
            &[],
        )
        .await
        .map_err(WorkloadError::db("tpcc invariant c10/c12"))?;
    let checked: i64 = row.get(4);
    for (name, condition, bad, example) in [
        (
            "c10-customer-balance",
            "C_BALANCE = sum(OL_AMOUNT) of delivered lines - sum(H_AMOUNT) (3.3.2.10)",
            row.get::<_, i64>(0),
            row.get::<_, Option<String>>(1),
        ),
        (
            "c12-balance-plus-ytd",
            "C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT) of delivered lines (3.3.2.12)",
            row.get(2),
            row.get(3),
        ),
    ] {
        out.push(InvariantResult::count(
            name,
            bad as u64,
            match example {
                Some(e) if bad > 0 => {
                    format!("{condition}: {bad} of {checked} customers violate it, e.g. {e}")
                }
                _ => format!("{condition}: holds for all {checked} customers"),
            },
        ));
    }
    Ok(out)
}

/// `lo ..= lo + slack` as text: `5` or `5 to 7`.
fn range(lo: i64, slack: i64) -> String {
    if slack == 0 {
        lo.to_string()
    } else {
        format!("{lo} to {}", lo + slack)
    }
}

/// Condition 11 against the delivered orders, and the new orders and
/// payments against the clients' commits.
async fn against_clients(
    db: &Client,
    cfg: &Config,
    l: &TpccLedger,
) -> Result<Vec<InvariantResult>, WorkloadError> {
    let row = db
        .query_one(
            "SELECT (SELECT count(*) FROM orders)::bigint, (SELECT count(*) FROM new_order)::bigint,
                    (SELECT coalesce(sum(d_next_o_id), 0) FROM district)::bigint,
                    (SELECT count(*) FROM history)::bigint,
                    (SELECT coalesce((sum(h_amount) * 100)::bigint, 0) FROM history)",
            &[],
        )
        .await
        .map_err(WorkloadError::db("tpcc invariant: counts against the clients"))?;
    let (orders, new_orders, next_sum, history, cents): (i64, i64, i64, i64, i64) =
        (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
    let districts = cfg.warehouses * DISTRICTS;
    let customers = districts * CUSTOMERS_PER_DISTRICT;
    let within = |v: i64, lo: u64, slack: u64| v >= lo as i64 && v <= (lo + slack) as i64;

    let delivered = orders - new_orders - districts * (FIRST_UNDELIVERED - 1);
    let c11 = InvariantResult::check(
        "c11-delivered-orders",
        within(delivered, l.delivered, l.unknown_delivered),
        format!(
            "count(ORDER) - count(NEW-ORDER) = 2100 per district at load (3.3.2.11), plus the orders delivered since: \
             {orders} - {new_orders} - {} = {delivered}; committed Deliveries delivered {} ({} districts had nothing to deliver)",
            districts * (FIRST_UNDELIVERED - 1),
            range(l.delivered as i64, l.unknown_delivered as i64),
            l.skipped
        ),
    );
    let taken = next_sum - districts * (ORDERS_PER_DISTRICT + 1);
    let new = InvariantResult::check(
        "new-orders-match-commits",
        within(taken, l.new_orders, l.unknown_new_orders),
        format!(
            "order ids taken, sum(D_NEXT_O_ID - 3001) = {taken}; committed New-Orders {}",
            range(l.new_orders as i64, l.unknown_new_orders as i64)
        ),
    );
    let rows = history - customers;
    let paid = cents - customers * INITIAL_PAYMENT_CENTS;
    let paid_ok = paid >= l.payment_cents && paid <= l.payment_cents + l.unknown_payment_cents;
    let pay = InvariantResult::check(
        "payments-match-commits",
        within(rows, l.payments, l.unknown_payments) && paid_ok,
        format!(
            "HISTORY rows added {rows}, amounts {:.2}; committed Payments {}, amounts {:.2}{}",
            paid as f64 / 100.0,
            range(l.payments as i64, l.unknown_payments as i64),
            l.payment_cents as f64 / 100.0,
            if l.unknown_payments > 0 {
                format!(
                    " (+ up to {:.2} unknown)",
                    l.unknown_payment_cents as f64 / 100.0
                )
            } else {
                String::new()
            }
        ),
    );
    Ok(vec![c11, new, pay])
}

/// TPC-C++'s anomaly check (see the module docs).
async fn credit_check_skew(db: &Client) -> Result<InvariantResult, WorkloadError> {
    let row = db
        .query_one(
            "SELECT count(*),
                    min(format('customer (%s, %s, %s): Credit Check version %s set %s from balance %s + undelivered %s '
                               'seeing orders up to %s, without order %s, which New-Order placed after reading credit version %s',
                               k.cc_w_id, k.cc_d_id, k.cc_c_id, k.cc_version, k.cc_credit, k.cc_balance,
                               k.cc_new_order_balance, k.cc_max_o_id, o.o_id, o.o_credit_version)),
                    (SELECT count(*) FROM credit_check)
               FROM credit_check k JOIN orders o
                 ON o.o_w_id = k.cc_w_id AND o.o_d_id = k.cc_d_id AND o.o_c_id = k.cc_c_id
              WHERE o.o_credit_version < k.cc_version AND o.o_id > k.cc_max_o_id",
            &[],
        )
        .await
        .map_err(WorkloadError::db("tpcc invariant credit-check-skew"))?;
    let (bad, example, checks): (i64, Option<String>, i64) = (row.get(0), row.get(1), row.get(2));
    Ok(InvariantResult::count(
        "credit-check-skew",
        bad as u64,
        match example {
            Some(e) if bad > 0 => format!(
                "{bad} (New-Order, Credit Check) pairs missed each other's writes (write skew), e.g. {e}"
            ),
            _ => format!(
                "no New-Order and Credit Check missed each other's writes ({checks} Credit Checks committed)"
            ),
        },
    ))
}

/// Every check of a run (see the module docs). Errors: a query failed.
pub async fn check(
    db: &Client,
    cfg: &Config,
    ledger: &TpccLedger,
) -> Result<Vec<InvariantResult>, WorkloadError> {
    let (mut out, lines) = first_four(db, cfg).await?;
    let rest = match cfg.consistency {
        Consistency::All => true,
        Consistency::Quick => false,
        Consistency::Auto => lines <= AUTO_CHECK_ROWS,
    };
    if rest {
        out.extend(the_rest(db, cfg).await?);
    } else if let Some(c4) = out.last_mut() {
        c4.detail.push_str(&format!(
            "; conditions 5-10 and 12 not checked ({})",
            if cfg.consistency == Consistency::Quick {
                "--param consistency=quick".to_string()
            } else {
                format!(
                    "ORDER-LINE holds {lines} rows, over {AUTO_CHECK_ROWS}; --param consistency=all checks them"
                )
            }
        ));
    }
    out.extend(against_clients(db, cfg, ledger).await?);
    if cfg.plus {
        out.push(credit_check_skew(db).await?);
    }
    Ok(out)
}
