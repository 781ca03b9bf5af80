#!/usr/bin/env bash
# Installs the Debian packages the tests use (real Prometheus + promtool, VictoriaMetrics, Chromium)
# when any is missing.
set -euo pipefail
need=()
command -v prometheus >/dev/null && command -v promtool >/dev/null || need+=(prometheus)
command -v victoria-metrics >/dev/null || need+=(victoria-metrics)
command -v chromium >/dev/null || need+=(chromium)
command -v chromedriver >/dev/null || need+=(chromium-driver)
[ ${#need[@]} -eq 0 ] && exit 0
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
