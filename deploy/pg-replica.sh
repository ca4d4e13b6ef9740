#!/usr/bin/env bash
# A scratch PostgreSQL primary and a streaming replica of it, made with the machine's own
# PostgreSQL binaries (initdb, pg_basebackup -R, pg_ctl): what the read-replica tests and the
# cluster run read from. Idempotent: a pair already running is left as it is.
#
#   deploy/pg-replica.sh start    # primary on 127.0.0.1:5433, replica on 127.0.0.1:5434
#   deploy/pg-replica.sh stop
#
# Both trust local connections (user postgres, database postgres), like the machine's own
# cluster in CI. As root the clusters run as the `postgres` user (initdb refuses root).
# ODQS_PG_REPLICA_DIR (default /var/tmp/odqs-pg-replica) holds both data directories and logs.
set -euo pipefail

DIR="${ODQS_PG_REPLICA_DIR:-/var/tmp/odqs-pg-replica}"
PRIMARY_PORT="${ODQS_PG_PRIMARY_PORT:-5433}"
REPLICA_PORT="${ODQS_PG_REPLICA_PORT:-5434}"

die() { printf 'pg-replica: %s\n' "$*" >&2; exit 1; }

bindir="${PG_BINDIR:-}"
if [ -z "$bindir" ]; then
    version="$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -1)"
    [ -n "$version" ] || die "no PostgreSQL under /usr/lib/postgresql (install postgresql)"
    bindir="/usr/lib/postgresql/$version/bin"
fi
[ -x "$bindir/initdb" ] && [ -x "$bindir/pg_basebackup" ] \
    || die "initdb or pg_basebackup missing in $bindir"

# Commands run as the clusters' owner: root may not own a cluster.
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

ready() { "$bindir/pg_isready" -q -h 127.0.0.1 -p "$1"; }

wait_ready() {
    for _ in $(seq 1 60); do
        ready "$1" && return 0
        sleep 0.5
    done
    die "the cluster on port $1 does not accept connections after 30 s (log: $DIR/$2.log)"
}

start() {
    mkdir -p "$DIR"
    [ "$(id -u)" = 0 ] && chown postgres: "$DIR"
    if [ ! -f "$DIR/primary/PG_VERSION" ]; then
        as_owner "$bindir/initdb" -D "$DIR/primary" -U postgres --auth=trust -E UTF8 \
            --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1 || die "initdb failed: $(tail -5 "$DIR/initdb.log")"
        cat >>"$DIR/primary/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PRIMARY_PORT
unix_socket_directories = '$DIR'
wal_level = replica
max_wal_senders = 4
wal_keep_size = 256MB
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
        echo "host replication postgres 127.0.0.1/32 trust" >>"$DIR/primary/pg_hba.conf"
    fi
    if ! ready "$PRIMARY_PORT"; then
        as_owner "$bindir/pg_ctl" -D "$DIR/primary" -l "$DIR/primary.log" -w start >/dev/null \
            || die "the primary did not start: $(tail -5 "$DIR/primary.log")"
    fi
    wait_ready "$PRIMARY_PORT" primary
    if [ ! -f "$DIR/replica/PG_VERSION" ]; then
        as_owner "$bindir/pg_basebackup" -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres \
            -D "$DIR/replica" -R -X stream >"$DIR/basebackup.log" 2>&1 \
            || die "pg_basebackup failed: $(tail -5 "$DIR/basebackup.log")"
        cat >>"$DIR/replica/postgresql.conf" <<EOF
port = $REPLICA_PORT
hot_standby = on
EOF
    fi
    if ! ready "$REPLICA_PORT"; then
        as_owner "$bindir/pg_ctl" -D "$DIR/replica" -l "$DIR/replica.log" -w start >/dev/null \
            || die "the replica did not start: $(tail -5 "$DIR/replica.log")"
    fi
    wait_ready "$REPLICA_PORT" replica
    in_recovery="$("$bindir/psql" -h 127.0.0.1 -p "$REPLICA_PORT" -U postgres -d postgres -Atc 'SELECT pg_is_in_recovery()')"
    [ "$in_recovery" = t ] || die "the cluster on port $REPLICA_PORT is not a replica"
    echo "primary postgres://postgres@127.0.0.1:$PRIMARY_PORT/postgres, replica postgres://postgres@127.0.0.1:$REPLICA_PORT/postgres"
}

stop() {
    for name in replica primary; do
        if [ -f "$DIR/$name/postmaster.pid" ]; then
            as_owner "$bindir/pg_ctl" -D "$DIR/$name" -m fast -w stop >/dev/null || true
        fi
    done
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    *) die "usage: $0 start|stop" ;;
esac
