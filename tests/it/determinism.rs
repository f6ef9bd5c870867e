//! Data generation is deterministic: loading a workload twice with the same
//! parameters writes the same rows (checksums of every table), and another
//! parameter value writes different rows.

use std::collections::BTreeMap;

use isobench::postgres::{self, ManagedServer};
use isobench::workload::{
    self, Setup, Workload, docstore::Docstore, sibench::Sibench, smallbank::Smallbank,
    ssibench::Ssibench, tpcb::Tpcb, write_skew::WriteSkew,
};

/// md5 of every table's rows in a canonical order, by table name.
async fn checksums(db: &tokio_postgres::Client) -> BTreeMap<String, String> {
    let tables = db
        .query(
            "SELECT relname::text FROM pg_class
              WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace ORDER BY 1",
            &[],
        )
        .await
        .unwrap();
    let mut out = BTreeMap::new();
    for t in tables {
        let name: String = t.get(0);
        let sql = format!(
            "SELECT coalesce(md5(string_agg(x::text, '|' ORDER BY x::text)), '') FROM \"{name}\" x"
        );
        let sum: String = db.query_one(&sql, &[]).await.unwrap().get(0);
        out.insert(name, sum);
    }
    out
}

async fn load<W: Workload>(
    server: &ManagedServer,
    db: &str,
    setup: &Setup,
) -> BTreeMap<String, String> {
    let admin = postgres::connect(&server.config("postgres")).await.unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .await
        .unwrap();
    let conn = postgres::connect(&server.config(db)).await.unwrap();
    let loader = workload::Loader::new(
        postgres::connect(&server.config(db)).await.unwrap(),
        server.config(db),
    );
    W::new(setup).unwrap().load(&loader).await.unwrap();
    checksums(&conn).await
}

fn setup(name: &str, scale: Option<u32>, params: &[(&str, &str)]) -> Setup {
    let given = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Setup::new(workload::spec(name).unwrap(), scale, None, &given).unwrap()
}

/// Loads `a` twice and `b` once: the two loads of `a` match, `b` differs.
async fn same_and_different<W: Workload>(server: &ManagedServer, tag: &str, a: Setup, b: Setup) {
    let first = load::<W>(server, &format!("{tag}_1"), &a).await;
    let again = load::<W>(server, &format!("{tag}_2"), &a).await;
    let other = load::<W>(server, &format!("{tag}_3"), &b).await;
    assert!(!first.is_empty(), "{tag}: no tables");
    assert_eq!(first, again, "{tag}: two loads differ");
    assert_ne!(first, other, "{tag}: other parameters, same rows");
}

#[test]
fn loads_are_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    let server = crate::common::library_server(tmp.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        same_and_different::<Tpcb>(
            &server,
            "tpcb",
            setup("tpcb", Some(1), &[]),
            setup("tpcb", Some(2), &[]),
        )
        .await;
        same_and_different::<Sibench>(
            &server,
            "sibench",
            setup("sibench", None, &[("rows", "50")]),
            setup("sibench", None, &[("rows", "60")]),
        )
        .await;
        same_and_different::<Ssibench>(
            &server,
            "ssibench",
            setup("ssibench", None, &[("table-size", "500")]),
            setup("ssibench", None, &[("table-size", "501")]),
        )
        .await;
        same_and_different::<Smallbank>(
            &server,
            "smallbank",
            setup("smallbank", None, &[("customers", "300")]),
            setup("smallbank", None, &[("customers", "301")]),
        )
        .await;
        same_and_different::<WriteSkew>(
            &server,
            "skew",
            setup("write-skew", None, &[("shifts", "3")]),
            setup("write-skew", None, &[("shifts", "4")]),
        )
        .await;
        same_and_different::<Docstore>(
            &server,
            "docstore",
            setup("docstore", None, &[("children", "40")]),
            setup("docstore", None, &[("children", "40"), ("max-refs", "2")]),
        )
        .await;
    });
}

/// Issue #15: isobench's TPC-B loader (parallel binary COPY by `aid` range
/// on a machine with 3+ CPUs, one binary COPY FREEZE stream on fewer, see
/// `tpcb::load_streams`) writes exactly what `pgbench -i` writes, and
/// leaves the tables in the same state: primary keys, vacuumed (visibility
/// map set) and analysed.
#[test]
fn tpcb_load_equals_pgbench_init() {
    let tmp = tempfile::tempdir().unwrap();
    let bin_dir = postgres::find_bin_dir(None).unwrap();
    let server = crate::common::library_server(tmp.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let scale = 6; // 600,000 accounts: enough rows for parallel streams (3+ CPUs)
    let ours = rt.block_on(load::<Tpcb>(
        &server,
        "ib",
        &setup("tpcb", Some(scale), &[]),
    ));
    rt.block_on(async {
        let admin = postgres::connect(&server.config("postgres")).await.unwrap();
        admin.batch_execute("CREATE DATABASE pg").await.unwrap();
    });
    let out = std::process::Command::new(bin_dir.join("pgbench"))
        .args(["-i", "-q", "-s", &scale.to_string()])
        .args(["-h", server.socket_dir().to_str().unwrap()])
        .args([
            "-p",
            &server.port().to_string(),
            "-U",
            postgres::SUPERUSER,
            "pg",
        ])
        .output()
        .expect("run pgbench -i");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    rt.block_on(async {
        let pg = postgres::connect(&server.config("pg")).await.unwrap();
        let theirs = checksums(&pg).await;
        assert_eq!(ours, theirs, "isobench's rows differ from pgbench -i's");
        let state = "SELECT c.relname::text,
                            (SELECT count(*) FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary),
                            c.relallvisible >= c.relpages AND c.relpages > 0,
                            c.reltuples::bigint
                       FROM pg_class c
                      WHERE c.relname IN ('pgbench_accounts', 'pgbench_branches', 'pgbench_tellers')
                      ORDER BY 1";
        let ib = postgres::connect(&server.config("ib")).await.unwrap();
        let rows = |r: Vec<tokio_postgres::Row>| -> Vec<(String, i64, bool, i64)> {
            r.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3))).collect()
        };
        let a = rows(ib.query(state, &[]).await.unwrap());
        let b = rows(pg.query(state, &[]).await.unwrap());
        assert_eq!(a, b, "table state (primary key, vacuumed, analysed) differs");
        assert_eq!(a[0].3, i64::from(scale) * 100_000, "accounts analysed");
    });
}
