#!/usr/bin/env python3
"""User-space instructions per transaction of isobench builds and of
pgbench, counted by valgrind (callgrind), on a server that is already
running and loaded (`pgbench -i`).

A diagnostic for the client's hot path that, unlike CPU time, does not
vary from run to run: each tool runs `pgbench`'s arguments (`isobench
pgbench ...` for isobench), SCRIPT (select-only), 16 clients, `-j 1`,
`-M prepared`, `-n`, twice under callgrind, with T1 and T2 transactions
per client (500 and 1,500). The difference of the two totals over the
difference of the transactions is the marginal count per transaction:
start-up, connections and the end of the run cancel out. It counts user
space only (not the kernel's side of a send or a read, nor what an atomic
instruction or a cache miss costs in cycles), so it says where a change
moves the client's own work; `bench/cpu_ab.py` and the product bench say
what that does to client CPU. With TOP=N it lists the N functions whose
own (self) instructions per transaction are largest, for each tool.

Usage: PGHOST=... PGPORT=... PGUSER=... PGDATABASE=... \\
       TOP=20 bench/cpu_instructions.py BIN_A [BIN_B ...]
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
CLIENTS = 16
ARGS = ["-b", SCRIPT, "-c", str(CLIENTS), "-j", "1", "-M", "prepared", "-n"]


def callgrind(cmd, per_client, out):
    """The total instructions of one run of cmd with per_client
    transactions per client; the profile is written to out."""
    r = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        + cmd + ARGS + ["-t", str(per_client)],
        capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", r.stderr)
    if r.returncode != 0 or not m:
        sys.exit(f"{cmd[0]}: the run under valgrind failed\n{r.stdout}{r.stderr}")
    return int(m.group(1))


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
            n1, n2 = callgrind(cmd, T1, p1), callgrind(cmd, T2, p2)
            print(f"{tool}: {(n2 - n1) / tx:,.0f} instructions per transaction "
                  f"(fixed: {(n1 - (n2 - n1) * T1 / (T2 - T1)) / 1e6:,.1f} M)", flush=True)
            if TOP:
                a, b = self_counts(p1), self_counts(p2)
                diff = {k: (b.get(k, 0) - a.get(k, 0)) / tx for k in set(a) | set(b)}
                for name, n in sorted(diff.items(), key=lambda x: -x[1])[:TOP]:
                    print(f"  {n:8.1f}  {name[:150]}")


if __name__ == "__main__":
    main()
