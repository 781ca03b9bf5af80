#!/usr/bin/env bash
# Installs the Debian packages the tests use (real Prometheus + promtool, VictoriaMetrics, Chromium and
# ChromeDriver) when any is missing, then proves each command runs.
set -euo pipefail
# command -> the Debian package that provides it
declare -A package=(
  [prometheus]=prometheus [promtool]=prometheus [victoria-metrics]=victoria-metrics
  [chromium]=chromium [chromedriver]=chromium-driver
)
missing() {
  local cmd
  for cmd in "${!package[@]}"; do
    command -v "$cmd" >/dev/null || echo "${package[$cmd]}"
  done | sort -u
}
mapfile -t need < <(missing)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "system-deps: missing ${need[*]}; install them with: sudo apt-get install -y ${need[*]}" >&2
    exit 1
  fi
  echo "system-deps: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # The packages may start system services; the tests start their own on free ports.
  pkill -x prometheus 2>/dev/null || true
  pkill -x victoria-metrics 2>/dev/null || true
fi
# Each command must run, not only exist.
failed=0
for check in "prometheus --version" "promtool --version" "victoria-metrics -version" \
  "chromium --headless --no-sandbox --version" "chromedriver --version"; do
  if ! out="$($check 2>&1)"; then
    echo "system-deps: '$check' failed: $(echo "$out" | tail -n 2)" >&2
    failed=1
  fi
done
exit "$failed"
