#!/usr/bin/env python3
"""Client CPU per committed transaction of isobench builds against pgbench,
alternating, on a server that is already running and loaded (`pgbench -i`).

A diagnostic for changes to the client's hot path: it compares two or more
`isobench` binaries (say the build before a change and the build after) in
the same session, each against pgbench, without the product bench's
study around them. Each tool runs `pgbench`'s arguments (`isobench
pgbench ...` for isobench): SCRIPT (select-only), 16 clients, `-j 1`,
`-M prepared`, SECS (10) seconds, `-n`; CPU is user + system time of the
child (RUSAGE_CHILDREN deltas) divided by the transactions it reports
(each round's line shows the two apart).
The order alternates by round (pgbench first in even rounds). The product
bench (`BENCH_PARTS=cpu cargo bench --bench product`) is what settles the
target; this says which change moved it.

Usage: PGHOST=... PGPORT=... PGUSER=... PGDATABASE=... \\
       ROUNDS=4 SECS=10 bench/cpu_ab.py BIN_A [BIN_B ...]
PGBENCH: the pgbench binary (/usr/lib/postgresql/15/bin/pgbench).
Build each binary as measurements are built: `cargo build --profile
measure` (fat LTO; target/measure/isobench), not the release profile.
"""
import os
import re
import resource
import statistics
import subprocess
import sys

ROUNDS = int(os.environ.get("ROUNDS", "4"))
SECS = os.environ.get("SECS", "10")
SCRIPT = os.environ.get("SCRIPT", "select-only")
PGBENCH = os.environ.get("PGBENCH", "/usr/lib/postgresql/15/bin/pgbench")
ARGS = ["-b", SCRIPT, "-c", "16", "-j", "1", "-T", SECS, "-M", "prepared", "-n"]


def run(cmd):
    """(client CPU µs per transaction, tx/s, user and system µs per
    transaction) of one run of cmd."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    user = r1.ru_utime - r0.ru_utime
    system = r1.ru_stime - r0.ru_stime
    m = re.search(r"number of transactions actually processed: (\d+)", out.stdout)
    if not m:
        sys.exit(f"{cmd[0]}: no transaction count in its output\n{out.stdout}{out.stderr}")
    n = int(m.group(1))
    return (user + system) / n * 1e6, n / float(SECS), user / n * 1e6, system / n * 1e6


def main():
    bins = sys.argv[1:]
    if not bins:
        sys.exit(__doc__)
    tools = ["pgbench"] + bins
    per_tx = {t: [] for t in tools}
    for r in range(ROUNDS):
        for t in tools if r % 2 == 0 else list(reversed(tools)):
            cmd = [PGBENCH] + ARGS if t == "pgbench" else [t, "pgbench"] + ARGS
            us, tps, user, system = run(cmd)
            per_tx[t].append(us)
            print(f"round {r + 1} {t:40s} {us:6.3f} µs/tx {tps:8.0f} tx/s "
                  f"(user {user:5.3f}, system {system:5.3f})", flush=True)
    for b in bins:
        ratios = [x / p for x, p in zip(per_tx[b], per_tx["pgbench"])]
        print(f"{b}: median {statistics.median(per_tx[b]):.3f} µs/tx; "
              f"against pgbench: median {statistics.median(ratios):.3f}, "
              f"rounds {' '.join(f'{x:.3f}' for x in ratios)}")


if __name__ == "__main__":
    main()
