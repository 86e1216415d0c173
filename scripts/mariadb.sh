#!/usr/bin/env bash
# A private, throw-away MariaDB server for the tests.
#   scripts/mariadb.sh start DIR   data dir, socket and logs under DIR; a free loopback port;
#                                  writes the admin URL to DIR/url and the PID to DIR/mariadbd.pid
#   scripts/mariadb.sh stop DIR    stops that server by its PID (never any other MariaDB); the data stays
#   scripts/mariadb.sh restart DIR starts that server again on the same data dir, port and bind
#                                  addresses (stopping it first if it runs): a DB restart under load
# Options (environment, for start):
#   SCHED_MARIADB_BIND=addr[,addr]  addresses to listen on (default 127.0.0.1), e.g.
#                                  "127.0.0.1,10.213.7.1" for a test's veth; with a non-loopback
#                                  address the user sched may also connect from any host
#   SCHED_MARIADB_PORT=N           this port instead of a random free one
# --no-defaults keeps every system my.cnf out, so a MariaDB the machine already runs is untouched.
set -euo pipefail

cmd=${1:?usage: mariadb.sh start|stop|restart DIR}
dir=${2:?usage: mariadb.sh start|stop|restart DIR}

me=mariadb.sh
# shellcheck source-path=SCRIPTDIR source=lib/mariadb-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/mariadb-common.sh"

stop() { stop_pidfile "$dir/mariadbd.pid" 100; }

# launch PORT BIND: starts mariadbd on $dir/data and waits up to 30 s until it answers; sets
# pid and ready (1 when it answers). Needs mariadbd, client and user_opt.
# Its temporary tables live in $dir/tmp, not /tmp: a /tmp cleaner that removes a live temporary
# file fails the statement using it ("Error on delete of '/tmp/#sql-temptable-...'").
launch() {
    mkdir -p "$dir/tmp"
    "$mariadbd" --no-defaults --datadir="$dir/data" --tmpdir="$dir/tmp" --port="$1" --bind-address="$2" \
        --socket="$dir/mysqld.sock" --pid-file="$dir/server.pid" --log-error="$dir/error.log" \
        --skip-name-resolve --skip-log-bin --innodb-buffer-pool-size=128M \
        --innodb-flush-log-at-trx-commit=2 --max-connections=1000 "${user_opt[@]}" \
        >/dev/null 2>&1 &
    pid=$!
    echo "$pid" >"$dir/mariadbd.pid"
    echo "$1" >"$dir/port"
    echo "$2" >"$dir/bind"
    ready=0
    for _ in $(seq 1 300); do
        kill -0 "$pid" 2>/dev/null || break
        if "$client" --no-defaults --socket="$dir/mysqld.sock" -uroot -e 'SELECT 1' >/dev/null 2>&1; then
            ready=1
            break
        fi
        sleep 0.1
    done
}

restart() {
    local mariadbd client pid ready
    [ -d "$dir/data" ] && [ -f "$dir/port" ] || {
        echo "mariadb.sh: no server was started in $dir" >&2
        return 1
    }
    mariadbd=$(find_bin mariadbd mysqld)
    client=$(find_bin mariadb mysql)
    local user_opt
    user_opts
    stop
    launch "$(cat "$dir/port")" "$(cat "$dir/bind" 2>/dev/null || echo 127.0.0.1)"
    if [ "$ready" != 1 ]; then
        echo "mariadb.sh: mariadbd did not restart:" >&2
        tail -20 "$dir/error.log" >&2 || true
        stop
        return 1
    fi
    echo "mariadb.sh: MariaDB (pid $pid) restarted on port $(cat "$dir/port"), data in $dir" >&2
}

start() {
    local mariadbd client
    mariadbd=$(find_bin mariadbd mysqld)
    client=$(find_bin mariadb mysql)
    mkdir -p "$dir"
    local user_opt
    user_opts
    install_db "$dir/data" "$dir/install.log"
    local attempt port pid ready
    local bind=${SCHED_MARIADB_BIND:-127.0.0.1}
    for attempt in 1 2 3 4 5; do
        port=${SCHED_MARIADB_PORT:-$(random_low_port)}
        port_free "$port" || continue
        launch "$port" "$bind"
        [ "$ready" = 1 ] && break
        stop
        if grep -q -i 'address already in use' "$dir/error.log" 2>/dev/null; then continue; fi
        echo "mariadb.sh: mariadbd did not start:" >&2
        tail -20 "$dir/error.log" >&2 || true
        return 1
    done
    [ "$ready" = 1 ] || { echo "mariadb.sh: no free port found" >&2; return 1; }
    local password
    password=$(new_password)
    create_sched_user "$client" "$dir/mysqld.sock" "$password"
    if [ "$bind" != 127.0.0.1 ]; then
        "$client" --no-defaults --socket="$dir/mysqld.sock" -uroot -e "
            CREATE USER 'sched'@'%' IDENTIFIED BY '$password';
            GRANT ALL PRIVILEGES ON *.* TO 'sched'@'%' WITH GRANT OPTION;"
    fi
    echo "mysql://sched:$password@127.0.0.1:$port/sched_test" >"$dir/url"
    echo "mariadb.sh: MariaDB (pid $pid) on 127.0.0.1:$port, data in $dir" >&2
}

case "$cmd" in
    start) start ;;
    stop) stop ;;
    restart) restart ;;
    *) echo "usage: mariadb.sh start|stop|restart DIR" >&2; exit 2 ;;
esac
