#!/usr/bin/env bash
# Tier 2 of the test suite: the tests that drive tools from outside Cargo (`tier2!` in
# tests/api/helpers/store.rs), which the README's test command lists as ignored.
#
#   bash tests/tier2.sh              # installs what is missing (as root, with apt-get), runs them
#   bash tests/tier2.sh -- FILTER    # only the tier-2 tests whose name contains FILTER
#
# What they need: Chromium, chromedriver and a CJK font (pages in a real browser), curl and jq
# (the README's snippets), Node.js and npm (GraphQL clients, axe-core), python3 with venv (the
# OpenAPI tools and the MCP SDK, installed from PyPI into target/py-venv), a running Docker
# engine with Compose and the stand-in base images (deploy/images/build-base.sh), HAProxy,
# iproute2, and root (the cluster run makes network namespaces). As root, what is missing is
# installed and dockerd started; otherwise one line says what is missing and how to get it, and
# the run fails: nothing of tier 2 is skipped.
set -euo pipefail

cd "$(dirname "$0")/.."

die() { printf 'tier2: %s\n' "$*" >&2; exit 1; }
say() { printf '[tier2] %s\n' "$*"; }

is_root() { [ "$(id -u)" = 0 ]; }

# Debian packages by the program or file that shows they are there.
declare -A PACKAGE=(
    [/usr/bin/chromium]=chromium
    [/usr/bin/chromedriver]=chromium-driver
    [curl]=curl
    [jq]=jq
    [node]=nodejs
    [npm]=npm
    [dockerd]=docker.io
    [docker-compose]=docker-compose
    [debootstrap]=debootstrap
    [haproxy]=haproxy
    [ip]=iproute2
    [runuser]=util-linux
)

present() {
    case "$1" in
        /*) [ -x "$1" ] ;;
        *) command -v "$1" >/dev/null 2>&1 ;;
    esac
}

missing_packages() {
    local tool
    for tool in "${!PACKAGE[@]}"; do
        present "$tool" || echo "${PACKAGE[$tool]}"
    done
    # The font list is read whole before it is searched (grep -q would end fc-list early).
    local fonts
    fonts="$(fc-list 2>/dev/null || true)"
    grep -qiE "wqy|cjk" <<<"$fonts" || echo fonts-wqy-zenhei
    local probe
    probe="$(mktemp -d)"
    python3 -m venv "$probe/venv" >/dev/null 2>&1 || echo python3-venv
    rm -rf "$probe"
}

install_missing() {
    local missing
    missing="$(missing_packages | sort -u | tr '\n' ' ')"
    [ -z "${missing// /}" ] && { say "every tool is installed"; return; }
    command -v apt-get >/dev/null 2>&1 || die "missing: $missing, and apt-get is not here to install them"
    say "installing $missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q || die "apt-get update failed"
    # shellcheck disable=SC2086 # one word a package
    apt-get install -y -q $missing || die "cannot install $missing"
    missing="$(missing_packages | sort -u | tr '\n' ' ')"
    [ -z "${missing// /}" ] || die "still missing after apt-get install: $missing"
}

start_docker() {
    if docker info >/dev/null 2>&1; then
        say "Docker engine $(docker info --format '{{.ServerVersion}}') is running"
        return
    fi
    is_root || die "no Docker engine answers: start it (sudo dockerd) or run this as root"
    # No systemd: dockerd runs in the background beyond this script (it starts its own containerd).
    nohup dockerd >/var/log/dockerd.log 2>&1 &
    local _
    for _ in $(seq 1 60); do
        docker info >/dev/null 2>&1 && { say "started Docker engine $(docker info --format '{{.ServerVersion}}')"; return; }
        sleep 1
    done
    die "dockerd does not answer docker info after 60 s: $(tail -n 3 /var/log/dockerd.log | tr '\n' ' ')"
}

# The whole run is one function, read before it starts: an edit to this file while it runs
# cannot change what it does.
main() {
    if ! is_root; then
        missing="$(missing_packages | sort -u | tr '\n' ' ')"
        die "tier 2 needs root (the cluster run makes network namespaces)${missing:+ and these Debian packages: ${missing% } (apt-get install ${missing% })}: run sudo bash tests/tier2.sh, which installs them"
    fi
    install_missing
    # The configuration the haproxy:2.6 image runs, checked by the same HAProxy (the instances'
    # names resolve only inside the stack, which -c reports as a warning).
    haproxy_check="$(haproxy -c -f deploy/haproxy.cfg 2>&1)" \
        || die "deploy/haproxy.cfg does not pass haproxy -c: $haproxy_check"
    start_docker
    # No image registry is reachable: the base images are built here offline, then the odqs image
    # (a cold release build takes about 12 minutes on 2 cores; an unchanged tree is a cache hit).
    # The tests run `up --no-build` and never build.
    say "building the stand-in base images (deploy/images/build-base.sh)"
    bash deploy/images/build-base.sh || die "deploy/images/build-base.sh failed"
    say "building the odqs image (docker-compose build odqs)"
    docker-compose -f docker-compose.yml build odqs || die "docker-compose build odqs failed"

    filter=()
    if [ "${1:-}" = "--" ]; then
        shift
        filter=("$@")
    fi
    say "running the tier-2 tests"
    cargo test --workspace --no-fail-fast -- --ignored "${filter[@]}"
}

main "$@"
