# odqs container image.
#
#   docker build -t odqs .
#   docker run --rm -p 8080:8080 odqs                       # embedded SQLite under /var/lib/odqs/data
#   docker run --rm -p 8080:8080 -e DATABASE_URL=postgres://user:pass@host/db odqs
#
# Every flag has an environment variable (see src/config/mod.rs): DATABASE_URL, ODQS_LISTEN,
# ODQS_PUBLIC_URL, ODQS_DEMO_DATA, ODQS_LOG_FORMAT, …; ODQS_LOG is the tracing filter.
#
# The base images are the official rust:1-bookworm and debian:bookworm-slim; where no registry
# is reachable, deploy/images/build-base.sh builds stand-ins under those names.

# ---- build -------------------------------------------------------------------------------
FROM rust:1-bookworm AS builder
WORKDIR /src

# The whole workspace (see .dockerignore); the demo datasets under demo/ are compiled into the
# binary, so they must be in the build context. Dependencies come from crates.io, pinned by
# Cargo.lock (--locked fails the build instead of silently resolving new versions).
COPY . .

RUN cargo build --release --locked --bin odqs \
    && install -D -m 0755 target/release/odqs /out/odqs

# ---- runtime -----------------------------------------------------------------------------
FROM debian:bookworm-slim

RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# An unprivileged user whose home is the working directory: the default store
# (DATABASE_URL=sqlite://data/odqs.db) is created under /var/lib/odqs/data.
RUN groupadd --system odqs \
    && useradd --system --gid odqs --home-dir /var/lib/odqs --shell /usr/sbin/nologin odqs \
    && install -d -o odqs -g odqs -m 0750 /var/lib/odqs

COPY --from=builder /out/odqs /usr/local/bin/odqs

USER odqs
WORKDIR /var/lib/odqs

# Inside a container the service must listen on all interfaces to be reachable.
ENV ODQS_LISTEN=0.0.0.0:8080
EXPOSE 8080

# No HEALTHCHECK: the slim image has no curl/wget. Orchestrators can probe GET /healthz
# (liveness) and GET /readyz (readiness) over HTTP instead.
ENTRYPOINT ["odqs"]
CMD ["serve"]
