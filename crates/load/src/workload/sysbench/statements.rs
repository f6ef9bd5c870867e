//! sysbench 1.0.20's OLTP statements and the order each test sends them
//! in: `oltp_common.lua`'s `stmt_defs` and each test script's `event()`.

/// The OLTP tests (`sysbench <test> run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    ReadWrite,
    ReadOnly,
    WriteOnly,
    PointSelect,
    UpdateIndex,
    UpdateNonIndex,
    Insert,
    Delete,
}

impl Test {
    pub const ALL: [Test; 8] = [
        Test::ReadWrite,
        Test::ReadOnly,
        Test::WriteOnly,
        Test::PointSelect,
        Test::UpdateIndex,
        Test::UpdateNonIndex,
        Test::Insert,
        Test::Delete,
    ];
    pub const NAMES: [&'static str; 8] = [
        "oltp_read_write",
        "oltp_read_only",
        "oltp_write_only",
        "oltp_point_select",
        "oltp_update_index",
        "oltp_update_non_index",
        "oltp_insert",
        "oltp_delete",
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Whether the test's event is one transaction (BEGIN ... COMMIT,
    /// unless `skip_trx`); the others send each statement in autocommit.
    pub fn explicit_transaction(self) -> bool {
        matches!(self, Test::ReadWrite | Test::ReadOnly | Test::WriteOnly)
    }
}

/// A statement of `stmt_defs` (the delete/insert pair is two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    PointSelects,
    SimpleRanges,
    SumRanges,
    OrderRanges,
    DistinctRanges,
    IndexUpdates,
    NonIndexUpdates,
    Deletes,
    Inserts,
}

impl Kind {
    pub const ALL: [Kind; 9] = [
        Kind::PointSelects,
        Kind::SimpleRanges,
        Kind::SumRanges,
        Kind::OrderRanges,
        Kind::DistinctRanges,
        Kind::IndexUpdates,
        Kind::NonIndexUpdates,
        Kind::Deletes,
        Kind::Inserts,
    ];

    /// sysbench's key of the statement in `stmt_defs`, also its label in
    /// isobench's reports.
    pub fn label(self) -> &'static str {
        [
            "point_selects",
            "simple_ranges",
            "sum_ranges",
            "order_ranges",
            "distinct_ranges",
            "index_updates",
            "non_index_updates",
            "deletes",
            "inserts",
        ][self as usize]
    }

    /// The statement on table `sbtest<table>`, `?` written as PostgreSQL's
    /// `$n` (sysbench's pgsql driver does the same before PQprepare).
    pub fn sql(self, table: u32) -> String {
        let t = table;
        match self {
            Kind::PointSelects => format!("SELECT c FROM sbtest{t} WHERE id=$1"),
            Kind::SimpleRanges => format!("SELECT c FROM sbtest{t} WHERE id BETWEEN $1 AND $2"),
            Kind::SumRanges => format!("SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN $1 AND $2"),
            Kind::OrderRanges => {
                format!("SELECT c FROM sbtest{t} WHERE id BETWEEN $1 AND $2 ORDER BY c")
            }
            Kind::DistinctRanges => {
                format!("SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN $1 AND $2 ORDER BY c")
            }
            Kind::IndexUpdates => format!("UPDATE sbtest{t} SET k=k+1 WHERE id=$1"),
            Kind::NonIndexUpdates => format!("UPDATE sbtest{t} SET c=$1 WHERE id=$2"),
            Kind::Deletes => format!("DELETE FROM sbtest{t} WHERE id=$1"),
            Kind::Inserts => {
                format!("INSERT INTO sbtest{t} (id, k, c, pad) VALUES ($1, $2, $3, $4)")
            }
        }
    }
}

/// The options that shape an event (sysbench's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub point_selects: u32,
    pub simple_ranges: u32,
    pub sum_ranges: u32,
    pub order_ranges: u32,
    pub distinct_ranges: u32,
    pub index_updates: u32,
    pub non_index_updates: u32,
    pub delete_inserts: u32,
    pub range_selects: bool,
}

impl Counts {
    /// sysbench's defaults.
    pub const DEFAULT: Counts = Counts {
        point_selects: 10,
        simple_ranges: 1,
        sum_ranges: 1,
        order_ranges: 1,
        distinct_ranges: 1,
        index_updates: 1,
        non_index_updates: 1,
        delete_inserts: 1,
        range_selects: true,
    };
}

/// One block of an event: `n` statements of `kind` on one table
/// (sysbench draws a table per block), or for a delete/insert block `n`
/// pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub kind: Kind,
    pub n: u32,
}

/// The blocks of `test`'s event, in its order, with the counts `c`
/// (`oltp_point_select` runs one point select whatever `point_selects`
/// says, as its script sets it to 1). `oltp_insert` has no block: it
/// sends one literal INSERT ([`insert_literal`]).
pub fn plan(test: Test, c: &Counts) -> Vec<Block> {
    let reads = |v: &mut Vec<Block>| {
        v.push(Block {
            kind: Kind::PointSelects,
            n: c.point_selects,
        });
        if c.range_selects {
            for (kind, n) in [
                (Kind::SimpleRanges, c.simple_ranges),
                (Kind::SumRanges, c.sum_ranges),
                (Kind::OrderRanges, c.order_ranges),
                (Kind::DistinctRanges, c.distinct_ranges),
            ] {
                v.push(Block { kind, n });
            }
        }
    };
    let writes = |v: &mut Vec<Block>| {
        v.push(Block {
            kind: Kind::IndexUpdates,
            n: c.index_updates,
        });
        v.push(Block {
            kind: Kind::NonIndexUpdates,
            n: c.non_index_updates,
        });
        v.push(Block {
            kind: Kind::Deletes,
            n: c.delete_inserts,
        });
    };
    let mut v = Vec::new();
    match test {
        Test::ReadWrite => {
            reads(&mut v);
            writes(&mut v);
        }
        Test::ReadOnly => reads(&mut v),
        Test::WriteOnly => writes(&mut v),
        Test::PointSelect => v.push(Block {
            kind: Kind::PointSelects,
            n: 1,
        }),
        Test::UpdateIndex => v.push(Block {
            kind: Kind::IndexUpdates,
            n: c.index_updates,
        }),
        Test::UpdateNonIndex => v.push(Block {
            kind: Kind::NonIndexUpdates,
            n: c.non_index_updates,
        }),
        Test::Delete => v.push(Block {
            kind: Kind::Deletes,
            n: 1,
        }),
        Test::Insert => {}
    }
    v.retain(|b| b.n > 0);
    v
}

/// The statement kinds `test` prepares, in [`Kind::ALL`]'s order (a
/// delete/insert block prepares both; `oltp_delete` only its delete).
pub fn kinds(test: Test, c: &Counts) -> Vec<Kind> {
    let blocks = plan(test, c);
    Kind::ALL
        .into_iter()
        .filter(|k| {
            blocks.iter().any(|b| {
                b.kind == *k
                    || (*k == Kind::Inserts && b.kind == Kind::Deletes && test != Test::Delete)
            })
        })
        .collect()
}

/// `oltp_insert`'s statement, sent as text with the simple protocol
/// (`con:query`): without `id` when `auto_inc` (the SERIAL column draws
/// it), else with the id.
pub fn insert_literal(table: u32, id: Option<i32>, k: i32, c: &str, pad: &str) -> String {
    match id {
        None => format!("INSERT INTO sbtest{table} (k, c, pad) VALUES ({k}, '{c}', '{pad}')"),
        Some(id) => {
            format!("INSERT INTO sbtest{table} (id, k, c, pad) VALUES ({id}, {k}, '{c}', '{pad}')")
        }
    }
}

/// The statement texts `test`'s event sends on table 1 with counts `c`,
/// in order (BEGIN and COMMIT when it is a transaction and not
/// `skip_trx`), for documentation and tests.
pub fn event_texts(test: Test, c: &Counts, skip_trx: bool, auto_inc: bool) -> Vec<String> {
    let mut out = Vec::new();
    let trx = test.explicit_transaction() && !skip_trx;
    if trx {
        out.push("BEGIN".to_string());
    }
    for b in plan(test, c) {
        for _ in 0..b.n {
            out.push(b.kind.sql(1));
            if b.kind == Kind::Deletes && test != Test::Delete {
                out.push(Kind::Inserts.sql(1));
            }
        }
    }
    if test == Test::Insert {
        out.push(insert_literal(1, (!auto_inc).then_some(0), 0, "c", "pad"));
    }
    if trx {
        out.push("COMMIT".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts as sysbench 1.0.20 sends them to PostgreSQL (read from
    /// `/usr/share/sysbench/*.lua` and confirmed in the server's log with
    /// `log_statement=all` for `oltp_read_write --events=1`).
    #[test]
    fn oltp_read_write_sends_sysbenchs_statements_in_order() {
        let texts = event_texts(Test::ReadWrite, &Counts::DEFAULT, false, true);
        let mut want = vec!["BEGIN".to_string()];
        want.extend(std::iter::repeat_n(
            "SELECT c FROM sbtest1 WHERE id=$1".to_string(),
            10,
        ));
        want.extend(
            [
                "SELECT c FROM sbtest1 WHERE id BETWEEN $1 AND $2",
                "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN $1 AND $2",
                "SELECT c FROM sbtest1 WHERE id BETWEEN $1 AND $2 ORDER BY c",
                "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN $1 AND $2 ORDER BY c",
                "UPDATE sbtest1 SET k=k+1 WHERE id=$1",
                "UPDATE sbtest1 SET c=$1 WHERE id=$2",
                "DELETE FROM sbtest1 WHERE id=$1",
                "INSERT INTO sbtest1 (id, k, c, pad) VALUES ($1, $2, $3, $4)",
                "COMMIT",
            ]
            .map(String::from),
        );
        assert_eq!(texts, want);
    }

    #[test]
    fn each_test_sends_its_scripts_statements() {
        let c = Counts::DEFAULT;
        let n = |t: Test| event_texts(t, &c, false, true);
        // read_only: BEGIN, 10 point selects, 4 ranges, COMMIT.
        let ro = n(Test::ReadOnly);
        assert_eq!(ro.len(), 16);
        assert!(
            ro.iter()
                .all(|s| !s.starts_with("UPDATE") && !s.starts_with("DELETE"))
        );
        // write_only: BEGIN, index update, non-index update, delete, insert, COMMIT.
        assert_eq!(
            n(Test::WriteOnly),
            [
                "BEGIN",
                "UPDATE sbtest1 SET k=k+1 WHERE id=$1",
                "UPDATE sbtest1 SET c=$1 WHERE id=$2",
                "DELETE FROM sbtest1 WHERE id=$1",
                "INSERT INTO sbtest1 (id, k, c, pad) VALUES ($1, $2, $3, $4)",
                "COMMIT"
            ]
        );
        // The single-statement tests: no BEGIN/COMMIT.
        assert_eq!(n(Test::PointSelect), ["SELECT c FROM sbtest1 WHERE id=$1"]);
        assert_eq!(
            n(Test::UpdateIndex),
            ["UPDATE sbtest1 SET k=k+1 WHERE id=$1"]
        );
        assert_eq!(
            n(Test::UpdateNonIndex),
            ["UPDATE sbtest1 SET c=$1 WHERE id=$2"]
        );
        assert_eq!(n(Test::Delete), ["DELETE FROM sbtest1 WHERE id=$1"]);
        assert_eq!(
            n(Test::Insert),
            ["INSERT INTO sbtest1 (k, c, pad) VALUES (0, 'c', 'pad')"]
        );
        assert_eq!(
            event_texts(Test::Insert, &c, false, false),
            ["INSERT INTO sbtest1 (id, k, c, pad) VALUES (0, 0, 'c', 'pad')"]
        );
    }

    #[test]
    fn options_shape_the_event() {
        let c = Counts {
            point_selects: 3,
            index_updates: 2,
            delete_inserts: 0,
            range_selects: false,
            ..Counts::DEFAULT
        };
        let t = event_texts(Test::ReadWrite, &c, true, true);
        assert_eq!(t.len(), 3 + 2 + 1, "{t:?}");
        assert!(!t.contains(&"BEGIN".to_string()), "skip_trx");
        assert!(
            !t.iter().any(|s| s.contains("BETWEEN")),
            "range_selects off"
        );
        // oltp_point_select ignores point_selects, as its script does.
        assert_eq!(event_texts(Test::PointSelect, &c, false, true).len(), 1);
        assert_eq!(
            kinds(Test::WriteOnly, &Counts::DEFAULT),
            [
                Kind::IndexUpdates,
                Kind::NonIndexUpdates,
                Kind::Deletes,
                Kind::Inserts
            ]
        );
        assert_eq!(kinds(Test::Delete, &Counts::DEFAULT), [Kind::Deletes]);
        assert_eq!(
            Kind::Inserts.sql(7),
            "INSERT INTO sbtest7 (id, k, c, pad) VALUES ($1, $2, $3, $4)"
        );
    }
}
