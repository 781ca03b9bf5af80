#!/usr/bin/env bash
# Builds the Argo Rollouts controller (upstream's cmd/rollouts-controller, the `tool` of the wrapper module
# tests/controlplane/argo) into ${PODSIZER_CACHE:-~/.cache/podsizer}/argo-rollouts/<version>/rollouts-controller,
# and copies that version's CRDs (the module's manifests/crds/*-crd.yaml) into crds/ next to it.
# Skips what is already there. Prints the directory on the last line of stdout.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mod="$root/tests/controlplane/argo"
cd "$mod"

pkg="github.com/argoproj/argo-rollouts"
# The pinned version is the one go.mod requires; the binary reports it (`rollouts-controller --version`).
version="$(GOFLAGS=-mod=mod go list -m -f '{{.Version}}' "$pkg")"
out="${PODSIZER_CACHE:-$HOME/.cache/podsizer}/argo-rollouts/$version"
bin="rollouts-controller"
mkdir -p "$out"

if [ ! -f "$out/crds/rollout-crd.yaml" ]; then
  # The module source (downloaded by `go list` above) is read-only in GOMODCACHE: copy, then make writable.
  src="$(GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$pkg")"
  rm -rf "$out/.crds.tmp" && mkdir -p "$out/.crds.tmp"
  cp "$src"/manifests/crds/*-crd.yaml "$out/.crds.tmp/" && chmod u+w "$out"/.crds.tmp/*.yaml
  rm -rf "$out/crds" && mv "$out/.crds.tmp" "$out/crds"
  echo "argo-rollouts: copied the CRDs of $pkg@$version into $out/crds" >&2
fi

if [ -x "$out/$bin" ]; then
  echo "argo-rollouts: $version already built in $out" >&2
  echo "$out"
  exit 0
fi

# The stamps upstream's Makefile sets; a gitTag with gitTreeState=clean makes GetVersion() report the plain tag.
ldflags="-s -w -X $pkg/utils/version.version=${version#v} -X $pkg/utils/version.gitTag=$version"
ldflags+=" -X $pkg/utils/version.gitTreeState=clean -X $pkg/utils/version.gitCommit=module-$version"
start=$SECONDS
echo "argo-rollouts: building $bin $version (cold build: several minutes on 2 cores)" >&2
# Build to a temp name and rename, so an interrupted build never leaves a binary that looks complete.
CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false" \
  nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$out/.$bin.tmp" "$pkg/cmd/rollouts-controller"
mv -f "$out/.$bin.tmp" "$out/$bin"
echo "argo-rollouts: built $bin $version in $((SECONDS - start)) s into $out" >&2
echo "$out"
