#!/usr/bin/env bash
# Build time (issue #48; BENCHMARKS.md, "Build time"): a first
# `cargo build --release --locked` of the committed tree, as from a clean
# clone (its own target directory; the crates already downloaded), then a
# rebuild after editing one report file. Prints wall and CPU (user + sys)
# time and the load average around each: on a shared machine the CPU time
# is the figure to compare, the wall time holds only on a quiet one.
#
# Usage: bench/build_time.sh [PROFILE]   (release; `measure` for the
# benchmarks' profile). Needs /usr/bin/time (Debian package `time`).
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${1:-release}"
src="$(mktemp -d /tmp/isobench-build-src.XXXXXX)"
target="$(mktemp -d /tmp/isobench-build-target.XXXXXX)"
trap 'rm -rf "$src" "$target"' EXIT
git archive HEAD | tar -x -C "$src"
cd "$src"
build() {
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  CARGO_TARGET_DIR="$target" /usr/bin/time -f "$1 ($profile): wall %e s, user %U s, sys %S s" \
    cargo build --profile "$profile" --locked --quiet
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
}
build "first build"
file=crates/results/src/report/render/markdown.rs
sed -i 's|out.push_str("## Headlines\\n\\n");|out.push_str("## Headlines\\n\\n"); // edited|' "$file"
grep -q '// edited' "$file" || { echo "the edit of $file did not apply" >&2; exit 1; }
build "rebuild after editing $file"
