#!/usr/bin/env python3
"""Issue #29 item 2: design (a) (this crate's libpq prototype) against
pgbench and the `isobench` binary, rounds alternating the three tools.

Needs a running PostgreSQL reachable through libpq's environment
(PGHOST, PGPORT, PGUSER) with a database `tmpl` holding `pgbench -i -s
SCALE` data (made here when absent). Each pgbench and prototype run gets a
fresh copy of `tmpl`, VACUUM ANALYZEd and CHECKPOINTed (isobench copies
its own). Client CPU of every tool is measured from outside: user and
system time of the child process (getrusage RUSAGE_CHILDREN deltas, as
/usr/bin/time). For isobench, whose process also loads its data, CPU per
committed transaction is (CPU of a SECONDS run - CPU of a 1 s run) /
(lifetime commits of the one - of the other), as bench/product.rs; the
in-process figure of results.json (client_cpu_us_per_tx) is printed too.

Environment: ROUNDS (4), SECONDS (10), SCALE (10), CLIENTS (16),
CASES (select-rc,tpcb-rc,tpcb-ser), ISOBENCH (path of the release binary),
PROTO (path of libpq-proto), OUT (JSON lines, one per run).
"""
import json, os, re, resource, subprocess, sys, tempfile, statistics, time

ROUNDS = int(os.environ.get("ROUNDS", 4))
SECONDS = int(os.environ.get("SECONDS", 10))
SCALE = int(os.environ.get("SCALE", 10))
CLIENTS = int(os.environ.get("CLIENTS", 16))
CASES = os.environ.get("CASES", "select-rc,tpcb-rc,tpcb-ser").split(",")
HERE = os.path.dirname(os.path.abspath(__file__))
ISOBENCH = os.environ.get("ISOBENCH", os.path.join(HERE, "../../target/measure/isobench"))
PROTO = os.environ.get("PROTO", os.path.join(HERE, "target/release/libpq-proto"))
OUT = os.environ.get("OUT", "/tmp/libpq-measure.jsonl")
HOST, PORT, USER = os.environ["PGHOST"], os.environ["PGPORT"], os.environ.get("PGUSER", "postgres")
DSN = f"host={HOST} port={PORT} user={USER}"
LEVEL = {"rc": ("read committed", "read-committed"), "ser": ("serializable", "serializable")}


def psql(db, sql):
    p = subprocess.run(["psql", "-X", "-q", "-d", db, "-c", sql], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"psql {db}: {sql}: {p.stderr}")


def fresh(db):
    psql("postgres", f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    psql("postgres", f"CREATE DATABASE {db} TEMPLATE tmpl")
    psql(db, "VACUUM ANALYZE")
    psql(db, "CHECKPOINT")


def timed(cmd, env=None):
    """Run cmd; (stdout+stderr, user s, sys s) of the child."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({p.returncode}): {p.stderr}")
    return p.stdout + p.stderr, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime


def num(pat, text):
    m = re.search(pat, text)
    if not m:
        sys.exit(f"no /{pat}/ in:\n{text}")
    return float(m.group(1))


def run_pgbench(script, iso):
    fresh("bench_pg")
    level = LEVEL[iso][0].replace(" ", "\\ ")
    env = dict(os.environ, PGOPTIONS=f"-c default_transaction_isolation={level}")
    out, u, s = timed(["pgbench", "-n", "-M", "prepared", "-b", script, "-c", str(CLIENTS), "-j", "1",
                       "-T", str(SECONDS), "--max-tries", "10", "bench_pg"], env)
    committed = num(r"number of transactions actually processed: (\d+)", out)
    failed = num(r"number of failed transactions: (\d+)", out) if "failed transactions" in out else 0
    return dict(tps=num(r"tps = ([\d.]+)", out), committed=committed, failed=failed,
                user=u, sys=s, us_per_tx=(u + s) * 1e6 / committed)


def run_proto(script, iso):
    fresh("bench_pg")
    out, u, s = timed([PROTO, "--dsn", DSN + " dbname=bench_pg", "-b", script, "--isolation", iso,
                       "-c", str(CLIENTS), "-T", str(SECONDS), "--max-tries", "10"])
    committed = num(r"committed: (\d+)", out)
    return dict(tps=num(r"tps: ([\d.]+)", out), committed=committed, failed=num(r"failed: (\d+)", out),
                user=u, sys=s, us_per_tx=(u + s) * 1e6 / committed,
                own_us_per_tx=num(r"\nloop_cpu_us_per_tx: ([\d.]+)", out))


def isobench_once(script, iso, secs):
    d = tempfile.mkdtemp(prefix="libpq-ib-")
    out, u, s = timed([ISOBENCH, "run", "-q", "-b", script, "-M", "prepared", "-s", str(SCALE),
                       "-c", str(CLIENTS), "-j", "1", "--isolation", LEVEL[iso][1], "-T", f"{secs}s",
                       "--repeat", "1", "--dsn", DSN + " dbname=postgres", "-o", d])
    v = json.load(open(os.path.join(d, "results.json")))
    r = v["runs"][0]
    subprocess.run(["rm", "-rf", d])
    return dict(tps=r["tps"], failure_pct=r["failure_pct"], lifetime=r["lifetime"]["committed"],
                own_us_per_tx=r.get("client_cpu_us_per_tx"), user=u, sys=s)


def run_isobench(script, iso, with_short):
    long = isobench_once(script, iso, SECONDS)
    res = dict(tps=long["tps"], failure_pct=long["failure_pct"], own_us_per_tx=long["own_us_per_tx"],
               user=long["user"], sys=long["sys"])
    if with_short:
        short = isobench_once(script, iso, 1)
        d_cpu = long["user"] + long["sys"] - short["user"] - short["sys"]
        d_tx = long["lifetime"] - short["lifetime"]
        res["us_per_tx"] = d_cpu * 1e6 / d_tx if d_cpu > 0 and d_tx > 0 else None
        res["d_user"] = long["user"] - short["user"]
        res["d_sys"] = long["sys"] - short["sys"]
        res["d_tx"] = d_tx
    return res


def main():
    out = subprocess.run(["psql", "-X", "-At", "-d", "postgres", "-c",
                          "SELECT 1 FROM pg_database WHERE datname = 'tmpl'"], capture_output=True, text=True)
    if out.stdout.strip() != "1":
        psql("postgres", "CREATE DATABASE tmpl")
        subprocess.run(["pgbench", "-i", "-q", "-s", str(SCALE), "tmpl"], check=True, capture_output=True)
    log = open(OUT, "a")
    tools = ["pgbench", "proto", "isobench"]
    for case in CASES:
        script = "select-only" if case.startswith("select") else "tpcb-like"
        iso = case.split("-")[1]
        print(f"\n== {case}: {script}, {iso}, {CLIENTS} clients, -j 1, {SECONDS} s, scale {SCALE}", flush=True)
        per_tool = {t: [] for t in tools}
        for rnd in range(1, ROUNDS + 1):
            order = tools[(rnd - 1) % 3:] + tools[:(rnd - 1) % 3]
            for t in order:
                load = os.getloadavg()[0]
                if t == "pgbench":
                    r = run_pgbench(script, iso)
                elif t == "proto":
                    r = run_proto(script, iso)
                else:
                    r = run_isobench(script, iso, with_short=(iso == "rc"))
                if "failure_pct" not in r:
                    r["failure_pct"] = 100 * r["failed"] / max(1, r["committed"] + r["failed"])
                r.update(case=case, round=rnd, tool=t, load1=load, at=time.strftime("%H:%M:%S"))
                per_tool[t].append(r)
                log.write(json.dumps(r) + "\n")
                log.flush()
                us = r.get("us_per_tx")
                print(f"round {rnd} {t:9} load {load:5.2f}  tps {r['tps']:9.1f}  failed {r['failure_pct']:5.1f} %  "
                      f"CPU µs/tx {us if us is None else round(us, 2)}  (own {r.get('own_us_per_tx')})  "
                      f"user {r.get('d_user', r['user']):.2f} s sys {r.get('d_sys', r['sys']):.2f} s", flush=True)
        for t in tools:
            rs = per_tool[t]
            tps = statistics.median(r["tps"] for r in rs)
            fail = statistics.median(r["failure_pct"] for r in rs)
            us = [r["us_per_tx"] for r in rs if r.get("us_per_tx")]
            print(f"median {t:9} tps {tps:9.1f}  failed {fail:5.1f} %  CPU µs/tx "
                  f"{statistics.median(us) if us else 'n/a'}", flush=True)


if __name__ == "__main__":
    main()
