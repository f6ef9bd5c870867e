//! Guarantees that no managed PostgreSQL outlives isobench.
//!
//! Three layers, because each covers a way of dying the others miss:
//!
//! 1. [`crate::ManagedServer`]'s `Drop` stops the server on normal
//!    exit, on error, and while unwinding from a panic on the owning thread.
//! 2. A registry of live postmaster pids that [`kill_all`] signals; the panic
//!    hook and the second Ctrl-C call it, because they end the process
//!    without running destructors on other threads.
//! 3. The postmaster is started with `PR_SET_PDEATHSIG = SIGQUIT` (immediate
//!    shutdown), so the kernel stops it even when isobench is killed with
//!    SIGKILL. The signal fires when the *thread* that forked the child
//!    exits, so every server is forked from one dedicated thread that lives
//!    as long as the process.
//!
//! A managed pgbouncer ([`crate::pgbouncer`]) is guarded the
//! same three ways, with SIGKILL where the postmaster gets SIGQUIT: it
//! holds nothing to flush, and its signals changed meaning between
//! versions (SIGTERM was an immediate shutdown before 1.23, a "super
//! safe" one that waits for clients since), so only SIGKILL is certain
//! to end it at once.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
/// Live guarded processes: pid, the private directory to remove after
/// it, and the signal that stops it at once (SIGQUIT for a postmaster,
/// SIGKILL for a pooler).
static LIVE: Mutex<Vec<(u32, PathBuf, Signal)>> = Mutex::new(Vec::new());
/// Process groups of running external load commands
/// (`load_cmd`), killed by [`kill_all`] too.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Registers process group `pgid` (an external command's) for [`kill_all`].
pub fn register_group(pgid: i32) {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner()).push(pgid);
}

/// Removes process group `pgid` from the registry.
pub fn forget_group(pgid: i32) {
    GROUPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|g| *g != pgid);
}

/// Spawns `cmd` from the long-lived spawner thread, in its own process group
/// (so a terminal's Ctrl-C reaches isobench only, which then shuts the server
/// down in order), with the parent-death signal set to SIGQUIT.
///
/// `dir` is removed by [`kill_all`] once the server has exited.
///
/// Errors: those of `Command::spawn` (binary missing, permission denied).
pub fn spawn_guarded(cmd: Command, dir: PathBuf) -> std::io::Result<Child> {
    spawn_with(cmd, dir, Signal::SIGQUIT)
}

/// [`spawn_guarded`] for a connection pooler: its parent-death signal and
/// the one [`kill_all`] sends are SIGKILL (see the module docs).
///
/// Errors: as [`spawn_guarded`].
pub fn spawn_guarded_pooler(cmd: Command, dir: PathBuf) -> std::io::Result<Child> {
    spawn_with(cmd, dir, Signal::SIGKILL)
}

fn spawn_with(mut cmd: Command, dir: PathBuf, stop: Signal) -> std::io::Result<Child> {
    cmd.process_group(0);
    let death = stop as libc::c_int;
    // SAFETY: prctl and getppid are async-signal-safe; the closure allocates
    // nothing and touches no locks.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, death) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if libc::getppid() == 1 {
                return Err(std::io::Error::other("parent exited during spawn"));
            }
            Ok(())
        });
    }
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("isobench-spawner".into())
            .spawn(move || {
                // Serve requests; when every sender is gone keep the thread
                // alive anyway, since its exit would signal the children.
                for (mut cmd, reply) in rx.iter() {
                    let _ = reply.send(cmd.spawn());
                }
                loop {
                    std::thread::park();
                }
            })
            .expect("spawn isobench-spawner thread");
        Mutex::new(tx)
    });
    let (reply_tx, reply_rx) = mpsc::channel();
    sender
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((cmd, reply_tx))
        .map_err(|_| std::io::Error::other("spawner thread is gone"))?;
    let child = reply_rx
        .recv()
        .map_err(|_| std::io::Error::other("spawner thread is gone"))??;
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((child.id(), dir, stop));
    Ok(child)
}

/// Stops `child`: each `(signal, wait)` in turn while it still runs,
/// sending the signal and waiting up to `wait` for it to exit; then reaps
/// it and [`forget`]s it. The last step should be SIGKILL.
pub fn stop(mut child: Child, steps: &[(Signal, Duration)]) {
    let pid = Pid::from_raw(child.id() as i32);
    for &(signal, wait) in steps {
        if !matches!(child.try_wait(), Ok(None)) {
            break;
        }
        let _ = kill(pid, signal);
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let _ = child.wait();
    forget(child.id());
}

/// Removes `pid` from the registry once it has been reaped.
pub fn forget(pid: u32) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(p, _, _)| *p != pid);
}

/// Kills every registered external command's process group, then sends
/// SIGQUIT (immediate shutdown) to every registered postmaster and
/// SIGKILL to every registered pooler, waits up to 5 s for each to exit,
/// and removes its directory. For the panic hook and the second Ctrl-C,
/// which end the process without running destructors.
pub fn kill_all() {
    for pgid in GROUPS.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
        let _ = nix::sys::signal::killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    let live = LIVE.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for (pid, _, stop) in &live {
        // A server paused by `--fault pause` acts on nothing until it is
        // continued.
        signal_family(*pid, Signal::SIGCONT);
        let _ = kill(Pid::from_raw(*pid as i32), *stop);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for (pid, dir, _) in live {
        let pid = Pid::from_raw(pid as i32);
        while Instant::now() < deadline {
            use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
            match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => std::thread::sleep(Duration::from_millis(20)),
                _ => break, // exited, or already reaped elsewhere
            }
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Installs a panic hook that stops every managed server when the main
/// thread panics, before the default hook prints the panic. Idempotent.
pub fn install_panic_hook() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // A panic on the main thread ends the process; one in a task or
            // client thread is caught and reported by the run instead.
            if std::thread::current().name() == Some("main") {
                kill_all();
            }
            default(info);
        }));
    });
}

/// Sends `signal` to process `pid` and to each of its children (a
/// postmaster's backends and auxiliary processes, found by their parent in
/// /proc). Each PostgreSQL child makes itself a process group leader
/// (`InitPostmasterChild` calls `setsid`), so signalling the postmaster's
/// group would miss them. Returns how many children it signalled; errors
/// (a child that just exited) are ignored.
pub fn signal_family(pid: u32, signal: Signal) -> usize {
    let _ = kill(Pid::from_raw(pid as i32), signal);
    let children = children_of(pid);
    for c in &children {
        let _ = kill(Pid::from_raw(*c as i32), signal);
    }
    children.len()
}

/// The pids of `pid`'s children, from the fourth field (ppid) of each
/// /proc/PID/stat; empty where /proc cannot be read.
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| {
            // "PID (COMM) STATE PPID ...": COMM may hold spaces and
            // parentheses, so read after the last ')'.
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|stat| {
                    let rest = &stat[stat.rfind(')')? + 1..];
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}
