#!/bin/sh
# Prints the path of a helm v3 binary for the chart's tests (test/deploy/helm-chart.test.ts),
# building it on first use from the Go module proxy into ~/.cache/veil/bin (no helm download site
# is reached: `go install helm.sh/helm/v3/cmd/helm@VERSION`, Go from the machine). Later calls
# print the cached binary at once. Cold: a few minutes on 2 cores (the module downloads, then the
# build); the figure measured is in docs/kubernetes.md.
#   scripts/helm.sh            → /root/.cache/veil/bin/helm-v3.22.0
#   HELM_VERSION=v3.21.4 scripts/helm.sh
set -eu
version=${HELM_VERSION:-v3.22.0}
dir="${VEIL_CACHE_DIR:-$HOME/.cache/veil}/bin"
helm="$dir/helm-$version"
if [ -x "$helm" ]; then echo "$helm"; exit 0; fi
go=$(command -v go || true)
[ -n "$go" ] || go=/usr/local/go/bin/go
if [ ! -x "$go" ]; then
  echo "veil: scripts/helm.sh needs Go (go on PATH or /usr/local/go/bin/go) to build helm $version" >&2
  exit 1
fi
mkdir -p "$dir"
# one build at a time: test files asking at once wait for the first one's build
exec 9>"$dir/.helm-$version.lock"
flock 9
if [ ! -x "$helm" ]; then
  echo "veil: building helm $version from the Go module proxy (once, into $dir)" >&2
  rm -rf "$dir"/.helm-build.*   # an interrupted build's leftovers (none runs: the lock is ours)
  tmp=$(mktemp -d "$dir/.helm-build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  trap 'rm -rf "$tmp"; exit 1' HUP INT TERM
  # the modules and the build cache (about 1.2 GB) are the build's own and go with it: only the
  # binary (about 50 MB) stays
  export GOMODCACHE="$tmp/mod" GOCACHE="$tmp/cache" GOFLAGS="-buildvcs=false -modcacherw"
  # as helm's Makefile does: the version, and the Kubernetes version `helm template` and `helm lint`
  # assume (1.<minor of the k8s.io/client-go helm is built with>) instead of the default 1.20
  gomod=$(cd "$tmp" && GOWORK=off "$go" mod download -json "helm.sh/helm/v3@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
  minor=$(sed -n 's/^[[:space:]]*k8s\.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$gomod" | head -1)
  [ -n "$minor" ] || { echo "veil: no k8s.io/client-go in $gomod" >&2; exit 1; }
  flags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    flags="$flags -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
  done
  # niced: under `npm test` it shares the cores with timing-sensitive tests
  (cd "$tmp" && GOBIN="$tmp" GOWORK=off CGO_ENABLED=0 nice -n 19 "$go" install -ldflags "$flags" "helm.sh/helm/v3/cmd/helm@$version") >&2
  mv "$tmp/helm" "$helm"
fi
echo "$helm"
