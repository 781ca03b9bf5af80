#!/usr/bin/env bash
# Installs the Debian packages the tests use when any is missing, then proves each command runs: real
# Prometheus + promtool, VictoriaMetrics, Chromium and ChromeDriver; and for the real node
# (tests/controlplane/node/): runc (built with libseccomp, which a static Go build cannot link), the CNI
# plugins, buildah and debootstrap (the images, scripts/build_images.py), gcc with the static libc (upstream's
# pause.c), iptables (one NAT rule), ip and unshare/nsenter.
set -euo pipefail
# command -> the Debian package that provides it
declare -A package=(
  [prometheus]=prometheus [promtool]=prometheus [victoria-metrics]=victoria-metrics
  [chromium]=chromium [chromedriver]=chromium-driver
  [runc]=runc [/usr/lib/cni/bridge]=containernetworking-plugins [buildah]=buildah [debootstrap]=debootstrap
  [gcc]=gcc [/usr/lib/x86_64-linux-gnu/libc.a]=libc6-dev [iptables]=iptables [ip]=iproute2
  [unshare]=util-linux [nsenter]=util-linux
)
missing() {
  local cmd
  for cmd in "${!package[@]}"; do
    if [ "${cmd:0:1}" = / ]; then
      [ -e "$cmd" ] || echo "${package[$cmd]}"
    else
      command -v "$cmd" >/dev/null || echo "${package[$cmd]}"
    fi
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
  # The packages would start their system services (prometheus, victoria-metrics) on their default ports;
  # the tests start their own on free ports. A policy-rc.d that refuses (exit 101) stops the packages'
  # scripts from starting any service, and nothing already running is touched. Any policy-rc.d of the
  # machine's own is put back afterwards.
  policy=/usr/sbin/policy-rc.d
  saved=""
  if [ -e "$policy" ]; then
    saved="$(mktemp)"
    cp -p "$policy" "$saved"
  fi
  restore_policy() {
    if [ -n "$saved" ]; then mv -f "$saved" "$policy"; else rm -f "$policy"; fi
  }
  trap restore_policy EXIT
  printf '#!/bin/sh\n# podsizer system-deps.sh: no service starts during this install\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  restore_policy
  trap - EXIT
fi
# pause.c is linked statically: the compiler and the static C library must both work.
gcc_static() {
  printf 'int main(void) { return 0; }\n' | gcc -static -x c -o /dev/null -
}
# Each command must run, not only exist.
failed=0
for check in "prometheus --version" "promtool --version" "victoria-metrics -version" \
  "chromium --headless --no-sandbox --version" "chromedriver --version" \
  "runc --version" "buildah --version" "debootstrap --version" "iptables --version" "ip -V" \
  "unshare --version" "nsenter --version" "env CNI_COMMAND=VERSION /usr/lib/cni/bridge" \
  "env CNI_COMMAND=VERSION /usr/lib/cni/host-local" "env CNI_COMMAND=VERSION /usr/lib/cni/loopback" \
  gcc_static; do
  if ! out="$($check 2>&1)"; then
    echo "system-deps: '$check' failed: $(echo "$out" | tail -n 2)" >&2
    failed=1
  fi
done
exit "$failed"
