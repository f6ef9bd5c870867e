//! Runs one spec file the way PostgreSQL's `isolationtester` (14 and
//! later, `src/test/isolation/isolationtester.c`) does, writing its output.
//!
//! One control connection (setup, teardown, lock-wait checks; its notices
//! are discarded) and one connection per session, opened once for the
//! whole spec. Each permutation: the setup blocks on the control
//! connection, each session's setup, then the steps in order. A step is
//! sent and watched in 10 ms slices: it completes, or the server says it
//! waits on another session (`pg_isolation_test_session_is_blocked`, or
//! the `pg_stat_activity` fallback), and the next step runs. After every
//! step the waiting ones are polled again; before a session's next step
//! its previous one must finish. Blocker annotations hold back the report
//! of a step's completion: `(*)` prints it as waiting once, `(other)`
//! while `other` runs, `(other notices N)` until `other`'s session sent N
//! more notices. Then session teardowns and the teardown block.
//!
//! A step still running after the step timeout is cancelled
//! (`isolationtester: canceling step ...`); one still unfinished after
//! twice that, a failing setup, or steps that block each other for good
//! stop the spec, as isolationtester exits there, and the line it would
//! print on stderr goes into the output (where `pg_isolation_regress`,
//! which runs it with `2>&1`, puts it).

use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_postgres::{AsyncMessage, Client, Config};
use tokio_util::sync::CancellationToken;

use super::format::{Message, SERVER_CLOSED, table};
use crate::postgres;
use crate::probe::exec::WaitCheck;
use crate::probe::sessions::{self, Block, Outcome, Sessions, StmtResult, TaskFailed};
use crate::probe::spec::{Blocker, PermStep, StepRef, Syntax};

/// Why a spec stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum Stop {
    /// Where isolationtester exits with status 1 (a setup failed, a step
    /// timed out, steps block each other): the line is in the output.
    #[error("{0}")]
    Aborted(String),
    /// Ctrl-C.
    #[error("interrupted")]
    Interrupted,
    /// The server could not be reached or a connection broke.
    #[error("{0}")]
    Server(String),
}

impl From<tokio_postgres::Error> for Stop {
    fn from(e: tokio_postgres::Error) -> Stop {
        Stop::Server(postgres::error_text(&e))
    }
}

impl From<TaskFailed> for Stop {
    fn from(e: TaskFailed) -> Stop {
        Stop::Server(e.to_string())
    }
}

/// What the tester keeps of a step in flight.
struct Active {
    /// Its index in the permutation.
    index: usize,
    /// Per `(other notices N)` blocker: the notice count to reach.
    notice_targets: Vec<u64>,
}

/// What the tester keeps of a session besides its connection.
struct Conn {
    name: String,
    /// Notices and notifications, in arrival order.
    messages: UnboundedReceiver<AsyncMessage>,
    total_notices: u64,
    notifies: Vec<tokio_postgres::Notification>,
}

#[derive(Clone, Copy)]
struct Flags {
    /// Return as soon as the step waits on a lock.
    nonblock: bool,
    /// Not the first look at this step.
    retry: bool,
}

/// How the output is written: into a buffer, and to stdout as it comes
/// when `echo` is set.
pub struct Sink {
    pub text: String,
    pub echo: bool,
}

impl Sink {
    fn put(&mut self, s: &str) {
        if self.echo {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(s.as_bytes()).and_then(|()| out.flush());
        }
        self.text.push_str(s);
    }
}

/// One spec's connections and output.
pub struct Tester<'a> {
    spec: &'a Syntax,
    /// The control connection and the sessions' connections, with the
    /// step each has in flight.
    sessions: Sessions<Active>,
    /// Per session: its name and notices.
    conns: Vec<Conn>,
    /// isolationtester's `max_step_wait`: cancel after it, give up after
    /// twice it.
    max_wait: Duration,
    cancel: CancellationToken,
    any_new_notice: bool,
    pub sink: Sink,
}

/// Opens a connection and hands its notices and notifications to a
/// channel (the I/O half is polled by a task of its own).
async fn open(config: &Config) -> Result<(Client, UnboundedReceiver<AsyncMessage>), Stop> {
    let (client, mut io) = postgres::connect_io(config)
        .await
        .map_err(|e| Stop::Server(e.to_string()))?;
    let (tx, rx) = unbounded_channel();
    tokio::spawn(async move {
        while let Some(Ok(m)) = futures_util::future::poll_fn(|cx| io.poll_message(cx)).await {
            let _ = tx.send(m);
        }
    });
    Ok((client, rx))
}

/// What every connection sets first: the time zone and date style
/// `pg_regress` gives every test (`PGTZ=PST8PDT`, `PGDATESTYLE="Postgres,
/// MDY"`), which PostgreSQL's expected outputs assume. Then
/// [`APPEND_NAME`].
const SESSION_INIT: &str = "SET TimeZone = 'PST8PDT'; SET DateStyle = 'Postgres, MDY'";

/// Appends `/NAME` to the connection's `application_name`, as
/// isolationtester 14+ does for every connection (`control connection`,
/// then each session's name): "to make it easier to map spec file
/// sessions to log output and pg_stat_activity".
const APPEND_NAME: &str = "SELECT set_config('application_name', current_setting('application_name') || '/' || $1, false)";

/// Opens a connection, sets it up as isolationtester does
/// ([`SESSION_INIT`], [`APPEND_NAME`] with `name`), and hands its notices
/// and notifications to a channel.
async fn open_named(
    config: &Config,
    name: &str,
) -> Result<(Client, UnboundedReceiver<AsyncMessage>), Stop> {
    let (client, messages) = open(config).await?;
    client.batch_execute(SESSION_INIT).await?;
    client.execute(APPEND_NAME, &[&name]).await?;
    Ok((client, messages))
}

impl<'a> Tester<'a> {
    /// Connects the control connection and one per session.
    pub async fn connect(
        spec: &'a Syntax,
        config: &Config,
        wait_check: WaitCheck,
        max_wait: Duration,
        cancel: CancellationToken,
        sink: Sink,
    ) -> Result<Tester<'a>, Stop> {
        let (ctl, _discarded) = open_named(config, "control connection").await?;
        let n = spec.sessions.len();
        let mut sessions = Sessions::new(ctl, config.clone(), wait_check, n);
        let mut conns = Vec::new();
        for (i, s) in spec.sessions.iter().enumerate() {
            let (client, messages) = open_named(config, &s.name).await?;
            let pid: i32 = client
                .query_one("SELECT pg_backend_pid()", &[])
                .await?
                .get(0);
            sessions.open(i, client, pid);
            conns.push(Conn {
                name: s.name.clone(),
                messages,
                total_notices: 0,
                notifies: Vec::new(),
            });
        }
        Ok(Tester {
            spec,
            sessions,
            conns,
            max_wait,
            cancel,
            any_new_notice: false,
            sink,
        })
    }

    /// Prints session `s`'s notices that arrived so far (`s1: NOTICE:  ...`)
    /// and keeps its notifications for the end of its current step.
    fn drain(&mut self, s: usize) {
        while let Ok(m) = self.conns[s].messages.try_recv() {
            match m {
                AsyncMessage::Notice(db) => {
                    let text = format!("{}: {}", self.conns[s].name, Message::from_db(&db).full());
                    self.sink.put(&text);
                    self.conns[s].total_notices += 1;
                    self.any_new_notice = true;
                }
                AsyncMessage::Notification(n) => self.conns[s].notifies.push(n),
                _ => {}
            }
        }
    }

    /// Whether session `s`'s backend waits on one of the sessions.
    async fn is_blocked(&self, s: usize) -> Result<bool, Stop> {
        Ok(self.sessions.is_blocked(s).await?)
    }

    /// Runs a setup or teardown block (`what`) on session `conn` (None:
    /// the control connection) like `PQexec`: only the last statement's
    /// result counts, and is printed when it has rows. Returns the error
    /// text on failure. isolationtester waits for a block without end;
    /// here one still running after twice the step timeout is cancelled
    /// and stops the spec.
    async fn block(
        &mut self,
        conn: Option<usize>,
        what: &str,
        sql: &str,
    ) -> Result<Option<String>, Stop> {
        let timeout = 2 * self.max_wait;
        let config = &self.sessions.config;
        let ended = match conn {
            Some(s) => {
                let client = self.sessions.client(s);
                sessions::block(&client, config, sql, timeout, &self.cancel).await
            }
            None => sessions::block(&self.sessions.ctl, config, sql, timeout, &self.cancel).await,
        };
        if let Some(s) = conn {
            self.drain(s);
        }
        match ended {
            Block::Done(done) => self.finish_block(done),
            Block::Interrupted => Err(Stop::Interrupted),
            Block::TimedOut => {
                match conn {
                    Some(s) => self.sessions.cancel(s).await,
                    None => sessions::cancel_query(&self.sessions.ctl, &self.sessions.config).await,
                }
                let secs = timeout.as_secs();
                Err(self.abort(format!("{what} did not finish within {secs} seconds\n")))
            }
        }
    }

    fn finish_block(&mut self, done: Outcome) -> Result<Option<String>, Stop> {
        let Outcome { results, error } = done;
        if let Some(e) = error {
            return match e.as_db_error() {
                Some(db) => Ok(Some(Message::from_db(db).full())),
                None => Err(e.into()),
            };
        }
        if let Some(StmtResult::Tuples { columns, rows }) = results.last() {
            let t = table(columns, rows);
            self.sink.put(&t);
        }
        Ok(None)
    }

    /// Runs every permutation in order; stops at the first that
    /// isolationtester would exit on.
    pub async fn run(&mut self, permutations: &[Vec<PermStep>]) -> Result<(), Stop> {
        self.sink.put(&format!(
            "Parsed test spec with {} sessions\n",
            self.spec.sessions.len()
        ));
        for perm in permutations {
            self.run_permutation(perm).await?;
        }
        Ok(())
    }

    fn abort(&mut self, line: String) -> Stop {
        self.sink.put(&line);
        Stop::Aborted(line.trim_end().to_string())
    }

    async fn run_permutation(&mut self, perm: &[PermStep]) -> Result<(), Stop> {
        let names: Vec<&str> = perm
            .iter()
            .map(|p| self.spec.step(p.step).name.as_str())
            .collect();
        self.sink
            .put(&format!("\nstarting permutation: {}\n", names.join(" ")));
        for b in &self.spec.setup {
            if let Some(e) = self.block(None, "setup", &b.sql).await? {
                return Err(self.abort(format!("setup failed: {e}")));
            }
        }
        for (s, session) in self.spec.sessions.iter().enumerate() {
            if let Some(b) = &session.setup
                && let Some(e) = self
                    .block(
                        Some(s),
                        &format!("setup of session {}", session.name),
                        &b.sql,
                    )
                    .await?
            {
                return Err(self.abort(format!("setup of session {} failed: {e}", session.name)));
            }
        }
        self.run_steps(perm).await?;
        for (s, session) in self.spec.sessions.iter().enumerate() {
            if let Some(b) = &session.teardown
                && let Some(e) = self
                    .block(
                        Some(s),
                        &format!("teardown of session {}", session.name),
                        &b.sql,
                    )
                    .await?
            {
                self.sink
                    .put(&format!("teardown of session {} failed: {e}", session.name));
            }
        }
        if let Some(b) = &self.spec.teardown
            && let Some(e) = self.block(None, "teardown", &b.sql).await?
        {
            self.sink.put(&format!("teardown failed: {e}"));
        }
        Ok(())
    }

    /// The steps of one permutation (`run_permutation`'s step loop).
    async fn run_steps(&mut self, perm: &[PermStep]) -> Result<(), Stop> {
        let mut waiting: Vec<usize> = Vec::new();
        for i in 0..perm.len() {
            let s = perm[i].step.session;
            if self.sessions.busy(s) {
                self.wait_for_session(perm, s, &mut waiting).await?;
            }
            self.send(perm, i);
            let mustwait = self
                .try_complete_step(
                    perm,
                    i,
                    Flags {
                        nonblock: true,
                        retry: false,
                    },
                )
                .await?;
            self.try_complete_steps(
                perm,
                &mut waiting,
                Flags {
                    nonblock: true,
                    retry: true,
                },
            )
            .await?;
            if mustwait {
                waiting.push(i);
            }
        }
        self.try_complete_steps(
            perm,
            &mut waiting,
            Flags {
                nonblock: false,
                retry: true,
            },
        )
        .await?;
        if !waiting.is_empty() {
            return Err(self
                .abort("failed to complete permutation due to mutually-blocking steps\n".into()));
        }
        Ok(())
    }

    /// Before session `s`'s next step: its previous one must finish,
    /// polling the other waiting steps meanwhile (one may hold the lock).
    async fn wait_for_session(
        &mut self,
        perm: &[PermStep],
        s: usize,
        waiting: &mut Vec<usize>,
    ) -> Result<(), Stop> {
        let start = Instant::now();
        while let Some(old) = self.sessions.tag(s).map(|a| a.index) {
            if !self
                .try_complete_step(
                    perm,
                    old,
                    Flags {
                        nonblock: false,
                        retry: true,
                    },
                )
                .await?
            {
                waiting.retain(|w| *w != old);
            }
            self.try_complete_steps(
                perm,
                waiting,
                Flags {
                    nonblock: true,
                    retry: true,
                },
            )
            .await?;
            if self.sessions.busy(s) && start.elapsed() > 2 * self.max_wait {
                let name = &self.spec.step(perm[old].step).name;
                let active: Vec<String> = (0..self.sessions.count())
                    .filter_map(|c| self.sessions.tag(c))
                    .map(|a| format!(" {}", self.spec.step(perm[a.index].step).name))
                    .collect();
                let line = format!(
                    "step {name} timed out after {} seconds\nactive steps are:{}\n",
                    start.elapsed().as_secs(),
                    active.concat()
                );
                return Err(self.abort(line));
            }
        }
        Ok(())
    }

    fn send(&mut self, perm: &[PermStep], i: usize) {
        let step = self.spec.step(perm[i].step);
        let s = perm[i].step.session;
        let notice_targets = perm[i]
            .blockers
            .iter()
            .map(|b| match b {
                Blocker::Notices(r, n) => u64::from(*n) + self.conns[r.session].total_notices,
                _ => 0,
            })
            .collect();
        let active = Active {
            index: i,
            notice_targets,
        };
        self.sessions.send(s, &step.text, active);
    }

    /// Polls the waiting steps until none completes and no notice
    /// arrives, when any has a blocker (`try_complete_steps`).
    async fn try_complete_steps(
        &mut self,
        perm: &[PermStep],
        waiting: &mut Vec<usize>,
        flags: Flags,
    ) -> Result<(), Stop> {
        loop {
            self.any_new_notice = false;
            let before = waiting.len();
            let mut have_blocker = false;
            let mut w = 0;
            while w < waiting.len() {
                if self.try_complete_step(perm, waiting[w], flags).await? {
                    have_blocker |= !perm[waiting[w]].blockers.is_empty();
                    w += 1;
                } else {
                    waiting.remove(w);
                }
            }
            if !(have_blocker && (waiting.len() < before || self.any_new_notice)) {
                return Ok(());
            }
        }
    }

    /// Whether a blocker annotation still holds step `i` back.
    fn has_blocker(&self, perm: &[PermStep], i: usize) -> bool {
        let a = self.sessions.tag(perm[i].step.session);
        perm[i].blockers.iter().enumerate().any(|(k, b)| match b {
            Blocker::Once => false,
            Blocker::Step(r) => self
                .sessions
                .tag(r.session)
                .is_some_and(|x| perm[x.index].step == *r),
            Blocker::Notices(r, _) => {
                let target = a.map_or(0, |a| a.notice_targets[k]);
                self.conns[r.session].total_notices < target
            }
        })
    }

    /// Waits up to `window` for session `s`'s step to finish.
    async fn wait_done(&mut self, s: usize, window: Duration) -> Result<bool, Stop> {
        Ok(self.sessions.wait(s, window).await?)
    }

    fn waiting_line(&mut self, r: StepRef) {
        let step = self.spec.step(r);
        self.sink.put(&format!(
            "step {}: {} <waiting ...>\n",
            step.name, step.text
        ));
    }

    /// Looks at step `i`: true while it has not completed (it waits on a
    /// lock, with `nonblock`, or a blocker holds it); on completion prints
    /// it, its results and errors, and the session's notifications
    /// (`try_complete_step`).
    async fn try_complete_step(
        &mut self,
        perm: &[PermStep],
        i: usize,
        flags: Flags,
    ) -> Result<bool, Stop> {
        let r = perm[i].step;
        let s = r.session;
        if !flags.retry && perm[i].blockers.contains(&Blocker::Once) {
            self.waiting_line(r);
            return Ok(true);
        }
        let start = Instant::now();
        let mut canceled = false;
        while !self.wait_done(s, Duration::from_millis(10)).await? {
            self.drain(s);
            if flags.nonblock && self.is_blocked(s).await? {
                self.drain(s);
                if !self.wait_done(s, Duration::ZERO).await? {
                    if !flags.retry {
                        self.waiting_line(r);
                    }
                    return Ok(true);
                }
                break;
            }
            if self.cancel.is_cancelled() {
                return Err(Stop::Interrupted);
            }
            let waited = start.elapsed();
            if waited > self.max_wait && !canceled {
                self.sessions.cancel(s).await;
                let line = format!(
                    "isolationtester: canceling step {} after {} seconds\n",
                    self.spec.step(r).name,
                    waited.as_secs()
                );
                self.sink.put(&line);
                canceled = true;
            }
            if waited > 2 * self.max_wait {
                let line = format!(
                    "step {} timed out after {} seconds\n",
                    self.spec.step(r).name,
                    waited.as_secs()
                );
                return Err(self.abort(line));
            }
        }
        self.drain(s);
        if self.has_blocker(perm, i) {
            if !flags.retry {
                self.waiting_line(r);
            }
            return Ok(true);
        }
        self.report(r, flags.retry)?;
        Ok(false)
    }

    /// Prints a completed step of session `r.session` and clears it.
    fn report(&mut self, r: StepRef, retry: bool) -> Result<(), Stop> {
        let step = self.spec.step(r);
        let s = r.session;
        let (_, Outcome { results, error }) = self.sessions.take(s);
        if retry {
            self.sink
                .put(&format!("step {}: <... completed>\n", step.name));
        } else {
            self.sink
                .put(&format!("step {}: {}\n", step.name, step.text));
        }
        for res in &results {
            if let StmtResult::Tuples { columns, rows } = res {
                self.sink.put(&table(columns, rows));
            }
        }
        if let Some(e) = error {
            match e.as_db_error() {
                Some(db) => self.sink.put(&Message::from_db(db).step_error()),
                // The socket closed without a message: libpq's error
                // result has no fields, printed whole.
                None if e.is_closed() => self.sink.put(&format!("{SERVER_CLOSED}\n")),
                None => return Err(e.into()),
            }
        }
        for n in std::mem::take(&mut self.conns[s].notifies) {
            let from = (0..self.conns.len())
                .find(|&c| {
                    self.sessions
                        .get(c)
                        .is_some_and(|x| x.pid == n.process_id())
                })
                .map_or_else(
                    || format!("PID {}", n.process_id()),
                    |c| self.conns[c].name.clone(),
                );
            let line = format!(
                "{}: NOTIFY \"{}\" with payload \"{}\" from {from}\n",
                self.conns[s].name,
                n.channel(),
                n.payload()
            );
            self.sink.put(&line);
        }
        Ok(())
    }

    /// After a stop: cancels what still runs and ends the sessions'
    /// backends, so the teardown can run (best effort, its output not
    /// shown).
    pub async fn cleanup(mut self) {
        self.sessions.cleanup().await;
        if let Some(b) = &self.spec.teardown {
            let ctl = &self.sessions.ctl;
            let _ = tokio::time::timeout(self.max_wait, ctl.batch_execute(&b.sql)).await;
        }
    }
}
