//! `isobench pgbench -i`: pgbench's tables, made as pgbench 15 (or 18,
//! [`Pgbench`]) makes them
//! (`runInitSteps` in pgbench.c): each step of `-I` in the order given,
//! with pgbench's statements, options (`-F`, `--unlogged-tables`,
//! `--tablespace`, `--index-tablespace`, `--partitions`,
//! `--partition-method`) and messages on stderr, then `done in X s
//! (step X s, ...).`.

use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use bytes::Bytes;
use futures_util::SinkExt;
use tokio_postgres::Client;

use super::flags::{InitOptions, Invocation, PartitionMethod};
use super::run::connect_setup;
use super::version::Pgbench;

/// pgbench's rows per scale unit.
const BRANCHES: i64 = 1;
const TELLERS: i64 = 10;
const ACCOUNTS: i64 = 100_000;

/// From this scale on, account ids are `bigint` (pgbench's
/// `SCALE_32BIT_THRESHOLD`).
const SCALE_32BIT_THRESHOLD: u32 = 20_000;

/// `-q`: a progress line every this many seconds.
const LOG_STEP_SECONDS: f64 = 5.0;

/// Runs `opts.steps` on the server `inv` names (a managed server, loaded
/// and removed again, without one: a check only).
///
/// Errors: a server that cannot be reached, a statement that fails
/// (pgbench's `query failed: ...` with the statement).
pub(super) async fn run(inv: &Invocation, opts: &InitOptions) -> Result<()> {
    let (db, _server) = connect_setup(inv, "initialization").await?;
    let v = Pgbench::for_server(super::run::server_version_num(&db).await);
    let mut done: Vec<String> = Vec::new();
    let mut total = 0.0;
    for step in opts.steps.chars() {
        let started = Instant::now();
        let name = match step {
            'd' => {
                drop_tables(&db).await?;
                "drop tables"
            }
            't' => {
                create_tables(&db, opts, v).await?;
                "create tables"
            }
            'g' => {
                generate_client_side(&db, opts, v).await?;
                "client-side generate"
            }
            'G' => {
                generate_server_side(&db, opts).await?;
                "server-side generate"
            }
            'v' => {
                vacuum(&db).await?;
                "vacuum"
            }
            'p' => {
                primary_keys(&db, opts).await?;
                "primary keys"
            }
            'f' => {
                foreign_keys(&db).await?;
                "foreign keys"
            }
            _ => continue,
        };
        let took = started.elapsed().as_secs_f64();
        total += took;
        done.push(format!("{name} {took:.2} s"));
    }
    eprintln!("done in {total:.2} s ({}).", done.join(", "));
    Ok(())
}

/// pgbench's `executeStatement`: the statement, or `query failed`.
async fn execute(db: &Client, sql: &str) -> Result<()> {
    db.batch_execute(sql).await.map_err(|e| {
        anyhow!(
            "query failed: {}\npgbench: detail: Query was: {sql}",
            super::output::server_error_in(&e, Some(sql))
        )
    })
}

async fn drop_tables(db: &Client) -> Result<()> {
    eprintln!("dropping old tables...");
    execute(
        db,
        "drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
    )
    .await
}

/// An identifier quoted as `PQescapeIdentifier` quotes it.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// pgbench's `initCreateTables`. `--unlogged-tables` makes every table
/// unlogged under pgbench 15; pgbench 18 leaves the base tables logged
/// when pgbench_accounts is partitioned (PostgreSQL 18 refuses an
/// unlogged partitioned table) and makes its partitions unlogged.
async fn create_tables(db: &Client, o: &InitOptions, v: Pgbench) -> Result<()> {
    eprintln!("creating tables...");
    let big = o.scale >= SCALE_32BIT_THRESHOLD;
    // (table, columns, whether it takes a fillfactor)
    let ddl = [
        (
            "pgbench_history",
            if big {
                "tid int,bid int,aid bigint,delta int,mtime timestamp,filler char(22)"
            } else {
                "tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22)"
            },
            false,
        ),
        (
            "pgbench_tellers",
            "tid int not null,bid int,tbalance int,filler char(84)",
            true,
        ),
        (
            "pgbench_accounts",
            if big {
                "aid bigint not null,bid int,abalance int,filler char(84)"
            } else {
                "aid    int not null,bid int,abalance int,filler char(84)"
            },
            true,
        ),
        (
            "pgbench_branches",
            "bid int not null,bbalance int,filler char(88)",
            true,
        ),
    ];
    let unlogged = if o.unlogged && (v == Pgbench::V15 || o.partition_method.is_none()) {
        " unlogged"
    } else {
        ""
    };
    for (table, columns, fillfactor) in ddl {
        let mut sql = format!("create{unlogged} table {table}({columns})");
        match o.partition_method {
            Some(m) if table == "pgbench_accounts" => {
                sql.push_str(&format!(" partition by {} (aid)", m.name()));
            }
            _ if fillfactor => sql.push_str(&format!(" with (fillfactor={})", o.fillfactor)),
            _ => {}
        }
        if let Some(ts) = &o.tablespace {
            sql.push_str(&format!(" tablespace {}", ident(ts)));
        }
        execute(db, &sql).await?;
    }
    if let Some(method) = o.partition_method {
        create_partitions(db, o, method).await?;
    }
    Ok(())
}

/// pgbench's `createPartitions`: range partitions open at both ends, or
/// hash partitions.
async fn create_partitions(db: &Client, o: &InitOptions, method: PartitionMethod) -> Result<()> {
    eprintln!("creating {} partitions...", o.partitions);
    let n = i64::from(o.partitions);
    let size = (ACCOUNTS * i64::from(o.scale) + n - 1) / n;
    let unlogged = if o.unlogged { " unlogged" } else { "" };
    for p in 1..=n {
        let bounds = match method {
            PartitionMethod::Range => {
                let from = if p == 1 {
                    "minvalue".to_string()
                } else {
                    ((p - 1) * size + 1).to_string()
                };
                let to = if p < n {
                    (p * size + 1).to_string()
                } else {
                    "maxvalue".to_string()
                };
                format!("for values from ({from}) to ({to})")
            }
            PartitionMethod::Hash => format!("for values with (modulus {n}, remainder {})", p - 1),
        };
        let sql = format!(
            "create{unlogged} table pgbench_accounts_{p}\n  partition of pgbench_accounts\n  {bounds} with (fillfactor={})",
            o.fillfactor
        );
        execute(db, &sql).await?;
    }
    Ok(())
}

async fn truncate(db: &Client) -> Result<()> {
    execute(
        db,
        "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
    )
    .await
}

/// pgbench's `initGenerateDataClientSide`, in one transaction: pgbench
/// 15 inserts pgbench_branches and pgbench_tellers row by row and loads
/// pgbench_accounts by COPY (FREEZE without partitions); pgbench 18 loads
/// all three by COPY (FREEZE for every ordinary table), their filler
/// NULL but for the accounts'. See [`copy_rows`] for the progress lines.
async fn generate_client_side(db: &Client, o: &InitOptions, v: Pgbench) -> Result<()> {
    eprintln!("generating data (client-side)...");
    execute(db, "begin").await?;
    truncate(db).await?;
    let scale = i64::from(o.scale);
    if v == Pgbench::V15 {
        for i in 0..BRANCHES * scale {
            let sql = format!(
                "insert into pgbench_branches(bid,bbalance) values({},0)",
                i + 1
            );
            execute(db, &sql).await?;
        }
        for i in 0..TELLERS * scale {
            let sql = format!(
                "insert into pgbench_tellers(tid,bid,tbalance) values ({},{},0)",
                i + 1,
                i / TELLERS + 1
            );
            execute(db, &sql).await?;
        }
        let freeze = o.partitions == 0;
        copy_rows(
            db,
            "pgbench_accounts",
            freeze,
            ACCOUNTS * scale,
            o.quiet,
            None,
            account_row,
        )
        .await?;
    } else {
        // COPY FREEZE wherever the table is an ordinary one (pgbench 18's
        // `get_table_relkind`): not into a partitioned pgbench_accounts.
        for (table, rows, row) in [
            (
                "pgbench_branches",
                BRANCHES * scale,
                branch_row as fn(i64, &mut String),
            ),
            ("pgbench_tellers", TELLERS * scale, teller_row),
            ("pgbench_accounts", ACCOUNTS * scale, account_row),
        ] {
            // The name goes as text, as libpq sends pgbench's parameter.
            let found = db
                .query_typed(RELKIND, &[(&table, tokio_postgres::types::Type::TEXT)])
                .await
                .map_err(|e| {
                    anyhow!(
                        "query failed: {}\npgbench: detail: Query was: {RELKIND}",
                        super::output::server_error(&e)
                    )
                })?;
            let kind: i8 = found.first().map_or(0, |r| r.get(0));
            let freeze = kind as u8 == b'r';
            copy_rows(db, table, freeze, rows, o.quiet, Some(table), row).await?;
        }
    }
    execute(db, "commit").await
}

/// pgbench 18's `get_table_relkind`.
const RELKIND: &str = "SELECT relkind FROM pg_catalog.pg_class WHERE oid=$1::pg_catalog.regclass";

/// A pgbench_branches row (pgbench 18: filler NULL).
fn branch_row(k: i64, buf: &mut String) {
    use std::fmt::Write;
    let _ = writeln!(buf, "{}\t0\t\\N", k + 1);
}

/// A pgbench_tellers row (pgbench 18: filler NULL).
fn teller_row(k: i64, buf: &mut String) {
    use std::fmt::Write;
    let _ = writeln!(buf, "{}\t{}\t0\t\\N", k + 1, k / TELLERS + 1);
}

/// A pgbench_accounts row (filler the empty string, blank-padded).
fn account_row(k: i64, buf: &mut String) {
    use std::fmt::Write;
    let _ = writeln!(buf, "{}\t{}\t0\t", k + 1, k / ACCOUNTS + 1);
}

/// COPYs `total` rows made by `row` into `table` (`with (freeze on)`
/// when `freeze`), with pgbench's progress lines: every 100,000 rows,
/// or with `quiet` every 5 s and at the end, `N of TOTAL tuples (P%)
/// done (elapsed ..., remaining ...)`, pgbench 18 naming the table
/// (`named`: `(P%) of pgbench_accounts done`). On a terminal each line
/// overwrites the one before (`\r`) and the last is blanked, as
/// pgbench does.
async fn copy_rows(
    db: &Client,
    table: &str,
    freeze: bool,
    total: i64,
    quiet: bool,
    named: Option<&str>,
    row: fn(i64, &mut String),
) -> Result<()> {
    use std::io::IsTerminal;
    let copy = if freeze {
        format!("copy {table} from stdin with (freeze on)")
    } else {
        format!("copy {table} from stdin")
    };
    let sink = db.copy_in::<_, Bytes>(&copy).await.map_err(|e| {
        anyhow!(
            "unexpected copy in result: {}",
            super::output::server_error(&e)
        )
    })?;
    futures_util::pin_mut!(sink);
    let terminal = std::io::stderr().is_terminal();
    let eol = if terminal { '\r' } else { '\n' };
    let of = named.map(|t| format!(" of {t}")).unwrap_or_default();
    let (mut chars, mut prev_chars) = (0usize, 0usize);
    let started = Instant::now();
    let mut next_quiet = LOG_STEP_SECONDS;
    let mut buf = String::with_capacity(1 << 20);
    for k in 0..total {
        let j = k + 1;
        row(k, &mut buf);
        let line = if !quiet {
            j % 100_000 == 0
        } else if j % 100 == 0 {
            let s = started.elapsed().as_secs_f64();
            let due = j == total || s >= next_quiet;
            if due {
                next_quiet = (s / LOG_STEP_SECONDS).ceil().max(1.0) * LOG_STEP_SECONDS;
            }
            due
        } else {
            false
        };
        if buf.len() >= (1 << 20) - 64 || line || j == total {
            sink.send(Bytes::from(std::mem::take(&mut buf)))
                .await
                .with_context(|| format!("COPY {table}"))?;
        }
        if line {
            let elapsed = started.elapsed().as_secs_f64();
            let remaining = (total - j) as f64 * elapsed / j as f64;
            let text = format!(
                "{j} of {total} tuples ({}%){of} done (elapsed {elapsed:.2} s, remaining {remaining:.2} s)",
                j * 100 / total
            );
            chars = text.len();
            let pad = " ".repeat(prev_chars.saturating_sub(chars));
            eprint!("{text}{pad}{eol}");
            prev_chars = chars;
        }
    }
    if chars != 0 && terminal {
        eprint!("{}\r", " ".repeat(chars));
    }
    sink.finish()
        .await
        .map_err(|e| anyhow!("PQendcopy failed: {}", super::output::server_error(&e)))?;
    Ok(())
}

/// pgbench's `initGenerateDataServerSide`: `generate_series` on the server.
async fn generate_server_side(db: &Client, o: &InitOptions) -> Result<()> {
    eprintln!("generating data (server-side)...");
    execute(db, "begin").await?;
    truncate(db).await?;
    let scale = i64::from(o.scale);
    execute(
        db,
        &format!(
            "insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, {}) as bid",
            BRANCHES * scale
        ),
    )
    .await?;
    execute(
        db,
        &format!(
            "insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / {TELLERS} + 1, 0 from generate_series(1, {}) as tid",
            TELLERS * scale
        ),
    )
    .await?;
    execute(
        db,
        &format!(
            "insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / {ACCOUNTS} + 1, 0, '' from generate_series(1, {}) as aid",
            ACCOUNTS * scale
        ),
    )
    .await?;
    execute(db, "commit").await
}

async fn vacuum(db: &Client) -> Result<()> {
    eprintln!("vacuuming...");
    for t in [
        "pgbench_branches",
        "pgbench_tellers",
        "pgbench_accounts",
        "pgbench_history",
    ] {
        execute(db, &format!("vacuum analyze {t}")).await?;
    }
    Ok(())
}

async fn primary_keys(db: &Client, o: &InitOptions) -> Result<()> {
    eprintln!("creating primary keys...");
    for sql in [
        "alter table pgbench_branches add primary key (bid)",
        "alter table pgbench_tellers add primary key (tid)",
        "alter table pgbench_accounts add primary key (aid)",
    ] {
        let sql = match &o.index_tablespace {
            Some(ts) => format!("{sql} using index tablespace {}", ident(ts)),
            None => sql.to_string(),
        };
        execute(db, &sql).await?;
    }
    Ok(())
}

async fn foreign_keys(db: &Client) -> Result<()> {
    eprintln!("creating foreign keys...");
    for sql in [
        "alter table pgbench_tellers add constraint pgbench_tellers_bid_fkey foreign key (bid) references pgbench_branches",
        "alter table pgbench_accounts add constraint pgbench_accounts_bid_fkey foreign key (bid) references pgbench_branches",
        "alter table pgbench_history add constraint pgbench_history_bid_fkey foreign key (bid) references pgbench_branches",
        "alter table pgbench_history add constraint pgbench_history_tid_fkey foreign key (tid) references pgbench_tellers",
        "alter table pgbench_history add constraint pgbench_history_aid_fkey foreign key (aid) references pgbench_accounts",
    ] {
        execute(db, sql).await?;
    }
    Ok(())
}
