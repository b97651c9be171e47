#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A private Kubernetes control plane (etcd + kube-apiserver) on loopback for tests, in the
# manner of controller-runtime's envtest. Everything lives in one directory; several control
# planes coexist because every port is chosen free at start and nothing is shared.
#
#   tests/env/controlplane.sh start DIR           start; writes DIR/env (source it)
#   tests/env/controlplane.sh stop DIR            stop both processes and remove DIR
#   tests/env/controlplane.sh apiserver-stop DIR  stop only kube-apiserver (etcd keeps data)
#   tests/env/controlplane.sh apiserver-start DIR start it again on the same port
#   tests/env/controlplane.sh restart DIR         apiserver-stop + apiserver-start
#   tests/env/controlplane.sh compact DIR         compact etcd's history up to now
#   tests/env/controlplane.sh apiserver-crash DIR SIGKILL to kube-apiserver, then start it again
#   tests/env/controlplane.sh etcd-restart DIR    stop etcd and start it again on its data
#
# DIR/env exports:
#   CO_TEST_KUBECONFIG             admin kubeconfig (bearer token, group system:masters)
#   CO_TEST_RESTRICTED_KUBECONFIG  kubeconfig of user co-restricted (no permissions at all)
#   CO_TEST_RESTRICTED_USER        that user's name (for RBAC bindings in tests)
#   CO_TEST_CERT_KUBECONFIG        admin kubeconfig authenticating with a client certificate
#   CO_TEST_CONTROLPLANE_DIR       DIR
#   CO_TEST_APISERVER_URL          https://127.0.0.1:PORT
#   CO_TEST_ETCD_URL               http://127.0.0.1:PORT
#
# Certificates (CA, serving certificate for 127.0.0.1/localhost, client certificate) and the
# service-account signing key are generated with the openssl CLI. Authorization is RBAC (plus
# Node). There is no kube-controller-manager: namespaces `default` and `kube-system` exist
# because kube-apiserver creates them, but nothing makes Deployments ready or removes
# terminating namespaces, and the ServiceAccount admission plugin is off so that Pods can be
# created without token controllers. Logs are in DIR/logs until stop; set
# CO_TEST_KEEP_CONTROLPLANE_LOGS=1 to keep DIR/logs after stop. Extra kube-apiserver flags
# may be given in CO_TEST_APISERVER_ARGS (word-split).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
START_TIMEOUT=${CO_TEST_CONTROLPLANE_TIMEOUT:-180}
RESTRICTED_USER=co-restricted

log() { printf '[controlplane] %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

usage() {
    sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# --- helpers ---------------------------------------------------------------------------------

# pick_port: prints a port on 127.0.0.1 nobody listens on, outside the ephemeral range
# (32768-60999) so that outgoing connections do not take it between choice and bind.
pick_port() {
    local p i
    for i in $(seq 1 200); do
        p=$((10000 + (RANDOM * 32768 + RANDOM) % 22000))
        if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            continue
        fi
        if command -v ss >/dev/null 2>&1 && ss -Htan "sport = :$p" 2>/dev/null | grep . >/dev/null; then
            continue
        fi
        echo "$p"
        return 0
    done
    die "no free port found"
}

# pid_alive PIDFILE: whether the process recorded in PIDFILE runs and is ours: the file
# holds "PID MARKER", and the process's command line must contain MARKER (a path unique to
# this control plane), so a recycled PID is never touched.
pid_alive() {
    local f=$1 pid marker
    [ -f "$f" ] || return 1
    read -r pid marker <"$f" || true
    [ -n "$pid" ] && [ -n "$marker" ] && [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -F -- "$marker" >/dev/null
}

# pid_exited PIDFILE: the process is gone or a zombie. A process that is alive but not (yet)
# running its program -- a forked shell on a loaded machine can take seconds to exec -- has
# neither exited nor passed pid_alive().
pid_exited() {
    local pid state
    read -r pid _ <"$1" 2>/dev/null || return 0
    [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 0
    state=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1)
    [ -z "$state" ] || [ "$state" = Z ]
}

# await_exec PIDFILE: after `cmd &`, the child runs our shell until it execs; wait for the
# exec, so that pid_alive() does not mistake the still-forking child for a dead process.
await_exec() {
    local f=$1 pid marker i
    read -r pid marker <"$f"
    for i in $(seq 1 100); do
        pid_alive "$f" && return 0
        [ -d "/proc/$pid" ] || return 0
        sleep 0.05
    done
}

# stop_pid PIDFILE NAME: SIGTERM, up to 30 s of grace, then SIGKILL.
stop_pid() {
    local f=$1 name=$2 pid i
    if ! pid_alive "$f"; then
        rm -f "$f"
        return 0
    fi
    read -r pid _ <"$f"
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 300); do
        pid_alive "$f" || break
        sleep 0.1
    done
    if pid_alive "$f"; then
        log "$name did not stop within 30s; killing it"
        kill -KILL "$pid" 2>/dev/null || true
        for i in $(seq 1 50); do
            pid_alive "$f" || break
            sleep 0.1
        done
    fi
    rm -f "$f"
}

b64() { base64 -w0 <"$1"; }

# write_kubeconfig FILE USER-YAML: a kubeconfig with one cluster, one user, one context.
write_kubeconfig() {
    local file=$1 user_yaml=$2
    cat >"$file.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: co-test
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(b64 "$DIR/pki/ca.crt")
users:
- name: co-test-user
  user:
$user_yaml
contexts:
- name: co-test
  context:
    cluster: co-test
    user: co-test-user
    namespace: default
current-context: co-test
EOF
    chmod 0600 "$file.tmp"
    mv -f "$file.tmp" "$file"
}

gen_pki() {
    local pki=$DIR/pki
    mkdir -p "$pki"
    chmod 0700 "$pki"
    local ossl=(openssl)
    "${ossl[@]}" req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=co-test-ca" \
        -keyout "$pki/ca.key" -out "$pki/ca.crt" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    # serving certificate: 127.0.0.1, ::1, localhost and the in-cluster service names
    cat >"$pki/serving.ext" <<'EOF'
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:0:0:0:0:0:0:0:1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
EOF
    "${ossl[@]}" req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
        -keyout "$pki/serving.key" -out "$pki/serving.csr" 2>/dev/null
    "${ossl[@]}" x509 -req -in "$pki/serving.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
        -CAcreateserial -days 3650 -extfile "$pki/serving.ext" -out "$pki/serving.crt" \
        2>/dev/null
    # client certificate for an administrator (organisation = group system:masters)
    cat >"$pki/client.ext" <<'EOF'
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth
EOF
    "${ossl[@]}" req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=co-cert-admin" \
        -keyout "$pki/client.key" -out "$pki/client.csr" 2>/dev/null
    "${ossl[@]}" x509 -req -in "$pki/client.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
        -CAcreateserial -days 3650 -extfile "$pki/client.ext" -out "$pki/client.crt" \
        2>/dev/null
    # service-account token signing key
    "${ossl[@]}" genrsa -out "$pki/sa.key" 2048 2>/dev/null
    "${ossl[@]}" rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
    # static tokens: token,user,uid,"groups"
    local admin_token restricted_token
    admin_token=$(openssl rand -hex 24)
    restricted_token=$(openssl rand -hex 24)
    printf '%s,co-admin,co-admin-uid,"system:masters"\n%s,%s,co-restricted-uid,"co-testers"\n' \
        "$admin_token" "$restricted_token" "$RESTRICTED_USER" >"$pki/tokens.csv"
    printf '%s' "$admin_token" >"$pki/admin.token"
    printf 'Authorization: Bearer %s\n' "$admin_token" >"$pki/admin.header"
    printf '%s' "$restricted_token" >"$pki/restricted.token"
    chmod 0600 "$pki"/*
}

write_kubeconfigs() {
    local pki=$DIR/pki
    write_kubeconfig "$DIR/admin.kubeconfig" "    token: $(cat "$pki/admin.token")"
    write_kubeconfig "$DIR/restricted.kubeconfig" "    token: $(cat "$pki/restricted.token")"
    write_kubeconfig "$DIR/cert.kubeconfig" "    client-certificate-data: $(b64 "$pki/client.crt")
    client-key-data: $(b64 "$pki/client.key")"
}


# --- etcd ------------------------------------------------------------------------------------

# wait_up PIDFILE LOG NAME CHECK...: waits until CHECK succeeds. Returns 0 when up, 2 when the
# process died because its port was taken (the caller picks new ports), 1 otherwise.
wait_up() {
    local pidfile=$1 logf=$2 name=$3
    shift 3
    local deadline=$((SECONDS + START_TIMEOUT))
    while [ $SECONDS -lt $deadline ]; do
        if ! pid_alive "$pidfile"; then
            if ! pid_exited "$pidfile"; then
                sleep 0.5
                continue
            fi
            if grep -qiE 'address already in use' "$logf" 2>/dev/null; then
                return 2
            fi
            log "$name exited during start-up; last lines of $logf:"
            tail -n 30 "$logf" >&2 || true
            return 1
        fi
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.5
    done
    log "$name was not ready within ${START_TIMEOUT}s; last lines of $logf:"
    tail -n 30 "$logf" >&2 || true
    return 1
}

etcd_healthy() {
    curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" | grep '"health":"true"' >/dev/null
}

# launch_etcd BIN DATA: starts etcd on ETCD_PORT and ETCD_PEER_PORT with its data in DATA (a
# data directory that holds a member already is reopened: the initial-cluster flags are ignored).
launch_etcd() {
    local etcd=$1 data=$2
    echo "$ETCD_PEER_PORT" >"$DIR/etcd.peer-port"
    echo "=== start $(date -u +%FT%TZ)" >>"$DIR/logs/etcd.log"
    setsid "$etcd" --name co-test --data-dir "$data" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster "co-test=http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster-state new --logger zap --log-level warn --log-outputs stderr \
        >>"$DIR/logs/etcd.log" 2>&1 </dev/null &
    echo "$! $data" >"$DIR/etcd.pid"
    await_exec "$DIR/etcd.pid"
}

start_etcd() {
    local etcd data attempt rc
    etcd=$("$ROOT/tests/env/kube-apiserver.sh" etcd)
    # etcd fsyncs every write; on tmpfs that costs nothing and the tests run faster.
    if [ -d /dev/shm ] && [ -w /dev/shm ]; then
        data=$(mktemp -d /dev/shm/co-etcd-XXXXXX)
    else
        mkdir -p "$DIR/etcd-data"
        data=$(mktemp -d "$DIR/etcd-data/XXXXXX")
    fi
    echo "$data" >"$DIR/etcd-data.path"
    for attempt in 1 2 3 4 5; do
        ETCD_PORT=$(pick_port)
        ETCD_PEER_PORT=$(pick_port)
        [ "$ETCD_PORT" != "$ETCD_PEER_PORT" ] || continue
        rm -rf "${data:?}/member"
        : >"$DIR/logs/etcd.log"
        launch_etcd "$etcd" "$data"
        rc=0
        wait_up "$DIR/etcd.pid" "$DIR/logs/etcd.log" etcd etcd_healthy || rc=$?
        case $rc in
        0) return 0 ;;
        2) log "etcd port taken (attempt $attempt); trying others" ;;
        *) return 1 ;;
        esac
    done
    return 1
}

# --- kube-apiserver --------------------------------------------------------------------------

apiserver_ready() {
    local h=(-sf --max-time 5 --cacert "$DIR/pki/ca.crt" -H "@$DIR/pki/admin.header")
    local base="https://127.0.0.1:$APISERVER_PORT"
    [ "$(curl "${h[@]}" "$base/readyz")" = ok ] &&
        curl "${h[@]}" -o /dev/null "$base/api/v1/namespaces/default" &&
        curl "${h[@]}" -o /dev/null "$base/api/v1/namespaces/kube-system"
}

# launch_apiserver: starts kube-apiserver with the flags saved in DIR/apiserver.args.
launch_apiserver() {
    local bin args=()
    bin=$(cat "$DIR/apiserver.bin")
    mapfile -t args <"$DIR/apiserver.args"
    echo "=== start $(date -u +%FT%TZ)" >>"$DIR/logs/kube-apiserver.log"
    setsid "$bin" "${args[@]}" >>"$DIR/logs/kube-apiserver.log" 2>&1 </dev/null &
    echo "$! $DIR/pki/tokens.csv" >"$DIR/apiserver.pid"
    await_exec "$DIR/apiserver.pid"
}

write_apiserver_args() {
    local pki=$DIR/pki extra
    {
        echo "--etcd-servers=http://127.0.0.1:$ETCD_PORT"
        echo "--bind-address=127.0.0.1"
        echo "--advertise-address=127.0.0.1"
        echo "--secure-port=$APISERVER_PORT"
        echo "--insecure-port=0"
        echo "--cert-dir=$pki"
        echo "--tls-cert-file=$pki/serving.crt"
        echo "--tls-private-key-file=$pki/serving.key"
        echo "--tls-min-version=VersionTLS12"
        echo "--client-ca-file=$pki/ca.crt"
        echo "--token-auth-file=$pki/tokens.csv"
        echo "--authorization-mode=Node,RBAC"
        echo "--service-account-issuer=https://kubernetes.default.svc.cluster.local"
        echo "--service-account-key-file=$pki/sa.pub"
        echo "--service-account-signing-key-file=$pki/sa.key"
        echo "--api-audiences=https://kubernetes.default.svc.cluster.local"
        echo "--service-cluster-ip-range=10.0.0.0/24"
        echo "--allow-privileged=true"
        echo "--disable-admission-plugins=ServiceAccount"
        echo "--profiling=false"
        echo "--v=1"
        # shellcheck disable=SC2086
        for extra in ${CO_TEST_APISERVER_ARGS:-}; do
            echo "$extra"
        done
    } >"$DIR/apiserver.args"
}

apiserver_wait() {
    wait_up "$DIR/apiserver.pid" "$DIR/logs/kube-apiserver.log" kube-apiserver apiserver_ready
}

start_apiserver() {
    local attempt rc
    "$ROOT/tests/env/kube-apiserver.sh" >"$DIR/apiserver.bin"
    for attempt in 1 2 3 4 5; do
        APISERVER_PORT=$(pick_port)
        [ "$APISERVER_PORT" != "$ETCD_PORT" ] && [ "$APISERVER_PORT" != "$ETCD_PEER_PORT" ] ||
            continue
        echo "$APISERVER_PORT" >"$DIR/apiserver.port"
        write_apiserver_args
        write_kubeconfigs
        launch_apiserver
        rc=0
        apiserver_wait || rc=$?
        case $rc in
        0) return 0 ;;
        2) log "kube-apiserver port taken (attempt $attempt); trying another" ;;
        *) return 1 ;;
        esac
    done
    return 1
}

load_state() {
    [ -f "$DIR/apiserver.port" ] && [ -f "$DIR/etcd.port" ] || die "$DIR holds no control plane"
    DIR=$(cd "$DIR" && pwd)
    APISERVER_PORT=$(cat "$DIR/apiserver.port")
    ETCD_PORT=$(cat "$DIR/etcd.port")
}

# --- commands --------------------------------------------------------------------------------

cmd_start() {
    [ -e "$DIR/env" ] && die "$DIR already holds a control plane"
    mkdir -p "$DIR/logs"
    DIR=$(cd "$DIR" && pwd)
    command -v openssl >/dev/null 2>&1 || die "openssl is missing (make deps)"
    command -v curl >/dev/null 2>&1 || die "curl is missing (make deps)"
    log "generating certificates and tokens"
    gen_pki
    log "starting etcd"
    start_etcd || die "etcd failed to start"
    echo "$ETCD_PORT" >"$DIR/etcd.port"
    log "starting kube-apiserver"
    start_apiserver || die "kube-apiserver failed to start"
    cat >"$DIR/env.tmp" <<EOF
export CO_TEST_KUBECONFIG='$DIR/admin.kubeconfig'
export CO_TEST_RESTRICTED_KUBECONFIG='$DIR/restricted.kubeconfig'
export CO_TEST_RESTRICTED_USER='$RESTRICTED_USER'
export CO_TEST_CERT_KUBECONFIG='$DIR/cert.kubeconfig'
export CO_TEST_CONTROLPLANE_DIR='$DIR'
export CO_TEST_APISERVER_URL='https://127.0.0.1:$APISERVER_PORT'
export CO_TEST_ETCD_URL='http://127.0.0.1:$ETCD_PORT'
EOF
    mv -f "$DIR/env.tmp" "$DIR/env"
    log "ready: https://127.0.0.1:$APISERVER_PORT (etcd 127.0.0.1:$ETCD_PORT, dir $DIR)"
}

cmd_stop() {
    [ -d "$DIR" ] || return 0
    DIR=$(cd "$DIR" && pwd)
    stop_pid "$DIR/apiserver.pid" kube-apiserver
    stop_pid "$DIR/etcd.pid" etcd
    local data=""
    [ -f "$DIR/etcd-data.path" ] && data=$(cat "$DIR/etcd-data.path")
    case "$data" in
    /dev/shm/co-etcd-* | "$DIR"/*) rm -rf "$data" ;;
    esac
    if [ "${CO_TEST_KEEP_CONTROLPLANE_LOGS:-0}" = 1 ]; then
        find "$DIR" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
    else
        rm -rf "$DIR"
    fi
}

cmd_apiserver_stop() {
    load_state
    stop_pid "$DIR/apiserver.pid" kube-apiserver
}

cmd_apiserver_start() {
    load_state
    if pid_alive "$DIR/apiserver.pid"; then
        return 0
    fi
    local i
    # the previous process may hold the port for a moment after it exits
    for i in 1 2 3; do
        launch_apiserver
        if apiserver_wait; then
            return 0
        fi
        sleep 1
    done
    die "kube-apiserver did not restart"
}

# apiserver-crash: SIGKILL to kube-apiserver (no graceful shutdown: its clients' connections
# break mid-request), then apiserver-start.
cmd_apiserver_crash() {
    load_state
    local pid
    if pid_alive "$DIR/apiserver.pid"; then
        read -r pid _ <"$DIR/apiserver.pid"
        kill -KILL "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            pid_alive "$DIR/apiserver.pid" || break
            sleep 0.1
        done
    fi
    rm -f "$DIR/apiserver.pid"
    cmd_apiserver_start
}

# etcd-restart: SIGTERM to etcd, then the same binary on the same ports and data directory;
# kube-apiserver keeps running and reconnects by itself.
cmd_etcd_restart() {
    load_state
    local etcd data
    etcd=$("$ROOT/tests/env/kube-apiserver.sh" etcd)
    data=$(cat "$DIR/etcd-data.path")
    ETCD_PEER_PORT=$(cat "$DIR/etcd.peer-port" 2>/dev/null || pick_port)
    stop_pid "$DIR/etcd.pid" etcd
    # the previous process may hold the ports for a moment after it exits
    for _ in 1 2 3; do
        launch_etcd "$etcd" "$data"
        if wait_up "$DIR/etcd.pid" "$DIR/logs/etcd.log" etcd etcd_healthy; then
            return 0
        fi
        sleep 1
    done
    die "etcd did not restart"
}

cmd_compact() {
    load_state
    local rev
    rev=$(curl -sf -X POST --max-time 10 -d '{"key":"AA=="}' \
        "http://127.0.0.1:$ETCD_PORT/v3/kv/range" | sed -n 's/.*"revision":"\([0-9]*\)".*/\1/p')
    [ -n "$rev" ] || die "cannot read etcd's revision"
    curl -sf -X POST --max-time 60 -d "{\"revision\":\"$rev\",\"physical\":true}" \
        "http://127.0.0.1:$ETCD_PORT/v3/kv/compaction" >/dev/null || die "compaction failed"
    echo "$rev"
}

[ $# -eq 2 ] || usage
DIR=$2
case "$1" in
start) cmd_start ;;
stop) cmd_stop ;;
apiserver-stop) cmd_apiserver_stop ;;
apiserver-start) cmd_apiserver_start ;;
restart)
    cmd_apiserver_stop
    cmd_apiserver_start
    ;;
compact) cmd_compact ;;
etcd-restart) cmd_etcd_restart ;;
apiserver-crash) cmd_apiserver_crash ;;
*) usage ;;
esac
