#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# component-webhook under hostile load, as it ships (the release build, mimalloc, default
# limits), serving without the cluster on 127.0.0.1:
#  1. memory: the bodies that cost the most per byte (numbers, empty objects and arrays, empty
#     strings, members, long strings, escapes, many small objects), each at a ladder of sizes
#     up to the cap, all at once to /validate, /mutate and /convert (far more than the memory
#     budget admits), plus bodies over the caps; the peak resident memory (VmHWM) must stay
#     under the Deployment's 128 MiB limit, requests past the budget must be answered 429 (and
#     those over the caps 413) rather than processed, and the rest answered;
#  2. connections: more silent connections from one address than the per-address limit, a
#     TLS connection trickling its headers a byte at a time, and the probe port filled with
#     half-sent requests from many addresses; a new TLS handshake and admission request from
#     another address (127.0.0.2) must still succeed, /healthz still answer, and every silent
#     or trickling connection be closed once the handshake-and-headers deadline has passed.
# Traffic stays on the loopback range; every loop is bounded in count and time.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"

WEBHOOK=${CO_WEBHOOK_RELEASE_BIN:-$ROOT/build/release/component-webhook}
LIMIT_BYTES=$((128 * 1024 * 1024)) # deploy/base/webhook.yaml: resources.limits.memory
HEADER_TIMEOUT=5                   # the default of --header-timeout-seconds

if [ ! -x "$WEBHOOK" ]; then
    tap_fail "component-webhook (release) is built" "missing $WEBHOOK; run make release"
    tap_done
    exit
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/co-e2e-webhook-limits-XXXXXX")
pid=""
cleanup() {
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    fi
    if [ "$TAP_FAILED" != 0 ]; then
        echo "# --- webhook log (last 40 lines)"
        grep -v 'msg=request' "$work/webhook.log" | tail -n 40 | sed 's/^/# /'
    fi
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    python3 "$ROOT/tests/support/free_port.py"
}

(
    cd "$work" &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
            -out ca.crt -days 2 -subj "/CN=co-e2e-limits-ca" &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout tls.key \
            -out tls.csr -subj "/CN=127.0.0.1" &&
        printf 'subjectAltName=IP:127.0.0.1,IP:127.0.0.2\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' \
            >ext.cnf &&
        openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
            -extfile ext.cnf -out tls.crt
) >"$work/openssl.log" 2>&1 || {
    tap_fail "test certificates are generated" "$(cat "$work/openssl.log")"
    tap_done
    exit
}

port=$(free_port)
probe=$(free_port)
metrics=$(free_port)
"$WEBHOOK" --watch-cluster=false --cert-mode=files --tls-cert-file "$work/tls.crt" \
    --tls-key-file "$work/tls.key" --webhook-bind-address "127.0.0.1:$port" \
    --health-probe-bind-address "127.0.0.1:$probe" --metrics-bind-address "127.0.0.1:$metrics" \
    >"$work/webhook.log" 2>&1 &
pid=$!

ready() { curl -sf "http://127.0.0.1:$probe/readyz" >/dev/null; }
for _ in $(seq 1 100); do
    ready && break
    sleep 0.1
done
tap_check "test_webhook_limits__serves" ready

# The client: python3's ssl over raw sockets, so that a request refused from its headers stops
# sending its body (as an API server's client does) instead of dying on a reset, and so that
# every connection can pick its source address.
cat >"$work/client.py" <<'PY'
import json, select, socket, ssl, sys, threading, time

PORT, PROBE, CA = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ctx = ssl.create_default_context(cafile=CA)

def tls(src, timeout=60):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout, source_address=(src, 0))
    return ctx.wrap_socket(s, server_hostname="127.0.0.1")

def post(path, body, src):
    """Status of a POST, 'reset' when the connection broke without an answer."""
    try:
        ss = tls(src)
        ss.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    "Content-Length: %d\r\nConnection: close\r\n\r\n" % (path, len(body))).encode())
        view, off = memoryview(body), 0
        while off < len(body):
            if ss.pending() or select.select([ss], [], [], 0)[0]:
                break  # answered early: stop sending
            off += ss.send(view[off:off + 65536])
        data = b""
        while True:
            chunk = ss.recv(65536)
            if not chunk:
                break
            data += chunk
        ss.close()
        return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else "reset"
    except (OSError, ValueError):
        return "reset"

def payload(shape, n):
    unit = {"zeros": b"0,", "objs": b"{},", "arrs": b"[],", "strs": b'"",',
            "nums": b"-1.5e300,", "objmem": b'{"a":0},'}.get(shape)
    if unit:
        return b"[" + unit * max(1, n // len(unit)) + b"0]"
    if shape == "members":
        return b"{" + b",".join(b'"k%d":0' % i for i in range(max(1, n // 10))) + b"}"
    if shape == "longstr":
        return b'"' + b"a" * n + b'"'
    if shape == "escapes":
        return b'"' + b"\\u0001" * max(1, n // 6) + b'"'
    raise ValueError(shape)

SPEC = (b'{"apiVersion":"core.cs.sap.com/v1alpha1","kind":"Component","metadata":{"name":"c",'
        b'"namespace":"ns","uid":"u"},"spec":{"sourceRef":{"fluxGitRepository":{"name":"r"}},'
        b'"values":{"v":%s}}}')

def review(route, shape, n):
    obj = SPEC % payload("objmem" if shape == "many" else shape, n)
    if route == "/convert":
        if shape == "many":
            small = SPEC % b"0"
            objs = b",".join([small] * max(1, n // len(small)))
        else:
            objs = obj
        return (b'{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":'
                b'{"uid":"u","desiredAPIVersion":"core.cs.sap.com/v1beta1","objects":[%s]}}' % objs)
    return (b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",'
            b'"kind":{"group":"core.cs.sap.com","version":"v1alpha1","kind":"Component"},'
            b'"namespace":"ns","operation":"CREATE","userInfo":{"username":"x"},"object":%s}}' % obj)

def load():
    cap = int(3.5 * 1024 * 1024)
    shapes = ["zeros", "objs", "arrs", "strs", "nums", "objmem", "members", "longstr",
              "escapes", "many"]
    routes = ["/validate/v1alpha1/components", "/mutate/v1alpha1/components", "/convert"]
    jobs = []
    for shape in shapes:
        n = cap - 4096
        while n > 16384:
            for r in routes:
                jobs.append((r, review(r, shape, n)))
            n = int(n * 0.6)
    # over the caps: refused from the headers
    jobs.append((routes[0], b" " * (cap + 1)))
    jobs.append((routes[2], b" " * (16 * 1024 * 1024 + 1)))
    results = [None] * len(jobs)
    start = threading.Barrier(len(jobs))
    def run(i):
        start.wait()
        results[i] = post(jobs[i][0], jobs[i][1], "127.0.1.%d" % (i % 200 + 1))
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    counts = {}
    for r in results:
        counts[str(r)] = counts.get(str(r), 0) + 1
    resets = ["%s %d" % (jobs[i][0], len(jobs[i][1])) for i, r in enumerate(results) if r == "reset"]
    print(json.dumps({"requests": len(jobs), "bytes": sum(len(b) for _, b in jobs),
                      "status": counts, "reset": resets[:5]}))

def closed_within(socks, deadline):
    """Seconds after which each socket was seen closed by the server (None: still open)."""
    t0, when = time.time(), [None] * len(socks)
    while time.time() - t0 < deadline and None in when:
        live = [s for s, w in zip(socks, when) if w is None]
        for s in select.select(live, [], [], 0.1)[0]:
            try:
                gone = s.recv(4096) == b""
            except OSError:
                gone = True
            if gone:
                when[socks.index(s)] = time.time() - t0
    return when

def conns():
    out = {}
    # silent TCP connections from one address, beyond its limit (256)
    silent = [socket.create_connection(("127.0.0.1", PORT), source_address=("127.0.0.1", 0))
              for _ in range(300)]
    time.sleep(0.5)
    refused = closed_within(silent, 0.5)
    out["silent_refused"] = sum(1 for w in refused if w is not None)
    held = [s for s, w in zip(silent, refused) if w is None]
    t_open = time.time()
    # a handshake, then headers a byte at a time
    trickle = tls("127.0.0.4")
    def drip():
        for b in b"POST /validate/v1alpha1/components HTTP/1.1\r\nHost: x\r\n" * 4:
            try:
                trickle.send(bytes([b]))
            except OSError:
                return
            time.sleep(0.2)
    threading.Thread(target=drip, daemon=True).start()
    # the probe port: half-sent requests from one address and from eight more
    half = []
    for i in range(20):
        a = socket.create_connection(("127.0.0.1", PROBE), source_address=("127.0.0.1", 0))
        a.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        half.append(a)
    for i in range(64):
        a = socket.create_connection(("127.0.0.1", PROBE), source_address=("127.0.0.%d" % (3 + i % 8), 0))
        a.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        half.append(a)
    time.sleep(0.3)
    # a newcomer from another address is served on both ports
    body = (b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"n",'
            b'"operation":"DELETE","kind":{"group":"core.cs.sap.com","version":"v1alpha1",'
            b'"kind":"Component"}}}')
    out["newcomer_admission"] = post("/validate/v1alpha1/components", body, "127.0.0.2")
    try:
        h = socket.create_connection(("127.0.0.1", PROBE), timeout=2, source_address=("127.0.0.2", 0))
        h.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        out["newcomer_healthz"] = h.recv(4096).split(b"\r\n", 1)[0].decode()
    except OSError as e:
        out["newcomer_healthz"] = "error: %s" % e
    # every held connection is closed once the deadline has passed, not before
    left = 20 - (time.time() - t_open)
    when = closed_within(held + [trickle] + half, left)
    out["held"] = len(held)
    out["held_closed"] = sum(1 for w in when[:len(held)] if w is not None)
    out["trickle_closed"] = when[len(held)] is not None
    out["half_closed"] = sum(1 for w in when[len(held) + 1:] if w is not None)
    out["half"] = len(half)
    closes = [w for w in when if w is not None]
    out["last_close_s"] = round(20 - left + max(closes), 1) if closes else None
    print(json.dumps(out))

{"load": load, "conns": conns}[sys.argv[1]]()
PY

hwm_bytes() { awk '/^VmHWM:/ {printf "%d", $2 * 1024}' "/proc/$pid/status"; }

# --- 1. memory ---------------------------------------------------------------------------------
load=$(python3 "$work/client.py" load "$port" "$probe" "$work/ca.crt" 2>&1)
echo "# load: $load"
hwm=$(hwm_bytes)
echo "# VmHWM after the load: $((hwm / 1024 / 1024)) MiB ($hwm bytes), limit $((LIMIT_BYTES / 1024 / 1024)) MiB"
count() { jq -r --arg k "$1" '.status[$k] // 0' <<<"$load" 2>/dev/null || echo 0; }
if [ -n "$hwm" ] && [ "$hwm" -lt "$LIMIT_BYTES" ]; then
    tap_ok "test_webhook_limits__peak_memory_under_the_limit"
else
    tap_fail "test_webhook_limits__peak_memory_under_the_limit" \
        "VmHWM ${hwm:-?} bytes, limit $LIMIT_BYTES" "$load"
fi
[ "$(count 429)" -gt 0 ]
tap_eq "test_webhook_limits__excess_requests_get_429" 0 $?
[ "$(count 413)" -ge 2 ]
tap_eq "test_webhook_limits__bodies_over_the_caps_get_413" 0 $?
[ "$(count 200)" -gt 0 ]
tap_eq "test_webhook_limits__requests_within_the_budget_are_answered" 0 $?
# "reset": cut by the server (its body deadline, under this load) without an answer
tap_eq "test_webhook_limits__no_server_error" 0 "$(count 500)"
tap_eq "test_webhook_limits__every_request_answered_or_cut" "$(jq -r .requests <<<"$load")" \
    "$(jq -r '[.status[]] | add' <<<"$load")"
tap_check "test_webhook_limits__alive_after_the_load" \
    curl -sf --max-time 2 "http://127.0.0.1:$probe/healthz"
tap_check "test_webhook_limits__budget_given_back" \
    sh -c "curl -sf http://127.0.0.1:$metrics/metrics | grep -q '^controller_runtime_webhook_requests_in_flight{.*} 0'"

# --- 2. connections ----------------------------------------------------------------------------
conns=$(python3 "$work/client.py" conns "$port" "$probe" "$work/ca.crt" 2>&1)
echo "# connections: $conns"
field() { jq -r ".$1" <<<"$conns" 2>/dev/null; }
tap_eq "test_webhook_limits__silent_connections_past_the_per_address_limit_refused" 44 \
    "$(field silent_refused)"
tap_eq "test_webhook_limits__newcomer_handshake_and_admission_served" 200 \
    "$(field newcomer_admission)"
tap_eq "test_webhook_limits__healthz_answers_with_the_probe_port_full" "HTTP/1.1 200 OK" \
    "$(field newcomer_healthz)"
tap_eq "test_webhook_limits__silent_connections_closed_after_the_deadline" \
    "$(field held)" "$(field held_closed)"
tap_eq "test_webhook_limits__trickled_headers_do_not_extend_the_deadline" true \
    "$(field trickle_closed)"
tap_eq "test_webhook_limits__half_sent_probe_requests_closed" "$(field half)" "$(field half_closed)"
last=$(field last_close_s)
awk -v l="$last" -v t="$HEADER_TIMEOUT" 'BEGIN { exit !(l != "null" && l >= t - 1 && l <= t + 3) }'
tap_eq "test_webhook_limits__closed_at_the_deadline_not_before ($last s)" 0 $?
tap_check "test_webhook_limits__alive_at_the_end" curl -sf --max-time 2 "http://127.0.0.1:$probe/healthz"

tap_done
