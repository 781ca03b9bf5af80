#!/usr/bin/env bash
# The cold-machine rehearsal: `.ci/run` on a fresh clone of HEAD (what CI gets: committed files only) with
# empty Go module, Go build, pip and podsizer tool caches, as on a fresh machine of this kind. Run it before
# resolving an issue that touches a build script. Debian packages already installed stay installed (apt
# cannot be emptied here); everything else starts from nothing.
#
#   scripts/ci-cold.sh [--keep] [WORKDIR]     # default WORKDIR: a new folder under /tmp
#
# Prints the CI log as it goes, then wall time, CPU and peak memory (GNU time) and the step table .ci/run
# printed. The caches (several GiB) are removed at the end unless --keep.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
keep=0
if [ "${1:-}" = "--keep" ]; then
  keep=1
  shift
fi
work="${1:-$(mktemp -d /tmp/podsizer-cold.XXXXXX)}"
mkdir -p "$work"
if [ -n "$(git -C "$root" status --porcelain)" ]; then
  echo "ci-cold: note: uncommitted changes are not part of the rehearsal (it clones HEAD)" >&2
fi
git clone -q --no-local "$root" "$work/repo"
echo "ci-cold: HEAD $(git -C "$work/repo" rev-parse --short HEAD) in $work/repo" >&2

export GOMODCACHE="$work/gomodcache" GOCACHE="$work/gocache" PODSIZER_CACHE="$work/podsizer-cache"
export PIP_CACHE_DIR="$work/pip-cache" GOFLAGS="-modcacherw" CI=true
mkdir -p "$GOMODCACHE" "$GOCACHE" "$PODSIZER_CACHE" "$PIP_CACHE_DIR"
set +e
/usr/bin/time -v -o "$work/time.txt" bash "$work/repo/.ci/run" 2>&1 | tee "$work/ci.log"
rc="${PIPESTATUS[0]}"
set -e

echo "== ci-cold: .ci/run exited $rc"
grep -E "Elapsed|Maximum resident|User time|System time" "$work/time.txt" | sed 's/^\s*/  /'
echo "  Go build cache: $(du -sh "$GOCACHE" | cut -f1), module cache: $(du -sh "$GOMODCACHE" | cut -f1)"
if [ "$keep" = 0 ]; then
  rm -rf "$GOMODCACHE" "$GOCACHE" "$PIP_CACHE_DIR" "$PODSIZER_CACHE" "$work/repo"
  echo "  caches removed; the log is $work/ci.log"
else
  echo "  kept: $work"
fi
exit "$rc"
