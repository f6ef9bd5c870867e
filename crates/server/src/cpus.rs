//! CPU placement (`--cpus server=0,clients=1`): which CPUs this process
//! may use, and pinning a thread or a child process to a set of them with
//! Linux's `sched_setaffinity(2)` (man 2 sched_setaffinity). A child
//! inherits its parent's mask across fork and exec, so pinning the
//! postmaster before it starts pins every backend it forks.
//!
//! The client threads are pinned by the thread itself at its start
//! ([`pin_this_thread`], from the CPUs [`set_client_cpus`] recorded for
//! the process); the managed server through its `Command`
//! ([`pin_command`]).

use std::sync::Mutex;

/// The CPUs this process may run on (its affinity mask); every online
/// CPU counted by `std::thread::available_parallelism` as a fallback.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a plain bit set the kernel fills; the size passed
    // is its own.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            return (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect();
        }
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..n).collect()
}

/// A `cpu_set_t` holding `cpus`.
fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: an all-zero `cpu_set_t` is the empty set; CPU_SET only sets
    // bits below CPU_SETSIZE (checked).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        set
    }
}

/// Pins `cmd`'s process, and so everything it forks, to `cpus`: the mask
/// is set in the child between fork and exec.
pub fn pin_command(cmd: &mut std::process::Command, cpus: &[usize]) {
    use std::os::unix::process::CommandExt;
    let set = cpu_set(cpus);
    // SAFETY: the closure runs in the forked child before exec and only
    // calls sched_setaffinity, an async-signal-safe system call, on a set
    // built before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The CPUs client threads are pinned to (`--cpus clients=LIST`); none:
/// not pinned.
static CLIENT_CPUS: Mutex<Option<Vec<usize>>> = Mutex::new(None);

/// The CPUs a managed server started from now on is pinned to (`--cpus
/// server=LIST`); none: not pinned.
static SERVER_CPUS: Mutex<Option<Vec<usize>>> = Mutex::new(None);

/// Records the CPUs of managed servers started from now on (`None`: not
/// pinned).
pub fn set_server_cpus(cpus: Option<Vec<usize>>) {
    *SERVER_CPUS.lock().unwrap_or_else(|e| e.into_inner()) = cpus;
}

/// The CPUs [`set_server_cpus`] recorded.
pub fn server_cpus() -> Option<Vec<usize>> {
    SERVER_CPUS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// Records the CPUs client threads started from now on are pinned to
/// (`None`: not pinned).
pub fn set_client_cpus(cpus: Option<Vec<usize>>) {
    *CLIENT_CPUS.lock().unwrap_or_else(|e| e.into_inner()) = cpus;
}

/// The CPUs [`set_client_cpus`] recorded.
pub fn client_cpus() -> Option<Vec<usize>> {
    CLIENT_CPUS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// Pins the calling thread to the client CPUs, if any are set.
///
/// Errors: the kernel refused the mask (a CPU went offline since it was
/// checked), with its message.
pub fn pin_this_thread() -> Result<(), String> {
    let cpus = CLIENT_CPUS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let Some(cpus) = cpus else {
        return Ok(());
    };
    let set = cpu_set(&cpus);
    // SAFETY: pid 0 is the calling thread; the set and its size are ours.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "cannot pin a client thread to CPUs {cpus:?}: {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// The CPUs the calling thread may run on (for tests).
#[cfg(test)]
fn this_thread_cpus() -> Vec<usize> {
    allowed_cpus()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_and_a_child_are_pinned() {
        let all = allowed_cpus();
        assert!(!all.is_empty());
        let one = vec![*all.last().unwrap()];
        // A thread of its own, so the test's thread keeps its mask.
        let got = std::thread::spawn({
            let one = one.clone();
            move || {
                set_client_cpus(Some(one));
                let r = pin_this_thread();
                set_client_cpus(None);
                r.map(|()| this_thread_cpus())
            }
        })
        .join()
        .unwrap()
        .unwrap();
        assert_eq!(got, one);
        // A child: `taskset -p` is not needed, /proc/self/status says it.
        let mut cmd = std::process::Command::new("grep");
        cmd.args(["Cpus_allowed_list", "/proc/self/status"]);
        pin_command(&mut cmd, &one);
        let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        assert!(
            out.trim().ends_with(&format!("\t{}", one[0])),
            "{out:?} for CPU {}",
            one[0]
        );
    }
}
