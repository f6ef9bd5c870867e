#!/usr/bin/env python3
"""User-space instructions per transaction of isobench builds and of
pgbench, counted by valgrind (callgrind), on a server that is already
running and loaded (`pgbench -i`).

A diagnostic for the client's hot path that varies far less than CPU
time: each tool runs `pgbench`'s arguments (`isobench
pgbench ...` for isobench), SCRIPT (select-only), 16 clients, `-j 1`,
`-M prepared`, `-n`, twice under callgrind, with T1 and T2 transactions
per client (500 and 1,500). The difference of the two totals over the
difference of the transactions is the marginal count per transaction:
start-up, connections and the end of the run cancel out. It counts user
space only (not the kernel's side of a send or a read, nor what an atomic
instruction or a cache miss costs in cycles), so it says where a change
moves the client's own work. isobench's count still moves between
sessions by up to 10 % (6,100 to 6,850 for one build): its work per
wake-up of the client thread (about 1,800 instructions in tokio's driver
and the wakers) is spread over the transactions that are ready at each
wake-up, and how many are depends on how fast the server answers the
slowed client. Compare builds within one invocation; `bench/cpu_ab.py` and the product bench say
what that does to client CPU. With TOP=N it lists the N functions whose
own (self) instructions per transaction are largest, for each tool.

With CACHE=1 valgrind also simulates the caches (this CPU's, or the
first-level data cache D1=size,ways,line given) and prints the
first-level data misses per transaction (reads and writes). A miss is
invisible to the instruction count and costs about ten cycles when the
second-level cache holds the line: at 16 clients on a thread, isobench's
clients miss about 65-75 times per transaction (about 95 before e5d4360)
and pgbench's 1.3-5.6 (BENCHMARKS.md, "Client CPU, fourth session" and
"sixth session"). The misses of one build move by about 10 between
invocations: compare builds within one, and repeat. CLIENTS sets the
clients (16): the misses grow with them as the clients' state outgrows
the cache.

Usage: PGHOST=... PGPORT=... PGUSER=... PGDATABASE=... \\
       TOP=20 CACHE=1 bench/cpu_instructions.py BIN_A [BIN_B ...]
PGBENCH: the pgbench binary (/usr/lib/postgresql/15/bin/pgbench).
Needs valgrind (`apt-get install valgrind`); each run takes 10-30 s.
"""
import os
import re
import subprocess
import sys
import tempfile

SCRIPT = os.environ.get("SCRIPT", "select-only")
PGBENCH = os.environ.get("PGBENCH", "/usr/lib/postgresql/15/bin/pgbench")
T1 = int(os.environ.get("T1", "500"))
T2 = int(os.environ.get("T2", "1500"))
TOP = int(os.environ.get("TOP", "0"))
CACHE = os.environ.get("CACHE", "") not in ("", "0")
D1 = os.environ.get("D1", "")
CLIENTS = int(os.environ.get("CLIENTS", "16"))
ARGS = ["-b", SCRIPT, "-c", str(CLIENTS), "-j", "1", "-M", "prepared", "-n"]


def callgrind(cmd, per_client, out):
    """The event totals of one run of cmd with per_client transactions
    per client, by event name (Ir: instructions; with CACHE, D1mr and
    D1mw among others); the profile is written to out."""
    cache = ["--cache-sim=yes"] + ([f"--D1={D1}"] if D1 else []) if CACHE else []
    r = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + cache
        + cmd + ARGS + ["-t", str(per_client)],
        capture_output=True, text=True)
    m = re.search(r"Collected : ([\d ]+)", r.stderr)
    if r.returncode != 0 or not m:
        sys.exit(f"{cmd[0]}: the run under valgrind failed\n{r.stdout}{r.stderr}")
    with open(out) as f:
        events = next(line.split()[1:] for line in f if line.startswith("events:"))
    return dict(zip(events, map(int, m.group(1).split())))


def self_counts(profile):
    """Instructions by function (its own, not its callees'), from
    callgrind_annotate's summary."""
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", profile],
                         capture_output=True, text=True).stdout
    counts = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        name = re.sub(r"^\S*?\.(rs|c|S|h):", "", m.group(2).strip())
        name = re.sub(r" \[.*\]$", "", name)
        counts[name] = counts.get(name, 0) + int(m.group(1).replace(",", ""))
    return counts


def main():
    bins = sys.argv[1:]
    if not bins:
        sys.exit(__doc__)
    tx = (T2 - T1) * CLIENTS
    with tempfile.TemporaryDirectory() as d:
        for i, tool in enumerate(["pgbench"] + bins):
            cmd = [PGBENCH] if tool == "pgbench" else [tool, "pgbench"]
            p1, p2 = f"{d}/{i}.1", f"{d}/{i}.2"
            e1, e2 = callgrind(cmd, T1, p1), callgrind(cmd, T2, p2)
            n1, n2 = e1["Ir"], e2["Ir"]
            misses = ""
            if CACHE:
                per = {k: (e2[k] - e1[k]) / tx for k in ("D1mr", "D1mw", "I1mr")}
                misses = (f"; first-level data misses per transaction {per['D1mr'] + per['D1mw']:.1f}"
                          f" (reads {per['D1mr']:.1f}, writes {per['D1mw']:.1f}),"
                          f" instruction misses {per['I1mr']:.1f}")
            print(f"{tool}: {(n2 - n1) / tx:,.0f} instructions per transaction "
                  f"(fixed: {(n1 - (n2 - n1) * T1 / (T2 - T1)) / 1e6:,.1f} M){misses}", flush=True)
            if TOP:
                a, b = self_counts(p1), self_counts(p2)
                diff = {k: (b.get(k, 0) - a.get(k, 0)) / tx for k in set(a) | set(b)}
                for name, n in sorted(diff.items(), key=lambda x: -x[1])[:TOP]:
                    print(f"  {n:8.1f}  {name[:150]}")


if __name__ == "__main__":
    main()
