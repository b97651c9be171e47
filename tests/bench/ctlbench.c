/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The instrument of bench_controller (see ctlbench.h): a child process and its endpoints read
 * over plain sockets, the Prometheus text of the daemon and of the API server reduced to the
 * few sums the bench prints, and two informers: one drives the stand-in kubelet, the other
 * counts Ready Components.
 */
#include "tests/bench/ctlbench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/kube/kube_informer.h"
#include "co/util/error.h"
#include "co/util/strmap.h"
#include "co/util/thread.h"
#include "co/util/time.h"

/* The largest /metrics answer read: the daemon's grows with the Components (a few series
 * each), the API server's with the kinds it serves. */
#define MAX_METRICS     ((size_t)256 * 1024 * 1024)
#define KUBELET_THREADS 4
#define KUBELET_RETRIES 20

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/* ---- processes --------------------------------------------------------------------------- */

int ctlbench_run(const char *const *argv)
{
    pid_t pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        dup2(2, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* What the signal handler needs, set before any daemon starts. */
static volatile sig_atomic_t running_daemon;
static const char *cleanup_script;
static const char *cleanup_cp_dir;
static const char *cleanup_work_dir;

/* fork, execv and waitpid only: safe in a signal handler. */
static void run_in_handler(const char *const *argv)
{
    pid_t c = fork();
    if (c == 0) {
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (c > 0) {
        int st;
        waitpid(c, &st, 0);
    }
}

static void cleanup(void)
{
    pid_t pid = (pid_t)running_daemon;
    if (pid > 0) {
        kill(pid, SIGKILL);
    }
    if (cleanup_cp_dir) {
        const char *argv[] = {cleanup_script, "stop", cleanup_cp_dir, NULL};
        run_in_handler(argv);
    }
    if (cleanup_work_dir) {
        const char *argv[] = {"/bin/rm", "-rf", cleanup_work_dir, NULL};
        run_in_handler(argv);
    }
}

static void on_signal(int sig)
{
    cleanup();
    _exit(128 + sig);
}

/* An exit from anywhere (a test helper that fails exits at once) leaves nothing behind. */
static void at_exit(void)
{
    cleanup();
    cleanup_cp_dir = NULL;
    cleanup_work_dir = NULL;
}

void ctlbench_guard(const char *script, const char *cp_dir, const char *work_dir)
{
    static bool registered;
    if (!registered) {
        registered = atexit(at_exit) == 0;
    }
    cleanup_script = script;
    cleanup_cp_dir = cp_dir;
    cleanup_work_dir = work_dir;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

struct ctlbench_daemon {
    pid_t pid;
    bool exited;
    int exit_status;
    int metrics_port;
    int probe_port;
    char *log_path;
};

/* Two distinct free loopback ports: both sockets are held until both are known. */
static int free_ports(int *a, int *b)
{
    int fds[2] = {-1, -1};
    int ports[2] = {0, 0};
    int rc = -1;
    for (int i = 0; i < 2; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa;
        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof(sa);
        if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            getsockname(fds[i], (struct sockaddr *)&sa, &len) < 0) {
            goto done;
        }
        ports[i] = ntohs(sa.sin_port);
    }
    *a = ports[0];
    *b = ports[1];
    rc = 0;
done:
    for (int i = 0; i < 2; i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    return rc;
}

int ctlbench_daemon_start(ctlbench_daemon **out, const ctlbench_daemon_options *o)
{
    ctlbench_daemon *d = co_xcalloc(1, sizeof(*d));
    if (free_ports(&d->metrics_port, &d->probe_port) < 0) {
        fprintf(stderr, "bench_controller: no free port: %m\n");
        free(d);
        return -1;
    }
    d->log_path = co_xstrdup(o->log_path);
    char metrics[32], probe[32], workers[16];
    snprintf(metrics, sizeof(metrics), "127.0.0.1:%d", d->metrics_port);
    snprintf(probe, sizeof(probe), "127.0.0.1:%d", d->probe_port);
    snprintf(workers, sizeof(workers), "%d", o->workers);
    const char *argv[] = {o->binary,     "--kubeconfig",
                          o->kubeconfig, "--namespace",
                          o->namespace,  "--metrics-bind-address",
                          metrics,       "--health-probe-bind-address",
                          probe,         "--source-cache-dir",
                          o->cache_dir,  o->workers > 0 ? "--max-concurrent-reconciles" : NULL,
                          workers,       NULL};
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "bench_controller: fork: %m\n");
        free(d->log_path);
        free(d);
        return -1;
    }
    if (pid == 0) {
        /* the daemon must not outlive the bench, whatever ends it */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(127);
        }
        int fd = open(d->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) {
            _exit(127);
        }
        dup2(fd, 1);
        dup2(fd, 2);
        /* the bench's sockets (the artifact server, API connections) stay with the bench */
        close_range(3, ~0U, 0);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    d->pid = pid;
    running_daemon = pid;
    *out = d;
    return 0;
}

bool ctlbench_daemon_alive(ctlbench_daemon *d)
{
    if (d->exited) {
        return false;
    }
    int st = 0;
    if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
        d->exited = true;
        d->exit_status = st;
        running_daemon = 0;
        return false;
    }
    return true;
}

/* GET @p path from 127.0.0.1:@p port over HTTP/1.0: the status, the body in @p body; -1 when
 * no answer came. */
static int http_get(int port, const char *path, co_buf *body)
{
    int status = -1;
    co_buf raw = CO_BUF_INIT(MAX_METRICS);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        goto done;
    }
    struct timeval tv = {60, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        goto done;
    }
    char req[512];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n", path, port);
    if (n < 0 || (size_t)n >= sizeof(req) || write(fd, req, (size_t)n) != (ssize_t)n) {
        goto done;
    }
    char chunk[65536];
    ssize_t got;
    while ((got = read(fd, chunk, sizeof(chunk))) > 0) {
        if (co_buf_put(&raw, chunk, (size_t)got) < 0) {
            goto done;
        }
    }
    if (got < 0 || raw.len < 12 || strncmp(co_buf_cstr(&raw), "HTTP/1.", 7) != 0) {
        goto done;
    }
    const char *text = co_buf_cstr(&raw);
    const char *sep = strstr(text, "\r\n\r\n");
    if (!sep) {
        goto done;
    }
    if (body) {
        size_t off = (size_t)(sep + 4 - text);
        if (co_buf_put(body, text + off, raw.len - off) < 0) {
            goto done;
        }
    }
    status = (int)strtol(text + 9, NULL, 10);
done:
    if (fd >= 0) {
        close(fd);
    }
    co_buf_dispose(&raw);
    return status;
}

int ctlbench_daemon_wait_ready(ctlbench_daemon *d, long timeout_ms)
{
    int64_t end = co_time_monotonic() + (int64_t)timeout_ms * 1000000;
    while (co_time_monotonic() < end) {
        if (!ctlbench_daemon_alive(d)) {
            fprintf(stderr, "bench_controller: the daemon exited (status %d) during start-up\n",
                    WIFEXITED(d->exit_status) ? WEXITSTATUS(d->exit_status) : -1);
            return -1;
        }
        if (http_get(d->probe_port, "/readyz", NULL) == 200) {
            return 0;
        }
        sleep_ms(20);
    }
    fprintf(stderr, "bench_controller: the daemon was not ready within %ld s\n", timeout_ms / 1000);
    return -1;
}

int ctlbench_daemon_metrics(ctlbench_daemon *d, co_buf *out)
{
    int st = http_get(d->metrics_port, "/metrics", out);
    if (st != 200) {
        fprintf(stderr, "bench_controller: GET /metrics of the daemon answered %d\n", st);
        return -1;
    }
    return 0;
}

void ctlbench_daemon_memory(ctlbench_daemon *d, long *rss_kib, long *hwm_kib)
{
    *rss_kib = 0;
    *hwm_kib = 0;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)d->pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        return;
    }
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            *rss_kib = strtol(line + 6, NULL, 10);
        } else if (strncmp(line, "VmHWM:", 6) == 0) {
            *hwm_kib = strtol(line + 6, NULL, 10);
        }
    }
    fclose(f);
}

double ctlbench_cpu_s(pid_t pid)
{
    char path[64];
    if (pid > 0) {
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    } else {
        snprintf(path, sizeof(path), "/proc/self/stat");
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        return -1;
    }
    char line[1024];
    char *ok = fgets(line, sizeof(line), f);
    fclose(f);
    /* the name in parentheses may hold spaces: fields are counted after its last ')' */
    char *p = ok ? strrchr(line, ')') : NULL;
    if (!p) {
        return -1;
    }
    /* after the name come field 3 (the state) and on; 14 and 15 are utime and stime in clock
     * ticks */
    unsigned long long ticks[2] = {0, 0};
    int field = 2;
    for (char *q = p + 1; *q && field < 15; q++) {
        if (*q != ' ') {
            continue;
        }
        field++;
        if (field == 14 || field == 15) {
            char *end = NULL;
            errno = 0;
            ticks[field - 14] = strtoull(q + 1, &end, 10);
            if (errno != 0 || end == q + 1) {
                return -1;
            }
        }
    }
    if (field < 15) {
        return -1;
    }
    return (double)(ticks[0] + ticks[1]) / (double)sysconf(_SC_CLK_TCK);
}

double ctlbench_daemon_cpu_s(ctlbench_daemon *d)
{
    return d && !d->exited ? ctlbench_cpu_s(d->pid) : -1;
}

void ctlbench_daemon_log_tail(ctlbench_daemon *d, int lines)
{
    FILE *f = fopen(d->log_path, "r");
    if (!f) {
        return;
    }
    char buf[16384];
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
    long from = size > (long)sizeof(buf) - 1 ? size - (long)sizeof(buf) + 1 : 0;
    size_t n = fseek(f, from, SEEK_SET) == 0 ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    fclose(f);
    buf[n] = '\0';
    const char *p = buf + n;
    for (int seen = 0; p > buf; p--) {
        if (p[-1] == '\n' && p != buf + n && ++seen > lines) {
            break;
        }
    }
    fprintf(stderr, "--- last lines of %s\n%s", d->log_path, p);
}

void ctlbench_daemon_stop(ctlbench_daemon *d)
{
    if (!d) {
        return;
    }
    if (ctlbench_daemon_alive(d)) {
        kill(d->pid, SIGTERM);
        for (int i = 0; i < 200 && ctlbench_daemon_alive(d); i++) {
            sleep_ms(50);
        }
        if (ctlbench_daemon_alive(d)) {
            fprintf(stderr, "bench_controller: the daemon did not stop within 10 s; killing it\n");
            kill(d->pid, SIGKILL);
            int st;
            waitpid(d->pid, &st, 0);
        }
    }
    running_daemon = 0;
    free(d->log_path);
    free(d);
}

/* ---- Prometheus text --------------------------------------------------------------------- */

typedef void (*series_cb)(const char *labels, size_t len, double value, void *payload);

/* Calls @p cb for every series of metric @p name: its label text (between the braces) and
 * value. */
static void each_series(const char *text, const char *name, series_cb cb, void *payload)
{
    size_t nl = strlen(name);
    const char *line = text;
    while (*line) {
        const char *end = strchr(line, '\n');
        if (!end) {
            end = line + strlen(line);
        }
        if ((size_t)(end - line) > nl && strncmp(line, name, nl) == 0 &&
            (line[nl] == '{' || line[nl] == ' ')) {
            const char *labels = "";
            size_t len = 0;
            const char *rest = line + nl;
            if (*rest == '{') {
                bool quoted = false;
                const char *p = rest + 1;
                for (; p < end && (quoted || *p != '}'); p++) {
                    if (*p == '\\' && quoted && p + 1 < end) {
                        p++;
                    } else if (*p == '"') {
                        quoted = !quoted;
                    }
                }
                labels = rest + 1;
                len = (size_t)(p - labels);
                rest = p < end ? p + 1 : end;
            }
            cb(labels, len, strtod(rest, NULL), payload);
        }
        line = *end ? end + 1 : end;
    }
}

/* Copies the value of label @p key (as written, escapes kept) into @p out; "" when absent. */
static void label_get(const char *labels, size_t len, const char *key, char *out, size_t outlen)
{
    size_t kl = strlen(key);
    out[0] = '\0';
    const char *end = labels + len;
    for (const char *p = labels; p + kl + 2 <= end; p++) {
        if ((p == labels || p[-1] == ',') && strncmp(p, key, kl) == 0 && p[kl] == '=' &&
            p[kl + 1] == '"') {
            const char *v = p + kl + 2;
            size_t n = 0;
            while (v + n < end && v[n] != '"' && n + 1 < outlen) {
                n += v[n] == '\\' && v + n + 1 < end ? 2 : 1;
            }
            if (n >= outlen) {
                n = outlen - 1;
            }
            memcpy(out, v, n);
            out[n] = '\0';
            return;
        }
    }
}

static void add_value(const char *labels, size_t len, double value, void *payload)
{
    (void)labels;
    (void)len;
    *(double *)payload += value;
}

double ctlbench_metric_sum(const char *text, const char *name)
{
    double sum = 0;
    each_series(text, name, add_value, &sum);
    return sum;
}

static void add_daemon_request(const char *labels, size_t len, double value, void *payload)
{
    ctlbench_counts *c = payload;
    char method[16];
    label_get(labels, len, "method", method, sizeof(method));
    c->requests += value;
    if (strcmp(method, "GET") == 0) {
        c->reads += value;
    } else {
        c->writes += value;
    }
}

static void tally_add(ctlbench_tally *t, const char *name, double value)
{
    for (size_t i = 0; i < t->len; i++) {
        if (strcmp(t->items[i].name, name) == 0) {
            t->items[i].n += value;
            return;
        }
    }
    if (t->len < CTLBENCH_TALLY_MAX) {
        snprintf(t->items[t->len].name, sizeof(t->items[0].name), "%.95s", name);
        t->items[t->len++].n = value;
    }
}

/* @p b - @p a by name, leaving out names that count 0. */
static void tally_diff(ctlbench_tally *out, const ctlbench_tally *a, const ctlbench_tally *b)
{
    out->len = 0;
    for (size_t i = 0; i < b->len; i++) {
        double n = b->items[i].n;
        for (size_t j = 0; j < a->len; j++) {
            if (strcmp(a->items[j].name, b->items[i].name) == 0) {
                n -= a->items[j].n;
            }
        }
        if (n != 0) {
            out->items[out->len] = b->items[i];
            out->items[out->len++].n = n;
        }
    }
}

static void add_rest_request(const char *labels, size_t len, double value, void *payload)
{
    ctlbench_counts *c = payload;
    char code[16], method[16], name[40];
    label_get(labels, len, "code", code, sizeof(code));
    if (code[0] != '2') {
        label_get(labels, len, "method", method, sizeof(method));
        snprintf(name, sizeof(name), "%s %s", code, method);
        c->non2xx += value;
        tally_add(&c->non2xx_by_code, name, value);
    }
}

static void add_apiserver_request(const char *labels, size_t len, double value, void *payload)
{
    ctlbench_counts *c = payload;
    char verb[32], resource[40], sub[40], kind[128];
    label_get(labels, len, "verb", verb, sizeof(verb));
    label_get(labels, len, "resource", resource, sizeof(resource));
    label_get(labels, len, "subresource", sub, sizeof(sub));
    snprintf(kind, sizeof(kind), "%s%s%s %s", *resource ? resource : "(discovery)", *sub ? "/" : "",
             sub, verb);
    /* reads: the first three are tallied by kind */
    static const char *const reads[] = {"GET", "LIST", "WATCH", "WATCHLIST", "CONNECT", ""};
    for (size_t i = 0; i < CO_ARRAY_SIZE(reads); i++) {
        if (strcmp(verb, reads[i]) == 0) {
            if (i < 3) {
                tally_add(&c->gets_by_kind, kind, value);
            }
            return;
        }
    }
    tally_add(&c->writes_by_kind, kind, value);
    if (strcmp(resource, "components") == 0) {
        if (strcmp(sub, "status") == 0) {
            c->status_writes += value;
        } else {
            c->component_writes += value;
        }
    } else if (strcmp(resource, "events") == 0) {
        c->event_writes += value;
    } else if (strcmp(resource, "deployments") == 0 && strcmp(sub, "status") == 0) {
        c->kubelet_writes += value;
    } else if ((strcmp(resource, "configmaps") == 0 || strcmp(resource, "deployments") == 0) &&
               !*sub) {
        c->dependent_writes += value;
    } else {
        c->other_writes += value;
    }
}

int ctlbench_counts_get(ctlbench_counts *out, ctlbench_daemon *d, co_kube_client *admin)
{
    ctlbench_counts c;
    memset(&c, 0, sizeof(c));
    co_buf text = CO_BUF_INIT(MAX_METRICS);
    if (d) {
        if (ctlbench_daemon_metrics(d, &text) < 0) {
            co_buf_dispose(&text);
            return -1;
        }
        const char *t = co_buf_cstr(&text);
        each_series(t, "component_operator_runtime_requests_total", add_daemon_request, &c);
        each_series(t, "rest_client_requests_total", add_rest_request, &c);
        c.reconciles = ctlbench_metric_sum(t, "component_operator_runtime_reconcile_total");
        c.workers = ctlbench_metric_sum(t, "controller_runtime_max_concurrent_reconciles");
        co_buf_reset(&text);
    }
    if (co_kube_request_raw(&text, admin, "GET", "/metrics", NULL, NULL, 0) < 0) {
        fprintf(stderr, "bench_controller: the API server's metrics: %s\n", co_error_last());
        co_buf_dispose(&text);
        return -1;
    }
    each_series(co_buf_cstr(&text), "apiserver_request_total", add_apiserver_request, &c);
    co_buf_dispose(&text);
    *out = c;
    return 0;
}

ctlbench_counts ctlbench_counts_diff(const ctlbench_counts *a, const ctlbench_counts *b)
{
    ctlbench_counts c;
    memset(&c, 0, sizeof(c));
    c.requests = b->requests - a->requests;
    c.reads = b->reads - a->reads;
    c.writes = b->writes - a->writes;
    c.non2xx = b->non2xx - a->non2xx;
    c.reconciles = b->reconciles - a->reconciles;
    c.workers = b->workers;
    c.status_writes = b->status_writes - a->status_writes;
    c.component_writes = b->component_writes - a->component_writes;
    c.event_writes = b->event_writes - a->event_writes;
    c.dependent_writes = b->dependent_writes - a->dependent_writes;
    c.kubelet_writes = b->kubelet_writes - a->kubelet_writes;
    c.other_writes = b->other_writes - a->other_writes;
    tally_diff(&c.writes_by_kind, &a->writes_by_kind, &b->writes_by_kind);
    tally_diff(&c.gets_by_kind, &a->gets_by_kind, &b->gets_by_kind);
    tally_diff(&c.non2xx_by_code, &a->non2xx_by_code, &b->non2xx_by_code);
    return c;
}

/* ---- kubelet ----------------------------------------------------------------------------- */

typedef struct pending {
    char *ns;
    char *name;
    int64_t generation;
    int attempts;
    struct pending *next;
} pending;

struct ctlbench_kubelet {
    co_kube_client *client;
    co_kube_informer *inf;
    pthread_mutex_t mu;
    pthread_cond_t work;   /* a Deployment was queued, or stop */
    pthread_cond_t marked; /* a Deployment was marked */
    pending *head, *tail;
    co_strmap queued_gen; /* "ns/name" -> generation queued (as a pointer-sized integer) */
    co_strmap marked_gen; /* "ns/name" -> generation marked */
    bool stop;
    pthread_t threads[KUBELET_THREADS];
    size_t nthreads;
    atomic_ulong patches;
};

static int64_t gen_of(const co_strmap *m, const char *key)
{
    void *v = NULL;
    return co_strmap_find(m, key, &v) ? (int64_t)(intptr_t)v : -1;
}

static void mark_locked(ctlbench_kubelet *k, const char *key, int64_t generation)
{
    if (gen_of(&k->marked_gen, key) < generation) {
        co_strmap_put(&k->marked_gen, key, (void *)(intptr_t)generation);
        pthread_cond_broadcast(&k->marked);
    }
}

static void enqueue_locked(ctlbench_kubelet *k, pending *p)
{
    p->next = NULL;
    if (k->tail) {
        k->tail->next = p;
    } else {
        k->head = p;
    }
    k->tail = p;
    pthread_cond_signal(&k->work);
}

static int64_t int_at(const struct json_object *o, const char *a, const char *b)
{
    int64_t v = 0;
    return co_json_get_int64(&v, o, a, b, NULL) == 0 ? v : 0;
}

static void kubelet_saw(ctlbench_kubelet *k, const struct json_object *obj)
{
    const char *ns = co_json_meta_namespace(obj);
    const char *name = co_json_meta_name(obj);
    if (!ns || !name) {
        return;
    }
    int64_t gen = int_at(obj, "metadata", "generation");
    bool done = int_at(obj, "status", "observedGeneration") >= gen &&
                int_at(obj, "status", "availableReplicas") >= 1;
    char *key = co_xasprintf("%s/%s", ns, name);
    pthread_mutex_lock(&k->mu);
    if (done) {
        mark_locked(k, key, gen);
    } else if (gen_of(&k->queued_gen, key) < gen && gen_of(&k->marked_gen, key) < gen) {
        co_strmap_put(&k->queued_gen, key, (void *)(intptr_t)gen);
        pending *p = co_xcalloc(1, sizeof(*p));
        p->ns = co_xstrdup(ns);
        p->name = co_xstrdup(name);
        p->generation = gen;
        enqueue_locked(k, p);
    }
    pthread_mutex_unlock(&k->mu);
    free(key);
}

static void kubelet_on_add(const struct json_object *obj, void *payload)
{
    kubelet_saw(payload, obj);
}

static void
kubelet_on_update(const struct json_object *old_obj, const struct json_object *obj, void *payload)
{
    (void)old_obj;
    kubelet_saw(payload, obj);
}

/* The status one available replica of generation @p gen reports (controller/ctl_health.c
 * reads the Deployment as kstatus does). */
static struct json_object *available_status(int64_t gen)
{
    char *text = co_xasprintf(
        "{\"status\":{\"observedGeneration\":%lld,\"replicas\":1,\"updatedReplicas\":1,"
        "\"readyReplicas\":1,\"availableReplicas\":1,\"conditions\":["
        "{\"type\":\"Available\",\"status\":\"True\",\"reason\":\"MinimumReplicasAvailable\","
        "\"message\":\"Deployment has minimum availability.\"},"
        "{\"type\":\"Progressing\",\"status\":\"True\",\"reason\":\"NewReplicaSetAvailable\","
        "\"message\":\"ReplicaSet has successfully progressed.\"}]}}",
        (long long)gen);
    struct json_object *o = NULL;
    if (co_json_parse(&o, text, strlen(text)) < 0) {
        o = NULL;
    }
    free(text);
    return o;
}

static void *kubelet_thread(void *arg)
{
    ctlbench_kubelet *k = arg;
    for (;;) {
        pthread_mutex_lock(&k->mu);
        while (!k->stop && !k->head) {
            pthread_cond_wait(&k->work, &k->mu);
        }
        if (k->stop) {
            pthread_mutex_unlock(&k->mu);
            return NULL;
        }
        pending *p = k->head;
        k->head = p->next;
        if (!k->head) {
            k->tail = NULL;
        }
        pthread_mutex_unlock(&k->mu);

        struct json_object *patch = available_status(p->generation);
        co_kube_ref ref = {"apps/v1", "Deployment", p->ns, p->name};
        co_kube_write_options wo = {0};
        wo.subresource = "status";
        int rc = patch ? co_kube_patch(NULL, k->client, &ref, CO_KUBE_PATCH_MERGE, patch, &wo)
                       : CO_ERROR;
        json_object_put(patch);
        char *key = co_xasprintf("%s/%s", p->ns, p->name);
        bool retry = rc < 0 && rc != CO_ENOTFOUND && ++p->attempts < KUBELET_RETRIES;
        if (rc < 0 && !retry) {
            fprintf(stderr, "bench_controller: kubelet: %s: %s\n", key, co_error_last());
        }
        if (retry) {
            sleep_ms(200);
        }
        pthread_mutex_lock(&k->mu);
        if (rc == 0) {
            atomic_fetch_add(&k->patches, 1);
            mark_locked(k, key, p->generation);
        }
        if (retry) {
            enqueue_locked(k, p);
            p = NULL;
        } else if (gen_of(&k->queued_gen, key) == p->generation) {
            co_strmap_remove(&k->queued_gen, key);
        }
        pthread_mutex_unlock(&k->mu);
        free(key);
        if (p) {
            free(p->ns);
            free(p->name);
            free(p);
        }
    }
}

int ctlbench_kubelet_start(ctlbench_kubelet **out,
                           const co_kube_config *cfg,
                           const char *label_selector)
{
    ctlbench_kubelet *k = co_xcalloc(1, sizeof(*k));
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->work, NULL);
    co_cond_init_monotonic(&k->marked);
    co_kube_client_options co = CO_KUBE_CLIENT_OPTIONS_INIT;
    co.qps = -1;
    co_kube_informer_options io = {0};
    io.api_version = "apps/v1";
    io.kind = "Deployment";
    io.label_selector = label_selector;
    io.strip_managed_fields = 1;
    co_kube_handlers h = {kubelet_on_add, kubelet_on_update, NULL, k};
    if (co_kube_client_new(&k->client, cfg, &co) < 0 ||
        co_kube_informer_new(&k->inf, k->client, &io) < 0 ||
        co_kube_informer_add_handlers(k->inf, &h) < 0 || co_kube_informer_start(k->inf) < 0 ||
        co_kube_informer_wait_synced(k->inf, 120000) < 0) {
        fprintf(stderr, "bench_controller: kubelet: %s\n", co_error_last());
        ctlbench_kubelet_stop(k);
        return -1;
    }
    for (; k->nthreads < KUBELET_THREADS; k->nthreads++) {
        if (pthread_create(&k->threads[k->nthreads], NULL, kubelet_thread, k) != 0) {
            fprintf(stderr, "bench_controller: kubelet: cannot start a thread\n");
            ctlbench_kubelet_stop(k);
            return -1;
        }
    }
    *out = k;
    return 0;
}

int ctlbench_kubelet_wait(ctlbench_kubelet *k, const char *ns, const char *name, long timeout_ms)
{
    char *key = co_xasprintf("%s/%s", ns, name);
    struct timespec deadline = co_monotonic_deadline_ns((int64_t)timeout_ms * 1000000);
    int rc = 0;
    pthread_mutex_lock(&k->mu);
    while (gen_of(&k->marked_gen, key) < 0) {
        if (pthread_cond_timedwait(&k->marked, &k->mu, &deadline) == ETIMEDOUT) {
            rc = -1;
            break;
        }
    }
    pthread_mutex_unlock(&k->mu);
    free(key);
    return rc;
}

unsigned long ctlbench_kubelet_patches(ctlbench_kubelet *k)
{
    return atomic_load(&k->patches);
}

void ctlbench_kubelet_stop(ctlbench_kubelet *k)
{
    if (!k) {
        return;
    }
    /* the informer first: its handlers queue work */
    co_kube_informer_free(k->inf);
    pthread_mutex_lock(&k->mu);
    k->stop = true;
    pthread_cond_broadcast(&k->work);
    pthread_mutex_unlock(&k->mu);
    for (size_t i = 0; i < k->nthreads; i++) {
        pthread_join(k->threads[i], NULL);
    }
    while (k->head) {
        pending *p = k->head;
        k->head = p->next;
        free(p->ns);
        free(p->name);
        free(p);
    }
    co_strmap_dispose(&k->queued_gen);
    co_strmap_dispose(&k->marked_gen);
    co_kube_client_free(k->client);
    pthread_cond_destroy(&k->work);
    pthread_cond_destroy(&k->marked);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

/* ---- Component tracker ------------------------------------------------------------------- */

struct ctlbench_tracker {
    co_kube_informer *inf;
    pthread_mutex_t mu;
    co_strmap ready; /* names of the Ready ones */
    int64_t last_ready_ns;
};

/* Ready as a user reads it: state Ready, written for the current generation. */
static bool component_ready(const struct json_object *c)
{
    const char *state = co_json_str(c, "status", "state", NULL);
    int64_t gen = int_at(c, "metadata", "generation");
    return state && strcmp(state, "Ready") == 0 && gen > 0 &&
           int_at(c, "status", "observedGeneration") == gen;
}

static void tracker_set(ctlbench_tracker *t, const struct json_object *c, bool ready)
{
    const char *name = co_json_meta_name(c);
    if (!name) {
        return;
    }
    pthread_mutex_lock(&t->mu);
    bool was = co_strmap_find(&t->ready, name, NULL);
    if (ready && !was) {
        co_strmap_put(&t->ready, name, NULL);
        t->last_ready_ns = co_time_monotonic();
    } else if (!ready && was) {
        co_strmap_remove(&t->ready, name);
    }
    pthread_mutex_unlock(&t->mu);
}

static void tracker_on_add(const struct json_object *obj, void *payload)
{
    tracker_set(payload, obj, component_ready(obj));
}

static void
tracker_on_update(const struct json_object *old_obj, const struct json_object *obj, void *payload)
{
    (void)old_obj;
    tracker_set(payload, obj, component_ready(obj));
}

static void tracker_on_delete(const struct json_object *obj, void *payload)
{
    tracker_set(payload, obj, false);
}

int ctlbench_tracker_start(ctlbench_tracker **out, co_kube_client *client, const char *ns)
{
    ctlbench_tracker *t = co_xcalloc(1, sizeof(*t));
    pthread_mutex_init(&t->mu, NULL);
    co_kube_informer_options io = {0};
    io.api_version = "core.cs.sap.com/v1alpha1";
    io.kind = "Component";
    io.namespace = ns;
    io.strip_managed_fields = 1;
    co_kube_handlers h = {tracker_on_add, tracker_on_update, tracker_on_delete, t};
    if (co_kube_informer_new(&t->inf, client, &io) < 0 ||
        co_kube_informer_add_handlers(t->inf, &h) < 0 || co_kube_informer_start(t->inf) < 0 ||
        co_kube_informer_wait_synced(t->inf, 120000) < 0) {
        fprintf(stderr, "bench_controller: watching Components: %s\n", co_error_last());
        ctlbench_tracker_stop(t);
        return -1;
    }
    *out = t;
    return 0;
}

void ctlbench_tracker_counts(ctlbench_tracker *t,
                             size_t *present,
                             size_t *ready,
                             int64_t *last_ready_ns)
{
    *present = co_kube_informer_len(t->inf);
    pthread_mutex_lock(&t->mu);
    *ready = co_strmap_len(&t->ready);
    if (last_ready_ns) {
        *last_ready_ns = t->last_ready_ns;
    }
    pthread_mutex_unlock(&t->mu);
}

void ctlbench_tracker_stop(ctlbench_tracker *t)
{
    if (!t) {
        return;
    }
    co_kube_informer_free(t->inf);
    co_strmap_dispose(&t->ready);
    pthread_mutex_destroy(&t->mu);
    free(t);
}
