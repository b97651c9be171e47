#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# component-webhook against a static TLS responder, in one run, on the same machine:
#  1. throughput: wrk (keep-alive, a Lua script POSTing a typical AdmissionReview) against the
#     webhook's validating route, then against nginx answering the same POST over TLS with the
#     same certificate and a fixed body of the same size as the webhook's answer; requests/s,
#     latency percentiles and the ratio (the figure of merit; target >= 70%). Twice:
#     a. BENCH_THREADS workers each, the connections spread over them on both sides (the
#        webhook's acceptor spreads them; nginx listens with reuseport, so the kernel does). On
#        a small machine the load generator shares the cores, and its cost weighs on both sides;
#     b. one worker each: the server is the bottleneck, and the ratio follows the CPU each side
#        spends on a request; then the floor of section 4 the same way, which bounds it;
#  2. latency at a fixed rate: h2load --h1 holding 1,000 requests/s, p50/p99/max computed from
#     its per-request log (target p99 < 2 ms);
#  3. resident memory of the webhook: peak (VmHWM) after the load (target < 10 MB), with the part
#     that is pages of the program and its shared libraries shown apart from its own memory;
#     at the end the same for a webhook watching a private control plane (as in a cluster);
#  4. the floor: the same wrk run with a POST body of the same size that the webhook rejects at
#     once (only blanks and "{}": no AdmissionReview to parse or judge, HTTP 400), against nginx
#     answering it as before. This is libmicrohttpd + GnuTLS with a trivial handler; its ratio
#     to nginx bounds what any handler can reach.
# The webhook runs with --watch-cluster=false (no API server), so admission runs its full
# validation and the built-in dependency rules against an empty cluster state (no
# ComponentPolicy exists, so none is evaluated). It prints figures and never fails on a time.
# Knobs: BENCH_SECONDS (10), BENCH_CONNECTIONS (16), BENCH_THREADS (2, server workers on both
# sides), BENCH_RATE (1000), BENCH_ROUNDS (5: throughput runs per side, alternating; the medians
# are compared: on a small shared machine single runs of either side vary by a fifth),
# BENCH_ROUNDS_ONE (5: the same with one worker each).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WEBHOOK=${CO_WEBHOOK_BIN:-$ROOT/build/release/component-webhook}
REVIEW=$ROOT/tests/fixtures/webhook/admission-create-v1alpha1.json
SECS=${BENCH_SECONDS:-10}
CONNS=${BENCH_CONNECTIONS:-16}
THREADS=${BENCH_THREADS:-2}
RATE=${BENCH_RATE:-1000}
ROUNDS=${BENCH_ROUNDS:-5}
ROUNDS_ONE=${BENCH_ROUNDS_ONE:-5}
ROUTE=/validate/v1alpha1/components

need() {
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "bench_webhook: $1 is missing (Debian package $2; run make deps)" >&2
        exit 1
    fi
}
need wrk wrk
need h2load nghttp2-client
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || {
    echo "bench_webhook: nginx is missing (Debian package nginx-light; run make deps)" >&2
    exit 1
}
[ -x "$WEBHOOK" ] || {
    echo "bench_webhook: $WEBHOOK is missing (make release)" >&2
    exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/co-bench-webhook-XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    python3 "$ROOT/tests/support/free_port.py"
}
wait_port() {
    local i
    for i in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    echo "bench_webhook: nothing listens on port $1" >&2
    return 1
}

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/tls.key" \
    -out "$work/tls.crt" -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    >/dev/null 2>&1

# --- the webhook ---------------------------------------------------------------------------------
wport=$(free_port)
"$WEBHOOK" --watch-cluster=false --tls-cert-file "$work/tls.crt" --tls-key-file "$work/tls.key" \
    --webhook-bind-address "127.0.0.1:$wport" --health-probe-bind-address 0 \
    --metrics-bind-address 0 --webhook-threads "$THREADS" --log-level error \
    >"$work/webhook.log" 2>&1 &
wpid=$!
pids+=("$wpid")
wait_port "$wport" || exit 1
curl -s --cacert "$work/tls.crt" -H 'Content-Type: application/json' --data-binary @"$REVIEW" \
    "https://127.0.0.1:$wport$ROUTE" >"$work/answer.json"
answer_size=$(wc -c <"$work/answer.json")
if ! grep -q '"allowed":true' "$work/answer.json"; then
    echo "bench_webhook: the typical review was not admitted: $(cat "$work/answer.json")" >&2
    exit 1
fi

# --- nginx answering the same POST with a fixed body of the same size ----------------------------
# Without reuseport one nginx worker takes a burst of new connections in some runs and not in
# others, and its throughput swings by a third from run to run; with it each worker has its own
# listening socket and the kernel spreads connections over them.
body=$(sed 's/\\/\\\\/g; s/"/\\"/g' "$work/answer.json")
start_nginx() { # NAME WORKERS PORT
    local dir=$work/$1
    mkdir -p "$dir"
    cat >"$dir/nginx.conf" <<EOF
worker_processes $2;
pid $dir/nginx.pid;
error_log $dir/error.log error;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    keepalive_requests 100000000;
    keepalive_timeout 120s;
    client_body_buffer_size 64k;
    server {
        listen 127.0.0.1:$3 ssl reuseport;
        ssl_certificate $work/tls.crt;
        ssl_certificate_key $work/tls.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        location = $ROUTE {
            default_type application/json;
            return 200 "$body";
        }
    }
}
EOF
    "$NGINX" -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;' >"$dir/stdout.log" 2>&1 &
    pids+=("$!")
    wait_port "$3"
}
nport=$(free_port)
start_nginx nginx "$THREADS" "$nport" || exit 1
curl -s -k -H 'Content-Type: application/json' --data-binary @"$REVIEW" \
    "https://127.0.0.1:$nport$ROUTE" >"$work/nginx-answer.json"
nginx_size=$(wc -c <"$work/nginx-answer.json")

# Both sides must negotiate the same protocol and cipher (the clients are OpenSSL-based like wrk).
tls_of() { # PORT
    openssl s_client -connect "127.0.0.1:$1" -servername 127.0.0.1 </dev/null 2>/dev/null |
        awk '/^New, / {print $2, $NF; exit}'
}
tls_webhook=$(tls_of "$wport")
tls_nginx=$(tls_of "$nport")

# --- throughput ----------------------------------------------------------------------------------
wrk_script() { # LUA-FILE BODY-FILE
    cat >"$1" <<EOF
local f = assert(io.open("$2", "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
EOF
}
wrk_script "$work/post.lua" "$REVIEW"
# The floor's body: as long as the review, rejected by the webhook as soon as it is parsed.
review_size=$(wc -c <"$REVIEW")
python3 -c 'import sys; sys.stdout.write(" " * (int(sys.argv[1]) - 2) + "{}")' "$review_size" \
    >"$work/floor.json"
wrk_script "$work/floor.lua" "$work/floor.json"
# CPU seconds (user + system) used so far by a process and its children's threads: on a shared
# machine, CPU per request is a steadier figure than requests per second.
cpu_of() { # PID...
    local p t=0
    for p in "$@"; do
        t=$(awk -v t="$t" -v hz="$(getconf CLK_TCK)" '{print t + ($14 + $15) / hz}' \
            "/proc/$p/stat" 2>/dev/null || echo "$t")
    done
    echo "$t"
}
nginx_pids() { # [NAME]
    pgrep -P "$(cat "$work/${1:-nginx}/nginx.pid")" | tr '\n' ' '
}
run_wrk() { # NAME PORT PID...  (LUA names the request script, default post.lua)
    local name=$1 port=$2 lua=${LUA:-$work/post.lua}
    shift 2
    local out=$work/wrk-$name.txt cpu0 cpu1 rps p50 p90 p99 errs reqs us
    cpu0=$(cpu_of "$@")
    wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -s "$lua" \
        "https://127.0.0.1:$port$ROUTE" >"$out" 2>&1
    cpu1=$(cpu_of "$@")
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
    p50=$(awk '$1 == "50%" {print $2}' "$out")
    p90=$(awk '$1 == "90%" {print $2}' "$out")
    p99=$(awk '$1 == "99%" {print $2}' "$out")
    errs=$(awk '/Non-2xx|Socket errors/ {print}' "$out" | tr '\n' ' ')
    reqs=$(awk '/requests in/ {print $1}' "$out")
    us=$(awk -v a="$cpu0" -v b="$cpu1" -v n="${reqs:-0}" \
        'BEGIN { if (n > 0) printf "%.1f", (b - a) * 1e6 / n; else print "?" }')
    printf '%-8s %10s req/s   p50 %8s   p90 %8s   p99 %8s   server CPU %6s us/request   %s\n' \
        "$name" "${rps:-?}" "${p50:-?}" "${p90:-?}" "${p99:-?}" "$us" "$errs"
    eval "rps_$name=${rps:-0}"
    eval "cpu_$name=$us"
}

echo "== component-webhook vs nginx: TLS, keep-alive, $CONNS connections, ${SECS}s each, " \
    "$THREADS server threads/workers"
echo "   request: $(wc -c <"$REVIEW") bytes (AdmissionReview CREATE of a typical Component);" \
    "answer: webhook $answer_size bytes, nginx $nginx_size bytes"
echo "   TLS: webhook ${tls_webhook:-?}, nginx ${tls_nginx:-?}; one wrk thread, connections reused"
# Rounds alternate between the two, and the medians are compared: on a shared two-core machine
# one run of either side can be a fifth slower than the next.
median() { # NUMBER...
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
        END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
compare() { # ROUNDS WEBHOOK-PORT WEBHOOK-PID NGINX-NAME NGINX-PORT
    local rounds=$1 port=$2 pid=$3 nname=$4 nport_=$5 round
    local all_rps_webhook=() all_rps_nginx=() all_cpu_webhook=() all_cpu_nginx=()
    for round in $(seq 1 "$rounds"); do
        echo "-- round $round of $rounds"
        rps_webhook=0
        rps_nginx=0
        cpu_webhook=0
        cpu_nginx=0
        run_wrk webhook "$port" "$pid"
        # shellcheck disable=SC2046 # one argument per worker
        run_wrk nginx "$nport_" $(nginx_pids "$nname")
        all_rps_webhook+=("$rps_webhook")
        all_rps_nginx+=("$rps_nginx")
        all_cpu_webhook+=("${cpu_webhook/\?/0}")
        all_cpu_nginx+=("${cpu_nginx/\?/0}")
    done
    awk -v a="$(median "${all_rps_webhook[@]}")" -v b="$(median "${all_rps_nginx[@]}")" \
        -v ca="$(median "${all_cpu_webhook[@]}")" -v cb="$(median "${all_cpu_nginx[@]}")" \
        -v n="$rounds" -v target="${TARGET- (target >= 70%)}" 'BEGIN {
        printf "median of %d: webhook %.0f req/s (%.1f us server CPU/request), nginx %.0f req/s (%.1f us)\n", n, a, ca, b, cb
        if (b > 0) printf "ratio    webhook/nginx throughput = %.1f%%%s\n", 100 * a / b, target
        if (ca + 0 > 0) printf "ratio    nginx/webhook server CPU per request = %.1f%%\n", 100 * cb / ca
    }'
}
echo "-- a. $THREADS workers each, the connections spread over them"
compare "$ROUNDS" "$wport" "$wpid" nginx "$nport"

# One worker each: a second webhook and a second nginx, stopped afterwards.
wport1=$(free_port)
"$WEBHOOK" --watch-cluster=false --tls-cert-file "$work/tls.crt" --tls-key-file "$work/tls.key" \
    --webhook-bind-address "127.0.0.1:$wport1" --health-probe-bind-address 0 \
    --metrics-bind-address 0 --webhook-threads 1 --log-level error >"$work/webhook1.log" 2>&1 &
wpid1=$!
pids+=("$wpid1")
nport1=$(free_port)
if wait_port "$wport1" && start_nginx nginx1 1 "$nport1"; then
    echo "-- b. one worker each: the server sets the pace"
    compare "$ROUNDS_ONE" "$wport1" "$wpid1" nginx1 "$nport1"
    echo "-- b. floor, one worker each: the POST of section 4, which the webhook rejects at once"
    LUA=$work/floor.lua TARGET="" compare "$ROUNDS_ONE" "$wport1" "$wpid1" nginx1 "$nport1"
fi
kill "$wpid1" "$(cat "$work/nginx1/nginx.pid" 2>/dev/null)" 2>/dev/null

# --- fixed rate ----------------------------------------------------------------------------------
clients=10
per_client=$(((RATE + clients - 1) / clients))
run_h2load() { # NAME PORT
    h2load --h1 -c "$clients" --rps "$per_client" -D "$SECS" -d "$REVIEW" \
        -H 'Content-Type: application/json' --log-file "$work/h2load-$1.log" \
        "https://127.0.0.1:$2$ROUTE" >"$work/h2load-$1.txt" 2>&1
    sort -n -k3 "$work/h2load-$1.log" | awk -v name="$1" -v secs="$SECS" '
        { lat[NR] = $3; if ($2 != 200) bad++ }
        END {
            if (NR == 0) { printf "%-8s no requests completed\n", name; exit }
            i50 = int(NR * 0.50); if (i50 < 1) i50 = 1
            i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
            printf "%-8s %6d requests (%.0f/s)   p50 %.3f ms   p99 %.3f ms   max %.3f ms   non-200: %d\n",
                name, NR, NR / secs, lat[i50] / 1000, lat[i99] / 1000, lat[NR] / 1000, bad
        }'
}
echo "== fixed rate: h2load --h1, $clients connections x $per_client req/s = ~$((clients * per_client)) req/s, ${SECS}s (target p99 < 2 ms)"
run_h2load webhook "$wport"
run_h2load nginx "$nport"

# --- memory ----------------------------------------------------------------------------------------
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$wpid/status")
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$wpid/status")
anon=$(awk '/^RssAnon:/ {print $2}' "/proc/$wpid/status")
file=$(awk '/^RssFile:/ {print $2}' "/proc/$wpid/status")
awk -v h="$hwm" -v r="$rss" -v a="${anon:-0}" -v f="${file:-0}" 'BEGIN {
    printf "== webhook memory: peak resident %.1f MB, now %.1f MB (target < 10 MB)\n", h / 1024, r / 1024
    printf "   now: %.1f MB own memory (heap, stacks) + %.1f MB pages of the program and its libraries\n", a / 1024, f / 1024
}'

# --- floor ---------------------------------------------------------------------------------------
echo "== floor: a POST of the same size that the webhook rejects at once (HTTP 400, no review)"
rps_webhook=0
rps_nginx=0
cpu_webhook="?"
cpu_nginx="?"
LUA=$work/floor.lua run_wrk webhook "$wport" "$wpid"
# shellcheck disable=SC2046 # one argument per worker
LUA=$work/floor.lua run_wrk nginx "$nport" $(nginx_pids)
awk -v a="$rps_webhook" -v b="$rps_nginx" -v ca="$cpu_webhook" -v cb="$cpu_nginx" 'BEGIN {
    if (b > 0) printf "ratio    floor: trivial-handler webhook/nginx throughput = %.1f%%\n", 100 * a / b
    if (ca + 0 > 0) printf "ratio    floor: nginx/trivial-handler webhook server CPU per request = %.1f%%\n", 100 * cb / ca
}'

# --- memory while watching a cluster ---------------------------------------------------------------
# As it runs in a cluster: a second webhook watching a private control plane (Components,
# ComponentPolicies, Namespaces through the Kubernetes client, over TLS), 200 Components in the
# cache and a ComponentPolicy that applies to every review (so each one is also parsed,
# defaulted and judged by it), the same load. BENCH_CLUSTER=0 leaves this out.
if [ "${BENCH_CLUSTER:-1}" = 1 ]; then
    KUBECTL=${KUBECTL:-$(command -v kubectl || echo "${XDG_CACHE_HOME:-$HOME/.cache}/component-operator/bin/kubectl")}
    cp_dir="$work/controlplane"
    if ! "$ROOT/tests/env/controlplane.sh" start "$cp_dir" >"$work/controlplane.log" 2>&1; then
        echo "bench_webhook: the control plane did not start: $(tail -n 5 "$work/controlplane.log")" >&2
        exit 1
    fi
    stop_controlplane() { "$ROOT/tests/env/controlplane.sh" stop "$cp_dir" >/dev/null 2>&1; }
    trap 'stop_controlplane; cleanup' EXIT
    # shellcheck disable=SC1091 # written by controlplane.sh
    . "$cp_dir/env"
    kc() { "$KUBECTL" --kubeconfig "$CO_TEST_KUBECONFIG" "$@"; }
    kc apply -f "$ROOT/crds/" >/dev/null &&
        kc wait --for=condition=Established --timeout=60s crd --all >/dev/null &&
        kc create namespace bench >/dev/null || exit 1
    for i in $(seq 1 200); do
        printf -- '---\napiVersion: core.cs.sap.com/v1alpha1\nkind: Component\nmetadata:\n  name: c%d\n  namespace: bench\nspec:\n  sourceRef:\n    fluxGitRepository:\n      name: repo\n' "$i"
    done >"$work/components.yaml"
    kc apply -f "$work/components.yaml" >/dev/null || exit 1
    printf 'apiVersion: core.cs.sap.com/v1alpha1\nkind: ComponentPolicy\nmetadata:\n  name: bench\nspec:\n  rules:\n    sourceKinds:\n      action: Warn\n      allowed: [fluxGitRepository]\n' |
        kc apply -f - >/dev/null || exit 1
    cport=$(free_port)
    hport=$(free_port)
    "$WEBHOOK" --kubeconfig "$CO_TEST_KUBECONFIG" --tls-cert-file "$work/tls.crt" \
        --tls-key-file "$work/tls.key" --webhook-bind-address "127.0.0.1:$cport" \
        --health-probe-bind-address "127.0.0.1:$hport" --metrics-bind-address 0 \
        --webhook-threads "$THREADS" --log-level error >"$work/webhook-cluster.log" 2>&1 &
    cpid=$!
    pids+=("$cpid")
    ready=0
    for _ in $(seq 1 100); do
        if curl -sf "http://127.0.0.1:$hport/readyz" >/dev/null 2>&1; then
            ready=1
            break
        fi
        sleep 0.2
    done
    if [ "$ready" != 1 ]; then
        echo "bench_webhook: the watching webhook never became ready: $(tail -n 5 "$work/webhook-cluster.log")" >&2
        exit 1
    fi
    echo "== webhook watching a cluster (200 Components cached, a ComponentPolicy applying), same load"
    run_wrk watching "$cport" "$cpid"
    awk -v h="$(awk '/^VmHWM:/ {print $2}' "/proc/$cpid/status")" \
        -v a="$(awk '/^RssAnon:/ {print $2}' "/proc/$cpid/status")" \
        -v f="$(awk '/^RssFile:/ {print $2}' "/proc/$cpid/status")" 'BEGIN {
        printf "== watching webhook memory: peak resident %.1f MB (target < 10 MB)\n", h / 1024
        printf "   now: %.1f MB own memory + %.1f MB pages of the program and its libraries\n", a / 1024, f / 1024
    }'
fi
