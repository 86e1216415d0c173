#!/usr/bin/env bash
# The container end-to-end test (not part of ctest: it builds the image, minutes): builds
# docker/Dockerfile with podman, runs docker/docker-compose.yml with podman-compose, waits for
# every service to be healthy, creates a job for the demo client through the web API and waits
# until one of its fires succeeded. Then stops and removes every container, volume and network
# it started (project `sched-ctest`, so a developer's `sched` cluster is never touched).
#
#   scripts/container-test.sh            # exit 0: passed or skipped (the reason is printed)
#
# Skips (exit 0, "container-test: SKIP: ...") where podman or podman-compose is missing or
# podman cannot run containers (podman run --init needs catatonit: apt-get install catatonit). Base images: docker.io/library/debian:bookworm(-slim) and
# mariadb:10.11 from the registry when it answers; otherwise a bookworm base is made with
# debootstrap from Debian packages (DEBIAN_MIRROR, default http://deb.debian.org/debian) and a
# stand-in for the MariaDB image is built on it from Debian's mariadb-server (10.11 too), with
# the same environment variables and healthcheck.sh. Environment: the variables README.md,
# "Deploy a cluster" puts in docker/.env, generated the same way (they override a docker/.env).
# TIMEOUT (s, default 300): how long the cluster may take to fire the job once started.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
project=sched-ctest
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
timeout_s=${TIMEOUT:-300}
log() { echo "container-test: $*" >&2; }
skip() {
    echo "container-test: SKIP: $*"
    exit 0
}

command -v podman >/dev/null || skip "podman is not installed (Debian: apt-get install podman podman-compose)"
command -v podman-compose >/dev/null || skip "podman-compose is not installed (Debian: apt-get install podman-compose)"
if ! info=$(podman info 2>&1); then skip "podman cannot run here: $(tail -n1 <<<"$info")"; fi

work=$(mktemp -d /tmp/sched-container-test.XXXXXX)
compose=(podman-compose -p "$project" -f docker/docker-compose.yml -f "$work/override.yml")
started=0
cleanup() {
    local rc=$?
    if [ "$started" = 1 ]; then
        log "logs of the cluster (last 30 lines of each service):"
        for c in $(podman ps -a --filter "label=io.podman.compose.project=$project" --format '{{.Names}}'); do
            echo "--- $c" >&2
            podman logs --tail 30 "$c" >&2 2>&1 || true
        done
        log "stopping the cluster"
        "${compose[@]}" down -v >/dev/null 2>&1 || true
        # podman-compose 1.0 leaves the network and the volumes behind: remove what is ours.
        podman ps -aq --filter "label=io.podman.compose.project=$project" | xargs -r podman rm -f >/dev/null 2>&1 || true
        podman volume ls -q --filter "label=io.podman.compose.project=$project" | xargs -r podman volume rm -f >/dev/null 2>&1 || true
        podman network rm -f "${project}_default" >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- Base images: the registry's, or made here from Debian packages.
have() { podman image exists "$1"; }
pull() { have "$1" || timeout 120 podman pull -q "$1" >/dev/null 2>&1; }
debian_base=ok
pull docker.io/library/debian:bookworm && pull docker.io/library/debian:bookworm-slim || debian_base=missing
if [ "$debian_base" = missing ]; then
    log "no registry base image reachable: making debian:bookworm with debootstrap from $mirror"
    command -v debootstrap >/dev/null || skip "no registry reachable and debootstrap is not installed (apt-get install debootstrap)"
    rootfs="$work/rootfs"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
        tail -n 20 "$work/debootstrap.log" >&2
        skip "debootstrap failed (no Debian mirror reachable?), see above"
    }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - docker.io/library/debian:bookworm >/dev/null
    podman tag docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim
    rm -rf "$rootfs"
fi

mariadb_image=docker.io/library/mariadb:10.11
if ! pull "$mariadb_image"; then
    mariadb_image=localhost/sched-ctest-mariadb:10.11
    if ! have "$mariadb_image"; then
        log "no registry for docker.io/library/mariadb:10.11 either: building a stand-in from Debian's mariadb-server"
        mkdir -p "$work/mariadb"
        # The official image's contract as far as the compose file uses it: MARIADB_DATABASE,
        # MARIADB_USER, MARIADB_PASSWORD create the database and user; healthcheck.sh answers
        # once they exist.
        cat >"$work/mariadb/entrypoint.sh" <<'EOF'
#!/bin/sh
set -eu
mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld /var/lib/mysql
[ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
mariadbd --user=mysql --datadir=/var/lib/mysql --bind-address=0.0.0.0 --socket=/run/mysqld/mysqld.sock &
pid=$!
trap 'kill -TERM $pid' TERM INT
until mariadb-admin --socket=/run/mysqld/mysqld.sock ping >/dev/null 2>&1; do sleep 1; done
mariadb --socket=/run/mysqld/mysqld.sock <<SQL
CREATE DATABASE IF NOT EXISTS \`${MARIADB_DATABASE}\`;
CREATE USER IF NOT EXISTS '${MARIADB_USER}'@'%' IDENTIFIED BY '${MARIADB_PASSWORD}';
GRANT ALL ON \`${MARIADB_DATABASE}\`.* TO '${MARIADB_USER}'@'%';
SQL
touch /run/mysqld/initialized
wait $pid
EOF
        cat >"$work/mariadb/healthcheck.sh" <<'EOF'
#!/bin/sh
[ -f /run/mysqld/initialized ] && mariadb-admin --socket=/run/mysqld/mysqld.sock ping >/dev/null 2>&1
EOF
        cat >"$work/mariadb/Containerfile" <<'EOF'
FROM docker.io/library/debian:bookworm
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        mariadb-server mariadb-client && rm -rf /var/lib/apt/lists/*
COPY entrypoint.sh healthcheck.sh /usr/local/bin/
RUN chmod +x /usr/local/bin/entrypoint.sh /usr/local/bin/healthcheck.sh
LABEL org.opencontainers.image.description="scripts/container-test.sh stand-in for mariadb:10.11"
ENTRYPOINT ["/usr/local/bin/entrypoint.sh"]
EOF
        podman build --pull=never --network=host -q -t "$mariadb_image" "$work/mariadb" >/dev/null
    fi
fi
printf 'services:\n  mariadb:\n    image: %s\n' "$mariadb_image" >"$work/override.yml"

# --- Can podman start a container here? A VM's kernel may refuse the rlimits rootful podman
# sets by default (runc: "error setting rlimit type 7: operation not permitted"): then lower
# them for every container podman-compose starts.
probe() { timeout 120 podman run --rm --init --network=none "$@" docker.io/library/debian:bookworm true 2>&1; }
run_args=()
if ! why=$(probe); then
    grep -q "error setting rlimit" <<<"$why" || skip "podman cannot start a container here: $(tail -n1 <<<"$why")"
    run_args=(--ulimit nofile=8192:8192 --ulimit nproc=8192:8192)
    why=$(probe "${run_args[@]}") || skip "podman cannot start a container here: $(tail -n1 <<<"$why")"
    log "podman's default rlimits are refused here: containers run with ${run_args[*]}"
    compose=(podman-compose --podman-run-args "${run_args[*]}" -p "$project" -f docker/docker-compose.yml -f "$work/override.yml")
fi

# --- The image (build tools and runtime packages come from Debian through apt in the build).
log "building sched:local (docker/Dockerfile)"
build_start=$(date +%s)
podman build --pull=never --network=host -f docker/Dockerfile -t sched:local \
    --build-arg SCHED_REVISION="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" . \
    >"$work/build.log" 2>&1 || {
    tail -n 40 "$work/build.log" >&2
    log "FAIL: the image did not build"
    exit 1
}
log "image built in $(($(date +%s) - build_start)) s"

# --- The environment README.md shows (docker/.env made from .env.example), as variables.
secret() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }
SCHED_DB_PASSWORD=$(secret)
SCHED_TOKEN=$(secret)
SCHED_EXECUTOR_TOKEN=$SCHED_TOKEN
export SCHED_DB_PASSWORD SCHED_TOKEN SCHED_EXECUTOR_TOKEN

log "starting the cluster (podman-compose -p $project)"
started=1
"${compose[@]}" up -d >"$work/up.log" 2>&1 || {
    tail -n 40 "$work/up.log" >&2
    log "FAIL: podman-compose up"
    exit 1
}

# podman-compose 1.0 does not wait for service_healthy: wait here for every health check.
deadline=$(($(date +%s) + timeout_s))
services="mariadb trigger-1 trigger-2 trigger-3 web demo-client"
for s in $services; do
    c="${project}_${s}_1"
    until [ "$(podman inspect -f '{{.State.Health.Status}}' "$c" 2>/dev/null)" = healthy ]; do
        podman healthcheck run "$c" >/dev/null 2>&1 || true
        [ "$(date +%s)" -lt "$deadline" ] || {
            log "FAIL: $s not healthy within ${timeout_s} s"
            exit 1
        }
        sleep 2
    done
    log "$s healthy"
done

api=http://127.0.0.1:8080/api/v1
auth=(-H "Authorization: Bearer $SCHED_TOKEN" -H 'Content-Type: application/json')
job=$(curl -fsS "${auth[@]}" -X POST "$api/jobs" -d '{
  "name": "hello", "app": "demo", "handler": "echo",
  "schedule_type": "cron", "schedule_expr": "*/10 * * * * ?", "time_zone": "UTC",
  "params": {"greeting": "hello from the container test"}}')
job_id=$(sed -n 's/.*"id":\([0-9]*\).*/\1/p' <<<"$job" | head -n1)
[ -n "$job_id" ] || {
    log "FAIL: job not created: $job"
    exit 1
}
log "job hello created (id $job_id): waiting for a fire that succeeded"
until curl -fsS "${auth[@]}" "$api/fires?job_id=$job_id&status=succeeded&limit=1" | grep -q '"status":"succeeded"'; do
    [ "$(date +%s)" -lt "$deadline" ] || {
        log "FAIL: no fire of job $job_id succeeded within ${timeout_s} s:"
        curl -sS "${auth[@]}" "$api/fires?job_id=$job_id&limit=5" >&2 || true
        exit 1
    }
    sleep 2
done
curl -fsS http://127.0.0.1:8080/readyz >/dev/null
status=$(curl -fsS http://127.0.0.1:7071/status)
log "trigger-1 /status: $status"
grep -q '"address":"trigger-1:7071"' <<<"$status" || {
    log "FAIL: trigger-1 does not advertise trigger-1:7071"
    exit 1
}
log "PASS: the cluster ran a fire of the demo job end to end"
