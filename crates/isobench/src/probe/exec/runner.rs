//! The coordinator of one probe run: sessions, their pending steps, lock-wait
//! checks and the setup, teardown and `@final` blocks.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use tokio_postgres::Client;

use super::{Env, ErrorAt, Execution, StepRecord, StepResult, Stuck};
use crate::model::Isolation;
use crate::postgres;
use crate::probe::sessions::{self, Block, Outcome, Sessions, one_line};
use crate::probe::spec::{Probe, StepRef, show_rows};
use crate::probe::txn;

/// What the runner keeps of a step in flight.
struct Pending {
    step: StepRef,
    /// Found waiting on another session's lock.
    waiting: bool,
}

enum Poll {
    /// Completed, and recorded.
    Done,
    Blocked,
    Running,
}

enum Settled {
    Done,
    Blocked,
    Stuck,
}

pub(super) struct Runner<'a> {
    env: &'a Env,
    probe: &'a Probe,
    schema: &'a str,
    level: Isolation,
    sessions: Sessions<Pending>,
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
        ctl: Client,
        schema: &'a str,
        level: Isolation,
    ) -> Self {
        let n = probe.sessions.len();
        Runner {
            env,
            probe,
            schema,
            level,
            sessions: Sessions::new(ctl, env.config.clone(), env.wait_check, n),
            logs: vec![Vec::new(); n],
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

    /// The control connection.
    pub(super) fn ctl(&self) -> &Client {
        &self.sessions.ctl
    }

    /// What the run executed and saw.
    pub(super) fn into_execution(self) -> Execution {
        self.exec
    }
}

impl Runner<'_> {
    fn block_err(&self, what: &str, line: u32, e: &tokio_postgres::Error) -> anyhow::Error {
        anyhow!(
            "probe {} ({}:{line}): {what} failed: {}",
            self.probe.name,
            self.probe.file,
            postgres::error_text(e)
        )
    }

    /// Runs a setup/teardown/`@final` block on `client` (the control
    /// connection when `None`), bounded by the step timeout and by
    /// cancellation (both cancel the query).
    pub(super) async fn block(&self, client: Option<&Client>, sql: &str) -> Block {
        let client = client.unwrap_or(&self.sessions.ctl);
        let env = self.env;
        sessions::block(client, &env.config, sql, env.step_timeout, &env.cancel).await
    }

    /// A block that must succeed: its failure or timeout is an error of
    /// the probe, naming `what` and the block's line.
    async fn required(
        &mut self,
        client: Option<&Client>,
        sql: &str,
        what: &str,
        line: u32,
    ) -> Result<Outcome> {
        match self.block(client, sql).await {
            Block::Done(Outcome { error: Some(e), .. }) => Err(self.block_err(what, line, &e)),
            Block::Done(done) => Ok(done),
            Block::TimedOut => {
                let client = client.unwrap_or(&self.sessions.ctl);
                sessions::cancel_query(client, &self.env.config).await;
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
            self.required(Some(&client), &b.sql, "session setup", b.line)
                .await?;
            self.logs[s].push((None, b.sql.clone(), true));
        }
        self.sessions.open(s, client, pid);
        Ok(())
    }

    pub(super) async fn run(&mut self, plan: &[StepRef], serial: bool) -> Result<()> {
        for b in &self.probe.setup {
            self.required(None, &b.sql, "setup", b.line).await?;
        }
        if !serial {
            for s in 0..self.probe.sessions.len() {
                if plan.iter().any(|r| r.session == s) {
                    self.open_session(s).await?;
                }
            }
        }
        for (i, &r) in plan.iter().enumerate() {
            if self.sessions.get(r.session).is_none() {
                self.open_session(r.session).await?;
            }
            if self.sessions.busy(r.session) && !self.wait_for_session(r.session).await? {
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
        for s in 0..self.sessions.count() {
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
                let _ = self.block(None, &b.sql).await;
            }
            return Ok(());
        }
        if let Some(q) = &self.probe.final_query {
            let done = self.required(None, &q.sql, "@final query", q.line).await?;
            let rows = done.rows();
            self.exec.trace.push(format!("final: {}", show_rows(&rows)));
            self.exec.final_rows = Some(rows);
        }
        if let Some(b) = &self.probe.teardown {
            self.required(None, &b.sql, "teardown", b.line).await?;
        }
        Ok(())
    }

    fn send(&mut self, r: StepRef) {
        let step = self.probe.step(r);
        self.exec
            .trace
            .push(format!("step {}: {}", step.name, one_line(&step.sql)));
        let pending = Pending {
            step: r,
            waiting: false,
        };
        self.sessions.send(r.session, &step.sql, pending);
    }

    /// Waits up to `window` for session `s`'s pending step; if it has not
    /// completed, asks the server whether it waits on a lock.
    async fn poll(&mut self, s: usize, window: Duration) -> Result<Poll> {
        if self.sessions.wait(s, window).await? {
            let (pending, done) = self.sessions.take(s);
            let result = match done.error {
                None => StepResult::Rows(done.rows()),
                Some(e) => match e.as_db_error() {
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
            };
            self.complete(s, pending, result);
            return Ok(Poll::Done);
        }
        Ok(if self.sessions.is_blocked(s).await? {
            Poll::Blocked
        } else {
            Poll::Running
        })
    }

    fn complete(&mut self, s: usize, pending: Pending, result: StepResult) {
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
        let step = self.sessions.tag(s).expect("a pending step").step;
        let stuck = Stuck {
            at: self.probe.label(step),
            session: s,
            step: Some(step),
            blocked,
            waited: self.sessions.in_flight_for(s),
        };
        self.exec.trace.push(format!(
            "step {}: stuck ({} for {:.1} s); cancelled",
            self.probe.step(step).name,
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
                Poll::Done => return Ok(Settled::Done),
                Poll::Blocked => {
                    self.sessions.tag_mut(s).waiting = true;
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
        for o in 0..self.sessions.count() {
            if o != skip && self.sessions.busy(o) && matches!(self.settle(o).await?, Settled::Stuck)
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
                Poll::Done => return Ok(true),
                Poll::Blocked | Poll::Running => {
                    if self.env.cancel.is_cancelled() {
                        self.exec.interrupted = true;
                        return Ok(false);
                    }
                    if !self.settle_others(s).await? {
                        return Ok(false);
                    }
                    if start.elapsed() > self.env.step_timeout {
                        let last = self.poll(s, Duration::ZERO).await?;
                        if matches!(last, Poll::Done) {
                            return Ok(true);
                        }
                        self.mark_stuck(s, matches!(last, Poll::Blocked));
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// After the last step: every pending step must complete.
    async fn finish_pending(&mut self) -> Result<()> {
        for s in 0..self.sessions.count() {
            if self.sessions.busy(s) && !self.wait_for_session(s).await? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Runs session `s`'s teardown and closes its connection (an open
    /// transaction rolls back). False when the teardown got stuck.
    async fn close_session(&mut self, s: usize) -> bool {
        let Some(sess) = self.sessions.close(s) else {
            return true;
        };
        let Some(b) = &self.probe.sessions[s].teardown else {
            return true;
        };
        let label = format!("{}:teardown", self.probe.sessions[s].name);
        self.exec.trace.push(format!(
            "teardown {}: {}",
            self.probe.sessions[s].name,
            one_line(&b.sql)
        ));
        let start = Instant::now();
        match self.block(Some(&sess.client), &b.sql).await {
            Block::Done(done) => {
                if let Some(e) = &done.error {
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
                self.logs[s].push((None, b.sql.clone(), done.error.is_none()));
                true
            }
            Block::TimedOut => {
                self.sessions.reopen(s, sess);
                let blocked = self.sessions.is_blocked(s).await.unwrap_or(false);
                self.sessions.cancel(s).await;
                self.exec.trace.push(format!("{label}: stuck; cancelled"));
                self.exec.stuck = Some(Stuck {
                    at: label,
                    session: s,
                    step: None,
                    blocked,
                    waited: start.elapsed(),
                });
                false
            }
            Block::Interrupted => {
                self.sessions.reopen(s, sess);
                self.exec.interrupted = true;
                false
            }
        }
    }

    /// Cancels what still runs and ends every session's backend.
    pub(super) async fn cleanup(&mut self) {
        self.sessions.cleanup().await;
    }
}
