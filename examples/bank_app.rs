//! A stand-in web application for external-load studies: an HTTP server
//! whose `/transfer` endpoint runs one TPC-B-like transaction (pgbench's
//! tables, from `pgbench -i`) through a connection pool of `POOL_SIZE`
//! connections (deadpool-postgres), as a typical application does.
//!
//! Environment: `DATABASE_URL` (libpq URL, required), `POOL_SIZE`
//! (default 10), `PORT` (default 3000), `ISOLATION` (`read committed`,
//! `repeatable read` or `serializable`; default: the server's).
//!
//! Endpoints: `GET /health` (200 once the pool can connect), `GET|POST
//! /transfer` (200 with the account's new balance; 503 when the
//! transaction fails, e.g. a serialization failure, which it does not
//! retry).
//!
//! ```text
//! cargo build --release --example bank_app
//! DATABASE_URL=postgresql://me@localhost/bench POOL_SIZE=25 target/release/examples/bank_app
//! ```

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rand::RngExt;
use tokio::net::TcpListener;

struct App {
    pool: Pool,
    /// pgbench's scale: 1 branch, 10 tellers and 100 000 accounts each.
    scale: i32,
    begin: String,
}

fn env(name: &str, default: Option<&str>) -> Result<String, String> {
    match (std::env::var(name), default) {
        (Ok(v), _) if !v.is_empty() => Ok(v),
        (_, Some(d)) => Ok(d.to_string()),
        _ => Err(format!("{name} is not set")),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = env("DATABASE_URL", None)?;
    let pool_size: usize = env("POOL_SIZE", Some("10"))?
        .parse()
        .map_err(|_| "POOL_SIZE must be a number")?;
    let port: u16 = env("PORT", Some("3000"))?
        .parse()
        .map_err(|_| "PORT must be a port number")?;
    let begin = match std::env::var("ISOLATION") {
        Ok(level) if !level.is_empty() => {
            format!("BEGIN ISOLATION LEVEL {}", level.replace(['-', '_'], " "))
        }
        _ => "BEGIN".to_string(),
    };
    let config: tokio_postgres::Config = url.parse()?;
    let manager = Manager::from_config(
        config,
        tokio_postgres::NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager).max_size(pool_size).build()?;
    let scale: i64 = pool
        .get()
        .await?
        .query_one("SELECT count(*) FROM pgbench_branches", &[])
        .await?
        .get(0);
    let app = Arc::new(App {
        pool,
        scale: scale.max(1) as i32,
        begin,
    });
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let listener = TcpListener::bind(addr).await?;
    eprintln!("bank_app: http://{addr}/transfer, pool of {pool_size}, scale {scale}");
    loop {
        let (stream, _) = listener.accept().await?;
        let app = app.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| handle(app.clone(), req));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn handle(
    app: Arc<App>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let reply = |status: StatusCode, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        Ok(r)
    };
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/health") => match app.pool.get().await {
            Ok(_) => reply(StatusCode::OK, "ok\n".into()),
            Err(e) => reply(StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")),
        },
        (&Method::GET | &Method::POST, "/transfer") => match transfer(&app).await {
            Ok(balance) => reply(StatusCode::OK, format!("{{\"balance\":{balance}}}\n")),
            Err(e) => reply(StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")),
        },
        _ => reply(StatusCode::NOT_FOUND, "not found\n".into()),
    }
}

/// pgbench's built-in TPC-B-like transaction for a random account.
async fn transfer(app: &App) -> Result<i32, String> {
    let (aid, bid, tid, delta) = {
        let mut rng = rand::rng();
        (
            rng.random_range(1..=100_000 * app.scale),
            rng.random_range(1..=app.scale),
            rng.random_range(1..=10 * app.scale),
            rng.random_range(-5000..=5000),
        )
    };
    let client = app.pool.get().await.map_err(|e| e.to_string())?;
    let err = |e: tokio_postgres::Error| match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    };
    client.batch_execute(&app.begin).await.map_err(err)?;
    let result = async {
        client
            .execute(
                "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
                &[&delta, &aid],
            )
            .await?;
        let balance: i32 = client
            .query_one(
                "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
                &[&aid],
            )
            .await?
            .get(0);
        client
            .execute(
                "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
                &[&delta, &tid],
            )
            .await?;
        client
            .execute(
                "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
                &[&delta, &bid],
            )
            .await?;
        client
            .execute(
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
                 VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
                &[&tid, &bid, &aid, &delta],
            )
            .await?;
        client.batch_execute("COMMIT").await?;
        Ok(balance)
    }
    .await;
    if result.is_err() {
        let _ = client.batch_execute("ROLLBACK").await;
    }
    result.map_err(err)
}
