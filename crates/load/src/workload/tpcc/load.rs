//! Loading TPC-C's initial population (clause 4.3.3.1) with `COPY`.
//!
//! Rows are generated in groups (a district's customers, history, orders,
//! new orders and order lines; a warehouse's stock in blocks of 10,000
//! items; the items in blocks of 10,000), each from its own generator
//! (`rand::stream`), so the data is the same however the groups are
//! spread over connections. On more than 2 CPUs the warehouses are split
//! over up to 8 connections, one COPY stream each, and the indexes are
//! built in parallel, a table per connection; on 2 CPUs or fewer one
//! stream loads everything into tables created in the same transaction,
//! with `COPY ... FREEZE` (as `tpcb` does: there, two plain streams were
//! no faster than one frozen stream, BENCHMARKS.md "Loading"). Then
//! VACUUM ANALYZE, and the primary keys and secondary indexes.
//!
//! Deliberate differences from the specification: dates loaded
//! (`C_SINCE`, `H_DATE`, `O_ENTRY_D`, `OL_DELIVERY_D`) are one fixed
//! instant, [`LOAD_TIME`], not the time of loading, so that the same
//! parameters load the same rows; a-strings draw from 64 characters
//! (`rand::a_string`).

use bytes::{BufMut, BytesMut};
use rand::RngExt;
use rand::rngs::Xoshiro256PlusPlus;
use tokio_postgres::Client;

use super::rand::{
    CConstants, DATA_SEED, a_string, data_string, fixed_a_string, n_string, nurand,
    order_line_count, push_last_name, stream, zip,
};
use super::schema::{
    CUSTOMERS_PER_DISTRICT, DISTRICTS, FIRST_UNDELIVERED, INDEXES, ITEMS, ORDERS_PER_DISTRICT,
    create_tables,
};
use crate::workload::{Loader, WorkloadError, copy_rows, put_int};

/// The date and time of every loaded row (see the module docs).
pub const LOAD_TIME: &str = "2026-01-01 00:00:00";

/// Rows per generator block of ITEM and STOCK.
const BLOCK: i64 = 10_000;

/// Generator ids of the tables (`rand::stream`).
mod id {
    pub const ITEM: u64 = 1;
    pub const WAREHOUSE: u64 = 2;
    pub const DISTRICT: u64 = 3;
    pub const CUSTOMER: u64 = 4;
    pub const HISTORY: u64 = 5;
    pub const ORDERS: u64 = 6;
    pub const ORDER_LINE: u64 = 7;
    pub const STOCK: u64 = 8;
}

/// Appends `\t`.
fn tab(b: &mut BytesMut) {
    b.put_u8(b'\t');
}

/// Appends `cents` as a decimal with two places (`-10.00`, `0.05`).
fn put_money(b: &mut BytesMut, cents: i64) {
    if cents < 0 {
        b.put_u8(b'-');
    }
    let c = cents.unsigned_abs();
    put_int(b, (c / 100) as i64);
    b.put_u8(b'.');
    b.put_u8(b'0' + (c / 10 % 10) as u8);
    b.put_u8(b'0' + (c % 10) as u8);
}

/// Appends `0.dddd` for `ten_thousandths` in `0 ..= 9999`.
fn put_rate(b: &mut BytesMut, ten_thousandths: i64) {
    b.put_slice(b"0.");
    let s = format!("{ten_thousandths:04}");
    b.put_slice(s.as_bytes());
}

/// Appends two random upper-case letters (a state).
fn put_state(rng: &mut Xoshiro256PlusPlus, b: &mut BytesMut) {
    for _ in 0..2 {
        b.put_u8(b'A' + rng.random_range(0..26u8));
    }
}

/// Name, two streets, city, state and zip of a warehouse or district
/// (clause 4.3.3.1), tab-separated, with a leading tab.
fn put_address(rng: &mut Xoshiro256PlusPlus, b: &mut BytesMut, name: bool) {
    if name {
        tab(b);
        a_string(rng, 6, 10, b);
    }
    for _ in 0..3 {
        tab(b);
        a_string(rng, 10, 20, b);
    }
    tab(b);
    put_state(rng, b);
    tab(b);
    zip(rng, b);
}

/// What one connection loads: ITEM or not, and warehouses `ws`.
struct Share {
    items: bool,
    ws: std::ops::RangeInclusive<i64>,
    freeze: bool,
}

impl Share {
    fn copy(&self, table: &str, columns: &str) -> String {
        let with = if self.freeze { " WITH (FREEZE ON)" } else { "" };
        format!("COPY {table} ({columns}) FROM STDIN{with}")
    }

    /// Districts of `ws` as groups: group `g` is warehouse
    /// `start + g / 10`, district `g % 10 + 1`.
    fn district(&self, g: i64) -> (i64, i64) {
        (
            self.ws.start() + (g - 1) / DISTRICTS,
            (g - 1) % DISTRICTS + 1,
        )
    }

    fn warehouses(&self) -> i64 {
        self.ws.end() - self.ws.start() + 1
    }

    /// Copies this share's rows on `db`; returns the rows copied.
    async fn load(&self, db: &Client, c_load: &CConstants) -> Result<u64, WorkloadError> {
        let mut rows = 0;
        if self.items {
            rows += self.item_rows(db).await?;
        }
        if self.ws.is_empty() {
            return Ok(rows);
        }
        rows += self.warehouse(db).await?;
        rows += self.district_rows(db).await?;
        rows += self.customers(db, c_load).await?;
        rows += self.history(db).await?;
        rows += self.orders(db).await?;
        rows += self.new_orders(db).await?;
        rows += self.order_lines(db).await?;
        rows += self.stock(db).await?;
        Ok(rows)
    }

    async fn item_rows(&self, db: &Client) -> Result<u64, WorkloadError> {
        let sql = self.copy("item", "i_id, i_im_id, i_name, i_price, i_data");
        copy_rows(db, &sql, ITEMS / BLOCK, |b, block| {
            let mut rng = stream(id::ITEM, 0, block);
            for i in (block - 1) * BLOCK + 1..=block * BLOCK {
                put_int(b, i);
                tab(b);
                put_int(b, rng.random_range(1..=10_000));
                tab(b);
                a_string(&mut rng, 14, 24, b);
                tab(b);
                put_money(b, rng.random_range(100..=10_000));
                tab(b);
                data_string(&mut rng, 26, 50, b);
                b.put_u8(b'\n');
            }
        })
        .await
    }

    async fn warehouse(&self, db: &Client) -> Result<u64, WorkloadError> {
        let sql = self.copy(
            "warehouse",
            "w_id, w_name, w_street_1, w_street_2, w_city, w_state, w_zip, w_tax, w_ytd",
        );
        let first = *self.ws.start();
        copy_rows(db, &sql, self.warehouses(), |b, g| {
            let w = first + g - 1;
            let mut rng = stream(id::WAREHOUSE, w, 0);
            put_int(b, w);
            put_address(&mut rng, b, true);
            tab(b);
            put_rate(b, rng.random_range(0..=2_000));
            b.put_slice(b"\t300000.00\n");
        })
        .await
    }

    async fn district_rows(&self, db: &Client) -> Result<u64, WorkloadError> {
        let sql = self.copy(
            "district",
            "d_id, d_w_id, d_name, d_street_1, d_street_2, d_city, d_state, d_zip, d_tax, d_ytd, d_next_o_id",
        );
        copy_rows(db, &sql, self.warehouses() * DISTRICTS, |b, g| {
            let (w, d) = self.district(g);
            let mut rng = stream(id::DISTRICT, w, d);
            put_int(b, d);
            tab(b);
            put_int(b, w);
            put_address(&mut rng, b, true);
            tab(b);
            put_rate(b, rng.random_range(0..=2_000));
            b.put_slice(b"\t30000.00\t");
            put_int(b, ORDERS_PER_DISTRICT + 1);
            b.put_u8(b'\n');
        })
        .await
    }

    /// A district's 3,000 customers: last names by number for the first
    /// 1,000 (0 ..= 999 in turn), by NURand(255, 0, 999) with `C_LOAD`
    /// for the rest; 10 % with bad credit ("BC").
    async fn customers(&self, db: &Client, c_load: &CConstants) -> Result<u64, WorkloadError> {
        let sql = self.copy(
            "customer",
            "c_id, c_d_id, c_w_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, \
             c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance, \
             c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_data",
        );
        let mut last = String::with_capacity(16);
        copy_rows(db, &sql, self.warehouses() * DISTRICTS, |b, g| {
            let (w, d) = self.district(g);
            let mut rng = stream(id::CUSTOMER, w, d);
            for c in 1..=CUSTOMERS_PER_DISTRICT {
                put_int(b, c);
                tab(b);
                put_int(b, d);
                tab(b);
                put_int(b, w);
                tab(b);
                a_string(&mut rng, 8, 16, b);
                b.put_slice(b"\tOE\t");
                let n = if c <= 1_000 {
                    c - 1
                } else {
                    nurand(&mut rng, 255, 0, 999, c_load.c_last)
                };
                last.clear();
                push_last_name(n, &mut last);
                b.put_slice(last.as_bytes());
                put_address(&mut rng, b, false);
                tab(b);
                n_string(&mut rng, 16, b);
                tab(b);
                b.put_slice(LOAD_TIME.as_bytes());
                b.put_slice(if rng.random_range(0..10) == 0 {
                    b"\tBC\t50000.00\t"
                } else {
                    b"\tGC\t50000.00\t"
                });
                put_rate(b, rng.random_range(0..=5_000));
                b.put_slice(b"\t-10.00\t10.00\t1\t0\t");
                a_string(&mut rng, 300, 500, b);
                b.put_u8(b'\n');
            }
        })
        .await
    }

    async fn history(&self, db: &Client) -> Result<u64, WorkloadError> {
        let sql = self.copy(
            "history",
            "h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data",
        );
        copy_rows(db, &sql, self.warehouses() * DISTRICTS, |b, g| {
            let (w, d) = self.district(g);
            let mut rng = stream(id::HISTORY, w, d);
            for c in 1..=CUSTOMERS_PER_DISTRICT {
                put_int(b, c);
                for v in [d, w, d, w] {
                    tab(b);
                    put_int(b, v);
                }
                tab(b);
                b.put_slice(LOAD_TIME.as_bytes());
                b.put_slice(b"\t10.00\t");
                a_string(&mut rng, 12, 24, b);
                b.put_u8(b'\n');
            }
        })
        .await
    }

    /// A district's 3,000 orders: customers in a random permutation, the
    /// first 2,100 delivered (a carrier 1 ..= 10), 5 ..= 15 lines each.
    async fn orders(&self, db: &Client) -> Result<u64, WorkloadError> {
        let sql = self.copy(
            "orders",
            "o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local",
        );
        let mut customers: Vec<i64> = Vec::with_capacity(CUSTOMERS_PER_DISTRICT as usize);
        copy_rows(db, &sql, self.warehouses() * DISTRICTS, |b, g| {
            let (w, d) = self.district(g);
            let mut rng = stream(id::ORDERS, w, d);
            customers.clear();
            customers.extend(1..=CUSTOMERS_PER_DISTRICT);
            // Fisher-Yates.
            for i in (1..customers.len()).rev() {
                customers.swap(i, rng.random_range(0..=i));
            }
            for o in 1..=ORDERS_PER_DISTRICT {
                for v in [o, d, w, customers[(o - 1) as usize]] {
                    put_int(b, v);
                    tab(b);
                }
                b.put_slice(LOAD_TIME.as_bytes());
                tab(b);
                if o < FIRST_UNDELIVERED {
                    put_int(b, rng.random_range(1..=10));
                } else {
                    b.put_slice(b"\\N");
                }
                tab(b);
                put_int(b, order_line_count(w, d, o));
                b.put_slice(b"\t1\n");
            }
        })
        .await
    }

    async fn new_orders(&self, db: &Client) -> Result<u64, WorkloadError> {
        let sql = self.copy("new_order", "no_o_id, no_d_id, no_w_id");
        copy_rows(db, &sql, self.warehouses() * DISTRICTS, |b, g| {
            let (w, d) = self.district(g);
            for o in FIRST_UNDELIVERED..=ORDERS_PER_DISTRICT {
                put_int(b, o);
                tab(b);
                put_int(b, d);
                tab(b);
                put_int(b, w);
                b.put_u8(b'\n');
            }
        })
        .await
    }

    /// The lines of a district's orders: random items of the home
    /// warehouse, quantity 5; delivered orders' lines dated and free,
    /// the others' amounts random within 0.01 ..= 9,999.99.
    async fn order_lines(&self, db: &Client) -> Result<u64, WorkloadError> {
        let sql = self.copy(
            "order_line",
            "ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, \
             ol_quantity, ol_amount, ol_dist_info",
        );
        copy_rows(db, &sql, self.warehouses() * DISTRICTS, |b, g| {
            let (w, d) = self.district(g);
            let mut rng = stream(id::ORDER_LINE, w, d);
            for o in 1..=ORDERS_PER_DISTRICT {
                let delivered = o < FIRST_UNDELIVERED;
                for n in 1..=order_line_count(w, d, o) {
                    for v in [o, d, w, n, rng.random_range(1..=ITEMS), w] {
                        put_int(b, v);
                        tab(b);
                    }
                    if delivered {
                        b.put_slice(LOAD_TIME.as_bytes());
                        b.put_slice(b"\t5\t0.00\t");
                    } else {
                        b.put_slice(b"\\N\t5\t");
                        put_money(b, rng.random_range(1..=999_999));
                        tab(b);
                    }
                    fixed_a_string(&mut rng, 24, b);
                    b.put_u8(b'\n');
                }
            }
        })
        .await
    }

    async fn stock(&self, db: &Client) -> Result<u64, WorkloadError> {
        let sql = self.copy(
            "stock",
            "s_i_id, s_w_id, s_quantity, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, \
             s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10, s_ytd, s_order_cnt, \
             s_remote_cnt, s_data",
        );
        let blocks = ITEMS / BLOCK;
        let first = *self.ws.start();
        copy_rows(db, &sql, self.warehouses() * blocks, |b, g| {
            let w = first + (g - 1) / blocks;
            let block = (g - 1) % blocks + 1;
            let mut rng = stream(id::STOCK, w, block);
            for i in (block - 1) * BLOCK + 1..=block * BLOCK {
                put_int(b, i);
                tab(b);
                put_int(b, w);
                tab(b);
                put_int(b, rng.random_range(10..=100));
                for _ in 0..10 {
                    tab(b);
                    fixed_a_string(&mut rng, 24, b);
                }
                b.put_slice(b"\t0\t0\t0\t");
                data_string(&mut rng, 26, 50, b);
                b.put_u8(b'\n');
            }
        })
        .await
    }
}

/// Parallel streams for `warehouses` warehouses: one on 2 CPUs or fewer
/// (see the module docs), else one per warehouse up to the CPU count
/// and 8.
fn streams(warehouses: i64) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus <= 2 {
        return 1;
    }
    (warehouses as usize).clamp(1, cpus.min(8))
}

/// What [`load_timed`] did: rows copied, COPY streams, and the seconds
/// each phase took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadTimes {
    pub rows: u64,
    pub streams: usize,
    /// Creating the tables and copying every row, s.
    pub copy_s: f64,
    /// `VACUUM ANALYZE`, s.
    pub vacuum_s: f64,
    /// Primary keys and indexes, s.
    pub index_s: f64,
}

/// Creates the tables and loads `warehouses` warehouses into the empty
/// database of `db`; `plus`: TPC-C++'s schema. Returns the rows copied.
/// Errors: a statement failed, naming it.
pub async fn load(db: &Loader, warehouses: i64, plus: bool) -> Result<u64, WorkloadError> {
    Ok(load_timed(db, warehouses, plus).await?.rows)
}

/// [`load`], with the time of each phase (`bench/load_tpcc.rs`).
pub async fn load_timed(
    db: &Loader,
    warehouses: i64,
    plus: bool,
) -> Result<LoadTimes, WorkloadError> {
    let t0 = std::time::Instant::now();
    let phase = |what: &str| {
        let at = t0.elapsed().as_secs_f64();
        tracing::debug!("tpcc load: {what} done at {at:.2} s");
        at
    };
    let c_load = CConstants::load(DATA_SEED);
    let n = streams(warehouses);
    let mut rows = 0;
    let mut conns = Vec::new();
    if n == 1 {
        // Tables created in the loading transaction: COPY FREEZE.
        db.batch_execute(&format!("BEGIN; {}", create_tables(plus)))
            .await
            .map_err(WorkloadError::db("create tpcc tables"))?;
        let all = Share {
            items: true,
            ws: 1..=warehouses,
            freeze: true,
        };
        rows += all.load(db, &c_load).await?;
        db.batch_execute("COMMIT")
            .await
            .map_err(WorkloadError::db("commit tpcc load"))?;
    } else {
        db.batch_execute(&create_tables(plus))
            .await
            .map_err(WorkloadError::db("create tpcc tables"))?;
        for _ in 1..n {
            conns.push(db.connect().await?);
        }
        let shares: Vec<Share> = crate::workload::tpcb::split_range(warehouses, n)
            .into_iter()
            .enumerate()
            .map(|(k, ws)| Share {
                items: k == 0,
                ws,
                freeze: false,
            })
            .collect();
        let loads = shares.iter().enumerate().map(|(k, s)| {
            let conn: &Client = if k == 0 { db } else { &conns[k - 1] };
            s.load(conn, &c_load)
        });
        for r in futures_util::future::try_join_all(loads).await? {
            rows += r;
        }
    }
    let copied = phase(&format!("copy ({n} streams)"));
    db.batch_execute("VACUUM ANALYZE")
        .await
        .map_err(WorkloadError::db("VACUUM ANALYZE"))?;
    let vacuumed = phase("vacuum analyze");
    build_indexes(db, &conns, warehouses, plus).await?;
    let indexed = phase("indexes");
    Ok(LoadTimes {
        rows,
        streams: n,
        copy_s: copied,
        vacuum_s: vacuumed - copied,
        index_s: indexed - vacuumed,
    })
}

/// ORDER-LINE rows expected at `warehouses` warehouses (10 lines per
/// order on average): what the index builds' memory is sized for.
fn order_lines(warehouses: i64) -> i64 {
    warehouses * DISTRICTS * ORDERS_PER_DISTRICT * 10
}

/// The `maintenance_work_mem` (kB) the loader sets for the index builds
/// at `warehouses` warehouses when the server's is lower.
pub fn index_memory_kb(warehouses: i64) -> i64 {
    crate::workload::tpcb::index_sort_kb(order_lines(warehouses))
}

/// The primary keys and indexes, a table per connection when there are
/// several (`db` and `more`), with `maintenance_work_mem` raised for the
/// session to sort ORDER-LINE's key in memory.
async fn build_indexes(
    db: &Loader,
    more: &[Client],
    warehouses: i64,
    plus: bool,
) -> Result<(), WorkloadError> {
    let mut statements: Vec<&str> = INDEXES.to_vec();
    if plus {
        statements.push(super::schema::CREDIT_CHECK_INDEX);
    }
    let conns: Vec<&Client> = std::iter::once(&**db).chain(more.iter()).collect();
    let mut raised = Vec::new();
    for c in &conns {
        raised.push(crate::workload::tpcb::raise_index_memory(c, order_lines(warehouses)).await?);
    }
    // A table's statements on one connection, tables round-robin.
    let table = |sql: &str| {
        sql.split_whitespace()
            .nth(if sql.starts_with("ALTER") { 2 } else { 4 })
            .unwrap_or("")
            .to_string()
    };
    let mut tables: Vec<String> = Vec::new();
    for s in &statements {
        let t = table(s);
        if !tables.contains(&t) {
            tables.push(t);
        }
    }
    let jobs = conns.iter().enumerate().map(|(k, c)| {
        let mine: Vec<&str> = statements
            .iter()
            .copied()
            .filter(|s| tables.iter().position(|t| *t == table(s)).unwrap_or(0) % conns.len() == k)
            .collect();
        async move {
            for sql in mine {
                c.batch_execute(sql).await.map_err(WorkloadError::db(sql))?;
            }
            Ok::<(), WorkloadError>(())
        }
    });
    futures_util::future::try_join_all(jobs).await?;
    for (c, raised) in conns.iter().zip(raised) {
        if raised {
            c.batch_execute("RESET maintenance_work_mem")
                .await
                .map_err(WorkloadError::db("RESET maintenance_work_mem"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_and_rates_are_formatted_for_copy() {
        let mut b = BytesMut::new();
        for (cents, text) in [
            (-1_000, "-10.00"),
            (5, "0.05"),
            (999_999, "9999.99"),
            (0, "0.00"),
        ] {
            b.clear();
            put_money(&mut b, cents);
            assert_eq!(&b[..], text.as_bytes());
        }
        b.clear();
        put_rate(&mut b, 7);
        assert_eq!(&b[..], b"0.0007");
    }

    #[test]
    fn district_groups_cover_the_share() {
        let s = Share {
            items: false,
            ws: 3..=4,
            freeze: false,
        };
        let groups: Vec<(i64, i64)> = (1..=20).map(|g| s.district(g)).collect();
        assert_eq!(groups[0], (3, 1));
        assert_eq!(groups[9], (3, 10));
        assert_eq!(groups[10], (4, 1));
        assert_eq!(groups[19], (4, 10));
    }
}
