#!/usr/bin/env python3
"""perf stat of each tool's client process on SCRIPT (select-only; 16 clients, -j 1,
READ COMMITTED): task-clock, user/system time, context switches and the
system calls of the client loop, per committed transaction. isobench:
(SECONDS run - 1 s run), as measure.py. Same environment as measure.py;
ROUNDS (2) rounds alternating the tools."""
import json, os, subprocess, sys, tempfile

from measure import CLIENTS, DSN, ISOBENCH, PROTO, SCALE, SECONDS, fresh, num

ROUNDS = int(os.environ.get("ROUNDS", 2))
# SCRIPT: pgbench's built-in script both tools run (select-only).
SCRIPT = os.environ.get("SCRIPT", "select-only")
# TOOLS (pgbench,proto,isobench); ISOBENCH_ARGS: more arguments for isobench
# (e.g. "--observe none").
TOOLS = os.environ.get("TOOLS", "pgbench,proto,isobench").split(",")
ISOBENCH_ARGS = os.environ.get("ISOBENCH_ARGS", "").split()
EVENTS = ["task-clock", "user_time", "system_time", "context-switches",
          "syscalls:sys_enter_sendto", "syscalls:sys_enter_recvfrom", "syscalls:sys_enter_poll",
          "syscalls:sys_enter_ppoll", "syscalls:sys_enter_epoll_wait"]


def perf(cmd):
    """(output, {event: count}) of cmd under perf stat, children included."""
    f = tempfile.mktemp(prefix="libpq-perf-")
    p = subprocess.run(["perf", "stat", "-x", ",", "-o", f, "-e", ",".join(EVENTS), "--"] + cmd,
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]}: {p.stderr}")
    counts = {}
    for line in open(f):
        parts = line.strip().split(",")
        if len(parts) > 2 and parts[2] in EVENTS:
            counts[parts[2]] = float(parts[0]) if parts[0][0].isdigit() else 0.0
    os.unlink(f)
    return p.stdout + p.stderr, counts


def isobench(secs):
    d = tempfile.mkdtemp(prefix="libpq-ib-")
    _, c = perf([ISOBENCH, "run", "-q", "-b", SCRIPT, "-M", "prepared", "-s", str(SCALE), "-c",
                 str(CLIENTS), "-j", "1", "--isolation", "read-committed", "-T", f"{secs}s", "--repeat", "1", "--dsn", DSN + " dbname=postgres",
                 "-o", d] + ISOBENCH_ARGS)
    v = json.load(open(os.path.join(d, "results.json")))
    subprocess.run(["rm", "-rf", d])
    return c, v["runs"][0]["lifetime"]["committed"]


def show(tool, c, tx):
    per = lambda e: c.get(e, 0) / tx
    calls = {e.split("enter_")[1]: round(per(e), 2) for e in EVENTS if e.startswith("syscalls") and c.get(e)}
    print(f"{tool:9} tx {tx:9.0f}  task-clock {per('task-clock') * 1e3:6.2f} µs/tx  user "
          f"{per('user_time') / 1e3:5.2f}  sys {per('system_time') / 1e3:5.2f} µs/tx  "
          f"cs/tx {per('context-switches'):.2f}  syscalls/tx {calls}", flush=True)


for rnd in range(1, ROUNDS + 1):
    print(f"round {rnd} load {os.getloadavg()[0]:.2f}")
    if "pgbench" in TOOLS:
        fresh("bench_pg")
        out, c = perf(["pgbench", "-n", "-M", "prepared", "-b", SCRIPT, "-c", str(CLIENTS), "-j", "1",
                       "-T", str(SECONDS), "bench_pg"])
        show("pgbench", c, num(r"number of transactions actually processed: (\d+)", out))
    if "proto" in TOOLS:
        fresh("bench_pg")
        out, c = perf([PROTO, "--dsn", DSN + " dbname=bench_pg", "-c", str(CLIENTS), "-T", str(SECONDS)])
        show("proto", c, num(r"committed: (\d+)", out))
    if "isobench" in TOOLS:
        (cl, tl), (cs, ts) = isobench(SECONDS), isobench(1)
        show("isobench", {e: cl.get(e, 0) - cs.get(e, 0) for e in EVENTS}, tl - ts)
