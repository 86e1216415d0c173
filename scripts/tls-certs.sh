#!/usr/bin/env bash
# Certificates for TLS on every hop (docs/architecture/http.md "TLS"), made with the openssl
# command: a private CA and one certificate per service, each usable as server and client
# certificate (mutual TLS works with the same files).
#   scripts/tls-certs.sh DIR NAME...   e.g. scripts/tls-certs.sh docker/tls trigger-1 trigger-2 trigger-3 web demo-client
# Writes DIR/ca.crt (what every client trusts: http-client.tls.ca-file, tls.client-ca-file),
# DIR/ca.key (keep it off the servers), and DIR/NAME.crt + DIR/NAME.key per NAME, naming NAME,
# localhost and 127.0.0.1 in subjectAltName (a peer dials NAME; health checks dial localhost).
# An existing CA is kept, so running it again renews the NAMEs' certificates under the same CA:
# the processes pick the new files up within tls.reload-check, or at once on SIGHUP.
# Options (environment):
#   SCHED_TLS_DAYS=N      validity of the service certificates (default 365; the CA gets 10 years)
#   SCHED_TLS_OWNER=UID   chown the NAME.key files to UID (as root), e.g. 10001, the image's user,
#                         which must read them through a bind mount; they stay mode 0600
#   SCHED_TLS_SAN=...     extra subjectAltName entries for every NAME ("DNS:sched.example.com,IP:10.0.0.7")
set -euo pipefail

dir=${1:?usage: tls-certs.sh DIR NAME...}
shift
[ $# -gt 0 ] || { echo "usage: tls-certs.sh DIR NAME..." >&2; exit 2; }
command -v openssl >/dev/null || { echo "tls-certs.sh: openssl not found (apt-get install openssl)" >&2; exit 1; }
days=${SCHED_TLS_DAYS:-365}
mkdir -p "$dir"
cd "$dir"
umask 077

# EC P-256 keys: what the servers' ECDHE suites pair best with, and small handshakes.
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
if [ ! -f ca.crt ] || [ ! -f ca.key ]; then
    openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days 3650 -subj "/CN=sched cluster CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    chmod 0644 ca.crt
fi

for name in "$@"; do
    case "$name" in
        *[!A-Za-z0-9.-]*|"") echo "tls-certs.sh: NAME must be a host name, got '$name'" >&2; exit 2 ;;
    esac
    san="DNS:$name,DNS:localhost,IP:127.0.0.1${SCHED_TLS_SAN:+,$SCHED_TLS_SAN}"
    printf '%s\n' "subjectAltName=$san" "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature" \
        "extendedKeyUsage=serverAuth,clientAuth" >"$name.ext"
    # Written beside the old pair and renamed over it, so a reload never sees a half-written file.
    openssl req "${ec[@]}" -keyout "$name.key.new" -out "$name.csr" -subj "/CN=$name" 2>/dev/null
    openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
        -out "$name.crt.new" -extfile "$name.ext" 2>/dev/null
    chmod 0644 "$name.crt.new"
    if [ -n "${SCHED_TLS_OWNER:-}" ]; then chown "$SCHED_TLS_OWNER" "$name.key.new"; fi
    mv -f "$name.key.new" "$name.key"
    mv -f "$name.crt.new" "$name.crt"
    rm -f "$name.csr" "$name.ext"
    echo "$dir/$name.crt ($san)"
done
