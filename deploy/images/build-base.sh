#!/usr/bin/env bash
# Builds, without any image registry, the base images the Dockerfile and docker-compose.yml name,
# each tagged as the official image it stands in for:
#
#   debian:bookworm-slim   debootstrap --variant=minbase bookworm, slimmed as the official one is
#                          (no docs, man pages or locales; empty apt lists), then `docker import`
#   rust:1-bookworm        that root + gcc/libc6-dev/pkg-config from Debian + this machine's Rust
#                          toolchain (`rustc --print sysroot`, docs left out) under /usr/local/rust
#                          and its CA bundle (/etc/ssl/certs/ca-certificates.crt) for cargo
#   postgres:15            that root + Debian's PostgreSQL 15 + an entrypoint that honours the
#                          official image's POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB / PGDATA
#   haproxy:2.6            that root + Debian's HAProxy 2.6, run as the official image runs it
#
# A tag that already exists is kept (delete it with `docker rmi` to rebuild). The debootstrap
# root is cached as a tarball in $ODQS_IMAGE_CACHE (default /var/cache/odqs-images) and reused
# when the slim image has to be imported again. Needs: a running Docker engine, debootstrap, a
# Debian mirror ($DEBIAN_MIRROR, default http://deb.debian.org/debian), rustc on PATH.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cache="${ODQS_IMAGE_CACHE:-/var/cache/odqs-images}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

have() { docker image inspect "$1" >/dev/null 2>&1; }
say() { printf '[build-base] %s\n' "$*"; }
took() { say "$1: $(( $(date +%s) - $2 ))s"; }

docker info >/dev/null 2>&1 || { echo "build-base: no Docker engine answers (start dockerd)" >&2; exit 1; }

# ---- debian:bookworm-slim ----------------------------------------------------------------------
if have debian:bookworm-slim; then
    say "debian:bookworm-slim exists"
else
    started=$(date +%s)
    mkdir -p "$cache"
    tarball="$cache/bookworm-minbase.tar"
    if [ ! -s "$tarball" ]; then
        command -v debootstrap >/dev/null || { echo "build-base: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
        root="$(mktemp -d "$cache/root.XXXXXX")"
        trap 'rm -rf "$root"' EXIT
        say "debootstrap --variant=minbase bookworm from $mirror"
        debootstrap --variant=minbase bookworm "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 \
            || { tail -n 30 "$cache/debootstrap.log" >&2; exit 1; }
        # What the official slim image does to a minbase root (debuerreotype-slimify and
        # debuerreotype-minimizing-config): keep docs, man pages and translations out of every
        # later apt-get install too, and keep no apt caches in layers.
        cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
CFG
        cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'CFG'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CFG
        echo 'APT::Install-Recommends "false";' >"$root/etc/apt/apt.conf.d/docker-no-recommends"
        echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/docker-no-languages"
        rm -f "$root/etc/apt/sources.list"
        cat >"$root/etc/apt/sources.list.d/debian.sources" <<CFG
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
CFG
        find "$root/usr/share/doc" -mindepth 2 -not -name copyright -not -type d -delete 2>/dev/null || true
        find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
        rm -rf "$root/usr/share/man/"* "$root/usr/share/info/"* "$root/usr/share/locale/"* \
            "$root/var/lib/apt/lists/"* "$root/var/cache/apt/"*.bin "$root/var/cache/apt/archives/"*.deb \
            "$root/var/log/"*.log "$root/var/log/apt/"* "$root/tmp/"* "$root/root/.bash_history"
        : >"$root/etc/hostname"
        : >"$root/etc/resolv.conf"
        tar --numeric-owner --xattrs -C "$root" -cf "$tarball.tmp" .
        mv "$tarball.tmp" "$tarball"
        rm -rf "$root"
        trap - EXIT
        took "debootstrap" "$started"
    fi
    docker import --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        "$tarball" debian:bookworm-slim >/dev/null
    took "debian:bookworm-slim" "$started"
fi

# ---- rust:1-bookworm ---------------------------------------------------------------------------
if have rust:1-bookworm; then
    say "rust:1-bookworm exists"
else
    started=$(date +%s)
    sysroot="$(rustc --print sysroot)"
    ctx="$(mktemp -d)"
    trap 'rm -rf "$ctx"' EXIT
    cp "$here/rust/Dockerfile" "$ctx/"
    cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
    # The toolchain as it is, less its HTML docs and sources: bin/ (cargo, rustc, clippy,
    # rustfmt), lib/ (librustc_driver, the standard library) and libexec/.
    mkdir -p "$ctx/rust"
    tar -C "$sysroot" --exclude=lib/rustlib/src -cf - bin lib libexec | tar -C "$ctx/rust" -xf -
    version="$("$sysroot/bin/rustc" --version | awk '{print $2}')"
    docker build -q --build-arg RUST_VERSION="$version" -t rust:1-bookworm -t "rust:$version-bookworm" "$ctx" >/dev/null
    rm -rf "$ctx"
    trap - EXIT
    took "rust:1-bookworm (rust $version)" "$started"
fi

# ---- postgres:15 and haproxy:2.6 ------------------------------------------------------------
for image in postgres:15 haproxy:2.6; do
    if have "$image"; then
        say "$image exists"
        continue
    fi
    started=$(date +%s)
    docker build -q -t "$image" "$here/${image%%:*}" >/dev/null
    took "$image" "$started"
done
docker image ls --format '{{.Repository}}:{{.Tag}}\t{{.Size}}' \
    | grep -E '^(debian:bookworm-slim|rust:1-bookworm|postgres:15|haproxy:2.6)\b' | sed 's/^/[build-base] /'
