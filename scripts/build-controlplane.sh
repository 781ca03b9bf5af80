#!/usr/bin/env bash
# Builds the e2e test cluster from Go modules into a per-version cache:
#   kube-apiserver, kube-controller-manager, kube-scheduler  (tests/controlplane,      k8s.io/kubernetes)
#   etcd                                                     (tests/controlplane/etcd, go.etcd.io/etcd/server/v3)
#   kwok                                                     (tests/controlplane/kwok, sigs.k8s.io/kwok)
# each into ${PODSIZER_CACHE:-~/.cache/podsizer}/controlplane/<part>-<version>/ (the Kubernetes binaries into
# controlplane/<version>/). A part whose binaries are already there is skipped, so CI on the same machine reuses
# them. Prints the Kubernetes binary directory on the last line of stdout.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${PODSIZER_CACHE:-$HOME/.cache/podsizer}/controlplane"
export CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"

# build_part <module dir> <module path whose version names the cache dir> <dir prefix> <ldflags> <name=package>...
build_part() {
  local mod="$1" pinned="$2" prefix="$3" ldflags="$4"
  shift 4
  local version out present=1 start=$SECONDS spec name
  version="$(cd "$mod" && go list -m -f '{{.Version}}' "$pinned")"
  out="$cache/$prefix$version"
  for spec in "$@"; do [ -x "$out/${spec%%=*}" ] || present=0; done
  if [ "$present" = 1 ]; then
    echo "controlplane: ${prefix:-kubernetes-}$version already built in $out" >&2
    LAST_OUT="$out"
    return 0
  fi
  mkdir -p "$out"
  for spec in "$@"; do
    name="${spec%%=*}"
    echo "controlplane: building $name $version (cold: minutes on 2 cores)" >&2
    # Build to a temp name and rename, so an interrupted build never leaves a binary that looks complete.
    (cd "$mod" && nice -n 10 go build -trimpath -ldflags "-s -w $ldflags" -o "$out/.$name.tmp" "${spec#*=}")
    mv -f "$out/.$name.tmp" "$out/$name"
  done
  echo "controlplane: built $* $version in $((SECONDS - start)) s into $out" >&2
  LAST_OUT="$out"
}

LAST_OUT=""
# etcd and kwok first: small, and the Kubernetes build is the one an impatient reader waits for.
etcd_ver="$(cd "$root/tests/controlplane/etcd" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"
build_part "$root/tests/controlplane/etcd" go.etcd.io/etcd/server/v3 etcd- \
  "-X go.etcd.io/etcd/api/v3/version.GitSHA=module-$etcd_ver" etcd=.
build_part "$root/tests/controlplane/kwok" sigs.k8s.io/kwok kwok- "" kwok=.

k8s_ver="$(cd "$root/tests/controlplane" && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
minor="$(echo "$k8s_ver" | cut -d. -f2)"
ldflags="-X k8s.io/component-base/version.gitVersion=$k8s_ver"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
build_part "$root/tests/controlplane" k8s.io/kubernetes "" "$ldflags" \
  kube-apiserver=./cmd/kube-apiserver kube-controller-manager=./cmd/kube-controller-manager \
  kube-scheduler=./cmd/kube-scheduler
echo "$LAST_OUT"
