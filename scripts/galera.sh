#!/usr/bin/env bash
# A private, throw-away three-node MariaDB Galera cluster on loopback for the tests.
#   scripts/galera.sh start DIR    nodes under DIR/node1..3 (data, socket, logs), each on free
#                                  loopback ports (SQL, group communication, IST, SST); node1 is
#                                  initialised, its data copied to node2 and node3 (so no full
#                                  state transfer is needed), then node1 bootstraps the cluster
#                                  and the others join it.
#                                  Writes DIR/urlN (the sched user's URL on node N) and
#                                  DIR/nodeN/mariadbd.pid
#   scripts/galera.sh stop DIR     stops the three servers by their PIDs (never any other MariaDB)
#   scripts/galera.sh kill DIR N   kill -9 of node N (a database node lost under load)
#   scripts/galera.sh rejoin DIR N starts node N again from its recovered position; it catches
#                                  up by incremental state transfer from a donor's cache
#                                  (or a full one by rsync)
# --no-defaults keeps every system my.cnf out, so a MariaDB the machine already runs is untouched.
# Needs mariadb-server, galera-4 and rsync (scripts/deps.sh test installs them).
set -euo pipefail

cmd=${1:?usage: galera.sh start|stop|kill|rejoin DIR [N]}
dir=${2:?usage: galera.sh start|stop|kill|rejoin DIR [N]}
dir=$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")

me=galera.sh
# shellcheck source-path=SCRIPTDIR source=lib/mariadb-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/mariadb-common.sh"

provider() {
    for p in /usr/lib/galera/libgalera_smm.so /usr/lib/libgalera_smm.so /usr/lib64/galera-4/libgalera_smm.so; do
        [ -f "$p" ] && { echo "$p"; return 0; }
    done
    echo "galera.sh: libgalera_smm.so not found (install galera-4)" >&2
    return 1
}

# free_port: a free port below the ephemeral range (see random_low_port) not yet handed out in
# this cluster's DIR/ports.
free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$(random_low_port)
        if port_free "$p" && ! grep -qx "$p" "$dir/ports" 2>/dev/null; then
            echo "$p" >>"$dir/ports"
            echo "$p"
            return 0
        fi
    done
    echo "galera.sh: no free port found" >&2
    return 1
}

stop_node() { stop_pidfile "$dir/node$1/mariadbd.pid" 150; }

# launch N [extra mariadbd options...]: starts node N and waits up to 90 s until it is Synced.
launch() {
    local n=$1
    shift
    local nd="$dir/node$n"
    local mariadbd client
    mariadbd=$(find_bin mariadbd mysqld)
    client=$(find_bin mariadb mysql)
    local user_opt
    user_opts
    mkdir -p "$nd/tmp"  # temporary tables in the node's own directory, as in mariadb.sh
    # shellcheck disable=SC2046
    "$mariadbd" --no-defaults --datadir="$nd/data" --tmpdir="$nd/tmp" --port="$(cat "$nd/port")" --bind-address=127.0.0.1 \
        --socket="$nd/mysqld.sock" --pid-file="$nd/server.pid" --log-error="$nd/error.log" \
        --skip-name-resolve --innodb-buffer-pool-size=128M --innodb-flush-log-at-trx-commit=2 \
        --max-connections=1000 --binlog-format=ROW --default-storage-engine=InnoDB \
        --innodb-autoinc-lock-mode=2 --wsrep-on=ON --wsrep-provider="$(provider)" \
        --wsrep-cluster-name=sched-test --wsrep-node-name="node$n" \
        --wsrep-cluster-address="gcomm://$(cat "$dir/gcomm")" \
        --wsrep-node-address="127.0.0.1:$(cat "$nd/gport")" \
        --wsrep-provider-options="gmcast.listen_addr=tcp://127.0.0.1:$(cat "$nd/gport");ist.recv_addr=127.0.0.1:$(cat "$nd/iport");gcache.size=64M;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT5S" \
        --wsrep-sst-method=rsync --wsrep-sst-receive-address="127.0.0.1:$(cat "$nd/sport")" \
        --wsrep-slave-threads=2 "${user_opt[@]}" "$@" >/dev/null 2>&1 &
    local pid=$!
    # A joiner's state transfer (rsync, also for the incremental one's completion marker) is
    # received by an rsync daemon that runs as nobody when started by root.
    [ "$(id -u)" -eq 0 ] && chmod 0777 "$nd/data"
    echo "$pid" >"$nd/mariadbd.pid"
    for _ in $(seq 1 900); do
        kill -0 "$pid" 2>/dev/null || break
        local state
        state=$("$client" --no-defaults --socket="$nd/mysqld.sock" -uroot -N -B \
            -e "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null | cut -f2 || true)
        if [ "$state" = Synced ]; then
            echo "galera.sh: node$n (pid $pid) Synced on 127.0.0.1:$(cat "$nd/port")" >&2
            return 0
        fi
        sleep 0.1
    done
    echo "galera.sh: node$n did not reach Synced:" >&2
    tail -30 "$nd/error.log" >&2 || true
    return 1
}

start() {
    local client
    client=$(find_bin mariadb mysql)
    provider >/dev/null
    mkdir -p "$dir"
    : >"$dir/ports"
    local gcomm=""
    for n in 1 2 3; do
        local nd="$dir/node$n"
        mkdir -p "$nd"
        free_port >"$nd/port"
        free_port >"$nd/gport"
        free_port >"$nd/iport"
        free_port >"$nd/sport"
        gcomm="${gcomm:+$gcomm,}127.0.0.1:$(cat "$nd/gport")"
    done
    install_db "$dir/node1/data" "$dir/node1/install.log"
    # A one-node cluster creates the user and the database, stops cleanly (its grastate.dat then
    # holds the cluster's id and last seqno) and lends its data to the other two nodes.
    echo "gcomm://" >"$dir/gcomm"
    launch 1 --wsrep-new-cluster || { stop_all; return 1; }
    local password
    password=$(new_password)
    create_sched_user "$client" "$dir/node1/mysqld.sock" "$password"
    stop_node 1
    for n in 2 3; do cp -a "$dir/node1/data" "$dir/node$n/data"; done
    echo "$gcomm" >"$dir/gcomm"
    launch 1 --wsrep-new-cluster || { stop_all; return 1; }
    launch 2 || { stop_all; return 1; }
    launch 3 || { stop_all; return 1; }
    for n in 1 2 3; do
        echo "mysql://sched:$password@127.0.0.1:$(cat "$dir/node$n/port")/sched_test" >"$dir/url$n"
    done
}

# recover N: after a kill -9 the node's grastate.dat says seqno -1; InnoDB knows the last
# committed position, which --wsrep-recover prints (what the packaged galera_recovery does).
recover() {
    local nd="$dir/node$1" mariadbd
    mariadbd=$(find_bin mariadbd mysqld)
    local user_opt
    user_opts
    rm -f "$nd/recover.log"
    "$mariadbd" --no-defaults --datadir="$nd/data" --socket="$nd/recover.sock" --skip-networking \
        --log-error="$nd/recover.log" --wsrep-on=ON --wsrep-provider="$(provider)" --wsrep-cluster-address=gcomm:// \
        --binlog-format=ROW \
        --wsrep-recover "${user_opt[@]}" >/dev/null 2>&1 || true
    sed -n 's/.*WSREP: Recovered position: *//p' "$nd/recover.log" | tail -1 >"$nd/position"
    [ -s "$nd/position" ] || { echo "galera.sh: node$1: no position recovered" >&2; tail -20 "$nd/recover.log" >&2; return 1; }
}

stop_all() {
    for n in 3 2 1; do stop_node "$n"; done
}

case "$cmd" in
    start) start ;;
    stop) stop_all ;;
    kill)
        n=${3:?usage: galera.sh kill DIR N}
        [ -f "$dir/node$n/mariadbd.pid" ] && kill -KILL "$(cat "$dir/node$n/mariadbd.pid")" 2>/dev/null || true
        rm -f "$dir/node$n/mariadbd.pid"
        ;;
    rejoin)
        n=${3:?usage: galera.sh rejoin DIR N}
        stop_node "$n"
        recover "$n"
        launch "$n" --wsrep-start-position="$(cat "$dir/node$n/position")"
        ;;
    *) echo "usage: galera.sh start|stop|kill|rejoin DIR [N]" >&2; exit 2 ;;
esac
