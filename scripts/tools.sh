#!/usr/bin/env bash
# Builds the install-check CLI tools (helm, kubeconform, operator-sdk) from Go modules into $PODSIZER_CACHE/bin (default ~/.cache/podsizer), once per
# pinned version, and vpa-estimate (bench/quality/vpa: VPA's own estimator code, for the quality benchmark), once per
# content of its go.mod, go.sum and main.go. A tool that fails to build is reported (log in $PODSIZER_CACHE/tools-logs) and the others still get built;
# tests needing it then skip with that reason (under CI=true, only operator-sdk's skip; helm/kubeconform's fail).
# argo-rollouts: the Argo Rollouts controller and its CRDs for the e2e tests (scripts/build-argo-rollouts.sh, into
# $PODSIZER_CACHE/argo-rollouts/<version>; its e2e tests fail without it under PODSIZER_REQUIRE_CONTROLPLANE).
# controlplane: the e2e test cluster (scripts/build-controlplane.sh: kube-apiserver, kube-controller-manager,
# kube-scheduler, etcd and kwok, each into $PODSIZER_CACHE/controlplane/<part-version>).
# Usage: scripts/tools.sh [helm|kubeconform|operator-sdk|vpa-estimate|argo-rollouts|controlplane ...] (default: all).
# Always exits 0 unless misused.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${PODSIZER_CACHE:-$HOME/.cache/podsizer}"
bin="$cache/bin"
mkdir -p "$bin" "$cache/tools-logs"

HELM_VERSION="v3.16.4"
KUBECONFORM_VERSION="v0.7.0"
# v1.42.3 needs ansible-operator-plugins v1.42.3, which the Go proxy does not serve; v1.42.2 builds.
OPERATOR_SDK_VERSION="v1.42.2"

declare -A pkg=(
  [helm]="helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  [kubeconform]="github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
  [operator-sdk]="github.com/operator-framework/operator-sdk/cmd/operator-sdk@$OPERATOR_SDK_VERSION"
)
declare -A mod=(
  [helm]="helm.sh/helm/v3"
  [kubeconform]="github.com/yannh/kubeconform"
  [operator-sdk]="github.com/operator-framework/operator-sdk"
)
declare -A ver=([helm]="$HELM_VERSION" [kubeconform]="$KUBECONFORM_VERSION" [operator-sdk]="$OPERATOR_SDK_VERSION")
# Build tags from each project's Makefile (operator-sdk: pure-Go OpenPGP instead of cgo gpgme).
declare -A tags=([helm]="" [kubeconform]="" [operator-sdk]="containers_image_openpgp")
# What helm's Makefile stamps in: its version, and the Kubernetes version (from its client-go v0.31) that
# `helm template` and `helm lint` assume when no --kube-version is given (else it is 1.20).
declare -A ldflags=(
  [helm]="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=31 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=31"
  [kubeconform]=""
  [operator-sdk]="-X github.com/operator-framework/operator-sdk/internal/version.Version=$OPERATOR_SDK_VERSION -X github.com/operator-framework/operator-sdk/internal/version.GitVersion=$OPERATOR_SDK_VERSION"
)

# Fallback when `go install pkg@version` fails before compiling (the proxy refuses the module's version list,
# which go install reads to check for deprecation): download that exact version and build it in a writable copy.
build_from_module() {
  local name="$1" module="${mod[$1]}" version="${ver[$1]}" spec="${pkg[$1]}" dir work rc
  local sub="${spec%@*}"
  sub="${sub#"$module"/}"
  echo "tools: go install failed; building $name from a copy of module $module@$version (./$sub)"
  dir="$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -n "$dir" ] || { echo "tools: could not download $module@$version"; return 1; }
  work="$(mktemp -d)"
  cp -r "$dir/." "$work/" && chmod -R u+w "$work"
  (cd "$work" && GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
    nice -n 10 go build -tags="${tags[$name]}" -ldflags="-s -w ${ldflags[$name]}" -o "$bin/$name" "./$sub")
  rc=$?
  rm -rf "$work"
  return $rc
}

build() {
  local name="$1" stamp="$bin/.$1.version" log="$cache/tools-logs/$1.log"
  if [ -x "$bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "${ver[$name]} ${tags[$name]} ${ldflags[$name]}" ]; then
    echo "tools: $name ${ver[$name]} already built"
    return 0
  fi
  local start=$SECONDS
  echo "tools: building $name ${ver[$name]} (go install ${pkg[$name]})"
  # CGO off: static binaries, no C toolchain needed; -mod=mod so a vendor dir or GOFLAGS in the env cannot interfere.
  if GOBIN="$bin" GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
      nice -n 10 go install -tags="${tags[$name]}" -ldflags="-s -w ${ldflags[$name]}" "${pkg[$name]}" >"$log" 2>&1 \
    || build_from_module "$name" >>"$log" 2>&1; then
    echo "${ver[$name]} ${tags[$name]} ${ldflags[$name]}" >"$stamp"
    echo "tools: built $name ${ver[$name]} in $((SECONDS - start)) s"
  else
    rm -f "$stamp"
    echo "tools: FAILED to build $name ${ver[$name]} after $((SECONDS - start)) s; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    return 1
  fi
}

# vpa-estimate is a module of this repository (it pins k8s.io/autoscaler/vertical-pod-autoscaler in its go.mod):
# rebuilt when its sources change, stamped with their checksum.
build_vpa() {
  local src="$root/bench/quality/vpa" stamp="$bin/.vpa-estimate.version" log="$cache/tools-logs/vpa-estimate.log"
  local sum start=$SECONDS
  sum="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-16)"
  if [ -x "$bin/vpa-estimate" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ]; then
    echo "tools: vpa-estimate $sum already built"
    return 0
  fi
  echo "tools: building vpa-estimate $sum (bench/quality/vpa)"
  if (cd "$src" && GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
      nice -n 10 go build -ldflags="-s -w" -o "$bin/vpa-estimate" .) >"$log" 2>&1; then
    echo "$sum" >"$stamp"
    echo "tools: built vpa-estimate in $((SECONDS - start)) s"
  else
    rm -f "$stamp"
    echo "tools: FAILED to build vpa-estimate after $((SECONDS - start)) s; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    return 1
  fi
}

build_argo() {
  local log="$cache/tools-logs/argo-rollouts.log" start=$SECONDS
  if "$root/scripts/build-argo-rollouts.sh" >"$log" 2>&1; then
    grep '^argo-rollouts:' "$log" | tail -n 1 | sed 's/^/tools: /'
  else
    echo "tools: FAILED to build argo-rollouts after $((SECONDS - start)) s; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    return 1
  fi
}

build_controlplane() {
  local log="$cache/tools-logs/controlplane.log" start=$SECONDS
  if "$root/scripts/build-controlplane.sh" >"$log" 2>&1; then
    grep '^controlplane:' "$log" | sed 's/^/tools: /'
  else
    echo "tools: FAILED to build the control plane after $((SECONDS - start)) s; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    return 1
  fi
}

failed=()
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(helm kubeconform operator-sdk vpa-estimate argo-rollouts controlplane)
for n in "${names[@]}"; do
  if [ "$n" = controlplane ]; then
    build_controlplane || failed+=("$n")
    continue
  fi
  if [ "$n" = argo-rollouts ]; then
    build_argo || failed+=("$n")
    continue
  fi
  if [ "$n" = vpa-estimate ]; then
    build_vpa || failed+=("$n")
    continue
  fi
  if [ -z "${pkg[$n]:-}" ]; then
    echo "tools: unknown tool '$n' (known: ${!pkg[*]} vpa-estimate argo-rollouts controlplane)" >&2
    exit 2
  fi
  build "$n" || failed+=("$n")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "tools: not built: ${failed[*]} (tests needing them will skip and say so)" >&2
fi
exit 0
