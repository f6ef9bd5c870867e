//! The live view of a study for Prometheus (`isobench run --metrics-listen
//! ADDR`): OpenMetrics text at `http://ADDR/metrics`, encoded by the
//! `prometheus-client` crate, updated by [`crate::progress::Progress`] as
//! runs begin, tick each second and end. The server is a small tokio task
//! that answers `GET /metrics` and 404 to anything else.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::engine::Tick;
use crate::model::{BadInput, Phase};
use crate::store::{Cell, RunRecord};

/// The media type of OpenMetrics text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Label pairs of the current cell.
type Labels = Vec<(String, String)>;

/// The metrics of one study.
pub struct Live {
    registry: Registry,
    runs: Gauge,
    runs_done: Gauge,
    run_index: Gauge,
    repetition: Gauge,
    cell: Family<Labels, Gauge>,
    measuring: Gauge,
    committed: Counter,
    failed: Counter,
    retried: Counter,
    tps: Gauge<f64, AtomicU64>,
    p99: Gauge<f64, AtomicU64>,
}

impl Default for Live {
    fn default() -> Self {
        Live::new()
    }
}

impl Live {
    /// Every metric registered at zero, no cell yet.
    pub fn new() -> Live {
        let mut registry = Registry::with_prefix("isobench");
        let live = Live {
            registry: Registry::default(),
            runs: Gauge::default(),
            runs_done: Gauge::default(),
            run_index: Gauge::default(),
            repetition: Gauge::default(),
            cell: Family::default(),
            measuring: Gauge::default(),
            committed: Counter::default(),
            failed: Counter::default(),
            retried: Counter::default(),
            tps: Gauge::default(),
            p99: Gauge::default(),
        };
        registry.register("runs", "Runs the study plans", live.runs.clone());
        registry.register(
            "runs_done",
            "Runs measured so far (also those of a resumed study's earlier process)",
            live.runs_done.clone(),
        );
        registry.register(
            "run_index",
            "Index of the current run (1-based, as in results.json)",
            live.run_index.clone(),
        );
        registry.register(
            "run_repetition",
            "Repetition of the current run's cell",
            live.repetition.clone(),
        );
        registry.register(
            "cell_info",
            "The current run's cell: its workload and factor values as labels (value 1)",
            live.cell.clone(),
        );
        registry.register(
            "measuring",
            "1 in the current run's measured window, 0 otherwise (warm-up, between runs)",
            live.measuring.clone(),
        );
        registry.register(
            "transactions_committed",
            "Transactions committed in the study so far (warm-up included)",
            live.committed.clone(),
        );
        registry.register(
            "transactions_failed",
            "Transactions that failed (gave up) in the study so far (warm-up included)",
            live.failed.clone(),
        );
        registry.register(
            "transactions_retried",
            "Tries retried after an error in the study so far (warm-up included)",
            live.retried.clone(),
        );
        registry.register(
            "tps",
            "Transactions committed per second over the last second",
            live.tps.clone(),
        );
        registry.register_with_unit(
            "latency_p99",
            "99th percentile latency of the transactions committed in the last second",
            Unit::Seconds,
            live.p99.clone(),
        );
        Live { registry, ..live }
    }

    /// The study plans `total` runs, `done` of them already measured.
    pub fn start(&self, total: usize, done: usize) {
        self.runs.set(total as i64);
        self.runs_done.set(done as i64);
    }

    /// Run `index` of `cell`, repetition `repetition`, begins.
    pub fn begin_run(&self, index: u32, cell: &Cell, repetition: u32) {
        self.run_index.set(index.into());
        self.repetition.set(repetition.into());
        let mut labels = vec![("workload".to_string(), cell.workload.clone())];
        for (k, v) in cell.factors() {
            let k = label_name(&k);
            if !labels.iter().any(|(n, _)| *n == k) {
                labels.push((k, v));
            }
        }
        self.cell.clear();
        self.cell.get_or_create(&labels).set(1);
        self.measuring.set(0);
        self.tps.set(0.0);
        self.p99.set(0.0);
    }

    /// The engine's second.
    pub fn tick(&self, t: &Tick) {
        self.measuring
            .set(matches!(t.phase, Phase::Measuring | Phase::Draining).into());
        self.committed.inc_by(t.committed);
        self.failed.inc_by(t.failed);
        self.retried.inc_by(t.retried);
        self.tps.set(t.tps);
        self.p99.set(if t.p99_ms.is_finite() {
            t.p99_ms / 1000.0
        } else {
            0.0
        });
    }

    /// Run `r` ended, `done` runs of the study are measured. An external
    /// load has no ticks: its run's figures, as the tool reported them,
    /// are added now.
    pub fn end_run(&self, done: usize, r: &RunRecord) {
        self.measuring.set(0);
        self.runs_done.set(done as i64);
        if r.load.is_some() {
            self.committed.inc_by(r.committed);
            self.failed.inc_by(r.failed.values().sum());
            self.retried.inc_by(r.retries);
            self.tps.set(r.tps);
            self.p99
                .set(r.reported_latency().p99.map_or(0.0, |ms| ms / 1000.0));
        }
    }

    /// The OpenMetrics text of the metrics now, ending with `# EOF`.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        encode(&mut text, &self.registry).expect("writing to a String");
        text
    }

    /// Serves [`Live::encode`] at `http://addr/metrics` on a tokio task
    /// until the returned [`Server`] is dropped.
    ///
    /// Errors ([`BadInput`], naming `--metrics-listen`): `addr` does not
    /// resolve or cannot be bound (in use, not an address of this host).
    pub fn serve(self: &Arc<Self>, addr: &str) -> Result<Server, BadInput> {
        let bad = |e: std::io::Error| {
            BadInput(format!("--metrics-listen {addr}: cannot listen there: {e}"))
        };
        let std = std::net::TcpListener::bind(addr).map_err(bad)?;
        std.set_nonblocking(true).map_err(bad)?;
        let local = std.local_addr().map_err(bad)?;
        let listener = tokio::net::TcpListener::from_std(std).map_err(bad)?;
        let live = Arc::clone(self);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                let live = Arc::clone(&live);
                tokio::spawn(async move {
                    let _ =
                        tokio::time::timeout(Duration::from_secs(10), answer(stream, &live)).await;
                });
            }
        });
        Ok(Server { local, task })
    }
}

/// The metrics server; dropping it stops it.
pub struct Server {
    local: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// The address it listens on (the port the system chose for port 0).
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.local
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads one request's head and answers it: the metrics to `GET
/// /metrics` (and `HEAD`), 404 to another path, 405 to another method.
async fn answer(mut stream: tokio::net::TcpStream, live: &Live) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > 16 * 1024 {
            break;
        }
    }
    let head = String::from_utf8_lossy(&head);
    let mut words = head.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, content_type, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", CONTENT_TYPE, live.encode()),
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "not found; the metrics are at /metrics\n".to_string(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "only GET /metrics\n".to_string(),
        ),
    };
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        response.push_str(&body);
    }
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// `name` as a Prometheus label name: characters other than ASCII
/// letters, digits and `_` become `_`, and a leading digit gets a `_`.
fn label_name(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Isolation, LoadFigures, LoadFormat, LoadRecord};
    use std::collections::BTreeMap;

    fn cell() -> Cell {
        Cell {
            workload: "tpcb".into(),
            isolation: Isolation::Serializable,
            strategy: "optimistic".into(),
            params: BTreeMap::from([("rows".to_string(), "100".to_string())]),
            clients: 16,
            scale: None,
            pool_size: None,
            rate: None,
            max_tries: None,
            settings: BTreeMap::from([("shared_buffers".to_string(), "1GB".to_string())]),
            pg_bin: None,
            fault_plan: None,
            work_factor: None,
            pooler: None,
            pooler_size: None,
        }
    }

    fn tick(phase: Phase, committed: u64, failed: u64, retried: u64, p99_ms: f64) -> Tick {
        Tick {
            phase,
            elapsed: Duration::from_secs(1),
            tps: committed as f64,
            p99_ms,
            failed,
            committed,
            retried,
            retried_tx: 0,
            failed_by_kind: [failed, 0, 0],
            lat_mean_ms: 0.0,
            lat_stddev_ms: 0.0,
            skipped: 0,
            lag_ms: 0.0,
            initial_connect_ms: 0.0,
            connect_ms: 0.0,
        }
    }

    #[test]
    fn encodes_the_cell_the_counters_and_the_last_second() {
        let live = Live::new();
        live.start(6, 1);
        live.begin_run(2, &cell(), 1);
        live.tick(&tick(Phase::Warmup, 100, 3, 5, 4.0));
        live.tick(&tick(Phase::Measuring, 250, 7, 11, 12.5));
        let text = live.encode();
        for line in [
            "isobench_runs 6",
            "isobench_runs_done 1",
            "isobench_run_index 2",
            "isobench_run_repetition 1",
            "isobench_cell_info{workload=\"tpcb\",isolation=\"ser\",strategy=\"optimistic\",rows=\"100\",clients=\"16\",shared_buffers=\"1GB\"} 1",
            "isobench_measuring 1",
            "# TYPE isobench_transactions_committed counter",
            "isobench_transactions_committed_total 350",
            "isobench_transactions_failed_total 10",
            "isobench_transactions_retried_total 16",
            "isobench_tps 250.0",
            "# UNIT isobench_latency_p99_seconds seconds",
            "isobench_latency_p99_seconds 0.0125",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "no line {line:?} in\n{text}"
            );
        }
        assert!(text.ends_with("# EOF\n"), "{text}");

        // The next run: one cell line, the counters go on.
        let mut next = cell();
        next.isolation = Isolation::ReadCommitted;
        live.end_run(2, &record(None));
        live.begin_run(3, &next, 1);
        live.tick(&tick(Phase::Warmup, 50, 0, 0, 1.0));
        let text = live.encode();
        assert_eq!(text.matches("isobench_cell_info{").count(), 1, "{text}");
        assert!(text.contains("isolation=\"rc\""), "{text}");
        assert!(text.contains("isobench_transactions_committed_total 400\n"));
        assert!(text.contains("isobench_measuring 0\n"));
    }

    /// A finished run: 1000 committed, 4 failed, 9 retries, 100 tps;
    /// `load`: of an external load.
    fn record(load: Option<LoadRecord>) -> RunRecord {
        let mut r = crate::model::fixture::results().runs[0].clone();
        r.committed = 1000;
        r.failed = BTreeMap::from([("40001".to_string(), 4)]);
        r.retries = 9;
        r.tps = 100.0;
        r.load = load;
        r
    }

    /// An external load has no ticks: its run's figures count at its end.
    #[test]
    fn an_external_runs_figures_count_at_its_end() {
        let live = Live::new();
        live.begin_run(1, &cell(), 1);
        let load = LoadRecord {
            command: "pgbench".into(),
            format: LoadFormat::Pgbench,
            exit_code: Some(0),
            wall_s: 10.0,
            ready_s: None,
            output_dir: String::new(),
            figures: Some(LoadFigures {
                count: 1000,
                throughput: 100.0,
                latency_p99_ms: Some(20.0),
                ..LoadFigures::default()
            }),
        };
        live.end_run(1, &record(Some(load)));
        let text = live.encode();
        for line in [
            "isobench_runs_done 1",
            "isobench_transactions_committed_total 1000",
            "isobench_transactions_failed_total 4",
            "isobench_transactions_retried_total 9",
            "isobench_tps 100.0",
            "isobench_latency_p99_seconds 0.02",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "no line {line:?} in\n{text}"
            );
        }
        // A built-in workload's run counted its ticks already.
        live.end_run(2, &record(None));
        assert!(
            live.encode()
                .contains("isobench_transactions_committed_total 1000\n")
        );
    }

    #[test]
    fn label_names_are_valid() {
        assert_eq!(label_name("pool_size"), "pool_size");
        assert_eq!(label_name("work-mem"), "work_mem");
        assert_eq!(label_name("1x"), "_1x");
    }

    #[tokio::test]
    async fn serves_metrics_and_404() {
        let live = Arc::new(Live::new());
        live.begin_run(1, &cell(), 1);
        live.tick(&tick(Phase::Measuring, 9, 0, 0, 1.0));
        let server = live.serve("127.0.0.1:0").unwrap();
        let addr = server.local_addr();
        let get = |path: &'static str| async move {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            out
        };
        let ok = get("/metrics").await;
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains(&format!("Content-Type: {CONTENT_TYPE}\r\n")),
            "{ok}"
        );
        assert!(
            ok.contains("isobench_transactions_committed_total 9\n"),
            "{ok}"
        );
        assert!(ok.ends_with("# EOF\n"), "{ok}");
        let missing = get("/").await;
        assert!(missing.starts_with("HTTP/1.1 404 "), "{missing}");

        // The port is taken: a clear error naming the flag.
        let e = live.serve(&addr.to_string()).err().unwrap();
        assert!(e.0.contains("--metrics-listen"), "{}", e.0);
    }
}
