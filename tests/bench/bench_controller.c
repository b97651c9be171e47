/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Benchmark of component-controller at scale (issue 28, "Targets"). The release daemon runs as
 * a child process against a private control plane (or the cluster CO_TEST_KUBECONFIG names),
 * fetching its Components' source, a .tar.gz of templates, from an HTTP server in this
 * process; a stand-in kubelet marks Deployments available. Sections, each on a fresh namespace:
 *
 *   W1     BENCH_CONTROLLER_COMPONENTS Components (1,000) of 10 ConfigMaps and a Deployment,
 *          in BENCH_CONTROLLER_ROUNDS rounds (3): the floor, a minimal client making only the
 *          writes a Component needs, with the daemon's concurrency, watched by the same
 *          Component tracker as the daemon's run (its watch costs the API server alike); and
 *          the daemon (time until all Ready, requests, memory); floor first in the odd rounds,
 *          daemon first in the even ones; the median of the rounds' ratios; after the last
 *          daemon run a second pass over one requeue interval (BENCH_CONTROLLER_REQUEUE_S, 30 s)
 *          with nothing changed;
 *   W2     BENCH_CONTROLLER_W2 Components (10,000; 0 skips) of one ConfigMap,
 * after the same workload at a tenth of the count (at most 1,000), to compare the throughput; each
 *          count runs its own floor first, which tells the API server's slowing as the store
 *          grows from the daemon's;
 *   big    one Component of BENCH_CONTROLLER_BIG ConfigMaps (5,000; 0 skips): the stored
 *          size once Ready, then the time its deletion takes;
 *
 * and a summary of the targets next to the figures. The Components of a run are created before
 * its clock starts (their creation is the same for both sides and counted by neither): the
 * floor's time runs from its first request to its last, the daemon's from its start (start-up
 * included) until the last Component turned Ready. Requests are counted by the daemon
 * (component_operator_runtime_requests_total) and told apart by the API server's own
 * apiserver_request_total (status, events, Components, dependents). The CPU seconds of
 * kube-apiserver, etcd (of a private control plane), the daemon and this process (the floor's
 * client, the kubelet, the source server) are read from /proc over the same spans. Every wait
 * ends after BENCH_CONTROLLER_TIMEOUT_S (600 s) with what it reached, and the bench goes on.
 * BENCH_CONTROLLER_WORKERS passes --max-concurrent-reconciles (default: the daemon's own);
 * BENCH_CONTROLLER_KEEP=1 keeps the work directory with the daemons' logs. Never fails on a
 * time; exits non-zero only when it cannot run.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/api/component.h"
#include "co/json/json.h"
#include "co/json/yaml.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_config.h"
#include "co/util/digest.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/util/time.h"
#include "tests/bench/ctlbench.h"
#include "tests/support/test_archive_builder.h"
#include "tests/support/test_httpd.h"

/* the reconciler's name: finalizer, field manager and label prefix (docs/behaviour.md) */
#define RECONCILER    "component-operator.cs.sap.com"
#define KUBELET_LABEL "bench.component-operator.cs.sap.com/kubelet"
#define COMPONENT_API "core.cs.sap.com/v1alpha1"
#define W1_CONFIGMAPS 10
#define CREATORS      8   /* threads creating the Components before a run */
#define SETTLE_MIN_S  5   /* after all are Ready: the last passes and their events */
#define SETTLE_MAX_S  120 /* ... or until event writes stop, at most this long */
#define REPORT_S      30  /* progress lines while waiting */
#define ROUNDS_MAX    9   /* of W1 */
#define MIB           1024.0

typedef struct settings {
    long n;         /* W1 Components */
    long rounds;    /* W1 rounds, each a floor run and a daemon run */
    long w2;        /* W2 Components; 0 skips */
    long w2_small;  /* the W2-style run at the smaller count; 0 when none */
    long big;       /* dependents of the big Component; 0 skips */
    long requeue_s; /* spec.requeueInterval */
    long timeout_s; /* of every wait */
    int workers;    /* --max-concurrent-reconciles; 0: the daemon's default */
    bool keep;      /* keep the work directory */
    const char *binary;
} settings;

typedef struct bench {
    settings s;
    char *tmp;
    char *script;
    char *cp_dir;
    char *kubeconfig;
    co_kube_config *cfg;
    co_kube_client *admin;
    test_httpd *httpd;
    char *url;
    ctlbench_kubelet *kubelet;
    int workers; /* the daemon's concurrency, which the floor copies */
    long idle_rss_kib;
    pid_t apiserver_pid, etcd_pid; /* of a private control plane; 0 otherwise */
    unsigned run_id;
    int seq;
} bench;

/* CPU seconds (user and system) of the processes that share the machine during a run: where the
 * API server's time goes, and how much of the machine the daemon takes from it. -1: unknown. */
typedef struct cpu_use {
    double apiserver, etcd, bench, daemon;
} cpu_use;

/* One daemon run over one namespace of pre-created Components. */
typedef struct ours {
    char ns[64];
    ctlbench_daemon *d;
    ctlbench_tracker *t;
    ctlbench_counts c0; /* the API server's counters before the daemon started */
    cpu_use cpu0;
    int64_t t0;
} ours;

typedef struct run_result {
    bool ran;
    bool converged;
    long n;
    size_t ready;
    double startup_s;      /* until /readyz answered */
    double ready_s;        /* until the last one turned Ready (or the wait ended) */
    double settle_s;       /* after that, until the first pass is counted */
    ctlbench_counts first; /* daemon start until settled */
    cpu_use cpu;           /* daemon start until the last turned Ready */
    bool second_ran;
    double window_s;
    ctlbench_counts second;
    long rss_kib, hwm_kib;   /* settled */
    long rss2_kib, hwm2_kib; /* after the second pass */
} run_result;

typedef struct floor_result {
    bool ran;
    long n;
    long done;
    double s;
    unsigned long requests;
    ctlbench_counts api;
    cpu_use cpu;
    size_t tracked_ready; /* Ready as the tracker saw them */
} floor_result;

/* W1's rounds: floor and daemon run in turn (see section_w1()). */
typedef struct w1_result {
    long rounds; /* run */
    floor_result fl[ROUNDS_MAX];
    run_result ours[ROUNDS_MAX];
} w1_result;

typedef struct big_result {
    bool ran;
    bool ready;
    double ready_s;
    ctlbench_counts apply;
    size_t json_bytes;
    size_t inventory_bytes;
    bool packed; /**< stored as status.packedInventory */
    size_t items;
    bool gone, cms_gone;
    double gone_s, cms_gone_s;
    ctlbench_counts del;
    long rss_kib, hwm_kib;
} big_result;

/* ---- small helpers ----------------------------------------------------------------------- */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static double since_s(int64_t t0)
{
    return (double)(co_time_monotonic() - t0) / 1e9;
}

/* Appends to a buffer whose cap the bench's own texts never reach. */
static void put(co_buf *b, const char *fmt, ...) CO_PRINTF(2, 3);
static void put(co_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = co_buf_vprintf(b, fmt, ap);
    va_end(ap);
    if (rc < 0) {
        fprintf(stderr, "bench_controller: %s\n", co_error_last());
        abort();
    }
}

static struct json_object *parse_or_die(const char *text)
{
    struct json_object *o = NULL;
    if (co_json_parse(&o, text, strlen(text)) < 0) {
        fprintf(stderr, "bench_controller: %s\n", co_error_last());
        abort();
    }
    return o;
}

static long env_long(const char *name, long def)
{
    const char *v = getenv(name); // NOLINT(concurrency-mt-unsafe): read before any thread
    if (!v || !*v) {
        return def;
    }
    char *end = NULL;
    long n = strtol(v, &end, 10);
    return *end ? -1 : n;
}

static void new_namespace(bench *b, char *out, size_t len, const char *label)
{
    snprintf(out, len, "co-bench-ctl-%u-%d-%s", b->run_id, ++b->seq, label);
}

static int create_namespace(bench *b, const char *ns)
{
    char *text = co_xasprintf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
    struct json_object *o = parse_or_die(text);
    free(text);
    int rc = co_kube_create(NULL, b->admin, o, NULL);
    json_object_put(o);
    if (rc < 0) {
        fprintf(stderr, "bench_controller: namespace %s: %s\n", ns, co_error_last());
        return -1;
    }
    return 0;
}

/* ---- the source -------------------------------------------------------------------------- */

/* W1's objects of the Component @p name: ten ConfigMaps and a Deployment. The source holds
 * them with @p name "{{ name }}", a template the controller renders per Component; the floor
 * applies them with the name filled in, so that both write the same objects. */
static char *w1_manifests(const char *name)
{
    co_buf b = CO_BUF_INIT(1 << 20);
    for (int i = 0; i < W1_CONFIGMAPS; i++) {
        put(&b,
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%d\n"
            "data:\n  component: %s\n  index: \"%d\"\n",
            name, i, name, i);
    }
    put(&b,
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n  labels:\n"
        "    %s: \"true\"\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: %s\n"
        "  template:\n    metadata:\n      labels:\n        app: %s\n    spec:\n"
        "      containers:\n      - name: main\n        image: registry.invalid/bench:1\n",
        name, KUBELET_LABEL, name, name);
    return co_buf_take(&b, NULL);
}

/* W2's object of the Component @p name: one ConfigMap (in the source, "{{ name }}"). */
static char *w2_manifest(const char *name)
{
    return co_xasprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: '%s'\n"
                        "data:\n  component: '%s'\n",
                        name, name);
}

/* The artifact: w1/ (W1's template), w2/ (one ConfigMap per Component), big/ (@p big
 * ConfigMaps for one Component), served with its digest as ETag. */
static void serve_source(bench *b)
{
    char *w1 = w1_manifests("{{ name }}");
    char *w2 = w2_manifest("{{ name }}");
    co_buf big = CO_BUF_INIT((size_t)1 << 30);
    for (long i = 0; i < b->s.big; i++) {
        put(&big,
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big-%ld\n"
            "data:\n  index: \"%ld\"\n",
            i, i);
    }
    if (b->s.big == 0) {
        put(&big, "# skipped\n");
    }
    tab_entry entries[] = {
        {TAB_DIR, 0, "w1", NULL, 0},  {TAB_FILE, 0, "w1/objects.yaml", w1, 0},
        {TAB_DIR, 0, "w2", NULL, 0},  {TAB_FILE, 0, "w2/objects.yaml", w2, 0},
        {TAB_DIR, 0, "big", NULL, 0}, {TAB_FILE, 0, "big/objects.yaml", co_buf_cstr(&big), 0},
    };
    size_t len = 0;
    void *tgz = tab_build(TAB_TAR_GZ, entries, CO_ARRAY_SIZE(entries), &len);
    char hex[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex(hex, tgz, len);
    char *headers = co_xasprintf("Content-Type: application/gzip\nETag: sha256:%s", hex);
    b->httpd = test_httpd_start();
    test_httpd_route(b->httpd, "/bench.tar.gz", 200, tgz, len, headers);
    b->url = co_xasprintf("%s/bench.tar.gz", test_httpd_url(b->httpd));
    free(headers);
    free(tgz);
    free(w1);
    free(w2);
    co_buf_dispose(&big);
}

/* ---- Components -------------------------------------------------------------------------- */

static int create_component(bench *b, const char *ns, const char *name, const char *path)
{
    char *text = co_xasprintf(
        "{\"apiVersion\":\"" COMPONENT_API "\",\"kind\":\"Component\",\"metadata\":"
        "{\"namespace\":\"%s\",\"name\":\"%s\"},\"spec\":{\"sourceRef\":{\"httpRepository\":"
        "{\"url\":\"%s\"}},\"path\":\"%s\",\"requeueInterval\":\"%lds\"}}",
        ns, name, b->url, path, b->s.requeue_s);
    struct json_object *o = parse_or_die(text);
    free(text);
    int rc = co_kube_create(NULL, b->admin, o, NULL);
    json_object_put(o);
    if (rc < 0) {
        fprintf(stderr, "bench_controller: creating Component %s/%s: %s\n", ns, name,
                co_error_last());
    }
    return rc;
}

typedef struct creator {
    bench *b;
    const char *ns;
    const char *path;
    long n;
    long first;
    int rc;
    pthread_t thread;
} creator;

static void *create_some(void *arg)
{
    creator *c = arg;
    for (long i = c->first; i < c->n && c->rc == 0; i += CREATORS) {
        char name[32];
        snprintf(name, sizeof(name), "c%ld", i);
        c->rc = create_component(c->b, c->ns, name, c->path);
    }
    return NULL;
}

/* Creates Components c0 .. c<n-1> of source directory @p path, several at a time. */
static int create_components(bench *b, const char *ns, const char *path, long n)
{
    int64_t t0 = co_time_monotonic();
    creator cs[CREATORS];
    int started = 0;
    for (int i = 0; i < CREATORS; i++) {
        cs[i] = (creator){b, ns, path, n, i, 0, 0};
        if (pthread_create(&cs[i].thread, NULL, create_some, &cs[i]) != 0) {
            cs[i].rc = -1;
            break;
        }
        started++;
    }
    int rc = started == CREATORS ? 0 : -1;
    for (int i = 0; i < started; i++) {
        pthread_join(cs[i].thread, NULL);
        rc = cs[i].rc < 0 ? -1 : rc;
    }
    fprintf(stderr, "[bench controller] %s: created %ld Components in %.1f s\n", ns, n,
            since_s(t0));
    return rc;
}

static void print_tally(const char *what, const ctlbench_tally *t)
{
    printf("  %-36s", what);
    for (size_t i = 0; i < t->len; i++) {
        printf("%s %s %.0f", i ? "," : "", t->items[i].name, t->items[i].n);
    }
    printf("%s\n", t->len ? "" : " none");
}

/* ---- CPU use ----------------------------------------------------------------------------- */

static void cpu_sample(const bench *b, cpu_use *c, ctlbench_daemon *d)
{
    c->apiserver = b->apiserver_pid > 0 ? ctlbench_cpu_s(b->apiserver_pid) : -1;
    c->etcd = b->etcd_pid > 0 ? ctlbench_cpu_s(b->etcd_pid) : -1;
    c->bench = ctlbench_cpu_s(0);
    c->daemon = d ? ctlbench_daemon_cpu_s(d) : 0;
}

static double cpu_delta(double a, double z)
{
    return a < 0 || z < 0 ? -1 : z - a;
}

static cpu_use cpu_diff(const cpu_use *a, const cpu_use *z)
{
    cpu_use d = {cpu_delta(a->apiserver, z->apiserver), cpu_delta(a->etcd, z->etcd),
                 cpu_delta(a->bench, z->bench), cpu_delta(a->daemon, z->daemon)};
    return d;
}

static void print_cpu_one(const char *name, double s, double n, bool *first)
{
    if (s < 0) {
        return;
    }
    printf("%s%s %.1f s (%.1f ms per Component)", *first ? "" : ", ", name, s, s * 1000.0 / n);
    *first = false;
}

/* One line of CPU seconds; @p daemon: whether the daemon ran. */
static void print_cpu(const cpu_use *c, long n, bool daemon)
{
    bool first = true;
    printf("  %-36s ", "CPU used (user + system)");
    print_cpu_one("kube-apiserver", c->apiserver, (double)n, &first);
    print_cpu_one("etcd", c->etcd, (double)n, &first);
    if (daemon) {
        print_cpu_one("daemon", c->daemon, (double)n, &first);
    }
    print_cpu_one("bench process", c->bench, (double)n, &first);
    printf("\n");
}

/* The pid a control-plane script recorded in @p dir/@p file ("<pid> <marker>"), or 0. */
static pid_t read_pid(const char *dir, const char *file)
{
    char *path = co_xasprintf("%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    free(path);
    long pid = 0;
    char line[128];
    if (f) {
        if (fgets(line, sizeof(line), f)) {
            char *end = NULL;
            errno = 0;
            pid = strtol(line, &end, 10);
            if (errno != 0 || end == line || pid < 0) {
                pid = 0;
            }
        }
        fclose(f);
    }
    return (pid_t)pid;
}

/* ---- the floor --------------------------------------------------------------------------- */

typedef struct floor_ctx {
    bench *b;
    bool w1; /* W1's objects, with the wait for the Deployment; else W2's one ConfigMap */
    const char *ns;
    long n;
    int64_t deadline;
    atomic_long next;
    atomic_long done;
    atomic_ulong requests;
    atomic_int reported;
} floor_ctx;

/* The owner label and annotations the controller puts on a dependent, of the same sizes. The
 * label's key differs in its last letters (the same length): the daemon's dependents cache
 * selects every object that carries the owner label, cluster-wide, and would otherwise list and
 * hold the floor's objects as well as its own, which no cluster of 1,000 Components has. */
static void floor_label(struct json_object *obj, const char *ns, const char *component)
{
    char *owner = co_xasprintf("bench/%s/%s", ns, component);
    unsigned char sum[CO_SHA256_LEN];
    co_sha256(sum, owner, strlen(owner));
    char *label = co_base32_lower(sum, sizeof(sum));
    const char *text = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
    char digest[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex(digest, text, strlen(text));
    struct json_object *meta = co_json_get(obj, "metadata", NULL);
    struct json_object *labels = co_json_get(meta, "labels", NULL);
    if (!labels) {
        labels = json_object_new_object();
        json_object_object_add(meta, "labels", labels);
    }
    json_object_object_add(labels, RECONCILER "/floor-id", json_object_new_string(label));
    struct json_object *ann = json_object_new_object();
    json_object_object_add(ann, RECONCILER "/owner-id", json_object_new_string(owner));
    json_object_object_add(ann, RECONCILER "/digest", json_object_new_string(digest));
    json_object_object_add(meta, "annotations", ann);
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    free(label);
    free(owner);
}

/* A status write of a Component with an inventory as the controller's, for @p objs: before the
 * applies (@p ready false) the inventory that records them before they exist, state Processing;
 * once they are ready, state Ready with each item's phase and readiness. */
static struct json_object *floor_status(int64_t generation, const co_yaml_docs *objs, bool ready)
{
    char now[CO_TIME_STR_MAX];
    co_time_format(now, co_time_now());
    co_buf b = CO_BUF_INIT(1 << 20);
    put(&b, "{\"status\":{\"observedGeneration\":%lld,", (long long)generation);
    if (ready) {
        put(&b, "\"appliedGeneration\":%lld,\"lastAppliedAt\":\"%s\",", (long long)generation, now);
    }
    put(&b,
        "\"lastObservedAt\":\"%s\",\"state\":\"%s\","
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\",\"reason\":\"%s\","
        "\"message\":\"%s\",\"lastTransitionTime\":\"%s\"}],\"inventory\":[",
        now, ready ? "Ready" : "Processing", ready ? "True" : "False",
        ready ? "Ready" : "Processing",
        ready ? "Dependent resources successfully reconciled" : "Reconcile in progress", now);
    for (size_t i = 0; i < objs->len; i++) {
        struct json_object *o = objs->items[i].value;
        const char *api = co_json_str(o, "apiVersion", NULL);
        const char *slash = strchr(api, '/');
        put(&b,
            "%s{\"adoptionPolicy\":\"IfUnowned\",\"applyOrder\":0,\"deleteOrder\":0,"
            "\"deletePolicy\":\"Delete\",\"digest\":\"%s\",\"group\":\"%.*s\",\"kind\":\"%s\",",
            i ? "," : "", co_json_meta_annotation(o, RECONCILER "/digest"),
            slash ? (int)(slash - api) : 0, api, co_json_str(o, "kind", NULL));
        if (ready) {
            put(&b, "\"lastAppliedAt\":\"%s\",", now);
        }
        put(&b,
            "\"name\":\"%s\",\"namespace\":\"%s\",\"phase\":\"%s\","
            "\"reconcilePolicy\":\"OnObjectChange\",%s"
            "\"updatePolicy\":\"SsaOverride\",\"version\":\"%s\"}",
            co_json_meta_name(o), co_json_meta_namespace(o),
            ready ? "Ready" : "ScheduledForApplication", ready ? "\"status\":\"Current\"," : "",
            slash ? slash + 1 : api);
    }
    put(&b, "]}}");
    struct json_object *st = parse_or_die(co_buf_cstr(&b));
    co_buf_dispose(&b);
    return st;
}

/* A merge patch of the Component's status, a request counted. */
static int floor_write_status(floor_ctx *f, const co_kube_ref *ref, struct json_object *status)
{
    co_kube_write_options so = {0};
    so.subresource = "status";
    int rc = co_kube_patch(NULL, f->b->admin, ref, CO_KUBE_PATCH_MERGE, status, &so);
    atomic_fetch_add(&f->requests, 1);
    return rc;
}

/* Everything one Component needs, as few requests as it can be: the finalizer, the inventory
 * (recorded before the objects are created, so that a crash in between leaks none), the applies,
 * the wait for the Deployment (W1), the status that says Ready. */
static int floor_component(floor_ctx *f, long i)
{
    co_kube_client *c = f->b->admin;
    char name[32];
    snprintf(name, sizeof(name), "c%ld", i);
    co_kube_ref ref = {COMPONENT_API, "Component", f->ns, name};
    struct json_object *fin = parse_or_die("{\"metadata\":{\"finalizers\":[\"" RECONCILER "\"]}}");
    struct json_object *comp = NULL, *status = NULL;
    co_yaml_docs objs = CO_YAML_DOCS_INIT;
    char *manifests = f->w1 ? w1_manifests(name) : w2_manifest(name);
    int64_t generation = 0;
    int rc = co_kube_patch(&comp, c, &ref, CO_KUBE_PATCH_MERGE, fin, NULL);
    atomic_fetch_add(&f->requests, 1);
    if (rc < 0 || (rc = co_json_get_int64(&generation, comp, "metadata", "generation", NULL)) < 0 ||
        (rc = co_yaml_parse_stream(&objs, manifests, strlen(manifests), 0)) < 0) {
        goto done;
    }
    for (size_t k = 0; k < objs.len; k++) {
        floor_label(objs.items[k].value, f->ns, name);
    }
    status = floor_status(generation, &objs, false);
    if ((rc = floor_write_status(f, &ref, status)) < 0) {
        goto done;
    }
    co_kube_write_options wo = {0};
    wo.field_manager = RECONCILER;
    wo.force = 1;
    for (size_t k = 0; k < objs.len; k++) {
        rc = co_kube_apply(NULL, c, objs.items[k].value, &wo);
        atomic_fetch_add(&f->requests, 1);
        if (rc < 0) {
            goto done;
        }
    }
    long left_ms = (long)((f->deadline - co_time_monotonic()) / 1000000);
    if (f->w1 && ctlbench_kubelet_wait(f->b->kubelet, f->ns, name, left_ms > 0 ? left_ms : 0) < 0) {
        rc =
            co_error_set(CO_ETIMEOUT, "the Deployment %s/%s was not marked available", f->ns, name);
        goto done;
    }
    json_object_put(status);
    status = floor_status(generation, &objs, true);
    rc = floor_write_status(f, &ref, status);
done:
    if (rc < 0 && atomic_fetch_add(&f->reported, 1) == 0) {
        fprintf(stderr, "bench_controller: floor: %s/%s: %s\n", f->ns, name, co_error_last());
    }
    json_object_put(fin);
    json_object_put(comp);
    json_object_put(status);
    co_yaml_docs_dispose(&objs);
    free(manifests);
    return rc;
}

static void *floor_worker(void *arg)
{
    floor_ctx *f = arg;
    for (;;) {
        long i = atomic_fetch_add(&f->next, 1);
        if (i >= f->n || co_time_monotonic() >= f->deadline) {
            return NULL;
        }
        if (floor_component(f, i) == 0) {
            atomic_fetch_add(&f->done, 1);
        }
    }
}

/* The floor of workload @p path ("w1" or "w2") over @p n Components. */
static void run_floor(bench *b, floor_result *r, const char *path, long n)
{
    char ns[64];
    new_namespace(b, ns, sizeof(ns), "floor");
    r->n = n;
    bool w1 = !strcmp(path, "w1");
    if (create_namespace(b, ns) < 0 || create_components(b, ns, path, r->n) < 0) {
        printf("floor                                 not run: the Components could not be "
               "created\n");
        return;
    }
    /* the tracker that tells when ours is done watches the floor's Components too: its watch
     * costs the API server the same on both sides */
    ctlbench_tracker *t = NULL;
    ctlbench_counts c0, c1;
    if (ctlbench_tracker_start(&t, b->admin, ns) < 0 ||
        ctlbench_counts_get(&c0, NULL, b->admin) < 0) {
        ctlbench_tracker_stop(t);
        return;
    }
    floor_ctx f = {b, w1, ns, r->n, 0, 0, 0, 0, 0};
    cpu_use cpu0, cpu1;
    cpu_sample(b, &cpu0, NULL);
    int64_t t0 = co_time_monotonic();
    f.deadline = t0 + (int64_t)b->s.timeout_s * CO_SECOND;
    pthread_t *threads = co_xcalloc((size_t)b->workers, sizeof(*threads));
    int started = 0;
    for (; started < b->workers; started++) {
        if (pthread_create(&threads[started], NULL, floor_worker, &f) != 0) {
            break;
        }
    }
    for (int i = 0; i < started; i++) {
        pthread_join(threads[i], NULL);
    }
    free(threads);
    r->s = since_s(t0);
    cpu_sample(b, &cpu1, NULL);
    r->cpu = cpu_diff(&cpu0, &cpu1);
    size_t present = 0;
    /* its last status write is on its way to the tracker still: wait a moment for it */
    for (int i = 0; i < 50 && r->tracked_ready < (size_t)atomic_load(&f.done); i++) {
        ctlbench_tracker_counts(t, &present, &r->tracked_ready, NULL);
        if (r->tracked_ready < (size_t)atomic_load(&f.done)) {
            sleep_ms(100);
        }
    }
    ctlbench_tracker_stop(t);
    r->done = atomic_load(&f.done);
    r->requests = atomic_load(&f.requests);
    r->ran = started > 0;
    if (ctlbench_counts_get(&c1, NULL, b->admin) == 0) {
        r->api = ctlbench_counts_diff(&c0, &c1);
    }
    char label[64];
    snprintf(label, sizeof(label), "floor (minimal client, %d workers)", b->workers);
    if (r->done < r->n) {
        printf("%-38s only %ld of %ld done, stopped after %.1f s\n", label, r->done, r->n, r->s);
    } else {
        printf("%-38s all done in %.1f s (%.1f Components/s)\n", label, r->s,
               (double)r->done / r->s);
    }
    printf("  %-36s %.1f (1 finalizer patch, 2 status patches, %d applies)\n",
           "requests per Component", (double)r->requests / (double)r->n,
           w1 ? W1_CONFIGMAPS + 1 : 1);
    printf("  %-36s %zu of %ld\n", "Ready as the tracker saw them", r->tracked_ready, r->n);
    print_cpu(&r->cpu, r->n, false);
    print_tally("API server writes by kind", &r->api.writes_by_kind);
    fflush(stdout);
}

/* ---- the daemon -------------------------------------------------------------------------- */

static int start_daemon(bench *b, const char *ns, ctlbench_daemon **out)
{
    int seq = ++b->seq;
    char *log = co_xasprintf("%s/controller-%d-%s.log", b->tmp, seq, ns);
    char *cache = co_xasprintf("%s/cache-%d", b->tmp, seq);
    ctlbench_daemon_options o = {b->s.binary, b->kubeconfig, ns, cache, log, b->s.workers};
    int rc = ctlbench_daemon_start(out, &o);
    free(log);
    free(cache);
    return rc;
}

/* Starts a daemon on an empty namespace to learn its concurrency and its memory at rest. */
static int probe_daemon(bench *b)
{
    char ns[64];
    new_namespace(b, ns, sizeof(ns), "idle");
    ctlbench_daemon *d = NULL;
    ctlbench_counts c;
    memset(&c, 0, sizeof(c));
    if (start_daemon(b, ns, &d) < 0) {
        return -1;
    }
    int rc = ctlbench_daemon_wait_ready(d, 120000);
    if (rc == 0) {
        sleep_ms(1000);
        rc = ctlbench_counts_get(&c, d, b->admin);
    }
    if (rc < 0) {
        ctlbench_daemon_log_tail(d, 20);
    } else {
        long hwm = 0;
        ctlbench_daemon_memory(d, &b->idle_rss_kib, &hwm);
        b->workers = c.workers > 0 ? (int)c.workers : 5;
    }
    ctlbench_daemon_stop(d);
    return rc;
}

/* Creates the namespace and @p n Components of @p path (or the one named @p single), starts
 * the tracker and then the daemon. */
static int ours_start(bench *b,
                      ours *o,
                      const char *label,
                      const char *path,
                      long n,
                      const char *single,
                      run_result *r)
{
    memset(o, 0, sizeof(*o));
    r->n = n;
    new_namespace(b, o->ns, sizeof(o->ns), label);
    if (create_namespace(b, o->ns) < 0 ||
        (single ? create_component(b, o->ns, single, path) : create_components(b, o->ns, path, n)) <
            0 ||
        ctlbench_tracker_start(&o->t, b->admin, o->ns) < 0 ||
        ctlbench_counts_get(&o->c0, NULL, b->admin) < 0) {
        return -1;
    }
    cpu_sample(b, &o->cpu0, NULL);
    o->t0 = co_time_monotonic();
    if (start_daemon(b, o->ns, &o->d) < 0 || ctlbench_daemon_wait_ready(o->d, 120000) < 0) {
        if (o->d) {
            ctlbench_daemon_log_tail(o->d, 20);
        }
        return -1;
    }
    r->startup_s = since_s(o->t0);
    r->ran = true;
    return 0;
}

static double daemon_requests(ours *o)
{
    co_buf text = CO_BUF_INIT((size_t)256 * 1024 * 1024);
    double v = -1;
    if (ctlbench_daemon_metrics(o->d, &text) == 0) {
        v = ctlbench_metric_sum(co_buf_cstr(&text), "component_operator_runtime_requests_total");
    }
    co_buf_dispose(&text);
    return v;
}

/* Waits until @p want Components are Ready, the daemon exits, or the timeout. */
static void ours_await(bench *b, ours *o, const char *label, size_t want, run_result *r)
{
    int64_t deadline = o->t0 + (int64_t)b->s.timeout_s * CO_SECOND;
    int64_t next_report = co_time_monotonic() + (int64_t)REPORT_S * CO_SECOND;
    double last_requests = 0;
    int64_t last_t = o->t0;
    size_t present = 0, ready = 0;
    int64_t last_ready = 0;
    for (;;) {
        ctlbench_tracker_counts(o->t, &present, &ready, &last_ready);
        if (ready >= want) {
            r->converged = true;
            r->ready_s = (double)(last_ready - o->t0) / 1e9;
            cpu_use cpu1;
            cpu_sample(b, &cpu1, o->d);
            r->cpu = cpu_diff(&o->cpu0, &cpu1);
            break;
        }
        if (!ctlbench_daemon_alive(o->d)) {
            printf("%-38s the daemon exited with %zu of %zu Ready\n", label, ready, want);
            ctlbench_daemon_log_tail(o->d, 30);
            r->ready_s = since_s(o->t0);
            break;
        }
        int64_t now = co_time_monotonic();
        if (now >= deadline) {
            printf("%-38s not all Ready within %ld s: %zu of %zu (BENCH_CONTROLLER_TIMEOUT_S)\n",
                   label, b->s.timeout_s, ready, want);
            r->ready_s = since_s(o->t0);
            break;
        }
        if (now >= next_report) {
            double req = daemon_requests(o);
            fprintf(stderr,
                    "[bench controller] %s: %zu of %zu Ready after %.0f s; daemon %.1f "
                    "requests/s\n",
                    label, ready, want, since_s(o->t0),
                    (req - last_requests) / ((double)(now - last_t) / 1e9));
            last_requests = req;
            last_t = now;
            next_report = now + (int64_t)REPORT_S * CO_SECOND;
        }
        sleep_ms(200);
    }
    r->ready = ready;
}

/* After all are Ready: the passes that follow Ready and the events still queued; done when
 * event writes have stopped for 3 s (at least SETTLE_MIN_S, at most SETTLE_MAX_S). Then the
 * first pass is counted and the memory read. */
static void ours_settle(bench *b, ours *o, run_result *r)
{
    int64_t t = co_time_monotonic();
    double events = -1;
    int quiet = 0;
    /* a run that has not converged is counted where it stopped */
    while (r->converged && since_s(t) < SETTLE_MAX_S && ctlbench_daemon_alive(o->d)) {
        sleep_ms(1000);
        ctlbench_counts c;
        if (ctlbench_counts_get(&c, NULL, b->admin) < 0) {
            break;
        }
        quiet = c.event_writes == events ? quiet + 1 : 0;
        events = c.event_writes;
        if (quiet >= 3 && since_s(t) >= SETTLE_MIN_S) {
            break;
        }
    }
    r->settle_s = since_s(t);
    ctlbench_counts c1;
    if (ctlbench_daemon_alive(o->d) && ctlbench_counts_get(&c1, o->d, b->admin) == 0) {
        /* c0 holds no daemon counters: those are the daemon's whole life */
        r->first = ctlbench_counts_diff(&o->c0, &c1);
        ctlbench_daemon_memory(o->d, &r->rss_kib, &r->hwm_kib);
    }
}

static void ours_stop(ours *o)
{
    ctlbench_daemon_stop(o->d);
    ctlbench_tracker_stop(o->t);
    o->d = NULL;
    o->t = NULL;
}

/* The requests of @p c that act on a Component, its status, its events or its dependents: the
 * API server's writes of those kinds and its GETs of single objects of them. The rest of the
 * daemon's requests are its caches' and its start-up's, not any Component's: the caches' LISTs
 * (a page per 500 objects) and WATCHes (again whenever the API server ends one), access reviews
 * and discovery. */
static double component_requests(const ctlbench_counts *c)
{
    static const char *const gets[] = {"components GET", "components/status GET", "configmaps GET",
                                       "deployments GET"};
    double n = c->status_writes + c->component_writes + c->event_writes + c->dependent_writes;
    for (size_t i = 0; i < c->gets_by_kind.len; i++) {
        for (size_t k = 0; k < CO_ARRAY_SIZE(gets); k++) {
            if (strcmp(c->gets_by_kind.items[i].name, gets[k]) == 0) {
                n += c->gets_by_kind.items[i].n;
            }
        }
    }
    return n;
}

static void print_requests(const char *what, const ctlbench_counts *c, double n)
{
    printf("  %-36s %.2f (reads %.2f, writes %.2f: status %.2f, events %.2f, Component %.2f, "
           "dependents %.2f); non-2xx answers %.1f; reconciles %.1f\n",
           what, c->requests / n, c->reads / n, c->writes / n, c->status_writes / n,
           c->event_writes / n, c->component_writes / n, c->dependent_writes / n, c->non2xx / n,
           c->reconciles / n);
}

/* The API server's writes and reads by resource and verb (the bench's kubelet's included), and
 * the daemon's non-2xx answers by code. */
static void print_writes(const ctlbench_counts *c)
{
    print_tally("API server writes by kind", &c->writes_by_kind);
    print_tally("API server reads by kind", &c->gets_by_kind);
    print_tally("daemon non-2xx answers", &c->non2xx_by_code);
}

static void print_run(const char *label, const run_result *r, long requeue_s)
{
    if (!r->ran) {
        printf("%-38s not run\n", label);
        return;
    }
    double n = (double)r->n;
    printf("%-38s %s in %.1f s (%.1f Components/s; daemon ready after %.1f s)\n", label,
           r->converged ? "all Ready" : "stopped waiting", r->ready_s,
           (double)r->ready / r->ready_s, r->startup_s);
    print_requests("first pass per Component", &r->first, n);
    double own = component_requests(&r->first);
    printf("  %-36s %.2f per Component on Components, their status, events and dependents; %.0f "
           "more (the daemon's caches, access reviews, discovery)\n",
           "of them", own / n, r->first.requests - own);
    if (r->converged) {
        print_cpu(&r->cpu, r->n, true);
    }
    print_writes(&r->first);
    printf("  %-36s %.1f s after the last turned Ready%s\n", "counted until", r->settle_s,
           r->ready_s > (double)requeue_s
               ? "; includes the requeues of Components Ready for longer than requeueInterval"
               : "");
    printf("  %-36s %.0f requests/s\n", "daemon request rate",
           r->first.requests / (r->ready_s + r->settle_s));
    printf("  %-36s VmRSS %.1f MiB, VmHWM %.1f MiB\n", "daemon resident memory (settled)",
           (double)r->rss_kib / MIB, (double)r->hwm_kib / MIB);
    fflush(stdout);
}

/* One requeue interval (plus its 5 % jitter) with nothing changed. */
static void ours_second_pass(bench *b, ours *o, run_result *r)
{
    ctlbench_counts a, z;
    if (ctlbench_counts_get(&a, o->d, b->admin) < 0) {
        return;
    }
    int64_t t = co_time_monotonic();
    double window = (double)b->s.requeue_s * 1.05 + 1.0;
    while (since_s(t) < window && ctlbench_daemon_alive(o->d)) {
        sleep_ms(250);
    }
    r->window_s = since_s(t);
    if (!ctlbench_daemon_alive(o->d) || ctlbench_counts_get(&z, o->d, b->admin) < 0) {
        printf("second pass                            not measured: the daemon exited\n");
        return;
    }
    r->second = ctlbench_counts_diff(&a, &z);
    r->second_ran = true;
    ctlbench_daemon_memory(o->d, &r->rss2_kib, &r->hwm2_kib);
    double n = (double)r->n;
    printf("second pass over %.1f s (requeueInterval %lds, nothing changed)\n", r->window_s,
           b->s.requeue_s);
    print_requests("per Component", &r->second, n);
    print_writes(&r->second);
    printf("  %-36s %.0f requests/s\n", "daemon request rate", r->second.requests / r->window_s);
    printf("  %-36s VmRSS %.1f MiB, VmHWM %.1f MiB\n", "daemon resident memory",
           (double)r->rss2_kib / MIB, (double)r->hwm2_kib / MIB);
    fflush(stdout);
}

/* ---- sections ---------------------------------------------------------------------------- */

/* The daemon's time over the floor's, 0 when either side did not finish. */
static double run_ratio(const floor_result *fl, const run_result *r)
{
    return fl->ran && fl->done == fl->n && fl->s > 0 && r->converged ? r->ready_s / fl->s : 0;
}

/* The ratio of W1's round @p r. */
static double w1_ratio(const w1_result *w, long r)
{
    return run_ratio(&w->fl[r], &w->ours[r]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of W1's round ratios into @p out (0 when no round finished on both sides); the
 * number of rounds it is taken over. */
static long w1_median(const w1_result *w, double *out)
{
    double v[ROUNDS_MAX] = {0};
    long n = 0;
    for (long r = 0; r < w->rounds; r++) {
        if (w1_ratio(w, r) > 0) {
            v[n++] = w1_ratio(w, r);
        }
    }
    qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
    *out = n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return n;
}

/* The ratio of the daemon's times to the floor's summed over the rounds that finished on both
 * sides (0 when none did): beside the median, a figure no single round decides. */
static double w1_total_ratio(const w1_result *w)
{
    double daemon = 0, fl = 0;
    for (long r = 0; r < w->rounds; r++) {
        if (w1_ratio(w, r) > 0) {
            daemon += w->ours[r].ready_s;
            fl += w->fl[r].s;
        }
    }
    return fl > 0 ? daemon / fl : 0;
}

/* One daemon run of W1 on a fresh namespace; the second pass after it when @p second. */
static void w1_ours(bench *b, run_result *r, bool second)
{
    ours o;
    if (ours_start(b, &o, "w1", "w1", b->s.n, NULL, r) < 0) {
        printf("ours                                   not run: the daemon did not start\n");
        ours_stop(&o);
        return;
    }
    ours_await(b, &o, "ours", (size_t)b->s.n, r);
    ours_settle(b, &o, r);
    print_run("ours (component-controller)", r, b->s.requeue_s);
    if (second && r->converged) {
        ours_second_pass(b, &o, r);
    } else if (second) {
        printf("second pass                            skipped: not all were Ready\n");
    }
    ours_stop(&o);
}

/* W1 in rounds, each a floor run and a daemon run on fresh namespaces, the floor first in the
 * odd rounds and the daemon first in the even ones. The machine's speed drifts over minutes and
 * the store grows by a round's objects: taking turns gives both sides the same share of either,
 * and the median of the rounds' ratios is what the summary judges. The second pass follows the
 * last daemon run. */
static void section_w1(bench *b, w1_result *w)
{
    printf("\n== W1: %ld Components x (%d ConfigMaps + 1 Deployment), %d workers, %ld round%s\n",
           b->s.n, W1_CONFIGMAPS, b->workers, b->s.rounds, b->s.rounds == 1 ? "" : "s");
    fflush(stdout);
    for (long r = 0; r < b->s.rounds; r++) {
        bool floor_first = r % 2 == 0;
        printf("\n-- W1 round %ld of %ld (%s first)\n", r + 1, b->s.rounds,
               floor_first ? "floor" : "daemon");
        fflush(stdout);
        if (floor_first) {
            run_floor(b, &w->fl[r], "w1", b->s.n);
        }
        w1_ours(b, &w->ours[r], r + 1 == b->s.rounds);
        if (!floor_first) {
            run_floor(b, &w->fl[r], "w1", b->s.n);
        }
        w->rounds = r + 1;
        if (w1_ratio(w, r) > 0) {
            printf("ratio: ours/floor (time until all Ready) %.2f\n", w1_ratio(w, r));
        }
    }
    double median = 0;
    long n = w1_median(w, &median);
    if (n > 0) {
        printf("\nW1 ratios by round:");
        for (long r = 0; r < w->rounds; r++) {
            printf(" %.2f (%.1f / %.1f s)", w1_ratio(w, r), w->ours[r].ready_s, w->fl[r].s);
        }
        printf("; median of %ld: %.2f; of the summed times: %.2f\n", n, median, w1_total_ratio(w));
    }
    fflush(stdout);
}

/* The floor and then the daemon at @p n W2 Components: whether throughput falls as the count
 * grows is the daemon's doing only where the floor's does not fall as much. */
static void section_w2_run(bench *b, long n, floor_result *fl, run_result *r)
{
    char label[64];
    snprintf(label, sizeof(label), "W2 at %ld", n);
    run_floor(b, fl, "w2", n);
    ours o;
    if (ours_start(b, &o, "w2", "w2", n, NULL, r) < 0) {
        printf("%-38s not run: the daemon did not start\n", label);
        ours_stop(&o);
        return;
    }
    ours_await(b, &o, label, (size_t)n, r);
    ours_settle(b, &o, r);
    print_run(label, r, b->s.requeue_s);
    if (run_ratio(fl, r) > 0) {
        printf("ratio: ours/floor (time until all Ready) %.2f\n", run_ratio(fl, r));
    }
    ours_stop(&o);
}

/* Components per second of a run, and of a floor (0 when not run). */
static double rate(const run_result *r)
{
    return r->ran && r->ready_s > 0 ? (double)r->ready / r->ready_s : 0;
}

static double floor_rate(const floor_result *f)
{
    return f->ran && f->s > 0 ? (double)f->done / f->s : 0;
}

static void
section_w2(bench *b, floor_result *fl_small, run_result *small, floor_result *fl_w2, run_result *w2)
{
    printf("\n== W2: %ld Components x 1 ConfigMap, %d workers\n", b->s.w2, b->workers);
    fflush(stdout);
    if (b->s.w2_small > 0) {
        section_w2_run(b, b->s.w2_small, fl_small, small);
    }
    section_w2_run(b, b->s.w2, fl_w2, w2);
    if (rate(small) > 0 && rate(w2) > 0) {
        printf("ratio: Components/s at %ld / at %ld %.2f (ours), %.2f (floor)\n", b->s.w2,
               b->s.w2_small, rate(w2) / rate(small),
               floor_rate(fl_small) > 0 ? floor_rate(fl_w2) / floor_rate(fl_small) : 0);
    }
}

/* The stored Component: bytes of its JSON as served, of its status.inventory, and items. */
static void measure_stored(bench *b, const char *ns, big_result *r)
{
    char *path = co_xasprintf("/apis/" COMPONENT_API "/namespaces/%s/components/big", ns);
    co_buf body = CO_BUF_INIT((size_t)64 * 1024 * 1024);
    struct json_object *c = NULL;
    if (co_kube_request_raw(&body, b->admin, "GET", path, NULL, NULL, 0) < 0 ||
        co_json_parse(&c, co_buf_cstr(&body), body.len) < 0) {
        fprintf(stderr, "bench_controller: reading the big Component: %s\n", co_error_last());
    } else {
        r->json_bytes = body.len;
        /* as stored: the plain list or its packed form; items counted from the list */
        struct json_object *st = co_json_get(c, "status", NULL);
        struct json_object *form = co_json_get(st, "inventory", NULL);
        r->packed = form == NULL && co_json_get(st, "packedInventory", NULL) != NULL;
        if (r->packed) {
            form = co_json_get(st, "packedInventory", NULL);
        }
        if (form) {
            r->inventory_bytes =
                strlen(json_object_to_json_string_ext(form, JSON_C_TO_STRING_PLAIN));
        }
        struct json_object *inv = NULL;
        if (co_component_inventory_get(&inv, st) == 0 && inv) {
            r->items = json_object_array_length(inv);
        }
        co_error_clear();
        json_object_put(inv);
    }
    json_object_put(c);
    co_buf_dispose(&body);
    free(path);
}

static bool configmaps_left(bench *b, const char *ns)
{
    co_kube_ref ref = {"v1", "ConfigMap", ns, NULL};
    co_kube_list_options lo = {0};
    lo.limit = 1;
    struct json_object *list = NULL;
    if (co_kube_list(&list, b->admin, &ref, &lo) < 0) {
        return true;
    }
    struct json_object *items = co_json_get(list, "items", NULL);
    bool left = items && json_object_array_length(items) > 0;
    json_object_put(list);
    return left;
}

/* Deletes the big Component; waits until it and its ConfigMaps are gone. */
static void big_delete(bench *b, ours *o, big_result *r)
{
    ctlbench_counts a, z;
    if (ctlbench_counts_get(&a, o->d, b->admin) < 0) {
        return;
    }
    co_kube_ref ref = {COMPONENT_API, "Component", o->ns, "big"};
    int64_t t = co_time_monotonic();
    if (co_kube_delete(NULL, b->admin, &ref, NULL) < 0) {
        fprintf(stderr, "bench_controller: deleting the big Component: %s\n", co_error_last());
        return;
    }
    int64_t deadline = t + (int64_t)b->s.timeout_s * CO_SECOND;
    while (co_time_monotonic() < deadline && ctlbench_daemon_alive(o->d)) {
        size_t present = 0, ready = 0;
        ctlbench_tracker_counts(o->t, &present, &ready, NULL);
        if (!r->gone && present == 0) {
            r->gone = true;
            r->gone_s = since_s(t);
        }
        if (!r->cms_gone && !configmaps_left(b, o->ns)) {
            r->cms_gone = true;
            r->cms_gone_s = since_s(t);
        }
        if (r->gone && r->cms_gone) {
            break;
        }
        sleep_ms(250);
    }
    if (ctlbench_daemon_alive(o->d) && ctlbench_counts_get(&z, o->d, b->admin) == 0) {
        r->del = ctlbench_counts_diff(&a, &z);
    }
}

static void section_big(bench *b, big_result *r)
{
    printf("\n== big: one Component of %ld ConfigMaps\n", b->s.big);
    fflush(stdout);
    ours o;
    run_result rr;
    memset(&rr, 0, sizeof(rr));
    if (ours_start(b, &o, "big", "big", 1, "big", &rr) < 0) {
        printf("big                                    not run: the daemon did not start\n");
        ours_stop(&o);
        return;
    }
    r->ran = true;
    ours_await(b, &o, "big", 1, &rr);
    ours_settle(b, &o, &rr);
    r->ready = rr.converged;
    r->ready_s = rr.ready_s;
    r->apply = rr.first;
    r->rss_kib = rr.rss_kib;
    r->hwm_kib = rr.hwm_kib;
    measure_stored(b, o.ns, r);
    printf("%-38s %s in %.1f s; %.0f requests (%.2f per dependent), %.0f status writes\n", "apply",
           r->ready ? "Ready" : "not Ready", r->ready_s, r->apply.requests,
           r->apply.requests / (double)b->s.big, r->apply.status_writes);
    printf("%-38s %zu bytes (JSON as served); status.%s %zu bytes, %zu items; etcd's "
           "limit 1.5 MiB\n",
           "stored Component", r->json_bytes, r->packed ? "packedInventory" : "inventory",
           r->inventory_bytes, r->items);
    printf("%-38s VmRSS %.1f MiB, VmHWM %.1f MiB\n", "daemon resident memory",
           (double)r->rss_kib / MIB, (double)r->hwm_kib / MIB);
    fflush(stdout);
    big_delete(b, &o, r);
    if (r->gone) {
        printf("%-38s %.1f s\n", "delete: Component gone after", r->gone_s);
    } else {
        printf("%-38s still there after %ld s\n", "delete: Component", b->s.timeout_s);
    }
    if (r->cms_gone) {
        printf("%-38s %.1f s; %.0f requests, %.0f writes\n", "delete: ConfigMaps gone after",
               r->cms_gone_s, r->del.requests, r->del.writes);
    } else {
        printf("%-38s some left after %ld s\n", "delete: ConfigMaps", b->s.timeout_s);
    }
    fflush(stdout);
    ours_stop(&o);
}

/* ---- summary ----------------------------------------------------------------------------- */

static void row(const char *what, const char *measured, const char *target, int met)
{
    printf("%-52s %-22s %-22s %s\n", what, measured, target, met < 0 ? "-" : met ? "yes" : "no");
}

/* W1's rows: the median ratio; of the per-Component figures the worst round's; the second pass
 * of the last round. */
static void summary_w1(const w1_result *w)
{
    char m[64], t[64];
    bool ran = false;
    for (long r = 0; r < w->rounds; r++) {
        ran = ran || w->ours[r].ran;
    }
    if (!ran) {
        return;
    }
    double median = 0;
    long finished = w1_median(w, &median);
    if (finished > 0) {
        snprintf(m, sizeof(m), "%.2f (median of %ld)", median, finished);
        row("W1 time until all Ready, ours / floor", m, "<= 1.5", median <= 1.5);
        snprintf(m, sizeof(m), "%.2f", w1_total_ratio(w));
        row("W1 the same, of the rounds' summed times", m, "", -1);
    } else {
        row("W1 time until all Ready, ours / floor", "not converged", "<= 1.5", 0);
    }
    double per = 0, caches = 0, events = 0;
    long rss = 0;
    for (long r = 0; r < w->rounds; r++) {
        const run_result *o = &w->ours[r];
        if (!o->ran) {
            continue;
        }
        double n = (double)o->n;
        /* the caches' and the start-up's requests are not a Component's: printed beside */
        double own = component_requests(&o->first);
        if (own / n >= per) {
            per = own / n;
            caches = o->first.requests - own;
        }
        events = o->first.event_writes / n > events ? o->first.event_writes / n : events;
        rss = o->rss_kib > rss ? o->rss_kib : rss;
    }
    snprintf(m, sizeof(m), "%.2f (+%.0f caches)", per, caches);
    snprintf(t, sizeof(t), "<= %d", W1_CONFIGMAPS + 1 + 4);
    row("W1 first pass requests per Component", m, t, per <= W1_CONFIGMAPS + 1 + 4);
    snprintf(m, sizeof(m), "%.2f", events);
    row("W1 first pass event writes per Component", m, "one per state change", -1);
    const run_result *last = &w->ours[w->rounds - 1];
    if (last->second_ran) {
        double n = (double)last->n;
        double dep = (last->second.dependent_writes + last->second.component_writes) / n;
        snprintf(m, sizeof(m), "%.2f", dep);
        row("W1 second pass dependent and finalizer writes/Comp.", m, "0", dep == 0);
        snprintf(m, sizeof(m), "%.2f", last->second.event_writes / n);
        row("W1 second pass event writes per Component", m, "0", last->second.event_writes == 0);
        snprintf(m, sizeof(m), "%.2f", last->second.status_writes / n);
        row("W1 second pass status writes per Component", m, "<= 1",
            last->second.status_writes <= n);
        snprintf(m, sizeof(m), "%.2f", last->second.reads / n);
        row("W1 second pass reads per Component", m, "<= 1", last->second.reads <= n);
    } else {
        row("W1 second pass", "not measured", "", -1);
    }
    snprintf(m, sizeof(m), "%.1f MiB", (double)rss / MIB);
    row("W1 daemon resident memory (settled)", m, "<= 40 MiB", rss > 0 && rss <= 40L * 1024);
}

static void summary(bench *b,
                    const w1_result *w1,
                    const floor_result *fl_small,
                    const run_result *small,
                    const floor_result *fl_w2,
                    const run_result *w2,
                    const big_result *big)
{
    char m[64], t[64];
    printf("\n== summary: issue 28's targets (printed, never enforced)\n");
    printf("%-52s %-22s %-22s %s\n", "", "measured", "target", "met");
    summary_w1(w1);
    if (w2->ran) {
        snprintf(m, sizeof(m), "%.1f MiB", (double)w2->rss_kib / MIB);
        row("W2 daemon resident memory", m, "<= 150 MiB",
            w2->rss_kib > 0 && w2->rss_kib <= 150L * 1024);
        snprintf(m, sizeof(m), "%zu of %ld in %.1f s", w2->ready, w2->n, w2->ready_s);
        row("W2 Components Ready", m, "all", w2->converged);
        snprintf(m, sizeof(m), "%.1f", w2->first.requests / (double)w2->n);
        row("W2 requests per Component", m, "", -1);
        if (small->ran) {
            double a = rate(small), z = rate(w2);
            snprintf(m, sizeof(m), "%.1f / %.1f", a, z);
            snprintf(t, sizeof(t), "not falling");
            char what[64];
            snprintf(what, sizeof(what), "W2 Components/s at %ld / at %ld", small->n, w2->n);
            row(what, m, t, z >= a * 0.9);
            double fa = floor_rate(fl_small), fz = floor_rate(fl_w2);
            if (fa > 0 && fz > 0) {
                snprintf(m, sizeof(m), "%.1f / %.1f", fa, fz);
                snprintf(what, sizeof(what), "W2 floor Components/s at %ld / at %ld", small->n,
                         w2->n);
                row(what, m, "", -1);
                snprintf(m, sizeof(m), "%.2f / %.2f", a / fa, z / fz);
                snprintf(what, sizeof(what), "W2 ours/floor Components/s at %ld / at %ld", small->n,
                         w2->n);
                row(what, m, "", -1);
            }
        }
    }
    if (big->ran) {
        /* before Ready the inventory may not be stored at all: its size says nothing */
        snprintf(m, sizeof(m), big->ready ? "%zu bytes" : "%zu bytes, not Ready", big->json_bytes);
        row("big: stored Component size", m, "far below 1.5 MiB",
            big->ready && big->json_bytes > 0 && big->json_bytes < (size_t)512 * 1024);
        snprintf(m, sizeof(m), "%s", big->ready ? "yes" : "no");
        row("big: applies (Ready)", m, "yes", big->ready);
        snprintf(m, sizeof(m), "%s", big->gone && big->cms_gone ? "yes" : "no");
        row("big: deletes (Component and ConfigMaps gone)", m, "yes", big->gone && big->cms_gone);
    }
    printf("(\"met\": \"-\" where the issue sets no number; daemon at rest: VmRSS %.1f MiB)\n",
           (double)b->idle_rss_kib / MIB);
    fflush(stdout);
}

/* ---- set-up ------------------------------------------------------------------------------ */

static int read_settings(settings *s)
{
    s->n = env_long("BENCH_CONTROLLER_COMPONENTS", 1000);
    s->rounds = env_long("BENCH_CONTROLLER_ROUNDS", 3);
    s->w2 = env_long("BENCH_CONTROLLER_W2", 10000);
    s->big = env_long("BENCH_CONTROLLER_BIG", 5000);
    s->requeue_s = env_long("BENCH_CONTROLLER_REQUEUE_S", 30);
    s->timeout_s = env_long("BENCH_CONTROLLER_TIMEOUT_S", 600);
    long workers = env_long("BENCH_CONTROLLER_WORKERS", 0);
    s->keep = env_long("BENCH_CONTROLLER_KEEP", 0) > 0;
    if (s->n < 1 || s->n > 100000 || s->rounds < 1 || s->rounds > ROUNDS_MAX || s->w2 < 0 ||
        s->w2 > 100000 || s->big < 0 || s->big > 100000 || s->requeue_s < 1 ||
        s->requeue_s > 3600 || s->timeout_s < 1 || workers < 0 || workers > 1000) {
        fprintf(stderr, "bench_controller: BENCH_CONTROLLER_COMPONENTS (1..100000), _ROUNDS "
                        "(1..9), _W2 and _BIG (0..100000), _REQUEUE_S (1..3600), _TIMEOUT_S (> 0) "
                        "and _WORKERS (0..1000) must be integers in range\n");
        return -1;
    }
    s->workers = (int)workers;
    /* the same workload at a tenth of the count, to compare the throughput */
    s->w2_small = s->w2 / 10 < 1000 ? s->w2 / 10 : 1000;
    const char *bin = getenv("BENCH_CONTROLLER_BIN"); // NOLINT(concurrency-mt-unsafe)
    s->binary = bin && *bin ? bin : CO_SOURCE_ROOT "/build/release/component-controller";
    if (access(s->binary, X_OK) != 0) {
        fprintf(stderr, "bench_controller: %s is missing (make bench builds it)\n", s->binary);
        return -1;
    }
    return 0;
}

static int install_crd(bench *b)
{
    size_t len = 0;
    char *text = NULL;
    FILE *f = fopen(CO_SOURCE_ROOT "/crds/core.cs.sap.com_components.yaml", "r");
    if (f) {
        co_buf buf = CO_BUF_INIT((size_t)16 * 1024 * 1024);
        char chunk[8192];
        size_t n;
        int rc = 0;
        while (rc == 0 && (n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
            rc = co_buf_put(&buf, chunk, n);
        }
        fclose(f);
        text = co_buf_take(&buf, &len);
    }
    struct json_object *crd = NULL;
    if (!text || co_yaml_parse(&crd, text, len, 0) < 0) {
        fprintf(stderr, "bench_controller: crds/core.cs.sap.com_components.yaml: %s\n",
                text ? co_error_last() : "cannot read it");
        free(text);
        return -1;
    }
    free(text);
    int rc = co_kube_create(NULL, b->admin, crd, NULL);
    json_object_put(crd);
    if (rc < 0 && rc != CO_EEXISTS) {
        fprintf(stderr, "bench_controller: creating the Component CRD: %s\n", co_error_last());
        return -1;
    }
    for (int i = 0; i < 600; i++) {
        co_kube_mapping m;
        if (co_kube_client_mapping(&m, b->admin, COMPONENT_API, "Component") == 0) {
            co_kube_mapping_dispose(&m);
            /* served a moment before it accepts writes */
            sleep_ms(500);
            return 0;
        }
        sleep_ms(100);
    }
    fprintf(stderr, "bench_controller: the Component CRD was not served within a minute\n");
    return -1;
}

static int connect_cluster(bench *b)
{
    const char *kc = getenv("CO_TEST_KUBECONFIG"); // NOLINT(concurrency-mt-unsafe)
    b->script = co_xasprintf("%s/tests/env/controlplane.sh", CO_SOURCE_ROOT);
    const char *work = b->s.keep ? NULL : b->tmp;
    if (kc && *kc) {
        b->kubeconfig = co_xstrdup(kc);
        ctlbench_guard(b->script, NULL, work);
    } else {
        b->cp_dir = co_xasprintf("%s/cp", b->tmp);
        ctlbench_guard(b->script, b->cp_dir, work);
        const char *argv[] = {b->script, "start", b->cp_dir, NULL};
        if (ctlbench_run(argv) != 0) {
            fprintf(stderr, "bench_controller: could not start a control plane\n");
            return -1;
        }
        b->kubeconfig = co_xasprintf("%s/admin.kubeconfig", b->cp_dir);
        b->apiserver_pid = read_pid(b->cp_dir, "apiserver.pid");
        b->etcd_pid = read_pid(b->cp_dir, "etcd.pid");
    }
    co_kube_client_options ao = CO_KUBE_CLIENT_OPTIONS_INIT;
    ao.qps = -1;
    if (co_kube_config_load(&b->cfg, b->kubeconfig, NULL) < 0 ||
        co_kube_client_new(&b->admin, b->cfg, &ao) < 0) {
        fprintf(stderr, "bench_controller: client: %s\n", co_error_last());
        return -1;
    }
    struct json_object *v = NULL;
    if (co_kube_request_json(&v, b->admin, "GET", "/version", NULL) < 0) {
        fprintf(stderr, "bench_controller: the API server does not answer: %s\n", co_error_last());
        return -1;
    }
    const char *gv = co_json_str(v, "gitVersion", NULL);
    printf("API server %s, %ld online CPUs; daemon %s\n", gv ? gv : "?",
           sysconf(_SC_NPROCESSORS_ONLN), b->s.binary);
    json_object_put(v);
    return install_crd(b);
}

static void teardown(bench *b)
{
    ctlbench_kubelet_stop(b->kubelet);
    test_httpd_stop(b->httpd);
    co_kube_client_free(b->admin);
    co_kube_config_free(b->cfg);
    if (b->cp_dir) {
        const char *argv[] = {b->script, "stop", b->cp_dir, NULL};
        (void)ctlbench_run(argv);
    }
    ctlbench_guard(NULL, NULL, NULL);
    if (b->tmp && !b->s.keep) {
        const char *rm[] = {"/bin/rm", "-rf", b->tmp, NULL};
        (void)ctlbench_run(rm);
    } else if (b->tmp) {
        printf("work directory (daemon logs) kept: %s\n", b->tmp);
    }
    free(b->url);
    free(b->kubeconfig);
    free(b->cp_dir);
    free(b->script);
    free(b->tmp);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    bench b;
    memset(&b, 0, sizeof(b));
    if (read_settings(&b.s) < 0) {
        return 2;
    }
    char tmpl[] = "/tmp/co-bench-ctl-XXXXXX";
    if (!mkdtemp(tmpl)) {
        perror("bench_controller: mkdtemp");
        return 1;
    }
    b.tmp = co_xstrdup(tmpl);
    b.run_id = (unsigned)(co_time_now() / 1000000000 % 100000);
    w1_result *w1 = co_xcalloc(1, sizeof(*w1));
    floor_result fl_small, fl_w2;
    run_result small, w2;
    big_result big;
    memset(&fl_small, 0, sizeof(fl_small));
    memset(&fl_w2, 0, sizeof(fl_w2));
    memset(&small, 0, sizeof(small));
    memset(&w2, 0, sizeof(w2));
    memset(&big, 0, sizeof(big));
    int status = 1;
    if (connect_cluster(&b) < 0) {
        goto done;
    }
    serve_source(&b);
    if (ctlbench_kubelet_start(&b.kubelet, b.cfg, KUBELET_LABEL "=true") < 0 ||
        probe_daemon(&b) < 0) {
        goto done;
    }
    printf("daemon --max-concurrent-reconciles %d%s; at rest VmRSS %.1f MiB; requeueInterval "
           "%lds; waits end after %lds\n",
           b.workers, b.s.workers ? " (BENCH_CONTROLLER_WORKERS)" : " (its default)",
           (double)b.idle_rss_kib / MIB, b.s.requeue_s, b.s.timeout_s);
    section_w1(&b, w1);
    if (b.s.w2 > 0) {
        section_w2(&b, &fl_small, &small, &fl_w2, &w2);
    }
    if (b.s.big > 0) {
        section_big(&b, &big);
    }
    summary(&b, w1, &fl_small, &small, &fl_w2, &w2, &big);
    status = 0;
done:
    teardown(&b);
    free(w1);
    return status;
}
