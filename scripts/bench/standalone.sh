# Sourced by the bench scripts (not run): start_standalone BINARY DIR PORT TOKEN starts the
# standalone BINARY with config/standalone.yaml on 127.0.0.1:PORT, on SQLite in DIR (a new
# directory: never an existing one; exits 1 when it exists) and with TOKEN as its token; the
# caller is left in DIR (the node logs to out.log there), `dir` is its absolute path and `pid`
# the node's PID. Returns once /readyz answers (or after 10 s).
start_standalone() {
    local bin repo
    bin=$(realpath "$1")
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    mkdir "$2" || exit 1
    dir=$(cd "$2" && pwd)
    cd "$dir" || exit 1
    sed -e "s#127.0.0.1:8080#127.0.0.1:$3#" -e "s#sqlite://data/scheduler.db#sqlite://$dir/s.db#" \
        "$repo/config/standalone.yaml" >s.yaml
    SCHED_TOKEN=$4 "$bin" --config s.yaml >out.log 2>&1 &
    pid=$!
    for _ in $(seq 50); do
        curl -sf "127.0.0.1:$3/readyz" >/dev/null && break
        sleep 0.2
    done
}
