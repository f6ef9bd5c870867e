//! The coordinator of one probe run: sessions, their pending steps, lock-wait
//! checks and the setup, teardown and `@final` blocks.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use tokio::task::JoinHandle;
use tokio_postgres::{Client, SimpleQueryMessage};

use super::{Env, ErrorAt, Execution, StepRecord, StepResult, Stuck};
use crate::model::Isolation;
use crate::postgres;
use crate::probe::spec::{Probe, StepRef, show_rows};
use crate::probe::txn;

type StepTask = JoinHandle<Result<Vec<SimpleQueryMessage>, tokio_postgres::Error>>;

struct Pending {
    step: StepRef,
    task: StepTask,
    waiting: bool,
    since: Instant,
}

struct Sess {
    client: Arc<Client>,
    pid: i32,
    pending: Option<Pending>,
}

enum Poll {
    Done(StepResult),
    Blocked,
    Running,
}

enum Settled {
    Done,
    Blocked,
    Stuck,
}

/// How a setup, teardown or `@final` block ended.
pub(super) enum Block {
    Done(Result<Vec<SimpleQueryMessage>, tokio_postgres::Error>),
    TimedOut,
    Interrupted,
}

pub(super) struct Runner<'a> {
    env: &'a Env,
    probe: &'a Probe,
    ctl: &'a Client,
    schema: &'a str,
    level: Isolation,
    sessions: Vec<Option<Sess>>,
    /// Per session: what it executed (setup, steps, teardown), for
    /// [`txn::step_outcomes`].
    logs: Vec<Vec<(Option<StepRef>, String, bool)>>,
    exec: Execution,
}

impl<'a> Runner<'a> {
    /// A run of `probe` at `level` in `schema`, controlled through `ctl`;
    /// no session is open yet.
    pub(super) fn new(
        env: &'a Env,
        probe: &'a Probe,
        ctl: &'a Client,
        schema: &'a str,
        level: Isolation,
    ) -> Self {
        Runner {
            env,
            probe,
            ctl,
            schema,
            level,
            sessions: (0..probe.sessions.len()).map(|_| None).collect(),
            logs: vec![Vec::new(); probe.sessions.len()],
            exec: Execution {
                records: Vec::new(),
                step_committed: BTreeMap::new(),
                committed: Vec::new(),
                final_rows: None,
                stuck: None,
                errors: Vec::new(),
                interrupted: false,
                trace: Vec::new(),
            },
        }
    }

    /// What the run executed and saw.
    pub(super) fn into_execution(self) -> Execution {
        self.exec
    }
}

impl Runner<'_> {
    /// Asks the server to cancel what `client` runs (best effort; waits
    /// for the server's close, as libpq does: see
    /// [`postgres::cancel`]).
    async fn cancel_query(&self, client: &Client) {
        postgres::cancel::cancel(client, &self.env.config).await;
    }

    fn block_err(&self, what: &str, line: u32, e: &tokio_postgres::Error) -> anyhow::Error {
        anyhow!(
            "probe {} ({}:{line}): {what} failed: {}",
            self.probe.name,
            self.probe.file,
            postgres::error_text(e)
        )
    }

    /// Runs a setup/teardown/`@final` block on `client`, bounded by the
    /// step timeout and by cancellation (both cancel the query).
    /// After [`Block::TimedOut`] the caller cancels the query (having
    /// looked at what it waits for, if it likes).
    pub(super) async fn block(&self, client: &Client, sql: &str) -> Block {
        tokio::select! {
            r = client.simple_query(sql) => Block::Done(r),
            () = tokio::time::sleep(self.env.step_timeout) => Block::TimedOut,
            () = self.env.cancel.cancelled() => {
                self.cancel_query(client).await;
                Block::Interrupted
            }
        }
    }

    /// A block that must succeed: its failure or timeout is an error of
    /// the probe, naming `what` and the block's line.
    async fn required(
        &mut self,
        client: &Client,
        sql: &str,
        what: &str,
        line: u32,
    ) -> Result<Vec<SimpleQueryMessage>> {
        match self.block(client, sql).await {
            Block::Done(Ok(msgs)) => Ok(msgs),
            Block::Done(Err(e)) => Err(self.block_err(what, line, &e)),
            Block::TimedOut => {
                self.cancel_query(client).await;
                bail!(
                    "probe {} ({}:{line}): {what} did not finish within {:.1} s (waiting on a lock?)",
                    self.probe.name,
                    self.probe.file,
                    self.env.step_timeout.as_secs_f64()
                )
            }
            Block::Interrupted => {
                self.exec.interrupted = true;
                bail!("interrupted")
            }
        }
    }

    /// Connects session `s`, sets its level and search path, runs its setup.
    async fn open_session(&mut self, s: usize) -> Result<()> {
        let client = postgres::connect(&self.env.config).await?;
        let init = format!(
            "SET search_path = {}; SET default_transaction_isolation = '{}'",
            self.schema,
            self.level.sql().to_ascii_lowercase()
        );
        client.batch_execute(&init).await?;
        let pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await?
            .get(0);
        if let Some(b) = &self.probe.sessions[s].setup {
            self.required(&client, &b.sql, "session setup", b.line)
                .await?;
            self.logs[s].push((None, b.sql.clone(), true));
        }
        self.sessions[s] = Some(Sess {
            client: Arc::new(client),
            pid,
            pending: None,
        });
        Ok(())
    }

    pub(super) async fn run(&mut self, plan: &[StepRef], serial: bool) -> Result<()> {
        for b in &self.probe.setup {
            self.required(self.ctl, &b.sql, "setup", b.line).await?;
        }
        if !serial {
            for s in 0..self.probe.sessions.len() {
                if plan.iter().any(|r| r.session == s) {
                    self.open_session(s).await?;
                }
            }
        }
        for (i, &r) in plan.iter().enumerate() {
            if self.sessions[r.session].is_none() {
                self.open_session(r.session).await?;
            }
            if self.sessions[r.session]
                .as_ref()
                .is_some_and(|s| s.pending.is_some())
                && !self.wait_for_session(r.session).await?
            {
                return Ok(());
            }
            if self.env.cancel.is_cancelled() {
                self.exec.interrupted = true;
                return Ok(());
            }
            self.send(r);
            match self.settle(r.session).await? {
                Settled::Done => {}
                Settled::Blocked => {
                    let line = self.exec.trace.last_mut().expect("the step's line");
                    line.push_str(" <waiting ...>");
                }
                Settled::Stuck => return Ok(()),
            }
            if !self.settle_others(r.session).await? {
                return Ok(());
            }
            if serial
                && !plan[i + 1..].iter().any(|x| x.session == r.session)
                && !self.close_session(r.session).await
            {
                return Ok(());
            }
        }
        self.finish_pending().await?;
        for s in 0..self.sessions.len() {
            if !self.close_session(s).await {
                return Ok(());
            }
        }
        Ok(())
    }

    /// After the sessions are gone: which transactions committed, the
    /// `@final` query, the global teardown.
    pub(super) async fn finish(&mut self) -> Result<()> {
        for (s, log) in self.logs.iter().enumerate() {
            let log: Vec<txn::Executed<'_>> = log
                .iter()
                .map(|(step, sql, ok)| txn::Executed {
                    step: *step,
                    sql,
                    ok: *ok,
                })
                .collect();
            let outcomes = txn::step_outcomes(&log);
            let stuck_here = self.exec.stuck.as_ref().is_some_and(|x| x.session == s);
            let ran = outcomes.keys().count() > 0;
            self.exec
                .committed
                .push(ran && !stuck_here && outcomes.values().all(|c| *c));
            self.exec.step_committed.extend(outcomes);
        }
        if self.exec.stuck.is_some() || self.exec.interrupted {
            if let Some(b) = &self.probe.teardown {
                let _ = self.block(self.ctl, &b.sql).await;
            }
            return Ok(());
        }
        if let Some(q) = &self.probe.final_query {
            let msgs = self
                .required(self.ctl, &q.sql, "@final query", q.line)
                .await?;
            let rows = rows_of(&msgs);
            self.exec.trace.push(format!("final: {}", show_rows(&rows)));
            self.exec.final_rows = Some(rows);
        }
        if let Some(b) = &self.probe.teardown {
            self.required(self.ctl, &b.sql, "teardown", b.line).await?;
        }
        Ok(())
    }

    fn send(&mut self, r: StepRef) {
        let step = self.probe.step(r);
        self.exec
            .trace
            .push(format!("step {}: {}", step.name, one_line(&step.sql)));
        let sess = self.sessions[r.session].as_mut().expect("session is open");
        let client = sess.client.clone();
        let sql = step.sql.clone();
        sess.pending = Some(Pending {
            step: r,
            task: tokio::spawn(async move { client.simple_query(&sql).await }),
            waiting: false,
            since: Instant::now(),
        });
    }
    /// Waits up to `window` for session `s`'s pending step; if it has not
    /// completed, asks the server whether it waits on a lock.
    async fn poll(&mut self, s: usize, window: Duration) -> Result<Poll> {
        let sess = self.sessions[s].as_mut().expect("session is open");
        let pending = sess.pending.as_mut().expect("a pending step");
        if let Ok(joined) = tokio::time::timeout(window, &mut pending.task).await {
            let result = match joined {
                Ok(Ok(msgs)) => StepResult::Rows(rows_of(&msgs)),
                Ok(Err(e)) => match e.as_db_error() {
                    Some(db) => StepResult::Error {
                        sqlstate: db.code().code().to_string(),
                        message: db.message().to_string(),
                    },
                    None => bail!(
                        "probe {}: session {} lost its connection: {}",
                        self.probe.name,
                        self.probe.sessions[s].name,
                        postgres::error_text(&e)
                    ),
                },
                Err(e) => bail!("probe {}: a step task failed: {e}", self.probe.name),
            };
            return Ok(Poll::Done(result));
        }
        let pid = sess.pid;
        let blocked = self.is_blocked(s, pid).await?;
        Ok(if blocked {
            Poll::Blocked
        } else {
            Poll::Running
        })
    }

    /// Whether backend `pid` of session `s` waits on a lock held by
    /// another session of the probe.
    async fn is_blocked(&self, s: usize, pid: i32) -> Result<bool> {
        let others: Vec<i32> = self
            .sessions
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != s)
            .filter_map(|(_, x)| x.as_ref().map(|x| x.pid))
            .collect();
        Ok(self
            .env
            .wait_check
            .is_blocked(self.ctl, pid, &others)
            .await?)
    }

    fn complete(&mut self, s: usize, result: StepResult) {
        let sess = self.sessions[s].as_mut().expect("session is open");
        let pending = sess.pending.take().expect("a pending step");
        if pending.waiting {
            self.exec.trace.push(format!(
                "step {}: <... completed>",
                self.probe.step(pending.step).name
            ));
        }
        match &result {
            StepResult::Rows(rows) if !rows.is_empty() => {
                self.exec.trace.push(format!("  rows: {}", show_rows(rows)));
            }
            StepResult::Rows(_) => {}
            StepResult::Error { sqlstate, message } => {
                self.exec
                    .trace
                    .push(format!("  ERROR {sqlstate}: {message}"));
                self.exec.errors.push(ErrorAt {
                    at: self.probe.label(pending.step),
                    sqlstate: sqlstate.clone(),
                    message: message.clone(),
                });
            }
        }
        self.logs[s].push((
            Some(pending.step),
            self.probe.step(pending.step).sql.clone(),
            matches!(result, StepResult::Rows(_)),
        ));
        self.exec.records.push(StepRecord {
            step: pending.step,
            waited: pending.waiting,
            result,
        });
    }

    fn mark_stuck(&mut self, s: usize, blocked: bool) {
        let sess = self.sessions[s].as_ref().expect("session is open");
        let pending = sess.pending.as_ref().expect("a pending step");
        let stuck = Stuck {
            at: self.probe.label(pending.step),
            session: s,
            step: Some(pending.step),
            blocked,
            waited: pending.since.elapsed(),
        };
        self.exec.trace.push(format!(
            "step {}: stuck ({} for {:.1} s); cancelled",
            self.probe.step(pending.step).name,
            if blocked {
                "waiting on a lock"
            } else {
                "running"
            },
            stuck.waited.as_secs_f64()
        ));
        self.exec.stuck = Some(stuck);
    }

    /// Watches session `s`'s just-sent or just-released step until it
    /// completes or waits on a lock; stuck when it does neither within the
    /// step timeout.
    async fn settle(&mut self, s: usize) -> Result<Settled> {
        let deadline = Instant::now() + self.env.step_timeout;
        let mut window = Duration::from_millis(1);
        loop {
            match self.poll(s, window).await? {
                Poll::Done(r) => {
                    self.complete(s, r);
                    return Ok(Settled::Done);
                }
                Poll::Blocked => {
                    let p = self.sessions[s].as_mut().and_then(|x| x.pending.as_mut());
                    p.expect("a pending step").waiting = true;
                    return Ok(Settled::Blocked);
                }
                Poll::Running if self.env.cancel.is_cancelled() => {
                    self.exec.interrupted = true;
                    return Ok(Settled::Stuck);
                }
                Poll::Running if Instant::now() >= deadline => {
                    self.mark_stuck(s, false);
                    return Ok(Settled::Stuck);
                }
                Poll::Running => window = (window * 2).min(Duration::from_millis(50)),
            }
        }
    }

    /// Settles every pending step except session `skip`'s. False when one
    /// got stuck.
    async fn settle_others(&mut self, skip: usize) -> Result<bool> {
        for o in 0..self.sessions.len() {
            if o != skip
                && self.sessions[o]
                    .as_ref()
                    .is_some_and(|x| x.pending.is_some())
                && matches!(self.settle(o).await?, Settled::Stuck)
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Before a session's next step: waits for its pending one, settling
    /// the others meanwhile (one of them may hold the lock). False when the
    /// wait passed the step timeout.
    async fn wait_for_session(&mut self, s: usize) -> Result<bool> {
        let start = Instant::now();
        loop {
            match self.poll(s, Duration::from_millis(10)).await? {
                Poll::Done(r) => {
                    self.complete(s, r);
                    return Ok(true);
                }
                Poll::Blocked | Poll::Running => {
                    if self.env.cancel.is_cancelled() {
                        self.exec.interrupted = true;
                        return Ok(false);
                    }
                    if !self.settle_others(s).await? {
                        return Ok(false);
                    }
                    if start.elapsed() > self.env.step_timeout {
                        let blocked = matches!(self.poll(s, Duration::ZERO).await?, Poll::Blocked);
                        self.mark_stuck(s, blocked);
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// After the last step: every pending step must complete.
    async fn finish_pending(&mut self) -> Result<()> {
        for s in 0..self.sessions.len() {
            if self.sessions[s]
                .as_ref()
                .is_some_and(|x| x.pending.is_some())
                && !self.wait_for_session(s).await?
            {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Runs session `s`'s teardown and closes its connection (an open
    /// transaction rolls back). False when the teardown got stuck.
    async fn close_session(&mut self, s: usize) -> bool {
        let Some(sess) = self.sessions[s].take() else {
            return true;
        };
        if let Some(b) = &self.probe.sessions[s].teardown {
            let label = format!("{}:teardown", self.probe.sessions[s].name);
            self.exec.trace.push(format!(
                "teardown {}: {}",
                self.probe.sessions[s].name,
                one_line(&b.sql)
            ));
            let start = Instant::now();
            match self.block(&sess.client, &b.sql).await {
                Block::Done(r) => {
                    if let Err(e) = &r {
                        let (sqlstate, message) = match e.as_db_error() {
                            Some(db) => (db.code().code().to_string(), db.message().to_string()),
                            None => ("08000".to_string(), postgres::error_text(e)),
                        };
                        self.exec
                            .trace
                            .push(format!("  ERROR {sqlstate}: {message}"));
                        self.exec.errors.push(ErrorAt {
                            at: label,
                            sqlstate,
                            message,
                        });
                    }
                    self.logs[s].push((None, b.sql.clone(), r.is_ok()));
                }
                Block::TimedOut => {
                    let blocked = self.is_blocked(s, sess.pid).await.unwrap_or(false);
                    self.cancel_query(&sess.client).await;
                    self.exec.trace.push(format!("{label}: stuck; cancelled"));
                    self.exec.stuck = Some(Stuck {
                        at: label,
                        session: s,
                        step: None,
                        blocked,
                        waited: start.elapsed(),
                    });
                    self.sessions[s] = Some(sess);
                    return false;
                }
                Block::Interrupted => {
                    self.exec.interrupted = true;
                    self.sessions[s] = Some(sess);
                    return false;
                }
            }
        }
        true
    }

    /// Cancels what still runs and ends every session's backend.
    pub(super) async fn cleanup(&mut self) {
        let mut pids = Vec::new();
        for sess in self.sessions.iter_mut().flatten() {
            if let Some(p) = sess.pending.take() {
                postgres::cancel::cancel(&sess.client, &self.env.config).await;
                p.task.abort();
                pids.push(sess.pid);
            }
        }
        self.sessions.iter_mut().for_each(|s| *s = None);
        if !pids.is_empty() {
            let _ = self
                .ctl
                .execute(
                    "SELECT pg_terminate_backend(pid) FROM unnest($1::int4[]) AS pid",
                    &[&pids],
                )
                .await;
        }
    }
}

/// Rows of all statements of a simple query, in order.
fn rows_of(msgs: &[SimpleQueryMessage]) -> Vec<String> {
    msgs.iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|i| row.get(i).unwrap_or("NULL").to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            _ => None,
        })
        .collect()
}

fn one_line(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}
