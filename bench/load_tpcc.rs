//! Loading TPC-C (issue #40): isobench's `tpcc` loader against `psql`
//! copying the same rows from files, which is the server's floor for
//! getting them in (psql does no work per row: it streams the file into
//! `COPY ... FROM STDIN`). Same managed server, alternating (ABBA: psql
//! first in odd rounds), each into a new empty database after a
//! CHECKPOINT; both then run the same VACUUM ANALYZE and index builds.
//!
//! The files are the rows isobench loads, dumped once with `\copy ... TO`
//! from a first load; psql loads them in one transaction that creates the
//! tables, with `COPY FREEZE`, as isobench's loader does on 2 CPUs or
//! fewer (on more it copies the warehouses over parallel streams, which
//! cannot freeze).
//!
//! Prints per round each side's copy time and rows/s, and the whole
//! load's; then the medians of isobench / psql rows/s (copy phase, and
//! whole load) with their 95 % distribution-free intervals (6 rounds or
//! more). Not a test: record results in BENCHMARKS.md, measured on a
//! quiet machine.
//!
//! Run: `cargo bench --bench load_tpcc`. Environment: `BENCH_WAREHOUSES`
//! (10), `BENCH_ROUNDS` (6), `BENCH_SET`, `BENCH_DIR` (where the dumped
//! files go; a temporary directory by default: about 100 MB per
//! warehouse).

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use common::{Harness, env_or, summary};
use isobench::postgres::SUPERUSER;
use isobench::workload::tpcc::load::{index_memory_kb, load_timed};
use isobench::workload::tpcc::schema::{INDEXES, TABLES, create_tables};

/// Runs psql on `db` with `args`; panics with its stderr when it fails.
fn psql(h: &Harness, db: &str, args: &[&str]) {
    let bin = isobench::postgres::find_bin_dir(None)
        .expect("PostgreSQL binaries")
        .join("psql");
    let out = Command::new(bin)
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1"])
        .args(["-h", h.server.socket_dir().to_str().unwrap()])
        .args([
            "-p",
            &h.server.port().to_string(),
            "-U",
            SUPERUSER,
            "-d",
            db,
        ])
        .args(args)
        .output()
        .expect("run psql");
    assert!(
        out.status.success(),
        "psql {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A fresh empty database `db` and a checkpoint.
fn fresh(h: &Harness, db: &str) {
    h.exec(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"));
    h.exec(&format!("CREATE DATABASE {db}"));
    h.exec("CHECKPOINT");
}

/// isobench's loader into a fresh `db`: (rows, copy s, whole load s).
fn isobench_load(h: &Harness, db: &str, warehouses: i64) -> (u64, f64, f64) {
    fresh(h, db);
    let config = h.config(db);
    let t = Instant::now();
    let times = h.rt.block_on(async {
        let conn = isobench::postgres::connect(&config).await.unwrap();
        let loader = isobench::workload::Loader::new(conn, config.clone());
        load_timed(&loader, warehouses, false)
            .await
            .expect("isobench load")
    });
    (times.rows, times.copy_s, t.elapsed().as_secs_f64())
}

fn main() {
    let warehouses: i64 = env_or("BENCH_WAREHOUSES", 10);
    let rounds: u32 = env_or("BENCH_ROUNDS", 6);
    let h = Harness::start(16);
    let keep = tempfile::tempdir().expect("temporary directory");
    let dir = std::env::var("BENCH_DIR").map_or_else(|_| keep.path().to_path_buf(), Into::into);
    std::fs::create_dir_all(&dir).expect("BENCH_DIR");

    // The rows, once: isobench's load dumped to one file per table.
    let (rows, _, _) = isobench_load(&h, "tpcc_src", warehouses);
    for t in TABLES {
        let file = dir.join(format!("{t}.copy"));
        psql(
            &h,
            "tpcc_src",
            &["-c", &format!("\\copy {t} TO '{}'", file.display())],
        );
    }
    h.exec("DROP DATABASE tpcc_src");
    let bytes: u64 = TABLES
        .iter()
        .map(|t| std::fs::metadata(dir.join(format!("{t}.copy"))).map_or(0, |m| m.len()))
        .sum();
    let copy_script = dir.join("copy.sql");
    let mut script = format!("{};\n", create_tables(false));
    for t in TABLES {
        script.push_str(&format!(
            "\\copy {t} FROM '{}' WITH (FREEZE ON)\n",
            Path::new(&dir).join(format!("{t}.copy")).display()
        ));
    }
    std::fs::write(&copy_script, script).expect("copy.sql");
    let post_script = dir.join("post.sql");
    let mut post = format!(
        "VACUUM ANALYZE;\nSET maintenance_work_mem = '{}kB';\n",
        index_memory_kb(warehouses)
    );
    for sql in INDEXES {
        post.push_str(sql);
        post.push_str(";\n");
    }
    std::fs::write(&post_script, post).expect("post.sql");

    println!(
        "load_tpcc | {warehouses} warehouses, {rows} rows, {:.0} MB as COPY text | {rounds} rounds (ABBA) | {} CPUs",
        bytes as f64 / 1e6,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "{:>5} {:>10} {:>10} {:>12} {:>12} {:>10} {:>10} {:>8} {:>8}",
        "round",
        "psql copy",
        "ib copy s",
        "psql rows/s",
        "ib rows/s",
        "psql all s",
        "ib all s",
        "copy x",
        "all x"
    );
    let (mut copy_ratios, mut all_ratios) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let psql_run = || {
            fresh(&h, "load_psql");
            let t = Instant::now();
            psql(
                &h,
                "load_psql",
                &["-1", "-f", copy_script.to_str().unwrap()],
            );
            let copy = t.elapsed().as_secs_f64();
            psql(&h, "load_psql", &["-f", post_script.to_str().unwrap()]);
            (copy, t.elapsed().as_secs_f64())
        };
        let ((pc, pa), (ir, ic, ia)) = if round % 2 == 1 {
            let p = psql_run();
            (p, isobench_load(&h, "load_ib", warehouses))
        } else {
            let i = isobench_load(&h, "load_ib", warehouses);
            (psql_run(), i)
        };
        assert_eq!(ir, rows, "the same rows every load");
        let rate = |s: f64| rows as f64 / s;
        copy_ratios.push(pc / ic);
        all_ratios.push(pa / ia);
        println!(
            "{round:>5} {pc:>10.2} {ic:>10.2} {:>12.0} {:>12.0} {pa:>10.2} {ia:>10.2} {:>8.3} {:>8.3}",
            rate(pc),
            rate(ic),
            pc / ic,
            pa / ia
        );
    }
    for (what, ratios) in [
        ("copy phase, isobench rows/s / psql rows/s", &copy_ratios),
        ("whole load (copy, VACUUM ANALYZE, indexes)", &all_ratios),
    ] {
        let (geo, median, min, max) = summary(ratios);
        let interval = isobench::stats::median_interval(ratios, 0.95).map_or_else(
            || "95 % interval of the median: needs 6 rounds".to_string(),
            |(lo, hi)| format!("95 % interval of the median {lo:.3}-{hi:.3}"),
        );
        println!(
            "{what}: median {median:.3} ({interval}), geometric mean {geo:.3}, range {min:.3}-{max:.3}"
        );
    }
    h.exec("DROP DATABASE IF EXISTS load_psql WITH (FORCE)");
    h.exec("DROP DATABASE IF EXISTS load_ib WITH (FORCE)");
}
