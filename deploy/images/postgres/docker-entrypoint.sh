#!/usr/bin/env bash
# The official postgres image's contract, in short: on an empty $PGDATA, initdb with
# $POSTGRES_USER (default postgres) as superuser and $POSTGRES_PASSWORD as its password, create
# $POSTGRES_DB (default: the user's name), run /docker-entrypoint-initdb.d/*.sh and *.sql, then
# serve on all interfaces with password authentication (scram-sha-256) for remote clients.
set -Eeuo pipefail

if [ "${1:-}" = postgres ] || [ "${1:0:1}" = - ]; then
    [ "${1:0:1}" = - ] && set -- postgres "$@"
    if [ "$(id -u)" = 0 ]; then
        mkdir -p "$PGDATA"
        chown postgres:postgres "$PGDATA"
        chmod 0700 "$PGDATA"
        exec setpriv --reuid=postgres --regid=postgres --init-groups "$BASH_SOURCE" "$@"
    fi

    if [ ! -s "$PGDATA/PG_VERSION" ]; then
        : "${POSTGRES_USER:=postgres}"
        : "${POSTGRES_DB:=$POSTGRES_USER}"
        auth="${POSTGRES_HOST_AUTH_METHOD:-}"
        if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
            cat >&2 <<'MSG'
Error: Database is uninitialized and superuser password is not specified.
       You must specify POSTGRES_PASSWORD to a non-empty value for the superuser,
       or POSTGRES_HOST_AUTH_METHOD=trust to allow all connections without a password.
MSG
            exit 1
        fi
        : "${auth:=scram-sha-256}"
        pwfile="$(mktemp)"
        printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
        # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of flags
        initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --encoding=UTF8 --locale=C.UTF-8 \
            ${POSTGRES_INITDB_ARGS:-} -D "$PGDATA"
        rm -f "$pwfile"
        printf '\nhost all all all %s\n' "$auth" >>"$PGDATA/pg_hba.conf"

        # A server on the Unix socket only, for the set-up.
        pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start
        export PGUSER="$POSTGRES_USER" PGPASSWORD="${POSTGRES_PASSWORD:-}" PGHOST=/var/run/postgresql
        if [ "$POSTGRES_DB" != postgres ]; then
            psql -v ON_ERROR_STOP=1 -d postgres -q --set db="$POSTGRES_DB" \
                <<<'CREATE DATABASE :"db";'
        fi
        for f in /docker-entrypoint-initdb.d/*; do
            case "$f" in
                *.sh) echo "running $f"; . "$f" ;;
                *.sql) echo "running $f"; psql -v ON_ERROR_STOP=1 -d "$POSTGRES_DB" -f "$f" ;;
                *) ;;
            esac
        done
        unset PGPASSWORD
        pg_ctl -D "$PGDATA" -m fast -w stop
        echo "PostgreSQL init process complete; ready for start up."
    fi
    set -- "$@" -c listen_addresses='*'
fi

exec "$@"
