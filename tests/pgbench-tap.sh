#!/usr/bin/env bash
# PostgreSQL's own pgbench tests, run unchanged against `isobench pgbench`:
# src/bin/pgbench/t/002_pgbench_no_server.pl and 001_pgbench_with_server.pl
# from the source package of the installed PostgreSQL 15, with a `pgbench`
# on the PATH that runs `isobench pgbench`. Nothing of them is kept in the
# repository: the source package is fetched with a private apt
# configuration (deb-src entries for the system's own suites, in a
# temporary directory; the system's apt set-up is not touched) and
# unpacked into a cache.
#
#   tests/pgbench-tap.sh [ISOBENCH_BINARY]
#
# ISOBENCH_BINARY: default target/debug/isobench (what `cargo test`
# builds), else target/release/isobench.
#
# Passes (exit 0) when 002 passes all of its checks and 001 all but the
# ones its own file marks TODO (a known server race,
# docs/src/reference/pgbench-command.md), with at least MIN_001 passing.
# Exit 1 otherwise, 2 when something it needs is missing.
#
# Needs: postgresql-15 (the server binaries, pg_regress), prove (perl),
# libipc-run-perl, apt-get with network access the first time. As root,
# the tests' cluster runs as the `postgres` user (initdb refuses root).
#
# Environment: PGBENCH_TAP_CACHE (the unpacked tests; default
# ~/.cache/isobench-pgbench-tap), PGBENCH_TAP_OUT (the TAP output and a
# list of the failing checks; default a temporary directory, kept).
set -u
MIN_001=${MIN_001:-437}
cd "$(dirname "$0")/.." || exit 2

bin=${1:-}
if [ -z "$bin" ]; then
  for b in target/debug/isobench target/release/isobench; do
    [ -x "$b" ] && { bin=$b; break; }
  done
fi
[ -n "$bin" ] && [ -x "$bin" ] || { echo "pgbench-tap: no isobench binary (cargo build first)" >&2; exit 2; }
bin=$(realpath "$bin")

need() { echo "pgbench-tap: $1" >&2; exit 2; }
version=$(dpkg-query -W -f='${Version}' postgresql-15 2>/dev/null) || need "postgresql-15 is not installed"
pgbin=/usr/lib/postgresql/15/bin
regress=/usr/lib/postgresql/15/lib/pgxs/src/test/regress/pg_regress
[ -x "$regress" ] || need "no pg_regress at $regress"
command -v prove >/dev/null || need "prove (perl) is not installed"
perl -MIPC::Run -e 1 2>/dev/null || need "IPC::Run is missing: apt-get install libipc-run-perl"

cache=${PGBENCH_TAP_CACHE:-${HOME:-/root}/.cache/isobench-pgbench-tap}/$version
if [ ! -f "$cache/t/001_pgbench_with_server.pl" ] || [ ! -d "$cache/perl/PostgreSQL" ]; then
  apt_dir=$(mktemp -d)
  trap 'rm -rf "$apt_dir"' EXIT
  mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial"
  : > "$apt_dir/sources.list"
  # The system's deb822 sources, as deb-src.
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '/^Types:/ { print "Types: deb-src"; next } { print }' "$f"
    echo
  done > "$apt_dir/sources.list.d/src.sources"
  apt=(apt-get -q -o "Dir::Etc::SourceList=$apt_dir/sources.list"
       -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d" -o "Dir::State::Lists=$apt_dir/lists")
  "${apt[@]}" update >/dev/null 2>&1 || need "apt-get update (deb-src) failed"
  (cd "$apt_dir" && "${apt[@]}" source --download-only "postgresql-15=$version" >/dev/null 2>&1) \
    || need "could not fetch the source package postgresql-15=$version"
  upstream=${version%%-*}
  tarball=$(ls "$apt_dir"/postgresql-15_"$upstream".orig.tar.* 2>/dev/null | head -1)
  [ -n "$tarball" ] || need "no upstream tarball in the source package"
  tar -xf "$tarball" -C "$apt_dir" "postgresql-$upstream/src/bin/pgbench/t" \
    "postgresql-$upstream/src/test/perl" || need "could not unpack $tarball"
  mkdir -p "$cache"
  rm -rf "$cache/t" "$cache/perl"
  cp -r "$apt_dir/postgresql-$upstream/src/bin/pgbench/t" "$cache/t"
  cp -r "$apt_dir/postgresql-$upstream/src/test/perl" "$cache/perl"
fi

work=$(mktemp -d)
out=${PGBENCH_TAP_OUT:-$(mktemp -d)}
mkdir -p "$out" "$work/bin" "$work/t"
cp "$cache"/t/0*.pl "$work/t/"
cat > "$work/bin/pgbench" <<EOF
#!/bin/sh
exec "$bin" pgbench "\$@"
EOF
chmod +x "$work/bin/pgbench"
as=(env)
if [ "$(id -u)" = 0 ]; then
  chown -R postgres "$work" "$out"
  # The binary must be reachable by the postgres user.
  chmod o+rx "$(dirname "$bin")"
  as=(runuser -u postgres -- env)
fi

status=0
for t in 002_pgbench_no_server 001_pgbench_with_server; do
  (cd "$work" && "${as[@]}" PATH="$work/bin:$pgbin:$PATH" PERL5LIB="$cache/perl" \
    TESTDIR="$work" PG_REGRESS="$regress" timeout 1800 prove -v "t/$t.pl" \
    > "$out/$t.tap" 2>&1)
  ok=$(grep -c '^ok ' "$out/$t.tap")
  bad=$(grep -c '^not ok ' "$out/$t.tap")
  todo=$(grep '^not ok ' "$out/$t.tap" | grep -c '# TODO')
  grep -A6 '^not ok ' "$out/$t.tap" | grep -v '^ok ' > "$out/$t.failures"
  echo "${t%%_*} $ok/$((ok + bad)) (failing TODO checks: $todo; $out/$t.failures)"
  case $t in
    002_*) [ "$bad" -eq 0 ] && [ "$ok" -eq 208 ] || status=1 ;;
    001_*) [ "$bad" -eq "$todo" ] && [ "$ok" -ge "$MIN_001" ] && [ $((ok + bad)) -eq 440 ] || status=1 ;;
  esac
done
rm -rf "$work"
[ "$status" -eq 0 ] || echo "pgbench-tap: FAILED (002 must pass 208/208; 001 all but TODO checks, at least $MIN_001 of 440)"
exit "$status"
