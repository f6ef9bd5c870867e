//! Data generation is deterministic: loading a workload twice with the same
//! parameters writes the same rows (checksums of every table), and another
//! parameter value writes different rows.

use std::collections::BTreeMap;

use isobench::target::{self, ManagedOptions, ManagedServer};
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
    let admin = target::connect(&server.config("postgres")).await.unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .await
        .unwrap();
    let conn = target::connect(&server.config(db)).await.unwrap();
    W::new(setup).unwrap().load(&conn).await.unwrap();
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
    let server = ManagedServer::start(&ManagedOptions {
        bin_dir: target::find_bin_dir(None).unwrap(),
        settings: Vec::new(),
        log_path: tmp.path().join("server.log"),
        os_user: "postgres".into(),
    })
    .expect("managed server");
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
