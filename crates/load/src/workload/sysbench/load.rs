//! sysbench's tables and data (`oltp_common.lua`'s `create_table` for
//! the pgsql driver), generated deterministically.
//!
//! `sbtest<N>(id SERIAL | INTEGER NOT NULL, k INTEGER DEFAULT '0' NOT
//! NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT
//! NULL, PRIMARY KEY (id))` and, with `create_secondary`, `CREATE INDEX
//! k_<N> ON sbtest<N>(k)`. Row `i` (1-based) has `id = i`, `k` drawn from
//! the run's `rand-type` over `1 ..= table_size` (sysbench's
//! `sb_rand(1, table_size)`, the default distribution), `c` ten groups of
//! eleven random digits joined by `-` (119 characters), `pad` five (59).
//!
//! sysbench inserts the rows in batches after creating the primary key;
//! isobench copies them and adds the keys after (the same rows and
//! indexes), then sets the SERIAL's sequence past the last id, where
//! sysbench's inserts left it. `k` and `c`/`pad` come from separate
//! seeded streams per table, so the checks can recompute Σ k without
//! redrawing the strings.

use bytes::BufMut;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, RngExt, SeedableRng};
use tokio_postgres::Client;

use crate::workload::dist::SysbenchRand;
use crate::workload::{WorkloadError, copy_rows, put_int};

const DATA_SEED: u64 = 0x5eed_5b00;

/// Characters of `c` and `pad`: 10 and 5 groups of 11 digits, `-` between.
pub const C_LEN: usize = 119;
pub const PAD_LEN: usize = 59;

/// Fills `out` with sysbench's template of groups of 11 random digits
/// separated by `-` (`sysbench.rand.string("###########-...")`).
pub fn digit_groups<R: Rng + ?Sized>(rng: &mut R, out: &mut [u8]) {
    let mut bits = 0u64;
    let mut left = 0;
    for (i, b) in out.iter_mut().enumerate() {
        if i % 12 == 11 {
            *b = b'-';
            continue;
        }
        if left == 0 {
            bits = rng.random();
            left = 18;
        }
        *b = b'0' + (bits % 10) as u8;
        bits /= 10;
        left -= 1;
    }
}

/// The stream of table `table`'s `k` values.
fn k_stream(table: u32) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(DATA_SEED ^ (u64::from(table) << 1))
}

/// The stream of table `table`'s `c` and `pad` values.
fn text_stream(table: u32) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(DATA_SEED ^ ((u64::from(table) << 1) | 1))
}

/// What the loader writes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Data {
    pub tables: u32,
    /// Rows per table (0: empty tables, as `oltp_insert` prepares them
    /// without `auto_inc`).
    pub rows: u32,
    /// `id` is `SERIAL` (sysbench's `auto_inc`, its default) or `INTEGER`.
    pub auto_inc: bool,
    pub create_secondary: bool,
    /// The distribution of `k`, over `1 ..= k_max`.
    pub rand: SysbenchRand,
    pub k_max: u32,
}

impl Data {
    pub fn ddl(&self, table: u32) -> String {
        let id = if self.auto_inc {
            "SERIAL"
        } else {
            "INTEGER NOT NULL"
        };
        format!(
            "CREATE TABLE sbtest{table}(\n  id {id},\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL\n)"
        )
    }

    /// Σ k over every table as loaded.
    pub fn k_sum(&self) -> i64 {
        (1..=self.tables)
            .map(|t| {
                let mut rng = k_stream(t);
                (0..self.rows)
                    .map(|_| i64::from(self.rand.sample(&mut rng, 1, self.k_max)))
                    .sum::<i64>()
            })
            .sum()
    }

    /// Creates and fills table `table`; returns its rows. Errors: a
    /// statement failed, named.
    pub async fn load_table(&self, db: &Client, table: u32) -> Result<u64, WorkloadError> {
        db.batch_execute(&self.ddl(table))
            .await
            .map_err(WorkloadError::db(format!("create sbtest{table}")))?;
        let (mut ks, mut texts) = (k_stream(table), text_stream(table));
        let mut c = [0u8; C_LEN];
        let mut pad = [0u8; PAD_LEN];
        let sql = format!("COPY sbtest{table} (id, k, c, pad) FROM STDIN");
        let rows = copy_rows(db, &sql, i64::from(self.rows), |b, i| {
            put_int(b, i);
            b.put_u8(b'\t');
            put_int(b, i64::from(self.rand.sample(&mut ks, 1, self.k_max)));
            digit_groups(&mut texts, &mut c);
            digit_groups(&mut texts, &mut pad);
            b.put_u8(b'\t');
            b.put_slice(&c);
            b.put_u8(b'\t');
            b.put_slice(&pad);
            b.put_u8(b'\n');
        })
        .await?;
        let mut sql = format!("ALTER TABLE sbtest{table} ADD PRIMARY KEY (id);");
        if self.auto_inc && self.rows > 0 {
            sql.push_str(&format!(
                "SELECT setval('sbtest{table}_id_seq', {});",
                self.rows
            ));
        }
        if self.create_secondary {
            sql.push_str(&format!("CREATE INDEX k_{table} ON sbtest{table}(k);"));
        }
        db.batch_execute(&sql)
            .await
            .map_err(WorkloadError::db(format!("index sbtest{table}")))?;
        Ok(rows)
    }
}

/// The unique ids of `oltp_insert` without `auto_inc`
/// (`sysbench.rand.unique() - 2147483648`): a permutation of the 32-bit
/// integers (Preshing's quadratic residues modulo the prime 2^32 - 5,
/// which sysbench's `sb_rand_unique` uses), so distinct indexes give
/// distinct ids. sysbench walks one shared index; isobench gives each
/// client its own range of indexes (`client << 22`), unique across the
/// clients of a sharded run too.
pub fn unique_id(index: u32) -> i32 {
    fn permute(x: u32) -> u32 {
        const PRIME: u32 = 4_294_967_291;
        if x >= PRIME {
            return x;
        }
        let r = ((u64::from(x) * u64::from(x)) % u64::from(PRIME)) as u32;
        if x <= PRIME / 2 { r } else { PRIME - r }
    }
    const OFFSET: u32 = 0x4679_0905;
    let v = permute((permute(index).wrapping_add(OFFSET)) ^ 0x5bf0_3635);
    (i64::from(v) - 2_147_483_648) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_and_pad_follow_sysbenchs_template() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut c = [0u8; C_LEN];
        digit_groups(&mut rng, &mut c);
        let s = std::str::from_utf8(&c).unwrap();
        let groups: Vec<&str> = s.split('-').collect();
        assert_eq!(groups.len(), 10);
        assert!(
            groups
                .iter()
                .all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit()))
        );
        let mut pad = [0u8; PAD_LEN];
        digit_groups(&mut rng, &mut pad);
        assert_eq!(std::str::from_utf8(&pad).unwrap().split('-').count(), 5);
        // Digits are uniform: each of 0-9 near 10 % over many strings.
        let mut counts = [0u32; 10];
        for _ in 0..1000 {
            digit_groups(&mut rng, &mut c);
            for &b in c.iter().filter(|b| b.is_ascii_digit()) {
                counts[(b - b'0') as usize] += 1;
            }
        }
        let total: u32 = counts.iter().sum();
        assert!(
            counts
                .iter()
                .all(|&n| (n as f64 / total as f64 - 0.1).abs() < 0.005),
            "{counts:?}"
        );
    }

    #[test]
    fn unique_ids_do_not_repeat() {
        let mut seen = std::collections::HashSet::new();
        for client in 0..4u32 {
            for i in 0..5000u32 {
                assert!(seen.insert(unique_id((client << 22) | i)));
            }
        }
    }

    #[test]
    fn tables_are_sysbenchs() {
        let d = Data {
            tables: 2,
            rows: 100,
            auto_inc: true,
            create_secondary: true,
            rand: SysbenchRand::DEFAULT,
            k_max: 100,
        };
        assert_eq!(
            d.ddl(3),
            "CREATE TABLE sbtest3(\n  id SERIAL,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL\n)"
        );
        let plain = Data {
            auto_inc: false,
            ..d
        };
        assert!(plain.ddl(1).contains("id INTEGER NOT NULL,"));
        // Special over 1..=100: Σ k of 200 rows near 200 x 50.5, and
        // another distribution loads other k.
        let sum = d.k_sum();
        assert!((9_000..11_300).contains(&sum), "{sum}");
        assert_ne!(
            sum,
            Data {
                rand: SysbenchRand::Uniform,
                ..d
            }
            .k_sum()
        );
    }
}
