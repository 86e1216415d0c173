#!/usr/bin/env bash
# deploy/k8s rendered and schema-checked offline: `kubectl kustomize` renders the base and every
# overlay, and validate.mjs checks each rendered object against the Kubernetes schemas
# (kubernetes-models, @kubernetes-models/prometheus-operator for the ServiceMonitor; npm ci of
# package-lock.json into WORK_DIR). No cluster is needed.
#   run.sh WORK_DIR K8S_DIR            every kustomization must render and validate
#   run.sh WORK_DIR K8S_DIR --broken   the check must catch a broken manifest: a copy of the
#       base with one ill-typed or misspelled (unknown) field per case must fail, naming that
#       field and only it
# Missing kubectl, node or npm fails the test when SCHED_REQUIRE_BROWSER=1 and skips it (exit
# 77) otherwise, as the browser tests do (scripts/deps.sh installs all three).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:?usage: run.sh WORK_DIR K8S_DIR [--broken]}
k8s=$(cd "${2:?usage: run.sh WORK_DIR K8S_DIR [--broken]}" && pwd)
mode=${3:-}

# shellcheck source=../../browser/npm_ci.sh
. "$here/../../browser/npm_ci.sh"
missing=()
command -v kubectl >/dev/null || missing+=(kubernetes-client)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
sched_require_tools "the Kubernetes schema check" "${missing[@]}"

mkdir -p "$work"
if ! cmp -s "$here/package-lock.json" "$work/package-lock.json" || [ ! -d "$work/node_modules/kubernetes-models" ]; then
    cp "$here/package.json" "$here/package-lock.json" "$work/"
    (cd "$work" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi
# Next to its node_modules: ES modules resolve packages from the importing file's folder.
cp "$here/validate.mjs" "$work/"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/k8s-schema.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Renders kustomization DIR into FILE; kubectl's own error fails the test.
render() {
    local dir=$1 out=$2
    if ! kubectl kustomize "$dir" >"$out" 2>"$tmp/render.err"; then
        echo "FAILED: kubectl kustomize $dir:" >&2
        cat "$tmp/render.err" >&2
        echo "(deploy/k8s needs kubectl 1.22+, kustomize v4.2+; this one: $(kubectl version --client 2>&1 | head -1))" >&2
        return 1
    fi
}

if [ "$mode" != --broken ]; then
    dirs=("$k8s/base")
    for d in "$k8s"/overlays/*/; do dirs+=("${d%/}"); done
    [ ${#dirs[@]} -ge 3 ] || { echo "FAILED: expected base and at least two overlays under $k8s" >&2; exit 1; }
    passed=0 failed=0
    for d in "${dirs[@]}"; do
        name=${d#"$k8s"/}
        echo "== $name"
        if render "$d" "$tmp/rendered.yaml" && node "$work/validate.mjs" "$tmp/rendered.yaml"; then
            passed=$((passed + 1))
        else
            echo "FAILED: $name" >&2
            failed=$((failed + 1))
        fi
    done
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
fi

# --broken: each case copies the base, breaks one field with sed (the edit must apply), and
# expects the validator to fail with a message naming the object and the field's path: one
# INVALID line holding EXPECTED, or with `exact`, being exactly EXPECTED (no other message).
#   broken_case FILE SED_EXPRESSION EXPECTED [exact]
passed=0 failed=0
broken_case() {
    local file=$1 edit=$2 expected=$3 match=-qF
    [ "${4:-}" = exact ] && match=-qxF
    rm -rf "$tmp/base" && cp -r "$k8s/base" "$tmp/base"
    sed -i -e "$edit" "$tmp/base/$file"
    if cmp -s "$k8s/base/$file" "$tmp/base/$file"; then
        echo "FAILED: the edit '$edit' changed nothing in $file" >&2
        failed=$((failed + 1))
        return
    fi
    local out status=0
    render "$tmp/base" "$tmp/rendered.yaml" || { failed=$((failed + 1)); return; }
    out=$(node "$work/validate.mjs" "$tmp/rendered.yaml") || status=$?
    if [ "$status" -ne 0 ] && grep "$match" "$expected" <<<"$out" && [ "$(grep -c '^INVALID' <<<"$out")" -eq 1 ]; then
        echo "ok: $file '$edit' -> $(grep '^INVALID' <<<"$out")"
        passed=$((passed + 1))
    else
        echo "FAILED: $file '$edit': expected one invalid object with '$expected', got (exit $status):" >&2
        echo "$out" >&2
        failed=$((failed + 1))
    fi
}
broken_case trigger.yaml 's/^  replicas: 3$/  replicas: "three"/' \
    "INVALID Deployment sched-trigger: data/spec/replicas must be integer"
broken_case web.yaml '0,/containerPort: 8080/s//containerPort: http/' \
    "INVALID Deployment sched-web: data/spec/template/spec/containers/0/ports/0/containerPort must be integer"
broken_case servicemonitor.yaml 's/- port: http /- port: 7071 /' \
    "INVALID ServiceMonitor sched: data/spec/endpoints/0/port must be string"
broken_case networkpolicy.yaml '0,/policyTypes: \["Ingress"\]/s//policyTypes: ["Inbound"]/' \
    "INVALID NetworkPolicy sched-trigger: data/spec/policyTypes/0"
# Misspelled fields: valid YAML of the right types that the API server would drop with only
# a warning.
broken_case trigger.yaml 's/^  replicas: 3$/  replica: 3/' \
    "INVALID Deployment sched-trigger: spec/replica is not a field of DeploymentSpec" exact
broken_case web.yaml '0,/readinessProbe:/s//readinessProbes:/' \
    "INVALID Deployment sched-web: spec/template/spec/containers/0/readinessProbes is not a field of Container" exact
broken_case executor.yaml 's/^            periodSeconds: 20$/            periodSecond: 20/' \
    "INVALID Deployment sched-demo-executor: spec/template/spec/containers/0/livenessProbe/periodSecond is not a field of Probe" exact
broken_case servicemonitor.yaml 's/^      interval: 30s$/      intervall: 30s/' \
    "INVALID ServiceMonitor sched: spec/endpoints/0/intervall is not a field of ServiceMonitor" exact
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
