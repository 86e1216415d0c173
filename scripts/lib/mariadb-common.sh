# Functions shared by scripts/mariadb.sh and scripts/galera.sh (sourced, not run).
# The sourcing script sets `me` (its name, for messages) before it sources this file.

# find_bin NAME...: the path of the first of these MariaDB programs found (PATH or /usr/sbin).
find_bin() {
    for b in "$@"; do
        command -v "$b" 2>/dev/null && return 0
        [ -x "/usr/sbin/$b" ] && { echo "/usr/sbin/$b"; return 0; }
    done
    echo "$me: none of $* found (install mariadb-server)" >&2
    return 1
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# random_low_port: a random port from 10000 up to the kernel's ephemeral range. Below that range:
# a client retrying a connection to a stopped server's port in that range can be given that very
# port as its own and connect to itself (TCP simultaneous open), which then keeps the restarted
# server from binding it.
random_low_port() {
    local low=32768
    read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    [ "$low" -gt 12000 ] || low=32768
    echo $((10000 + RANDOM % (low - 10000)))
}

# stop_pidfile FILE TENTHS: TERM to the server whose PID FILE holds, KILL when it still runs after
# TENTHS tenths of a second; removes FILE. Only that PID is ever signalled.
stop_pidfile() {
    local pidfile=$1 tenths=$2 pid
    [ -f "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 "$tenths"); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
}

# user_opts: sets the array user_opt to --user=root when run as root (mariadbd refuses root
# otherwise), to nothing else. The caller declares `local user_opt`.
user_opts() {
    user_opt=()
    if [ "$(id -u)" -eq 0 ]; then user_opt=(--user=root); fi
}

# install_db DATADIR LOG: initialises an empty data dir (root by password, no test database).
install_db() {
    local tool
    tool=$(find_bin mariadb-install-db mysql_install_db)
    local user_opt
    user_opts
    "$tool" --no-defaults --datadir="$1" --auth-root-authentication-method=normal \
        --skip-test-db "${user_opt[@]}" >"$2" 2>&1 || {
        echo "$me: mariadb-install-db failed:" >&2
        tail -20 "$2" >&2
        return 1
    }
}

# new_password: a fresh random password for the test user.
new_password() { echo "t$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"; }

# create_sched_user CLIENT SOCKET PASSWORD: the user sched (all rights from 127.0.0.1) and the
# database sched_test.
create_sched_user() {
    "$1" --no-defaults --socket="$2" -uroot -e "
        CREATE USER 'sched'@'127.0.0.1' IDENTIFIED BY '$3';
        GRANT ALL PRIVILEGES ON *.* TO 'sched'@'127.0.0.1' WITH GRANT OPTION;
        CREATE DATABASE sched_test;"
}
