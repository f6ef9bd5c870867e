//! Issue #29, item 2, design (a): pgbench's client loop on libpq's
//! asynchronous API, one thread for all clients (as `pgbench -j 1`).
//!
//! A prototype for measurement, not part of isobench: it answers "would
//! driving PostgreSQL through libpq (`pq-sys`, libpq built from source)
//! cost less client CPU per transaction than isobench's `crates/wire/src/`?".
//! It copies the structure of pgbench 15's `threadRun` and
//! `advanceConnectionState` (src/bin/pgbench/pgbench.c):
//!
//! - connections with `PQconnectdb`, then `PQsetnonblocking`, every
//!   statement of the script prepared once per connection (`PQprepare`,
//!   as `-M prepared`);
//! - per client a state machine: `PQsendQueryPrepared` (parameters in
//!   text), then straight away `PQconsumeInput` + `PQisBusy` (pgbench's
//!   `CSTATE_WAIT_RESULT` is entered right after sending, so the socket is
//!   read once before any wait), `PQgetResult` until NULL;
//! - the thread's loop: if some client is between transactions, do not
//!   wait (and look at no socket in that pass); otherwise `poll(2)` over
//!   the sockets of every waiting client, then advance the ones with
//!   input; a client returns to the loop at the end of each transaction;
//! - SQLSTATE 40001 / 40P01: `ROLLBACK` if the transaction block is in
//!   error, then retry with the same random values up to `--max-tries`
//!   (10) tries, else count the transaction as failed; once the duration
//!   is over an erroring transaction is neither retried nor counted, as
//!   pgbench 15 does.
//!
//! Differences from pgbench: the end of the run is a `poll` timeout
//! rather than `SIGALRM`; random numbers come from xorshift64* (pgbench:
//! xoshiro128**), uniform in both; isolation through `BEGIN ISOLATION
//! LEVEL ...` (pgbench: `PGOPTIONS=-c default_transaction_isolation=...`,
//! one statement either way); libpq is pq-src's bundled 18.x (pgbench on
//! this machine links the system's libpq 15).
//!
//! Output (one line each, `key: value`): committed, failed, retried,
//! retries, tps, and CPU: user and system seconds of the whole process
//! (`getrusage(RUSAGE_SELF)`, connections included, as `/usr/bin/time`
//! reports pgbench), of the measured loop only, and µs per committed
//! transaction of each.

use pq_sys::*;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::ptr;
use std::time::{Duration, Instant};

/// The command-line options.
struct Opts {
    /// libpq connection string (`--dsn`).
    dsn: String,
    /// Clients (`-c`), each one connection.
    clients: usize,
    /// Duration, s (`-T`).
    seconds: f64,
    /// `select-only` or `tpcb-like` (`-b`).
    script: String,
    /// The level for tpcb-like's BEGIN (`--isolation`: rc, rr, ser).
    isolation: String,
    /// Tries per transaction, the first included (`--max-tries`, pgbench's
    /// meaning; 10 by default here as isobench's, pgbench's default is 1).
    max_tries: u32,
}

fn usage(msg: &str) -> ! {
    eprintln!(
        "libpq-proto: {msg}\nusage: libpq-proto --dsn CONNINFO [-c CLIENTS=16] [-T SECONDS=10] \
         [-b select-only|tpcb-like] [--isolation rc|rr|ser] [--max-tries N=10]"
    );
    std::process::exit(2)
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        dsn: String::new(),
        clients: 16,
        seconds: 10.0,
        script: "select-only".into(),
        isolation: "rc".into(),
        max_tries: 10,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| {
            args.next()
                .unwrap_or_else(|| usage(&format!("{name} needs a value")))
        };
        match a.as_str() {
            "--dsn" => o.dsn = val("--dsn"),
            "-c" => {
                o.clients = val("-c")
                    .parse()
                    .unwrap_or_else(|_| usage("-c: a whole number of clients"))
            }
            "-T" => {
                o.seconds = val("-T")
                    .parse()
                    .unwrap_or_else(|_| usage("-T: a duration in seconds"))
            }
            "-b" => o.script = val("-b"),
            "--isolation" => o.isolation = val("--isolation"),
            "--max-tries" => {
                o.max_tries = val("--max-tries")
                    .parse()
                    .unwrap_or_else(|_| usage("--max-tries: a whole number >= 1"))
            }
            other => usage(&format!("unknown argument {other}")),
        }
    }
    if o.dsn.is_empty() {
        usage("--dsn is required");
    }
    if o.clients == 0 || o.max_tries == 0 || o.seconds <= 0.0 {
        usage("-c, -T and --max-tries must be positive");
    }
    if !matches!(o.script.as_str(), "select-only" | "tpcb-like") {
        usage("-b: select-only or tpcb-like");
    }
    o
}

/// One statement of a script: its SQL and which of the transaction's
/// random values are its parameters, in order.
struct Stmt {
    sql: String,
    params: &'static [usize],
}

/// Indexes into a transaction's values.
const AID: usize = 0;
const BID: usize = 1;
const TID: usize = 2;
const DELTA: usize = 3;

fn script(o: &Opts) -> Vec<Stmt> {
    let s = |sql: &str, params: &'static [usize]| Stmt { sql: sql.into(), params };
    match o.script.as_str() {
        "select-only" => vec![s("SELECT abalance FROM pgbench_accounts WHERE aid = $1", &[AID])],
        _ => {
            let level = match o.isolation.as_str() {
                "rc" | "read-committed" => "READ COMMITTED",
                "rr" | "repeatable-read" => "REPEATABLE READ",
                "ser" | "serializable" => "SERIALIZABLE",
                other => usage(&format!("--isolation {other}: rc, rr or ser")),
            };
            vec![
                s(&format!("BEGIN ISOLATION LEVEL {level}"), &[]),
                s("UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2", &[DELTA, AID]),
                s("SELECT abalance FROM pgbench_accounts WHERE aid = $1", &[AID]),
                s("UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2", &[DELTA, TID]),
                s("UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2", &[DELTA, BID]),
                s(
                    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) \
                     VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
                    &[TID, BID, AID, DELTA],
                ),
                s("END", &[]),
            ]
        }
    }
}

/// xorshift64*: fast, uniform enough for picking keys.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + ((self.next() >> 11) % ((hi - lo + 1) as u64)) as i64
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Between transactions: the loop must not wait.
    ChooseScript,
    StartCommand,
    WaitResult,
    /// A retryable error: roll back if in a block, then retry or fail.
    Error,
    WaitRollback,
    Finished,
}

struct Client {
    conn: *mut PGconn,
    state: State,
    cmd: usize,
    tries: u32,
    /// This transaction's aid, bid, tid, delta (kept for its retries).
    vals: [i64; 4],
    /// Their text, rebuilt per transaction.
    text: [CString; 4],
    rng: Rng,
}

#[derive(Default)]
struct Stats {
    committed: u64,
    failed: u64,
    retried: u64,
    retries: u64,
}

fn die(conn: *mut PGconn, what: &str) -> ! {
    let msg = unsafe { CStr::from_ptr(PQerrorMessage(conn)) };
    eprintln!("libpq-proto: {what}: {}", msg.to_string_lossy().trim_end());
    std::process::exit(1)
}

fn stmt_name(i: usize) -> CString {
    CString::new(format!("P_{i}")).unwrap()
}

/// What one finished command's results said.
enum Outcome {
    Ok,
    Retryable,
}

/// `PQgetResult` until NULL; the first error decides (pgbench's
/// `readCommandResponse`).
unsafe fn read_results(conn: *mut PGconn) -> Outcome {
    let mut outcome = Outcome::Ok;
    loop {
        let res = PQgetResult(conn);
        if res.is_null() {
            return outcome;
        }
        match PQresultStatus(res) {
            ExecStatusType::PGRES_COMMAND_OK | ExecStatusType::PGRES_TUPLES_OK => {}
            ExecStatusType::PGRES_FATAL_ERROR => {
                let code = PQresultErrorField(res, b'C' as c_int);
                let code = if code.is_null() { "" } else { CStr::from_ptr(code).to_str().unwrap_or("") };
                if code == "40001" || code == "40P01" {
                    outcome = Outcome::Retryable;
                } else {
                    let m = CStr::from_ptr(PQresultErrorMessage(res));
                    eprintln!("libpq-proto: error {code}: {}", m.to_string_lossy().trim_end());
                    std::process::exit(1);
                }
            }
            other => {
                eprintln!("libpq-proto: unexpected result status {other:?}");
                std::process::exit(1);
            }
        }
        PQclear(res);
    }
}

struct Run<'a> {
    stmts: &'a [Stmt],
    names: Vec<CString>,
    max_tries: u32,
    naccounts: i64,
    nbranches: i64,
    ntellers: i64,
    end: Instant,
    timer_exceeded: bool,
    stats: Stats,
}

impl Run<'_> {
    /// pgbench's `advanceConnectionState`: run `c` until it has to wait
    /// for the server, or its transaction ended.
    unsafe fn advance(&mut self, c: &mut Client) {
        loop {
            match c.state {
                State::ChooseScript => {
                    if self.timer_exceeded {
                        c.state = State::Finished;
                        return;
                    }
                    c.vals = [
                        c.rng.range(1, self.naccounts),
                        c.rng.range(1, self.nbranches),
                        c.rng.range(1, self.ntellers),
                        c.rng.range(-5000, 5000),
                    ];
                    for (t, v) in c.text.iter_mut().zip(c.vals) {
                        *t = CString::new(v.to_string()).unwrap();
                    }
                    c.tries = 1;
                    c.cmd = 0;
                    c.state = State::StartCommand;
                }
                State::StartCommand => {
                    let st = &self.stmts[c.cmd];
                    let mut params: [*const c_char; 4] = [ptr::null(); 4];
                    for (p, &i) in params.iter_mut().zip(st.params) {
                        *p = c.text[i].as_ptr();
                    }
                    let ok = PQsendQueryPrepared(
                        c.conn,
                        self.names[c.cmd].as_ptr(),
                        st.params.len() as c_int,
                        params.as_ptr(),
                        ptr::null(),
                        ptr::null(),
                        0,
                    );
                    if ok == 0 {
                        die(c.conn, "PQsendQueryPrepared");
                    }
                    c.state = State::WaitResult;
                }
                State::WaitResult => {
                    if PQconsumeInput(c.conn) == 0 {
                        die(c.conn, "PQconsumeInput");
                    }
                    if PQisBusy(c.conn) != 0 {
                        return;
                    }
                    match read_results(c.conn) {
                        Outcome::Ok => {
                            c.cmd += 1;
                            if c.cmd == self.stmts.len() {
                                self.end_tx(c, true);
                                return;
                            }
                            c.state = State::StartCommand;
                        }
                        Outcome::Retryable => c.state = State::Error,
                    }
                }
                State::Error => {
                    match PQtransactionStatus(c.conn) {
                        PGTransactionStatusType::PQTRANS_INERROR => {
                            if PQsendQuery(c.conn, c"ROLLBACK".as_ptr()) == 0 {
                                die(c.conn, "PQsendQuery ROLLBACK");
                            }
                            c.state = State::WaitRollback;
                        }
                        PGTransactionStatusType::PQTRANS_IDLE => {
                            if self.retry_or_fail(c) {
                                return;
                            }
                        }
                        other => {
                            eprintln!("libpq-proto: unexpected transaction status {other:?}");
                            std::process::exit(1);
                        }
                    }
                }
                State::WaitRollback => {
                    if PQconsumeInput(c.conn) == 0 {
                        die(c.conn, "PQconsumeInput");
                    }
                    if PQisBusy(c.conn) != 0 {
                        return;
                    }
                    if let Outcome::Retryable = read_results(c.conn) {
                        eprintln!("libpq-proto: ROLLBACK failed");
                        std::process::exit(1);
                    }
                    if self.retry_or_fail(c) {
                        return;
                    }
                }
                State::Finished => return,
            }
        }
    }

    /// After a retryable error and the ROLLBACK: finished when the time is
    /// over, else retry (same values) or count a failure. True when the
    /// client must return to the loop (end of its transaction).
    fn retry_or_fail(&mut self, c: &mut Client) -> bool {
        self.check_timer();
        if self.timer_exceeded {
            c.state = State::Finished;
            return true;
        }
        if c.tries < self.max_tries {
            c.tries += 1;
            c.cmd = 0;
            c.state = State::StartCommand;
            false
        } else {
            self.end_tx(c, false);
            true
        }
    }

    fn end_tx(&mut self, c: &mut Client, committed: bool) {
        if committed {
            self.stats.committed += 1;
        } else {
            self.stats.failed += 1;
        }
        if c.tries > 1 {
            self.stats.retried += 1;
            self.stats.retries += u64::from(c.tries - 1);
        }
        self.check_timer();
        c.state = if self.timer_exceeded { State::Finished } else { State::ChooseScript };
    }

    fn check_timer(&mut self) {
        if !self.timer_exceeded && Instant::now() >= self.end {
            self.timer_exceeded = true;
        }
    }
}

/// `(user, system)` CPU of this process, s.
fn rusage() -> (f64, f64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

unsafe fn scalar(conn: *mut PGconn, sql: &CStr) -> i64 {
    let res = PQexec(conn, sql.as_ptr());
    if PQresultStatus(res) != ExecStatusType::PGRES_TUPLES_OK {
        die(conn, &format!("{}", sql.to_string_lossy()));
    }
    let v = CStr::from_ptr(PQgetvalue(res, 0, 0)).to_str().unwrap().parse().unwrap();
    PQclear(res);
    v
}

fn main() {
    let o = parse_opts();
    let stmts = script(&o);
    let names: Vec<CString> = (0..stmts.len()).map(stmt_name).collect();
    let dsn = CString::new(o.dsn.clone()).unwrap_or_else(|_| usage("--dsn: no NUL bytes"));
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;

    let mut clients: Vec<Client> = Vec::with_capacity(o.clients);
    let mut scale = 0;
    unsafe {
        for i in 0..o.clients {
            let conn = PQconnectdb(dsn.as_ptr());
            if PQstatus(conn) != ConnStatusType::CONNECTION_OK {
                die(conn, "connection (--dsn)");
            }
            if i == 0 {
                // As pgbench: the scale is the number of branches.
                scale = scalar(conn, c"SELECT count(*) FROM pgbench_branches");
            }
            for (st, name) in stmts.iter().zip(&names) {
                let sql = CString::new(st.sql.as_str()).unwrap();
                let res = PQprepare(conn, name.as_ptr(), sql.as_ptr(), st.params.len() as c_int, ptr::null());
                if PQresultStatus(res) != ExecStatusType::PGRES_COMMAND_OK {
                    die(conn, &format!("PQprepare {}", st.sql));
                }
                PQclear(res);
            }
            if PQsetnonblocking(conn, 1) != 0 {
                die(conn, "PQsetnonblocking");
            }
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            clients.push(Client {
                conn,
                state: State::ChooseScript,
                cmd: 0,
                tries: 1,
                vals: [0; 4],
                text: std::array::from_fn(|_| CString::default()),
                rng: Rng(seed | 1),
            });
        }
    }
    if scale < 1 {
        eprintln!("libpq-proto: pgbench_branches is empty: run `pgbench -i` first");
        std::process::exit(1);
    }

    let (u0, s0) = rusage();
    let start = Instant::now();
    let mut run = Run {
        stmts: &stmts,
        names,
        max_tries: o.max_tries,
        naccounts: 100_000 * scale,
        nbranches: scale,
        ntellers: 10 * scale,
        end: start + Duration::from_secs_f64(o.seconds),
        timer_exceeded: false,
        stats: Stats::default(),
    };

    // pgbench's threadRun: first every client once, then the loop.
    for c in clients.iter_mut() {
        unsafe { run.advance(c) };
    }
    let mut pollfds: Vec<libc::pollfd> = Vec::with_capacity(clients.len());
    loop {
        // Which clients wait for the server; any ready one means no wait.
        pollfds.clear();
        let mut ready = false;
        let mut remaining = 0;
        for c in &clients {
            match c.state {
                State::WaitResult | State::WaitRollback => {
                    remaining += 1;
                    // Non-blocking mode: a send not wholly flushed waits
                    // for writability too (never seen with these sizes).
                    let pending = unsafe { PQflush(c.conn) };
                    if pending < 0 {
                        die(c.conn, "PQflush");
                    }
                    pollfds.push(libc::pollfd {
                        fd: unsafe { PQsocket(c.conn) },
                        events: libc::POLLIN | if pending == 1 { libc::POLLOUT } else { 0 },
                        revents: 0,
                    });
                }
                State::Finished => {}
                _ => {
                    remaining += 1;
                    ready = true;
                    break;
                }
            }
        }
        if remaining == 0 {
            break;
        }
        if !ready {
            // Wait for input on any socket, or for the end of the run.
            let timeout_ms = if run.timer_exceeded {
                -1
            } else {
                let left = run.end.saturating_duration_since(Instant::now());
                (left.as_micros().div_ceil(1000)).min(i32::MAX as u128) as c_int
            };
            let rc = unsafe { libc::poll(pollfds.as_mut_ptr(), pollfds.len() as libc::nfds_t, timeout_ms) };
            if rc < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                eprintln!("libpq-proto: poll: {e}");
                std::process::exit(1);
            }
            if rc == 0 {
                run.check_timer();
            }
        } else {
            // As pgbench: a pass without waiting reads no socket.
            pollfds.clear();
        }
        // Advance every client that has input or is ready.
        let mut k = 0;
        for c in clients.iter_mut() {
            match c.state {
                State::WaitResult | State::WaitRollback => {
                    let has_input = pollfds.get(k).is_some_and(|p| p.revents != 0);
                    k += 1;
                    if !has_input {
                        continue;
                    }
                }
                State::Finished => continue,
                _ => {}
            }
            unsafe { run.advance(c) };
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let (u1, s1) = rusage();
    for c in &clients {
        unsafe { PQfinish(c.conn) };
    }
    let (ut, st) = rusage();
    let s = &run.stats;
    let per_tx = |cpu: f64| cpu * 1e6 / s.committed.max(1) as f64;
    let failed_pct = 100.0 * s.failed as f64 / (s.committed + s.failed).max(1) as f64;
    println!("script: {} ({}), clients: {}, threads: 1, scale: {scale}", o.script, o.isolation, o.clients);
    println!("committed: {}", s.committed);
    println!("failed: {} ({failed_pct:.1} %)", s.failed);
    println!("retried: {} (retries: {})", s.retried, s.retries);
    println!("tps: {:.1}", s.committed as f64 / wall);
    println!("cpu_user_s: {ut:.3}");
    println!("cpu_sys_s: {st:.3}");
    println!("cpu_us_per_tx: {:.2}", per_tx(ut + st));
    println!("loop_cpu_user_s: {:.3}", u1 - u0);
    println!("loop_cpu_sys_s: {:.3}", s1 - s0);
    println!("loop_cpu_us_per_tx: {:.2}", per_tx(u1 - u0 + s1 - s0));
}
