//! The shape of a list-append study's tables and statements: the
//! parameters a bug hunter varies to narrow a race (where fresh keys land
//! in the index, how an append upserts, which index a read goes through,
//! point reads or range scans), and the SQL each gives, prepared for the
//! clients and with literal values for a violation's evidence and replay.
//!
//! Jepsen's PostgreSQL tables (its list-append test, 2020 and 2026) have a
//! primary key `k`, a secondary key `sk` equal to it, and the list `v`;
//! appends are `INSERT ... ON CONFLICT DO UPDATE`. The variants here keep
//! that table and change one thing each.

use std::collections::BTreeMap;

use crate::model::Isolation;

/// Where a transaction's fresh keys land in the key order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOrder {
    /// Keys grow: every new key is at the right edge of the B-tree.
    Ascending,
    /// Keys are the window's positions scrambled over 2^40: a new key
    /// lands anywhere in the index.
    Random,
}

/// How an append writes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upsert {
    /// `INSERT ... ON CONFLICT (k) DO UPDATE SET v = v || x` (Jepsen's).
    OnConflict,
    /// `SELECT` the key, then `UPDATE` it or `INSERT` it: two statements,
    /// a unique violation when two transactions create a key at once.
    SelectInsert,
    /// `MERGE INTO ... WHEN MATCHED THEN UPDATE ... WHEN NOT MATCHED THEN
    /// INSERT` (PostgreSQL 15 and later).
    Merge,
}

/// Which column a read looks the key up by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadBy {
    /// The primary key `k`.
    Pk,
    /// Jepsen's secondary key `sk` (always equal to `k`), through its own
    /// index.
    Secondary,
}

/// The kind of the index the reads go through besides the primary key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    Btree,
    Hash,
}

/// Point reads of one key, or range scans of a few.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    Point,
    /// `WHERE k BETWEEN lo AND hi`: a predicate read, whose SIRead locks
    /// cover the gaps between keys.
    Range,
}

/// Every choice that shapes the tables and the statements.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// Registers (Elle's rw-register, the `rw-register` workload: `v` is
    /// one value, written whole) instead of lists.
    pub register: bool,
    pub tables: u64,
    pub key_order: KeyOrder,
    pub upsert: Upsert,
    pub read_by: ReadBy,
    pub index: IndexKind,
    /// Table and index fillfactor, %; 100 leaves it at PostgreSQL's
    /// default (100 for tables, 90 for B-tree indexes).
    pub fillfactor: u32,
    pub reads: Reads,
    /// Keys a range scan spans (in key order), from its first.
    pub range_width: u64,
    /// `SELECT ... FOR UPDATE` on reads (the `locking` strategy).
    pub locking: bool,
    /// Declared read-only transactions are `READ ONLY DEFERRABLE`.
    pub deferrable: bool,
}

/// The parameters [`Shape::from_params`] reads, with their defaults, for
/// the workload's spec.
pub const CHOICES: [(&str, &[&str]); 5] = [
    ("key-order", &["ascending", "random"]),
    ("upsert", &["on-conflict", "select-insert", "merge"]),
    ("read", &["pk", "secondary"]),
    ("index", &["btree", "hash"]),
    ("reads", &["point", "range"]),
];

impl Shape {
    /// The shape of `params` (the workload's resolved parameters) under
    /// `strategy`. Errors: a value that is not one of its choices, named
    /// with the choices.
    pub fn from_params(params: &BTreeMap<String, String>, strategy: &str) -> Result<Shape, String> {
        Shape::for_workload("list-append", params, strategy)
    }

    /// The shape of `workload`'s (`list-append` or `rw-register`)
    /// parameters ([`Shape::from_params`]).
    pub fn for_workload(
        workload: &str,
        params: &BTreeMap<String, String>,
        strategy: &str,
    ) -> Result<Shape, String> {
        let choice = |name: &str| -> Result<usize, String> {
            let (_, choices) = CHOICES
                .iter()
                .find(|(n, _)| *n == name)
                .expect("a known choice");
            let v = params.get(name).map_or(choices[0], |v| v.trim());
            choices.iter().position(|c| *c == v).ok_or_else(|| {
                format!("--param {name}={v}: expected one of {}", choices.join(", "))
            })
        };
        let int = |name: &str, default: u64, range: std::ops::RangeInclusive<u64>| {
            let v = params
                .get(name)
                .map_or(Ok(default), |v| v.trim().parse::<u64>());
            match v {
                Ok(v) if range.contains(&v) => Ok(v),
                _ => Err(format!(
                    "--param {name}={}: expected an integer from {} to {}",
                    params.get(name).map_or("", |s| s.as_str()),
                    range.start(),
                    range.end()
                )),
            }
        };
        Ok(Shape {
            register: workload == "rw-register",
            tables: int("tables", 1, 1..=100)?,
            key_order: [KeyOrder::Ascending, KeyOrder::Random][choice("key-order")?],
            upsert: [Upsert::OnConflict, Upsert::SelectInsert, Upsert::Merge][choice("upsert")?],
            read_by: [ReadBy::Pk, ReadBy::Secondary][choice("read")?],
            index: [IndexKind::Btree, IndexKind::Hash][choice("index")?],
            fillfactor: int("fillfactor", 100, 10..=100)? as u32,
            reads: [Reads::Point, Reads::Range][choice("reads")?],
            range_width: int("range-width", 4, 1..=1000)?,
            locking: strategy == "locking",
            deferrable: params
                .get("deferrable")
                .is_some_and(|v| matches!(v.trim(), "true" | "yes" | "on" | "1")),
        })
    }

    /// What distinguishes the loaded data (tables and indexes): the
    /// template database's key.
    pub fn data_key(&self) -> String {
        format!(
            "{}tables={} read={} index={} fillfactor={}",
            if self.register { "registers " } else { "" },
            self.tables,
            self.read_col(),
            match self.index {
                IndexKind::Btree => "btree",
                IndexKind::Hash => "hash",
            },
            self.fillfactor
        )
    }

    /// The table of `key`.
    pub fn table(&self, key: u64) -> u64 {
        key % self.tables
    }

    /// Table `t`'s name: `la_<t>`, or `reg_<t>` for registers.
    pub fn table_name(&self, t: u64) -> String {
        if self.register {
            format!("reg_{t}")
        } else {
            format!("la_{t}")
        }
    }

    /// The statement that gives `key` the state `values` (a list, or a
    /// register's last value) in a replay's setup; `None` for no row.
    pub fn insert_sql(&self, key: u64, values: &[u64]) -> Option<String> {
        let v = if self.register {
            values.last()?.to_string()
        } else if values.is_empty() {
            return None;
        } else {
            // ARRAY[...], not '{...}': a brace would end an isolation
            // spec's block.
            let list: Vec<String> = values.iter().map(u64::to_string).collect();
            format!("ARRAY[{}]::bigint[]", list.join(","))
        };
        Some(format!(
            "INSERT INTO {} (k, sk, v) VALUES ({key}, {key}, {v})",
            self.table_name(self.table(key))
        ))
    }

    /// The key at position `logical` of the ever-moving window.
    pub fn key(&self, logical: u64) -> u64 {
        match self.key_order {
            KeyOrder::Ascending => logical,
            KeyOrder::Random => scramble(logical),
        }
    }

    fn read_col(&self) -> &'static str {
        match self.read_by {
            ReadBy::Pk => "k",
            ReadBy::Secondary => "sk",
        }
    }

    fn with(&self) -> String {
        if self.fillfactor == 100 {
            String::new()
        } else {
            format!(" WITH (fillfactor = {})", self.fillfactor)
        }
    }

    /// The DDL of table `t`: the table (primary key `k`, Jepsen's `sk`,
    /// the list `v`) and the reads' index besides the primary key: on
    /// `sk` for secondary reads, a hash index on `k` for `index=hash`
    /// with primary-key reads, none for B-tree primary-key reads.
    pub fn ddl(&self, t: u64) -> Vec<String> {
        let with = self.with();
        let name = self.table_name(t);
        let v = if self.register { "bigint" } else { "bigint[]" };
        let mut out = vec![format!(
            "CREATE TABLE {name} (k bigint PRIMARY KEY{with}, sk bigint NOT NULL, v {v} NOT NULL){with}"
        )];
        let using = match self.index {
            IndexKind::Btree => "btree",
            IndexKind::Hash => "hash",
        };
        match (self.read_by, self.index) {
            (ReadBy::Pk, IndexKind::Btree) => {}
            (by, _) => out.push(format!(
                "CREATE INDEX {name}_{col}_{using} ON {name} USING {using} ({col}){with}",
                col = match by {
                    ReadBy::Pk => "k",
                    ReadBy::Secondary => "sk",
                }
            )),
        }
        out
    }

    /// The prepared statements of an append to table `t` (`$1` the key,
    /// `$2` the value): one, or for `select-insert` the existence check,
    /// the update and the insert.
    pub fn append_sql(&self, t: u64) -> Vec<String> {
        if self.register {
            return self.write_sql(t);
        }
        match self.upsert {
            Upsert::OnConflict => vec![format!(
                "INSERT INTO la_{t} AS t (k, sk, v) VALUES ($1, $1, ARRAY[$2::bigint]) \
                 ON CONFLICT (k) DO UPDATE SET v = t.v || $2::bigint"
            )],
            Upsert::SelectInsert => vec![
                format!("SELECT 1 FROM la_{t} WHERE k = $1"),
                format!("UPDATE la_{t} SET v = v || $2::bigint WHERE k = $1"),
                format!("INSERT INTO la_{t} (k, sk, v) VALUES ($1, $1, ARRAY[$2::bigint])"),
            ],
            Upsert::Merge => vec![format!(
                "MERGE INTO la_{t} AS t USING (SELECT $1::bigint AS k, $2::bigint AS x) AS s ON t.k = s.k \
                 WHEN MATCHED THEN UPDATE SET v = t.v || s.x \
                 WHEN NOT MATCHED THEN INSERT (k, sk, v) VALUES (s.k, s.k, ARRAY[s.x])"
            )],
        }
    }

    /// A register's write of `$2` to key `$1` of table `t`, as
    /// [`Shape::append_sql`].
    fn write_sql(&self, t: u64) -> Vec<String> {
        let name = self.table_name(t);
        match self.upsert {
            Upsert::OnConflict => vec![format!(
                "INSERT INTO {name} AS t (k, sk, v) VALUES ($1, $1, $2::bigint) \
                 ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"
            )],
            Upsert::SelectInsert => vec![
                format!("SELECT 1 FROM {name} WHERE k = $1"),
                format!("UPDATE {name} SET v = $2::bigint WHERE k = $1"),
                format!("INSERT INTO {name} (k, sk, v) VALUES ($1, $1, $2::bigint)"),
            ],
            Upsert::Merge => vec![format!(
                "MERGE INTO {name} AS t USING (SELECT $1::bigint AS k, $2::bigint AS x) AS s ON t.k = s.k \
                 WHEN MATCHED THEN UPDATE SET v = s.x \
                 WHEN NOT MATCHED THEN INSERT (k, sk, v) VALUES (s.k, s.k, s.x)"
            )],
        }
    }

    /// The prepared read of one key of table `t` (`$1`).
    pub fn read_sql(&self, t: u64) -> String {
        let lock = if self.locking { " FOR UPDATE" } else { "" };
        format!(
            "SELECT v FROM {} WHERE {} = $1{lock}",
            self.table_name(t),
            self.read_col()
        )
    }

    /// The prepared scan of table `t` from `$1` to `$2`, in key order.
    pub fn scan_sql(&self, t: u64) -> String {
        let lock = if self.locking { " FOR UPDATE" } else { "" };
        format!(
            "SELECT {c}, v FROM {name} WHERE {c} BETWEEN $1 AND $2 ORDER BY {c}{lock}",
            c = self.read_col(),
            name = self.table_name(t)
        )
    }

    /// BEGIN at `level`, for a read-only transaction `READ ONLY` (and
    /// `DEFERRABLE`: PostgreSQL then waits for a snapshot no serializable
    /// transaction can make unsafe).
    pub fn begin_sql(level: Isolation, read_only: bool, deferrable: bool) -> String {
        let mut s = format!("BEGIN ISOLATION LEVEL {}", level.sql());
        if read_only {
            s.push_str(" READ ONLY");
            if deferrable {
                s.push_str(" DEFERRABLE");
            }
        }
        s
    }
}

/// Replaces `$N` placeholders with literal integers, for evidence: the
/// statements as a replay sends them.
pub fn literal(sql: &str, args: &[i64]) -> String {
    let mut out = sql.to_string();
    // From the highest, so that $1 does not eat $10's prefix.
    for (i, a) in args.iter().enumerate().rev() {
        out = out.replace(&format!("${}", i + 1), &a.to_string());
    }
    out
}

/// A bijection of [0, 2^40): the odd multiplier permutes the residues
/// modulo 2^40, and the xor-shift mixes high bits into low ones (also a
/// bijection), so consecutive positions land far apart and never collide.
pub fn scramble(x: u64) -> u64 {
    const MASK: u64 = (1 << 40) - 1;
    let y = x.wrapping_mul(0x9E37_79B9_7F4A_7C15) & MASK;
    y ^ (y >> 17)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn scrambled_keys_are_distinct_and_spread() {
        let keys: std::collections::BTreeSet<u64> = (0..100_000).map(scramble).collect();
        assert_eq!(keys.len(), 100_000);
        assert!(keys.iter().all(|&k| k < 1 << 40));
        // Consecutive positions are not neighbours in the key order.
        assert!(scramble(1).abs_diff(scramble(2)) > 1 << 20);
    }

    #[test]
    fn the_default_shape_is_jepsens() {
        let s = Shape::from_params(&BTreeMap::new(), "optimistic").unwrap();
        assert_eq!(
            s.ddl(0),
            ["CREATE TABLE la_0 (k bigint PRIMARY KEY, sk bigint NOT NULL, v bigint[] NOT NULL)"]
        );
        assert_eq!(s.append_sql(0).len(), 1);
        assert!(s.append_sql(0)[0].contains("ON CONFLICT (k) DO UPDATE"));
        assert_eq!(s.read_sql(0), "SELECT v FROM la_0 WHERE k = $1");
        assert_eq!(s.key(7), 7);
    }

    #[test]
    fn each_choice_changes_its_statement() {
        let s = Shape::from_params(
            &params(&[
                ("read", "secondary"),
                ("index", "hash"),
                ("fillfactor", "50"),
                ("upsert", "merge"),
                ("key-order", "random"),
            ]),
            "locking",
        )
        .unwrap();
        assert_eq!(
            s.ddl(1),
            [
                "CREATE TABLE la_1 (k bigint PRIMARY KEY WITH (fillfactor = 50), sk bigint NOT NULL, v bigint[] NOT NULL) WITH (fillfactor = 50)",
                "CREATE INDEX la_1_sk_hash ON la_1 USING hash (sk) WITH (fillfactor = 50)"
            ]
        );
        assert!(s.append_sql(1)[0].starts_with("MERGE INTO la_1"));
        assert_eq!(s.read_sql(1), "SELECT v FROM la_1 WHERE sk = $1 FOR UPDATE");
        assert_eq!(s.key(7), scramble(7));
        assert_ne!(
            s.data_key(),
            Shape::from_params(&BTreeMap::new(), "optimistic")
                .unwrap()
                .data_key()
        );
        let e = Shape::from_params(&params(&[("upsert", "replace")]), "optimistic").unwrap_err();
        assert_eq!(
            e,
            "--param upsert=replace: expected one of on-conflict, select-insert, merge"
        );
        assert!(Shape::from_params(&params(&[("fillfactor", "5")]), "optimistic").is_err());
    }

    #[test]
    fn literal_statements_for_a_replay() {
        let s = Shape::from_params(&BTreeMap::new(), "optimistic").unwrap();
        assert_eq!(
            literal(&s.append_sql(2)[0], &[2852, 100223]),
            "INSERT INTO la_2 AS t (k, sk, v) VALUES (2852, 2852, ARRAY[100223::bigint]) \
             ON CONFLICT (k) DO UPDATE SET v = t.v || 100223::bigint"
        );
        assert_eq!(
            literal("$1 $10 $2", &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
            "1 10 2"
        );
        assert_eq!(
            Shape::begin_sql(Isolation::Serializable, true, true),
            "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE"
        );
    }
}
